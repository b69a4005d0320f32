"""The gateway as an ASGI application at /mcp/, in front of Django.

Each request gets a request id (like every Django request), a Host check against
ALLOWED_HOSTS, and the agent bearer token check of the REST API: no token or an
unknown one is 401, a person's token 403. The server is stateless (any web node
serves any request), so it offers no GET event stream and no sessions: every method
but POST is 405. The body is read here (size-limited) and checked to be one
JSON-RPC message; `notifications/cancelled` is acted on here. Only then does the
request reach the SDK's Streamable HTTP session manager: one answering JSON, and
one answering a server-sent event stream for a `tools/call` that asked for
progress notifications. Either answer to a `tools/call` is kept alive while the call
waits (`keepalive`), so clients that time out reads after a few seconds keep waiting.

daphne runs no ASGI lifespan, so the session manager is started on the first request
of each event loop, in a task of its own that lives as long as the loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import json
from dataclasses import dataclass, field
from typing import Any

import structlog
from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import close_old_connections
from django.http.request import split_domain_port, validate_host
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from audit_app.refusals import RefusedRequest, request_refusal_record
from common.platform.logs import REQUEST_ID_HEADER, request_id_from
from tools_app.mcp.cancel import mcp_request_cancel
from tools_app.mcp.envelope import INVALID_REQUEST, Envelope, EnvelopeProblem, read_envelope
from tools_app.mcp.keepalive import kept_alive
from tools_app.mcp.server import CALLER_SCOPE_KEY, EXCHANGE_SCOPE_KEY, McpCaller, gateway_server
from tools_app.mcp.waiting import McpExchange
from trust_app.auth import agent_token_verdict, person_for_token
from trust_app.tokens.bearer import token_kind
from trust_app.tokens.life import Scope as TokenScope

MCP_PATHS = frozenset({"/mcp", "/mcp/"})
CALL_METHOD = "tools/call"

log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class _Refusal:
    status: int
    code: str
    message: str
    rpc_code: int = INVALID_REQUEST
    request_id: str | int | None = None
    headers: tuple[tuple[bytes, bytes], ...] = field(default=())


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key.lower() == name:
            return bytes(value).decode("latin-1")
    return None


def _bearer(scope: Scope) -> str | None:
    scheme, _, value = (_header(scope, b"authorization") or "").partition(" ")
    if scheme.lower() != "bearer" or not value.strip():
        return None
    return value.strip()


def caller_for(token: str | None, request_id: str, address: str = "") -> McpCaller | _Refusal:
    """The agent a bearer token belongs to, or why the request is refused."""
    if token is None:
        return _Refusal(
            401, "unauthenticated", "send Authorization: Bearer <agent token> (the MCP gateway "
            "takes agent tokens only)",
        )  # fmt: skip
    kind = token_kind(token)
    if kind == "person" and person_for_token(token) is not None:
        return _Refusal(
            403, "forbidden", "the MCP gateway takes an agent token; people use the console"
        )
    if kind != "agent":
        return _Refusal(401, "unauthenticated", "the bearer token is not a valid agent token")
    verdict = agent_token_verdict(token, scope=TokenScope.MCP, address=address)
    if verdict.refusal is not None:
        return _Refusal(verdict.refusal.status, verdict.refusal.code, verdict.refusal.reason)
    assert verdict.agent is not None
    return McpCaller(agent=verdict.agent, request_id=request_id)


def _fresh_caller_for(
    token: str | None, request_id: str, address: str = ""
) -> McpCaller | _Refusal:
    # One trip to the thread for both: each trip costs a context switch per request.
    close_old_connections()
    return caller_for(token, request_id, address)


def _host_allowed(scope: Scope) -> bool:
    host = _header(scope, b"host") or ""
    domain, _port = split_domain_port(host)
    allowed = list(settings.ALLOWED_HOSTS)
    if settings.DEBUG and not allowed:
        allowed = [".localhost", "127.0.0.1", "[::1]"]
    return bool(domain) and validate_host(domain, allowed)


def _audit_refusal(scope: Scope, refusal: _Refusal, agent: Any | None) -> None:
    client = scope.get("client") or ("", 0)
    refused = RefusedRequest(
        method=str(scope.get("method", "")),
        path=str(scope.get("path", "")),
        status=refusal.status,
        code=refusal.code,
        message=refusal.message,
        address=str(client[0]),
        agent=agent,
        extra={"jsonrpc_code": refusal.rpc_code},
    )
    try:
        request_refusal_record(refused=refused)
    except Exception:  # the refusal stands; its audit failing is logged
        log.error("mcp_refusal_audit_failed", status=refusal.status, exc_info=True)


async def _refuse_audited(
    scope: Scope, send: Send, refusal: _Refusal, agent: Any | None = None
) -> None:
    """Refuse the request and audit the refusal (rate-limited per client, as every
    refusal of the HTTP layer)."""
    await sync_to_async(_audit_refusal)(scope, refusal, agent)
    await _refuse(send, refusal)


async def _refuse(send: Send, refusal: _Refusal) -> None:
    # A JSON-RPC error, as the SDK answers its own HTTP-level refusals, so MCP clients
    # show the message; `data.code` is the REST API's error code.
    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": refusal.request_id,
            "error": {
                "code": refusal.rpc_code,
                "message": refusal.message,
                "data": {"code": refusal.code, "status": refusal.status},
            },
        }
    ).encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        *refusal.headers,
    ]
    if refusal.status == 401:
        headers.append((b"www-authenticate", b'Bearer realm="synthorg"'))
    await send({"type": "http.response.start", "status": refusal.status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


@dataclass
class _Running:
    loop: asyncio.AbstractEventLoop
    manager: StreamableHTTPSessionManager
    ready: asyncio.Future[None]
    task: asyncio.Task[None]


class GatewaySessionManager:
    """Running SDK session managers per event loop (one answering JSON, one answering
    an event stream), each started on first use."""

    def __init__(self) -> None:
        self._running: dict[bool, _Running] = {}

    def _new_manager(self, streaming: bool) -> StreamableHTTPSessionManager:
        return StreamableHTTPSessionManager(
            app=gateway_server(),
            json_response=not streaming,
            stateless=True,
            max_request_body_size=settings.SYNTHORG_MAX_REQUEST_BYTES,
        )

    async def manager(self, *, streaming: bool = False) -> StreamableHTTPSessionManager:
        loop = asyncio.get_running_loop()
        running = self._running.get(streaming)
        if running is None or running.loop is not loop or running.task.done():
            # No await between the check and the assignment: one start per loop.
            manager = self._new_manager(streaming)
            ready: asyncio.Future[None] = loop.create_future()
            # A fresh context: the manager's task must not keep the first request's
            # request id (or anything else it bound) for the life of the process.
            task = loop.create_task(self._serve(manager, ready), context=contextvars.Context())
            running = _Running(loop=loop, manager=manager, ready=ready, task=task)
            self._running[streaming] = running
        await asyncio.shield(running.ready)
        return running.manager

    @staticmethod
    async def _serve(manager: StreamableHTTPSessionManager, ready: asyncio.Future[None]) -> None:
        try:
            async with manager.run():
                ready.set_result(None)
                await asyncio.Event().wait()  # until the loop shuts down and cancels us
        except BaseException as exc:
            if not ready.done():
                ready.set_exception(exc if isinstance(exc, Exception) else RuntimeError(str(exc)))
            raise


class _BodyTooLarge(Exception):
    pass


async def _read_body(receive: Receive, limit: int) -> bytes | None:
    """The whole request body (chunked or not), or None when the client went away."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None
        chunk = bytes(message.get("body", b""))
        size += len(chunk)
        if size > limit:
            raise _BodyTooLarge
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


