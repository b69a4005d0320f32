"""Argument-aware audit search: what a call acted on (path, host, program, SQL table),
through the audit API, the `/audit/` page and the exports, with counts of what matched.

Events are written by audit_record, the one writer, with the data the submit path
records (`data.arguments`, secrets redacted) and the egress rows' `data.host`.
"""

from __future__ import annotations

import csv
import importlib
import io
import re
import uuid
from typing import Any

import pytest
from django.db import connection, transaction
from django.test import Client
from django.test.utils import CaptureQueriesContext

from audit_app.models import AuditEvent, AuditSubject
from audit_app.record import Actor, audit_record
from audit_app.subjects import SubjectKind, call_subjects, sql_tables
from tests.common.permission_suite import signed_in
from trust_app.models import Agent
from trust_app.services.agents import agent_create, person_create

pytestmark = pytest.mark.django_db

API = "/api/v1/audit/events/"


@pytest.fixture
def auditor() -> Client:
    person_create(username="audrey", role="auditor", password=None)
    return signed_in("audrey")


@pytest.fixture
def bots() -> tuple[Agent, Agent]:
    return (
        agent_create(name="notes-bot", access_level="standard").agent,
        agent_create(name="web-bot", access_level="standard").agent,
    )


def call(
    agent: Agent, tool: str, category: str, arguments: dict[str, Any], **extra: Any
) -> uuid.UUID:
    """One call as the console audits it: decided (with its arguments), then finished."""
    invocation_id = uuid.uuid4()
    with transaction.atomic():
        audit_record(
            kind="invocation.decided", actor=Actor.agent(agent), agent=agent,
            invocation_id=invocation_id, tool=tool, category=category,
            outcome=extra.get("outcome", "allow"), status="queued",
            reason=extra.get("reason", "allowed"),
            data={"trace": ["level standard permits it"], "arguments": arguments},
        )  # fmt: skip
    with transaction.atomic():
        audit_record(
            kind="invocation.finished", actor=Actor.agent(agent), agent=agent,
            invocation_id=invocation_id, tool=tool, category=category,
            outcome="ok", status="succeeded", reason="done",
        )  # fmt: skip
    return invocation_id


def connection_made(agent: Agent, invocation_id: uuid.UUID, host: str) -> None:
    with transaction.atomic():
        audit_record(
            kind="egress.connection", actor=Actor.agent(agent), agent=agent,
            invocation_id=invocation_id, tool="shell_command", category="terminal",
            outcome="closed", reason=f"{host}:443: 10 bytes up, 20 bytes down",
            data={"protocol": "tls", "host": host, "port": 443, "bytes_up": 10, "bytes_down": 20},
        )  # fmt: skip


@pytest.fixture
def history(bots: tuple[Agent, Agent]) -> dict[str, uuid.UUID]:
    notes, web = bots
    calls = {
        "write_a": call(notes, "write_file", "file_system",
                        {"path": "notes/a.txt", "content": "x"}),
        "read_a": call(notes, "read_file", "file_system", {"path": "./notes/./a.txt"}),
        "read_deep": call(notes, "read_file", "file_system", {"path": "notes/sub/b.md"}),
        # Spelt under notes/, but it names .git/config: never "under notes/".
        "escape": call(notes, "write_file", "file_system",
                       {"path": "notes/" + "./" * 40 + "../.git/config", "content": "x"},
                       outcome="deny", reason="path outside scope"),
        "sibling": call(notes, "read_file", "file_system", {"path": "notes-old/c.txt"}),
        "Upper": call(notes, "read_file", "file_system", {"path": "NOTES/d.txt"}),
        "http": call(web, "http_request", "web", {"url": "https://API.Example.org/v1?q=1"}),
        "http_other": call(web, "http_request", "web", {"url": "https://example.net/"}),
        "shell": call(notes, "shell_command", "terminal",
                      {"command": "LANG=C /usr/bin/git log -1 | head -n 3"}),
        "argv": call(notes, "shell_command", "terminal", {"argv": ["python3", "notes/x.py"]}),
        "select": call(web, "sql_query", "database",
                       {"connection": "shop", "query": "SELECT * FROM public.orders o "
                        "JOIN customers c ON c.id = o.customer WHERE o.note = 'from invoices'"}),
        "delete": call(web, "db_mutate", "database",
                       {"connection": "shop", "query": "delete from orders where id = 1"}),
    }  # fmt: skip
    connection_made(notes, calls["shell"], "github.example.org")
    return calls


def calls_in(results: list[dict[str, Any]]) -> set[str]:
    return {r["invocation_id"] for r in results}


