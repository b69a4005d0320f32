"""The demo organisation `make run` starts with: three people, two teams and a few agents.

The agents are split between the teams ``research`` and ``platform``; the demo's three
people hold their roles organisation-wide, so each sees every agent (a person of one
team is added with ``synthorg_user create NAME --role operator --team research``).

Every access level asks for containerized code execution by default, and the demo
machine has no Docker engine, so the demo's code-running agents accept namespace
isolation instead (``code_execution: namespace`` on the agent, visible and editable
on its page and audited like any admin change): code_runner then runs in the
bubblewrap sandbox, which the default config gives the code_execution category.
An installation with Docker keeps ``containerized`` by not seeding the demo.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from pathlib import Path

from django.contrib.auth import get_user_model
from django.db import transaction

from audit_app.record import Actor
from common.roles import Role
from trust_app.models import Agent, Team
from trust_app.services.agents import agent_create, groups_ensure, person_create
from trust_app.services.permissions import agent_permissions_update
from trust_app.services.teams import team_create

DEMO_PEOPLE = (("admin", Role.ADMIN), ("operator", Role.OPERATOR), ("auditor", Role.AUDITOR))
DEMO_TEAMS = ("research", "platform")
DEMO_AGENTS = (
    ("research-bot", "restricted", "semi", "research"),
    ("build-bot", "standard", "semi", "platform"),
    ("ops-bot", "elevated", "supervised", "platform"),
    ("intern-bot", "sandboxed", "locked", "research"),
)
# The weakest isolation the demo agents' code may run under (see the module note).
DEMO_CODE_EXECUTION = "namespace"


@dataclass(frozen=True)
class DemoCredential:
    kind: str
    name: str
    secret: str

    def line(self) -> str:
        return f"{self.kind} {self.name} {self.secret}"


@transaction.atomic
def demo_seed(*, owner_name: str = "admin") -> list[DemoCredential]:
    """Create what is missing and return credentials for what was created now."""
    groups_ensure()
    created: list[DemoCredential] = []
    users = get_user_model().objects
    for username, role in DEMO_PEOPLE:
        if not users.filter(username=username).exists():
            password = secrets.token_urlsafe(12)
            # The demo admin may also open Django's /admin/.
            person_create(
                username=username,
                role=role.value,
                password=password,
                superuser=role is Role.ADMIN,
            )
            created.append(DemoCredential(role.value, username, password))
    owner = users.filter(username=owner_name).first()
    for team in DEMO_TEAMS:
        if not Team.objects.filter(name=team).exists():
            team_create(name=team, actor=Actor.system("demo seed"))
    for name, level, autonomy, team in DEMO_AGENTS:
        if not Agent.objects.filter(name=name).exists():
            made = agent_create(
                name=name, access_level=level, autonomy=autonomy, owner=owner, team=team
            )
            agent_permissions_update(
                agent=made.agent,
                actor=Actor.system("demo seed"),
                access_level=level,
                autonomy=autonomy,
                allowed=(),
                denied=(),
                sub_constraints={"code_execution": DEMO_CODE_EXECUTION},
                max_concurrent_calls=None,
            )
            created.append(DemoCredential("agent", name, made.token))
    return created


def credentials_write(path: Path, credentials: list[DemoCredential]) -> None:
    """Write people first, then agents, one per line; readable by the owner only."""
    people = [c for c in credentials if c.kind != "agent"]
    agents = [c for c in credentials if c.kind == "agent"]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.touch(mode=0o600, exist_ok=True)
    path.chmod(0o600)
    path.write_text("".join(c.line() + "\n" for c in people + agents))


def credentials_read(path: Path) -> list[DemoCredential]:
    if not path.exists():
        return []
    lines = [line.split(" ", 2) for line in path.read_text().splitlines() if line.strip()]
    return [DemoCredential(*parts) for parts in lines if len(parts) == 3]
