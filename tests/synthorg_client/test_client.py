"""The Python client against a stand-in console on loopback."""

from __future__ import annotations

import socket
import time
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import pytest
from synthorg_client.errors import parse_retry_after

from synthorg_client import (
    Call,
    Client,
    Conflict,
    Forbidden,
    InvalidArgument,
    NotFound,
    PayloadTooLarge,
    RateLimited,
    SynthOrgError,
    Unauthenticated,
    Unavailable,
)
from tests.synthorg_client.console import TOKEN, FakeConsole


@pytest.fixture
def client(console: FakeConsole) -> Client:
    return Client(console.url, TOKEN, timeout=10)


def test_discovery_levels(client: Client) -> None:
    assert client.me()["name"] == "test-agent"
    assert [tool["name"] for tool in client.tools()] == ["read_file"]
    assert client.tool("read_file")["resources"] == ["guide"]
    assert client.tool_resource("read_file", "guide")["content"] == "# Guide"


def test_token_is_sent_as_bearer(client: Client, console: FakeConsole) -> None:
    client.me()
    assert console.requests[-1].headers["Authorization"] == f"Bearer {TOKEN}"


def test_url_with_api_prefix_is_accepted(console: FakeConsole) -> None:
    with Client(console.url + "/api/v1/", TOKEN) as client:
        assert client.me()["name"] == "test-agent"
    assert console.requests[-1].path == "/api/v1/me/"


def test_call_answers_a_typed_invocation(client: Client) -> None:
    invocation = client.call("read_file", {"path": "notes.txt"})
    assert invocation.succeeded and invocation.is_terminal
    assert invocation.result is not None
    assert invocation.result.content == "contents of notes.txt"
    assert invocation.result.structured == {"n": 1}
    assert invocation.decision is not None and invocation.decision.outcome == "allow"
    assert invocation.decision.trace == ("permission: allowed",)
    assert invocation.approval is None and invocation.error is None
    assert invocation.to_json()["id"] == invocation.id


def test_denied_and_failed_calls_are_invocations_not_exceptions(client: Client) -> None:
    denied = client.call("delete_all", {})
    assert denied.status == "denied" and not denied.succeeded and denied.is_terminal
    assert denied.decision is not None and denied.decision.reason == "not permitted"
    failed = client.call("broken", {})
    assert failed.error is not None and failed.error.code == "tool_error"


def test_pending_approval_carries_the_approval(client: Client) -> None:
    invocation = client.call("needs_approval", {})
    assert invocation.status == "pending_approval" and not invocation.is_terminal
    assert invocation.approval is not None
    assert (invocation.approval.required_approvals, invocation.approval.approvals) == (2, 0)


def test_call_sends_idempotency_key_task_id_and_wait(client: Client, console: FakeConsole) -> None:
    client.call("read_file", {"path": "a"}, wait=5, idempotency_key="k-1", task_id="t-9")
    body = console.invocation_requests()[-1].body
    assert body == {
        "tool": "read_file",
        "arguments": {"path": "a"},
        "wait": 5,
        "idempotency_key": "k-1",
        "task_id": "t-9",
    }


def test_call_without_options_sends_a_fresh_idempotency_key_per_call(
    client: Client, console: FakeConsole
) -> None:
    first = client.call("read_file", {"path": "a"})
    second = client.call("read_file", {"path": "a"})
    bodies = [r.body for r in console.invocation_requests()]
    assert [set(b) for b in bodies] == [{"tool", "arguments", "idempotency_key"}] * 2
    assert bodies[0]["idempotency_key"] != bodies[1]["idempotency_key"]
    # Two logical calls, so two invocations: the key never merges separate calls.
    assert first.id != second.id


def test_a_lost_answer_is_retried_with_the_same_key_and_runs_once(
    client: Client, console: FakeConsole
) -> None:
    console.lose_answers = 1
    done = client.call("read_file", {"path": "a"})
    posts = console.invocation_requests()
    assert len(posts) == 2, "the call is sent again after its answer was lost"
    assert posts[0].body == posts[1].body
    assert list(console.invocations) == [done.id], "and the console ran it once"


