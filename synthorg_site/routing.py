"""Websocket routes of every app, and the ASGI mounts beside Django's HTTP views."""

from __future__ import annotations

from typing import Any

from approvals_app.routing import websocket_urlpatterns as approvals_websockets
from synthorg_site.agent_http import agent_api_split
from tools_app.mcp.mount import mcp_mount

websocket_urlpatterns: list[Any] = [*approvals_websockets]


def http_application(django_app: Any) -> Any:
    """Django for every HTTP path (agent calls on their lean path), except the MCP
    gateway at /mcp/ (and /mcp)."""
    return mcp_mount(agent_api_split(django_app))
