"""A soak at a fixed rate on the console `make run` starts: every call reaches its end,
and the audit log holds exactly one ``invocation.finished`` row for each.

Bounded: SOAK_SECONDS at RATE calls a second from two demo agents (each within its rate
limit and its cap), then at most SETTLE_SECONDS for the last calls to end.
"""

from __future__ import annotations

import collections
import concurrent.futures
import json
import time
from datetime import UTC, datetime
from typing import Any

import httpx

from tests.acceptance.conftest import Console

SOAK_SECONDS = 30
RATE = 10  # calls a second, spread over the agents
AGENTS = ("build-bot", "research-bot")
SETTLE_SECONDS = 120
FINAL = {"succeeded", "failed", "timed_out", "cancelled", "denied", "expired"}


def _submit(http: httpx.Client) -> str:
    answer = http.post(
        "/api/v1/invocations/",
        json={"tool": "list_directory", "arguments": {"path": "."}},
    )
    assert answer.status_code == 201, answer.text
    return str(answer.json()["id"])


def test_a_fixed_rate_for_a_while_ends_every_call_once(console: Console) -> None:
    since = datetime.now(UTC).isoformat()
    clients = [console.agent(name) for name in AGENTS]
    submitted: list[tuple[int, concurrent.futures.Future[str]]] = []
    try:
        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            started = time.monotonic()
            for n in range(SOAK_SECONDS * RATE):
                # A fixed schedule: call n leaves at n / RATE seconds, late or not.
                delay = started + n / RATE - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
                owner = n % len(clients)
                submitted.append((owner, pool.submit(_submit, clients[owner])))
            ids = [(owner, future.result(timeout=120)) for owner, future in submitted]
        statuses = _wait_for_ends(clients, ids)
    finally:
        for client in clients:
            client.close()
    assert len(ids) == SOAK_SECONDS * RATE
    assert collections.Counter(statuses.values()) == {"succeeded": len(ids)}, collections.Counter(
        statuses.values()
    )
    finished = _finished_rows(console, since)
    missing = [i for _, i in ids if finished[i] == 0]
    doubled = [i for _, i in ids if finished[i] > 1]
    assert not missing and not doubled, f"{len(missing)} without, {len(doubled)} with 2+ rows"


def _wait_for_ends(clients: list[httpx.Client], ids: list[tuple[int, str]]) -> dict[str, str]:
    statuses: dict[str, str] = {}
    deadline = time.monotonic() + SETTLE_SECONDS
    open_ids = list(ids)
    while open_ids and time.monotonic() < deadline:
        still = []
        for owner, invocation_id in open_ids:
            body = clients[owner].get(f"/api/v1/invocations/{invocation_id}/").json()
            statuses[invocation_id] = body["status"]
            if body["status"] not in FINAL:
                still.append((owner, invocation_id))
        open_ids = still
        if open_ids:
            time.sleep(1)
    return statuses


def _finished_rows(console: Console, since: str) -> collections.Counter[str]:
    """``invocation.finished`` rows per invocation, from the auditors' export."""
    rows: collections.Counter[str] = collections.Counter()
    auditor = console.person("auditor")
    try:
        for agent in AGENTS:
            export = auditor.get(
                "/audit/export.jsonl", params={"agent": agent, "since": since}, timeout=120
            )
            assert export.status_code == 200, export.text[:500]
            for line in export.text.splitlines():
                event: dict[str, Any] = json.loads(line)
                if event.get("kind") == "invocation.finished":
                    rows[str(event.get("invocation_id"))] += 1
    finally:
        auditor.close()
    return rows
