"""The audit log as auditors and admins use it: filters, keyset pages, detail, exports, API."""

from __future__ import annotations

import csv
import io
import json
import re
import uuid
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.db import transaction
from django.test import Client
from django.utils import timezone

from audit_app.models import AuditEvent
from audit_app.record import Actor, audit_record
from tests.common.permission_suite import signed_in
from tools_app.models import Invocation
from trust_app.models import Agent
from trust_app.services.agents import agent_create, person_create

pytestmark = pytest.mark.django_db

SECRET = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"


@pytest.fixture
def auditor() -> Client:
    person_create(username="audrey", role="auditor", password=None)
    return signed_in("audrey")


@pytest.fixture
def admin() -> Client:
    person_create(username="ada", role="admin", password=None)
    return signed_in("ada")


@pytest.fixture
def agents() -> tuple[Agent, Agent]:
    return (
        agent_create(name="alpha", access_level="standard").agent,
        agent_create(name="beta", access_level="restricted").agent,
    )


def record(agent: Agent, **fields: Any) -> AuditEvent:
    with transaction.atomic():
        return audit_record(
            kind=fields.pop("kind", "invocation.decided"),
            actor=Actor.agent(agent),
            agent=agent,
            **fields,
        )


@pytest.fixture
def calls(agents: tuple[Agent, Agent]) -> list[AuditEvent]:
    """Thirty decided calls: alpha's read_file allowed, beta's http_request denied."""
    alpha, beta = agents
    events = []
    for i in range(15):
        events.append(
            record(alpha, tool="read_file", category="file_system", action_type="file:read",
                   outcome="allow", status="queued", reason=f"allowed read {i}", rule="level")
        )  # fmt: skip
        events.append(
            record(beta, tool="http_request", category="web", action_type="net:http",
                   outcome="deny", status="denied", rule="network",
                   reason=f"host example{i}.org is not on the allowlist")
        )  # fmt: skip
    return events


def ids_in(html: str) -> list[int]:
    return [int(m) for m in re.findall(r'data-event="(\d+)"', html)]


def test_list_is_newest_first_and_filters_by_agent_and_outcome(
    auditor: Client, calls: list[AuditEvent]
) -> None:
    html = auditor.get("/audit/", {"agent": "beta", "outcome": "deny"}).content.decode()
    beta_ids = sorted((e.id for e in calls if e.agent_name == "beta"), reverse=True)
    assert ids_in(html) == beta_ids
    assert (
        ids_in(auditor.get("/audit/", {"agent": "beta", "outcome": "allow"}).content.decode()) == []
    )


@pytest.mark.parametrize(
    ("params", "agent_name"),
    [
        ({"tool": "read_file"}, "alpha"),
        ({"category": "web"}, "beta"),
        ({"action_type": "file:read"}, "alpha"),
        ({"status": "denied"}, "beta"),
        ({"actor": "alpha"}, "alpha"),
        ({"q": "ALLOWLIST"}, "beta"),
    ],
)
def test_each_filter_narrows_to_the_matching_events(
    auditor: Client, calls: list[AuditEvent], params: dict[str, str], agent_name: str
) -> None:
    # Registering the tools at migrate time audited them too: look at decided calls.
    query = {**params, "kind": "invocation.decided", "limit": "100"}
    html = auditor.get("/audit/", query).content.decode()
    expected = sorted((e.id for e in calls if e.agent_name == agent_name), reverse=True)
    assert ids_in(html) == expected


def test_time_range_filters_by_created_at(auditor: Client, calls: list[AuditEvent]) -> None:
    middle = calls[10]
    since = middle.created_at.isoformat()
    html = auditor.get("/audit/", {"since": since, "limit": "100"}).content.decode()
    assert min(ids_in(html)) == middle.id
    until = (calls[0].created_at - timedelta(seconds=1)).isoformat()
    html = auditor.get("/audit/", {"until": until, "agent": "alpha"}).content.decode()
    assert ids_in(html) == []


def test_a_malformed_filter_is_refused_with_the_field_named(auditor: Client) -> None:
    response = auditor.get("/audit/", {"since": "yesterday"})
    assert response.status_code == 400
    assert "since" in response.content.decode() and "ISO 8601" in response.content.decode()


