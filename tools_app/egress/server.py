"""The egress proxy: one per tool call, on a unix socket, served by its own event loop thread.

A client speaks either SOCKS5 (first byte 5) or HTTP (CONNECT host:port, or a
plain request with an absolute ``http://`` URL). Every destination goes through
``EgressDecider`` (policy, resolution, address checks) in a worker thread, and
the proxy connects to the very address that was checked. Each connection leaves
one ``ConnectionRecord``; ``stop`` cuts what is still open and records it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import ssl
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from tools_app.egress import socks5
from tools_app.egress.decision import EgressDecider
from tools_app.egress.http_head import (
    CONNECT_ESTABLISHED,
    HEAD_END,
    ProxyRequestError,
    http_reply,
    parse_request_head,
)
from tools_app.egress.limits import ProxyLimits
from tools_app.egress.records import ConnectionRecord, EgressOutcome, EgressProtocol
from tools_app.egress.relay import Counters, RelayCut, relay
from tools_app.egress.seal import Seal, ValueMask, seals_covering
from tools_app.egress.sealed import SealedConnectionError, SealedOutcome, serve_sealed
from tools_app.net import CheckedEndpoint, EgressError

if TYPE_CHECKING:
    from tools_app.egress.authority import EgressAuthority

CALL_ENDED = "the call ended while the connection was open"
# When the call ends, a connection its sandbox closed may still be ending here (the
# close travels through the sandbox's relay): it is given this long to end as closed
# before what is still open is cut.
STOP_SETTLE_SECONDS = 0.5


class _Refused(Exception):
    def __init__(self, outcome: EgressOutcome, reason: str) -> None:
        super().__init__(reason)
        self.outcome = outcome
        self.reason = reason


@dataclass
class _Connection:
    protocol: EgressProtocol = EgressProtocol.UNKNOWN
    host: str = ""
    port: int | None = None
    address: str = ""
    sealed: tuple[Seal, ...] = ()
    outcome: SealedOutcome | None = None


class EgressProxy:
    """Serves one sandbox; ``records`` holds one entry per ended connection until drained."""

    def __init__(
        self,
        decider: EgressDecider,
        *,
        socket_path: Path,
        limits: ProxyLimits | None = None,
        max_records: int = 1000,
        seals: tuple[Seal, ...] = (),
        authority: EgressAuthority | None = None,
        upstream_tls: ssl.SSLContext | None = None,
    ) -> None:
        self.decider = decider
        self.socket_path = socket_path
        self.limits = limits or ProxyLimits()
        self.seals = seals
        """The call's sealed secrets: added to HTTP(S) requests to the hosts they name."""
        self.authority = authority
        self.upstream_tls = upstream_tls
        self.max_records = max_records
        self.records: list[ConnectionRecord] = []
        self.unrecorded = 0
        """Connections refused because the call already used ``max_records``."""
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._stop: asyncio.Event | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._idle = threading.Event()
        """Set while no connection is open (a drain may wait for the last to end)."""
        self._idle.set()
        self._admitted = 0
        """Connections open now that were within ``max_connections`` (the loop's own)."""
        self._startup_error: BaseException | None = None
        self.stop_settle_seconds = STOP_SETTLE_SECONDS
        """How long ``stop`` lets open connections end by themselves before it cuts them."""

    # --- lifecycle (called from the worker's thread) -------------------------

    def start(self) -> None:
        """Bind the socket (mode 0666: the sandbox user connects) and start serving."""
        self._thread = threading.Thread(target=self._run, name="egress-proxy", daemon=True)
        self._thread.start()
        self._ready.wait()
        if self._startup_error is not None:
            raise self._startup_error

    def stop(self) -> list[ConnectionRecord]:
        """Stop serving, cut the connections still open after a short settle (one its
        client is closing ends as closed), and return the records not drained."""
        thread = self._thread
        if self._loop is not None and self._stop is not None and thread is not None:
            if thread.is_alive():
                self._loop.call_soon_threadsafe(self._stop.set)
            thread.join()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.socket_path)
        with self._lock:
            return list(self.records)

    def drain(self, settle_seconds: float = 0.0) -> tuple[list[ConnectionRecord], int]:
        """Take the records of the connections that ended so far, and the count refused
        without a record, while the proxy keeps serving (a long-lived proxy audits as it
        goes). Waits up to ``settle_seconds`` for open connections to end first (a client
        closing as its call returns); one still open is recorded when it ends."""
        if settle_seconds > 0:
            self._idle.wait(settle_seconds)
        with self._lock:
            records, self.records = self.records, []
            unrecorded, self.unrecorded = self.unrecorded, 0
        return records, unrecorded

    def __enter__(self) -> EgressProxy:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- the loop thread ------------------------------------------------------

    def _run(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        try:
            loop.run_until_complete(self._serve())
            # A resolution still running in the executor is waited for, not leaked.
            loop.run_until_complete(loop.shutdown_default_executor())
        finally:
            loop.close()

    async def _serve(self) -> None:
        self._stop = asyncio.Event()
        try:
            server = await asyncio.start_unix_server(
                self._accept, path=str(self.socket_path), limit=self.limits.max_head_bytes
            )
            os.chmod(self.socket_path, 0o666)  # noqa: S103 - the sandbox user must connect
        except BaseException as exc:
            self._startup_error = exc
            self._ready.set()
            return
        self._ready.set()
        async with server:
            await self._stop.wait()
            server.close()
            if self._tasks:
                await asyncio.wait(list(self._tasks), timeout=self.stop_settle_seconds)
            for task in list(self._tasks):
                task.cancel()
            await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        self._idle.clear()
        try:
            await self._handle(reader, writer)
        finally:
            self._tasks.discard(task)
            if not self._tasks:
                self._idle.set()
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    def _record(
        self,
        conn: _Connection,
        outcome: EgressOutcome,
        reason: str,
        counters: Counters,
        started: float,
    ) -> None:
        if self.seals:
            # A reason may quote what a side sent; a sealed value never reaches the audit.
            reason = ValueMask(self.seals).text(reason)
        record = ConnectionRecord(
            protocol=conn.protocol,
            host=conn.host,
            port=conn.port,
            address=conn.address,
            outcome=outcome,
            reason=reason,
            bytes_up=counters.up,
            bytes_down=counters.down,
            duration_ms=int((time.monotonic() - started) * 1000),
            secrets=tuple(seal.secret for seal in conn.sealed),
            sealed_requests=conn.outcome.requests if conn.outcome is not None else 0,
        )
        with self._lock:
            self.records.append(record)

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        started = time.monotonic()
        conn = _Connection()
        counters = Counters()
        with self._lock:
            if len(self.records) + len(self._tasks) > self.max_records:
                # The call has used its share of audit rows: refuse without a row each.
                self.unrecorded += 1
                return
        admitted = self._admit()
        upstream: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None
        try:
            try:
                async with asyncio.timeout(self.limits.handshake_timeout_seconds):
                    first = await reader.readexactly(1)
                    if first[0] == socks5.VERSION:
                        conn.protocol = EgressProtocol.SOCKS5
                        head = b""
                        await self._socks_target(reader, writer, conn)
                    else:
                        head = await self._http_target(first, reader, writer, conn)
            except TimeoutError:
                raise _Refused(
                    EgressOutcome.INVALID,
                    f"the client named no destination within "
                    f"{self.limits.handshake_timeout_seconds:g} s",
                ) from None
            except asyncio.IncompleteReadError:
                raise _Refused(
                    EgressOutcome.INVALID, "the client closed before naming a destination"
                ) from None
            if not admitted:
                self._refuse_over_limit(conn, writer)
            endpoint = await self._decide(conn, writer)
            conn.sealed = seals_covering(self.seals, endpoint.host, endpoint.port)
            upstream = await self._connect(conn, endpoint, writer)
            if conn.sealed:
                await self._serve_sealed(conn, head, (reader, writer), upstream, counters, started)
                self._record(conn, EgressOutcome.CLOSED, "", counters, started)
                return
            if conn.protocol is EgressProtocol.HTTP:
                upstream[1].write(head)
                await upstream[1].drain()
                counters.up += len(head)
            elif conn.protocol is EgressProtocol.SOCKS5:
                writer.write(socks5.reply(socks5.REP_SUCCEEDED))
            else:
                writer.write(CONNECT_ESTABLISHED)
            await writer.drain()
            counters.last_activity = time.monotonic()
            await relay((reader, writer), upstream, counters, limits=self.limits, started=started)
            self._record(conn, EgressOutcome.CLOSED, "", counters, started)
        except _Refused as refused:
            self._record(conn, refused.outcome, refused.reason, counters, started)
        except RelayCut as cut:
            self._record(conn, EgressOutcome.CUT, str(cut), counters, started)
        except SealedConnectionError as ended:
            self._record(conn, EgressOutcome.CLOSED, str(ended), counters, started)
        except asyncio.CancelledError:
            self._record(conn, EgressOutcome.CUT, CALL_ENDED, counters, started)
        except (ConnectionError, OSError) as exc:
            self._record(
                conn,
                EgressOutcome.CLOSED,
                f"a side reset the connection ({exc})",
                counters,
                started,
            )
        except Exception as exc:  # fail closed: whatever broke ends the connection, recorded
            self._record(
                conn,
                EgressOutcome.FAILED,
                f"the proxy could not serve the connection ({exc.__class__.__name__})",
                counters,
                started,
            )
        finally:
            if admitted:
                self._admitted -= 1
            if upstream is not None:
                upstream[1].close()

    async def _serve_sealed(
        self,
        conn: _Connection,
        head: bytes,
        client: tuple[asyncio.StreamReader, asyncio.StreamWriter],
        upstream: tuple[asyncio.StreamReader, asyncio.StreamWriter],
        counters: Counters,
        started: float,
    ) -> None:
        """Requests to a destination a seal covers: read, sealed and sent on one by one."""
        assert conn.port is not None
        writer = client[1]
        if conn.protocol is EgressProtocol.SOCKS5:
            writer.write(socks5.reply(socks5.REP_SUCCEEDED))
        elif conn.protocol is EgressProtocol.CONNECT:
            writer.write(CONNECT_ESTABLISHED)
        await writer.drain()
        conn.outcome = SealedOutcome()
        loop = asyncio.get_running_loop()
        server_context = None
        if self.authority is not None:
            # Making a certificate signs with the authority's key: off the loop.
            server_context = await loop.run_in_executor(
                None, self.authority.server_context, conn.host
            )
        upstream_tls = self.upstream_tls
        if upstream_tls is None:
            upstream_tls = await loop.run_in_executor(None, _default_upstream)
        await serve_sealed(
            client, upstream, conn.sealed,
            host=conn.host, port=conn.port, first=head,
            server_context=server_context, upstream_context=upstream_tls,
            counters=counters, limits=self.limits, started=started, outcome=conn.outcome,
        )  # fmt: skip

    def _admit(self) -> bool:
        """Count the connection in, unless ``max_connections`` are already open.

        Only admitted connections count: one refused for the limit is still read up to
        its destination (bounded by the handshake timeout) so that the client hears why.
        """
        if self._admitted >= self.limits.max_connections:
            return False
        self._admitted += 1
        return True

    def _refuse_over_limit(self, conn: _Connection, writer: asyncio.StreamWriter) -> None:
        limit = self.limits.max_connections
        reason = (
            f"more than {limit} connections at once through this call's egress proxy "
            f"(its limit); close one and retry"
        )
        writer.write(
            self._refuse_reply(conn, 503, "Service Unavailable", socks5.REP_GENERAL_FAILURE, reason)
        )
        raise _Refused(EgressOutcome.REFUSED, reason)

    async def _http_target(
        self,
        first: bytes,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        conn: _Connection,
    ) -> bytes:
        conn.protocol = EgressProtocol.HTTP
        try:
            head = first + await reader.readuntil(HEAD_END)
        except asyncio.LimitOverrunError:
            reason = f"the request head is larger than {self.limits.max_head_bytes} bytes"
            writer.write(http_reply(431, "Request Header Fields Too Large", reason))
            raise _Refused(EgressOutcome.INVALID, reason) from None
        try:
            request = parse_request_head(head, max_head_bytes=self.limits.max_head_bytes)
        except ProxyRequestError as exc:
            writer.write(http_reply(400, "Bad Request", str(exc)))
            raise _Refused(EgressOutcome.INVALID, str(exc)) from None
        conn.host, conn.port = request.host, request.port
        if request.tunnel:
            conn.protocol = EgressProtocol.CONNECT
        return request.upstream_head

    async def _socks_target(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, conn: _Connection
    ) -> None:
        methods = await reader.readexactly((await reader.readexactly(1))[0])
        method = socks5.choose_method(methods)
        writer.write(bytes([socks5.VERSION, method]))
        if method == socks5.NO_ACCEPTABLE_METHOD:
            raise _Refused(
                EgressOutcome.INVALID, "the SOCKS client offered no method without authentication"
            )
        try:
            atyp = socks5.check_request_header(await reader.readexactly(4))
            first = await reader.readexactly(1)
            rest = await reader.readexactly(socks5.address_length(atyp, first[0]))
            host = socks5.decode_address(atyp, first + rest)
        except socks5.SocksRequestError as exc:
            writer.write(socks5.reply(exc.reply_code))
            raise _Refused(EgressOutcome.INVALID, str(exc)) from None
        port_bytes = await reader.readexactly(2)
        conn.host, conn.port = host, int.from_bytes(port_bytes, "big")

    def _refuse_reply(
        self, conn: _Connection, status: int, phrase: str, socks_code: int, reason: str
    ) -> bytes:
        if conn.protocol is EgressProtocol.SOCKS5:
            return socks5.reply(socks_code)
        return http_reply(status, phrase, reason)

    async def _decide(self, conn: _Connection, writer: asyncio.StreamWriter) -> CheckedEndpoint:
        assert conn.port is not None
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(self.limits.connect_timeout_seconds):
                endpoint = await loop.run_in_executor(
                    None, self.decider.decide, conn.host, conn.port
                )
        except EgressError as exc:
            writer.write(
                self._refuse_reply(conn, 403, "Forbidden", socks5.REP_NOT_ALLOWED, exc.reason)
            )
            raise _Refused(EgressOutcome.REFUSED, exc.reason) from None
        except TimeoutError:
            reason = f"{conn.host} did not resolve within {self.limits.connect_timeout_seconds:g} s"
            writer.write(
                self._refuse_reply(
                    conn, 504, "Gateway Timeout", socks5.REP_HOST_UNREACHABLE, reason
                )
            )
            raise _Refused(EgressOutcome.REFUSED, reason) from None
        conn.host = endpoint.host
        return endpoint

    async def _connect(
        self, conn: _Connection, endpoint: CheckedEndpoint, writer: asyncio.StreamWriter
    ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        # The address that was checked, never the name again: DNS rebinding finds nothing.
        conn.address = endpoint.pinned_address
        try:
            async with asyncio.timeout(self.limits.connect_timeout_seconds):
                return await asyncio.open_connection(
                    endpoint.pinned_address, endpoint.port, limit=self.limits.chunk_bytes
                )
        except TimeoutError:
            reason = (
                f"{endpoint.host}:{endpoint.port} did not accept within "
                f"{self.limits.connect_timeout_seconds:g} s"
            )
            code = socks5.REP_TTL_EXPIRED
            status, phrase = 504, "Gateway Timeout"
        except OSError as exc:
            reason = f"{endpoint.host}:{endpoint.port} could not be reached ({exc.strerror or exc})"
            code = socks5.REP_CONNECTION_REFUSED
            status, phrase = 502, "Bad Gateway"
        writer.write(self._refuse_reply(conn, status, phrase, code, reason))
        raise _Refused(EgressOutcome.FAILED, reason)


def _default_upstream() -> ssl.SSLContext:
    from tools_app.egress.authority import upstream_context

    return upstream_context()
