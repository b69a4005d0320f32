"""PURE: what an audited call acted on, as the audit log's argument search finds it.

A call's subjects are read from the arguments its audit row records (secrets already
redacted) and, for an egress connection, from the host it reached:

- ``path``: the ``path``, ``cwd`` and ``directory`` arguments, normalised lexically
  (``./notes/../a.txt`` is ``a.txt``; no file system is consulted, links are not
  followed), so a prefix search matches what the path names, not how it was spelt;
- ``host``: the host of a ``url`` argument or of a ``host`` argument, as the network
  policy normalises it (lower case, IDNA), and the host of each egress connection;
- ``program``: the program a shell call runs (``argv[0]``, or the first word of each
  command in a ``command`` line), by its base name (``/usr/bin/git`` is ``git``);
- ``table``: each table a database tool's SQL names after FROM, JOIN, INTO, UPDATE,
  USING or TABLE, both as written with its schema and alone (``public.orders`` and
  ``orders``); common table expressions are left out.

Values are kept to VALUE_MAX characters, which every index can hold.
"""

from __future__ import annotations

import posixpath
import re
import shlex
from collections.abc import Iterator, Mapping
from enum import StrEnum
from typing import Any, Final

from common.vocabulary.network import NetworkTargetError, normalize_host, parse_host_port, parse_url


class SubjectKind(StrEnum):
    PATH = "path"
    HOST = "host"
    PROGRAM = "program"
    TABLE = "table"


Subject = tuple[SubjectKind, str]

VALUE_MAX: Final = 512
PATH_ARGUMENTS: Final = ("path", "cwd", "directory")
DATABASE_CATEGORY: Final = "database"
# A call refused before it had a contract is recorded without its category.
DATABASE_TOOLS: Final = frozenset({"sql_query", "db_mutate"})
SQL_ARGUMENTS: Final = ("query", "sql")
# Egress rows carry the host they reached in `data.host`.
EGRESS_KINDS: Final = frozenset({"egress.connection"})

_SHELL_OPERATORS: Final = frozenset({"|", "||", "&", "&&", ";", "(", ")", "|&", ";;"})
_ASSIGNMENT: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")


def normalise_path(value: str) -> str:
    """A path as the search compares it: lexically normalised, no leading ``./``."""
    path = posixpath.normpath(value.replace("\x00", ""))
    if path.startswith("//"):
        path = "/" + path.lstrip("/")
    return path


def normalise_host(value: str) -> str | None:
    """A host as the search compares it, or None when it is not one."""
    try:
        return normalize_host(value.strip().strip("[]"))[0]
    except (NetworkTargetError, ValueError):
        return None


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, list | tuple):
        yield from (item for item in value if isinstance(item, str))


def _host_of(value: str, *, url: bool) -> str | None:
    try:
        return (parse_url(value) if url else parse_host_port(value)).host
    except (NetworkTargetError, ValueError):
        return None


def _programs(arguments: Mapping[str, Any]) -> Iterator[str]:
    argv = arguments.get("argv")
    if isinstance(argv, list) and argv and isinstance(argv[0], str):
        yield argv[0]
    command = arguments.get("command")
    if isinstance(command, str):
        try:
            lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
            lexer.whitespace_split = True
            words = list(lexer)
        except ValueError:  # an open quote: the first word is still the program
            words = command.split()[:1]
        expect = True
        for word in words:
            if word in _SHELL_OPERATORS:
                expect = True
            elif expect and not _ASSIGNMENT.match(word):
                yield word
                expect = False


