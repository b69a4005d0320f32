"""Agents-as-code and teams: ``team`` moves an agent, its absence leaves it where it is,
an unknown team is refused by field; the team command makes teams and memberships."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
import yaml
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command

from audit_app.models import AuditEvent
from common.roles import Role, org_roles_of, roles_of, team_roles_of
from trust_app.models import DEFAULT_TEAM_NAME, Agent
from trust_app.services.agents import agent_create, person_create
from trust_app.services.teams import team_create

pytestmark = pytest.mark.django_db


def run(command: str, *args: str) -> str:
    out = io.StringIO()
    call_command(command, *args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


def write(path: Path, *entries: dict[str, object]) -> str:
    path.write_text(yaml.safe_dump({"agents": list(entries)}))
    return str(path)


def test_team_moves_an_agent_and_leaving_it_out_keeps_it(tmp_path: Path) -> None:
    team_create(name="payments")
    agent_create(name="pay-bot", access_level="standard")
    assert Agent.objects.get(name="pay-bot").team.name == DEFAULT_TEAM_NAME

    exported = tmp_path / "export.yaml"
    run("synthorg_agents", "export", str(exported))
    [entry] = yaml.safe_load(exported.read_text())["agents"]
    assert entry["team"] == DEFAULT_TEAM_NAME

    moved = write(tmp_path / "a.yaml", {"name": "pay-bot", "access_level": "standard",
                                        "team": "payments"})  # fmt: skip
    plan = run("synthorg_agents", "apply", moved)
    assert "pay-bot: 'default' -> 'payments'" in plan, plan
    assert Agent.objects.get(name="pay-bot").team.name == "payments"
    assert AuditEvent.objects.filter(kind="agent.team_changed", agent_name="pay-bot").exists()

    # Absent: left unchanged (and said so); a new agent without one joins the default team.
    kept = write(tmp_path / "b.yaml", {"name": "pay-bot", "access_level": "standard"},
                 {"name": "new-bot", "access_level": "restricted"})  # fmt: skip
    plan = run("synthorg_agents", "apply", kept)
    assert "pay-bot: autonomy, owner, team," in plan, plan
    assert Agent.objects.get(name="pay-bot").team.name == "payments"
    assert Agent.objects.get(name="new-bot").team.name == DEFAULT_TEAM_NAME


def test_an_unknown_team_is_refused_by_field_and_nothing_changes(tmp_path: Path) -> None:
    agent_create(name="pay-bot", access_level="standard")
    wrong = write(tmp_path / "a.yaml", {"name": "pay-bot", "access_level": "standard",
                                        "team": "nowhere"})  # fmt: skip
    with pytest.raises(CommandError, match=r"agents\[0\]\.team.*no team named 'nowhere'"):
        run("synthorg_agents", "apply", wrong)
    assert Agent.objects.get(name="pay-bot").team.name == DEFAULT_TEAM_NAME
    # Control: once the team exists, the same file applies.
    team_create(name="nowhere")
    run("synthorg_agents", "apply", wrong)
    assert Agent.objects.get(name="pay-bot").team.name == "nowhere"


def test_the_team_command_makes_teams_memberships_and_moves(tmp_path: Path) -> None:
    assert "created team research" in run("synthorg_team", "create", "research")
    with pytest.raises(CommandError, match="already exists"):
        run("synthorg_team", "create", "research")
    with pytest.raises(CommandError, match="team name"):
        run("synthorg_team", "create", "Not A Name")
    person = person_create(username="rita", role="operator", password=None, team="research")
    assert org_roles_of(person) == frozenset() and roles_of(person) == {Role.OPERATOR}
    assert "rita is admin of research" in run(
        "synthorg_team", "add", "rita", "--team", "research", "--role", "admin"
    )
    person = get_user_model().objects.get(username="rita")  # roles are read once per object
    assert set(next(iter(team_roles_of(person).values()))) == {Role.OPERATOR, Role.ADMIN}
    agent_create(name="lab-bot", access_level="standard")
    assert "moved lab-bot to team research" in run(
        "synthorg_team", "move", "lab-bot", "--team", "research"
    )
    listing = run("synthorg_team", "list")
    assert "research: agents [lab-bot]" in listing and "admin rita" in listing
    assert "rita is no longer admin of research" in run(
        "synthorg_team", "remove", "rita", "--team", "research", "--role", "admin"
    )
    with pytest.raises(CommandError, match="no team named 'elsewhere'"):
        run("synthorg_team", "add", "rita", "--team", "elsewhere", "--role", "operator")
