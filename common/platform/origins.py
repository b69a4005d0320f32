"""Origins (scheme, host, port) as the console compares them (pure: no Django imports).

See synthorg_site/http_edge/origins.py for where they are compared.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

DEFAULT_PORTS = {"http": 80, "https": 443}


@dataclass(frozen=True, slots=True)
class Origin:
    scheme: str
    host: str  # lower case; an IPv6 address without its brackets
    port: int

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.scheme}://{host}:{self.port}"


class OriginSettingError(ValueError):
    """An entry of SYNTHORG_ORIGINS that is not an origin."""


def origin_parse(text: str) -> Origin | None:
    """``scheme://host[:port]`` (http or https, nothing after the port), or None."""
    try:
        parts = urlsplit(text.strip())
        port = parts.port
    except ValueError:  # a port that is not a number, a malformed IPv6 address
        return None
    scheme = parts.scheme.lower()
    if scheme not in DEFAULT_PORTS or not parts.hostname:
        return None
    if parts.username or parts.password or parts.path not in ("", "/"):
        return None
    if parts.query or parts.fragment:
        return None
    return Origin(scheme, parts.hostname.lower(), port or DEFAULT_PORTS[scheme])


def origins_setting_parse(values: Iterable[str], *, name: str) -> tuple[Origin, ...]:
    """The origins listed by a setting; OriginSettingError naming the first that is not one."""
    origins = []
    for value in values:
        if not value.strip():
            continue
        origin = origin_parse(value)
        if origin is None:
            raise OriginSettingError(
                f"{name}: {value!r} is not an origin; write scheme://host[:port] "
                "(http or https, no path), e.g. https://console.example.org"
            )
        origins.append(origin)
    return tuple(origins)


def console_origins_implied(*, console_url: str, trusted: Iterable[str]) -> frozenset[Origin]:
    """The origins the console's address and CSRF_TRUSTED_ORIGINS name exactly (a pattern
    such as ``https://*.example.org`` names no single origin and is skipped)."""
    named = (origin_parse(value) for value in (console_url, *trusted) if "*" not in value)
    return frozenset(origin for origin in named if origin is not None)
