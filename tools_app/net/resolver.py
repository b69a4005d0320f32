"""Name resolution behind a small protocol, so the guard can be pointed at any resolver.

``SystemResolver`` asks the operating system (``getaddrinfo``).
``DnsServerResolver`` asks one DNS server directly over UDP — for deployments that
pin resolution to a known server, and for tests that run their own server.
"""

from __future__ import annotations

import secrets
import socket
from typing import Protocol, runtime_checkable

import dns.exception
import dns.query

from tools_app.net.dnswire import TYPE_A, TYPE_AAAA, addresses_of, query_message
from tools_app.net.errors import EgressResolutionError


@runtime_checkable
class Resolver(Protocol):
    """Turns a host name into the IP addresses a client could connect to."""

    def resolve(self, host: str, port: int) -> tuple[str, ...]:
        """Every address of ``host`` (textual IPs), or raise EgressResolutionError."""
        ...


class SystemResolver:
    """The operating system's resolver (hosts file, then DNS, as configured)."""

    def resolve(self, host: str, port: int) -> tuple[str, ...]:
        """Every address ``getaddrinfo`` returns for ``host``."""
        try:
            infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except (socket.gaierror, UnicodeError) as exc:
            raise EgressResolutionError(f"host {host!r} does not resolve ({exc})") from exc
        return tuple(dict.fromkeys(str(info[4][0]) for info in infos))


class DnsServerResolver:
    """Asks one DNS server over UDP for A and AAAA records."""

    def __init__(self, server: str, port: int = 53, *, timeout_seconds: float = 3.0) -> None:
        self.server = server
        self.port = port
        self.timeout_seconds = timeout_seconds

    def _ask(self, host: str, qtype: int) -> list[str]:
        query = query_message(secrets.randbelow(0x10000), host, qtype)
        family = socket.AF_INET6 if ":" in self.server else socket.AF_INET
        with socket.socket(family, socket.SOCK_DGRAM) as sock:
            # connect() makes the kernel drop datagrams from any other source.
            sock.connect((self.server, self.port))
            sock.setblocking(False)
            try:
                answer = dns.query.udp(
                    query, self.server, timeout=self.timeout_seconds, port=self.port, sock=sock
                )
            except (OSError, dns.exception.DNSException) as exc:
                raise EgressResolutionError(
                    f"host {host!r} could not be resolved by {self.server}:{self.port} ({exc})"
                ) from exc
        rcode, addresses = addresses_of(answer)
        return addresses if rcode == 0 else []

    def resolve(self, host: str, port: int) -> tuple[str, ...]:
        """The A and AAAA answers for ``host``; raise when there are none."""
        addresses = self._ask(host, TYPE_A) + self._ask(host, TYPE_AAAA)
        if not addresses:
            raise EgressResolutionError(f"host {host!r} has no A or AAAA records")
        return tuple(dict.fromkeys(addresses))
