"""Network targets: parse URLs and host[:port] strings the way clients will.

Everything that could make the policy read one host while a client connects to
another is either normalised or refused:

- IPv4 literals in every form an HTTP client accepts (decimal ``2130706433``,
  octal ``0177.0.0.1``, hex ``0x7f000001``, short ``127.1``) become dotted quads;
- IPv6 literals are compressed, and IPv4-mapped/compatible ones become IPv4;
- userinfo is dropped (``http://allowed@evil`` is host ``evil``);
- case, one trailing dot, percent-encoding in the host and IDNA are folded;
- backslashes, whitespace and control characters anywhere in a URL are refused,
  because parsers disagree on them.

No name resolution happens here: the SSRF guard re-checks resolved addresses
when a call runs.
"""

from __future__ import annotations

import ipaddress
import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache
from types import MappingProxyType
from typing import Final
from urllib.parse import unquote

DEFAULT_PORTS: Final[MappingProxyType[str, int]] = MappingProxyType(
    {"http": 80, "https": 443, "ws": 80, "wss": 443, "ssh": 22, "git": 9418}
)
_SCHEME_RE: Final = re.compile(r"^([a-zA-Z][a-zA-Z0-9+.\-]*)://")
# scp-like git remotes: user@host:path (no scheme, no slash before the colon). The
# user part is required so that "javascript:..." and similar are not read as hosts.
_SCP_RE: Final = re.compile(r"^[^@/:]+@([^@/:\[\]]+|\[[^\]/]+\]):(?!//)")
_LABEL = r"[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?"
_LABEL_RE: Final = re.compile(rf"^{_LABEL}$")
_DOMAIN_RE: Final = re.compile(rf"^(?:{_LABEL}\.)*{_LABEL}$")
_PLAIN_HOST_RE: Final = re.compile(r"^[A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]+)*\.?$")
_HEX_DIGITS: Final = frozenset("0123456789abcdef")
_FORBIDDEN_URL_CHARS: Final = (
    frozenset("\\\x7f") | frozenset(chr(c) for c in range(0x21)) | frozenset("\u00a0\u2028\u2029")
)
_FORBIDDEN_URL_RE: Final = re.compile(r"[\x00-\x20\x7f\\\u00a0\u2028\u2029]")
_LOCAL_NAMES: Final = frozenset({"localhost", "localhost.localdomain", "ip6-localhost"})


class NetworkTargetError(ValueError):
    """A URL or host that cannot be read unambiguously; the message says why."""


