"""The dashboard: every role gets it; its figures come from the audit log and approvals."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.db import transaction
from django.test import Client
from django.utils import timezone

from approvals_app.models import ApprovalRequest, ApprovalStatus
from audit_app.record import Actor, audit_record
from tests.common.permission_suite import EVERYONE, PermissionSuite, signed_in
from tools_app.models import Invocation
from trust_app.models import Agent, PromotionRequest
from trust_app.services.agents import agent_create, person_create

pytestmark = pytest.mark.django_db


class TestDashboardAccess(PermissionSuite):
    path = "/"
    allowed = EVERYONE


@pytest.fixture
def auditor() -> Client:
    person_create(username="audrey", role="auditor", password=None)
    return signed_in("audrey")


def decided(agent: Agent, outcome: str, rule: str = "") -> None:
    with transaction.atomic():
        audit_record(kind="invocation.decided", actor=Actor.agent(agent), agent=agent,
                     tool="read_file", outcome=outcome, rule=rule)  # fmt: skip


def approval(agent: Agent, status: str, waited: float | None) -> None:
    invocation = Invocation.objects.create(
        agent=agent, tool="read_file", category="file_system", action_type="file:read",
        safety_class="read", arguments_hash="0" * 64, status="pending_approval",
    )  # fmt: skip
    request = ApprovalRequest.objects.create(
        invocation=invocation, arguments_hash="0" * 64, status=status,
        expires_at=timezone.now() + timedelta(minutes=5),
    )  # fmt: skip
    if waited is not None:
        ApprovalRequest.objects.filter(pk=request.pk).update(
            decided_at=request.created_at + timedelta(seconds=waited)
        )


def metrics_of(html: str) -> dict:
    script = html.split('<script id="dashboard-metrics" type="application/json">')[1]
    return json.loads(script.split("</script>")[0])


def test_the_dashboard_charts_calls_denials_approvals_and_health(auditor: Client) -> None:
    agent = agent_create(name="dash", access_level="standard").agent
    for outcome, rule in [
        ("allow", "level"),
        ("allow", "level"),
        ("deny", "denied_list"),
        ("deny", "network"),
        ("deny", "network"),
        ("require_approval", "x"),
    ]:
        decided(agent, outcome, rule)  # fmt: skip
    approval(agent, ApprovalStatus.PENDING, None)
    approval(agent, ApprovalStatus.PENDING, None)
    for seconds in (10, 20, 60):
        approval(agent, ApprovalStatus.APPROVED, seconds)
    response = auditor.get("/")
    html = response.content.decode()
    assert "/static/vendor/chartjs/chart-4.6.1.umd.min.js" in html
    assert 'id="chart-calls"' in html and 'id="chart-denials"' in html
    assert 'id="health"' in html and 'data-part="database"' in html
    metrics = metrics_of(html)
    series = metrics["calls_per_hour"]["series"]
    assert series["allow"][-1] == 2 and series["deny"][-1] == 3
    assert series["require_approval"][-1] == 1
    assert len(metrics["calls_per_hour"]["labels"]) == 24
    assert metrics["denials_by_rule"] == {"labels": ["network", "denied_list"], "counts": [2, 1]}
    assert metrics["pending_approvals"] == 2
    assert metrics["median_decision_seconds"] == 20
    assert metrics["backends"]["database"] is True


def test_htmx_polls_only_the_live_part(auditor: Client) -> None:
    html = auditor.get("/", HTTP_HX_REQUEST="true").content.decode()
    assert html.lstrip().startswith('<div id="live"')
    assert "<html" not in html
    # Polled, and read again as soon as the socket changes the badge.
    assert 'hx-trigger="every 10s, inbox-changed from:body delay:300ms"' in html
    assert "pending_approvals" in html


def test_the_card_and_the_badge_count_the_same_calls_and_promotions() -> None:
    agent = agent_create(name="dash-badge", access_level="standard").agent
    approval(agent, ApprovalStatus.PENDING, None)
    approval(agent, ApprovalStatus.APPROVED, 5)  # decided: counted by neither
    PromotionRequest.objects.create(
        agent=agent, track="file_system", from_level="standard", to_level="elevated",
        created_at=timezone.now(),
    )  # fmt: skip
    person_create(username="otto", role="operator", password=None)
    html = signed_in("otto").get("/").content.decode()
    badge = html.split('id="pending-count"')[1].split(">")[1].split("<")[0]
    card = html.split('id="pending-approvals"')[1].split(">")[1].split("<")[0]
    assert badge == card == "2"
    assert "1 call, 1 promotion" in html
    metrics = metrics_of(html)
    assert (metrics["pending_approvals"], metrics["pending_promotions"]) == (1, 1)
    assert metrics["pending_in_inbox"] == 2


def test_the_charts_data_is_also_a_table_and_the_live_poll_renews_it(auditor: Client) -> None:
    agent = agent_create(name="dash-table", access_level="standard").agent
    decided(agent, "allow", "level")
    decided(agent, "deny", "network")
    decided(agent, "deny", "network")
    html = auditor.get("/").content.decode()
    calls = html.split('id="calls-table"')[1].split("</table>")[0]
    assert '<th scope="col">allow</th><th scope="col">deny</th>' in calls
    assert calls.count("<tr>") == 1 + 24  # the header and one row per hour
    assert "<td>1</td><td>2</td>" in calls  # the hour they were decided in
    denials = html.split('id="denials-table"')[1].split("</table>")[0]
    assert '<th scope="row">network</th><td>2</td>' in denials
    # The poll replaces the tables beside the live part, with the newest figures.
    decided(agent, "deny", "denied_list")
    live = auditor.get("/", HTTP_HX_REQUEST="true").content.decode()
    assert 'id="denials-data" hx-swap-oob="outerHTML"' in live
    assert '<th scope="row">denied_list</th><td>1</td>' in live
    assert 'id="calls-data" hx-swap-oob="outerHTML"' in live


def test_no_calls_says_so_instead_of_an_empty_table(auditor: Client) -> None:
    html = auditor.get("/").content.decode()
    assert "No calls were decided in the last 24 h." in html
    assert "No calls were denied in the last 24 h." in html
