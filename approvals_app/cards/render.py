"""PURE: per-tool card renderers, from a call's arguments to a display model.

Every card opens with the effect line (``effect``), then what a person decides on
first (the path, the command, the URL), then the larger parts (a diff, a body,
SQL), then the raw JSON. Values are shown exactly as the call will write or send
them: nothing an agent wrote is masked, for an agent holds no credentials of its
own and a literal value is data it chose to send. A secret reference
(``${secret:NAME}``) is shown as the reference it is: the console adds the value on
the way out. Characters a person could not see or could misread are listed with
where they occur (``flagged``) and marked in place by the templates.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

from approvals_app.cards.bound import card_bounded
from approvals_app.cards.characters import char_flags
from approvals_app.cards.desktop import DESKTOP_RENDERERS
from approvals_app.cards.effect import effect_of, resolved_path, shell_words
from approvals_app.cards.model import (
    Block,
    Card,
    CardInput,
    CardLimits,
    Fact,
    FlaggedValue,
    Header,
)
from approvals_app.cards.sql import sql_tokens, statement_kinds
from approvals_app.cards.text import (
    diff_block,
    is_long,
    ordered,
    pretty_json,
    preview_block,
    short_value,
    size_label,
    text_block,
)
from tools_app.sanitize.redaction import SECRET_REFERENCE

MCP_CATEGORY: Final = "mcp"
MCP_SEPARATOR: Final = "__"
GIT_PREFIX: Final = "git_"
DEFAULT_CWD: Final = "."
DEFAULT_METHOD: Final = "GET"
# Values with no blank in them read as names (paths, hosts, branches): every look-alike
# in them is flagged; in running text only those mixed into Latin words.
_NAME_MAX: Final = 4096

Parts = tuple[list[Fact], list[Block], list[str]]
Renderer = Callable[[CardInput, dict[str, Any], CardLimits], Parts]


def _text(value: Any) -> str:
    return value if isinstance(value, str) else pretty_json(value)


def _short(value: Any, limits: CardLimits) -> str:
    return short_value(_text(value), limits.fact_chars)


def _rest(args: dict[str, Any], shown: set[str], limits: CardLimits) -> Parts:
    """The arguments a renderer did not place: short ones as facts, long ones as blocks."""
    facts: list[Fact] = []
    blocks: list[Block] = []
    for key, value in args.items():
        if key in shown:
            continue
        text = _text(value)
        if is_long(text, limits) or "\n" in text:
            blocks.append(
                text_block(key, text, limits, "text" if isinstance(value, str) else "json")
            )
        else:
            facts.append(Fact(key, text))
    return facts, blocks, []


def _path_facts(card: CardInput, value: Any, limits: CardLimits, label: str = "path") -> list[Fact]:
    """The path as given and, when it reads otherwise, what it resolves to."""
    facts = [Fact(label, _short(value, limits))]
    resolved, _ = resolved_path(value, card)
    if isinstance(value, str) and resolved != value:
        facts.append(Fact("resolves to", _short(resolved, limits)))
    return facts


def _current_note(card: CardInput) -> tuple[str, str | None]:
    """The current file's text for a diff (None when unknown) and a note saying why."""
    current = card.current_file
    if current is None:
        return "the current file was not read", None
    if current.status == "missing":
        return "new file: nothing there yet", ""
    if current.status == "unreadable":
        return f"the current file could not be read: {current.reason}", None
    return "", current.text


def render_write_file(card: CardInput, args: dict[str, Any], limits: CardLimits) -> Parts:
    content = args.get("content")
    content = content if isinstance(content, str) else _text(content)
    facts = [
        *_path_facts(card, args.get("path", "?"), limits),
        Fact("size", size_label(content), False),
    ]
    note, before = _current_note(card)
    notes: list[str] = []
    if card.current_file is not None and card.current_file.status == "read":
        facts.append(Fact("replaces", size_label(card.current_file.text), False))
    if before is None:
        blocks = [text_block("content", content, limits)]
        notes.append(note)
    else:
        blocks = [diff_block("diff against the file as it is now", before, content, limits, note)]
    more_facts, more_blocks, _ = _rest(args, {"path", "content"}, limits)
    return facts + more_facts, blocks + more_blocks, notes


