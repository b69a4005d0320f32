"""A sealed connection: the proxy reads each HTTP/1.1 request and adds the call's secrets.

Used by ``EgressProxy`` for a destination that a seal of the call covers. The
sandbox's client speaks HTTP through a tunnel (CONNECT or SOCKS5) or as a plain
proxy request; a client that starts TLS is answered by the console's authority
(``authority.EgressAuthority``) and the proxy opens its own verified TLS to the real
server. Both sides are parsed and framed again by h11, so a request the client
frames ambiguously (two lengths, a transfer coding other than chunked) is refused
rather than forwarded in a way the server could read differently; upgrades
(websockets, h2c) are not offered. Each request head is rewritten by
``seal.sealed_request``; responses go back as the server sent them, the values masked
(``seal.ValueMask``). A request with a body is the connection's last: a server that
answers without reading a body would read it as the next request, and the proxy's
next head (with the value) as that request's body, which it could echo or store.
TRACE, which answers with the request itself, is not sent.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import time
from dataclasses import dataclass
from typing import Final

import h11

from tools_app.egress.limits import ProxyLimits
from tools_app.egress.relay import Counters, RelayCut
from tools_app.egress.seal import Seal, SealedRequestError, ValueMask, sealed_request

TLS_HANDSHAKE: Final = 0x16
READ_BYTES: Final = 64 * 1024
# Request headers that would turn the connection into something h11 cannot read.
_UPGRADE_HEADERS: Final = frozenset({b"upgrade", b"http2-settings"})
# Methods whose answer is the request itself (the value with it).
_ECHO_METHODS: Final = frozenset({b"TRACE", b"TRACK"})
_CLOSE: Final = (b"Connection", b"close")


class SealedConnectionError(Exception):
    """The sealed connection could not go on; the message says why (for the record)."""


@dataclass
class SealedOutcome:
    """What a sealed connection did, for its record."""

    requests: int = 0
    """Requests sent on with the call's secrets added."""
    tls: bool = False


class _Stream:
    """Bytes over a stream pair, counted against the connection's limits."""

    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        counters: Counters,
        limits: ProxyLimits,
        deadline: float,
        *,
        upward: bool,
        pending: bytes = b"",
    ) -> None:
        self.reader, self.writer = reader, writer
        self.counters, self.limits, self.deadline = counters, limits, deadline
        self.upward = upward
        self.pending = pending

    async def read(self) -> bytes:
        if self.pending:
            data, self.pending = self.pending, b""
            return data
        timeout = min(self.limits.idle_timeout_seconds, max(self.deadline - time.monotonic(), 0.0))
        try:
            async with asyncio.timeout(timeout):
                data = await self.reader.read(READ_BYTES)
        except TimeoutError:
            raise RelayCut(self._why_timed_out()) from None
        self.counters.last_activity = time.monotonic()
        return data

    def _why_timed_out(self) -> str:
        if time.monotonic() >= self.deadline:
            return f"the connection reached its limit of {self.limits.max_connection_seconds:g} s"
        return f"nothing moved for {self.limits.idle_timeout_seconds:g} s"

    async def write(self, data: bytes) -> None:
        if not data:
            return
        total = self.counters.up + self.counters.down + len(data)
        if total > self.limits.max_bytes_per_connection:
            raise RelayCut(
                f"the connection reached its limit of {self.limits.max_bytes_per_connection} bytes"
            )
        self.writer.write(data)
        await self.writer.drain()
        # Bytes the sandbox sent count up; bytes it received count down.
        if self.upward:
            self.counters.up += len(data)
        else:
            self.counters.down += len(data)
        self.counters.last_activity = time.monotonic()


class _TlsServerStream:
    """TLS spoken to the sandbox's client over a plain stream (memory BIOs, so the bytes
    already read to see that the client starts TLS are not lost)."""

    def __init__(self, plain: _Stream, context: ssl.SSLContext) -> None:
        self.plain = plain
        self.incoming = ssl.MemoryBIO()
        self.outgoing = ssl.MemoryBIO()
        self.tls = context.wrap_bio(self.incoming, self.outgoing, server_side=True)

    async def _flush(self) -> None:
        data = self.outgoing.read()
        if data:
            # Handshake and record bytes: the plain stream counts them down to the client.
            await self.plain.write(data)

    async def _feed(self) -> bool:
        data = await self.plain.read()
        if not data:
            self.incoming.write_eof()
            return False
        self.incoming.write(data)
        return True

    async def handshake(self) -> None:
        while True:
            try:
                self.tls.do_handshake()
                await self._flush()
                return
            except ssl.SSLWantReadError:
                await self._flush()
                if not await self._feed():
                    raise SealedConnectionError(
                        "the client closed during the TLS handshake"
                    ) from None

    async def read(self) -> bytes:
        while True:
            try:
                return self.tls.read(READ_BYTES)
            except ssl.SSLWantReadError:
                await self._flush()
                if not await self._feed():
                    return b""
            except ssl.SSLZeroReturnError:
                return b""

    async def write(self, data: bytes) -> None:
        self.tls.write(data)
        await self._flush()


