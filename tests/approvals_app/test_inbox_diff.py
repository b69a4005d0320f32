"""The inbox page's resync as a difference (a real daphne and its socket).

The page says which requests it shows; the socket answers only what it lacks or shows
wrongly. Controls: without ``resync=diff``, with an unreadable list, or with no list
at all, the whole inbox comes as before.
"""

from __future__ import annotations

import asyncio
import json
import re
import uuid
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
import websockets
from django.conf import settings
from django.utils import timezone
from websockets.typing import Origin

from approvals_app import live
from approvals_app.inbox_diff import diff_frames, parse_have, parse_page
from approvals_app.models import ApprovalRequest
from approvals_app.services import approval_decide
from common.testing import run_fresh
from tests.approvals_app.test_consumers import session_cookie
from tests.support.pending import pending_like, submitted

ROW = re.compile(r'<article id="req-([0-9a-f\-]{36})"[^>]*>')
GROUP_IDS = re.compile(r'id="grp-ids-([0-9a-f]{16})" data-ids="([^"]*)"')
MORE_AFTER = re.compile(r'class="more" id="more-\w+" data-after="([^"]+)"')
APPENDED = re.compile(
    r'<div hx-swap-oob="beforeend:#risk-\w+">\s*<article id="req-([0-9a-f\-]{36})"'
)


def _url(base: str, query: str) -> str:
    return base.replace("http://", "ws://") + f"/ws/approvals/?{query}"


async def _frames(base: str, cookie: str, query: str, say: str | None, quiet: float) -> list[str]:
    """Frames sent after connecting (and saying ``say``), until none comes for ``quiet`` s."""
    frames: list[str] = []
    async with websockets.connect(
        _url(base, query), origin=Origin(base), additional_headers={"Cookie": cookie},
        open_timeout=10,
    ) as socket:  # fmt: skip
        if say is not None:
            await socket.send(say)
        frames.append(str(await asyncio.wait_for(socket.recv(), timeout=30)))
        while True:
            try:
                frames.append(str(await asyncio.wait_for(socket.recv(), timeout=quiet)))
            except TimeoutError:
                return frames


def _rows(frames: list[str]) -> dict[str, str]:
    """Each row sent: its id and its opening tag."""
    return {m.group(1): m.group(0) for frame in frames for m in ROW.finditer(frame)}


@pytest.mark.integration
@pytest.mark.django_db(transaction=True)
def test_the_page_gets_only_what_it_lacks_or_shows_wrongly(
    daphne_server: str,
    make_person: Callable[..., Any],
    make_agent_row: Callable[..., Any],
    submit: Callable[..., Any],
) -> None:
    # One agent each: the test tool's rate limit allows two calls a minute per agent.
    shown, decided, escalated, new = (str(submit(make_agent_row()).approval.id) for _ in range(4))
    admin = make_person("admin")
    approval_decide(
        request=ApprovalRequest.objects.get(id=decided), person=admin, decision="deny",
        reason="not now",
    )  # fmt: skip
    ApprovalRequest.objects.filter(id=escalated).update(escalated_at=timezone.now())
    unknown = str(uuid.uuid4())
    have = [[shown, "pending", 0], [decided, "pending", 0], [escalated, "pending", 0],
            [unknown, "pending", 0], ["not-an-id", "pending", 0]]  # fmt: skip
    cookie = session_cookie(admin)
    frames = run_fresh(
        lambda: _frames(
            daphne_server, cookie, "view=inbox&resync=diff", json.dumps({"have": have}), 1.0
        )
    )
    rows = _rows(frames)
    assert set(rows) == {decided, escalated, new}, rows  # the shown one is not sent again
    assert 'id="approval-inbox"' not in "".join(frames)  # no whole-inbox swap
    assert 'id="pending-count"' in frames[0] and 'id="promotion-rows"' in frames[0]
    assert "settled" in rows[decided] and 'hx-swap-oob="true"' in rows[decided]
    assert 'data-escalated="1"' in rows[escalated] and 'hx-swap-oob="true"' in rows[escalated]
    assert [m for f in frames for m in APPENDED.findall(f)] == [new]

    # An operator does not see escalation: the same list asks nothing of the escalated one.
    operator_cookie = session_cookie(make_person("operator"))
    same = [[shown, "pending", 0], [escalated, "pending", 0], [new, "pending", 0]]
    said = json.dumps({"have": same})
    frames = run_fresh(
        lambda: _frames(daphne_server, operator_cookie, "view=inbox&resync=diff", said, 1.0)
    )
    assert _rows(frames) == {}

    # Control: the same socket without resync=diff sends the whole inbox.
    frames = run_fresh(lambda: _frames(daphne_server, cookie, "view=inbox", None, 1.0))
    assert 'id="approval-inbox"' in frames[0]
    assert {shown, escalated, new} <= set(_rows(frames))


