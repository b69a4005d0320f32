"""ASGI: /api/ and /mcp/ bodies are read whole, counted and limited, however they are sent.

Django's ASGI request takes its stream from the whole body, but DRF (like most
readers) trusts ``Content-Length``: a body sent with ``Transfer-Encoding: chunked``
has none and read as empty. Here the body is read before the application sees the
request, counted while it arrives (a missing or lying ``Content-Length`` changes
nothing), refused with 413 past ``SYNTHORG_MAX_REQUEST_BYTES``, and handed on with
its true length in ``Content-Length``.
"""

from __future__ import annotations

from typing import Any

import structlog
from asgiref.sync import sync_to_async
from django.conf import settings

from audit_app.refusals import RefusedRequest, request_refusal_record
from common.envelope import error_bytes, is_api_path
from common.platform.logs import REQUEST_ID_HEADER, bound_request_id
from trust_app.auth import agent_for_token, person_for_token
from trust_app.tokens.bearer import token_kind

Scope = dict[str, Any]
MCP_GATEWAY_PATHS = frozenset({"/mcp", "/mcp/"})

log = structlog.get_logger(__name__)


class BodyTooLarge(Exception):
    def __init__(self, received: int) -> None:
        super().__init__(received)
        self.received = received


def _declared_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers", ()):
        if name == b"content-length":
            text = bytes(value).decode("latin-1").strip()
            return int(text) if text.isdigit() else None
    return None


async def read_limited_body(receive: Any, limit: int) -> tuple[bytes, list[dict[str, Any]]]:
    """The whole body (at most ``limit`` bytes) and any non-body message seen on the way."""
    chunks: list[bytes] = []
    received = 0
    others: list[dict[str, Any]] = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            others.append(message)  # a disconnect: the application will see it
            break
        chunk = message.get("body", b"")
        received += len(chunk)
        if received > limit:
            raise BodyTooLarge(received)
        chunks.append(chunk)
        if not message.get("more_body", False):
            break
    return b"".join(chunks), others


def _with_length(scope: Scope, length: int) -> Scope:
    headers = [
        (name, value)
        for name, value in scope.get("headers", ())
        if name not in (b"content-length", b"transfer-encoding")
    ]
    headers.append((b"content-length", str(length).encode()))
    return {**scope, "headers": headers}


def _replay(body: bytes, others: list[dict[str, Any]], receive: Any) -> Any:
    pending: list[dict[str, Any]] = [
        {"type": "http.request", "body": body, "more_body": False},
        *others,
    ]

    async def replayed() -> dict[str, Any]:
        if pending:
            return pending.pop(0)
        return await receive()

    return replayed


def _refusal_from_scope(scope: Scope, received: int, limit: int) -> RefusedRequest:
    token = None
    for name, value in scope.get("headers", ()):
        if name == b"authorization":
            scheme, _, rest = bytes(value).decode("latin-1").partition(" ")
            token = rest.strip() if scheme.lower() == "bearer" else None
    kind = token_kind(token) if token else None
    client = scope.get("client") or ("", 0)
    return RefusedRequest(
        method=str(scope.get("method", "")),
        path=str(scope.get("path", "")),
        status=413,
        code="payload_too_large",
        message=_too_large_message(received, limit),
        address=str(client[0]),
        agent=agent_for_token(token) if token and kind == "agent" else None,
        person=person_for_token(token) if token and kind == "person" else None,
    )


def _too_large_message(received: int, limit: int) -> str:
    return (
        f"the request body is over {limit} bytes (at least {received} were sent); "
        f"at most {limit} bytes are accepted"
    )


class RequestBodyLimit:
    """ASGI middleware in front of Django and the MCP gateway."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        path = str(scope.get("path", ""))
        # The MCP gateway reads and limits its own bodies, answering in JSON-RPC.
        if scope.get("type") != "http" or not is_api_path(path) or path in MCP_GATEWAY_PATHS:
            await self.app(scope, receive, send)
            return
        limit = int(settings.SYNTHORG_MAX_REQUEST_BYTES)
        declared = _declared_length(scope)
        try:
            if declared is not None and declared > limit:
                raise BodyTooLarge(declared)
            body, others = await read_limited_body(receive, limit)
        except BodyTooLarge as too_large:
            await self._refuse(scope, send, too_large.received, limit)
            return
        await self.app(_with_length(scope, len(body)), _replay(body, others, receive), send)

    async def _refuse(self, scope: Scope, send: Any, received: int, limit: int) -> None:
        with bound_request_id(scope) as request_id:
            try:
                refused = await sync_to_async(_refusal_from_scope)(scope, received, limit)
                await sync_to_async(request_refusal_record)(refused=refused)
            except Exception:  # the refusal stands; its audit failing is logged
                log.error("request_refusal.audit_failed", status=413, exc_info=True)
        body = error_bytes(
            "payload_too_large",
            _too_large_message(received, limit),
            {"limit_bytes": limit, "received_bytes": received},
        )
        await send(
            {
                "type": "http.response.start",
                "status": 413,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                    (REQUEST_ID_HEADER.lower().encode(), request_id.encode()),
                    (b"connection", b"close"),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})
