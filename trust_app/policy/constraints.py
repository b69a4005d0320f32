"""Sub-constraints: what a granted tool may still not do at the agent's level.

``static_violation`` checks the tool itself (deployment, git access,
code-execution isolation, terminal access, network mode, file-system scope);
``argument_violation`` checks the call's arguments whose roles the tool
contract declares (paths, URLs, hosts, commands). Each returns None or the
rule and a reason the agent can act on, and appends its steps to the trace.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from typing import Final
from urllib.parse import unquote, urlsplit

from common.vocabulary.categories import NETWORK_CATEGORIES, SafetyClass, ToolCategory
from common.vocabulary.levels import (
    GIT_ACTIONS,
    ISOLATION_RANK,
    CodeExecution,
    FileSystemScope,
    GitAccess,
    NetworkMode,
    TerminalAccess,
)
from common.vocabulary.names import name_key
from common.vocabulary.network import (
    Endpoint,
    NetworkTargetError,
    is_local_or_private,
    parse_host_port,
    parse_url,
)
from common.vocabulary.programs import code_runner_hint
from trust_app.policy.agent import AgentPolicy
from trust_app.policy.decision import Rule
from trust_app.policy.paths import check_path_characters, check_path_scope
from trust_app.policy.tool_view import ToolView

Violation = tuple[Rule, str]

# A browser opens pages from the workspace too, as the sandbox mounts it.
SANDBOX_WORKSPACE: Final = "/workspace"
_FILE_URL: Final = re.compile(r"(?i)file:")
_CONTROL_RE: Final = re.compile(r"[\x00-\x1f\x7f\\]")

_SHELL_METACHARACTERS: Final = frozenset(";&|`$<>(){}*?!#\n\r")
_QUOTING: Final = frozenset("'\"\\")
_ASK_ADMIN: Final = "ask an admin to change this agent's permissions if the task needs it"
# The tool a refused interpreter's code can run in (tools_app.builtin.code).
CODE_RUNNER: Final = "code_runner"


def _uses_network(tool: ToolView) -> bool:
    return tool.category in NETWORK_CATEGORIES or tool.safety_class == SafetyClass.NETWORK


def static_violation(
    agent: AgentPolicy, tool: ToolView, trace: list[str] | None
) -> Violation | None:
    """The first sub-constraint the tool breaks whatever its arguments, if any.

    ``trace`` None skips the trace lines (the listing needs only the verdict).
    """
    c = agent.constraints
    level = agent.level
    if tool.category == ToolCategory.DEPLOYMENT or tool.action_domain == "deploy":
        if not c.deployment:
            return Rule.DEPLOYMENT, f"deployment is not permitted at level {level}; {_ASK_ADMIN}"
        if trace is not None:
            trace.append("deployment: permitted")
    if tool.category == ToolCategory.VERSION_CONTROL or tool.action_domain == "vcs":
        if c.git is not GitAccess.FULL and tool.action_type not in GIT_ACTIONS[c.git]:
            allowed = ", ".join(sorted(GIT_ACTIONS[c.git])) or "nothing"
            return Rule.GIT_ACCESS, (
                f"git access {c.git.value} does not permit {tool.action_type} "
                f"(it permits {allowed}); {_ASK_ADMIN}"
            )
        if trace is not None:
            trace.append(f"git access {c.git.value}: {tool.action_type} permitted")
    if tool.category == ToolCategory.CODE_EXECUTION:
        if c.code_execution is CodeExecution.NONE:
            return Rule.CODE_EXECUTION, f"code execution is not permitted at level {level}"
        rank = ISOLATION_RANK.get(tool.isolation or "", 0)
        if rank < ISOLATION_RANK[c.code_execution.value]:
            return Rule.CODE_EXECUTION, (
                f"code must run {c.code_execution.value} but this tool's sandbox isolation is "
                f"{tool.isolation or 'unknown'}; use a tool that runs in a container"
            )
        if trace is not None:
            trace.append(f"code execution: {tool.isolation} meets {c.code_execution.value}")
    if tool.category == ToolCategory.TERMINAL or tool.command_arguments:
        if c.terminal is TerminalAccess.NONE:
            return Rule.TERMINAL_ACCESS, f"terminal access is not permitted at level {level}"
        if c.terminal is TerminalAccess.RESTRICTED_COMMANDS and not tool.command_arguments:
            return Rule.TERMINAL_ACCESS, (
                "terminal access is restricted to listed commands, but this tool declares no "
                "command argument to check"
            )
        if trace is not None:
            trace.append(f"terminal access: {c.terminal.value}")
    if _uses_network(tool):
        # A browser also opens the workspace's own pages (file://): without network it
        # keeps those, each URL argument checked per call (an http one refused), and its
        # sandbox then has no network at all.
        pages_only = tool.category == ToolCategory.BROWSER and bool(tool.url_arguments)
        if c.network is NetworkMode.NONE and not pages_only:
            return Rule.NETWORK_MODE, f"network access is not permitted at level {level}"
        # An external-data connection's host is fixed by its config, and the agent's
        # ``connections`` grant is the allowlist its calls are checked against.
        if (
            c.network is NetworkMode.ALLOWLIST_ONLY
            and tool.category != ToolCategory.EXTERNAL_DATA
            and not (tool.url_arguments or tool.host_arguments)
        ):
            return Rule.NETWORK_MODE, (
                "network access is limited to an allowlist, but this tool declares no URL or "
                "host argument to check against it"
            )
        if trace is not None:
            only = " (the workspace's own pages only)" if c.network is NetworkMode.NONE else ""
            trace.append(f"network mode: {c.network.value}{only}")
    if tool.path_arguments or tool.category == ToolCategory.FILE_SYSTEM:
        if c.file_system is FileSystemScope.NONE:
            return Rule.FILE_SYSTEM_SCOPE, f"file-system access is not permitted at level {level}"
        if not agent.scope_roots:
            return Rule.FILE_SYSTEM_SCOPE, (
                f"file-system scope {c.file_system.value} needs a workspace, and this agent has "
                "none configured"
            )
        if trace is not None:
            trace.append(f"file-system scope: {c.file_system.value}")
    return None


StaticVerdict = tuple[Violation | None, tuple[str, ...]]


def static_verdict(agent: AgentPolicy, tool: ToolView) -> StaticVerdict:
    """``static_violation`` and its trace lines, memoised per agent and tool shape."""
    verdicts = agent.static_verdicts
    verdict = verdicts.get(tool.shape)
    if verdict is None:
        lines: list[str] = []
        verdict = (static_violation(agent, tool, lines), tuple(lines))
        verdicts[tool.shape] = verdict
    return verdict  # type: ignore[return-value]


def _values(value: object) -> list[object]:
    return list(value) if isinstance(value, list | tuple) else [value]


def _path_violation(agent: AgentPolicy, argument: str, value: object) -> str | None:
    problem = check_path_characters(value)
    if problem is None and agent.constraints.file_system is not FileSystemScope.FULL:
        assert isinstance(value, str)
        problem = check_path_scope(
            value,
            base=agent.workspace or agent.scope_roots[0],
            roots=agent.scope_roots,
            resolver=agent.path_resolver,
        )
        if problem is not None:
            scope = agent.constraints.file_system.value
            problem = f"{problem} (file-system scope {scope}); use a path inside the workspace"
    return None if problem is None else f"argument {argument!r}: {problem}"


def _endpoint_violation(agent: AgentPolicy, endpoint: Endpoint) -> str | None:
    c = agent.constraints
    if c.network is NetworkMode.NONE:
        return f"network access is not permitted at level {agent.level}"
    listed = any(rule.matches(endpoint) for rule in agent.host_rules)
    if c.network is NetworkMode.ALLOWLIST_ONLY and not listed:
        hosts = ", ".join(r.display() for r in agent.host_rules) or "none"
        return f"{endpoint.display()} is not on the network allowlist (allowed: {hosts})"
    if c.block_private_addresses and not listed and is_local_or_private(endpoint):
        return f"{endpoint.display()} is a local or private address and is not allowlisted"
    return None


def _network_violation(agent: AgentPolicy, argument: str, value: object, url: bool) -> str | None:
    if not isinstance(value, str):
        return f"argument {argument!r}: must be a string"
    try:
        endpoint = parse_url(value) if url else parse_host_port(value)
    except NetworkTargetError as exc:
        return f"argument {argument!r}: {exc}"
    problem = _endpoint_violation(agent, endpoint)
    return None if problem is None else f"argument {argument!r}: {problem}"


def _workspace_page_violation(agent: AgentPolicy, argument: str, value: str) -> str | None:
    """A browser's ``file://`` page: only ``file:///workspace/...`` (the workspace as the
    sandbox shows it), with file-system access, naming a path inside the workspace."""
    parts = urlsplit(value)
    where = f"argument {argument!r}"
    if parts.netloc not in ("", "localhost") or parts.query or parts.fragment:
        return f"{where}: a file:// page names no host, query or fragment"
    path = unquote(parts.path)
    if not path.startswith(SANDBOX_WORKSPACE + "/") or _CONTROL_RE.search(path):
        return (
            f"{where}: only files inside the workspace can be opened "
            f"(file://{SANDBOX_WORKSPACE}/...)"
        )
    relative = path[len(SANDBOX_WORKSPACE) + 1 :]
    if any(part in ("", ".", "..") for part in relative.split("/")):
        return f"{where}: a file:// page is named by a plain path in the workspace"
    if agent.constraints.file_system is FileSystemScope.NONE:
        return f"{where}: file-system access is not permitted at level {agent.level}"
    if not agent.workspace:
        return f"{where}: this agent has no workspace"
    problem = check_path_characters(relative) or check_path_scope(
        relative, base=agent.workspace, roots=(agent.workspace,), resolver=agent.path_resolver
    )
    return None if problem is None else f"{where}: {problem}; use a file inside the workspace"


def _pointed(agent: AgentPolicy, refusal: str, program: object) -> str:
    """``refusal``, pointing to code_runner when ``program`` is an interpreter it offers
    and this agent may call it."""
    if not isinstance(program, str) or agent.constraints.code_execution is CodeExecution.NONE:
        return refusal
    key = name_key(CODE_RUNNER)
    if key in agent.denied_keys or not (
        ToolCategory.CODE_EXECUTION.value in agent.categories or key in agent.allowed_keys
    ):
        return refusal
    hint = code_runner_hint(program)
    return refusal if hint is None else f"{refusal}. {hint}"


def _command_violation(agent: AgentPolicy, argument: str, value: object) -> str | None:
    if agent.constraints.terminal is TerminalAccess.FULL:
        return None
    if isinstance(value, str):
        if any(ch in _SHELL_METACHARACTERS for ch in value):
            refusal = (
                f"argument {argument!r}: shell operators are not allowed under restricted "
                "terminal access; run one command at a time"
            )
            return _pointed(agent, refusal, next(iter(value.split()), ""))
        argv: list[object]
        if _QUOTING.isdisjoint(value):
            argv = list(value.split())  # shlex is slow and adds nothing without quoting
        else:
            try:
                argv = list(shlex.split(value))
            except ValueError as exc:
                return f"argument {argument!r}: cannot be parsed as a command ({exc})"
    elif isinstance(value, list | tuple):
        argv = list(value)
    else:
        return f"argument {argument!r}: must be a command string or a list of strings"
    program = argv[0] if argv else ""
    if not isinstance(program, str) or program not in agent.allowed_commands:
        allowed = ", ".join(sorted(agent.allowed_commands)) or "none"
        refusal = (
            f"argument {argument!r}: command {program!r} is not allowed under restricted "
            f"terminal access (allowed: {allowed})"
        )
        return _pointed(agent, refusal, program)
    return None


def argument_violation(
    agent: AgentPolicy, tool: ToolView, arguments: Mapping[str, object], trace: list[str]
) -> Violation | None:
    """The first argument that would take the call past a sub-constraint, if any."""
    for name in tool.path_arguments:
        if name in arguments:
            for value in _values(arguments[name]):
                problem = _path_violation(agent, name, value)
                if problem:
                    return Rule.FILE_SYSTEM_SCOPE, problem
            trace.append(f"argument {name!r}: path inside scope")
    pages = tool.category == ToolCategory.BROWSER
    for names, is_url in ((tool.url_arguments, True), (tool.host_arguments, False)):
        for name in names:
            if name in arguments:
                for value in _values(arguments[name]):
                    if is_url and pages and isinstance(value, str) and _FILE_URL.match(value):
                        problem = _workspace_page_violation(agent, name, value)
                        if problem:
                            return Rule.FILE_SYSTEM_SCOPE, problem
                        continue
                    problem = _network_violation(agent, name, value, is_url)
                    if problem:
                        return Rule.NETWORK_MODE, problem
                trace.append(f"argument {name!r}: network target permitted")
    for name in tool.command_arguments:
        if name in arguments:
            problem = _command_violation(agent, name, arguments[name])
            if problem:
                return Rule.TERMINAL_ACCESS, problem
            trace.append(f"argument {name!r}: command permitted")
    return None
