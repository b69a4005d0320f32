"""PURE: read a proxy request head (CONNECT or an absolute-form HTTP request) with h11.

h11 (the HTTP/1.1 parser httpx is built on) validates the request line and
headers; this module only decides what a proxy does with them. A CONNECT names
``host:port``; a plain-HTTP request names an absolute ``http://`` URL, which is
rewritten to origin form with ``Connection: close`` so one client connection
carries exactly one checked request to one checked destination.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

import h11

from common.vocabulary.network import NetworkTargetError, parse_host_port
from tools_app.net.errors import EgressError
from tools_app.net.urls import parse_target

HEAD_END: Final = b"\r\n\r\n"
# Hop-by-hop headers and the proxy's own: never passed to the destination.
_DROPPED: Final = frozenset(
    {b"connection", b"keep-alive", b"proxy-connection", b"proxy-authorization", b"te", b"upgrade"}
)


class ProxyRequestError(ValueError):
    """The client's request cannot be served as written; the message says why."""


@dataclass(frozen=True, slots=True)
class ProxyRequest:
    """Where the client wants to go, and (plain HTTP) the head to send there."""

    host: str
    port: int
    tunnel: bool
    upstream_head: bytes = b""


def parse_request_head(head: bytes, *, max_head_bytes: int) -> ProxyRequest:
    """Parse one complete request head (ending in CRLF CRLF)."""
    connection = h11.Connection(h11.SERVER, max_incomplete_event_size=max_head_bytes)
    try:
        connection.receive_data(head)
        event = connection.next_event()
    except h11.RemoteProtocolError as exc:
        raise ProxyRequestError(f"the request is not valid HTTP/1.1 ({exc})") from exc
    if not isinstance(event, h11.Request):
        raise ProxyRequestError("the request head is incomplete")
    target = event.target.decode("ascii", "replace")
    if event.method == b"CONNECT":
        try:
            endpoint = parse_host_port(target)
        except NetworkTargetError as exc:
            raise ProxyRequestError(f"CONNECT needs host:port ({exc})") from exc
        if endpoint.port is None:
            raise ProxyRequestError("CONNECT needs host:port; the port is missing")
        return ProxyRequest(endpoint.host, endpoint.port, tunnel=True)
    try:
        parsed = parse_target(target, schemes=frozenset({"http"}))
    except EgressError as exc:
        raise ProxyRequestError(
            f"a plain request through the proxy needs an absolute http:// URL; use CONNECT for "
            f"https and other TCP ({exc.reason})"
        ) from exc
    lines = [b"%s %s HTTP/%s" % (event.method, parsed.path.encode(), event.http_version)]
    for name, value in event.headers.raw_items():
        if name.lower() not in _DROPPED:
            lines.append(name + b": " + value)
    lines.append(b"Connection: close")
    return ProxyRequest(
        parsed.host, parsed.port, tunnel=False, upstream_head=b"\r\n".join(lines) + HEAD_END
    )


def http_reply(status: int, phrase: str, reason: str = "") -> bytes:
    """A complete, closing HTTP/1.1 reply with ``reason`` as its plain-text body."""
    body = (reason + "\n").encode("utf-8") if reason else b""
    head = (
        f"HTTP/1.1 {status} {phrase}\r\nContent-Type: text/plain; charset=utf-8\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n"
    )
    if reason:
        # Clients that hide the body still show this header.
        head += f"X-Synthorg-Egress: {reason[:300]}\r\n"
    return head.encode("utf-8", "replace") + b"\r\n" + body


CONNECT_ESTABLISHED: Final = b"HTTP/1.1 200 Connection established\r\n\r\n"
