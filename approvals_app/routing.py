"""Websocket routes of approvals_app."""

from __future__ import annotations

from django.urls import path

from approvals_app.consumers import ApprovalInboxConsumer

websocket_urlpatterns = [path("ws/approvals/", ApprovalInboxConsumer.as_asgi())]
