"""The permission preview replays an agent's recent calls against candidate settings.

The history is made of real calls through the agent API of a real daphne, run by a
real Celery worker; the preview decides each again with the same code as a live call.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import httpx
import pytest
from django.conf import settings as django_settings
from django.test import Client

from common.settings_config import config_reload
from common.testing import RunningProcess, free_port
from tests.browser.test_inbox_reconnect import daphne_on
from tests.common.permission_suite import signed_in
from tools_app.models import Invocation
from trust_app.models import Agent, AgentPermissions
from trust_app.policy.replay import CallReplay, Change
from trust_app.services.agents import agent_create, person_create
from trust_app.services.permissions import (
    AgentPermissionsState,
    agent_permissions_replay,
    agent_permissions_state,
)

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]
WEIGHTED_FROM_SANDBOXED = "trust:\n  strategy: weighted\n  initial_level: sandboxed\n"


@dataclass
class History:
    agent: Agent
    calls: dict[str, list[dict[str, Any]]]

    @property
    def state(self) -> AgentPermissionsState:
        return agent_permissions_state(Agent.objects.get(pk=self.agent.pk))

    def replay(self, **changes: Any) -> CallReplay:
        agent = Agent.objects.get(pk=self.agent.pk)
        return agent_permissions_replay(agent=agent, proposal=replace(self.state, **changes))


def _agent(base: str, *, level: str, autonomy: str, denied: list[str]) -> tuple[Agent, Any]:
    created = agent_create(
        name=f"replayed-{uuid.uuid4().hex[:8]}", access_level=level, autonomy=autonomy
    )
    if denied:
        AgentPermissions.objects.create(agent=created.agent, denied=denied)
    http = httpx.Client(
        base_url=base, headers={"Authorization": f"Bearer {created.token}"}, timeout=90
    )
    return created.agent, http


def _call(http: httpx.Client, tool: str, arguments: dict[str, Any], **body: Any) -> dict[str, Any]:
    answer = http.post("/api/v1/invocations/", json={"tool": tool, "arguments": arguments, **body})
    assert answer.status_code == 201, answer.text
    return dict(answer.json())


@pytest.fixture
def history(daphne_server: str, celery_worker_process: RunningProcess) -> Iterator[History]:
    """A supervised agent's week: two reads that ran, a write that asked a person, and a
    call of a tool on its denied list."""
    agent, http = _agent(
        daphne_server, level="standard", autonomy="supervised", denied=["test_sleep"]
    )
    calls: dict[str, list[dict[str, Any]]] = {"ran": [], "asked": [], "refused": []}
    with http:
        for text in ("first", "second"):
            calls["ran"].append(_call(http, "test_echo", {"text": text}, wait=30))
        calls["asked"].append(_call(http, "test_counter", {"text": "w1"}))
        calls["refused"].append(_call(http, "test_sleep", {"seconds": 1}))
    assert [c["status"] for c in calls["ran"]] == ["succeeded", "succeeded"], calls["ran"]
    assert [c["status"] for c in calls["asked"]] == ["pending_approval"]
    assert [c["status"] for c in calls["refused"]] == ["denied"]
    yield History(agent, calls)


def _counts(replay: CallReplay) -> dict[str, int]:
    return {change.value: replay.counts.get(change, 0) for change in Change}


def test_a_candidate_refusing_a_tool_counts_its_calls_and_names_an_example(
    history: History,
) -> None:
    replay = history.replay(denied=("test_sleep", "test_echo"))
    assert replay.replayed == 4 and not replay.capped
    assert _counts(replay) == {"refused": 2, "reachable": 0, "stops_asking": 0, "starts_asking": 0}
    examples = replay.examples[Change.REFUSED]
    assert {e.invocation_id for e in examples} == {c["id"] for c in history.calls["ran"]}
    assert {e.tool for e in examples} == {"test_echo"}
    assert "denied list" in examples[0].reason
    # Nothing was written: the calls keep what happened to them.
    assert Invocation.objects.filter(agent=history.agent, status="succeeded").count() == 2


def test_a_candidate_allowing_a_refused_tool_makes_its_calls_reachable(history: History) -> None:
    replay = history.replay(denied=())
    assert _counts(replay) == {"refused": 0, "reachable": 1, "stops_asking": 0, "starts_asking": 0}
    (example,) = replay.examples[Change.REACHABLE]
    assert example.invocation_id == history.calls["refused"][0]["id"]
    assert example.tool == "test_sleep"


def test_a_lighter_autonomy_stops_asking_and_a_heavier_one_starts(history: History) -> None:
    lighter = history.replay(autonomy="full")
    assert _counts(lighter) == {"refused": 0, "reachable": 0, "stops_asking": 1, "starts_asking": 0}
    assert lighter.examples[Change.STOPS_ASKING][0].invocation_id == history.calls["asked"][0]["id"]
    heavier = history.replay(autonomy="locked")
    assert _counts(heavier) == {"refused": 0, "reachable": 0, "stops_asking": 0, "starts_asking": 2}


def test_the_current_settings_as_candidate_change_nothing(history: History) -> None:
    replay = history.replay()
    assert replay.replayed == 4
    assert _counts(replay) == {"refused": 0, "reachable": 0, "stops_asking": 0, "starts_asking": 0}
    assert replay.drifted == 0 and replay.held == 0 and not replay.moot


def test_a_change_made_since_for_another_reason_is_not_credited_to_the_edit(
    history: History,
) -> None:
    """The admin's own earlier edit (test_echo denied now) is drift, not this candidate's."""
    AgentPermissions.objects.filter(agent=history.agent).update(denied=["test_sleep", "test_echo"])
    replay = history.replay()
    assert _counts(replay) == {"refused": 0, "reachable": 0, "stops_asking": 0, "starts_asking": 0}
    assert replay.drifted == 2
    # Control: taking test_echo off again is this candidate's change, and restores "then".
    restored = history.replay(denied=("test_sleep",))
    assert _counts(restored)["refused"] == 0 and restored.drifted == 2


def test_only_the_newest_calls_are_replayed_past_the_limit(history: History, settings: Any) -> None:
    settings.SYNTHORG_PERMISSION_REPLAY_CALLS = 3
    replay = history.replay(denied=("test_sleep", "test_echo"))
    assert replay.capped and replay.replayed == 3 and replay.limit == 3
    # The oldest call, the first echo, was left out.
    assert _counts(replay)["refused"] == 1
    assert replay.examples[Change.REFUSED][0].invocation_id == history.calls["ran"][1]["id"]
    person_create(username="replay-admin-3", role="admin", password=None)
    html = (
        signed_in("replay-admin-3")
        .post(
            f"/agents/{history.agent.id}/edit/",
            {"access_level": "standard", "autonomy": "supervised", "action": "preview"},
        )
        .content.decode()
    )
    assert "3 calls of " + history.agent.name in html
    assert '<strong id="replay-capped">only the newest 3</strong>' in html


def test_the_preview_page_shows_the_counts_and_examples(history: History) -> None:
    person_create(username="replay-admin", role="admin", password=None)
    admin: Client = signed_in("replay-admin")
    response = admin.post(
        f"/agents/{history.agent.id}/edit/",
        {
            "access_level": "standard",
            "autonomy": "supervised",
            "denied": "test_sleep\ntest_echo",
            "action": "preview",
        },
    )
    html = response.content.decode()
    assert response.status_code == 200, html[-2000:]
    assert 'id="replay"' in html
    assert '<li data-change="refused"><strong class="count">2</strong>' in html
    assert '<li data-change="reachable"><strong class="count">0</strong>' in html
    assert f"/audit/invocations/{history.calls['ran'][0]['id']}/" in html
    assert "only the newest" not in html


@pytest.fixture
def weighted(tmp_path: Path, settings: Any) -> Iterator[Path]:
    """Trust that holds every agent at sandboxed, here and in the test's own daphne."""
    original = django_settings.SYNTHORG_CONFIG
    path = tmp_path / "synthorg-weighted.yaml"
    path.write_text(WEIGHTED_FROM_SANDBOXED)
    settings.SYNTHORG_CONFIG = str(path)
    config_reload()
    yield path
    settings.SYNTHORG_CONFIG = original
    config_reload()


