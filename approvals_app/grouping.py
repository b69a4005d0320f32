"""Alike pending requests, grouped: same agent, same tool, same effect shape, same risk.

A flood of calls that differ only in their contents (440 writes under ``q/``) is one
entry of the inbox, opened, selected and decided as one, instead of 440 cards. The
shape is read from the arguments that name what a call acts on (its path's directory,
its URL's host, its program, its SQL verb and table, its flags); every other argument
is content, which may differ inside a group and is read by opening it.

Pure: plain values in and out, no Django.
"""

from __future__ import annotations

import hashlib
import json
import posixpath
import re
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final
from urllib.parse import urlsplit

# Arguments naming a file or directory: the group is the directory acted in.
FILE_KEYS: Final = ("path", "file")
DIRECTORY_KEYS: Final = ("directory", "cwd")
LIST_KEYS: Final = ("paths",)
URL_KEYS: Final = ("url",)
PROGRAM_KEYS: Final = ("argv", "command")
SQL_KEYS: Final = ("query",)
# Arguments whose exact value is part of what the call does.
EXACT_KEYS: Final = (
    "method",
    "connection",
    "remote",
    "branch",
    "language",
    "action",
    "schema",
    "table",
    "channel",
    "to",
    "host",
    "name",
)
FLAG_KEYS: Final = ("recursive", "overwrite", "all", "create_parents", "staged", "force")
TARGET_KEYS: Final = (
    *FILE_KEYS,
    *DIRECTORY_KEYS,
    *LIST_KEYS,
    *URL_KEYS,
    *PROGRAM_KEYS,
    *SQL_KEYS,
    *EXACT_KEYS,
    *FLAG_KEYS,
)
"""Every argument the shape reads; the rest is never loaded for grouping."""

EXACT_CHARS: Final = 100  # an exact value longer than this counts by its start only
NAME_CHARS: Final = 72  # a request's name (a checkbox's label) keeps both ends of its target
SQL_VERBS: Final = frozenset(
    {
        "SELECT", "INSERT", "UPDATE", "DELETE", "MERGE", "REPLACE", "UPSERT", "CREATE", "DROP",
        "ALTER", "TRUNCATE", "WITH", "GRANT", "REVOKE", "COPY",
    }
)  # fmt: skip
_SQL_TABLE = re.compile(r"\b(?:INTO|UPDATE|FROM|TABLE|JOIN)\s+([\w.\"`\[\]]+)", re.IGNORECASE)
_CURSOR = re.compile(r"^(-?\d{1,20})\.(-?\d{1,20})\.([0-9a-f-]{1,40})$")


@dataclass(frozen=True, slots=True)
class PendingFacts:
    """What grouping reads of one pending request."""

    request_id: str
    tier: str
    agent_id: str
    agent: str
    tool: str
    targets: Mapping[str, Any]  # the arguments named in TARGET_KEYS that the call has
    expires_at: datetime
    created_at: datetime

    @property
    def order(self) -> tuple[datetime, datetime, str]:
        return (self.expires_at, self.created_at, self.request_id)


@dataclass(frozen=True, slots=True)
class Shape:
    """The effect shape of a call: ``parts`` compare, ``words`` read ("under q/")."""

    parts: tuple[tuple[str, str], ...]
    words: str


@dataclass(frozen=True, slots=True)
class InboxEntry:
    """One line of the inbox: a single request, or a group of alike ones."""

    key: str
    tier: str
    agent_id: str
    agent: str
    tool: str
    words: str
    members: tuple[PendingFacts, ...]  # soonest deadline first

    @property
    def count(self) -> int:
        return len(self.members)

    @property
    def first(self) -> PendingFacts:
        return self.members[0]

    @property
    def ids(self) -> tuple[str, ...]:
        return tuple(m.request_id for m in self.members)

    @property
    def name(self) -> str:
        """The agent and the tool, as in "build-bot: write_file"."""
        return f"{self.agent}: {self.tool}"

    @property
    def label(self) -> str:
        """The whole entry in words, as in "build-bot: write_file ×440 under q/"."""
        return f"{self.name} ×{self.count}" + (f" {self.words}" if self.words else "")

    @property
    def cursor(self) -> str:
        """Where this entry sits in its tier, for "show more" after it."""
        return cursor_text(self.first.expires_at, self.first.created_at, self.key)

    @property
    def after_first(self) -> str | None:
        """Where the group's members go on after its first (None for a single request)."""
        if self.count < 2:
            return None
        return cursor_text(self.first.expires_at, self.first.created_at, self.first.request_id)


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


