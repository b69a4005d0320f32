"""Writers for agents, people and their tokens. Each runs in one transaction with its audit row."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db import transaction

from audit_app.record import Actor, audit_record
from common.errors import ConflictError, InvalidArgumentError
from common.roles import ROLE_NAMES, Role
from trust_app.concurrency import max_concurrent_calls_problem
from trust_app.models import AccessLevel, Agent, Autonomy, PersonToken
from trust_app.services import tokens as services_tokens
from trust_app.tokens.bearer import PERSON_TOKEN_PREFIX, issue_token

AGENT_NAME_MAX = 100


@dataclass(frozen=True)
class AgentCreated:
    agent: Agent
    token: str


def _choice(value: str, choices: type[Any], field: str) -> str:
    allowed = [c.value for c in choices]
    if value not in allowed:
        raise InvalidArgumentError(f"{field} {value!r} is not one of: {', '.join(allowed)}")
    return value


def groups_ensure() -> list[Group]:
    """The three groups of API.md, created when missing."""
    return [Group.objects.get_or_create(name=role.group)[0] for role in Role]


@transaction.atomic
def agent_create(
    *,
    name: str,
    access_level: str,
    autonomy: str = Autonomy.SEMI,
    workspace: str | None = None,
    owner: Any | None = None,
    actor: Actor | None = None,
    max_concurrent_calls: int | None = None,
    team: str | None = None,
) -> AgentCreated:
    """Create an agent and its first token; the token's plaintext is returned once.

    ``max_concurrent_calls`` caps its calls at once (None: the console default);
    ``team`` names its team (None: the default team).
    """
    from trust_app.selectors.teams import team_by_name, team_default

    name = name.strip()
    if not name or len(name) > AGENT_NAME_MAX:
        raise InvalidArgumentError(f"agent name must be 1 to {AGENT_NAME_MAX} characters")
    _choice(access_level, AccessLevel, "access level")
    _choice(autonomy, Autonomy, "autonomy")
    from django.conf import settings

    problem = max_concurrent_calls_problem(
        max_concurrent_calls, default=settings.SYNTHORG_AGENT_MAX_CONCURRENT_CALLS
    )
    if problem:
        raise InvalidArgumentError(
            f"max_concurrent_calls: {problem}",
            details={"problems": {"max_concurrent_calls": problem}},
        )
    if Agent.objects.filter(name=name).exists():
        raise ConflictError(f"an agent named {name!r} already exists")
    home = team_default() if team is None else team_by_name(team)
    if home is None:
        raise InvalidArgumentError(f"no team named {team!r}: create it first")

    workspace_path = Path(workspace or Path(settings.VAR_DIR) / "workspaces" / name).resolve()
    if not workspace_path.exists():
        # Private: the console's user, and the sandbox user's group once granted; no one
        # else on the machine lists or reads an agent's files.
        workspace_path.mkdir(parents=True, mode=0o700)
        workspace_path.chmod(0o700)
        workspace_grant(workspace_path)
    agent = Agent.objects.create(
        name=name,
        access_level=access_level,
        autonomy=autonomy,
        workspace=str(workspace_path),
        owner=owner,
        max_concurrent_calls=max_concurrent_calls,
        team=home,
    )
    token = services_tokens.agent_token_create(agent=agent, label="initial").plaintext
    audit_record(
        kind="agent.created",
        actor=actor or Actor.system(),
        agent=agent,
        outcome="created",
        data={
            "access_level": access_level,
            "autonomy": autonomy,
            "workspace": str(workspace_path),
            "owner": owner.get_username() if owner else None,
            "max_concurrent_calls": max_concurrent_calls,
            "team": home.name,
        },
    )
    return AgentCreated(agent=agent, token=token)


def workspace_grant(path: Path) -> None:
    """Let the sandbox user work in a workspace the console just created.

    A directory an admin named that already existed is left as it is: the sandbox
    refuses calls there with the command to grant access instead.
    """
    from common.settings_config import synthorg_config
    from tools_app.sandbox.errors import SandboxUserMissingError
    from tools_app.sandbox.linux.identity import resolve_identity
    from tools_app.sandbox.workspace import grant_workspace

    run_as = synthorg_config().sandboxing.subprocess.run_as_user
    try:
        identity = resolve_identity(run_as, backend="subprocess")
    except SandboxUserMissingError:
        return  # calls will be refused with the reason until the user exists
    if identity.switch:
        grant_workspace(path, identity, writable=True)


# Tokens have their own writers (issue, rotate, revoke); the names stay importable here.
agent_token_issue = services_tokens.agent_token_issue
agent_token_revoke = services_tokens.agent_token_revoke


@transaction.atomic
def person_create(
    *,
    username: str,
    role: str,
    password: str | None,
    superuser: bool = False,
    actor: Actor | None = None,
    team: str | None = None,
) -> Any:
    """Create a person holding ``role`` organisation-wide (in its group), or in ``team``
    when one is named (a superuser may also use /admin/)."""
    from trust_app.models import Team, TeamMembership

    if role not in ROLE_NAMES:
        raise InvalidArgumentError(f"role {role!r} is not one of: {', '.join(ROLE_NAMES)}")
    home = None
    if team is not None:
        home = Team.objects.filter(name=team).first()
        if home is None:
            raise InvalidArgumentError(f"no team named {team!r}: create it first")
    user_model = get_user_model()
    if user_model.objects.filter(username=username).exists():
        raise ConflictError(f"a person named {username!r} already exists")
    user = user_model.objects.create_user(
        username=username, password=password, is_staff=superuser, is_superuser=superuser
    )
    if password is None:
        user.set_unusable_password()
        user.save(update_fields=["password"])
    groups_ensure()
    if home is None:
        user.groups.add(Group.objects.get(name=Role(role).group))
    else:
        TeamMembership.objects.create(person=user, team=home, role=role)
    audit_record(
        kind="person.created",
        actor=actor or Actor.system(),
        outcome="created",
        data={
            "username": username,
            "role": role,
            "team": home.name if home else None,
            "superuser": superuser,
        },
    )
    return user


@transaction.atomic
def person_token_issue(*, person: Any, label: str = "", actor: Actor | None = None) -> str:
    issued = issue_token(PERSON_TOKEN_PREFIX)
    PersonToken.objects.create(
        person=person, public_id=issued.public_id, digest=issued.digest, label=label
    )
    audit_record(
        kind="person.token_issued",
        actor=actor or Actor.person(person),
        outcome="issued",
        data={"person": person.get_username(), "token": issued.public_id},
    )
    return issued.plaintext


def agent_explain(*, agent: Agent, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """The Decision and trace for a hypothetical call; nothing is run or recorded."""
    from tools_app.decision import call_contract, unplaced
    from tools_app.registry import tool_catalog, tool_view
    from tools_app.selectors.invocations import disabled_tool_keys
    from trust_app.policy import decide, name_key
    from trust_app.selectors.agents import agent_policy

    contract = tool_catalog().contract(tool)
    if contract is None:
        raise InvalidArgumentError(f"unknown tool {tool!r}")
    # The call's own action type, as a live call is decided with it.
    contract, unresolved = call_contract(contract, arguments)
    enabled = name_key(contract.name) not in disabled_tool_keys()
    decision = unplaced(
        decide(agent_policy(agent), tool_view(contract, enabled=enabled), arguments), unresolved
    )
    return {"tool": contract.name, "agent": agent.name, "decision": decision.as_dict()}
