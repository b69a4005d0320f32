"""PURE: a card's first line, the effect of the call as the policy resolved it.

A person decides on what a call does, not on the bytes an agent chose: the path
after normalisation (``notes.txt/./././../.git/config`` writes ``.git/config``), the
host and address a URL reaches (``http://0x7f.1/`` is ``127.0.0.1``), the program
and every argument of it. The line keeps each character as it is; line breaks,
invisible characters and look-alikes are flagged where the line is shown. A line
too long for the card loses its middle, never its end, and says how much is not
shown and how large the whole line is.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Callable, Mapping
from typing import Any, Final

from approvals_app.cards.model import CardInput, CardLimits, Effect
from approvals_app.cards.sql import statement_kinds
from approvals_app.cards.text import byte_label, char_count, middle_cut, size_label
from approvals_app.policy.readings import path_value_readings
from tools_app.builtin.base import ToolRefusedError
from tools_app.builtin.file_system.paths import PathRules, check_agent_path
from tools_app.net.errors import EgressError
from tools_app.net.urls import parse_target

PATH_ROLE: Final = "path"
URL_ROLE: Final = "url"
HOST_ROLE: Final = "host"
MCP_SEPARATOR: Final = "__"
GIT_PREFIX: Final = "git_"
DEFAULT_METHOD: Final = "GET"
# Verbs of the file tools whose one path is the whole of their effect.
PATH_VERBS: Final = {
    "read_file": "read",
    "list_directory": "list",
    "stat": "look up",
    "delete_file": "delete",
}

Line = tuple[str, list[str]]


def compact(value: Any) -> str:
    """A value on one line: JSON, strings quoted (their line breaks as ``\\n``)."""
    return json.dumps(value, ensure_ascii=False, default=str)


def shell_words(argv: list[Any]) -> str:
    """argv as a person would type it, every argument quoted as a shell reads it."""
    return " ".join(shlex.quote(str(part)) for part in argv)


def resolved_path(value: Any, card: CardInput) -> Line:
    """A path as the policy reads it (every reading, when it reads more than one way),
    and notes: how the given path resolves, or why the tool would refuse it."""
    if not isinstance(value, str):
        return compact(value), ["the path is not a string: the call will be refused"]
    readings = path_value_readings(value, card.workspace_roots)
    if readings is None:
        return value, ["the path cannot be resolved: the call will be refused"]
    shown = " or ".join(sorted(readings))
    notes: list[str] = []
    if len(readings) > 1:
        notes.append(f"the path reads {len(readings)} ways ({shown}): each is judged")
    elif shown != value:
        notes.append(f"the path as given ({char_count(len(value))}) resolves to {shown}")
    try:
        check_agent_path(
            value, PathRules(workspace_roots=card.workspace_roots, allow_absolute=True)
        )
    except ToolRefusedError as exc:
        notes.append(f"the tool will refuse this path: {exc.reason}")
    return shown, notes


def _path_argument(args: Mapping[str, Any], key: str, card: CardInput) -> Line:
    return resolved_path(args.get(key, "?"), card)


def _write(card: CardInput, args: Mapping[str, Any]) -> Line:
    path, notes = _path_argument(args, "path", card)
    content = args.get("content")
    size = size_label(content) if isinstance(content, str) else compact(content)
    return f"write {size} to {path}", notes


def _edit(card: CardInput, args: Mapping[str, Any]) -> Line:
    path, notes = _path_argument(args, "path", card)
    count = args.get("expected_replacements", 1)
    old, new = compact(args.get("old_string", "")), compact(args.get("new_string", ""))
    return f"edit {path}: replace {compact(count)}× {old} with {new}", notes


def _path_tool(card: CardInput, args: Mapping[str, Any]) -> Line:
    path, notes = _path_argument(args, "path", card)
    line = f"{PATH_VERBS[card.tool]} {path}"
    if args.get("recursive") is True:
        line += " and everything under it"
    return line, notes


def _shell(card: CardInput, args: Mapping[str, Any]) -> Line:
    cwd, notes = _path_argument(args, "cwd", card) if "cwd" in args else (".", [])
    argv = args.get("argv")
    if isinstance(argv, list) and argv:
        line = f"run {shell_words(argv)}"
    else:
        line = f"run the command line {args.get('command', '?')}"
    line += f" in {cwd}"
    stdin = args.get("stdin")
    if isinstance(stdin, str):
        line += f", with {size_label(stdin)} on its standard input"
    names = args.get("secret_env")
    if isinstance(names, Mapping) and names:
        line += f", with {compact(names)} in its environment"
    return line, notes


def _url_line(url: Any) -> Line:
    """The URL as the request will use it: canonical, with its host, port and address."""
    if not isinstance(url, str):
        return compact(url), ["the URL is not a string: the call will be refused"]
    try:
        target = parse_target(url)
    except EgressError as exc:
        return url, [f"the URL will be refused: {exc.reason}"]
    address = target.host if target.is_ip else "looked up when it runs, then checked and pinned"
    line = f"{target.url()} (host {target.host}, port {target.port}, address {address})"
    notes = []
    if target.userinfo is not None:
        notes.append(f"the URL carries user information ({target.userinfo}), which is sent")
    if target.url() != url:
        notes.append(f"as given: {url}")
    return line, notes


def _http(card: CardInput, args: Mapping[str, Any]) -> Line:
    method = str(args.get("method", DEFAULT_METHOD)).upper()
    target, notes = _url_line(args.get("url", "?"))
    line = f"{method} {target}"
    body = args.get("body")
    if body is not None:
        text = body if isinstance(body, str) else compact(body)
        line += f", sending {byte_label(len(text.encode('utf-8', 'surrogatepass')))}"
    headers = args.get("headers")
    if isinstance(headers, Mapping) and headers:
        line += f", headers {compact(headers)}"
    return line, notes


def _sql(card: CardInput, args: Mapping[str, Any]) -> Line:
    query = args.get("query", "")
    query = query if isinstance(query, str) else compact(query)
    kinds = ", ".join(statement_kinds(query)) or "?"
    return f"{kinds} on connection {compact(args.get('connection', '?'))}: {query}", []


def _git(card: CardInput, args: Mapping[str, Any]) -> Line:
    repository = args.get("path", args.get("repository", "."))
    where, notes = resolved_path(repository, card)
    rest = {k: v for k, v in args.items() if k not in ("path", "repository")}
    line = f"git {card.tool.removeprefix(GIT_PREFIX)} in {where}"
    if rest:
        line += " " + " ".join(f"{key}={compact(value)}" for key, value in rest.items())
    return line, notes


def _mcp(card: CardInput, args: Mapping[str, Any]) -> Line:
    server, _, tool = card.tool.partition(MCP_SEPARATOR)
    return f"call {tool or '?'} on upstream server {server} with {compact(dict(args))}", []


def _external_data(card: CardInput, args: Mapping[str, Any]) -> Line:
    """The operation on the connection; its kind is the decision's (the card's reason)."""
    method = str(args.get("method", DEFAULT_METHOD)).upper()
    path, connection = compact(args.get("path", "?")), compact(args.get("connection", "?"))
    line = f"{method} {path} on connection {connection}"
    query = args.get("query")
    if isinstance(query, Mapping) and query:
        line += f", query {compact(query)}"
    body = args.get("body")
    if body is not None:
        text = body if isinstance(body, str) else compact(body)
        line += f", sending {byte_label(len(text.encode('utf-8', 'surrogatepass')))}: {text}"
    return line, []


def _recipients(value: Any) -> str:
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return ", ".join(compact(v) for v in value)
    return compact(value)


def _send_email(card: CardInput, args: Mapping[str, Any]) -> Line:
    """Who receives what: the subject whole, the body's size (the card shows it all)."""
    body = args.get("body")
    size = size_label(body) if isinstance(body, str) else compact(body)
    line = f"email {_recipients(args.get('to', '?'))}: subject {compact(args.get('subject', '?'))}"
    return f"{line}, body {size}", []