def render_edit_file(card: CardInput, args: dict[str, Any], limits: CardLimits) -> Parts:
    old, new = _text(args.get("old_string", "")), _text(args.get("new_string", ""))
    facts = _path_facts(card, args.get("path", "?"), limits)
    note, before = _current_note(card)
    expected = args.get("expected_replacements", 1)
    if before is not None and old and before.count(old) == expected:
        after = before.replace(old, new)
        block = diff_block("diff against the file as it is now", before, after, limits)
    else:
        if before is not None and old:
            found = before.count(old)
            note = (
                f"the text to replace occurs {found} times now (expected {expected}): "
                "the call would fail"
            )
        block = diff_block("replacement", old, new, limits, note)
    more_facts, more_blocks, _ = _rest(args, {"path", "old_string", "new_string"}, limits)
    return facts + more_facts, [block, *more_blocks], []


def command_line(args: Mapping[str, Any]) -> str:
    """The command as a person would type it: argv shell-quoted, or the command line given."""
    argv = args.get("argv")
    if isinstance(argv, list) and argv:
        return shell_words(argv)
    command = args.get("command")
    return command if isinstance(command, str) else _text(command)


def render_shell(card: CardInput, args: dict[str, Any], limits: CardLimits) -> Parts:
    facts = _path_facts(card, args.get("cwd", DEFAULT_CWD), limits, "cwd")
    argv = args.get("argv")
    if isinstance(argv, list) and argv:
        # One argument a line, each quoted as the shell reads it: a line break inside an
        # argument is flagged where it stands and cannot pass for the next argument.
        words = tuple(shell_words([part]) for part in argv)
        blocks = [
            Block(
                label=f"program and arguments ({len(argv)})",
                kind="argv",
                items=words,
                size=size_label(command_line(args)),
            )
        ]
    else:
        line = command_line(args)
        blocks = [Block(label="command line", kind="command", text=line, size=size_label(line))]
    stdin = args.get("stdin")
    if isinstance(stdin, str):
        blocks.append(preview_block("stdin", stdin, limits))
    more_facts, more_blocks, _ = _rest(args, {"argv", "command", "cwd", "stdin"}, limits)
    return facts + more_facts, blocks + more_blocks, []


def render_http(card: CardInput, args: dict[str, Any], limits: CardLimits) -> Parts:
    facts = [
        Fact("method", _text(args.get("method", DEFAULT_METHOD))),
        Fact("URL", _short(args.get("url", "?"), limits)),
    ]
    blocks: list[Block] = []
    headers = args.get("headers")
    if isinstance(headers, Mapping) and headers:
        shown = []
        for name, value in headers.items():
            text = value if isinstance(value, str) else _text(value)
            shown.append(Header(str(name), text, SECRET_REFERENCE.search(text) is not None))
        blocks.append(Block(label="headers", kind="headers", headers=tuple(shown)))
    body = args.get("body")
    if body is not None:
        blocks.append(preview_block("body", _text(body), limits))
    more_facts, more_blocks, _ = _rest(args, {"method", "url", "headers", "body"}, limits)
    return facts + more_facts, blocks + more_blocks, []


def render_git(card: CardInput, args: dict[str, Any], limits: CardLimits) -> Parts:
    repository = args.get("path", args.get("repository", DEFAULT_CWD))
    facts = [
        *_path_facts(card, repository, limits, "repository"),
        Fact("operation", card.tool.removeprefix(GIT_PREFIX), False),
    ]
    more_facts, more_blocks, _ = _rest(args, {"path", "repository"}, limits)
    return facts + more_facts, more_blocks, []


def render_sql(card: CardInput, args: dict[str, Any], limits: CardLimits) -> Parts:
    query = _text(args.get("query", ""))
    facts = [
        Fact("connection", _short(args.get("connection", "?"), limits)),
        Fact("statement", ", ".join(statement_kinds(query)) or "?", False),
    ]
    block = Block(
        label="SQL",
        kind="sql",
        tokens=sql_tokens(query),
        size=size_label(query),
        folded=is_long(query, limits),
    )
    more_facts, more_blocks, _ = _rest(args, {"connection", "query"}, limits)
    return facts + more_facts, [block, *more_blocks], []


def render_mcp(card: CardInput, args: dict[str, Any], limits: CardLimits) -> Parts:
    server, _, tool = card.tool.partition(MCP_SEPARATOR)
    facts = [Fact("server", server), Fact("tool", tool or "?")]
    arguments = pretty_json(args)
    return facts, [text_block("arguments", arguments, limits, "json")], []


