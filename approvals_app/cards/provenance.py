"""Where a call's argument values came from: the agent's own earlier results.

An agent that copies a URL or a path out of something it read (a web page, a file, a
command's output) may be following instructions planted there. For each argument
value of useful length (a whole string value, or a URL or path inside a longer one),
the agent's earlier results are searched verbatim, newest first, and the first one
that holds it is named: its tool, what it was aimed at and how many calls ago.
The caller bounds the search (how many calls, how far back, how much of each result).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import urlsplit

from approvals_app.cards.text import middle_cut

MIN_CHARS: Final = 8
MAX_CHARS: Final = 2048
MAX_VALUES: Final = 20
_SHOWN_CHARS: Final = 120
# A URL or a path of two or more components inside a longer value (a command line).
_TOKEN: Final = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s\"'<>`]+|[^\s\"'<>`=:]*/[^\s\"'<>`]+")
_URL: Final = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
_COUNTS: Final = ("", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten")


@dataclass(frozen=True, slots=True)
class EarlierResult:
    """One earlier call of the agent: its tool, its arguments (as people see them) and
    the start of its result (content and structured, as text)."""

    tool: str
    arguments: Mapping[str, Any]
    output: str


@dataclass(frozen=True, slots=True)
class ProvenanceNote:
    """``value`` (at ``where`` in the arguments) was in the result of the call
    ``calls_earlier`` calls before this one."""

    where: str
    value: str
    tool: str
    target: str
    calls_earlier: int


def _strings(value: Any, where: str) -> Iterator[tuple[str, str]]:
    if isinstance(value, str):
        yield where, value
    elif isinstance(value, Mapping):
        for key, inner in value.items():
            yield from _strings(inner, f"{where}.{key}" if where else str(key))
    elif isinstance(value, list | tuple):
        for index, inner in enumerate(value):
            yield from _strings(inner, f"{where}[{index}]")


def argument_values(arguments: Mapping[str, Any]) -> list[tuple[str, str]]:
    """``(where, value)`` for each value worth tracing: a whole string of ``MIN_CHARS``
    to ``MAX_CHARS`` characters, and the URLs and paths inside longer ones."""
    found: list[tuple[str, str]] = []
    seen: set[str] = set()
    for where, text in _strings(arguments, ""):
        candidates = [text.strip()] if len(text.strip()) <= MAX_CHARS else []
        if len(text) > MIN_CHARS and (len(text) > MAX_CHARS or " " in text or "\n" in text):
            candidates += [m.group(0) for m in _TOKEN.finditer(text[: MAX_CHARS * 8])]
        for value in candidates:
            if MIN_CHARS <= len(value) <= MAX_CHARS and value not in seen:
                seen.add(value)
                found.append((where, value))
            if len(found) >= MAX_VALUES:
                return found
    return found


def target_of(tool: str, arguments: Mapping[str, Any]) -> str:
    """What an earlier call was aimed at, in a few words ("" when nothing says)."""
    url = arguments.get("url")
    if isinstance(url, str) and url:
        host = urlsplit(url).hostname if _URL.match(url) else None
        return f"to host {host}" if host else f"to {_shown(url)}"
    for key in ("path", "connection", "directory"):
        value = arguments.get(key)
        if isinstance(value, str) and value:
            return f"on {key} {_shown(value)}"
    argv = arguments.get("argv")
    if isinstance(argv, list) and argv and isinstance(argv[0], str):
        return f"running {_shown(argv[0])}"
    return ""


def provenance_notes(
    arguments: Mapping[str, Any], earlier: Sequence[EarlierResult]
) -> list[ProvenanceNote]:
    """A note for each argument value found verbatim in an ``earlier`` result (newest
    first; the first that holds it is named)."""
    notes: list[ProvenanceNote] = []
    for where, value in argument_values(arguments):
        # A value inside JSON text is escaped as JSON writes it.
        quoted = json.dumps(value)[1:-1]
        for distance, result in enumerate(earlier, start=1):
            if value in result.output or quoted in result.output:
                target = target_of(result.tool, result.arguments)
                notes.append(ProvenanceNote(where, value, result.tool, target, distance))
                break
    return notes


def _shown(value: str) -> str:
    head, tail, cut = middle_cut(value, _SHOWN_CHARS)
    return f"{head}…({cut} characters)…{tail}" if cut else value


def _ago(count: int) -> str:
    if count == 1:
        return "the call just before this one"
    words = _COUNTS[count] if count < len(_COUNTS) else str(count)
    return f"{words} calls earlier"


def note_text(note: ProvenanceNote) -> str:
    """``this URL 'http://…' (url) appeared in the output of http_request to host X,
    two calls earlier``."""
    what = "URL" if _URL.match(note.value) else "path" if "/" in note.value else "value"
    aimed = f" {note.target}" if note.target else ""
    return (
        f"this {what} {_shown(note.value)!r} ({note.where}) appeared in the output of "
        f"{note.tool}{aimed}, {_ago(note.calls_earlier)}"
    )
