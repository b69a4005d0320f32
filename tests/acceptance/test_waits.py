"""Waits as long as a person takes, on the console `make run` starts (embedded Redis).

The Redis client once timed out its reads at 5 s while the channel layer blocked
for 5 s, so any wait past 5 s answered 500 and the operators' socket was closed
every few seconds. Each test here waits well past that, for a person who decides
after 12 s through the operators' REST endpoint.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect
from websockets.typing import Origin

from synthorg_client import Client
from tests.acceptance.conftest import Console
from tests.acceptance.console import decide, wait_for_approval

# A person takes this long to decide: well past the 5 s the Redis client once allowed.
DECISION_DELAY = 12.0
SUPERVISED_AGENT = "ops-bot"


def _write(name: str) -> dict[str, Any]:
    """A call the supervised demo agent may make only once a person approves it."""
    return {"tool": "write_file", "arguments": {"path": f"{name}.txt", "content": f"{name}\n"}}


class LatePerson:
    """An operator who approves a list of invocations ``DECISION_DELAY`` s after each is asked."""

    def __init__(self, operator: httpx.Client) -> None:
        self.operator = operator
        self.decided: list[dict[str, Any]] = []
        self.failures: list[BaseException] = []
        self._threads: list[threading.Thread] = []

    def approve_later(self, ids: Callable[[], list[str]]) -> None:
        def run() -> None:
            try:
                for invocation_id in ids():
                    row = wait_for_approval(self.operator, invocation_id)
                    time.sleep(DECISION_DELAY)
                    self.decided.append(decide(self.operator, row["id"], "approve"))
            except BaseException as exc:  # re-raised by the test
                self.failures.append(exc)

        thread = threading.Thread(target=run, daemon=True)
        thread.start()
        self._threads.append(thread)

    def join(self) -> None:
        for thread in self._threads:
            thread.join(120)
        if self.failures:
            raise self.failures[0]


@pytest.fixture
def late_person(operator: httpx.Client) -> Iterator[LatePerson]:
    person = LatePerson(operator)
    yield person
    person.join()


def _ids_when_listed(operator: httpx.Client, count: int, tag: str) -> Callable[[], list[str]]:
    """The ids of the ``count`` pending calls whose file name carries ``tag``, once listed."""

    def find() -> list[str]:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            listed = operator.get("/api/v1/approvals/", params={"status": "pending"}).json()
            ids = [
                row["invocation"]["id"]
                for row in listed["results"]
                if tag in str(row["invocation"]["arguments"])
            ]
            if len(ids) >= count:
                return ids
            time.sleep(0.3)
        raise AssertionError(f"no {count} pending calls tagged {tag} within 60 s")

    return find


def test_a_rest_call_waits_45s_for_a_person_who_approves_after_12s(
    console: Console, operator: httpx.Client, late_person: LatePerson
) -> None:
    tag = f"create-{uuid.uuid4().hex[:8]}"
    late_person.approve_later(_ids_when_listed(operator, 1, tag))
    with console.agent(SUPERVISED_AGENT) as agent:
        answer = agent.post("/api/v1/invocations/", json={**_write(tag), "wait": 45})
    assert answer.status_code == 201, answer.text
    body = answer.json()
    assert body["status"] == "succeeded", answer.text
    assert body["approval"]["status"] == "approved"
    late_person.join()
    assert len(late_person.decided) == 1


def test_get_with_wait_30_answers_once_the_person_decides(
    console: Console, operator: httpx.Client, late_person: LatePerson
) -> None:
    tag = f"get-{uuid.uuid4().hex[:8]}"
    with console.agent(SUPERVISED_AGENT) as agent:
        created = agent.post("/api/v1/invocations/", json=_write(tag))
        assert created.status_code == 201, created.text
        invocation_id = created.json()["id"]
        late_person.approve_later(lambda: [invocation_id])
        answer = agent.get(f"/api/v1/invocations/{invocation_id}/", params={"wait": 30})
    assert answer.status_code == 200, answer.text
    assert answer.json()["status"] == "succeeded", answer.text


def test_a_wait_that_runs_out_answers_the_pending_call(
    console: Console, operator: httpx.Client
) -> None:
    """Nobody decides: the wait ends after its 8 s with the call still pending, never a 500;
    the operator then denies it, so it does not linger in the inbox."""
    tag = f"nobody-{uuid.uuid4().hex[:8]}"
    with console.agent(SUPERVISED_AGENT) as agent:
        answer = agent.post("/api/v1/invocations/", json={**_write(tag), "wait": 8})
        assert answer.status_code == 201, answer.text
        assert answer.json()["status"] == "pending_approval", answer.text
        invocation_id = answer.json()["id"]
        again = agent.get(f"/api/v1/invocations/{invocation_id}/", params={"wait": 7})
        assert again.status_code == 200, again.text
        assert again.json()["status"] == "pending_approval", again.text
    row = wait_for_approval(operator, invocation_id)
    decide(operator, row["id"], "deny", "the acceptance test cleans up")


def test_a_batch_waits_30s_for_a_person(
    console: Console, operator: httpx.Client, late_person: LatePerson
) -> None:
    tag = f"batch-{uuid.uuid4().hex[:8]}"
    late_person.approve_later(_ids_when_listed(operator, 2, tag))
    calls = [_write(f"{tag}-one"), _write(f"{tag}-two")]
    with console.agent(SUPERVISED_AGENT) as agent:
        answer = agent.post("/api/v1/invocations/batch/", json={"calls": calls, "wait": 30})
    assert answer.status_code in (200, 201), answer.text
    statuses = [item["status"] for item in answer.json()["invocations"]]
    # The second approval comes 12 s after the first; both fit in the 30 s.
    assert statuses == ["succeeded", "succeeded"], answer.text


def test_the_readme_client_call_waits_30s(
    console: Console, operator: httpx.Client, late_person: LatePerson
) -> None:
    """`console.call(..., wait=30)` exactly as the README prints it."""
    tag = f"client-{uuid.uuid4().hex[:8]}"
    late_person.approve_later(_ids_when_listed(operator, 1, tag))
    token = console.credentials.agents[SUPERVISED_AGENT]
    write = _write(tag)
    with Client(console.base_url, token) as client:
        done = client.call(write["tool"], write["arguments"], wait=30)
    assert done.status == "succeeded", done
    assert done.result is not None and not done.result.is_error, done


def test_the_operators_socket_stays_open_for_90s(console: Console, operator: httpx.Client) -> None:
    """Connected for 90 s without a close; a call asked for in the last seconds still
    reaches it (the socket is live, not merely unclosed)."""
    ws_url = console.base_url.replace("http://", "ws://") + "/ws/approvals/"
    cookie = "; ".join(f"{name}={value}" for name, value in operator.cookies.items())
    headers = {"Cookie": cookie}
    tag = f"socket-{uuid.uuid4().hex[:8]}"
    origin = Origin(console.base_url)
    with connect(ws_url, additional_headers=headers, origin=origin, legacy=True) as socket:
        first = socket.recv(timeout=30)
        assert first, "the socket sends the inbox state on connect"
        opened = time.monotonic()
        received: list[str] = []
        while time.monotonic() - opened < 90:
            try:
                received.append(str(socket.recv(timeout=5)))
            except TimeoutError:
                continue
            except ConnectionClosed as closed:
                raise AssertionError(
                    f"closed after {time.monotonic() - opened:.1f}s: {closed}"
                ) from None
        with console.agent(SUPERVISED_AGENT) as agent:
            created = agent.post("/api/v1/invocations/", json=_write(tag))
            assert created.status_code == 201, created.text
        pushed = socket.recv(timeout=30)
        assert pushed, "a new request reaches the open socket"
    row = wait_for_approval(operator, created.json()["id"])
    decide(operator, row["id"], "deny", "the acceptance test cleans up")
