"""A call's stated purpose over REST: stored, answered, bounded, and no part of the call's
identity; people read it (with the agent's task) on the card and the call's timeline.

Attacks: a purpose over 500 characters or not a string is refused whole (400 naming the
field and its limit, audited) and nothing is recorded; markup and a confusable letter in
it are shown escaped and flagged as the agent's own words. Controls: exactly 500
characters is taken; a call without one is unchanged (``purpose: null``).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import pytest
from django.test import Client

from approvals_app.models import ApprovalRequest
from audit_app.models import AuditEvent
from tests.tools_app.api.conftest import AgentClient
from tools_app.models import Invocation
from trust_app.services.agents import person_create

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

LIMIT = 500


def person(role: str) -> Any:
    return person_create(username=f"{role}-{uuid.uuid4().hex[:6]}", role=role, password=None)


def test_a_purpose_is_stored_and_answered_and_a_call_without_one_is_unchanged(
    make_agent: Callable[..., AgentClient],
) -> None:
    client = make_agent(autonomy="full")
    said = client.call("test_echo", {"text": "x"}, purpose="tidy the notes", task_id="T-7")
    assert said.status_code == 201, said.text
    assert said.json()["purpose"] == "tidy the notes"
    assert said.json()["task_id"] == "T-7"
    assert Invocation.objects.get(id=said.json()["id"]).purpose == "tidy the notes"
    fetched = client.get(said.json()["id"]).json()
    assert fetched["purpose"] == "tidy the notes"
    decided = AuditEvent.objects.get(kind="invocation.decided", invocation_id=said.json()["id"])
    assert decided.data["purpose"] == "tidy the notes"
    assert decided.data["task_id"] == "T-7"

    # Control: no purpose, no task: both null, and the audit row carries neither.
    plain = client.call("test_echo", {"text": "y"})
    assert plain.status_code == 201, plain.text
    assert plain.json()["purpose"] is None and plain.json()["task_id"] is None
    decided = AuditEvent.objects.get(kind="invocation.decided", invocation_id=plain.json()["id"])
    assert "purpose" not in decided.data and "task_id" not in decided.data


@pytest.mark.parametrize(
    ("purpose", "words"),
    [
        ("p" * (LIMIT + 1), "too long; purpose must be a string of at most 500 characters"),
        (12, "not a string; purpose must be a string of at most 500 characters"),
        (["a"], "not a string; purpose must be a string of at most 500 characters"),
        (None, "purpose must be a string of at most 500 characters"),
    ],
)
def test_a_purpose_too_long_or_not_a_string_is_refused_naming_the_field_and_audited(
    make_agent: Callable[..., AgentClient], purpose: object, words: str
) -> None:
    client = make_agent(autonomy="full")
    refused = client.call("test_echo", {"text": "x"}, purpose=purpose)
    assert refused.status_code == 400, refused.text
    error = refused.json()["error"]
    assert error["code"] == "invalid_argument"
    assert error["message"].startswith("purpose: "), error
    assert words in error["message"], error
    assert list(error["details"]["fields"]) == ["purpose"]
    assert not Invocation.objects.filter(agent=client.agent).exists()
    audited = AuditEvent.objects.filter(kind="request.refused", agent_id=client.agent.id)
    assert audited.exists(), "the refused attempt is audited"
    assert "purpose" in audited.get().reason

    # Control: exactly the limit is taken.
    taken = client.call("test_echo", {"text": "x"}, purpose="p" * LIMIT)
    assert taken.status_code == 201, taken.text
    assert taken.json()["purpose"] == "p" * LIMIT


def test_a_retry_with_the_same_key_and_other_words_is_the_same_call(
    make_agent: Callable[..., AgentClient],
) -> None:
    client = make_agent(autonomy="full")
    key = f"k-{uuid.uuid4().hex}"
    first = client.call("test_echo", {"text": "x"}, idempotency_key=key, purpose="first words")
    assert first.status_code == 201, first.text
    # The purpose is no part of the call's identity: the same call, its first words kept.
    again = client.call("test_echo", {"text": "x"}, idempotency_key=key, purpose="other words")
    assert again.status_code == 200, again.text
    assert again.json()["id"] == first.json()["id"]
    assert again.json()["purpose"] == "first words"
    assert Invocation.objects.filter(agent=client.agent).count() == 1
    # Control: the same key with other arguments is still another call (409).
    other = client.call("test_echo", {"text": "y"}, idempotency_key=key, purpose="first words")
    assert other.status_code == 409, other.text


def test_a_batch_call_carries_its_own_purpose(make_agent: Callable[..., AgentClient]) -> None:
    client = make_agent(autonomy="full")
    answer = client.http.post(
        "/api/v1/invocations/batch/",
        json={
            "calls": [
                {"tool": "test_echo", "arguments": {"text": "a"}, "purpose": "first"},
                {"tool": "test_echo", "arguments": {"text": "b"}},
            ]
        },
    )
    assert answer.status_code == 200, answer.text
    assert [i["purpose"] for i in answer.json()["invocations"]] == ["first", None]


def test_the_card_and_the_timeline_show_the_purpose_and_task_escaped_as_the_agents_claim(
    make_agent: Callable[..., AgentClient],
) -> None:
    client = make_agent(autonomy="locked")
    # Markup, and a Cyrillic "о" in "nоtes": shown as text, the letter flagged.
    purpose = "<b>routine</b> cleanup of n\u043etes.txt"
    asked = client.call("test_echo", {"text": "x"}, purpose=purpose, task_id="T-<9>")
    assert asked.status_code == 201, asked.text
    assert asked.json()["status"] == "pending_approval"
    request = ApprovalRequest.objects.get(invocation_id=asked.json()["id"])

    operator = Client()
    operator.force_login(
        person_create(username=f"op-{uuid.uuid4().hex[:6]}", role="operator", password=None)
    )
    inbox = operator.get("/approvals/").content.decode()
    whole = operator.get(f"/approvals/{request.id}/call/").content.decode()
    for page in (inbox, whole):
        claim = page[page.index("data-agent-claim") :]
        claim = claim[: claim.index("</div>")]
        assert "its own words, not checked by the console" in claim
        assert "&lt;b&gt;routine&lt;/b&gt; cleanup of n" in claim
        assert "<b>routine</b>" not in page
        assert 'data-char="U+043E"' in claim, claim
        assert "Task: <code>T-&lt;9&gt;</code>" in claim
        assert "in the agent's <code>purpose</code>" in claim

    auditor = Client()
    auditor.force_login(
        person_create(username=f"au-{uuid.uuid4().hex[:6]}", role="auditor", password=None)
    )
    timeline = auditor.get(f"/audit/invocations/{asked.json()['id']}/")
    assert timeline.status_code == 200
    page = timeline.content.decode()
    assert "its own words, not checked by the console" in page
    assert "&lt;b&gt;routine&lt;/b&gt; cleanup of n" in page
    assert 'data-char="U+043E"' in page
    assert "Task: <code>T-&lt;9&gt;</code>" in page

    # Control: a call without either shows no claim at all.
    quiet = client.call("test_echo", {"text": "z"})
    quiet_request = ApprovalRequest.objects.get(invocation_id=quiet.json()["id"])
    quiet_page = operator.get(f"/approvals/{quiet_request.id}/call/").content.decode()
    assert "data-agent-claim" not in quiet_page
