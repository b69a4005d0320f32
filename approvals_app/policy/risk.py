"""PURE: a call's risk, read from what it does, with the reasons a person reads.

How many people the policy asks is the policy's business and stays its own fact
(``required_approvals``); the risk label says how much harm the call could do:
destructive SQL, deletes and overwrites, paths outside the agent's usual ones, the
first use of a tool or a host, data leaving to a host the agent never reached, the
privilege of the target (git's configuration and hooks, CI files, system paths).
Each reason carries the tier it alone would be; the label is the most serious.
An admin's ``risk_tier`` on an approval rule is one more reason, never lowered.

What the agent did before (``AgentHabits``) and whether a target exists now
(``TargetState``) are read by the caller; this module only judges.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from approvals_app.policy.matching import CallFacts
from approvals_app.policy.readings import host_value_readings, path_value_readings
from approvals_app.policy.risk_commands import argv_reasons, command_reasons
from approvals_app.policy.risk_words import CRITICAL, HIGH, LOW, MEDIUM, Risk, RiskReason, rank
from approvals_app.policy.route import HIGH_RISK_ACTIONS
from approvals_app.policy.sql import statements
from tools_app.sanitize.redaction import only_references, redact_secrets

PATH_ROLE: Final = "path"
URL_ROLES: Final = frozenset({"url", "host"})
READ_METHODS: Final = frozenset({"GET", "HEAD", "OPTIONS"})
SQL_TOOLS: Final = frozenset({"sql_query", "db_mutate"})
FILE_TOOLS: Final = frozenset({"write_file", "edit_file", "delete_file"})
# A query string longer than this carries data, not just a lookup.
QUERY_DATA_CHARS: Final = 100
SYSTEM_PREFIXES: Final = ("/etc", "/usr", "/bin", "/sbin", "/lib", "/boot", "/var", "/root", "/opt")
# Files other programs read as instructions: a change to them runs later, elsewhere.
RUN_LATER: Final = (
    (".git/hooks", "git runs its hooks as programs"),
    (".git/config", "git's configuration can make git run programs"),
    (".git", "git's own data: history and configuration"),
    (".github/workflows", "CI runs these workflows with the repository's credentials"),
    (".gitlab-ci.yml", "CI runs this pipeline with the repository's credentials"),
    (".circleci", "CI runs this configuration"),
    (".bashrc", "shells run this file at start"),
    (".profile", "shells run this file at start"),
    (".bash_profile", "shells run this file at start"),
    (".zshrc", "shells run this file at start"),
    (".envrc", "direnv runs this file on entering the folder"),
    (".env", "programs read their settings and credentials from it"),
    (".pre-commit-config.yaml", "pre-commit runs what it names"),
)
BUILD_FILES: Final = frozenset(
    {"Makefile", "package.json", "setup.py", "pyproject.toml", "conftest.py", "Dockerfile"}
)


@dataclass(frozen=True, slots=True)
class AgentHabits:
    """What the agent's earlier calls that ran used: tools, hosts, workspace folders."""

    calls: int = 0
    tools: frozenset[str] = frozenset()
    hosts: frozenset[str] = frozenset()
    folders: frozenset[str] = frozenset()

    def usual_folder(self, folder: str) -> bool:
        return any(folder == f or (f and folder.startswith(f + "/")) for f in self.folders)


@dataclass(frozen=True, slots=True)
class TargetState:
    """The file a call names, as found when it asked (``exists`` None: not known)."""

    exists: bool | None = None
    size: int = 0


@dataclass(frozen=True, slots=True)
class RiskInput:
    """Everything the judgement reads about one call."""

    facts: CallFacts
    habits: AgentHabits = field(default_factory=AgentHabits)
    target: TargetState = field(default_factory=TargetState)
    rule_tier: str | None = None
    rule: str = ""


def _bytes(size: int) -> str:
    return f"{size:,} byte{'' if size == 1 else 's'}"


def _argument(facts: CallFacts, name: str, default: Any = None) -> Any:
    return facts.arguments.get(name, default)


def _paths(facts: CallFacts) -> Iterator[tuple[str, str]]:
    """(argument, reading) for every path-role argument, as the policy reads it."""
    for name, role in facts.argument_roles.items():
        if role != PATH_ROLE or name not in facts.arguments:
            continue
        readings = path_value_readings(facts.arguments[name], facts.workspace_roots)
        for reading in sorted(readings or ()):
            yield name, reading


def _target_reasons(reading: str, reads: bool) -> Iterator[RiskReason]:
    if reading.startswith("/"):
        system = any(reading == p or reading.startswith(p + "/") for p in SYSTEM_PREFIXES)
        if reads:
            yield RiskReason(MEDIUM, f"reads outside the workspace: {reading}")
        else:
            tier = CRITICAL if system else HIGH
            yield RiskReason(tier, f"changes a file outside the workspace: {reading}")
        return
    if reads:
        return
    for prefix, why in RUN_LATER:
        if reading == prefix or reading.startswith(prefix + "/"):
            yield RiskReason(HIGH, f"changes {reading}: {why}")
            return
    if posixpath.basename(reading) in BUILD_FILES:
        yield RiskReason(MEDIUM, f"changes {reading}, which build tools run")


