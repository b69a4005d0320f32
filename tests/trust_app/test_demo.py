"""synthorg_demo: idempotent, and the credentials it writes sign people in."""

from __future__ import annotations

from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.test import Client

from trust_app.auth import agent_for_token
from trust_app.models import Agent

pytestmark = pytest.mark.django_db


def test_demo_seeds_once_and_its_credentials_work(var_dir: Path) -> None:
    credentials = var_dir / "demo-credentials.txt"
    credentials.unlink(missing_ok=True)
    out = StringIO()
    call_command("synthorg_demo", stdout=out)
    lines = credentials.read_text().splitlines()
    people = [line.split(" ") for line in lines if not line.startswith("agent ")]
    agents = [line.split(" ") for line in lines if line.startswith("agent ")]
    assert [p[0] for p in people] == ["admin", "operator", "auditor"]
    assert lines[: len(people)] == [" ".join(p) for p in people], "people come first"
    assert len(agents) >= 3
    for role, username, password in people:
        assert role in out.getvalue() and password in out.getvalue()
        client = Client()
        assert client.login(username=username, password=password)
        page = client.get("/")
        assert page.status_code == 200
        assert f'class="role role-{role}"'.encode() in page.content
    for _, name, token in agents:
        found = agent_for_token(token)
        assert found is not None and found.name == name
    # Two teams hold the agents; the demo's people see both (organisation-wide roles).
    teams = set(Agent.objects.values_list("team__name", flat=True))
    assert teams == {"research", "platform"}
    assert oct(credentials.stat().st_mode & 0o777) == "0o600"

    again = StringIO()
    call_command("synthorg_demo", stdout=again)
    assert "already seeded" in again.getvalue()
    assert credentials.read_text().splitlines() == lines
    assert Agent.objects.count() == len(agents)