def test_a_lost_batch_answer_is_retried_with_each_calls_key(
    client: Client, console: FakeConsole
) -> None:
    console.lose_answers = 1
    first, second = client.batch(
        [Call("read_file", {"path": "1"}), {"tool": "read_file", "arguments": {"path": "2"}}]
    )
    posts = console.invocation_requests()
    assert len(posts) == 2 and posts[0].body == posts[1].body
    keys = [c["idempotency_key"] for c in posts[0].body["calls"]]
    assert len(set(keys)) == 2
    assert sorted(console.invocations) == sorted([first.id, second.id])


def test_a_console_that_never_answers_is_unavailable_after_the_retries(
    console: FakeConsole,
) -> None:
    console.lose_answers = 3
    with Client(console.url, TOKEN, retries=2) as client, pytest.raises(Unavailable):
        client.call("read_file", {"path": "a"})
    posts = console.invocation_requests()
    assert len(posts) == 3 and len({p.body["idempotency_key"] for p in posts}) == 1
    assert len(console.invocations) == 1


def test_idempotent_repeat_answers_the_same_invocation(client: Client) -> None:
    first = client.call("read_file", {"path": "a"}, idempotency_key="same")
    again = client.call("read_file", {"path": "a"}, idempotency_key="same")
    assert again.id == first.id
    with pytest.raises(Conflict) as caught:
        client.call("read_file", {"path": "b"}, idempotency_key="same")
    assert caught.value.status == 409


ERRORS = [
    ("invalid_argument", 400, InvalidArgument),
    ("unauthenticated", 401, Unauthenticated),
    ("forbidden", 403, Forbidden),
    ("not_found", 404, NotFound),
    ("conflict", 409, Conflict),
    ("payload_too_large", 413, PayloadTooLarge),
    ("rate_limited", 429, RateLimited),
    ("unavailable", 503, Unavailable),
]


@pytest.mark.parametrize(("code", "status", "error"), ERRORS)
def test_every_error_code_raises_its_exception(
    client: Client, code: str, status: int, error: type[SynthOrgError]
) -> None:
    with pytest.raises(error) as caught:
        client.call(f"error:{code}", {})
    assert isinstance(caught.value, SynthOrgError)
    assert (caught.value.code, caught.value.status) == (code, status)
    assert caught.value.message == f"forced {code}"
    assert caught.value.details == {}
    assert caught.value.to_json() == {
        "error": {"code": code, "message": f"forced {code}", "details": {}}
    }


def test_unknown_error_code_keeps_its_code(client: Client) -> None:
    with pytest.raises(SynthOrgError) as caught:
        client.call("error:teapot", {})
    assert type(caught.value) is SynthOrgError
    assert (caught.value.code, caught.value.status) == ("teapot", 418)


def test_wrong_token_is_unauthenticated(console: FakeConsole) -> None:
    with Client(console.url, "soa_wrong", timeout=5) as client, pytest.raises(Unauthenticated):
        client.tools()


def test_unknown_tool_and_invocation_are_not_found(client: Client) -> None:
    with pytest.raises(NotFound):
        client.tool("rm_rf")
    with pytest.raises(NotFound):
        client.get("00000000-0000-0000-0000-000000000000")


def test_oversized_body_is_payload_too_large(client: Client) -> None:
    with pytest.raises(PayloadTooLarge):
        client.call("read_file", {"path": "x" * 20_000})


@pytest.mark.parametrize(
    ("header", "expected"), [("7", 7.0), ("0", 0.0), ("2.5", 2.5), ("soon", None), (None, None)]
)
def test_rate_limited_carries_retry_after(
    client: Client, header: str | None, expected: float | None
) -> None:
    arguments = {} if header is None else {"retry_after": header}
    with pytest.raises(RateLimited) as caught:
        client.call("error:rate_limited", arguments)
    assert caught.value.retry_after == expected


