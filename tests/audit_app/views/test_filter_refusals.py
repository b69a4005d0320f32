"""A filter value the audit log cannot read is refused by name, everywhere it is read.

The audit API and both exports answer 400 in the API's error envelope; the `/audit/`
page answers 400 with the error on the form and the field marked. Never a 500, never
Django's debug page. Each refusal has a control beside it: the same field with a value
that can be read answers 200.
"""

from __future__ import annotations

from datetime import timedelta, timezone
from typing import Any
from urllib.parse import quote

import pytest
from django.db import transaction
from django.test import Client

from audit_app.models import AuditEvent
from audit_app.record import Actor, audit_record
from tests.common.permission_suite import signed_in
from trust_app.services.agents import agent_create, person_create

pytestmark = pytest.mark.django_db

API = "/api/v1/audit/events/"
PAGE = "/audit/"
CSV = "/audit/export.csv"
JSONL = "/audit/export.jsonl"
EVERY_ENDPOINT = (API, PAGE, CSV, JSONL)
# Exports stream every match: they take no page parameters.
PAGED = (API, PAGE)

INVOCATION = "0b6f3c1e-2d4a-4f7e-9c1b-5a6d7e8f9a0b"


@pytest.fixture
def auditor() -> Client:
    person_create(username="audrey", role="auditor", password=None)
    return signed_in("audrey")


@pytest.fixture
def event() -> AuditEvent:
    agent = agent_create(name="alpha", access_level="standard").agent
    with transaction.atomic():
        return audit_record(
            kind="invocation.decided", actor=Actor.agent(agent), agent=agent,
            tool="read_file", outcome="allow", status="queued", reason="allowed",
        )  # fmt: skip


def get(client: Client, endpoint: str, query: str) -> Any:
    """GET with `query` sent as written (percent-encoding included), not re-encoded."""
    return client.get(f"{endpoint}?{query}")


# (field, raw query value as sent, words the message must hold to say the expected form)
UNREADABLE: list[tuple[str, str, str]] = [
    ("since", "2026-02-30", "ISO 8601"),
    ("since", "2026-02-30T10:00:00Z", "ISO 8601"),
    ("since", "2026-13-01", "ISO 8601"),
    ("since", "2026-01-01T25:00", "ISO 8601"),
    ("since", quote("2026-01-01T10:00:00+25:00"), "ISO 8601"),
    ("since", "yesterday", "ISO 8601"),
    ("since", "2026-01-01" + "0" * 5000, "ISO 8601"),
    ("since", "%FF%FE", "ISO 8601"),
    ("since", "2026-01-01%00", "ISO 8601"),
    ("until", "2026-02-29", "ISO 8601"),  # 2026 is no leap year
    ("until", "31%2F01%2F2026", "ISO 8601"),
    ("invocation", "not-a-uuid", "UUID"),
    ("invocation", "a" * 10_000, "UUID"),
    ("invocation", "%C0%AF", "UUID"),
    ("agent", "a" * 201, "exact name"),
    ("agent", "alpha%00", "exact name"),
    ("tool", "read%1Bfile", "exact name"),
    ("outcome", "allow%00", "exact name"),
    ("kind", "k" * 300, "exact name"),
    ("q", "allowed%00", "words"),
    ("q", "w" * 201, "words"),
    ("agnet", "alpha", "one of"),  # a misspelt filter is never "no filter"
]

UNREADABLE_PAGING: list[tuple[str, str, str]] = [
    ("cursor", "abc", "event id"),
    ("cursor", "0", "event id"),
    ("cursor", "-5", "event id"),
    ("cursor", "1e3", "event id"),
    ("cursor", "9" * 30, "event id"),
    ("cursor", "9223372036854775808", "event id"),  # one past the largest bigint
    ("cursor", quote("١٢"), "event id"),  # digits, but not ASCII ones
    ("cursor", "%FF", "event id"),
    ("limit", "0", "whole number"),
    ("limit", "501", "whole number"),
    ("limit", "ten", "whole number"),
    ("limit", "9" * 5000, "whole number"),
    ("limit", "%00", "whole number"),
]

# A readable value of each field: the control beside the refusals above.
READABLE: dict[str, str] = {
    "since": "2026-02-28",
    "until": "2026-02-28T23:59:59Z",
    "invocation": INVOCATION,
    "agent": "alpha",
    "tool": "read_file",
    "outcome": "allow",
    "kind": "invocation.decided",
    "q": "allowed",
    "cursor": "9223372036854775807",
    "limit": "500",
}


def assert_refused(response: Any, endpoint: str, field: str, expected_words: str) -> None:
    body = response.content.decode()
    assert response.status_code == 400, body[:500]
    assert "Traceback" not in body and "technical_500" not in body
    if endpoint == PAGE:
        assert response["Content-Type"].startswith("text/html")
        assert 'id="filter-error"' in body and f'data-field="{field}"' in body
        assert expected_words in body
        assert "No events shown" in body and "data-event=" not in body
        if field not in ("agnet", "invocation", "cursor", "limit", "newer"):
            assert f'id="filter-{field}"' in body
            marked = body.split(f'id="filter-{field}"', 1)[1].split(">", 1)[0]
            assert 'aria-invalid="true"' in marked
    elif endpoint == API and "\x00" in response.wsgi_request.META["QUERY_STRING"].replace(
        "%00", "\x00"
    ):
        # The API's edge refuses a NUL in any query parameter before the view reads it.
        error = response.json()["error"]
        assert error["code"] == "invalid_argument"
        assert f"query parameter {field}: NUL" in error["message"]
    else:
        error = response.json()["error"]
        assert error["code"] == "invalid_argument"
        assert error["details"]["field"] == field
        assert error["message"].startswith(f"{field}:") or field in error["message"]
        assert expected_words in error["message"]
    # An overlong value is quoted back cut, not whole.
    assert len(body) < 50_000