def _accepts_event_stream(scope: Scope) -> bool:
    accept = (_header(scope, b"accept") or "").lower()
    return "text/event-stream" in accept and ("application/json" in accept or "*/*" in accept)


def _json_content_type(scope: Scope) -> tuple[Scope, _Refusal | None]:
    """The request, its Content-Type spelled as the SDK expects, or the refusal of a body
    not sent as application/json (the SDK would answer it in plain text)."""
    sent = _header(scope, b"content-type")
    media_type, _, parameters = (sent or "").partition(";")
    if media_type.strip().lower() != "application/json":
        shown = f"as {media_type.strip()[:100]!r}" if media_type.strip() else "with no Content-Type"
        message = (
            f"the body is sent {shown}; send one JSON-RPC message as application/json "
            "(Content-Type: application/json)"
        )
        return scope, _Refusal(415, "unsupported_media_type", message)
    value = "application/json" + (f";{parameters}" if parameters else "")
    headers = [(k, v) for k, v in scope.get("headers", ()) if k.lower() != b"content-type"]
    return {**scope, "headers": [*headers, (b"content-type", value.encode("latin-1"))]}, None


def _problem_refusal(problem: EnvelopeProblem) -> _Refusal:
    return _Refusal(
        400, "invalid_argument", problem.message, rpc_code=problem.code,
        request_id=problem.request_id,
    )  # fmt: skip


_NOT_POST = (
    "{method} is not served at /mcp/: this MCP server is stateless, so it offers no "
    "server-sent event stream (GET) and no sessions to end (DELETE); POST one "
    "JSON-RPC message per request"
)


async def _accepted(send: Send) -> None:
    await send(
        {"type": "http.response.start", "status": 202, "headers": [(b"content-length", b"0")]}
    )
    await send({"type": "http.response.body", "body": b""})


