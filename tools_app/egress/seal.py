"""PURE: a call's sealed secrets and the request heads they rewrite.

A ``Seal`` is one granted secret of the call: its value (held by the worker only),
the hosts it may go to, and where it goes in a request (``Injection``). The proxy
finds the seals that cover a connection's destination (``seals_covering``) and
rewrites every request head on it (``sealed_request``); a request that would send
the value anywhere but the sealed destination is refused before anything is sent.
``ValueMask`` hides the values in what comes back (a server reflecting its request,
in a redirect's Location or an echoed header, would otherwise hand the value over).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from urllib.parse import quote, quote_plus, unquote_plus, urlsplit

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
# Headers a reverse proxy in front of a multi-tenant server may route by: on a sealed
# connection the Host header alone names the destination, so these never go on.
_ROUTING_HEADERS = frozenset(
    {
        b"forwarded",
        b"x-forwarded-host",
        b"x-forwarded-server",
        b"x-original-host",
        b"x-original-url",
        b"x-rewrite-url",
        b"x-host",
        b"x-http-host-override",
    }
)
# RFC 9110 field-value: no control characters, no whitespace at either end.
_FIELD_VALUE = re.compile(rb"[\x21-\x7e\x80-\xff](?:[\t\x20-\x7e\x80-\xff]*[\x21-\x7e\x80-\xff])?")


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

    def allows_plain_http(self, host: str, port: int) -> bool:
        """A value goes over unencrypted HTTP only where its grant names that port: a
        grant naming a host alone means HTTPS."""
        endpoint = Endpoint(host, port, _is_ip(host))
        return any(rule.port == port and rule.matches(endpoint) for rule in self.hosts)


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
    if b"#" in target:
        # Never sent by a client; a query parameter added after it would sit in the fragment.
        raise SealedRequestError(400, "the request target has a #fragment; send it without")
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


def _param_name(name: str) -> str:
    """A query parameter's name as the most lenient server reads it: decoded, cut at a
    NUL, trimmed, without a ``[...]`` suffix, case folded."""
    return unquote_plus(name).split("\x00")[0].strip().partition("[")[0].casefold()


def _sets_param(pair: str, param: str) -> bool:
    # Some servers also split on ";": a part there may set the parameter too.
    wanted = _param_name(param)
    return any(_param_name(part.partition("=")[0]) == wanted for part in pair.split(";"))


def _with_query(target: bytes, param: str, value: str) -> bytes:
    """The target with ``param`` set to the value once: whatever the program wrote under
    that name, in any spelling a server might decode to it, is dropped."""
    path, _, query = target.decode("ascii").partition("?")
    kept = [pair for pair in query.split("&") if pair and not _sets_param(pair, param)]
    kept.append(f"{quote(param, safe='')}={quote(value, safe='')}")
    return f"{path}?{'&'.join(kept)}".encode("ascii")


def _injected_value(seal: Seal) -> bytes:
    """The header value carrying the seal's value; one a header cannot carry is refused
    naming the secret only (an HTTP library's error would quote the value)."""
    injection = seal.injection
    if injection.kind == "basic":
        return injection.header_value(seal.value).encode("ascii")
    try:
        raw = seal.value.encode("latin-1")
    except UnicodeEncodeError:
        raw = b""
    value = b"Bearer " + raw if injection.kind == "bearer" else raw
    if not _FIELD_VALUE.fullmatch(raw):
        raise SealedRequestError(
            500,
            f"the value of secret {seal.secret} cannot be sent in a header (a line break, a "
            "control character, whitespace at either end or a character outside Latin-1); "
            "nothing was sent: an admin can store it again without them",
        )
    return value


class ValueMask:
    """Masks the call's sealed values, in each form a request carried them, in bytes
    going back to the sandbox: same length (a body's framing holds), and across the
    pieces of a body (``feed`` holds back only a tail that begins a value, so a stream
    of events is not delayed). Requests ask for uncompressed answers; a body a server
    compresses anyway is passed as it comes."""

    def __init__(self, seals: Iterable[Seal]) -> None:
        forms: set[bytes] = set()
        for seal in seals:
            value = seal.value
            forms.update(
                {value.encode("utf-8"), quote(value, safe="").encode(), quote_plus(value).encode()}
            )
            if not value.isascii():
                forms.add(value.encode("latin-1", "ignore"))
            if seal.injection.kind == "basic":
                forms.add(_injected_value(seal).removeprefix(b"Basic "))
        self.forms = sorted((form for form in forms if form), key=len, reverse=True)
        self.held = b""

    def mask(self, data: bytes) -> bytes:
        for form in self.forms:
            data = data.replace(form, b"*" * len(form))
        return data

    def text(self, text: str) -> str:
        return self.mask(text.encode("utf-8", "surrogateescape")).decode("utf-8", "surrogateescape")

    def headers(self, headers: Iterable[Header]) -> list[Header]:
        return [(name, self.mask(value)) for name, value in headers]

    def feed(self, data: bytes) -> bytes:
        """The part of the body so far that can go on masked."""
        data = self.mask(self.held + data)
        cut = len(data) - self._partial(data)
        self.held = data[cut:]
        return data[:cut]

    def _partial(self, data: bytes) -> int:
        """The length of the longest end of ``data`` that a value could go on from."""
        longest = max((len(form) for form in self.forms), default=1) - 1
        for size in range(min(longest, len(data)), 0, -1):
            tail = data[-size:]
            if any(form.startswith(tail) for form in self.forms):
                return size
        return 0

    def flush(self) -> bytes:
        """The rest of the body, at its end."""
        data, self.held = self.mask(self.held), b""
        return data


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
    client sent where its value goes. The answer is asked for uncompressed, so that
    ``ValueMask`` sees a reflected value as it is.
    """
    target = _origin_form(target, host, port, scheme)
    if scheme == "http":
        clear = [seal.secret for seal in seals if not seal.allows_plain_http(host, port)]
        if clear:
            raise SealedRequestError(
                403,
                f"{', '.join(clear)} is sealed for {host} over TLS only and this request is "
                f"plain HTTP: use https, or an admin grants it for {host}:{port} to send it "
                "unencrypted",
            )
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
        and name.lower() not in _ROUTING_HEADERS
        and name.lower() not in replaced
        and name.lower() not in (b"host", b"accept-encoding")
    ]
    out: list[Header] = [
        (b"Host", _authority(host, port, scheme)),
        *kept,
        (b"Accept-Encoding", b"identity"),
    ]
    for seal in seals:
        if seal.injection.kind == "query":
            target = _with_query(target, seal.injection.name, seal.value)
        else:
            out.append((seal.injection.header.encode("ascii"), _injected_value(seal)))
    return target, out
