"""Websocket routes of every app."""

from __future__ import annotations

from typing import Any

from approvals_app.routing import websocket_urlpatterns as approvals_websockets

websocket_urlpatterns: list[Any] = [*approvals_websockets]
