"""What applying an agents file would change, each change named, nothing written.

Agents in the database but not in the file are left alone (listed, never deleted), and
so is each field an existing agent's entry leaves out (listed too); a file that cannot be
applied whole is refused with every problem by field.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth import get_user_model

from common.config.errors import ConfigError, ConfigProblem
from common.errors import InvalidArgumentError
from secrets_app.models import Secret, SecretGrant
from secrets_app.references import SEALED_TOOLS, SECRET_SLOTS, is_valid_name
from trust_app.agents_code.schema import AgentEntry, AgentsFile, SecretGrantEntry
from trust_app.models import Agent, Team
from trust_app.services.permissions import (
    AgentPermissionsState,
    agent_permissions_check,
    agent_permissions_state,
)

# The permission service names its fields as the console's form does.
_FIELD_IN_FILE = {"allowed": "allowed_tools", "denied": "denied_tools"}


@dataclass(frozen=True)
class Change:
    """One change to one agent, as the plan lists it and apply makes it."""

    agent: str
    action: str  # create | permissions | owner | team | active | grant_secret | ungrant_secret
    detail: str
    entry: AgentEntry
    grant: SecretGrantEntry | None = None

    def line(self) -> str:
        return f"{self.action:15} {self.agent}: {self.detail}"


@dataclass(frozen=True)
class Plan:
    changes: tuple[Change, ...]
    left_alone: tuple[str, ...] = field(default=())  # agents not in the file
    # Existing agents whose entry leaves fields out, and those fields (kept as they are).
    kept: tuple[tuple[str, tuple[str, ...]], ...] = field(default=())

    @property
    def empty(self) -> bool:
        return not self.changes


def _permissions_proposal(
    entry: AgentEntry, where: str, problems: list[ConfigProblem]
) -> AgentPermissionsState | None:
    try:
        return agent_permissions_check(
            access_level=entry.access_level,
            autonomy=entry.autonomy,
            allowed=entry.allowed_tools,
            denied=entry.denied_tools,
            sub_constraints=entry.sub_constraints,
            max_concurrent_calls=entry.max_concurrent_calls,
        )
    except InvalidArgumentError as exc:
        found = (exc.details or {}).get("problems") or {"": exc.message}
        for name, message in found.items():
            head, dot, rest = str(name).partition(".")
            name = _FIELD_IN_FILE.get(head, head) + dot + rest
            problems.append(ConfigProblem(f"{where}.{name}" if name else where, str(message)))
        return None


def _grant_problems(
    entry: AgentEntry, where: str, live: set[str], problems: list[ConfigProblem]
) -> None:
    for index, grant in enumerate(entry.secret_grants):
        at = f"{where}.secret_grants[{index}]"
        if grant.secret not in live:
            problems.append(ConfigProblem(
                f"{at}.secret",
                f"no secret named {grant.secret!r}; store it first (manage.py synthorg_secret set)",
            ))  # fmt: skip
        if grant.tool and grant.tool not in SECRET_SLOTS:
            takers = ", ".join(sorted(SECRET_SLOTS))
            problems.append(ConfigProblem(
                f"{at}.tool", f"{grant.tool!r} takes no secrets; tools that do: {takers}"
            ))  # fmt: skip
        if grant.server and not is_valid_name(grant.server):
            problems.append(ConfigProblem(f"{at}.server", f"{grant.server!r} is not a server name"))
        if grant.tool in SEALED_TOOLS and not grant.hosts:
            problems.append(ConfigProblem(
                f"{at}.hosts",
                f"a grant for {grant.tool} names the hosts the console adds the value to "
                "(hosts: [HOST[:PORT] or *.DOMAIN]); the agent's program never holds it",
            ))  # fmt: skip


def _granted(agent: Agent) -> dict[tuple[str, str, str], SecretGrantEntry]:
    rows = SecretGrant.objects.filter(agent=agent, secret__revoked_at__isnull=True).values_list(
        "secret__name", "tool", "server", "hosts", "inject"
    )
    return {
        (name, tool, server): SecretGrantEntry(
            secret=name, tool=tool, server=server, hosts=tuple(hosts or ()), inject=inject
        )
        for name, tool, server, hosts, inject in rows
    }


# What an existing agent keeps when its entry leaves the field out (workspace: never moved).
KEPT_WHEN_ABSENT = (
    "autonomy",
    "owner",
    "team",
    "active",
    "allowed_tools",
    "denied_tools",
    "sub_constraints",
    "max_concurrent_calls",
    "secret_grants",
)


def _as_it_is(entry: AgentEntry, agent: Agent | None) -> tuple[AgentEntry, tuple[str, ...]]:
    """The entry with each field it leaves out filled from the existing agent, and those
    fields; a new agent takes the defaults."""
    absent = tuple(name for name in KEPT_WHEN_ABSENT if name not in entry.model_fields_set)
    if agent is None or not absent:
        return entry, ()
    state = agent_permissions_state(agent)
    current: dict[str, Any] = {
        "autonomy": state.autonomy,
        "owner": agent.owner.get_username() if agent.owner else None,
        "team": agent.team.name,
        "active": agent.active,
        "allowed_tools": state.allowed,
        "denied_tools": state.denied,
        "sub_constraints": dict(state.sub_constraints),
        "max_concurrent_calls": state.max_concurrent_calls,
        "secret_grants": tuple(_granted(agent).values()) if "secret_grants" in absent else (),
    }
    return entry.model_copy(update={name: current[name] for name in absent}), absent


def _use(grant: SecretGrantEntry) -> str:
    use = f"server {grant.server}" if grant.server else grant.tool
    if grant.hosts:
        use += f" sealed for {', '.join(grant.hosts)} ({grant.inject})"
    return use


def _describe(value: Any) -> str:
    if value is None:  # a cap on calls at once left to the console
        return "default"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(map(str, value)) + "]"
    return repr(value)


def _agent_changes(
    entry: AgentEntry, agent: Agent | None, proposal: AgentPermissionsState
) -> list[Change]:
    changes: list[Change] = []
    name = entry.name
    if agent is None:
        detail = f"{entry.access_level}, {entry.autonomy}"
        if entry.max_concurrent_calls is not None:
            detail += f", {entry.max_concurrent_calls} calls at once"
        if entry.team is not None:
            detail += f", team {entry.team}"
        changes.append(Change(name, "create", detail, entry))
        # Created with these; the rest of its permissions are a change of their own.
        before = AgentPermissionsState(
            access_level=entry.access_level,
            autonomy=entry.autonomy,
            max_concurrent_calls=entry.max_concurrent_calls,
        )
        owner, active, granted = None, True, {}
        team = entry.team
    else:
        before = agent_permissions_state(agent)
        owner = agent.owner.get_username() if agent.owner else None
        active, granted = agent.active, _granted(agent)
        team = agent.team.name
    old, new = before.as_dict(), proposal.as_dict()
    moved = [f for f in old if old[f] != new[f]]
    if moved:
        detail = "; ".join(
            f"{_FIELD_IN_FILE.get(f, f)}: {_describe(old[f])} -> {_describe(new[f])}" for f in moved
        )
        changes.append(Change(name, "permissions", detail, entry))
    if entry.owner != owner:
        changes.append(Change(name, "owner", f"{owner!r} -> {entry.owner!r}", entry))
    if entry.team != team:
        changes.append(Change(name, "team", f"{team!r} -> {entry.team!r}", entry))
    if entry.active != active:
        changes.append(Change(name, "active", f"{active} -> {entry.active}", entry))
    wanted = {g.key(): g for g in entry.secret_grants}
    for key in sorted(wanted):
        grant, held = wanted[key], granted.get(key)
        if held is None or held.sealing() != grant.sealing():
            changes.append(
                Change(name, "grant_secret", f"{grant.secret} for {_use(grant)}", entry, grant)
            )
    for key in sorted(set(granted) - set(wanted)):
        grant = granted[key]
        changes.append(
            Change(name, "ungrant_secret", f"{grant.secret} for {_use(grant)}", entry, grant)
        )
    return changes


def agents_plan(agents_file: AgentsFile, *, source: str) -> Plan:
    """Every change applying ``agents_file`` makes; ConfigError when it cannot be applied."""
    problems: list[ConfigProblem] = []
    existing = {a.name: a for a in Agent.objects.select_related("owner", "team")}
    teams = set(Team.objects.values_list("name", flat=True))
    people = set(get_user_model().objects.values_list("username", flat=True))
    live = set(Secret.objects.filter(revoked_at__isnull=True).values_list("name", flat=True))
    changes: list[Change] = []
    kept: list[tuple[str, tuple[str, ...]]] = []
    for index, written in enumerate(agents_file.agents):
        where = f"agents[{index}]"
        agent = existing.get(written.name)
        entry, absent = _as_it_is(written, agent)
        if absent:
            kept.append((entry.name, absent))
        proposal = _permissions_proposal(entry, where, problems)
        _grant_problems(entry, where, live, problems)
        if "owner" not in absent and entry.owner is not None and entry.owner not in people:
            problems.append(ConfigProblem(f"{where}.owner", f"no person named {entry.owner!r}"))
        if agent is not None and "team" in written.model_fields_set and written.team is None:
            problems.append(ConfigProblem(f"{where}.team", "name a team, or leave the field out"))
        if "team" not in absent and entry.team is not None and entry.team not in teams:
            problems.append(ConfigProblem(
                f"{where}.team",
                f"no team named {entry.team!r}; create it first (manage.py synthorg_team create)",
            ))  # fmt: skip
        if agent is not None and entry.workspace and entry.workspace != agent.workspace:
            problems.append(ConfigProblem(
                f"{where}.workspace",
                f"an existing agent's workspace is not moved by apply (it is {agent.workspace}); "
                "leave it out or give that path",
            ))  # fmt: skip
        if proposal is not None:
            changes.extend(_agent_changes(entry, agent, proposal))
    if problems:
        raise ConfigError(source, tuple(problems))
    listed = {entry.name for entry in agents_file.agents}
    return Plan(
        changes=tuple(changes),
        left_alone=tuple(sorted(set(existing) - listed)),
        kept=tuple(kept),
    )
