"""The trust page: a chart with axes and values, its data as a table, a reset that asks first."""
# ruff: noqa: F811  (pytest fixtures imported from the support module)

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone

from audit_app.models import AuditEvent
from tests.trust_app.test_trust_support import (  # noqa: F401
    TERMINAL_GATED,
    make_agent,
    make_person,
    trust_config,
)
from trust_app.models import TrustChange, TrustScoreSample

pytestmark = pytest.mark.django_db


def _client(person: Any) -> Client:
    client = Client()
    client.force_login(person)
    return client


def test_the_chart_has_axes_values_and_a_table_of_its_points(
    trust_config: Callable[[str], None],
    make_agent: Callable[..., Any],
    make_person: Callable[..., Any],
) -> None:
    trust_config(TERMINAL_GATED)
    agent = make_agent()
    now = timezone.now()
    for minutes, score in ((0, 0.1), (30, 0.35), (60, 0.6)):
        TrustScoreSample.objects.create(
            agent=agent, at=now + timedelta(minutes=minutes), score=score
        )
    html = _client(make_person("operator")).get(f"/agents/{agent.id}/trust/").content.decode()
    svg = html.split('<svg class="trust-chart"', 1)[1].split("</svg>", 1)[0]
    for label in ("0.00", "0.50", "1.00", ">score<", ">time (UTC)<"):
        assert label in svg, label
    assert svg.count("<circle") == 3 and ">0.60<" in svg  # the latest value is written out
    assert 'aria-labelledby="score-heading score-summary"' in svg
    table = html.split('id="score-table"', 1)[1].split("</table>", 1)[0]
    assert [cell in table for cell in ("0.100", "0.350", "0.600")] == [True, True, True]
    assert f'href="/agents/{agent.id}/"' in html  # back to the agent page


def test_reset_without_confirming_changes_nothing_and_with_it_resets(
    trust_config: Callable[[str], None],
    make_agent: Callable[..., Any],
    make_person: Callable[..., Any],
) -> None:
    trust_config(TERMINAL_GATED)
    agent = make_agent()
    admin = _client(make_person("admin"))
    page = admin.get(f"/agents/{agent.id}/trust/").content.decode()
    assert 'name="confirm" value="yes" required' in page
    url = f"/agents/{agent.id}/trust/reset/"
    unconfirmed = admin.post(url, {"reason": "new job"}, follow=True)
    assert "tick the box to confirm" in unconfirmed.content.decode()
    assert not TrustChange.objects.filter(agent=agent, kind="reset").exists()
    assert not AuditEvent.objects.filter(kind="trust.reset", agent_id=agent.id).exists()
    # Positive control: the same admin, confirming, resets.
    assert admin.post(url, {"reason": "new job", "confirm": "yes"}).status_code == 302
    assert TrustChange.objects.filter(agent=agent, kind="reset").exists()
    # An operator is refused either way.
    operator = _client(make_person("operator"))
    assert operator.post(url, {"reason": "x"}).status_code == 403
    assert operator.post(url, {"reason": "x", "confirm": "yes"}).status_code == 403
