"""Notification channels per team: a channel naming teams hears only of the requests of
those teams' agents; one naming none hears of every team's."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from approvals_app.models import ApprovalRequest
from common.config import ConfigError, parse_config
from notifications_app.models import Notification
from trust_app.services.agents import agent_create
from trust_app.services.teams import team_create

pytestmark = pytest.mark.django_db


def mail(name: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "type": "email", "to": [f"{name}@example.org"], **extra}


def test_a_channel_hears_only_of_its_teams_requests(
    channels: Callable[..., None], submit: Callable[..., Any]
) -> None:
    channels(mail("a-desk", teams=["team-a"]), mail("b-desk", teams=["team-b"]), mail("everyone"))
    asked: dict[str, str] = {}
    for team in ("team-a", "team-b"):
        team_create(name=team)
        agent = agent_create(
            name=f"{team}-bot", access_level="standard", autonomy="locked", team=team
        ).agent
        request = ApprovalRequest.objects.get(invocation=submit(agent))
        asked[team] = str(request.id)

    def heard(channel: str) -> set[str]:
        rows = Notification.objects.filter(channel=channel, event="new")
        return {str(i) for i in rows.values_list("approval_id", flat=True)}

    assert heard("a-desk") == {asked["team-a"]}
    assert heard("b-desk") == {asked["team-b"]}
    assert heard("everyone") == set(asked.values())  # control: no teams named, every team's
    facts = Notification.objects.get(channel="a-desk").facts
    assert facts["team"] == "team-a"


def test_a_team_that_is_not_a_name_is_refused_at_load() -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config({"notifications": {"channels": [mail("desk", teams=["Team A"])]}}, source="t")
    found = str(caught.value)
    assert "channels[0].email.teams" in found and "not a team name" in found
    # Control: a team name is taken.
    parse_config({"notifications": {"channels": [mail("desk", teams=["team-a"])]}}, source="t")