def test_keyset_pages_walk_every_event_once_with_the_filters_kept(
    auditor: Client, calls: list[AuditEvent]
) -> None:
    seen: list[int] = []
    url = "/audit/?agent=alpha&kind=invocation.decided&limit=4"
    pages = 0
    while url:
        html = auditor.get(url).content.decode()
        seen.extend(ids_in(html))
        pages += 1
        found = re.search(r'id="next-page" href="([^"]+)"', html)
        url = found.group(1).replace("&amp;", "&") if found else ""
        assert not url or "agent=alpha" in url
    assert pages == 4
    assert seen == sorted((e.id for e in calls if e.agent_name == "alpha"), reverse=True)


def test_api_lists_with_filters_and_a_next_link(auditor: Client, calls: list[AuditEvent]) -> None:
    body = auditor.get(
        "/api/v1/audit/events/", {"agent": "beta", "outcome": "deny", "limit": "10"}
    ).json()
    assert [e["agent"]["name"] for e in body["results"]] == ["beta"] * 10
    assert body["results"][0]["id"] > body["results"][-1]["id"]
    first = body["results"][0]
    assert {"id", "created_at", "kind", "actor", "tool", "category", "action_type", "outcome",
            "status", "reason", "rule", "data", "hash", "prev_hash"} <= set(first)  # fmt: skip
    assert body["next"].startswith("http://testserver/api/v1/audit/events/?")
    rest = auditor.get(body["next"]).json()
    assert len(rest["results"]) == 5 and rest["next"] is None
    ids = [e["id"] for e in body["results"] + rest["results"]]
    assert ids == sorted((e.id for e in calls if e.agent_name == "beta"), reverse=True)


def test_api_refuses_bad_filters_with_the_envelope(auditor: Client) -> None:
    response = auditor.get("/api/v1/audit/events/", {"until": "31/01/2026"})
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "invalid_argument"
    assert "until" in response.json()["error"]["message"]
    assert auditor.get("/api/v1/audit/events/", {"cursor": "abc"}).status_code == 400
    assert auditor.get("/api/v1/audit/events/", {"limit": "0"}).status_code == 400


def test_api_answers_a_personal_token(calls: list[AuditEvent]) -> None:
    from trust_app.services.agents import person_token_issue

    person = person_create(username="script", role="auditor", password=None)
    token = person_token_issue(person=person)
    client = Client(HTTP_AUTHORIZATION=f"Bearer {token}")
    body = client.get("/api/v1/audit/events/", {"tool": "http_request", "agent": "beta"}).json()
    assert len(body["results"]) == 15


def _parse_csv(response: Any) -> list[dict[str, str]]:
    body = b"".join(response.streaming_content).decode()
    return list(csv.DictReader(io.StringIO(body)))


def test_csv_export_streams_exactly_the_filtered_rows(
    auditor: Client, calls: list[AuditEvent]
) -> None:
    response = auditor.get("/audit/export.csv", {"agent": "alpha", "q": "read 1"})
    assert response.status_code == 200 and response.streaming
    assert response["Content-Type"].startswith("text/csv")
    assert "attachment" in response["Content-Disposition"]
    rows = _parse_csv(response)
    expected = [e for e in reversed(calls) if e.agent_name == "alpha" and "read 1" in e.reason]
    assert [int(r["id"]) for r in rows] == [e.id for e in expected]
    assert {r["agent_name"] for r in rows} == {"alpha"}
    assert rows[0]["hash"] == expected[0].hash


def test_jsonl_export_has_one_record_per_event_with_its_data(
    auditor: Client, agents: tuple[Agent, Agent]
) -> None:
    event = record(agents[0], tool="read_file", outcome="allow",
                   data={"trace": ["level standard allows file_system"], "n": 1})  # fmt: skip
    response = auditor.get("/audit/export.jsonl", {"tool": "read_file", "actor": "alpha"})
    assert response["Content-Type"] == "application/x-ndjson"
    lines = b"".join(response.streaming_content).decode().splitlines()  # type: ignore[attr-defined]
    records = [json.loads(line) for line in lines]
    assert [r["id"] for r in records] == [event.id]
    assert records[0]["data"] == {"trace": ["level standard allows file_system"], "n": 1}
    assert records[0]["agent_id"] == str(agents[0].id)


