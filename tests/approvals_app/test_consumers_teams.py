"""The operators' socket and teams, over a real daphne: an operator of team-a never
receives team-b's requests (on connect or as they come), and each receives their own."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from websockets.sync.client import ClientConnection, connect
from websockets.typing import Origin

from tests.approvals_app.conftest import PASSWORD
from trust_app.models import Agent
from trust_app.services.agents import agent_create, person_create
from trust_app.services.teams import team_create

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

WAIT = 30  # seconds a frame may take on a slow shared machine


def _operator_of(team: str) -> str:
    """A session cookie of a new operator of ``team``."""
    username = f"{team}-op-{uuid.uuid4().hex[:6]}"
    person_create(username=username, role="operator", password=PASSWORD, team=team)
    client = Client()
    assert client.login(username=username, password=PASSWORD)
    return f"sessionid={client.cookies['sessionid'].value}"


def _open(base: str, cookie: str) -> ClientConnection:
    return connect(
        base.replace("http://", "ws://") + "/ws/approvals/?view=inbox",
        origin=Origin(base),
        additional_headers={"Cookie": cookie},
        open_timeout=WAIT,
    )


def _until(socket: ClientConnection, seen: list[str], wanted: str) -> None:
    """Read frames into ``seen`` until one holds ``wanted``."""
    while True:
        frame = str(socket.recv(timeout=WAIT))
        seen.append(frame)
        if wanted in frame:
            return


def test_an_operator_of_one_team_never_receives_another_teams_requests(
    daphne_server: str, submit: Callable[..., Any]
) -> None:
    agents: dict[str, Agent] = {}
    for team in ("team-a", "team-b"):
        team_create(name=team)
        made = agent_create(
            name=f"{team}-bot-{uuid.uuid4().hex[:6]}",
            access_level="standard",
            autonomy="locked",
            team=team,
        )
        agents[team] = made.agent
    waiting = {team: str(submit(agent).approval.id) for team, agent in agents.items()}
    cookies = {team: _operator_of(team) for team in agents}

    with _open(daphne_server, cookies["team-a"]) as a, _open(daphne_server, cookies["team-b"]) as b:
        seen: dict[str, list[str]] = {"team-a": [], "team-b": []}
        # On connect: each inbox holds its own team's request (control) and not the other's.
        _until(a, seen["team-a"], waiting["team-a"])
        _until(b, seen["team-b"], waiting["team-b"])
        assert waiting["team-b"] not in "".join(seen["team-a"])
        assert waiting["team-a"] not in "".join(seen["team-b"])

        # As they come: team-b's new request reaches team-b's operator...
        new_b = str(submit(agents["team-b"]).approval.id)
        _until(b, seen["team-b"], new_b)
        # ...and then team-a's reaches team-a's operator, whose socket would have had
        # team-b's first (one group, in order): nothing of it came.
        new_a = str(submit(agents["team-a"]).approval.id)
        _until(a, seen["team-a"], new_a)
        a_frames = "".join(seen["team-a"])
        assert new_b not in a_frames and agents["team-b"].name not in a_frames
        # And the other way round: team-b's socket, past team-a's change, never had it.
        again_b = str(submit(agents["team-b"]).approval.id)
        _until(b, seen["team-b"], again_b)
        b_frames = "".join(seen["team-b"])
        assert new_a not in b_frames and agents["team-a"].name not in b_frames


def test_an_organisation_wide_operator_receives_every_teams_requests(
    daphne_server: str, submit: Callable[..., Any]
) -> None:
    team_create(name="team-c")
    agent = agent_create(
        name=f"team-c-bot-{uuid.uuid4().hex[:6]}", access_level="standard", autonomy="locked",
        team="team-c",
    ).agent  # fmt: skip
    username = f"org-op-{uuid.uuid4().hex[:6]}"
    person_create(username=username, role="operator", password=PASSWORD)
    client = Client()
    assert client.login(username=username, password=PASSWORD)
    assert get_user_model().objects.filter(username=username).exists()
    with _open(daphne_server, f"sessionid={client.cookies['sessionid'].value}") as socket:
        seen: list[str] = []
        _until(socket, seen, 'id="approval-inbox"')
        new = str(submit(agent).approval.id)
        _until(socket, seen, new)
