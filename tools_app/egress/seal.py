"""PURE: a call's sealed secrets and the request heads they rewrite.

A ``Seal`` is one granted secret of the call: its value (held by the worker only),
the hosts it may go to, and where it goes in a request (``Injection``). The proxy
finds the seals that cover a connection's destination (``seals_covering``) and
rewrites every request head on it (``sealed_request``); a request that would send
the value anywhere but the sealed destination is refused before anything is sent.
"""

from __future__ import annotations

import base64
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from urllib.parse import quote, urlsplit

from common.vocabulary.network import (
    DEFAULT_PORTS,
    Endpoint,
    HostRule,
    NetworkTargetError,
    normalize_host,
)
from common.vocabulary.sealing import Injection

Header = tuple[bytes, bytes]

# Headers of the sandbox's client that concern the proxy hop only, never the server.
_PROXY_HEADERS = frozenset({b"proxy-authorization", b"proxy-connection", b"proxy-authenticate"})


class SealedRequestError(Exception):
    """A request on a sealed connection that is not sent; the reason goes to the client."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


@dataclass(frozen=True, slots=True)
class Seal:
    """One granted secret of the call, as the egress proxy applies it."""

    secret: str
    value: str = field(repr=False)
    hosts: tuple[HostRule, ...]
    injection: Injection

    def covers(self, host: str, port: int) -> bool:
        """True when a connection to ``host:port`` (canonical host) gets the value."""
        is_ip = _is_ip(host)
        endpoint = Endpoint(host, port, is_ip)
        return any(rule.matches(endpoint) for rule in self.hosts)


def _is_ip(host: str) -> bool:
    try:
        return normalize_host(f"[{host}]" if ":" in host else host)[1]
    except NetworkTargetError:
        return False


def seals_covering(seals: Iterable[Seal], host: str, port: int) -> tuple[Seal, ...]:
    """The seals whose hosts cover ``host:port``, in the call's order."""
    return tuple(seal for seal in seals if seal.covers(host, port))


def _authority(host: str, port: int, scheme: str) -> bytes:
    shown = f"[{host}]" if ":" in host else host
    if DEFAULT_PORTS.get(scheme) != port:
        shown = f"{shown}:{port}"
    return shown.encode("ascii")


def _same_destination(authority: str, host: str, port: int, scheme: str) -> bool:
    """Whether a Host header or absolute URL's authority names the sealed destination."""
    try:
        parts = urlsplit(f"//{authority}")
        named = parts.hostname or ""
        named_port = parts.port if parts.port is not None else DEFAULT_PORTS.get(scheme)
        normal, _ = normalize_host(f"[{named}]" if ":" in named else named)
    except (ValueError, NetworkTargetError):
        return False
    return normal == host and named_port == port


def _origin_form(target: bytes, host: str, port: int, scheme: str) -> bytes:
    """The request target as the server takes it; an absolute URL (a plain-HTTP proxy
    request) must name the sealed destination itself."""
    if target.startswith(b"/"):
        return target
    try:
        text = target.decode("ascii")
    except UnicodeDecodeError:
        raise SealedRequestError(400, "the request target is not ASCII") from None
    parts = urlsplit(text)
    if parts.scheme.lower() not in ("http", "https") or not parts.netloc:
        raise SealedRequestError(
            400, "a request on a sealed connection has an origin-form or absolute http target"
        )
    if not _same_destination(parts.netloc.rpartition("@")[2], host, port, scheme):
        raise SealedRequestError(
            421,
            f"this connection goes to {host}:{port}; a request for another host needs a "
            "connection of its own",
        )
    path = parts.path or "/"
    return (path + (f"?{parts.query}" if parts.query else "")).encode("ascii")


def _with_query(target: bytes, param: str, value: str) -> bytes:
    path, _, query = target.decode("ascii").partition("?")
    kept = [pair for pair in query.split("&") if pair and pair.partition("=")[0] != param]
    kept.append(f"{quote(param, safe='')}={quote(value, safe='')}")
    return f"{path}?{'&'.join(kept)}".encode("ascii")


def _injected_value(seal: Seal) -> bytes:
    injection = seal.injection
    if injection.kind == "bearer":
        return b"Bearer " + seal.value.encode("latin-1")
    if injection.kind == "basic":
        credentials = f"{injection.name}:{seal.value}" if injection.name else seal.value
        return b"Basic " + base64.b64encode(credentials.encode("utf-8"))
    return seal.value.encode("latin-1")


def sealed_request(
    target: bytes,
    headers: Sequence[Header],
    seals: Sequence[Seal],
    *,
    host: str,
    port: int,
    scheme: str,
) -> tuple[bytes, list[Header]]:
    """The request head sent on for a connection to ``host:port`` that ``seals`` cover.

    The Host header must name the sealed destination (a front for another tenant of
    the same server would otherwise receive the value: refused with 421, nothing
    sent); the proxy's own headers are dropped; each seal replaces whatever the
    client sent where its value goes.
    """
    target = _origin_form(target, host, port, scheme)
    hosts = [value for name, value in headers if name.lower() == b"host"]
    if len(hosts) > 1:
        raise SealedRequestError(400, "the request has more than one Host header")
    if hosts and not _same_destination(hosts[0].decode("latin-1"), host, port, scheme):
        raise SealedRequestError(
            421,
            f"the Host header names {hosts[0].decode('latin-1')!r}, not {host}; the secret "
            f"sealed for {host} goes only to requests for {host}",
        )
    places = [seal.injection.header.lower() or f"?{seal.injection.name}" for seal in seals]
    if len(set(places)) != len(places):
        raise SealedRequestError(
            409,
            f"two secrets of this call are sealed for {host} into the same place; use one "
            "of them per call",
        )
    replaced = {seal.injection.header.lower().encode() for seal in seals if seal.injection.header}
    kept: list[Header] = [
        (name, value)
        for name, value in headers
        if name.lower() not in _PROXY_HEADERS
        and name.lower() not in replaced
        and name.lower() != b"host"
    ]
    out: list[Header] = [(b"Host", _authority(host, port, scheme)), *kept]
    for seal in seals:
        if seal.injection.kind == "query":
            target = _with_query(target, seal.injection.name, seal.value)
        else:
            out.append((seal.injection.header.encode("ascii"), _injected_value(seal)))
    return target, out
