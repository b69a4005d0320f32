"""The demo organisation `make run` starts with: three people and a few agents."""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from pathlib import Path

from django.contrib.auth import get_user_model
from django.db import transaction

from common.roles import Role
from trust_app.models import Agent
from trust_app.services import agent_create, groups_ensure, person_create

DEMO_PEOPLE = (("admin", Role.ADMIN), ("operator", Role.OPERATOR), ("auditor", Role.AUDITOR))
DEMO_AGENTS = (
    ("research-bot", "restricted", "semi"),
    ("build-bot", "standard", "semi"),
    ("ops-bot", "elevated", "supervised"),
    ("intern-bot", "sandboxed", "locked"),
)


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
    for name, level, autonomy in DEMO_AGENTS:
        if not Agent.objects.filter(name=name).exists():
            made = agent_create(name=name, access_level=level, autonomy=autonomy, owner=owner)
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