def test_csv_export_neutralises_spreadsheet_formulas(
    auditor: Client, agents: tuple[Agent, Agent]
) -> None:
    record(agents[0], tool="read_file", reason='=HYPERLINK("http://evil.example","x")')
    rows = _parse_csv(auditor.get("/audit/export.csv", {"tool": "read_file", "actor": "alpha"}))
    assert rows[0]["reason"].startswith("'=HYPERLINK")


def _invocation_with_secret(agent: Agent) -> tuple[Invocation, AuditEvent]:
    invocation = Invocation.objects.create(
        agent=agent, tool="read_file", category="file_system", action_type="file:read",
        safety_class="read", arguments={"path": "notes.txt", "token": SECRET},
        arguments_redacted={"path": "notes.txt", "token": "[REDACTED:secret]"},
        arguments_hash="0" * 64, status="succeeded",
        decision={"outcome": "allow", "trace": ["level standard permits file_system"]},
        content="token=[REDACTED:github_token]", raw_content=f"token={SECRET}\n\x1b[31mred",
    )  # fmt: skip
    decided = record(
        agent, kind="invocation.decided", invocation_id=invocation.id, tool="read_file",
        outcome="allow", status="queued",
        data={"trace": ["level standard permits file_system"],
              "arguments": invocation.arguments_redacted},
    )  # fmt: skip
    record(agent, kind="invocation.finished", invocation_id=invocation.id, tool="read_file",
           outcome="ok", status="succeeded")  # fmt: skip
    return invocation, decided


def test_event_detail_shows_trace_output_and_for_auditors_raw_output_redacted(
    auditor: Client, admin: Client, agents: tuple[Agent, Agent]
) -> None:
    _, decided = _invocation_with_secret(agents[0])
    html = auditor.get(f"/audit/{decided.id}/").content.decode()
    assert "level standard permits file_system" in html
    assert 'id="raw-output"' in html and "[REDACTED" in html
    assert 'id="arguments"' in html
    assert SECRET not in html
    admin_html = admin.get(f"/audit/{decided.id}/").content.decode()
    assert "token=[REDACTED:github_token]" in admin_html
    assert 'id="raw-output"' not in admin_html and 'id="arguments"' not in admin_html
    assert SECRET not in admin_html


def test_invocation_timeline_lists_every_event_of_the_call_in_order(
    auditor: Client, agents: tuple[Agent, Agent]
) -> None:
    invocation, _ = _invocation_with_secret(agents[0])
    record(agents[0], tool="read_file", outcome="allow")  # another call, not in the timeline
    html = auditor.get(f"/audit/invocations/{invocation.id}/").content.decode()
    assert html.index("invocation.decided") < html.index("invocation.finished")
    assert html.count("data-step=") == 2
    assert auditor.get(f"/audit/invocations/{uuid.uuid4()}/").status_code == 404
    assert auditor.get("/audit/999999/").status_code == 404


def test_each_row_links_to_its_event_page(auditor: Client, calls: list[AuditEvent]) -> None:
    for html in (
        auditor.get("/audit/", {"agent": "beta"}).content.decode(),
        auditor.get("/audit/", {"agent": "beta"}, HTTP_HX_REQUEST="true").content.decode(),
    ):
        links = re.findall(r'<tr data-event="(\d+)">\s*<td><a href="([^"]+)">', html)
        assert len(links) == AuditEvent.objects.filter(agent_name="beta").count()
        for event_id, href in links[:2]:
            page = auditor.get(href)
            assert page.status_code == 200 and f"Audit event #{event_id}" in page.content.decode()


def test_htmx_filtering_answers_the_results_partial(
    auditor: Client, calls: list[AuditEvent]
) -> None:
    html = auditor.get("/audit/", {"agent": "alpha"}, HTTP_HX_REQUEST="true").content.decode()
    assert html.lstrip().startswith('<section id="audit-results">')
    assert "<html" not in html


def test_people_names_survive_their_deletion(auditor: Client, agents: tuple[Agent, Agent]) -> None:
    person = person_create(username="leaver", role="admin", password=None)
    with transaction.atomic():
        audit_record(kind="agent.updated", actor=Actor.person(person), agent=agents[0])
    get_user_model().objects.filter(pk=person.pk).delete()
    assert ids_in(auditor.get("/audit/", {"actor": "leaver"}).content.decode())