def ids(history: dict[str, uuid.UUID], *names: str) -> set[str]:
    return {str(history[n]) for n in names}


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({"path": "notes/"}, ("write_a", "read_a", "read_deep")),
        ({"path": "notes"}, ("write_a", "read_a", "read_deep")),
        ({"path": "./notes/sub/"}, ("read_deep",)),
        ({"path": "notes/a.txt"}, ("write_a", "read_a")),
        ({"path": ".git/config"}, ("escape",)),
        ({"path": "notes/", "tool": "write_file"}, ("write_a",)),
        ({"host": "api.example.org"}, ("http",)),
        ({"host": "API.EXAMPLE.ORG"}, ("http",)),
        ({"host": "github.example.org"}, ("shell",)),  # the connection's host names its call
        ({"program": "git"}, ("shell",)),
        ({"program": "head"}, ("shell",)),
        ({"program": "/usr/bin/python3"}, ("argv",)),
        ({"table": "orders"}, ("select", "delete")),
        ({"table": "public.orders"}, ("select",)),
        ({"table": "Customers"}, ("select",)),
        ({"table": "invoices"}, ()),  # a word inside a string names no table
        ({"path": "notes/", "program": "git"}, ()),
    ],
)
def test_the_api_finds_every_event_of_the_calls_that_acted_on_it(
    auditor: Client,
    history: dict[str, uuid.UUID],
    params: dict[str, str],
    expected: tuple[str, ...],
) -> None:
    body = auditor.get(API, {**params, "limit": "500"}).json()
    assert calls_in(body["results"]) == ids(history, *expected)
    # Every event of each call: the decision, the finish (and the connection).
    for name in expected:
        held = AuditEvent.objects.filter(invocation_id=history[name]).count()
        assert sum(r["invocation_id"] == str(history[name]) for r in body["results"]) == held


def test_control_without_an_argument_filter_every_call_is_listed(
    auditor: Client, history: dict[str, uuid.UUID]
) -> None:
    body = auditor.get(API, {"limit": "500"}).json()
    assert ids(history, *history) <= calls_in(body["results"])
    assert "matched" not in body


def test_what_notes_bot_did_under_notes_is_one_query_with_counts(
    auditor: Client, history: dict[str, uuid.UUID]
) -> None:
    body = auditor.get(API, {"agent": "notes-bot", "path": "notes/"}).json()
    assert calls_in(body["results"]) == ids(history, "write_a", "read_a", "read_deep")
    matched = {(m["kind"], m["value"]): (m["calls"], m["events"]) for m in body["matched"]}
    assert matched == {("path", "notes/a.txt"): (2, 4), ("path", "notes/sub/b.md"): (1, 2)}
    # Counted over every page, not the one shown.
    first = auditor.get(API, {"agent": "notes-bot", "path": "notes/", "limit": "1"}).json()
    assert len(first["results"]) == 1 and first["matched"] == body["matched"]
    assert "path=notes" in first["next"]


def test_the_page_filters_by_arguments_and_shows_the_counts(
    auditor: Client, history: dict[str, uuid.UUID]
) -> None:
    response = auditor.get("/audit/", {"agent": "notes-bot", "path": "notes/"})
    html = response.content.decode()
    assert response.status_code == 200
    shown = {int(i) for i in re.findall(r'data-event="(\d+)"', html)}
    expected = AuditEvent.objects.filter(
        invocation_id__in=[history[n] for n in ("write_a", "read_a", "read_deep")]
    )
    assert shown == set(expected.values_list("id", flat=True))
    assert "6 matching events" in html
    table = html.split('id="matched"', 1)[1].split("</table>", 1)[0]
    assert "<code>notes/a.txt</code></td><td>2</td><td>4</td>" in table
    assert 'id="filter-path" value="notes"' in html  # the form keeps the filter
    # The export links carry it: the export holds the same events.
    export = re.search(r'id="export-csv" href="([^"]+)"', html)
    assert export is not None and "path=notes" in export.group(1)
    streamed: Any = auditor.get(export.group(1).replace("&amp;", "&"))
    rows = list(csv.DictReader(io.StringIO(b"".join(streamed.streaming_content).decode())))
    assert {int(r["id"]) for r in rows} == shown


def test_control_the_page_without_argument_filters_lists_the_others_too(
    auditor: Client, history: dict[str, uuid.UUID]
) -> None:
    html = auditor.get("/audit/", {"agent": "notes-bot", "limit": "500"}).content.decode()
    assert 'id="matched"' not in html
    shown = {int(i) for i in re.findall(r'data-event="(\d+)"', html)}
    sibling = AuditEvent.objects.filter(invocation_id=history["sibling"])
    assert set(sibling.values_list("id", flat=True)) <= shown