def _cut(text: str, limit: int) -> str:
    """``text`` with its middle cut to fit ``limit`` characters: both ends stay readable."""
    if len(text) <= limit:
        return text
    keep = (limit - 1) // 2
    return text[:keep] + "…" + text[len(text) - keep :]


def _directory(path: str) -> str:
    normal = posixpath.normpath(path) if path else "."
    parent = posixpath.dirname(normal)
    return parent or "."


def _under(directory: str) -> str:
    if directory == ".":
        return "in the workspace's top folder"
    return f"under {directory.rstrip('/')}/"


def _common_directory(paths: Sequence[Any]) -> str:
    folders = [_directory(str(p)) for p in paths if isinstance(p, str)]
    if not folders:
        return "."
    try:
        common = posixpath.commonpath(folders)
    except ValueError:  # absolute and relative mixed
        return "(mixed)"
    return common or "."


def _program(value: Any) -> str:
    if isinstance(value, list) and value:
        return _cut(str(value[0]), EXACT_CHARS)
    if isinstance(value, str) and value.strip():
        return _cut(value.split()[0], EXACT_CHARS)
    return ""


def _host(value: Any) -> str:
    if not isinstance(value, str):
        return ""
    try:
        parts = urlsplit(value.strip())
        host = (parts.hostname or "").lower()
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        return _cut(value, EXACT_CHARS)
    return f"{parts.scheme.lower()}://{host}{port}" if host else _cut(value, EXACT_CHARS)


def _sql(value: Any) -> tuple[str, str] | None:
    """(verb, table) of an SQL statement; None when the text does not start like one."""
    if not isinstance(value, str):
        return None
    words = value.strip().split(None, 1)
    if not words or words[0].upper() not in SQL_VERBS:
        return None
    found = _SQL_TABLE.search(value)
    return words[0].upper(), (found.group(1).strip('"`[]') if found else "")


def effect_shape(tool: str, targets: Mapping[str, Any]) -> Shape:
    """What a call acts on, coarsely: calls of one tool with equal shapes are alike."""
    parts: list[tuple[str, str]] = []
    words: list[str] = []
    method = targets.get("method")
    for key in URL_KEYS:
        if key in targets:
            host = _host(targets[key])
            parts.append((key, host))
            verb = f"{str(method).upper()} " if isinstance(method, str) else ""
            words.append(f"{verb}to {host}")
    for key in FILE_KEYS:
        if key in targets:
            folder = _directory(_text(targets[key]))
            parts.append((key, folder))
            words.append(_under(folder))
    for key in DIRECTORY_KEYS:
        if key in targets:
            folder = posixpath.normpath(_text(targets[key]) or ".")
            parts.append((key, folder))
            words.append(f"in {folder}" if folder != "." else "")
    for key in LIST_KEYS:
        if isinstance(targets.get(key), list):
            folder = _common_directory(targets[key])
            parts.append((key, folder))
            words.append(f"{key} {_under(folder)}")
    for key in PROGRAM_KEYS:
        if key in targets:
            program = _program(targets[key])
            parts.append((key, program))
            words.append(f"running {program}" if program else "")
    for key in SQL_KEYS:
        statement = _sql(targets.get(key))
        if statement is not None:
            verb, table = statement
            parts.append((key, f"{verb} {table}"))
            words.append(f"{verb} on {table}" if table else verb)
    for key in EXACT_KEYS:
        if key not in targets:
            continue
        value = _cut(_text(targets[key]), EXACT_CHARS)
        if key == "method":
            value = value.upper()
            if any(k in targets for k in URL_KEYS):
                parts.append((key, value))  # already in the URL's words
                continue
        parts.append((key, value))
        words.append(f"{key} {value}")
    for key in FLAG_KEYS:
        if key in targets:
            parts.append((key, _text(targets[key])))
            if targets[key] is True:
                words.append(key.replace("_", " "))
    return Shape(tuple(parts), ", ".join(w for w in words if w))