def test_since_later_than_until_is_refused(auditor: Client) -> None:
    now = timezone.now()
    response = auditor.get(
        "/api/v1/audit/events/",
        {"since": now.isoformat(), "until": (now - timedelta(days=1)).isoformat()},
    )
    assert response.status_code == 400


def test_the_call_page_tells_the_story_arguments_decision_people_result_effects(
    auditor: Client, agents: tuple[Agent, Agent]
) -> None:
    agent = agents[0]
    invocation = Invocation.objects.create(
        agent=agent, tool="http_request", category="web", action_type="net:http",
        safety_class="network", arguments={"url": "https://api.example.org/v1"},
        arguments_redacted={"url": "https://api.example.org/v1"},
        arguments_hash="1" * 64, status="succeeded", task_id="T-42",
        decision={"outcome": "require_approval", "trace": ["network mode: allowlist"]},
        content="HTTP 200: 3 items" + " x" * 400,
    )  # fmt: skip
    person = person_create(username="olga", role="operator", password=None)
    with transaction.atomic():
        audit_record(
            kind="invocation.decided", actor=Actor.agent(agent), agent=agent,
            invocation_id=invocation.id, tool="http_request", category="web",
            outcome="require_approval", status="pending_approval", rule="approval_rule",
            reason="one person must approve",
            data={"trace": ["network mode: allowlist", "rule asks one person"],
                  "arguments": invocation.arguments_redacted},
        )  # fmt: skip
        audit_record(
            kind="approval.approved", actor=Actor.person(person), agent=agent,
            invocation_id=invocation.id, tool="http_request", outcome="approve",
            reason="expected sync",
        )  # fmt: skip
        audit_record(
            kind="secret.used", actor=Actor.system("worker"), agent=agent,
            invocation_id=invocation.id, tool="http_request", outcome="used",
            reason="secret API_KEY used by alpha with http_request",
            data={"secret": "API_KEY", "version": 1, "server": ""},
        )  # fmt: skip
        audit_record(
            kind="egress.connection", actor=Actor.agent(agent), agent=agent,
            invocation_id=invocation.id, tool="http_request", category="web",
            outcome="closed", reason="api.example.org:443: 120 bytes up, 900 bytes down",
            data={"protocol": "tls", "host": "api.example.org", "port": 443,
                  "bytes_up": 120, "bytes_down": 900, "secrets": ["API_KEY"]},
        )  # fmt: skip
        audit_record(
            kind="invocation.finished", actor=Actor.system("worker"), agent=agent,
            invocation_id=invocation.id, tool="http_request", category="web",
            outcome="ok", status="succeeded", duration_ms=321,
        )  # fmt: skip
    html = auditor.get(f"/audit/invocations/{invocation.id}/").content.decode()

    def section(name: str) -> str:
        return html.split(f'id="story-{name}"', 1)[1].split("</section>", 1)[0]

    assert "https://api.example.org/v1" in section("asked")
    assert "alpha" in section("asked") and "T-42" in html
    decision = section("decision")
    assert "require_approval" in decision and "approval_rule" in decision
    assert "one person must approve" in decision and "rule asks one person" in decision
    people = section("people")
    assert 'data-person="olga"' in people and "approval.approved" in people
    assert "expected sync" in people and "alpha" not in people  # the agent is no person
    result = section("result")
    assert "succeeded" in result and "321 ms" in result and "HTTP 200: 3 items" in result
    assert "The whole result" in result  # cut, with the way to all of it
    effects = section("effects")
    assert 'data-connection="api.example.org"' in effects and "api.example.org:443" in effects
    assert "120 / 900" in effects and "API_KEY" in effects
    assert 'data-secret="API_KEY"' in effects
    assert html.count("data-step=") == 5  # and every event after the story


def test_control_a_call_with_no_people_and_no_effects_says_so(
    auditor: Client, agents: tuple[Agent, Agent]
) -> None:
    invocation, _ = _invocation_with_secret(agents[0])
    html = auditor.get(f"/audit/invocations/{invocation.id}/").content.decode()
    assert "No person acted on this call." in html
    assert "No connections and no secret uses are recorded for this call." in html
    assert "&quot;path&quot;: &quot;notes.txt&quot;" in html.split('id="story-arguments"', 1)[1]
    assert SECRET not in html
