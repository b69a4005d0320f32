"""daphne: a request too malformed to reach the application is answered in the envelope.

Twisted (under daphne) refuses a request whose request line or headers it cannot
read (a header value holding a carriage return, line feed or NUL, a header line
without a colon, headers past its size limit, a ``Content-Length`` or
``Transfer-Encoding`` it cannot use) with a bare ``400 Bad Request`` and an empty
body, before daphne or the application sees the request. daphne itself refuses
other control characters in a header value, a header name or a path it cannot
read, with an HTML page.

Both answer here instead: the error envelope (``invalid_argument``), a sentence
naming the header at fault (never its value: it may be a credential), an
``X-Request-ID``, and a ``request.refused`` audit event like every refusal of the
HTTP layer. Twisted's refusals have no page to keep and get the envelope on every
path; daphne's keep its page outside /api/ and /mcp/.
"""

from __future__ import annotations

import asyncio
import re
import uuid
from collections.abc import Callable
from typing import Any, Final

import structlog
from asgiref.sync import sync_to_async

from audit_app.refusals import RefusedRequest, request_refusal_record
from common.envelope import DEFAULT_MESSAGE, code_for_status, error_bytes, is_api_path
from common.platform.client_address import client_address, forwarded_for_entries
from synthorg_site.http_edge.client_address import trusted_proxies

log = structlog.get_logger(__name__)

_HEADER_NAME: Final = re.compile(rb"[-!#$%&'*+.^_`|~0-9A-Za-z]{1,64}")
_LINE_BREAKING: Final = frozenset(b"\x00\r\n")
_FRAMING_HEADERS: Final = frozenset({"content-length", "transfer-encoding"})
_NOT_READ: Final = (
    "the request could not be read as HTTP/1.1; nothing was done. Send `METHOD /path "
    "HTTP/1.1`, then one `Name: value` line per header"
)
# Tasks writing audit events, kept until they finish (the loop holds only weak references).
_AUDITS: set[asyncio.Task[None]] = set()


def header_line_problem(line: bytes) -> tuple[str, str]:
    """Why twisted refused one header line, and the header's name ("" when unreadable)."""
    name, colon, value = line.partition(b":")
    if not colon:
        return (
            "a header line has no ':'; each header is one line, `Name: value`, so a line "
            "break inside a header value (a bearer token included) ends the header there",
            "",
        )
    if not _HEADER_NAME.fullmatch(name):
        return "a header name holds characters HTTP does not allow in a name", ""
    shown = name.decode("ascii")
    if _LINE_BREAKING.intersection(value.strip(b" \t")):
        return (
            f"the {shown} header holds a carriage return, line feed or NUL character, which "
            "HTTP does not allow in a header value; send the value on one line",
            shown,
        )
    if shown.lower() in _FRAMING_HEADERS:
        return f"the {shown} header is not one the body's length can be read from", shown
    return f"the {shown} header could not be read", shown


def _channel_problem(channel: Any) -> tuple[str, dict[str, Any]]:
    """Why twisted's HTTP channel is refusing the request it is reading."""
    if channel._receivedHeaderSize > channel.totalHeadersSize:
        limit = channel.totalHeadersSize
        return (
            f"the request line and headers are over {limit} bytes; at most {limit} are read",
            {"limit_bytes": limit},
        )
    if channel._receivedHeaderCount > channel.maxHeaders:
        limit = channel.maxHeaders
        return f"the request has more than {limit} headers", {"limit_headers": limit}
    line = channel.__dict__.get("_synthorg_header_line")
    if line is not None:
        message, name = header_line_problem(bytes(line))
        return message, ({"header": name} if name else {})
    if not hasattr(channel, "_command"):
        return "the request line is not `METHOD /path HTTP/1.1`; nothing was done", {}
    return _NOT_READ, {}


def _answer(status: int, reason: bytes, body: bytes, request_id: str) -> bytes:
    return (
        b"HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n"
        b"X-Request-ID: %s\r\nConnection: close\r\n\r\n"
        % (status, reason, len(body), request_id.encode("ascii"))
    ) + body


