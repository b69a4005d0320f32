"""GET /metrics after real calls through daphne and the Celery worker: the counters move."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import httpx
import pytest
from django.test import Client, override_settings
from prometheus_client.parser import text_string_to_metric_families

from audit_app.models import AuditEvent
from tests.synthorg_site.http_edge.conftest import stranger_budget_reset
from trust_app.services.agents import agent_create

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    found: dict[tuple[str, tuple[tuple[str, str], ...]], float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return found


def value(scraped: dict, name: str, **labels: str) -> float:
    return scraped.get((name, tuple(sorted(labels.items()))), 0.0)


@pytest.fixture
def agent_http(daphne_server: str) -> Iterator[httpx.Client]:
    created = agent_create(name=f"metrics-{uuid.uuid4().hex[:10]}", access_level="standard")
    with httpx.Client(
        base_url=daphne_server,
        headers={"Authorization": f"Bearer {created.token}"},
        timeout=90,
    ) as http:
        yield http


def scrape(daphne_server: str) -> dict:
    response = httpx.get(daphne_server + "/metrics", timeout=30)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/plain")
    return samples(response.text)


def test_real_calls_move_the_counters(
    daphne_server: str, celery_worker_process: object, agent_http: httpx.Client
) -> None:
    before = scrape(daphne_server)
    wrote = agent_http.post(
        "/api/v1/invocations/",
        json={"tool": "write_file", "arguments": {"path": "m.txt", "content": "hi"}, "wait": 60},
    ).json()
    assert wrote["status"] == "succeeded", wrote
    read = agent_http.post(
        "/api/v1/invocations/",
        json={"tool": "read_file", "arguments": {"path": "m.txt"}, "wait": 60},
    ).json()
    assert read["status"] == "succeeded", read
    refused = agent_http.post(
        "/api/v1/invocations/",
        json={"tool": "read_file", "arguments": {"path": "/etc/shadow"}, "wait": 0},
    ).json()
    assert refused["status"] == "denied", refused

    after = scrape(daphne_server)
    for tool in ("write_file", "read_file"):
        calls = "synthorg_calls_total"
        assert value(after, calls, tool=tool, status="succeeded") >= (
            value(before, calls, tool=tool, status="succeeded") + 1
        )
    assert value(after, "synthorg_calls_total", tool="read_file", status="denied") >= (
        value(before, "synthorg_calls_total", tool="read_file", status="denied") + 1
    )
    assert value(after, "synthorg_decisions_total", tool="read_file", outcome="deny") >= (
        value(before, "synthorg_decisions_total", tool="read_file", outcome="deny") + 1
    )
    # Histograms: the decisions, whole calls and the sandbox the file tools ran in.
    assert value(after, "synthorg_decision_seconds_count") >= (
        value(before, "synthorg_decision_seconds_count") + 3
    )
    assert value(after, "synthorg_call_seconds_count", status="succeeded") >= (
        value(before, "synthorg_call_seconds_count", status="succeeded") + 2
    )
    backends = {
        dict(labels)["backend"]
        for (name, labels), count in after.items()
        if name == "synthorg_sandbox_start_seconds_count"
        and count > before.get((name, labels), 0.0)
    }
    assert backends, "no sandbox run was timed"
    # State read at scrape time.
    assert value(after, "synthorg_workers_seen") >= 1
    assert ("synthorg_queue_depth", (("queue", "default"),)) in after
    assert ("synthorg_approvals_pending", ()) in after
    for part in ("approvals", "queues", "workers"):
        assert value(after, "synthorg_scrape_part_up", part=part) == 1.0


def test_pending_approvals_and_their_age_are_shown(
    daphne_server: str, celery_worker_process: object
) -> None:
    created = agent_create(
        name=f"metrics-{uuid.uuid4().hex[:10]}", access_level="standard", autonomy="locked"
    )
    before = value(scrape(daphne_server), "synthorg_approvals_pending")
    with httpx.Client(
        base_url=daphne_server, headers={"Authorization": f"Bearer {created.token}"}, timeout=30
    ) as http:
        waiting = http.post(
            "/api/v1/invocations/", json={"tool": "list_directory", "arguments": {"path": "."}}
        ).json()
    assert waiting["status"] == "pending_approval", waiting
    after = scrape(daphne_server)
    assert value(after, "synthorg_approvals_pending") == before + 1
    assert value(after, "synthorg_approvals_pending_oldest_seconds") >= 0.0


def test_a_stranger_off_loopback_is_refused_in_the_envelope_and_audited() -> None:
    stranger_budget_reset()  # a flood test earlier in this minute may have spent it
    client = Client()
    # Positive control: the same request from loopback is served.
    assert client.get("/metrics", REMOTE_ADDR="127.0.0.1").status_code == 200
    with override_settings(SYNTHORG_METRICS_ALLOW_LOOPBACK=False):
        response = client.get("/metrics", REMOTE_ADDR="127.0.0.1")
    assert response.status_code == 401
    error = response.json()["error"]
    assert error["code"] == "unauthenticated"
    assert "metrics scope" in error["message"]
    assert AuditEvent.objects.filter(kind="request.refused", data__path="/metrics").exists()


def test_only_get_is_served() -> None:
    response = Client().post("/metrics", REMOTE_ADDR="127.0.0.1")
    assert response.status_code == 405
    assert response["Allow"] == "GET, HEAD"
    assert response.json()["error"]["code"] == "method_not_allowed"