@pytest.mark.integration
@pytest.mark.django_db(transaction=True)
def test_an_unreadable_list_or_none_gets_the_whole_inbox(
    daphne_server: str,
    make_person: Callable[..., Any],
    make_agent_row: Callable[..., Any],
    submit: Callable[..., Any],
) -> None:
    pending = str(submit(make_agent_row()).approval.id)
    cookie = session_cookie(make_person("operator"))
    for say in ("{not json", json.dumps({"have": "everything"}), json.dumps([1, 2])):

        def scenario(say: str = say) -> Any:
            return _frames(daphne_server, cookie, "view=inbox&resync=diff", say, 1.0)

        frames = run_fresh(scenario)
        assert 'id="approval-inbox"' in frames[0], say
        assert pending in _rows(frames), say
    # Saying nothing: after the wait, the whole inbox.
    wait = settings.SYNTHORG_INBOX_HAVE_WAIT_SECONDS + 1.0
    frames = run_fresh(lambda: _frames(daphne_server, cookie, "view=inbox&resync=diff", None, wait))
    assert 'id="approval-inbox"' in "".join(frames) and pending in _rows(frames)


def test_the_list_is_read_strictly() -> None:
    request_id = str(uuid.uuid4())
    assert parse_have(json.dumps({"have": [[request_id, "pending", 1]]})) == {
        request_id: ("pending", True)
    }
    assert parse_have(json.dumps({"have": []})) == {}
    # Not a request id: left out (the page only holds ids the server rendered).
    assert parse_have(json.dumps({"have": [["../x", "pending", 0]]})) == {}
    for bad in ("[]", "{}", '{"have": [[1, 2]]}', '{"have": [["a", 3, 0]]}', "x" * 10, "[" * 5000):
        assert parse_have(bad) is None, bad
    many = {"have": [[str(uuid.uuid4()), "pending", 0] for _ in range(4)]}
    assert parse_have(json.dumps(many), max_rows=3) is None
    assert parse_have(json.dumps(many), max_rows=4) is not None


@pytest.mark.django_db
def test_a_paged_page_gets_nothing_past_what_it_loaded_and_its_groups_ids_as_they_are(
    settings: Any, make_person: Callable[..., Any], make_agent_row: Callable[..., Any]
) -> None:
    settings.SYNTHORG_INBOX_PAGE_ENTRIES = 3
    builder, other = make_agent_row(), make_agent_row()
    first = submitted(builder, "write_file", {"path": "q/0.txt", "content": "x"})
    flood = [
        str(first.id),
        *pending_like(first, 4, lambda n: {"path": f"q/{n + 1}.txt", "content": "x"}),
    ]
    lone = submitted(other, "write_file", {"path": "a0/x.txt", "content": "x"})
    apart = [
        str(lone.id),
        *pending_like(lone, 3, lambda n: {"path": f"a{n + 1}/x.txt", "content": "x"}),
    ]
    start = timezone.now() + timedelta(hours=1)
    for n, request_id in enumerate([*flood, *apart]):  # the flood first, then one by one
        ApprovalRequest.objects.filter(id=request_id).update(expires_at=start + timedelta(n))
    operator = make_person("operator")
    page = live.resync_html(operator, "inbox")
    key, ids = GROUP_IDS.search(page).groups()  # type: ignore[union-attr]
    assert ids.split() == flood
    shown = ROW.findall(page)
    assert shown == [flood[0], apart[0], apart[1]]  # the first screen: three entries
    through = MORE_AFTER.search(page).group(1)  # type: ignore[union-attr]
    said = json.dumps({
        "have": [[i, "pending", 0] for i in shown],
        "groups": {key: flood},
        "through": {tier: "" for tier in ("critical", "high", "low", "medium")}
        | {ApprovalRequest.objects.get(id=flood[0]).risk_tier: through},
    })  # fmt: skip
    # Meanwhile: a member the page only counts is decided, one it shows too, an alike one
    # arrives, and a request past what the page loaded arrives.
    admin = make_person("admin")
    approval_decide(request=flood[3], person=admin, decision="deny", reason="no")
    approval_decide(request=apart[0], person=admin, decision="deny", reason="no")
    joined = str(submitted(builder, "write_file", {"path": "q/9.txt", "content": "x"}).id)
    past = str(submitted(other, "write_file", {"path": "z/x.txt", "content": "x"}).id)
    for n, request_id in enumerate((joined, past)):  # due after all the others
        ApprovalRequest.objects.filter(id=request_id).update(expires_at=start + timedelta(20 + n))
    have, state = parse_have(said), parse_page(said)
    assert have is not None and state is not None
    sent = "".join(diff_frames(operator, have, state))
    now_ids = dict(GROUP_IDS.findall(sent))[key].split()
    assert now_ids == [i for i in flood if i != flood[3]] + [joined]  # counted, not shown
    rows = _rows([sent])
    assert set(rows) == {apart[0]} and "settled" in rows[apart[0]]  # the one it shows, settled
    assert past not in sent and apart[2] not in sent and joined not in rows
    # Control: a page that says nothing of how far it loaded gets everything it lacks.
    bare = parse_have(json.dumps({"have": [[i, "pending", 0] for i in shown]}))
    assert bare is not None
    rows = _rows(diff_frames(operator, bare, None))
    assert {past, apart[2], apart[3], joined} <= set(rows)
    # A list the page cannot have made is not read (the page is then taken at its rows).
    bad_lists: list[dict[str, Any]] = [
        {"through": {"urgent": "end"}},
        {"through": {"high": "x"}},
        {"through": {}, "groups": {"../x": []}},
        {"through": []},
    ]
    for bad in bad_lists:
        assert parse_page(json.dumps({"have": [], **bad})) is None, bad
