"""The inbox under a flood, through its HTTP answers: the first screen and the rest on
demand, alike requests as one group, selections as ids, and a decision on many that
sends only ids and decides and audits each request on its own, every rule holding."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone

from approvals_app.models import ApprovalDecision, ApprovalRequest, ApprovalStatus
from approvals_app.services import approval_decide
from audit_app.models import AuditEvent
from tests.approvals_app.conftest import PASSWORD
from tests.support.pending import pending_like, submitted

pytestmark = pytest.mark.django_db

ROW = re.compile(r'<article id="req-([0-9a-f\-]{36})"')
GROUP = re.compile(r'<section id="grp-([0-9a-f]{16})"')
MORE = re.compile(r'hx-get="/approvals/more/\?tier=(\w+)&amp;after=([^"]*)"')
GROUP_MORE = re.compile(r'hx-get="(/approvals/groups/[0-9a-f]{16}/\?after=[^"]*)"')
GROUP_IDS = re.compile(r'id="grp-ids-([0-9a-f]{16})" data-ids="([^"]*)"')


def found(pattern: re.Pattern[str], text: str) -> re.Match[str]:
    match = pattern.search(text)
    assert match is not None, f"{pattern.pattern} not in the answer"
    return match


def signed_in(person: Any) -> Client:
    client = Client()
    assert client.login(username=person.username, password=PASSWORD)
    return client


def writes(agent: Any, folder: str, count: int) -> list[str]:
    """``count`` pending writes of ``agent`` under ``folder``: one submitted, the rest copied."""
    first = submitted(agent, "write_file", {"path": f"{folder}/0.txt", "content": "x\n"})
    more = pending_like(
        first, count - 1, lambda n: {"path": f"{folder}/{n + 1}.txt", "content": f"{n}\n"}
    )
    return [str(first.id), *more]


def apart(agent: Any, count: int) -> list[str]:
    """``count`` pending writes of ``agent``, each in a folder of its own (no two alike)."""
    first = submitted(agent, "write_file", {"path": "apart-0/x.txt", "content": "x\n"})
    return [str(first.id), *pending_like(
        first, count - 1, lambda n: {"path": f"apart-{n + 1}/x.txt", "content": "x\n"}
    )]  # fmt: skip


def test_the_first_screen_shows_a_page_groups_alike_requests_and_the_rest_comes_on_demand(
    settings: Any, make_person: Callable[..., Any], make_agent_row: Callable[..., Any]
) -> None:
    settings.SYNTHORG_INBOX_PAGE_ENTRIES = 6
    settings.SYNTHORG_INBOX_GROUP_PAGE = 10
    flood = writes(make_agent_row(), "q", 31)
    single = apart(make_agent_row(), 14)
    client = signed_in(make_person("operator"))
    page = client.get("/approvals/").content.decode()
    assert len(GROUP.findall(page)) == 1 and '×<span class="group-count">31</span>' in page
    assert "under q/" in page
    rows = ROW.findall(page)
    assert len(rows) == 6  # the group's first card and five requests: one screen
    assert 'data-waiting="45"' in page
    # The rest, a page at a time, each request once, in deadline order.
    shown = set(rows)
    for _ in range(10):
        link_found = MORE.search(page)
        if link_found is None:
            break
        tier, after = link_found.groups()
        page = client.get(f"/approvals/more/?tier={tier}&after={after}").content.decode()
        new = ROW.findall(page)
        assert not shown & set(new)
        shown |= set(new)
    assert set(single) <= shown and flood[0] in shown and not set(flood[1:]) & shown
    # The group's other members, on demand, with its ids as they are now.
    group_page = client.get("/approvals/").content.decode()
    key, ids = found(GROUP_IDS, group_page).groups()
    assert ids.split() == flood
    link = found(GROUP_MORE, group_page).group(1).replace("&amp;", "&")
    members = client.get(link).content.decode()
    assert ROW.findall(members) == flood[1:11]
    assert found(GROUP_IDS, members).group(2).split() == flood
    # Control: a cursor or a tier that cannot be read is refused, not guessed.
    assert client.get("/approvals/more/?tier=high&after=nonsense").status_code == 400
    assert client.get("/approvals/more/?tier=urgent&after=").status_code == 400
    assert client.get(f"/approvals/groups/{key}/?after=1.2").status_code == 400


def test_selections_name_the_pending_ids_of_an_agent_a_tool_or_a_group(
    make_person: Callable[..., Any], make_agent_row: Callable[..., Any]
) -> None:
    builder, other = make_agent_row(), make_agent_row()
    flood = writes(builder, "q", 5)
    elsewhere = writes(builder, "docs", 2)
    theirs = writes(other, "q", 3)
    client = signed_in(make_person("operator"))
    assert client.get(f"/approvals/select/?agent={builder.name}").json() == {
        "ids": sorted(
            [*flood, *elsewhere], key=lambda i: ApprovalRequest.objects.get(id=i).expires_at
        ),
        "count": 7,
    }
    assert set(client.get("/approvals/select/?tool=write_file").json()["ids"]) == {
        *flood, *elsewhere, *theirs
    }  # fmt: skip
    page = client.get("/approvals/").content.decode()
    keys = dict((ids.split()[0], key) for key, ids in GROUP_IDS.findall(page))
    assert client.get(f"/approvals/select/?group={keys[flood[0]]}").json()["ids"] == flood
    assert client.get("/approvals/select/").json()["count"] == 10
    assert client.get("/approvals/select/?group=../../x").status_code == 400
    assert client.get("/approvals/select/?agent=a&tool=b").status_code == 400
    # A request decided meanwhile is no longer selected.
    approval_decide(request=flood[0], person=make_person("admin"), decision="deny", reason="no")
    assert flood[0] not in client.get(f"/approvals/select/?group={keys[flood[0]]}").json()["ids"]


def test_a_decision_on_many_sends_ids_only_and_each_request_is_decided_on_its_own(
    make_person: Callable[..., Any], make_agent_row: Callable[..., Any]
) -> None:
    operator, colleague = make_person("operator"), make_person("operator")
    plain = writes(make_agent_row(), "q", 4)
    owned = writes(make_agent_row(owner=operator), "mine", 1)[0]
    two_people = writes(make_agent_row(), "pair", 1)[0]
    ApprovalRequest.objects.filter(id=two_people).update(required_approvals=2)
    late = plain.pop()
    ApprovalRequest.objects.filter(id=late).update(expires_at=timezone.now() - timedelta(seconds=1))
    taken = plain.pop()
    approval_decide(request=taken, person=colleague, decision="approve")
    missing = "00000000-0000-4000-8000-00000000dead"
    ids = [*plain, owned, two_people, late, taken, missing]
    # One field, any number of ids (space or comma separated), nothing else of the cards.
    answer = (
        signed_in(operator)
        .post("/approvals/decide/", {"decision": "approve", "ids": ", ".join(ids)})
        .content.decode()
    )
    assert "you approved 2 requests" in answer
    assert "your approval of 1 is recorded" in answer
    refusals = dict(re.findall(r'<li class="refused" data-request="([^"]+)">([^<]*)</li>', answer))
    assert set(refusals) == {owned, late, taken, missing}
    assert "another operator must decide" in refusals[owned]
    assert "expired" in refusals[late]
    assert f"already approved by {colleague.username}" in refusals[taken]
    assert "no approval request" in refusals[missing]
    for request_id in plain:
        request = ApprovalRequest.objects.get(id=request_id)
        assert request.status == ApprovalStatus.APPROVED and request.decisions.count() == 1
        assert (
            AuditEvent.objects.filter(
                kind="approval.approved", invocation_id=request.invocation_id
            ).count()
            == 1
        )
    pair = ApprovalRequest.objects.get(id=two_people)
    assert pair.status == ApprovalStatus.PENDING and pair.approvals == 1  # the quorum holds
    assert ApprovalRequest.objects.get(id=owned).status == ApprovalStatus.PENDING
    assert ApprovalRequest.objects.get(id=late).status == ApprovalStatus.EXPIRED
    assert ApprovalDecision.objects.filter(request__id=taken).count() == 1
    settled = found(re.compile(r'data-settled="([^"]*)"'), answer).group(1).split()
    assert sorted(settled) == sorted(plain)


def test_a_thousand_in_one_post_each_decided_once_and_audited(
    make_person: Callable[..., Any], make_agent_row: Callable[..., Any]
) -> None:
    ids = writes(make_agent_row(), "q", 1000)
    client = signed_in(make_person("operator"))
    # A denial of many needs a reason, asked once: nothing is decided without it.
    refused = client.post("/approvals/decide/", {"decision": "deny", "ids": " ".join(ids)})
    assert 'data-field="reason"' in refused.content.decode()
    assert ApprovalRequest.objects.filter(status=ApprovalStatus.PENDING).count() == 1000
    answer = client.post(
        "/approvals/decide/", {"decision": "deny", "reason": "flood", "ids": " ".join(ids)}
    ).content.decode()
    assert "you denied 1,000 requests" in answer and 'class="refused"' not in answer
    assert ApprovalRequest.objects.filter(id__in=ids, status=ApprovalStatus.DENIED).count() == 1000
    assert ApprovalDecision.objects.filter(request__id__in=ids).count() == 1000
    denied = AuditEvent.objects.filter(kind="approval.denied", data__approval__in=ids)
    assert denied.count() == 1000
    # Again: each is refused by id as already decided, and nothing is decided twice.
    again = client.post(
        "/approvals/decide/", {"decision": "deny", "reason": "flood", "ids": " ".join(ids[:3])}
    ).content.decode()
    assert again.count('class="refused"') == 3 and "already denied" in again
    assert ApprovalDecision.objects.filter(request__id__in=ids).count() == 1000