def call_subjects(category: str, arguments: Mapping[str, Any]) -> list[Subject]:
    """The subjects of one call's recorded arguments, each once, in a stable order."""
    found: list[Subject] = []
    for name in PATH_ARGUMENTS:
        found += [(SubjectKind.PATH, normalise_path(v)) for v in _strings(arguments.get(name)) if v]
    for value in _strings(arguments.get("url")):
        host = _host_of(value, url=True)
        if host:
            found.append((SubjectKind.HOST, host))
    for value in _strings(arguments.get("host")):
        host = _host_of(value, url=False)
        if host:
            found.append((SubjectKind.HOST, host))
    for program in _programs(arguments):
        found.append((SubjectKind.PROGRAM, posixpath.basename(program.rstrip("/")) or program))
    if category == DATABASE_CATEGORY:
        for name in SQL_ARGUMENTS:
            for sql in _strings(arguments.get(name)):
                found += [(SubjectKind.TABLE, table) for table in sql_tables(sql)]
    return _distinct(found)


def event_subjects(kind: str, tool: str, category: str, data: Mapping[str, Any]) -> list[Subject]:
    """The subjects an audit event's own data names: its call's arguments, or the host
    an egress connection reached."""
    found: list[Subject] = []
    arguments = data.get("arguments")
    if isinstance(arguments, Mapping):
        found += call_subjects(DATABASE_CATEGORY if tool in DATABASE_TOOLS else category, arguments)
    host = data.get("host")
    if kind in EGRESS_KINDS and isinstance(host, str) and host:
        normal = normalise_host(host)
        if normal:
            found.append((SubjectKind.HOST, normal))
    return _distinct(found)


def _distinct(found: list[Subject]) -> list[Subject]:
    seen: dict[Subject, None] = {}
    for kind, value in found:
        value = value.replace("\x00", "")[:VALUE_MAX]
        if value:
            seen.setdefault((kind, value), None)
    return list(seen)


# --- SQL: enough of the lexical form to tell names from text, comments and numbers.

_TABLE_BEFORE: Final = frozenset({"FROM", "JOIN", "INTO", "UPDATE", "USING", "TABLE", "COPY"})
_SKIPPED_BEFORE_NAME: Final = frozenset({"ONLY", "LATERAL", "IF", "NOT", "EXISTS"})
# Words after a table name that end it (no alias follows).
_CLAUSE_WORDS: Final = frozenset(
    {
        "WHERE", "JOIN", "INNER", "LEFT", "RIGHT", "FULL", "CROSS", "NATURAL", "ON",
        "GROUP", "ORDER", "LIMIT", "OFFSET", "UNION", "EXCEPT", "INTERSECT", "HAVING",
        "WINDOW", "SET", "VALUES", "SELECT", "RETURNING", "USING", "DEFAULT", "FOR",
        "OUTER", "WHEN", "FETCH", "AS", "TABLESAMPLE", "DO", "OVERRIDING", "WITH",
    }
)  # fmt: skip
# Functions whose arguments use FROM as a word: EXTRACT(YEAR FROM d), TRIM(BOTH FROM x).
_FROM_FUNCTIONS: Final = frozenset({"EXTRACT", "SUBSTRING", "TRIM", "OVERLAY", "POSITION"})
_WORD: Final = re.compile(r"[A-Za-z_\x80-\U0010ffff][A-Za-z0-9_$\x80-\U0010ffff]*")
_DOLLAR_TAG: Final = re.compile(r"\$(?:[A-Za-z_][A-Za-z0-9_]*)?\$")

Token = tuple[str, str]  # (kind, text): kind "word", "name" (quoted) or "punct"


