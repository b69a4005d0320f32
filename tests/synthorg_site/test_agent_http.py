"""Which requests take the agent API's lean path, and that it answers like the full one."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest
from django.core.handlers.asgi import ASGIHandler
from django.core.signals import request_started

from synthorg_site.agent_http import AgentApiHandler, ExecutorShelf, is_agent_call
from trust_app.services.agents import agent_create
from trust_app.tokens.bearer import AGENT_TOKEN_PREFIX, PERSON_TOKEN_PREFIX

AGENT = f"Bearer {AGENT_TOKEN_PREFIX}_abc".encode()
PERSON = f"Bearer {PERSON_TOKEN_PREFIX}_abc".encode()


def scope(path: str, *headers: tuple[bytes, bytes], kind: str = "http") -> dict[str, Any]:
    return {"type": kind, "path": path, "headers": list(headers)}


@pytest.mark.parametrize(
    ("request_scope", "lean"),
    [
        (scope("/api/v1/invocations/", (b"authorization", AGENT)), True),
        (scope("/api/v1/tools/read_file/", (b"authorization", AGENT)), True),
        (scope("/api/v1/me/", (b"authorization", b"bearer " + AGENT[7:])), True),
        # people, cookies and other paths take the full stack
        (scope("/api/v1/invocations/", (b"authorization", PERSON)), False),
        (scope("/api/v1/invocations/", (b"authorization", AGENT), (b"cookie", b"s=1")), False),
        (scope("/api/v1/invocations/"), False),
        (scope("/api/v1/approvals/", (b"authorization", AGENT)), False),
        (scope("/api/v1/invocationsX/", (b"authorization", AGENT)), False),
        (scope("/api/v1/invocations/", (b"authorization", b"Basic abc")), False),
        (
            scope("/api/v1/invocations/", (b"authorization", AGENT), (b"authorization", PERSON)),
            False,
        ),
        (scope("/api/v1/invocations/", (b"authorization", AGENT), kind="websocket"), False),
    ],
)
def test_only_cookieless_agent_token_calls_take_the_lean_path(
    request_scope: dict[str, Any], lean: bool
) -> None:
    assert is_agent_call(request_scope) is lean


# --- the request's thread, kept between agent calls ---------------------------------


def test_an_idle_executor_is_lent_again_and_the_shelf_keeps_at_most_its_size() -> None:
    shelf = ExecutorShelf(size=1)
    first, second = shelf.take(), shelf.take()
    assert first is not second
    assert first.submit(lambda: 1).result(timeout=10) == 1
    shelf.give_back(first)
    shelf.give_back(second)  # over the shelf's size: shut down
    assert shelf.idle_count() == 1
    assert shelf.take() is first
    with pytest.raises(RuntimeError):
        second.submit(lambda: 1)


def test_an_executor_still_at_work_is_never_lent_again() -> None:
    # A request whose client went away may leave its sync work running: the executor
    # is not put back, so the next request does not wait behind that work.
    shelf = ExecutorShelf()
    busy = shelf.take()
    release = threading.Event()
    running = busy.submit(release.wait, 30)
    assert not busy.idle
    shelf.give_back(busy)
    assert shelf.idle_count() == 0
    assert shelf.take() is not busy
    release.set()
    assert running.result(timeout=10) is True  # its work still ends
    assert busy.idle
    # The control: the same executor, idle when given back, is kept.
    kept = shelf.take()
    kept.submit(lambda: None).result(timeout=10)
    shelf.give_back(kept)
    assert shelf.take() is kept


def _threads_of_requests(handler: Any, token: str, count: int) -> list[threading.Thread]:
    """The thread each of ``count`` agent requests ran its sync work on (the thread of
    Django's request_started receivers, which run thread-sensitive)."""
    seen: list[threading.Thread] = []  # held: their ids stay distinct

    def note(**_: Any) -> None:
        seen.append(threading.current_thread())

    async def one() -> int:
        sent: list[dict[str, Any]] = []
        arrived = False

        async def receive() -> dict[str, Any]:
            nonlocal arrived
            if not arrived:
                arrived = True
                return {"type": "http.request", "body": b"", "more_body": False}
            await asyncio.sleep(30)
            return {"type": "http.disconnect"}

        async def send(message: dict[str, Any]) -> None:
            sent.append(message)

        scope = {
            "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1",
            "method": "GET", "scheme": "http", "path": "/api/v1/me/", "raw_path": b"/api/v1/me/",
            "query_string": b"", "root_path": "", "server": ("testserver", 80),
            "client": ("127.0.0.1", 5000),
            "headers": [(b"host", b"testserver"), (b"authorization", f"Bearer {token}".encode())],
        }  # fmt: skip
        await handler(scope, receive, send)
        return int(sent[0]["status"])

    request_started.connect(note)
    try:
        # Each on a loop of its own, as a server's: no enclosing async_to_sync, whose
        # thread would take the thread-sensitive work instead.
        statuses = [asyncio.run(one()) for _ in range(count)]
    finally:
        request_started.disconnect(note)
    assert statuses == [200] * count
    return seen


@pytest.mark.django_db(transaction=True)
def test_agent_calls_run_on_a_kept_thread_where_django_starts_one_per_request() -> None:
    token = agent_create(name="shelf-agent", access_level="elevated").token
    lean = AgentApiHandler()
    kept = _threads_of_requests(lean, token, 3)
    assert len(kept) == 3 and len({id(thread) for thread in kept}) == 1
    assert lean.shelf.idle_count() == 1
    # The control: Django's own handler starts a thread per request.
    stock = _threads_of_requests(ASGIHandler(), token, 3)
    assert len({id(thread) for thread in stock}) == 3
