"""Reason search on PostgreSQL: literal, case-insensitive, and paged right in both of its steps."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.db import connection

from audit_app.models import AuditEvent
from audit_app.selectors import events as selectors_audit
from audit_app.selectors.events import audit_events, audit_filters_parse, audit_page
from common.testing import require

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _postgresql() -> None:
    require(connection.vendor == "postgresql", "these tests need PostgreSQL (DATABASE_URL)")


def events(*reasons: str, outcome: str = "deny") -> list[AuditEvent]:
    first = AuditEvent.objects.count() + 1
    return AuditEvent.objects.bulk_create(
        AuditEvent(created_at=datetime(2026, 3, 1, tzinfo=UTC), kind="invocation.decided",
                   actor_type="agent", outcome=outcome, reason=reason, prev_hash="0" * 64,
                   hash=f"{first + n:064x}")
        for n, reason in enumerate(reasons)
    )  # fmt: skip


def searched(params: dict[str, str], size: int) -> list[int]:
    """Every page of a search, followed by its cursors."""
    filters, cursor, seen = audit_filters_parse(params), None, []
    while True:
        page = audit_page(filters, cursor=cursor, size=size)
        seen += [e.id for e in page.events]
        if page.next_cursor is None:
            return seen
        cursor = page.next_cursor


def test_search_is_literal_and_ignores_case() -> None:
    done, _, _ = events("100% done_ok", "100 done ok", "100%_done")
    assert searched({"q": "100% DONE_"}, 10) == [done.id]
    assert searched({"q": "%_"}, 10) == [
        e.id for e in AuditEvent.objects.filter(reason="100%_done")
    ]


@pytest.mark.parametrize("window", [3, 7, 1000])
def test_pages_hold_exactly_the_matches_newest_first_across_the_recent_window(
    monkeypatch: pytest.MonkeyPatch, window: int
) -> None:
    # Matches thin out with age: the recent ids hold few, so older pages take the
    # second step (the trigram index) for all or part of a page.
    reasons = [f"host h{n}.example.com is not allowed" if n % 4 == 0 or n > 30 else f"other {n}"
               for n in range(60)]  # fmt: skip
    events(*reasons)
    events(*(f"host h{n}.example.com is not allowed" for n in range(5)), outcome="allow")
    monkeypatch.setattr(selectors_audit, "SEARCH_RECENT_IDS", window)
    for params in ({"q": "EXAMPLE.com is"}, {"q": "example.com", "outcome": "deny"}):
        expected = list(audit_events(audit_filters_parse(params)).values_list("id", flat=True))
        assert len(expected) > 20
        for size in (1, 4, 50):
            assert searched(params, size) == expected
    with connection.cursor() as cursor:  # the planner settings are set back
        cursor.execute(
            "SELECT current_setting('enable_indexscan'), current_setting('enable_seqscan')"
        )
        assert cursor.fetchone() == ("on", "on")


def test_reason_search_can_be_served_by_the_trigram_index() -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1 FROM pg_indexes WHERE indexname = 'tools_audit_reason_trgm'")
        # Migration 0003 creates it where the pg_trgm extension is available.
        require(cursor.fetchone() is not None, "the pg_trgm extension (postgresql-contrib)")
        search = audit_events(audit_filters_parse({"q": "h42.example"}))
        sql, params = search.query.sql_with_params()
        # With neither a walk along an index nor a table scan, only the trigram index can.
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute("SET LOCAL enable_indexscan = off")
        cursor.execute("EXPLAIN " + sql, params)
        plan = "\n".join(row[0] for row in cursor.fetchall())
    assert "tools_audit_reason_trgm" in plan, plan
