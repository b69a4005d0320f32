"""What an argument reads as, normalised the way the permission policy reads it.

Approval rules and "approve and remember" grants are globs written over what a
call means, not over the bytes an agent chose: ``notes/../.git/config`` means
``.git/config``, ``HTTPS://User@Example.COM.`` reaches ``example.com``. Each
function answers every reading of a value (a path may be read raw,
percent-decoded, or with backslashes as separators, exactly as the scope check
reads it), or None when the value cannot be judged (missing, wrong type,
malformed). Callers decide what "cannot be judged" means: a restrictive rule
applies, a permissive rule or a grant does not.

Pure: no Django, no file-system access.
"""

from __future__ import annotations

import math
import posixpath
import re
from collections.abc import Mapping
from typing import Any, Final
from urllib.parse import unquote

from common.vocabulary.network import (
    DEFAULT_PORTS,
    Endpoint,
    NetworkTargetError,
    parse_host_port,
    parse_url,
)
from trust_app.policy.paths import check_path_characters, path_readings
from trust_app.policy.tool_view import ArgumentRole

Readings = frozenset[str]

MISSING: Final = object()
_SCHEME_RE: Final = re.compile(r"^([a-zA-Z][a-zA-Z0-9+.\-]*)://([^/?#]*)(.*)$", re.DOTALL)
_SCP_RE: Final = re.compile(r"^[^@/:]+@[^@/]+:(?!//)")


def argument_value(arguments: Mapping[str, Any], field: str) -> Any:
    """The value at dotted ``field`` in ``arguments``, or ``MISSING``."""
    value: Any = arguments
    for part in field.split("."):
        if not isinstance(value, Mapping) or part not in value:
            return MISSING
        value = value[part]
    return value


def unjudged_reason(field: str, value: Any) -> str:
    """Why ``value`` of ``field`` cannot be judged, in words for a trace."""
    if value is MISSING:
        return f"argument {field!r} is missing"
    return f"argument {field!r} cannot be judged ({type(value).__name__} value)"


def _items(value: Any) -> list[Any] | None:
    # A list of paths or hosts is judged element by element; an empty one not at all.
    if isinstance(value, list | tuple):
        return list(value) if value else None
    return [value]


def _each(value: Any, read: Any) -> Readings | None:
    items = _items(value)
    if items is None:
        return None
    found: set[str] = set()
    for item in items:
        readings = read(item)
        if readings is None:
            return None
        found |= readings
    return frozenset(found)


def _path(item: Any, roots: tuple[str, ...]) -> Readings | None:
    if check_path_characters(item) is not None:
        return None
    return path_readings(item, roots=roots)


def path_value_readings(value: Any, roots: tuple[str, ...]) -> Readings | None:
    """Workspace-relative normalised readings of a path (or list of paths)."""
    return _each(value, lambda item: _path(item, roots))


def _host(item: Any) -> Readings | None:
    if not isinstance(item, str):
        return None
    try:
        if "://" in item or _SCP_RE.match(item):
            endpoint = parse_url(item)
        else:
            endpoint = parse_host_port(item)
    except NetworkTargetError:
        return None
    return frozenset({endpoint.host})


def host_value_readings(value: Any) -> Readings | None:
    """The canonical host a URL or ``host[:port]`` reaches (or of each in a list)."""
    return _each(value, _host)


def _url_rest(rest: str) -> str:
    cut = min((i for i in (rest.find("?"), rest.find("#")) if i >= 0), default=len(rest))
    path, tail = rest[:cut], rest[cut:]
    if not path:
        return "/" + tail
    normal = posixpath.normpath(path)
    if normal.startswith("//"):
        normal = "/" + normal.lstrip("/")
    if path.endswith("/") and normal != "/":
        normal += "/"
    return normal + tail


def _url(item: Any) -> Readings | None:
    if not isinstance(item, str):
        return None
    match = _SCHEME_RE.match(item)
    try:
        endpoint = parse_url(item)
    except NetworkTargetError:
        return None
    if match is None:
        return frozenset({item})  # scp-like git remote: no path normalisation applies
    scheme = match.group(1).lower()
    if endpoint.port == DEFAULT_PORTS.get(scheme):
        endpoint = Endpoint(endpoint.host, None, endpoint.is_ip)
    authority = endpoint.display()
    rest = match.group(3)
    # A server may decode %2e%2e and %2f before resolving dot segments: judge both.
    return frozenset(f"{scheme}://{authority}{_url_rest(r)}" for r in {rest, unquote(rest)})


def url_value_readings(value: Any) -> Readings | None:
    """``scheme://host[:port]/path`` with the host canonical, userinfo dropped, dot
    segments resolved, raw and percent-decoded."""
    return _each(value, _url)


def text_value_readings(value: Any) -> Readings | None:
    """A scalar as text (``true``/``false`` for booleans); None for anything else."""
    if isinstance(value, bool):
        return frozenset({"true" if value else "false"})
    if isinstance(value, int | float | str):
        return frozenset({str(value)})
    return None


def number_value(value: Any) -> float | None:
    """A finite number from a number or numeric string; None otherwise (booleans too)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        number = float(value)
    elif isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            return None
    else:
        return None
    return number if math.isfinite(number) else None


def role_readings(value: Any, role: str | None, roots: tuple[str, ...]) -> Readings | None:
    """Readings of an argument by the role its tool contract declares for it."""
    if value is MISSING:
        return None
    if role == ArgumentRole.PATH:
        return path_value_readings(value, roots)
    if role == ArgumentRole.URL:
        return url_value_readings(value)
    if role == ArgumentRole.HOST:
        return host_value_readings(value)
    return text_value_readings(value)