class McpGateway:
    """The /mcp endpoint: request id, Host check, agent authentication, method and
    message checks, then the SDK."""

    def __init__(self) -> None:
        self.sessions = GatewaySessionManager()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        request_id = request_id_from(_header(scope, REQUEST_ID_HEADER.lower().encode()))

        async def send_with_request_id(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = [*message.get("headers", ()), (b"x-request-id", request_id.encode())]
                message = {**message, "headers": headers}
            await send(message)

        with structlog.contextvars.bound_contextvars(request_id=request_id):
            if not _host_allowed(scope):
                await _refuse_audited(
                    scope,
                    send_with_request_id,
                    _Refusal(400, "bad_request", "the Host header is not in ALLOWED_HOSTS"),
                )
                return
            try:
                client = scope.get("client") or ("", 0)
                caller = await sync_to_async(_fresh_caller_for)(
                    _bearer(scope), request_id, str(client[0])
                )
                if isinstance(caller, _Refusal):
                    log.info("mcp_refused", status=caller.status, reason=caller.message)
                    await _refuse_audited(scope, send_with_request_id, caller)
                    return
                await self._serve(scope, receive, send_with_request_id, caller)
            finally:
                await sync_to_async(close_old_connections)()

    async def _serve(self, scope: Scope, receive: Receive, send: Send, caller: McpCaller) -> None:
        method = str(scope.get("method", "")).upper()
        if method != "POST":
            message = _NOT_POST.format(method=method)
            refusal = _Refusal(405, "method_not_allowed", message, headers=((b"allow", b"POST"),))
            await _refuse_audited(scope, send, refusal, caller.agent)
            return
        scope, unsupported = _json_content_type(scope)
        if unsupported is not None:
            await _refuse_audited(scope, send, unsupported, caller.agent)
            return
        limit = settings.SYNTHORG_MAX_REQUEST_BYTES
        try:
            body = await _read_body(receive, limit)
        except _BodyTooLarge:
            message = f"the request body is larger than {limit} bytes"
            await _refuse_audited(
                scope, send, _Refusal(413, "payload_too_large", message), caller.agent
            )
            return
        if body is None:
            return
        envelope = read_envelope(body)
        if isinstance(envelope, EnvelopeProblem):
            log.info("mcp_message_refused", reason=envelope.message[:200])
            await _refuse_audited(scope, send, _problem_refusal(envelope), caller.agent)
            return
        cancelled = envelope.cancelled_request
        if cancelled is not None:
            await sync_to_async(mcp_request_cancel)(
                agent=caller.agent, request_id=cancelled, reason=envelope.cancel_reason
            )
            await _accepted(send)
            return
        await self._hand_over(scope, receive, send, caller, envelope, body)

    async def _hand_over(
        self,
        scope: Scope,
        receive: Receive,
        send: Send,
        caller: McpCaller,
        envelope: Envelope,
        body: bytes,
    ) -> None:
        """Give the request to the SDK, telling its handler when the client goes away."""
        exchange = McpExchange()
        streaming = envelope.wants_progress and _accepts_event_stream(scope)
        manager = await self.sessions.manager(streaming=streaming)
        delivered = False

        async def replay() -> Message:
            nonlocal delivered
            if not delivered:
                delivered = True
                return {"type": "http.request", "body": body, "more_body": False}
            await exchange.disconnected.wait()
            return {"type": "http.disconnect"}

        async def watch_disconnect() -> None:
            while (await receive())["type"] != "http.disconnect":
                pass
            exchange.disconnected.set()

        watcher = asyncio.ensure_future(watch_disconnect())
        try:
            scope = {**scope, CALLER_SCOPE_KEY: caller, EXCHANGE_SCOPE_KEY: exchange}
            if envelope.is_request and envelope.method == CALL_METHOD:
                # A call may wait minutes for a person: its answer is kept alive.
                async with kept_alive(send, streaming=streaming) as kept_send:
                    await manager.handle_request(scope, replay, kept_send)
            else:
                await manager.handle_request(scope, replay, send)
        finally:
            watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watcher


class McpMount:
    """HTTP to /mcp and /mcp/ goes to the gateway, everything else to `fallback`."""

    def __init__(self, gateway: ASGIApp, fallback: ASGIApp) -> None:
        self.gateway = gateway
        self.fallback = fallback

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and _relative_path(scope) in MCP_PATHS:
            await self.gateway(scope, receive, send)
        else:
            await self.fallback(scope, receive, send)


def _relative_path(scope: Scope) -> str:
    path: str = scope.get("path", "")
    root: str = scope.get("root_path", "")
    return path[len(root) :] if root and path.startswith(root) else path


def mcp_mount(fallback: Any) -> McpMount:
    """Wrap Django's ASGI application so /mcp/ is served by the gateway."""
    return McpMount(McpGateway(), fallback)
