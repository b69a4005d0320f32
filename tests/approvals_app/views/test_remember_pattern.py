"""Remember a pattern, seen first: the inbox shows what a pattern would have let through
among the agent's recent calls, and the grant then holds exactly the pattern shown."""

from __future__ import annotations

import html
import json
import re
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from django.test import Client

from approvals_app.models import ApprovalGrant, ApprovalRequest, ApprovalStatus
from approvals_app.services import approvals_decide_each
from tests.approvals_app.conftest import PASSWORD
from tests.support.pending import submitted
from tools_app.models import InvocationStatus
from tools_app.services.invocation_submit import CallRequest, invocation_submit
from trust_app.services.agents import agent_create, person_create
from trust_app.services.teams import team_create

pytestmark = pytest.mark.django_db

VALS = re.compile(r'hx-vals="([^"]*)"')


def signed_in(person: Any) -> Client:
    client = Client()
    assert client.login(username=person.username, password=PASSWORD)
    return client


def write(agent: Any, path: str) -> Any:
    return invocation_submit(
        agent=agent, call=CallRequest(tool="write_file", arguments={"path": path, "content": "x"})
    ).invocation


def history(agent: Any, person: Any) -> None:
    """Three writes under q/ (asked, approved), one elsewhere, one that climbs out of q/."""
    asked = [
        submitted(agent, "write_file", {"path": f"q/{n}.txt", "content": "x"}) for n in range(3)
    ]
    approvals_decide_each(requests=[str(r.id) for r in asked], person=person, decision="approve")
    for path in ("other/x.txt", "q/../escape.txt"):
        submitted(agent, "write_file", {"path": path, "content": "x"})


def test_the_pattern_shown_is_tried_on_recent_calls_and_the_grant_holds_exactly_it(
    make_person: Callable[..., Any], make_agent_row: Callable[..., Any]
) -> None:
    agent, operator = make_agent_row(), make_person("operator")
    history(agent, make_person("operator"))
    pending = submitted(agent, "write_file", {"path": "q/new.txt", "content": "hello"})
    client = signed_in(operator)
    url = f"/approvals/{pending.id}/pattern/"

    form = client.get(url).content.decode()
    assert 'name="glob-path" value="q/*"' in form  # the starting pattern: the folder
    assert 'name="glob-content" value=""' in form  # free unless the person writes one

    reach = client.post(url, {"glob-path": "q/*", "minutes": "15"}).content.decode()
    assert 'data-covered="3"' in reach and 'data-asked="3"' in reach, reach
    assert "path matches q/*" in reach
    assert "escape.txt" not in reach  # q/../escape.txt is not under q/, as the grant reads it
    # Control: a pattern of the other folder covers that call only.
    other = client.post(url, {"glob-path": "other/*", "minutes": "15"}).content.decode()
    assert 'data-covered="1"' in other and 'data-asked="1"' in other

    vals = json.loads(html.unescape(VALS.search(reach).group(1)))  # type: ignore[union-attr]
    answer = client.post("/approvals/decide/", vals).content.decode()
    assert "you approved it" in answer, answer
    assert ApprovalRequest.objects.get(id=pending.id).status == ApprovalStatus.APPROVED
    grant = ApprovalGrant.objects.get(agent=agent)
    assert grant.pattern == {"path": "q/*"} and grant.arguments_hash == ""
    # The grant lets the folder through without a person, and nothing that climbs out.
    assert write(agent, "q/later.txt").status == InvocationStatus.QUEUED
    assert write(agent, "q/../later.txt").status == InvocationStatus.PENDING_APPROVAL


@pytest.mark.parametrize(
    ("fields", "said"),
    [
        ({"glob-path": "*", "minutes": "15"}, "matches everything"),
        ({"glob-path": "", "glob-content": "", "minutes": "15"}, "at least one argument"),
        ({"glob-nothing": "x*", "minutes": "15"}, "no argument 'nothing'"),
        ({"glob-path": "q/*", "minutes": "100000"}, "remember for one of"),
    ],
)
def test_a_pattern_that_cannot_be_granted_is_refused_saying_why(
    make_person: Callable[..., Any],
    make_agent_row: Callable[..., Any],
    fields: dict[str, str],
    said: str,
) -> None:
    pending = submitted(make_agent_row(), "write_file", {"path": "q/a.txt", "content": "x"})
    answer = signed_in(make_person("operator")).post(f"/approvals/{pending.id}/pattern/", fields)
    assert answer.status_code == 200
    text = html.unescape(answer.content.decode())
    assert 'role="alert"' in text and said in text
    assert "Approve and remember" not in answer.content.decode()


def test_a_pattern_sent_with_a_decision_is_checked_and_nothing_is_decided_on_a_bad_one(
    make_person: Callable[..., Any], make_agent_row: Callable[..., Any]
) -> None:
    pending = submitted(make_agent_row(), "write_file", {"path": "q/a.txt", "content": "x"})
    client = signed_in(make_person("operator"))
    for pattern, said in (
        ("[1, 2]", "maps argument names to globs"),
        ('{"path": "*"}', "everything"),
    ):
        answer = client.post(
            "/approvals/decide/",
            {"decision": "approve", "only": str(pending.id), f"remember-{pending.id}": "15",
             f"pattern-{pending.id}": pattern},
        ).content.decode()  # fmt: skip
        assert said in answer, answer
    assert ApprovalRequest.objects.get(id=pending.id).status == ApprovalStatus.PENDING
    assert not ApprovalGrant.objects.exists()


def test_only_people_who_may_decide_it_see_what_a_pattern_covers(
    make_person: Callable[..., Any], make_agent_row: Callable[..., Any]
) -> None:
    team_create(name="team-far")
    far = agent_create(
        name=f"far-{uuid.uuid4().hex[:6]}", access_level="standard", autonomy="locked",
        team="team-far",
    ).agent  # fmt: skip
    mine = submitted(make_agent_row(), "write_file", {"path": "q/a.txt", "content": "x"})
    theirs = submitted(far, "write_file", {"path": "q/a.txt", "content": "x"})
    near = person_create(
        username=f"near-{uuid.uuid4().hex[:6]}", role="operator", password=PASSWORD, team="default"
    )
    client = signed_in(near)
    assert client.get(f"/approvals/{mine.id}/pattern/").status_code == 200  # control
    assert client.get(f"/approvals/{theirs.id}/pattern/").status_code == 404
    assert (
        signed_in(make_person("auditor")).get(f"/approvals/{mine.id}/pattern/").status_code == 403
    )
    pair = submitted(make_agent_row(), "write_file", {"path": "q/b.txt", "content": "x"})
    ApprovalRequest.objects.filter(id=pair.id).update(required_approvals=2)
    answer = client.get(f"/approvals/{pair.id}/pattern/").content.decode()
    assert "more than one person" in answer and "glob-path" not in answer