def _sql_tokens(sql: str) -> Iterator[Token]:
    i, n = 0, len(sql)
    while i < n:
        ch = sql[i]
        if ch.isspace():
            i += 1
        elif sql.startswith("--", i):
            end = sql.find("\n", i)
            i = n if end < 0 else end + 1
        elif sql.startswith("/*", i):
            depth, i = 1, i + 2
            while i < n and depth:
                if sql.startswith("/*", i):
                    depth, i = depth + 1, i + 2
                elif sql.startswith("*/", i):
                    depth, i = depth - 1, i + 2
                else:
                    i += 1
        elif ch == "'" or (ch in "eE" and sql.startswith("'", i + 1)):
            backslashes = ch != "'"
            i += 1 if ch == "'" else 2
            while i < n:
                if backslashes and sql[i] == "\\":
                    i += 2
                elif sql[i] == "'":
                    if sql.startswith("''", i):
                        i += 2
                    else:
                        i += 1
                        break
                else:
                    i += 1
        elif ch in '"`[':
            close = {'"': '"', "`": "`", "[": "]"}[ch]
            j, text = i + 1, []
            while j < n:
                if sql[j] == close and sql.startswith(close * 2, j) and close != "]":
                    text.append(close)
                    j += 2
                elif sql[j] == close:
                    break
                else:
                    text.append(sql[j])
                    j += 1
            yield "name", "".join(text)
            i = j + 1
        elif ch == "$" and (tag := _DOLLAR_TAG.match(sql, i)):
            end = sql.find(tag.group(), tag.end())
            i = n if end < 0 else end + len(tag.group())
        elif word := _WORD.match(sql, i):
            yield "word", word.group()
            i = word.end()
        elif ch.isdigit():
            while i < n and (sql[i].isalnum() or sql[i] == "."):
                i += 1
        else:
            yield "punct", ch
            i += 1


def _is_name(token: Token | None) -> bool:
    return token is not None and (token[0] == "name" or token[0] == "word")


def _name_text(token: Token) -> str:
    # Unquoted names fold to lower case, as PostgreSQL folds them; quoted ones stay.
    return token[1].lower() if token[0] == "word" else token[1]


def sql_tables(sql: str) -> list[str]:
    """The tables `sql` names, schema-qualified as written and alone, each once."""
    tokens = list(_sql_tokens(sql))
    upper = [t[1].upper() if t[0] == "word" else "" for t in tokens]
    ctes = {
        _name_text(tokens[i])
        for i in range(len(tokens) - 2)
        if _is_name(tokens[i])
        and upper[i + 1] == "AS"
        and (tokens[i + 2] == ("punct", "(") or upper[i + 2] in ("MATERIALIZED", "NOT"))
    }
    found: list[str] = []

    def read_name(i: int, *, columns_follow: bool) -> int:
        """Read a possibly qualified name at `i`; the index after it (and its alias)."""
        while i < len(tokens) and upper[i] in _SKIPPED_BEFORE_NAME:
            i += 1
        parts = []
        while i < len(tokens) and _is_name(tokens[i]):
            parts.append(_name_text(tokens[i]))
            if i + 1 < len(tokens) and tokens[i + 1] == ("punct", "."):
                i += 2
            else:
                i += 1
                break
        opens = i < len(tokens) and tokens[i] == ("punct", "(")
        if not parts or (opens and not columns_follow):
            return i  # a subquery or a function, not a table
        qualified = ".".join(parts)
        if qualified not in ctes:
            found.append(qualified)
            if len(parts) > 1:
                found.append(parts[-1])
        if i < len(tokens) and upper[i] == "AS":
            i += 2
        elif i < len(tokens) and tokens[i][0] != "punct" and upper[i] not in _CLAUSE_WORDS:
            i += 1  # an alias
        return i

    # The word before each open parenthesis: FROM inside EXTRACT(... FROM x) names no table.
    opened: list[str] = []
    i = 0
    while i < len(tokens):
        token = tokens[i]
        if token == ("punct", "("):
            opened.append(upper[i - 1] if i else "")
        elif token == ("punct", ")") and opened:
            opened.pop()
        elif upper[i] in _TABLE_BEFORE and not (opened and opened[-1] in _FROM_FUNCTIONS):
            i = read_name(i + 1, columns_follow=upper[i] == "INTO")
            while i < len(tokens) and tokens[i] == ("punct", ","):  # FROM a, b, c
                i = read_name(i + 1, columns_follow=False)
            continue
        i += 1
    return list(dict.fromkeys(found))