def _audit(refused: RefusedRequest, request_id: str) -> None:
    """Write the refusal's audit event from the event loop, off the reactor's turn."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:  # no asyncio reactor: the log line is the record
        return

    async def record() -> None:
        try:
            await sync_to_async(request_refusal_record)(refused=refused)
        except Exception:  # the refusal stands; its audit failing is logged
            log.error("request_refusal.audit_failed", status=refused.status, exc_info=True)

    with structlog.contextvars.bound_contextvars(request_id=request_id):
        task = loop.create_task(record())
    _AUDITS.add(task)
    task.add_done_callback(_AUDITS.discard)


def _refusal(
    *, method: bytes, path: bytes, address: str, message: str, status: int = 400
) -> RefusedRequest:
    return RefusedRequest(
        method=method.decode("latin-1")[:16],
        path=path.split(b"?", 1)[0].decode("latin-1")[:500],
        status=status,
        code=code_for_status(status),
        message=message,
        address=address,
    )


def _peer(transport: Any) -> str:
    try:
        return str(getattr(transport.getPeer(), "host", "") or "")
    except Exception:
        return ""


def _client_of(request: Any) -> str:
    """The client of a request daphne refused: its peer, or whom trusted proxies name."""
    # daphne refuses some headers before it notes the client: then the transport's peer.
    peer = str((getattr(request, "client_addr", None) or [""])[0] or "") or _peer(
        getattr(request, "transport", None)
    )
    try:
        values = request.requestHeaders.getRawHeaders(b"x-forwarded-for") or []
        said = [bytes(value).decode("latin-1") for value in values]
    except Exception:
        said = []
    return client_address(
        peer=peer, forwarded_for=forwarded_for_entries(said), trusted=trusted_proxies()
    ).address


def install_channel_answers(channel_class: Any) -> bool:
    """Answer twisted's own refusals (``HTTPChannel``) in the envelope; False when this
    twisted has no such refusal to replace."""
    refuse = getattr(channel_class, "_respondToBadRequestAndDisconnect", None)
    header_received = getattr(channel_class, "headerReceived", None)
    if refuse is None or header_received is None:
        return False

    def remembering_header_received(self: Any, line: bytes) -> Any:
        # The line being judged, for the answer if twisted refuses it.
        self._synthorg_header_line = line
        try:
            return header_received(self, line)
        finally:
            self._synthorg_header_line = None

    def refuse_in_envelope(self: Any) -> None:
        try:
            message, details = _channel_problem(self)
            request_id = uuid.uuid4().hex
            body = error_bytes("invalid_argument", message, details)
            self.transport.write(_answer(400, b"Bad Request", body, request_id))
            self.loseConnection()
        except Exception:
            log.error("malformed_request.answer_failed", exc_info=True)
            refuse(self)
            return
        address = _peer(self.transport)
        log.info("malformed_request.refused", reason=message, client=address)
        refused = _refusal(
            method=getattr(self, "_command", b""),
            path=getattr(self, "_path", b""),
            address=address,
            message=message,
        )
        _audit(refused, request_id)

    channel_class.headerReceived = remembering_header_received
    channel_class._respondToBadRequestAndDisconnect = refuse_in_envelope
    return True


def _daphne_problem(request: Any, status: int, text: str) -> tuple[str, dict[str, Any]]:
    """daphne's reason for refusing ``request``, said as the console says it."""
    if status != 400:
        return DEFAULT_MESSAGE[code_for_status(status)], {}
    if text in ("Invalid header name", "Invalid header value"):
        from daphne.utils import HEADER_NAME_RE, INVALID_HEADER_VALUE_BYTES

        for name, values in request.requestHeaders.getAllRawHeaders():
            if not HEADER_NAME_RE.fullmatch(name):
                return "a header name holds characters HTTP does not allow in a name", {}
            if any(INVALID_HEADER_VALUE_BYTES.intersection(value) for value in values):
                shown = name.decode("latin-1")
                return (
                    f"the {shown} header holds a control character (vertical tab, form feed, "
                    "a separator or next-line character) HTTP does not allow in a header "
                    "value; send printable characters only",
                    {"header": shown},
                )
    if text == "Invalid characters in path":
        return "the path holds characters that are not ASCII; percent-encode them", {}
    if text == "Invalid query string":
        return "the query string holds characters that are not ASCII; percent-encode them", {}
    return _NOT_READ, {}


def install_request_answers(request_class: Any) -> bool:
    """Answer daphne's own error pages (``WebRequest.basic_error``) in the envelope on
    /api/ and /mcp/; False when this daphne has no such page to replace."""
    basic_error: Callable[..., None] | None = getattr(request_class, "basic_error", None)
    if basic_error is None:
        return False

    def basic_error_in_envelope(self: Any, status: int, status_text: bytes, body: str) -> None:
        path = bytes(getattr(self, "uri", b"") or b"").split(b"?", 1)[0]
        if not is_api_path(path.decode("latin-1")):
            basic_error(self, status, status_text, body)
            return
        message, details = _daphne_problem(self, status, str(body))
        request_id = uuid.uuid4().hex
        self.handle_reply(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [
                    (b"Content-Type", b"application/json"),
                    (b"X-Request-ID", request_id.encode("ascii")),
                ],
            }
        )
        self.handle_reply(
            {
                "type": "http.response.body",
                "body": error_bytes(code_for_status(status), message, details),
            }
        )
        if status == 400:
            address = _client_of(self)
            log.info("malformed_request.refused", reason=message, client=address)
            refused = _refusal(
                method=bytes(getattr(self, "method", b"") or b""),
                path=path,
                address=address,
                message=message,
            )
            _audit(refused, request_id)

    request_class.basic_error = basic_error_in_envelope
    return True
