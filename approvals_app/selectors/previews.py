"""Consequence previews: what a call would touch, looked at when its request opens.

Each preview leaves things as they were: a file call's target is looked at through
the cards' own workspace access (no link followed, nothing opened for writing), an
HTTP call's destination is judged by the same SSRF guard and resolver the call will
use (nothing is sent), and a ``db_mutate`` on SQLite is run under the tool's own
checks and limits in a transaction that is rolled back (not on PostgreSQL, where a
rollback leaves sequences advanced). Each takes at most ``SYNTHORG_PREVIEW_SECONDS``
(3). A preview that cannot be computed says why; it never stops the request from
opening. Stored with the request as ``[{"kind", "text", "available",
"at", "detail"?, "pending"?}]``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any, Final

import structlog
from django.conf import settings
from django.utils import timezone

from approvals_app.cards.command_files import command_files, command_files_text
from approvals_app.cards.model import FileTarget
from approvals_app.cards.text import byte_label
from approvals_app.cards.workspace import file_target
from approvals_app.selectors.provenance import provenance_texts
from common.settings_config import synthorg_config
from tools_app.builtin.base import ToolFailedError, ToolRefusedError
from tools_app.builtin.database.preview import MutationNotCountedError, mutation_count
from tools_app.builtin.file_system.paths import PathRules, check_agent_path, workspace_roots
from tools_app.builtin.terminal.shell.parse import (
    ShellSyntaxRefusedError,
    parse_command_line,
    simple_commands,
)
from tools_app.builtin.web.policy import egress_policy_of, resolver_from, string_list
from tools_app.net import EgressError, EgressGuard, Resolver, SystemResolver

log = structlog.get_logger("synthorg.approvals")

# Tools whose ``path`` names the file or directory the call would change.
TARGET_TOOLS: Final = frozenset({"write_file", "edit_file", "delete_file"})
UNAVAILABLE: Final = "preview unavailable: "
# How long one preview may take (a name resolved, rows counted): the request waits for it.
DEFAULT_SECONDS: Final = 3.0


def preview_item(
    kind: str,
    text: str,
    at: datetime,
    *,
    available: bool = True,
    pending: bool = False,
    detail: str = "",
) -> dict[str, Any]:
    """One stored preview (``pending``: a worker has yet to compute it; ``detail``: lines
    shown below its text, such as a diff)."""
    unavailable = not available and not pending
    item = {
        "kind": kind,
        "text": UNAVAILABLE + text if unavailable else text,
        "available": available,
        "at": at.isoformat().replace("+00:00", "Z"),
    }
    if pending:
        item["pending"] = True
    if detail:
        item["detail"] = detail
    return item


def target_text(found: FileTarget) -> tuple[str, bool]:
    """What a person reads about a file call's target now, and whether it was looked at."""
    if found.kind == "unreadable":
        return found.reason, False
    if found.kind == "missing":
        return "the target does not exist now", True
    if found.kind == "file":
        links = f", with {found.links} hard links" if found.links > 1 else ""
        return f"the target exists: a regular file of {byte_label(found.size)}{links}", True
    if found.kind == "directory":
        return "the target exists: a directory", True
    if found.kind == "link":
        return f"the target is a symbolic link to {found.link_to!r} (not followed)", True
    return "the target exists and is not a regular file (a device, socket or pipe)", True


def _target_preview(invocation: Any, at: datetime) -> dict[str, Any]:
    workspace = invocation.agent.workspace
    if not workspace:
        return preview_item("target", "the agent has no workspace", at, available=False)
    text, available = target_text(file_target(workspace, invocation.arguments.get("path")))
    return preview_item("target", text, at, available=available)


def _seconds() -> float:
    return float(getattr(settings, "SYNTHORG_PREVIEW_SECONDS", DEFAULT_SECONDS))


class PreviewTimeoutError(Exception):
    """A name did not resolve in the time a preview may take (the call itself may still
    resolve it when it runs: not a refusal)."""


class _BoundedResolver:
    """A resolver given a deadline: a name that takes longer is not waited for, so a
    slow DNS answer never holds the request's opening up."""

    def __init__(self, inner: Resolver, seconds: float) -> None:
        self.inner = inner
        self.seconds = seconds

    def resolve(self, host: str, port: int) -> tuple[str, ...]:
        answer: list[tuple[str, ...]] = []
        failure: list[BaseException] = []

        def ask() -> None:
            try:
                answer.append(self.inner.resolve(host, port))
            except BaseException as exc:  # handed to the caller below
                failure.append(exc)

        # A daemon thread: one stuck in the system resolver never holds the process.
        worker = threading.Thread(target=ask, name="preview-resolve", daemon=True)
        worker.start()
        worker.join(self.seconds)
        if failure:
            raise failure[0]
        if not answer:
            raise PreviewTimeoutError(f"host {host!r} did not resolve within {self.seconds:g}s")
        return answer[0]


def _sub_constraints(invocation: Any) -> Mapping[str, Any]:
    from trust_app.selectors.agents import agent_policy

    policy = agent_policy(invocation.agent)
    return policy.for_category(invocation.category).constraints.model_dump(mode="json")