@dataclass(frozen=True, slots=True)
class Endpoint:
    """A normalised network destination."""

    host: str
    port: int | None
    is_ip: bool

    def display(self) -> str:
        """``host:port`` with IPv6 in brackets, for reasons and traces."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return host if self.port is None else f"{host}:{self.port}"


def _ipv4_number(part: str) -> int | None:
    text = part.lower()
    if text.startswith("0x"):
        digits, base = text[2:], 16
        if not digits:
            return 0
        if not set(digits) <= _HEX_DIGITS:
            return None
    elif len(text) > 1 and text.startswith("0"):
        digits, base = text[1:], 8
        if not digits.isascii() or not digits.isdigit() or set(digits) & {"8", "9"}:
            return None
    else:
        digits, base = text, 10
        if not digits.isascii() or not digits.isdigit():
            return None
    return int(digits, base)


def _ends_in_number(labels: list[str]) -> bool:
    last = labels[-1].lower()
    if last.isascii() and last.isdigit():
        return True
    return last.startswith("0x") and set(last[2:]) <= _HEX_DIGITS


def _parse_ipv4(host: str) -> str | None:
    """Dotted quad for numeric hosts; None for names; raise for bad numerics."""
    labels = host.split(".")
    if len(labels) > 1 and labels[-1] == "":
        labels = labels[:-1]
    if not labels or not _ends_in_number(labels):
        return None
    numbers = [_ipv4_number(label) for label in labels]
    if len(labels) > 4 or any(n is None for n in numbers):
        raise NetworkTargetError(f"host {host!r} is not a valid IPv4 address")
    values = [n for n in numbers if n is not None]
    if any(n > 255 for n in values[:-1]) or values[-1] >= 256 ** (5 - len(values)):
        raise NetworkTargetError(f"host {host!r} is not a valid IPv4 address")
    address = values[-1]
    for index, value in enumerate(values[:-1]):
        address += value << (8 * (3 - index))
    return str(ipaddress.IPv4Address(address))


def _parse_ipv6(text: str) -> str:
    if "%" in text:
        raise NetworkTargetError(f"IPv6 zone identifiers are not allowed ({text!r})")
    try:
        address = ipaddress.IPv6Address(text)
    except ValueError as exc:
        raise NetworkTargetError(f"host [{text}] is not a valid IPv6 address") from exc
    if address.ipv4_mapped is not None:
        return str(address.ipv4_mapped)
    packed = int(address)
    # IPv4-compatible (::a.b.c.d, deprecated) still reaches the IPv4 host.
    if packed >> 32 == 0 and packed > 1:
        return str(ipaddress.IPv4Address(packed & 0xFFFFFFFF))
    return address.compressed


@lru_cache(maxsize=4096)
def normalize_host(raw: str) -> tuple[str, bool]:
    """Return ``(host, is_ip)`` in canonical form, or raise NetworkTargetError.

    Cached: hosts repeat across calls and the function is pure.
    """
    if _PLAIN_HOST_RE.match(raw):
        # Fast path for plain ASCII names and dotted numbers: no decoding or IDNA needed.
        host = raw.lower().removesuffix(".")
        ipv4 = _parse_ipv4(host)
        if ipv4 is not None:
            return ipv4, True
        if len(host) > 253 or not _DOMAIN_RE.match(host):
            raise NetworkTargetError(f"host {raw!r} is not a valid domain name")
        return host, False
    if raw.startswith("[") and raw.endswith("]"):
        host = _parse_ipv6(raw[1:-1])
        return host, True
    try:
        text = unquote(raw, errors="strict") if "%" in raw else raw
    except UnicodeDecodeError as exc:
        raise NetworkTargetError(f"host {raw!r} has invalid percent-encoding") from exc
    if not text or any(
        ch in _FORBIDDEN_URL_CHARS or ch in "/?#@[]%" or unicodedata.category(ch)[0] in "CZ"
        for ch in text
    ):
        raise NetworkTargetError(f"host {raw!r} is empty or contains forbidden characters")
    if ":" in text:
        return _parse_ipv6(text), True
    try:
        ascii_host = text.encode("idna").decode("ascii").lower()
    except UnicodeError as exc:
        raise NetworkTargetError(f"host {raw!r} is not a valid domain name") from exc
    if ascii_host.endswith("."):
        ascii_host = ascii_host[:-1]
    ipv4 = _parse_ipv4(ascii_host)
    if ipv4 is not None:
        return ipv4, True
    labels = ascii_host.split(".")
    if len(ascii_host) > 253 or not all(_LABEL_RE.match(label) for label in labels):
        raise NetworkTargetError(f"host {raw!r} is not a valid domain name")
    return ascii_host, False


def _split_host_port(hostport: str, original: str) -> tuple[str, int | None]:
    if hostport.startswith("["):
        end = hostport.find("]")
        if end < 0:
            raise NetworkTargetError(f"{original!r} has an unterminated IPv6 literal")
        host, rest = hostport[: end + 1], hostport[end + 1 :]
        if rest and not rest.startswith(":"):
            raise NetworkTargetError(f"{original!r} has text after the IPv6 literal")
        port_text = rest[1:] if rest else None
    elif hostport.count(":") > 1:
        raise NetworkTargetError(f"{original!r}: IPv6 literals must be in brackets")
    else:
        host, sep, port_text_raw = hostport.partition(":")
        port_text = port_text_raw if sep else None
    if port_text is None or port_text == "":
        return host, None
    if not port_text.isascii() or not port_text.isdigit() or not 0 < int(port_text) < 65536:
        raise NetworkTargetError(f"{original!r} has an invalid port {port_text!r}")
    return host, int(port_text)


def parse_host_port(value: str) -> Endpoint:
    """Parse ``host``, ``host:port`` or ``[v6]:port``; port None when absent."""
    if _FORBIDDEN_URL_RE.search(value):
        raise NetworkTargetError(f"host {value!r} contains whitespace or control characters")
    raw_host, port = _split_host_port(value, value)
    host, is_ip = normalize_host(raw_host)
    return Endpoint(host, port, is_ip)


def parse_url(value: str, *, schemes: frozenset[str] | None = None) -> Endpoint:
    """Parse a URL (or scp-like git remote) into the endpoint a client would reach."""
    if _FORBIDDEN_URL_RE.search(value):
        raise NetworkTargetError(
            "URL contains a backslash, whitespace or control character; clients disagree "
            "on how to read those"
        )
    allowed = DEFAULT_PORTS.keys() if schemes is None else schemes
    match = _SCHEME_RE.match(value)
    if match is None:
        scp = _SCP_RE.match(value)
        if scp is None:
            raise NetworkTargetError(f"{value!r} is not an absolute URL with a scheme")
        host, is_ip = normalize_host(scp.group(1))
        return Endpoint(host, DEFAULT_PORTS["ssh"], is_ip)
    scheme = match.group(1).lower()
    if scheme not in allowed:
        raise NetworkTargetError(
            f"URL scheme {scheme!r} is not allowed; allowed: {', '.join(sorted(allowed))}"
        )
    rest = value[match.end() :]
    authority = re.split(r"[/?#]", rest, maxsplit=1)[0]
    # The last '@' ends the userinfo, as in every mainstream URL parser.
    hostport = authority.rpartition("@")[2]
    raw_host, port = _split_host_port(hostport, value)
    host, is_ip = normalize_host(raw_host)
    return Endpoint(host, DEFAULT_PORTS.get(scheme) if port is None else port, is_ip)


def is_local_or_private(endpoint: Endpoint) -> bool:
    """True for loopback, private, link-local, reserved and other non-global targets."""
    return _is_local_or_private(endpoint.host, endpoint.is_ip)


@lru_cache(maxsize=4096)
def _is_local_or_private(host: str, is_ip: bool) -> bool:
    if is_ip:
        address = ipaddress.ip_address(host)
        return not address.is_global or address.is_multicast
    return host in _LOCAL_NAMES or host.endswith(".localhost")


@dataclass(frozen=True, slots=True)
class HostRule:
    """One allowlist entry: exact host or ``*.suffix``, with an optional port."""

    host: str
    port: int | None
    wildcard: bool

    def matches(self, endpoint: Endpoint) -> bool:
        """True when ``endpoint`` is covered by this entry."""
        if self.port is not None and endpoint.port != self.port:
            return False
        if self.wildcard:
            return not endpoint.is_ip and endpoint.host.endswith("." + self.host)
        return endpoint.host == self.host

    def display(self) -> str:
        """The entry as written in canonical form."""
        host = ("*." if self.wildcard else "") + Endpoint(self.host, None, False).display()
        return host if self.port is None else f"{host}:{self.port}"


def parse_host_rule(entry: str) -> HostRule:
    """Parse an allowlist entry ``host[:port]``, ``*.domain[:port]`` or ``[v6][:port]``."""
    wildcard = entry.startswith("*.")
    endpoint = parse_host_port(entry[2:] if wildcard else entry)
    if wildcard and endpoint.is_ip:
        raise NetworkTargetError(f"allowlist entry {entry!r}: wildcards apply to names only")
    return HostRule(endpoint.host, endpoint.port, wildcard)