def group_key(tier: str, agent_id: str, tool: str, shape: Shape) -> str:
    """A short, stable name of the group (its element id and its URL)."""
    canonical = json.dumps([tier, agent_id, tool, shape.parts], ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


def facts_key(facts: PendingFacts) -> tuple[str, Shape]:
    shape = effect_shape(facts.tool, facts.targets)
    return group_key(facts.tier, facts.agent_id, facts.tool, shape), shape


def inbox_entries(pending: Iterable[PendingFacts]) -> dict[str, list[InboxEntry]]:
    """Pending requests as inbox entries per risk tier, each tier soonest deadline first."""
    members: dict[str, list[PendingFacts]] = defaultdict(list)
    shapes: dict[str, Shape] = {}
    for facts in pending:
        key, shape = facts_key(facts)
        members[key].append(facts)
        shapes[key] = shape
    tiers: dict[str, list[InboxEntry]] = defaultdict(list)
    for key, found in members.items():
        found.sort(key=lambda m: m.order)
        first = found[0]
        tiers[first.tier].append(
            InboxEntry(
                key=key,
                tier=first.tier,
                agent_id=first.agent_id,
                agent=first.agent,
                tool=first.tool,
                words=shapes[key].words,
                members=tuple(found),
            )
        )
    for entries in tiers.values():
        entries.sort(key=entry_order)
    return dict(tiers)


def entry_order(entry: InboxEntry) -> tuple[datetime, datetime, str]:
    return (entry.first.expires_at, entry.first.created_at, entry.key)


def _micros(moment: datetime) -> int:
    return int(moment.timestamp() * 1_000_000)


def cursor_text(expires_at: datetime, created_at: datetime, tail: str) -> str:
    """A place in a list ordered by deadline, then age, then ``tail`` (a key or an id)."""
    return f"{_micros(expires_at)}.{_micros(created_at)}.{tail}"


def parse_cursor(text: str) -> tuple[int, int, str] | None:
    """The parts of ``cursor_text``; None when ``text`` is not one."""
    found = _CURSOR.match(text or "")
    if found is None:
        return None
    return int(found.group(1)), int(found.group(2)), found.group(3)


def _position(expires_at: datetime, created_at: datetime, tail: str) -> tuple[int, int, str]:
    return (_micros(expires_at), _micros(created_at), tail)


def entry_position(entry: InboxEntry) -> tuple[int, int, str]:
    return _position(entry.first.expires_at, entry.first.created_at, entry.key)


def member_position(member: PendingFacts) -> tuple[int, int, str]:
    return _position(member.expires_at, member.created_at, member.request_id)


def entries_after(
    entries: Sequence[InboxEntry], after: tuple[int, int, str] | None, size: int
) -> tuple[list[InboxEntry], bool]:
    """Up to ``size`` entries placed after ``after`` (from the start when None), and
    whether more follow them."""
    rest = [e for e in entries if after is None or entry_position(e) > after]
    return rest[:size], len(rest) > size


def members_after(
    entry: InboxEntry, after: tuple[int, int, str] | None, size: int
) -> tuple[list[PendingFacts], bool]:
    """Up to ``size`` members of ``entry`` after ``after``, and whether more follow."""
    rest = [m for m in entry.members if after is None or member_position(m) > after]
    return rest[:size], len(rest) > size


def request_target(tool: str, arguments: Mapping[str, Any]) -> str:
    """What one call acts on, in a few words: its path, URL, command line or statement."""
    for key in (*URL_KEYS, *FILE_KEYS, *DIRECTORY_KEYS):
        if isinstance(arguments.get(key), str):
            return _cut(arguments[key], NAME_CHARS)
    argv = arguments.get("argv")
    if isinstance(argv, list):
        return _cut(" ".join(str(a) for a in argv), NAME_CHARS)
    for key in ("command", *SQL_KEYS):
        if isinstance(arguments.get(key), str):
            return _cut(" ".join(arguments[key].split()), NAME_CHARS)
    # No target: the first text it was given, so two such requests still read apart.
    for value in arguments.values():
        if isinstance(value, str) and value.strip():
            return _cut(" ".join(value.split()), NAME_CHARS)
    return ""


def request_name(tool: str, agent: str, arguments: Mapping[str, Any]) -> str:
    """A request named for a person: "write_file q/1.txt by build-bot"."""
    target = request_target(tool, arguments)
    return f"{tool} {target} by {agent}" if target else f"{tool} by {agent}"
