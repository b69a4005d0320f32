"""A wall-clock deadline for a whole HTTP exchange, enforced on every socket operation.

httpx's timeouts apply to each operation alone: a server that sends one byte a
second never trips a five-second read timeout, and the call runs until the
worker's hard limit. Here every connect, TLS handshake, read and write gets at
most the time left before the deadline, so the exchange (connect, headers, body,
redirects) ends when the deadline passes, however the bytes trickle in.
"""

from __future__ import annotations

import time
import typing
from collections.abc import Callable

import httpcore


class WallClockDeadline:
    """The moment an exchange must be over, and whether an operation ran into it."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.end = time.monotonic() + seconds
        self.reached = False

    def left(self) -> float:
        """Seconds left (negative once passed)."""
        return self.end - time.monotonic()

    def bound(
        self, timeout: float | None, error: type[httpcore.TimeoutException]
    ) -> tuple[float, bool]:
        """The timeout for one operation, and True when the deadline is what bounds it."""
        left = self.left()
        if left <= 0:
            self.reached = True
            raise error(f"the deadline of {self.seconds:g} s has passed")
        if timeout is None or left <= timeout:
            return left, True
        return timeout, False


_T = typing.TypeVar("_T")


def _bounded(
    deadline: WallClockDeadline,
    timeout: float | None,
    error: type[httpcore.TimeoutException],
    operation: Callable[[float], _T],
) -> _T:
    seconds, by_deadline = deadline.bound(timeout, error)
    try:
        return operation(seconds)
    except httpcore.TimeoutException:
        if by_deadline:
            deadline.reached = True
        raise


class DeadlineStream(httpcore.NetworkStream):
    """A network stream whose every operation ends by the deadline."""

    def __init__(self, inner: httpcore.NetworkStream, deadline: WallClockDeadline) -> None:
        self._inner = inner
        self._deadline = deadline

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return _bounded(
            self._deadline,
            timeout,
            httpcore.ReadTimeout,
            lambda seconds: self._inner.read(max_bytes, seconds),
        )

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        _bounded(
            self._deadline,
            timeout,
            httpcore.WriteTimeout,
            lambda seconds: self._inner.write(buffer, seconds),
        )

    def close(self) -> None:
        self._inner.close()

    def start_tls(
        self,
        ssl_context: typing.Any,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.NetworkStream:
        inner = _bounded(
            self._deadline,
            timeout,
            httpcore.ConnectTimeout,
            lambda seconds: self._inner.start_tls(ssl_context, server_hostname, seconds),
        )
        return DeadlineStream(inner, self._deadline)

    def get_extra_info(self, info: str) -> typing.Any:
        return self._inner.get_extra_info(info)


class DeadlineBackend(httpcore.NetworkBackend):
    """Opens TCP connections whose streams end by the deadline; nothing else."""

    def __init__(self, inner: httpcore.NetworkBackend, deadline: WallClockDeadline) -> None:
        self._inner = inner
        self._deadline = deadline

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: typing.Iterable[typing.Any] | None = None,
    ) -> httpcore.NetworkStream:
        stream = _bounded(
            self._deadline,
            timeout,
            httpcore.ConnectTimeout,
            lambda seconds: self._inner.connect_tcp(
                host, port, seconds, local_address, socket_options
            ),
        )
        return DeadlineStream(stream, self._deadline)

    def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: typing.Iterable[typing.Any] | None = None,
    ) -> httpcore.NetworkStream:
        raise httpcore.ConnectError("unix sockets are not reachable through the egress guard")

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(max(0.0, min(seconds, self._deadline.left())))