def _path_reasons(data: RiskInput, reads: bool) -> Iterator[RiskReason]:
    facts, habits = data.facts, data.habits
    for name, reading in _paths(facts):
        yield from _target_reasons(reading, reads)
        if reading.startswith("/") or not habits.calls:
            continue
        folder = posixpath.dirname(reading) if name != "cwd" else reading.strip(".")
        if not habits.usual_folder(folder):
            where = f"{folder}/" if folder else "the top of the workspace"
            verb = "reads" if reads else "changes"
            tier = LOW if reads else MEDIUM
            yield RiskReason(tier, f"first time this agent {verb} under {where}")


def _file_reasons(data: RiskInput) -> Iterator[RiskReason]:
    facts, target = data.facts, data.target
    path = next((reading for _, reading in _paths(facts)), str(_argument(facts, "path", "?")))
    if facts.tool == "write_file":
        if target.exists is True:
            yield RiskReason(MEDIUM, f"replaces the whole of {path} ({_bytes(target.size)})")
        elif target.exists is False:
            yield RiskReason(LOW, f"creates {path}")
        else:
            yield RiskReason(MEDIUM, f"may replace {path} (whether it exists is not known)")
    elif facts.tool == "edit_file":
        yield RiskReason(LOW, f"edits part of {path}")
    elif facts.tool == "delete_file" or facts.action_type.endswith(":delete"):
        more = " and everything under it" if _argument(facts, "recursive") is True else ""
        yield RiskReason(HIGH, f"deletes {path}{more}")


def _sql_reasons(facts: CallFacts) -> Iterator[RiskReason]:
    query = _argument(facts, "query", "")
    if not isinstance(query, str):
        return
    for statement in statements(query):
        table = f" of {statement.table}" if statement.table else ""
        kind = statement.kind
        if kind in ("DROP", "TRUNCATE", "ALTER", "GRANT", "REVOKE", "CREATE"):
            tier = MEDIUM if kind == "CREATE" else CRITICAL
            yield RiskReason(tier, f"{kind}{table}: changes the database's structure or rights")
        elif kind in ("DELETE", "UPDATE", "MERGE"):
            if statement.has_where:
                yield RiskReason(HIGH, f"{kind} rows{table} (those its WHERE selects)")
            else:
                yield RiskReason(CRITICAL, f"{kind} every row{table}: no WHERE")
        elif kind == "INSERT":
            yield RiskReason(MEDIUM, f"INSERT rows{table}")
        elif kind in ("SELECT", "WITH", "SHOW", "EXPLAIN"):
            if {"DELETE", "UPDATE", "INSERT"} & set(statement.keywords):
                yield RiskReason(HIGH, f"{kind} statement that also changes rows{table}")
            else:
                yield RiskReason(LOW, f"{kind}{table}: reads only")
        else:
            yield RiskReason(MEDIUM, f"{kind} statement: its effect is not read here")


def _header_reasons(headers: Any, host: str) -> Iterator[RiskReason]:
    if not isinstance(headers, Mapping):
        return
    for name, value in headers.items():
        text = value if isinstance(value, str) else str(value)
        if only_references(text):
            yield RiskReason(LOW, f"the console adds a stored secret in header {name} for {host}")
        elif redact_secrets(text) != text:
            yield RiskReason(
                MEDIUM,
                f"sends a credential-shaped value in header {name}, written by the agent "
                "(not a stored secret)",
            )


def _http_reasons(data: RiskInput) -> Iterator[RiskReason]:
    facts, habits = data.facts, data.habits
    url = _argument(facts, "url")
    hosts = host_value_readings(url)
    if not hosts:
        yield RiskReason(MEDIUM, "the URL cannot be read; the tool will refuse it")
        return
    host = sorted(hosts)[0]
    known = host in habits.hosts
    method = str(_argument(facts, "method", "GET")).upper()
    body = _argument(facts, "body")
    query = url.partition("?")[2].partition("#")[0] if isinstance(url, str) else ""
    if method in READ_METHODS and body is None:
        if known:
            yield RiskReason(LOW, f"{method} from {host}, which this agent has reached before")
        else:
            yield RiskReason(MEDIUM, f"first request of this agent to {host}")
        if len(query) > QUERY_DATA_CHARS:
            tier = MEDIUM if known else HIGH
            yield RiskReason(tier, f"sends {len(query):,} characters in the URL's query to {host}")
    else:
        text = body if isinstance(body, str) else ("" if body is None else str(body))
        size = _bytes(len(text.encode("utf-8", "surrogatepass")))
        if method == "DELETE":
            yield RiskReason(HIGH, f"asks {host} to delete what the URL names")
        if known:
            yield RiskReason(MEDIUM, f"{method} sends {size} to {host}")
        else:
            yield RiskReason(
                HIGH, f"{method} sends {size} to {host}, a host this agent never reached"
            )
    yield from _header_reasons(_argument(facts, "headers"), host)


