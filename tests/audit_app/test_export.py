"""The audit exports on PostgreSQL: COPY writes what the Python encoders write, byte for byte."""

from __future__ import annotations

import csv
import io
import json
import uuid
from datetime import UTC, datetime
from typing import Any

import pytest
from django.db import connection

from audit_app.export import (
    COPY_CHUNK_BYTES,
    csv_lines,
    csv_lines_copied,
    csv_lines_encoded,
    jsonl_lines,
    jsonl_lines_copied,
    jsonl_lines_encoded,
)
from audit_app.models import AuditEvent
from audit_app.selectors.events import AuditFilters, audit_filters_parse
from common.testing import require

pytestmark = pytest.mark.django_db

# Text that trips every quoting and escaping rule of CSV and JSON.
AWKWARD = (
    'say "hi", then\nnew line',
    "carriage\rreturn",
    "back\\slash and \t tab and \x1b escape",
    "=SUM(A1:A9)",
    "+1",
    "-1",
    "@cmd",
    "\tlead tab",
    "\rlead return",
    "ünïcödé ✓ 漢字 \u2028",
    "",
    "plain",
    "100% done_ok",
)


@pytest.fixture(autouse=True)
def _postgresql() -> None:
    require(connection.vendor == "postgresql", "these tests need PostgreSQL (DATABASE_URL)")


def event(n: int, **fields: Any) -> AuditEvent:
    values: dict[str, Any] = {
        "created_at": datetime(2026, 3, 1, 12, 0, n % 60, 123456 * (n % 2), tzinfo=UTC),
        "kind": "invocation.decided",
        "actor_type": "agent",
        "actor_id": str(n),
        "actor_name": "alpha",
        "agent_id": uuid.uuid4(),
        "agent_name": "alpha",
        "invocation_id": uuid.uuid4(),
        "tool": "read_file",
        "category": "file_system",
        "action_type": "file:read",
        "arguments_hash": "a" * 64,
        "outcome": "allow",
        "status": "queued",
        "reason": f"reason {n}",
        "rule": "level",
        "duration_ms": n,
        "request_id": f"req-{n}",
        "data": {"trace": ["step"], "n": n},
        "prev_hash": f"{n:064x}",
        "hash": f"{n + 1:064x}",
    }
    values.update(fields)
    return AuditEvent.objects.create(**values)


@pytest.fixture
def awkward_events() -> list[AuditEvent]:
    events = []
    for n, text in enumerate(AWKWARD):
        events.append(
            event(n, reason=text, rule=text, kind=text or "k", actor_name=text, agent_name=text,
                  tool=text, request_id=text, status=text,
                  data={"text": text, "nested": {"list": [text, None, 1.5, True]}})
        )  # fmt: skip
    events.append(
        event(len(AWKWARD), agent_id=None, invocation_id=None, duration_ms=None, data={},
              actor_id="", category="", action_type="", outcome="")
    )  # fmt: skip
    events.append(event(len(AWKWARD) + 1, data=["-1"]))  # JSON text that looks like a formula
    return events


@pytest.mark.parametrize(
    "filters",
    [{}, {"q": "NEW LINE"}, {"q": "100%"}, {"agent": "plain"}, {"since": "2026-03-01T12:00:05Z"}],
)
def test_copy_writes_exactly_the_bytes_the_encoders_write(
    awkward_events: list[AuditEvent], filters: dict[str, str]
) -> None:
    parsed = audit_filters_parse(filters)
    assert b"".join(csv_lines_copied(parsed)) == b"".join(csv_lines_encoded(parsed))
    assert b"".join(jsonl_lines_copied(parsed)) == b"".join(jsonl_lines_encoded(parsed))