@pytest.mark.parametrize(
    ("field", "raw"),
    [("host", "exa mple.org"), ("host", "%FF"), ("host", "a" * 300), ("path", "p" * 201),
     ("program", "git%1B"), ("table", "t" * 201)],
)  # fmt: skip
@pytest.mark.parametrize("endpoint", [API, "/audit/", "/audit/export.jsonl"])
def test_an_unreadable_argument_filter_is_refused_by_name(
    auditor: Client, history: dict[str, uuid.UUID], endpoint: str, field: str, raw: str
) -> None:
    response = auditor.get(f"{endpoint}?{field}={raw}")
    assert response.status_code == 400
    if endpoint == "/audit/":
        html = response.content.decode()
        assert f'data-field="{field}"' in html
        assert 'aria-invalid="true"' in html.split(f'id="filter-{field}"', 1)[1].split(">", 1)[0]
    else:
        assert response.json()["error"]["details"]["field"] == field
    assert auditor.get(endpoint, {field: "example.org"}).status_code == 200  # control


def test_the_search_is_answered_from_the_index_not_row_by_row(
    auditor: Client, history: dict[str, uuid.UUID]
) -> None:
    with CaptureQueriesContext(connection) as queries:
        auditor.get(API, {"path": "notes/"})
    searched = [q["sql"] for q in queries.captured_queries if "audit_app_auditsubject" in q["sql"]]
    assert searched and all("LIKE" in sql for sql in searched)
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SET LOCAL enable_seqscan = off")
            cursor.execute(
                "EXPLAIN SELECT event_id FROM audit_app_auditsubject "
                "WHERE kind = 'path' AND value LIKE 'notes/%%'"
            )
            plan = " ".join(row[0] for row in cursor.fetchall())
        assert "audit_subject_kind_value" in plan


def test_a_connection_host_finds_the_earlier_events_of_its_call(
    history: dict[str, uuid.UUID], auditor: Client
) -> None:
    """The host is named only by the call's egress row; a search for it still finds the
    call's decision, recorded before the connection, through the call."""
    decided = AuditEvent.objects.get(invocation_id=history["shell"], kind="invocation.decided")
    assert not AuditSubject.objects.filter(event=decided, kind="host").exists()
    assert AuditSubject.objects.filter(event=decided, kind="program").count() == 2
    found = auditor.get(API, {"host": "github.example.org", "limit": "500"}).json()
    ids = {event["id"] for event in found["results"]}
    assert decided.id in ids
    every = set(
        AuditEvent.objects.filter(invocation_id=history["shell"]).values_list("id", flat=True)
    )
    assert every <= ids


def test_subjects_of_a_call_read_from_its_arguments() -> None:
    assert call_subjects("terminal", {"command": "a=1 env | sort; (cd x && make)"}) == [
        (SubjectKind.PROGRAM, "env"),
        (SubjectKind.PROGRAM, "sort"),
        (SubjectKind.PROGRAM, "cd"),
        (SubjectKind.PROGRAM, "make"),
    ]
    assert call_subjects("web", {"url": "not a url"}) == []
    # A search query of another category is no SQL.
    assert call_subjects("search", {"query": "select * from orders"}) == []
    assert sql_tables(
        "WITH recent AS (SELECT * FROM orders) SELECT extract(year FROM d) FROM recent, "
        '"Line Items" li /* FROM hidden */ -- FROM gone\nLEFT JOIN s.refunds r ON true'
    ) == ["orders", "Line Items", "s.refunds", "refunds"]
    assert sql_tables("INSERT INTO audit_copy (a, b) SELECT a, b FROM $$x$$") == ["audit_copy"]


def test_the_migration_rebuilds_the_index_the_writer_keeps(history: dict[str, uuid.UUID]) -> None:
    """Events recorded before the index existed get the same rows as events written
    since: the migration's rebuild from the chained data equals the live index."""
    from django.apps import apps

    rebuild = importlib.import_module("audit_app.migrations.0002_audit_subjects")
    columns = ("event_id", "invocation_id", "kind", "value")
    live = sorted(AuditSubject.objects.values_list(*columns))
    assert len(live) > len(history)  # control: the writer indexed them
    AuditSubject.objects.all().delete()
    rebuild.index_recorded_events(apps, None)
    assert sorted(AuditSubject.objects.values_list(*columns)) == live