@pytest.mark.parametrize("endpoint", EVERY_ENDPOINT)
@pytest.mark.parametrize(("field", "raw", "expected"), UNREADABLE)
def test_an_unreadable_filter_is_refused_by_name(
    auditor: Client, event: AuditEvent, endpoint: str, field: str, raw: str, expected: str
) -> None:
    assert_refused(get(auditor, endpoint, f"{field}={raw}"), endpoint, field, expected)


@pytest.mark.parametrize("endpoint", PAGED)
@pytest.mark.parametrize(("field", "raw", "expected"), UNREADABLE_PAGING)
def test_an_unreadable_page_parameter_is_refused_by_name(
    auditor: Client, event: AuditEvent, endpoint: str, field: str, raw: str, expected: str
) -> None:
    assert_refused(get(auditor, endpoint, f"{field}={raw}"), endpoint, field, expected)


@pytest.mark.parametrize("endpoint", [CSV, JSONL])
@pytest.mark.parametrize("query", ["limit=10", "cursor=abc", "newer=5", "limit="])
def test_an_export_refuses_page_parameters_it_would_not_honour(
    auditor: Client, event: AuditEvent, endpoint: str, query: str
) -> None:
    field = query.split("=")[0]
    assert_refused(get(auditor, endpoint, query), endpoint, field, "only filters")
    assert get(auditor, endpoint, "tool=read_file").status_code == 200  # control


def test_the_page_refuses_an_unreadable_newer_cursor_by_its_own_name(
    auditor: Client, event: AuditEvent
) -> None:
    assert_refused(get(auditor, PAGE, "newer=abc"), PAGE, "newer", "event id")
    assert get(auditor, PAGE, f"newer={event.id - 1}").status_code == 200


@pytest.mark.parametrize("endpoint", EVERY_ENDPOINT)
def test_since_later_than_until_is_refused_naming_since(
    auditor: Client, event: AuditEvent, endpoint: str
) -> None:
    response = get(auditor, endpoint, "since=2026-03-02&until=2026-03-01")
    assert_refused(response, endpoint, "since", "not later than until")
    assert get(auditor, endpoint, "since=2026-03-01&until=2026-03-01").status_code == 200


@pytest.mark.parametrize("endpoint", EVERY_ENDPOINT)
@pytest.mark.parametrize("field", sorted({f for f, _, _ in UNREADABLE} - {"agnet"}))
def test_control_a_readable_value_of_each_filter_answers_200(
    auditor: Client, event: AuditEvent, endpoint: str, field: str
) -> None:
    response = auditor.get(endpoint, {field: READABLE[field]})
    assert response.status_code == 200, response.content[:500]


@pytest.mark.parametrize("endpoint", PAGED)
@pytest.mark.parametrize("field", ["cursor", "limit"])
def test_control_a_readable_page_parameter_answers_200(
    auditor: Client, event: AuditEvent, endpoint: str, field: str
) -> None:
    response = auditor.get(endpoint, {field: READABLE[field]})
    assert response.status_code == 200
    assert str(event.id).encode() in response.content


def test_control_a_date_time_with_an_offset_filters_by_its_moment(
    auditor: Client, event: AuditEvent
) -> None:
    """The refusals above are about readability, not offsets: the moment just before the
    event, written with a +14:00 offset, still finds it, and the moment after does not."""
    east = timezone(timedelta(hours=14))
    since = (event.created_at - timedelta(seconds=1)).astimezone(east).isoformat()
    after = (event.created_at + timedelta(seconds=1)).astimezone(east).isoformat()
    body = auditor.get(API, {"since": since, "tool": "read_file"}).json()
    assert [e["id"] for e in body["results"]] == [event.id]
    assert auditor.get(API, {"since": after, "tool": "read_file"}).json()["results"] == []


@pytest.mark.parametrize(
    "moment", ["0001-01-01T00:00:00+01:00", "9999-12-31T23:59:59-14:00", "0001-01-01"]
)
def test_a_moment_past_the_first_or_last_utc_year_is_read_as_that_edge(
    auditor: Client, event: AuditEvent, moment: str
) -> None:
    """Written with an offset, the first and last moments leave UTC's years: since the
    first moment there is finds every event, until the last one too."""
    for name in ("since", "until"):
        body = auditor.get(
            API, {name: moment, "agent": "alpha", "kind": "invocation.decided"}
        ).json()
        first = moment.startswith("0001")
        assert [e["id"] for e in body["results"]] == (
            [event.id] if first == (name == "since") else []
        )


def test_an_event_id_past_the_largest_bigint_is_not_found(auditor: Client) -> None:
    assert auditor.get("/audit/99999999999999999999999/").status_code == 404