def _host_reasons(data: RiskInput) -> Iterator[RiskReason]:
    """URL and host arguments of other tools: a host never reached is worth a look."""
    facts, habits = data.facts, data.habits
    for name, role in facts.argument_roles.items():
        if role not in URL_ROLES or name not in facts.arguments:
            continue
        for host in sorted(host_value_readings(facts.arguments[name]) or ()):
            if host not in habits.hosts:
                yield RiskReason(MEDIUM, f"first use of host {host} by this agent")


def _git_reasons(facts: CallFacts) -> Iterator[RiskReason]:
    operation = facts.tool.removeprefix("git_")
    if operation == "push":
        yield RiskReason(HIGH, f"publishes branch {_argument(facts, 'branch', '?')} to a remote")
    elif operation == "commit":
        yield RiskReason(LOW, "records a commit in the workspace's repository")
    elif operation == "clone":
        yield RiskReason(MEDIUM, "fetches a repository into the workspace")
    elif facts.safety_class == "read":
        yield RiskReason(LOW, f"git {operation} only reads")
    else:
        yield RiskReason(MEDIUM, f"git {operation} changes the repository")


def _effect_reasons(data: RiskInput) -> list[RiskReason]:
    facts = data.facts
    reasons: list[RiskReason] = []
    if facts.tool in FILE_TOOLS or facts.action_type.endswith(":delete"):
        reasons += _file_reasons(data)
    elif facts.tool == "shell_command":
        argv = _argument(facts, "argv")
        command = _argument(facts, "command")
        if isinstance(argv, list) and argv:
            reasons += argv_reasons([str(word) for word in argv])
        elif isinstance(command, str):
            reasons += command_reasons(command)
    elif facts.tool == "http_request":
        reasons += _http_reasons(data)
    elif facts.tool in SQL_TOOLS:
        reasons += _sql_reasons(facts)
    elif facts.tool.startswith("git_"):
        reasons += _git_reasons(facts)
    if facts.tool != "http_request":
        reasons += _host_reasons(data)
    if not reasons:
        # Nothing read from the arguments: the tool's declared kind is all there is.
        reasons.append(_by_class(facts))
        reasons += _declared_action(facts)
    return reasons


def _by_class(facts: CallFacts) -> RiskReason:
    if facts.safety_class == "read":
        return RiskReason(LOW, f"{facts.tool} only reads")
    if facts.safety_class == "network":
        return RiskReason(MEDIUM, f"{facts.tool} uses the network; its effect is in its arguments")
    return RiskReason(MEDIUM, f"{facts.tool} changes something; its effect is in its arguments")


def _declared_action(facts: CallFacts) -> Iterator[RiskReason]:
    """A far-reaching action type, for a tool whose effect is not read from its arguments
    (``http_request`` is ``comms:external``, and a GET to a known host is still low)."""
    if HIGH_RISK_ACTIONS.match(facts.action_type):
        yield RiskReason(HIGH, f"{facts.action_type}: its effect reaches beyond the workspace")


def _declared_reasons(facts: CallFacts) -> Iterator[RiskReason]:
    if facts.safety_class == "financial":
        yield RiskReason(HIGH, "moves money or spends a budget (safety class financial)")
    if facts.safety_class == "privileged":
        yield RiskReason(HIGH, "acts with rights beyond the workspace (safety class privileged)")


def effect_risk(data: RiskInput) -> Risk:
    """The risk label of one call and its reasons, most serious first."""
    facts, habits = data.facts, data.habits
    reasons = _effect_reasons(data)
    # A call only reads when its class says so, or when every program or statement of it
    # was read as reading; a file tool that writes never does, whatever it writes.
    reads = facts.safety_class == "read" or (
        facts.tool not in FILE_TOOLS and all(rank(reason.tier) == rank(LOW) for reason in reasons)
    )
    reasons += _path_reasons(data, reads)
    reasons += _declared_reasons(facts)
    first = MEDIUM if not reads or any(rank(r.tier) > rank(LOW) for r in reasons) else LOW
    if not habits.calls:
        reasons.append(RiskReason(first, "no earlier call of this agent to compare with"))
    elif facts.tool not in habits.tools:
        reasons.append(RiskReason(first, f"first use of {facts.tool} by this agent"))
    if data.rule_tier:
        words = f"rule {data.rule} classes these calls {data.rule_tier}"
        reasons.append(RiskReason(data.rule_tier, words))
    return Risk.of(reasons)
