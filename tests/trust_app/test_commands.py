"""synthorg_user and synthorg_agent as in API.md: tokens printed once, alone on the last line."""

from __future__ import annotations

from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from django.test import Client

from audit_app.models import AuditEvent
from common.roles import Role, roles_of
from trust_app.models import Agent, AgentToken, PersonToken
from trust_app.tokens.bearer import token_digest

pytestmark = pytest.mark.django_db


def _run(*args: str) -> list[str]:
    out = StringIO()
    call_command(*args, stdout=out)
    return out.getvalue().rstrip("\n").splitlines()


def test_agent_create_prints_its_token_once_and_stores_only_a_digest(tmp_path: object) -> None:
    lines = _run(
        "synthorg_agent", "create", "scout", "--level", "restricted", "--autonomy", "supervised"
    )
    token = lines[-1]
    assert token.startswith("soa_") and " " not in token
    agent = Agent.objects.get(name="scout")
    assert (agent.access_level, agent.autonomy, agent.active) == ("restricted", "supervised", True)
    stored = AgentToken.objects.get(agent=agent)
    assert stored.digest == token_digest(token)
    assert token not in {stored.digest, stored.public_id, stored.label}
    assert AuditEvent.objects.filter(kind="agent.created", agent_name="scout").exists()


def test_agent_create_refuses_an_unknown_level_with_the_allowed_values() -> None:
    with pytest.raises(CommandError) as error:
        call_command("synthorg_agent", "create", "x", "--level", "godmode")
    assert "sandboxed" in str(error.value) and "elevated" in str(error.value)
    assert not Agent.objects.filter(name="x").exists()


def test_agent_create_refuses_a_duplicate_name_and_writes_nothing() -> None:
    _run("synthorg_agent", "create", "twin", "--level", "standard")
    events = AuditEvent.objects.count()
    with pytest.raises(CommandError, match="already exists"):
        call_command("synthorg_agent", "create", "twin", "--level", "standard")
    assert AgentToken.objects.filter(agent__name="twin").count() == 1
    assert AuditEvent.objects.count() == events


def test_agent_create_sets_its_cap_on_calls_at_once_or_leaves_the_default() -> None:
    lines = _run("synthorg_agent", "create", "busy", "--level", "standard",
                 "--max-concurrent-calls", "6")  # fmt: skip
    assert "calls at once: 6" in lines[0]
    assert Agent.objects.get(name="busy").max_concurrent_calls == 6
    lines = _run("synthorg_agent", "create", "usual", "--level", "standard")
    assert "calls at once: default" in lines[0]
    assert Agent.objects.get(name="usual").max_concurrent_calls is None


@pytest.mark.parametrize("cap", ["0", "10001"])
def test_agent_create_refuses_a_cap_out_of_bounds_with_the_allowed_values(cap: str) -> None:
    with pytest.raises(CommandError) as error:
        call_command(
            "synthorg_agent", "create", "over", "--level", "standard",
            "--max-concurrent-calls", cap, stdout=StringIO(),
        )  # fmt: skip
    assert "max_concurrent_calls" in str(error.value) and "1 to 10000" in str(error.value)
    assert not Agent.objects.filter(name="over").exists()


def test_agent_owner_must_exist() -> None:
    with pytest.raises(CommandError, match="no person named"):
        call_command(
            "synthorg_agent", "create", "orphan", "--level", "standard", "--owner", "ghost"
        )


def test_user_create_with_token_prints_it_last_and_the_token_signs_in() -> None:
    lines = _run("synthorg_user", "create", "olga", "--role", "operator", "--token")
    token = lines[-1]
    assert token.startswith("sop_")
    person = get_user_model().objects.get(username="olga")
    assert roles_of(person) == {Role.OPERATOR}
    assert PersonToken.objects.get(person=person).digest == token_digest(token)
    response = Client().get("/", HTTP_AUTHORIZATION=f"Bearer {token}")
    assert response.status_code == 200
    assert b"olga" in response.content


def test_user_create_with_password_can_sign_in() -> None:
    _run("synthorg_user", "create", "ada", "--role", "auditor", "--password", "correct horse 42")
    assert Client().login(username="ada", password="correct horse 42")


def test_a_revoked_or_unknown_person_token_does_not_sign_in() -> None:
    token = _run("synthorg_user", "create", "rex", "--role", "admin", "--token")[-1]
    PersonToken.objects.update(revoked_at="2026-01-01T00:00:00Z")
    for bearer in (token, token[:-2] + "xx", "sop_nothing"):
        response = Client().get("/", HTTP_AUTHORIZATION=f"Bearer {bearer}")
        assert response.status_code == 302
        assert response["Location"].startswith("/accounts/login/")