async def _next_event(connection: h11.Connection, stream: _Stream | _TlsServerStream) -> object:
    while True:
        event = connection.next_event()
        if event is h11.NEED_DATA:
            connection.receive_data(await stream.read())
            continue
        return event


def _error_response(status: int, reason: str) -> list[h11.Event]:
    body = reason.encode("utf-8") + b"\n"
    headers = [
        (b"Content-Type", b"text/plain; charset=utf-8"),
        (b"Content-Length", str(len(body)).encode()),
        (b"Connection", b"close"),
    ]
    return [
        h11.Response(status_code=status, headers=headers),
        h11.Data(data=body),
        h11.EndOfMessage(),
    ]


def _request_headers(raw: list[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
    """The client's headers without upgrades, and with one framing: a transfer coding
    wins over a length (h11 reframes the body that way), so the length is dropped."""
    names = {name.lower() for name, _ in raw}
    chunked = b"transfer-encoding" in names
    kept = []
    for name, value in raw:
        lower = name.lower()
        if lower in _UPGRADE_HEADERS or (chunked and lower == b"content-length"):
            continue
        if lower == b"connection":
            tokens = [t.strip() for t in value.split(b",")]
            value = b", ".join(t for t in tokens if t.lower() not in _UPGRADE_HEADERS)
            if not value:
                continue
        kept.append((name, value))
    return kept


def _has_body(request: h11.Request) -> bool:
    return any(
        name == b"transfer-encoding" or (name == b"content-length" and value != b"0")
        for name, value in request.headers
    )


def _closing(headers: list[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
    return [(name, value) for name, value in headers if name.lower() != b"connection"] + [_CLOSE]


class SealedExchange:
    """Serves one sealed connection: requests from the sandbox, answers from the server."""

    def __init__(
        self,
        client: _Stream | _TlsServerStream,
        upstream: _Stream,
        seals: tuple[Seal, ...],
        *,
        host: str,
        port: int,
        scheme: str,
        limits: ProxyLimits,
        outcome: SealedOutcome,
    ) -> None:
        self.client, self.upstream = client, upstream
        self.seals, self.host, self.port, self.scheme = seals, host, port, scheme
        self.inside = h11.Connection(h11.SERVER, max_incomplete_event_size=limits.max_head_bytes)
        self.outside = h11.Connection(h11.CLIENT)
        self.outcome = outcome
        self.mask = ValueMask(seals)
        self.last = False
        """The request on the way has a body: its answer closes the connection."""

    async def _refuse(self, status: int, reason: str) -> None:
        if self.inside.our_state is h11.SEND_RESPONSE:
            for event in _error_response(status, reason):
                await self.client.write(self.inside.send(event) or b"")

    async def serve(self) -> None:
        while True:
            try:
                event = await _next_event(self.inside, self.client)
            except h11.RemoteProtocolError as exc:
                await self._refuse(exc.error_status_hint, f"the request could not be read: {exc}")
                raise SealedConnectionError(
                    f"the client's request could not be read ({exc})"
                ) from None
            if isinstance(event, h11.ConnectionClosed):
                return
            if not isinstance(event, h11.Request):
                raise SealedConnectionError(f"unexpected {type(event).__name__} from the client")
            if event.method == b"CONNECT":
                await self._refuse(405, "CONNECT inside a sealed connection is not served")
                raise SealedConnectionError("the client sent CONNECT inside the tunnel")
            if event.method.upper() in _ECHO_METHODS:
                reason = (
                    f"{event.method.decode('ascii', 'replace')} answers with the request "
                    "itself, the secret in it: not sent on a sealed connection"
                )
                await self._refuse(405, reason)
                raise SealedConnectionError(reason)
            try:
                target, headers = sealed_request(
                    event.target,
                    _request_headers(list(event.headers.raw_items())),
                    self.seals,
                    host=self.host,
                    port=self.port,
                    scheme=self.scheme,
                )
            except SealedRequestError as refused:
                await self._refuse(refused.status, refused.reason)
                raise SealedConnectionError(refused.reason) from None
            self.last = _has_body(event)
            if self.last:
                headers = _closing(headers)
            try:
                request = h11.Request(method=event.method, target=target, headers=headers)
                data = self.outside.send(request)
            except h11.LocalProtocolError:
                # h11's message quotes the offending header, which may be a sealed one.
                reason = "the request could not be sent on (its head is not valid HTTP/1.1)"
                await self._refuse(400, reason)
                raise SealedConnectionError(reason) from None
            await self.upstream.write(data)
            self.outcome.requests += 1
            if not await self._exchange():
                return
            if self.inside.states != {h11.CLIENT: h11.DONE, h11.SERVER: h11.DONE} or (
                self.outside.states != {h11.CLIENT: h11.DONE, h11.SERVER: h11.DONE}
            ):
                return
            self.inside.start_next_cycle()
            self.outside.start_next_cycle()

    async def _exchange(self) -> bool:
        """The request's body up and the answer down, at once (a server may answer
        before the body ends, or ask for it with 100 Continue). False: close."""
        body = asyncio.ensure_future(self._body_up())
        try:
            answered = await self._answer_down()
        finally:
            if not body.done():
                body.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await body
                answered = False
            elif not body.cancelled() and body.exception() is not None:
                raise body.exception()  # type: ignore[misc]
        return answered

    async def _body_up(self) -> None:
        while True:
            try:
                event = await _next_event(self.inside, self.client)
            except h11.RemoteProtocolError as exc:
                raise SealedConnectionError(f"the request body could not be read ({exc})") from None
            if isinstance(event, h11.Data):
                await self.upstream.write(self.outside.send(event))
            elif isinstance(event, h11.EndOfMessage):
                await self.upstream.write(self.outside.send(event))
                return
            else:
                raise SealedConnectionError("the client closed before its request ended")

    async def _answer_down(self) -> bool:
        while True:
            try:
                event = await _next_event(self.outside, self.upstream)
            except h11.RemoteProtocolError as exc:
                await self._refuse(502, f"{self.host} answered something that is not HTTP/1.1")
                raise SealedConnectionError(
                    f"{self.host}'s answer could not be read ({exc})"
                ) from None
            if isinstance(event, h11.ConnectionClosed):
                await self._refuse(502, f"{self.host} closed the connection without an answer")
                return False
            if isinstance(event, h11.InformationalResponse):
                if event.status_code == 101:
                    raise SealedConnectionError("the server switched protocols; not served")
                await self.client.write(
                    self.inside.send(
                        h11.InformationalResponse(
                            status_code=event.status_code,
                            headers=self.mask.headers(event.headers.raw_items()),
                            reason=self.mask.mask(event.reason),
                        )
                    )
                )
            elif isinstance(event, h11.Response):
                headers = self.mask.headers(event.headers.raw_items())
                await self.client.write(
                    self.inside.send(
                        h11.Response(
                            status_code=event.status_code,
                            headers=_closing(headers) if self.last else headers,
                            reason=self.mask.mask(event.reason),
                        )
                    )
                )
            elif isinstance(event, h11.Data):
                await self._down(self.mask.feed(event.data))
            elif isinstance(event, h11.EndOfMessage):
                await self._down(self.mask.flush())
                await self.client.write(
                    self.inside.send(
                        h11.EndOfMessage(headers=self.mask.headers(event.headers.raw_items()))
                    )
                )
                return True

    async def _down(self, data: bytes) -> None:
        if data:
            await self.client.write(self.inside.send(h11.Data(data=data)))


async def _answer_only(
    client: _TlsServerStream, status: int, reason: str, limits: ProxyLimits
) -> None:
    """Read the client's first request and answer it with ``status`` and ``reason``
    (the client hears why inside its own TLS, not a bare reset)."""
    inside = h11.Connection(h11.SERVER, max_incomplete_event_size=limits.max_head_bytes)
    with contextlib.suppress(h11.ProtocolError, RelayCut, SealedConnectionError):
        event = await _next_event(inside, client)
        if isinstance(event, h11.Request):
            for answer in _error_response(status, reason):
                await client.write(inside.send(answer) or b"")


async def serve_sealed(
    client: tuple[asyncio.StreamReader, asyncio.StreamWriter],
    upstream: tuple[asyncio.StreamReader, asyncio.StreamWriter],
    seals: tuple[Seal, ...],
    *,
    host: str,
    port: int,
    first: bytes,
    server_context: ssl.SSLContext | None,
    upstream_context: ssl.SSLContext,
    counters: Counters,
    limits: ProxyLimits,
    started: float,
    outcome: SealedOutcome,
) -> None:
    """Serve the connection until either side ends it. ``first`` is what the client
    sent before (a plain request's head, or nothing yet after a tunnel opened);
    ``outcome`` counts what was done, also when a limit or an error ends it."""
    deadline = started + limits.max_connection_seconds
    plain = _Stream(*client, counters, limits, deadline, upward=False, pending=first)
    outward = _Stream(*upstream, counters, limits, deadline, upward=True)
    if not first:
        first = await plain.read()
        if not first:
            return
        plain.pending = first
    scheme = "http"
    inward: _Stream | _TlsServerStream = plain
    if first[0] == TLS_HANDSHAKE:
        if server_context is None:
            raise SealedConnectionError("no certificate authority to end the client's TLS")
        scheme = "https"
        outcome.tls = True
        inward = _TlsServerStream(plain, server_context)
        await inward.handshake()
        try:
            await upstream[1].start_tls(upstream_context, server_hostname=host)
        except (ssl.SSLError, ssl.CertificateError) as exc:
            reason = (
                f"{host}'s certificate could not be verified ({exc.__class__.__name__}: "
                f"{getattr(exc, 'verify_message', '') or exc}); nothing was sent to it"
            )
            await _answer_only(inward, 502, reason, limits)
            raise SealedConnectionError(reason) from None
    exchange = SealedExchange(
        inward, outward, seals, host=host, port=port, scheme=scheme, limits=limits,
        outcome=outcome,
    )  # fmt: skip
    await exchange.serve()
