"""Promotion requests in the operators' inbox: pushed live, counted, decided once."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any

import pytest
import websockets
from django.db import connection
from django.test import Client
from websockets.typing import Origin

from approvals_app.live import change_html, resync_html
from common.testing import in_fresh_thread
from tests.approvals_app.conftest import PASSWORD
from tests.approvals_app.test_consumers import session_cookie, ws_url
from tests.trust_app.test_trust_support import TERMINAL_GATED
from trust_app.models import PromotionRequest, PromotionStatus, TrustState
from trust_app.services.evidence import task_outcome_report
from trust_app.services.trust import trust_reset


def ask_for_promotion(agent: Any, reporter: Any) -> PromotionRequest:
    """Report the one good task the config asks for; the strategy asks a person."""
    task_outcome_report(
        agent=agent, person=reporter, task_id="t1", difficulty="hard", quality=9.0,
        completed=True, categories=["terminal"],
    )  # fmt: skip
    return PromotionRequest.objects.get(agent=agent, status=PromotionStatus.PENDING)


def decide_page(client: Client, promotion: Any, decision: str, reason: str = "") -> str:
    answer = client.post(
        "/approvals/promotions/decide/",
        {"only": str(promotion.id), "decision": decision, f"reason-{promotion.id}": reason},
    )
    assert answer.status_code == 200
    return answer.content.decode()


@pytest.mark.django_db
def test_a_pending_promotion_is_in_the_inbox_counted_and_decided_once(
    approval_config: Callable[[str], None],
    make_agent_row: Callable[..., Any],
    make_person: Callable[..., Any],
) -> None:
    approval_config(TERMINAL_GATED)
    agent = make_agent_row(level="standard")
    operator, admin = make_person("operator"), make_person("admin")
    promotion = ask_for_promotion(agent, admin)
    inbox = resync_html(operator, "inbox")
    assert f'id="promo-{promotion.id}"' in inbox and ">1</span>" in inbox
    assert 'restricted</span> → <span class="to-level">standard' in inbox

    first, second = Client(), Client()
    assert first.login(username=operator.username, password=PASSWORD)
    assert second.login(username=admin.username, password=PASSWORD)
    page = first.get("/approvals/").content.decode()
    assert f'id="promo-{promotion.id}"' in page
    won = decide_page(first, promotion, "approve")
    assert "you approved it" in won and f"approved by {operator.username}" in won
    lost = decide_page(second, promotion, "deny", "too soon")
    assert f"already approved by {operator.username}" in lost
    assert TrustState.objects.get(agent=agent).levels["terminal"] == "standard"
    assert ">0</span>" in resync_html(operator, "inbox")


@pytest.mark.django_db
def test_deny_needs_a_reason_and_the_owner_is_barred(
    approval_config: Callable[[str], None],
    make_agent_row: Callable[..., Any],
    make_person: Callable[..., Any],
) -> None:
    approval_config(TERMINAL_GATED)
    owner = make_person("operator")
    agent = make_agent_row(level="standard", owner=owner)
    promotion = ask_for_promotion(agent, make_person("admin"))
    assert "another operator decides its promotion" in resync_html(owner, "inbox")
    client = Client()
    assert client.login(username=owner.username, password=PASSWORD)
    assert "may not approve its own agent" in decide_page(client, promotion, "approve")
    assert "reason: say why" in decide_page(client, promotion, "deny")
    promotion.refresh_from_db()
    assert promotion.status == PromotionStatus.PENDING
    pushed = change_html(owner, "inbox", str(promotion.id), "updated", "promotion")
    assert 'class="barred"' in pushed


@pytest.mark.integration
@pytest.mark.django_db(transaction=True)
def test_new_decided_and_withdrawn_promotions_are_pushed_live(
    daphne_server: str,
    approval_config: Callable[[str], None],
    make_agent_row: Callable[..., Any],
    make_person: Callable[..., Any],
) -> None:
    approval_config(TERMINAL_GATED)
    operator, admin = make_person("operator"), make_person("admin")
    first, second = make_agent_row(level="standard"), make_agent_row(level="standard")
    cookie = session_cookie(operator)

    def in_thread(work: Callable[[], Any]) -> Any:
        box: dict[str, Any] = {}

        def run() -> None:
            try:
                box["result"] = work()
            finally:
                connection.close()

        thread = threading.Thread(target=run)
        thread.start()
        thread.join(timeout=30)
        return box["result"]

    async def next_frame(socket: Any, wanted: str) -> str:
        while True:
            frame = str(await asyncio.wait_for(socket.recv(), timeout=10))
            if wanted in frame:
                return frame

    async def scenario() -> None:
        async with websockets.connect(
            ws_url(daphne_server), origin=Origin(daphne_server),
            additional_headers={"Cookie": cookie}, open_timeout=10,
        ) as socket:  # fmt: skip
            await next_frame(socket, 'id="approval-inbox"')
            one = await asyncio.to_thread(in_thread, lambda: ask_for_promotion(first, admin))
            frame = await next_frame(socket, f'id="promo-{one.id}"')
            assert 'hx-swap-oob="beforeend:#promotion-rows"' in frame and ">1</span>" in frame
            two = await asyncio.to_thread(in_thread, lambda: ask_for_promotion(second, admin))
            frame = await next_frame(socket, f'id="promo-{two.id}"')
            assert ">2</span>" in frame

            def approve() -> None:
                from trust_app.services.promotion import promotion_decide

                promotion_decide(request=one, person=admin, decision="approve", reason="earned")

            await asyncio.to_thread(in_thread, approve)
            frame = await next_frame(socket, f'id="promo-{one.id}"')
            assert f"approved by {admin.username}" in frame and ">1</span>" in frame
            await asyncio.to_thread(
                in_thread, lambda: trust_reset(agent=second, person=admin, reason="start over")
            )
            frame = await next_frame(socket, f'id="promo-{two.id}"')
            assert "withdrawn (trust reset)" in frame and ">0</span>" in frame

    # A loop of its own: another test of this process may have left one running here.
    in_fresh_thread(lambda: asyncio.run(scenario()))