def _egress_preview(invocation: Any, at: datetime) -> dict[str, Any]:
    tool_settings = synthorg_config().tool_settings(invocation.tool).model_dump(exclude_none=True)
    seconds = _seconds()
    try:
        policy = egress_policy_of(
            _sub_constraints(invocation),
            invocation.agent.name,
            allow=string_list(tool_settings, "allowed_domains"),
            deny=string_list(tool_settings, "denied_domains"),
        )
        resolver = resolver_from(tool_settings) or SystemResolver()
        guard = EgressGuard(policy, _BoundedResolver(resolver, seconds))
        checked = guard.check_url(str(invocation.arguments.get("url", "")))
    except (EgressError, ToolRefusedError) as exc:
        return preview_item("egress", f"egress refused: {exc.reason}", at)
    except PreviewTimeoutError as exc:
        return preview_item("egress", str(exc), at, available=False)
    endpoint = checked.endpoint
    where = f"{endpoint.host}:{endpoint.port}"
    addresses = ", ".join(endpoint.addresses)
    trusted = " (an allowlisted host)" if endpoint.trusted else ""
    text = f"egress allowed to {where}{trusted}: resolves to {addresses}; nothing was sent"
    return preview_item("egress", text, at)


def _rows_preview(invocation: Any, at: datetime) -> dict[str, Any]:
    tool_settings = synthorg_config().tool_settings(invocation.tool).model_dump(exclude_none=True)
    try:
        rows = mutation_count(
            tool_settings, invocation.agent.name, invocation.arguments, timeout_seconds=_seconds()
        )
    except MutationNotCountedError as exc:
        return preview_item("rows", f"rows not counted: {exc.reason}", at, available=False)
    except ToolRefusedError as exc:
        return preview_item("rows", f"the call would be refused: {exc.reason}", at, available=False)
    except ToolFailedError as exc:
        return preview_item("rows", f"counting failed: {exc.message}", at, available=False)
    noun = "row" if rows == 1 else "rows"
    text = f"{rows} {noun} affected, counted in a transaction that was rolled back"
    return preview_item("rows", text, at)


def _command_words(arguments: Mapping[str, Any]) -> list[str]:
    """The words of a ``shell_command`` that may name files: every argument of every
    program it runs (not the programs), and every redirection's target."""
    argv = arguments.get("argv")
    if isinstance(argv, list):
        return [str(word) for word in argv[1:]]
    words: list[str] = []
    for command in simple_commands(parse_command_line(str(arguments.get("command", "")))):
        words += list(command.argv[1:])
        words += [r.target.text for r in command.redirections if not r.op.endswith("&")]
    return words


def _files_preview(invocation: Any, at: datetime) -> dict[str, Any]:
    workspace = invocation.agent.workspace
    if not workspace:
        return preview_item("files", "the agent has no workspace", at, available=False)
    roots = workspace_roots(workspace)
    try:
        cwd = check_agent_path(invocation.arguments.get("cwd", "."), PathRules(roots))
        words = _command_words(invocation.arguments)
    except ToolRefusedError as exc:
        return preview_item("files", f"the call would be refused: {exc.reason}", at)
    except ShellSyntaxRefusedError as exc:
        return preview_item("files", f"the command line could not be read: {exc}", at)
    if cwd.anchor != "workspace":
        return preview_item("files", "its working directory is outside the workspace", at)
    found, left = command_files(roots, cwd.parts, words)
    return preview_item("files", command_files_text(found, left), at)


PREVIEWS: Final[Mapping[str, Callable[[Any, datetime], dict[str, Any]]]] = {
    **{tool: _target_preview for tool in TARGET_TOOLS},
    "http_request": _egress_preview,
    "db_mutate": _rows_preview,
    "shell_command": _files_preview,
}


def call_previews(invocation: Any, *, now: datetime | None = None) -> list[dict[str, Any]]:
    """The consequence previews of ``invocation``'s call (its tool's, if it has one) and
    the provenance of its argument values (for every tool).

    Never raises: a preview that fails is stored as unavailable, with the reason."""
    at = now or timezone.now()
    items: list[dict[str, Any]] = []
    compute = PREVIEWS.get(invocation.tool)
    if compute is not None:
        try:
            items.append(compute(invocation, at))
        except Exception as exc:  # a preview is an aid: its failure must not stop the request
            log.warning("approval_preview_failed", tool=invocation.tool, error=repr(exc))
            kind = {"http_request": "egress", "db_mutate": "rows", "shell_command": "files"}.get(
                invocation.tool, "target"
            )
            items.append(
                preview_item(
                    kind, f"it could not be computed ({type(exc).__name__})", at, available=False
                )
            )
    try:
        items += [preview_item("provenance", text, at) for text in provenance_texts(invocation)]
    except Exception as exc:  # the same: the request opens without it
        log.warning("approval_provenance_failed", tool=invocation.tool, error=repr(exc))
    return items