def _slack_post(card: CardInput, args: Mapping[str, Any]) -> Line:
    text = args.get("text")
    size = size_label(text) if isinstance(text, str) else compact(text)
    return f"post {size} to Slack channel {compact(args.get('channel', '?'))}", []


def _generic(card: CardInput, args: Mapping[str, Any]) -> Line:
    """Any other tool: its arguments, paths and URLs resolved by their declared roles."""
    parts: list[str] = []
    notes: list[str] = []
    for key, value in args.items():
        role = card.argument_roles.get(key)
        if role == PATH_ROLE and isinstance(value, str):
            shown, more = resolved_path(value, card)
        elif role == URL_ROLE and isinstance(value, str):
            shown, more = _url_line(value)
        else:
            shown, more = compact(value), []
        parts.append(f"{key}={shown}")
        notes.extend(f"{key}: {note}" for note in more)
    return " ".join([card.tool, *parts]), notes


EFFECTS: Final[Mapping[str, Callable[[CardInput, Mapping[str, Any]], Line]]] = {
    "write_file": _write,
    "edit_file": _edit,
    "shell_command": _shell,
    "http_request": _http,
    "sql_query": _sql,
    "db_mutate": _sql,
    "external_data_request": _external_data,
    "send_email": _send_email,
    "slack_post": _slack_post,
    **dict.fromkeys(PATH_VERBS, _path_tool),
}


def _effect_line(card: CardInput, args: Mapping[str, Any]) -> Line:
    if card.tool in EFFECTS:
        return EFFECTS[card.tool](card, args)
    if card.category == "mcp" or MCP_SEPARATOR in card.tool:
        return _mcp(card, args)
    if card.tool.startswith(GIT_PREFIX):
        return _git(card, args)
    return _generic(card, args)


def effect_of(card: CardInput, args: Mapping[str, Any], limits: CardLimits) -> Effect:
    """The effect line of ``card`` (``args``: its arguments in the tool's order)."""
    try:
        text, notes = _effect_line(card, args)
    except (TypeError, ValueError, AttributeError):
        text, notes = _generic(card, args)
    head, tail, cut = middle_cut(text, limits.effect_chars)
    words = ""
    if cut:
        words = f" … [{char_count(cut)} not shown; the whole line is {size_label(text)}] … "
    return Effect(text=text, head=head, tail=tail, cut=words, notes=tuple(notes))