def test_retry_after_as_http_date(client: Client) -> None:
    when = format_datetime(datetime.now(UTC) + timedelta(seconds=30), usegmt=True)
    with pytest.raises(RateLimited) as caught:
        client.call("error:rate_limited", {"retry_after": when})
    assert caught.value.retry_after is not None
    assert 25 <= caught.value.retry_after <= 31


def test_retry_after_parsing() -> None:
    now = datetime(2026, 1, 1, tzinfo=UTC).timestamp()
    assert parse_retry_after("120") == 120.0
    assert parse_retry_after("-3") == 0.0
    assert parse_retry_after("Thu, 01 Jan 2026 00:01:00 GMT", now=now) == 60.0
    assert parse_retry_after("Wed, 31 Dec 2025 23:00:00 GMT", now=now) == 0.0
    assert parse_retry_after("") is None


def test_get_and_wait_loop_until_terminal(client: Client, console: FakeConsole) -> None:
    created = client.call("slow", {})
    assert created.status == "queued"
    finished = client.wait(created.id, 150)
    assert finished.succeeded and finished.result is not None
    gets = [r for r in console.invocation_requests() if r.method == "GET"]
    # queued → running → succeeded: three holds, none asking the console for over 60 s.
    assert len(gets) == 3
    assert all(1 <= int(r.query["wait"][0]) <= 60 for r in gets)
    assert int(gets[0].query["wait"][0]) == 60


def test_call_with_long_wait_keeps_waiting_after_the_first_answer(
    client: Client, console: FakeConsole
) -> None:
    invocation = client.call("slow", {}, wait=120)
    assert invocation.succeeded
    post = console.invocation_requests()[0]
    assert post.body["wait"] == 60


def test_wait_gives_up_at_its_timeout(client: Client, console: FakeConsole) -> None:
    created = client.call("never", {})
    started = time.monotonic()
    still = client.wait(created.id, 1)
    elapsed = time.monotonic() - started
    assert still.status == "queued" and not still.is_terminal
    assert elapsed >= 1
    gets = [r for r in console.invocation_requests() if r.method == "GET"]
    assert [r.query["wait"] for r in gets] == [["1"]]


def test_get_without_wait_sends_no_wait(client: Client, console: FakeConsole) -> None:
    created = client.call("read_file", {"path": "a"})
    assert client.get(created.id).id == created.id
    assert console.requests[-1].query == {}


def test_negative_wait_is_refused_before_sending(client: Client, console: FakeConsole) -> None:
    with pytest.raises(InvalidArgument):
        client.call("read_file", {}, wait=-1)
    assert console.invocation_requests() == []


def test_batch_keeps_call_order_and_isolates_failures(client: Client, console: FakeConsole) -> None:
    invocations = client.batch(
        [
            Call("read_file", {"path": "one"}, idempotency_key="b-1"),
            {"tool": "error:forbidden", "arguments": {}},
            Call("read_file", {"path": "two"}),
        ],
        max_concurrency=2,
        wait=10,
    )
    assert [i.status for i in invocations] == ["succeeded", "failed", "succeeded"]
    assert invocations[1].error is not None and invocations[1].error.code == "forbidden"
    body = console.invocation_requests()[-1].body
    assert body["max_concurrency"] == 2 and body["wait"] == 10
    assert body["calls"][0] == {
        "tool": "read_file",
        "arguments": {"path": "one"},
        "idempotency_key": "b-1",
    }


def test_cancel(client: Client) -> None:
    created = client.call("never", {})
    assert client.cancel(created.id).status == "cancelled"
    done = client.call("read_file", {"path": "a"})
    assert client.cancel(done.id).status == "succeeded"


def test_unreachable_console_is_unavailable() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with (
        Client(f"http://127.0.0.1:{port}", TOKEN, timeout=2) as client,
        pytest.raises(Unavailable) as caught,
    ):
        client.tools()
    assert caught.value.status is None
