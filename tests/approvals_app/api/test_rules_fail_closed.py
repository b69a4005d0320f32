"""Approval rules and grants through the public API, against a real daphne and worker.

A grant for ``notes/*`` covers ``notes/b`` but never ``notes/../anything``; a deny
rule whose argument the call leaves out still denies, and an auto-approve rule
whose argument is left out does not approve. The module starts its own pair with
a config holding those rules (``tests.support.pipeline``).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.pipeline import Pipeline, configured_pipeline
from tests.tools_app.api import conftest as api_fixtures
from tests.tools_app.api.conftest import AgentClient
from trust_app.services.agents import person_create, person_token_issue

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

make_agent = api_fixtures.make_agent

CONFIG: dict[str, Any] = {
    # supervised asks people for every call no rule approves (no read-only shortcut),
    # so an auto-approve rule that does not apply leaves the call waiting.
    "autonomy": {"presets": {"supervised": {"unlisted": "human_approval"}}},
    "approval": {
        "rules": [
            {
                "name": "secret-text",
                "match": {
                    "tool": "test_echo",
                    "arguments": [{"field": "text", "path": "secret/*"}],
                },
                "disposition": "deny",
                "reason": "texts under secret/ are refused",
            },
            {
                "name": "drafts",
                "match": {
                    "tool": "test_bad_output",
                    "arguments": [{"field": "text", "path": "drafts/*"}],
                },
                "disposition": "auto_approve",
            },
        ]
    },
}


@pytest.fixture(scope="module")
def pipeline(
    test_env: dict[str, str], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Pipeline]:
    root = tmp_path_factory.mktemp("rules-pipeline")
    with configured_pipeline(test_env, root, CONFIG, redis_db=12) as started:
        yield started


@pytest.fixture(scope="module")
def daphne_server(pipeline: Pipeline) -> str:
    return pipeline.url


@pytest.fixture(autouse=True)
def _settled(pipeline: Pipeline) -> Iterator[None]:
    yield
    pipeline.settle()


@pytest.fixture
def operator(daphne_server: str) -> Iterator[httpx.Client]:
    person = person_create(username=f"op-{uuid.uuid4().hex[:8]}", role="operator", password=None)
    token = person_token_issue(person=person)
    with httpx.Client(
        base_url=daphne_server, headers={"Authorization": f"Bearer {token}"}, timeout=60
    ) as client:
        yield client


def called(client: AgentClient, tool: str, arguments: dict[str, Any], wait: int = 30) -> Any:
    response = client.call(tool, arguments, wait=wait)
    assert response.status_code in (200, 201), response.text
    return response.json()


def test_a_path_grant_never_covers_a_path_that_leaves_it(
    make_agent: Callable[..., AgentClient], operator: httpx.Client
) -> None:
    agent = make_agent("standard", autonomy="locked")
    notes = Path(agent.agent.workspace) / "notes"
    notes.mkdir()
    (notes / "a").write_text("first note")
    (notes / "b").write_text("second note")
    (Path(agent.agent.workspace) / "private.txt").write_text("not granted")

    first = called(agent, "read_file", {"path": "notes/a"}, wait=0)
    assert first["status"] == "pending_approval", first
    decided = operator.post(
        f"/api/v1/approvals/{first['approval']['id']}/decide/",
        json={"decision": "approve", "reason": "notes are fine",
              "remember": {"minutes": 10, "pattern": {"path": "notes/*"}}},
    )  # fmt: skip
    assert decided.status_code == 200, decided.text

    # Positive control: another note is approved by the grant and runs.
    covered = called(agent, "read_file", {"path": "notes/b"})
    assert covered["decision"]["rule"].startswith("grant:"), covered
    assert covered["status"] == "succeeded" and "second note" in covered["result"]["content"]

    for escape in ("notes/../private.txt", "./notes/../private.txt", "notes/%2e%2e/private.txt"):
        asked = called(agent, "read_file", {"path": escape}, wait=0)
        assert asked["status"] in ("pending_approval", "denied"), (escape, asked)
        assert not asked["decision"]["rule"].startswith("grant:"), (escape, asked)


def test_an_omitted_argument_still_meets_a_deny_rule(
    make_agent: Callable[..., AgentClient],
) -> None:
    agent = make_agent("standard", autonomy="full")
    omitted = called(agent, "test_echo", {})
    assert omitted["status"] == "denied", omitted
    assert omitted["decision"]["rule"] == "approval_rule:secret-text"
    assert any(
        "argument 'text' is missing" in line and "fail closed" in line
        for line in omitted["decision"]["trace"]
    ), omitted["decision"]["trace"]
    spelled = called(agent, "test_echo", {"text": "public/../secret/key"})
    assert spelled["status"] == "denied", spelled

    # Positive control: a text the rule can read and that is not under secret/ runs.
    given = called(agent, "test_echo", {"text": "public/readme"})
    assert given["status"] == "succeeded", given
    assert "public/readme" in given["result"]["content"]


def test_an_omitted_argument_never_meets_an_auto_approve_rule(
    make_agent: Callable[..., AgentClient],
) -> None:
    agent = make_agent("standard", autonomy="supervised")
    omitted = called(agent, "test_bad_output", {}, wait=0)
    assert omitted["status"] == "pending_approval", omitted
    assert any(
        "approval_rule:drafts: not applied" in line for line in omitted["decision"]["trace"]
    ), omitted["decision"]["trace"]
    escaped = called(agent, "test_bad_output", {"text": "drafts/../final"}, wait=0)
    assert escaped["status"] == "pending_approval", escaped

    # Positive control: the rule approves a text it can read under drafts/.
    given = called(agent, "test_bad_output", {"text": "drafts/one"})
    assert given["decision"]["rule"] == "approval_rule:drafts", given
    assert given["status"] not in ("pending_approval", "denied"), given