def render_send_email(card: CardInput, args: dict[str, Any], limits: CardLimits) -> Parts:
    """The message as its recipients will read it: To and Subject exactly, the body whole
    (the sender is the console's configured address)."""
    to = args.get("to")
    shown = ", ".join(to) if isinstance(to, list) and all(isinstance(t, str) for t in to) else to
    facts = [
        Fact("To", _short(shown, limits)),
        Fact("Subject", _short(args.get("subject"), limits)),
    ]
    body = _text(args.get("body", ""))
    blocks = [Block(label="body", kind="text", text=body, size=size_label(body))]
    more_facts, more_blocks, _ = _rest(args, {"to", "subject", "body"}, limits)
    return facts + more_facts, blocks + more_blocks, []


def render_slack_post(card: CardInput, args: dict[str, Any], limits: CardLimits) -> Parts:
    """The post as the channel will read it: the channel, then the text whole."""
    text = _text(args.get("text", ""))
    facts = [Fact("channel", _short(args.get("channel"), limits))]
    blocks = [Block(label="text", kind="text", text=text, size=size_label(text))]
    more_facts, more_blocks, _ = _rest(args, {"channel", "text"}, limits)
    return facts + more_facts, blocks + more_blocks, []


def render_generic(card: CardInput, args: dict[str, Any], limits: CardLimits) -> Parts:
    return [], [text_block("arguments", pretty_json(args), limits, "json")], []


RENDERERS: Final[Mapping[str, Renderer]] = {
    "write_file": render_write_file,
    "edit_file": render_edit_file,
    "shell_command": render_shell,
    "http_request": render_http,
    "sql_query": render_sql,
    "db_mutate": render_sql,
    "send_email": render_send_email,
    "slack_post": render_slack_post,
    **DESKTOP_RENDERERS,
}


def renderer_for(tool: str, category: str) -> tuple[str, Renderer]:
    """The renderer's name and function for a tool (generic JSON when none fits)."""
    if tool in RENDERERS:
        return tool, RENDERERS[tool]
    if category == MCP_CATEGORY or MCP_SEPARATOR in tool:
        return "mcp", render_mcp
    if tool.startswith(GIT_PREFIX):
        return "git", render_git
    return "generic", render_generic


def _strings(value: Any, where: str, item: bool = False) -> list[tuple[str, str, bool]]:
    """Every string in ``value`` (keys too) with where it is (``headers.Authorization``)
    and whether it is one value of a list (an argument of argv, one of many paths)."""
    if isinstance(value, str):
        return [(where, value, item)]
    found: list[tuple[str, str, bool]] = []
    if isinstance(value, Mapping):
        for key, inner_value in value.items():
            name = str(key)
            inner = f"{where}.{name}" if where else name
            found.append((f"{inner} (its name)", name, True))
            found.extend(_strings(inner_value, inner))
    elif isinstance(value, list | tuple):
        for index, inner_value in enumerate(value):
            found.extend(_strings(inner_value, f"{where}[{index}]", True))
    return found


def flagged_values(arguments: Mapping[str, Any]) -> tuple[FlaggedValue, ...]:
    """The arguments holding characters to look at twice, with those characters.

    A name, a list's item or a value with no blank reads as one line: a line break in it
    is flagged, and every look-alike; running text keeps its own line breaks."""
    found = []
    for where, text, item in _strings(dict(arguments), ""):
        one_line = item or (len(text) <= _NAME_MAX and not any(c.isspace() for c in text))
        flags = char_flags(text, "line" if one_line else "block")
        if flags:
            found.append(FlaggedValue(where, flags))
    return tuple(found)


def render_card(card: CardInput, limits: CardLimits | None = None) -> Card:
    """The display model of one call."""
    limits = limits or CardLimits()
    args = ordered(dict(card.arguments), card.key_order)
    name, renderer = renderer_for(card.tool, card.category)
    try:
        facts, blocks, notes = renderer(card, args, limits)
    except (TypeError, ValueError, AttributeError) as exc:
        # Arguments of an unexpected shape: show them as JSON rather than nothing.
        name = "generic"
        facts, blocks, notes = render_generic(card, args, limits)
        notes.append(f"shown as JSON: the arguments do not have the expected shape ({exc})")
    raw = pretty_json(args)
    whole = Card(
        tool=card.tool,
        renderer=name,
        effect=effect_of(card, args, limits),
        facts=tuple(facts),
        blocks=tuple(blocks),
        raw_json=raw,
        raw_size=size_label(raw),
        notes=tuple(note for note in notes if note),
        flagged=flagged_values(args),
    )
    return card_bounded(whole, limits.shown_chars)
