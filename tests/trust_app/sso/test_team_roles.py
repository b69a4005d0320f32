"""Single sign-on and teams, with the real test provider: a provider group mapped to a
role in a team (``people.oidc.team_roles``) gives that role there and nowhere else, and
follows the provider at each sign-in; the mapping is checked at load."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from django.conf import settings
from django.contrib.auth import get_user_model
from django.test import Client
from pydantic import ValidationError

from audit_app.models import AuditEvent
from common.config.people import OidcSection
from common.roles import Role, org_roles_of, roles_of
from common.settings_config import config_reload
from tests.support.oidc.provider import TestProvider
from tests.trust_app.sso.conftest import CALLBACK, SECRET_ENV, SIGNED_OUT
from tests.trust_app.sso.test_sign_in import _sign_in
from tools_app.services.invocation_submit import CallRequest, invocation_submit
from trust_app.models import Team
from trust_app.selectors.teams import team_memberships
from trust_app.services.agents import agent_create
from trust_app.services.teams import team_create
from trust_app.sso.provider import forget_clients

ACCOUNTS: dict[str, dict[str, Any]] = {
    "dora": {"preferred_username": "dora-sso", "groups": ["research-ops", "staff"]},
    "ned": {"preferred_username": "ned-sso", "groups": ["console-operators"]},
}
OIDC = {
    "scopes": ["openid", "profile", "email", "groups"],
    "roles": {"console-operators": "operator"},
    "team_roles": {
        "research-ops": {"team": "research", "role": "operator"},
        "platform-ops": {"team": "platform", "role": "operator"},
    },
}


@pytest.fixture
def team_console(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[TestProvider]:
    with TestProvider(
        accounts=ACCOUNTS, redirect_uris=[CALLBACK], post_logout_redirect_uris=[SIGNED_OUT]
    ) as provider:
        monkeypatch.setenv(SECRET_ENV, provider.client_secret)
        oidc = {"issuer": provider.issuer, "client_id": provider.client_id,
                "client_secret_env": SECRET_ENV, **OIDC}  # fmt: skip
        path = tmp_path / "synthorg.yaml"
        path.write_text(yaml.safe_dump({"people": {"oidc": oidc}}))
        settings.SYNTHORG_CONFIG = str(path)
        config_reload()
        forget_clients()
        yield provider
        forget_clients()


def _pending(team: str) -> str:
    agent = agent_create(
        name=f"{team}-bot-{uuid.uuid4().hex[:6]}", access_level="standard", autonomy="locked",
        team=team,
    ).agent  # fmt: skip
    call = CallRequest(tool="test_echo", arguments={"text": team})
    return str(invocation_submit(agent=agent, call=call).invocation.approval.id)


def _listed(console: Client) -> set[str]:
    answer = console.get("/api/v1/approvals/", {"status": "pending"})
    assert answer.status_code == 200, answer.content[:300]
    return {row["id"] for row in answer.json()["results"]}


@pytest.mark.integration
@pytest.mark.django_db(transaction=True)
def test_a_group_mapped_to_a_team_role_gives_that_role_in_that_team_only(
    team_console: TestProvider,
) -> None:
    dora = Client()
    assert _sign_in(dora, "dora").status_code == 302
    person = get_user_model().objects.get(username="dora-sso")
    # The team the mapping names is made at the first sign-in that needs it.
    assert Team.objects.filter(name="research").exists()
    assert org_roles_of(person) == frozenset() and roles_of(person) == {Role.OPERATOR}
    assert team_memberships(person) == [("research", "operator")]

    team_create(name="platform")
    research, platform = _pending("research"), _pending("platform")
    assert _listed(dora) == {research}
    assert dora.get(f"/approvals/{platform}/call/").status_code == 404
    assert dora.get(f"/approvals/{research}/call/").status_code == 200
    # Control: a group mapped organisation-wide sees every team's.
    ned = Client()
    assert _sign_in(ned, "ned").status_code == 302
    assert _listed(ned) == {research, platform}

    # The provider moves dora to the platform team: her next sign-in follows, audited.
    team_console.restart({**ACCOUNTS, "dora": {**ACCOUNTS["dora"], "groups": ["platform-ops"]}})
    dora = Client()
    assert _sign_in(dora, "dora").status_code == 302
    person = get_user_model().objects.get(username="dora-sso")
    assert team_memberships(person) == [("platform", "operator")]
    assert _listed(dora) == {platform}
    change = AuditEvent.objects.filter(kind="person.team_roles_changed").order_by("-id").first()
    assert change is not None
    assert (change.data["from"], change.data["to"]) == (
        ["operator@research"],
        ["operator@platform"],
    )


def _oidc(**extra: Any) -> dict[str, Any]:
    return {"issuer": "http://127.0.0.1:1", "client_id": "c", "client_secret_env": "S", **extra}


def test_a_team_mapping_is_checked_at_load() -> None:
    with pytest.raises(ValidationError, match="roles are operator, admin, auditor"):
        OidcSection.model_validate(_oidc(team_roles={"g": {"team": "research", "role": "boss"}}))
    with pytest.raises(ValidationError, match="not a team name"):
        OidcSection.model_validate(_oidc(team_roles={"g": {"team": "Research!", "role": "admin"}}))
    with pytest.raises(ValidationError, match="map at least one"):
        OidcSection.model_validate(_oidc())
    # Control: a team mapping alone is enough.
    section = OidcSection.model_validate(
        _oidc(team_roles={"g": {"team": "research", "role": "auditor"}})
    )
    assert section.team_roles["g"].role == "auditor" and section.roles == {}
