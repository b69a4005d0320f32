"""Websocket routes of every app, and the ASGI mounts beside Django's HTTP views."""

from __future__ import annotations

from typing import Any

from approvals_app.routing import websocket_urlpatterns as approvals_websockets
from synthorg_site.agent_http import agent_api_split
from synthorg_site.http_edge.body import RequestBodyLimit

websocket_urlpatterns: list[Any] = [*approvals_websockets]

MCP_PATHS = frozenset({"/mcp", "/mcp/"})


class LazyMcpMount:
    """/mcp and /mcp/ go to the MCP gateway, everything else to ``everyone``.

    The gateway and the SDK behind it (some ten megabytes) are loaded on the
    first request for them, so a console nobody reaches over MCP never holds them.
    """

    def __init__(self, everyone: Any) -> None:
        self.everyone = everyone
        self._mount: Any = None

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if self._mount is None:
            if scope.get("type") != "http" or _relative_path(scope) not in MCP_PATHS:
                await self.everyone(scope, receive, send)
                return
            from tools_app.mcp.mount import mcp_mount

            self._mount = mcp_mount(self.everyone)
        await self._mount(scope, receive, send)


def _relative_path(scope: dict[str, Any]) -> str:
    path: str = scope.get("path", "")
    root: str = scope.get("root_path", "")
    return path[len(root) :] if root and path.startswith(root) else path


def http_application(django_app: Any) -> Any:
    """Django for every HTTP path (agent calls on their lean path), except the MCP
    gateway at /mcp/ (and /mcp); /api/ and /mcp/ bodies read whole and size-limited."""
    return RequestBodyLimit(LazyMcpMount(agent_api_split(django_app)))