def _terminal_history(base: str) -> History:
    agent, http = _agent(base, level="restricted", autonomy="full", denied=[])
    with http:
        refused = _call(http, "shell_command", {"argv": ["ls"]})
    assert refused["status"] == "denied", refused
    return History(agent, {"refused": [refused]})


def test_trust_makes_a_raised_level_moot_and_the_page_says_so(
    test_env: dict[str, str], tmp_path: Path, weighted: Path
) -> None:
    env = {**test_env, "SYNTHORG_CONFIG": str(weighted)}
    with daphne_on(free_port(), env, tmp_path / "daphne.log") as base:
        held = _terminal_history(base)
    replay = held.replay(access_level="elevated")
    assert _counts(replay) == {"refused": 0, "reachable": 0, "stops_asking": 0, "starts_asking": 0}
    assert replay.held == 1 and replay.moot and replay.held_at == "sandboxed"
    assert replay.held_examples[0].tool == "shell_command"
    person_create(username="replay-admin-2", role="admin", password=None)
    html = (
        signed_in("replay-admin-2")
        .post(
            f"/agents/{held.agent.id}/edit/",
            {"access_level": "elevated", "autonomy": "full", "action": "preview"},
        )
        .content.decode()
    )
    assert "Trust makes this change moot for these calls" in html
    assert "trust holds " + held.agent.name + " at sandboxed" in html


def test_without_trust_the_same_raise_makes_the_call_reachable(daphne_server: str) -> None:
    """Control for the test above: the stock config, where trust holds no one."""
    free = _terminal_history(daphne_server)
    replay = free.replay(access_level="elevated")
    assert _counts(replay)["reachable"] == 1
    assert replay.held == 0 and not replay.moot
