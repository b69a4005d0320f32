"""Strict URL parsing: one reading of a URL, the one the connection will use.

The host is normalised by the same function the decision engine uses
(``common.vocabulary.network.normalize_host``), so the policy and the guard can
never disagree on which host a URL names: IPv4 in decimal, octal, hex and short
forms becomes a dotted quad, IPv4-mapped IPv6 becomes IPv4, IDNA, case, one
trailing dot and percent-encoding are folded. Userinfo never names the host
(``http://allowed@evil`` is host ``evil``); backslashes, whitespace and control
characters are refused outright because parsers disagree on them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from common.vocabulary.network import NetworkTargetError, normalize_host
from tools_app.net.errors import EgressUrlInvalidError

HTTP_SCHEMES: Final = frozenset({"http", "https"})
DEFAULT_PORTS: Final = {"http": 80, "https": 443, "ssh": 22}
MAX_URL_LENGTH: Final = 8192

_SCHEME_RE: Final = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*)://")
_FORBIDDEN_RE: Final = re.compile(
    r"[\x00-\x20\x7f-\x9f\\\u00a0\u1680\u2000-\u200f\u2028-\u202f\ufeff]"
)


@dataclass(frozen=True, slots=True)
class Target:
    """A parsed URL: where a client connects and what it asks for."""

    scheme: str
    host: str
    """Normalised host: lower-case ASCII name, dotted-quad IPv4 or compressed IPv6."""
    port: int
    is_ip: bool
    path: str
    """Path and query, starting with '/'; the fragment is never sent."""
    userinfo: str | None = None

    @property
    def host_for_url(self) -> str:
        """The host as written in a URL (IPv6 in brackets)."""
        return f"[{self.host}]" if ":" in self.host else self.host

    @property
    def authority(self) -> str:
        """``host:port`` as written in a URL."""
        return f"{self.host_for_url}:{self.port}"

    def url(self) -> str:
        """The canonical URL, without userinfo and fragment."""
        default = DEFAULT_PORTS.get(self.scheme)
        netloc = self.host_for_url if self.port == default else self.authority
        return f"{self.scheme}://{netloc}{self.path}"


def check_url_characters(url: str) -> None:
    """Refuse URLs that are too long or contain characters parsers read differently."""
    if len(url) > MAX_URL_LENGTH:
        raise EgressUrlInvalidError(f"URL is {len(url)} characters; the limit is {MAX_URL_LENGTH}")
    match = _FORBIDDEN_RE.search(url)
    if match:
        raise EgressUrlInvalidError(
            f"URL contains U+{ord(match.group()):04X} (a backslash, whitespace or control "
            "character); clients disagree on how to read those, so write it percent-encoded"
        )


def parse_port(text: str, url: str) -> int:
    """A TCP port from its decimal text, or an INVALID_ARGUMENT refusal."""
    if not text.isascii() or not text.isdigit() or not 0 < int(text) < 65536:
        raise EgressUrlInvalidError(f"{url!r} has an invalid port {text!r}")
    return int(text)


def split_authority(authority: str, url: str) -> tuple[str | None, str, str | None]:
    """``(userinfo, raw host, port text)``; the last '@' ends the userinfo."""
    userinfo, at, hostport = authority.rpartition("@")
    if hostport.startswith("["):
        end = hostport.find("]")
        if end < 0:
            raise EgressUrlInvalidError(f"{url!r} has an unterminated IPv6 literal")
        raw_host, rest = hostport[: end + 1], hostport[end + 1 :]
        if rest and not rest.startswith(":"):
            raise EgressUrlInvalidError(f"{url!r} has text after the IPv6 literal")
        port_text = rest[1:] if rest else None
    elif hostport.count(":") > 1:
        raise EgressUrlInvalidError(f"{url!r}: IPv6 literals must be in brackets")
    else:
        raw_host, sep, after = hostport.partition(":")
        port_text = after if sep else None
    return (userinfo if at else None), raw_host, (port_text or None)


def normalise_host(raw_host: str, url: str) -> tuple[str, bool]:
    """``(host, is_ip)`` in canonical form; refuses empty and malformed hosts."""
    if not raw_host:
        raise EgressUrlInvalidError(f"{url!r} names no host")
    try:
        return normalize_host(raw_host)
    except NetworkTargetError as exc:
        raise EgressUrlInvalidError(str(exc)) from exc


def parse_target(url: str, *, schemes: frozenset[str] = HTTP_SCHEMES) -> Target:
    """Parse an absolute URL whose scheme is in ``schemes``; refuse anything ambiguous."""
    check_url_characters(url)
    match = _SCHEME_RE.match(url)
    if match is None:
        raise EgressUrlInvalidError(
            f"{url[:200]!r} is not an absolute URL; write it as scheme://host/path "
            f"(schemes: {', '.join(sorted(schemes))})"
        )
    scheme = match.group(1).lower()
    if scheme not in schemes:
        raise EgressUrlInvalidError(
            f"URL scheme {scheme!r} is not allowed; allowed: {', '.join(sorted(schemes))}"
        )
    rest = url[match.end() :]
    split = re.search(r"[/?#]", rest)
    authority, tail = (rest[: split.start()], rest[split.start() :]) if split else (rest, "")
    userinfo, raw_host, port_text = split_authority(authority, url)
    host, is_ip = normalise_host(raw_host, url)
    port = parse_port(port_text, url) if port_text else DEFAULT_PORTS.get(scheme)
    if port is None:
        raise EgressUrlInvalidError(f"{url!r} needs an explicit port for scheme {scheme!r}")
    path = tail.split("#", 1)[0]
    if not path.startswith("/"):
        path = "/" + path
    return Target(scheme, host, port, is_ip, path, userinfo)
