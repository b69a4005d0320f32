"""PURE: an agent's path under a connection's base URL, and the operation it matches.

The agent names a path only; the host and the base path are the connection's.
A path that could leave them is refused before anything is matched or sent: one
that is not origin-relative (``//host``, ``http://…``, ``host/x``), that holds a
backslash, a control character, a ``?`` or ``#``, an empty, ``.`` or ``..``
segment, or a segment that decodes (once or more) to any of those or to a ``/``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Final
from urllib.parse import unquote

from common.config.connections import (
    ANY_SEGMENTS,
    ONE_SEGMENT,
    ConnectionOperation,
    pattern_segments,
)

MAX_PATH_CHARS: Final = 2048
# Decoding stops when a segment no longer changes; a deeper nesting is refused outright.
_MAX_DECODES: Final = 4


class PathRefusedError(ValueError):
    """The path is refused; the message says why in words an agent can act on."""


def _decoded(segment: str) -> str:
    current = segment
    for _ in range(_MAX_DECODES):
        decoded = unquote(current, errors="strict")
        if decoded == current:
            return current
        current = decoded
    raise PathRefusedError(f"path segment {segment!r} is encoded too many times")


def checked_segments(path: object) -> tuple[str, ...]:
    """The path's segments (as given, undecoded); PathRefusedError for any escape."""
    if not isinstance(path, str) or not path:
        raise PathRefusedError("path must be a non-empty string starting with '/'")
    if len(path) > MAX_PATH_CHARS:
        raise PathRefusedError(f"path is longer than {MAX_PATH_CHARS} characters")
    if not path.startswith("/") or path.startswith("//"):
        raise PathRefusedError(
            f"path {path[:200]!r} must start with a single '/': the host is the connection's, "
            "so give the path under its base URL only"
        )
    if any(ch in path for ch in "\\?#") or any(ord(ch) < 0x21 or ord(ch) == 0x7F for ch in path):
        raise PathRefusedError(
            "path must not hold a backslash, '?', '#', whitespace or control characters; "
            "pass query parameters in `query`"
        )
    if path == "/":
        return ()
    segments = tuple(path[1:].split("/"))
    for segment in segments:
        try:
            plain = _decoded(segment)
        except UnicodeDecodeError:
            raise PathRefusedError(f"path segment {segment!r} is not valid UTF-8") from None
        if plain in ("", ".", "..") or any(ch in plain for ch in "/\\?#%"):
            raise PathRefusedError(
                f"path segment {segment!r} is refused: empty, '.', '..' and encoded '/', "
                "'\\', '?', '#' or '%' could leave the connection's base path"
            )
        # An encoded space is a name's own; an encoded control character never is.
        if any(ord(ch) < 0x20 or ord(ch) == 0x7F for ch in plain):
            raise PathRefusedError(f"path segment {segment!r} decodes to a control character")
    return segments


def pattern_matches(pattern: Sequence[str], segments: Sequence[str]) -> bool:
    """Whether ``segments`` (undecoded) match the pattern's segments."""
    for index, part in enumerate(pattern):
        if part == ANY_SEGMENTS:
            return True
        if index >= len(segments):
            return False
        if part != ONE_SEGMENT and part != segments[index]:
            return False
    return len(pattern) == len(segments)


def matching_operation(
    operations: Iterable[ConnectionOperation], method: str, segments: Sequence[str]
) -> ConnectionOperation | None:
    """The first configured operation with this method whose pattern matches."""
    for operation in operations:
        if operation.method == method and pattern_matches(
            pattern_segments(operation.path), segments
        ):
            return operation
    return None