def test_copied_exports_hold_the_filtered_rows_newest_first_and_neutralise_formulas(
    awkward_events: list[AuditEvent],
) -> None:
    parsed = audit_filters_parse({"actor": "=SUM(A1:A9)"})
    rows = list(csv.DictReader(io.StringIO(b"".join(csv_lines(parsed)).decode())))
    formula = next(e for e in awkward_events if e.actor_name == "=SUM(A1:A9)")
    assert [int(r["id"]) for r in rows] == [formula.id]
    assert (
        rows[0]["reason"] == "'=SUM(A1:A9)"
        and rows[0]["created_at"] == "2026-03-01T12:00:03.123456+00:00"
    )

    everything = b"".join(jsonl_lines(AuditFilters())).decode()
    records = [json.loads(line) for line in everything.split("\n")[:-1]]  # not at U+2028
    expected = list(AuditEvent.objects.order_by("-id").values_list("id", flat=True))
    assert [r["id"] for r in records] == expected
    by_id = {r["id"]: r for r in records}
    for e in awkward_events[: len(AWKWARD)]:
        assert by_id[e.id]["reason"] == e.reason  # JSON keeps the text as it is
        assert by_id[e.id]["data"] == e.data
    blank = by_id[awkward_events[len(AWKWARD)].id]
    assert blank["agent_id"] is None and blank["duration_ms"] is None and blank["data"] == {}
    assert list(blank)[:3] == ["id", "created_at", "kind"] and list(blank)[-1] == "data"


def test_an_export_closed_midway_leaves_the_connection_usable() -> None:
    bulky = "x" * 1000
    AuditEvent.objects.bulk_create(
        AuditEvent(created_at=datetime(2026, 3, 1, tzinfo=UTC), kind="bulk", actor_type="agent",
                   reason=bulky, prev_hash="0" * 64, hash=f"{n:064x}")
        for n in range(1, COPY_CHUNK_BYTES // 1000 * 3)
    )  # fmt: skip
    lines = csv_lines_copied(AuditFilters())
    next(lines)  # the header
    assert len(next(lines)) >= COPY_CHUNK_BYTES  # COPY is under way, more is to come
    lines.close()  # as when the client goes away
    assert AuditEvent.objects.filter(kind="bulk").count() == COPY_CHUNK_BYTES // 1000 * 3 - 1


FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
# Columns whose database type cannot hold text (numbers, a timestamp, UUIDs).
TYPED = {"id", "created_at", "duration_ms", "agent_id", "invocation_id"}


@pytest.mark.parametrize("encode", [csv_lines_copied, csv_lines_encoded])
@pytest.mark.parametrize("start", FORMULA_STARTS)
def test_every_text_cell_that_starts_like_a_formula_is_guarded(encode: Any, start: str) -> None:
    text = f"{start}A1"  # fits the narrowest column (actor_type)
    # Attack: a formula in every text column; `data` as JSON whose text starts with "-".
    attacked = event(1, **{name: text for name in TEXT_COLUMNS}, data=-1)
    # Positive control: the same columns holding plain text keep it as it is.
    plain = event(2, **{name: "plain" for name in TEXT_COLUMNS})
    rows = {
        int(r["id"]): r
        for r in csv.DictReader(io.StringIO(b"".join(encode(AuditFilters())).decode()))
    }
    exported = set(rows[attacked.id])
    assert exported == TYPED | set(TEXT_COLUMNS) | {"data"}  # no column is left unchecked
    for name in TEXT_COLUMNS:
        assert rows[attacked.id][name] == "'" + text, name
        assert rows[plain.id][name] == "plain", name
    assert rows[attacked.id]["data"] == "'-1"
    assert json.loads(rows[plain.id]["data"]) == plain.data
    assert rows[attacked.id]["duration_ms"] == "1"  # typed cells are written as they are


# Every exported column the database holds as text (`data` is checked on its own).
TEXT_COLUMNS = (
    "kind", "actor_type", "actor_id", "actor_name", "agent_name", "tool", "category",
    "action_type", "arguments_hash", "outcome", "status", "rule", "reason", "request_id",
    "prev_hash", "hash",
)  # fmt: skip
