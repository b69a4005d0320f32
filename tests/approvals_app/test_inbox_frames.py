"""The operators' socket stays up whatever waits in the inbox (a real daphne).

daphne refuses to send a message past 1 MiB and closes the socket instead: a backlog
of writes, or one write of a megabyte, made every inbox lose its connection on each
reconnect while it waited. The resync now goes in frames under the setting's size,
a card's size is bounded, and only the first screen is sent (the rest on demand).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from typing import Any

import pytest
import websockets
from django.conf import settings
from websockets.typing import Origin

from approvals_app.selectors.inbox import inbox_setting
from common.testing import run_fresh
from tests.approvals_app.test_consumers import session_cookie, ws_url

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

SERVER_LIMIT = 1024 * 1024  # daphne's default websocket_max_message_size
ROW = re.compile(r'<article id="req-([0-9a-f\-]{36})"')
BODY = "".join(f"line {n}: figures for the quarter, as agreed with finance\n" for n in range(60))


async def resync(base: str, cookie: str, expected: set[str]) -> tuple[list[str], bool]:
    """The frames sent on connect until every expected row has come; whether the
    socket is still open after them."""
    frames: list[str] = []
    seen: set[str] = set()
    async with websockets.connect(
        ws_url(base), origin=Origin(base), additional_headers={"Cookie": cookie},
        open_timeout=10, max_size=4 * SERVER_LIMIT,
    ) as socket:  # fmt: skip
        while not expected <= seen:
            frame = str(await asyncio.wait_for(socket.recv(), timeout=30))
            frames.append(frame)
            seen.update(ROW.findall(frame))
        pong = await socket.ping()
        await asyncio.wait_for(pong, timeout=10)
        return frames, True


def _write(submit: Callable[..., Any], agent: Any, path: str, content: str) -> str:
    invocation = submit(agent, "write_file", {"path": path, "content": content})
    return str(invocation.approval.id)


def test_a_first_screen_larger_than_one_frame_comes_in_several_and_the_socket_stays_up(
    daphne_server: str,
    make_person: Callable[..., Any],
    make_agent_row: Callable[..., Any],
    submit: Callable[..., Any],
) -> None:
    agent = make_agent_row()
    # Each in a folder of its own: none alike, so each is a card of the first screen.
    asked = [_write(submit, agent, f"q{n}/notes.txt", BODY * 3) for n in range(30)]
    screen = set(asked[: inbox_setting("PAGE_ENTRIES")])
    frames, open_after = run_fresh(
        lambda: resync(daphne_server, session_cookie(make_person("operator")), screen)
    )
    assert open_after
    assert len(frames) >= 2, [len(f) for f in frames]
    assert all(len(f.encode()) <= settings.SYNTHORG_INBOX_FRAME_BYTES for f in frames)
    assert 'id="approval-inbox"' in frames[0]  # the inbox first, its tiers filled after
    rows = [row for frame in frames for row in ROW.findall(frame)]
    assert sorted(rows) == sorted(screen)  # the first screen, each row once; the rest on demand


def test_one_megabyte_write_keeps_every_inbox_connected(
    daphne_server: str,
    make_person: Callable[..., Any],
    make_agent_row: Callable[..., Any],
    submit: Callable[..., Any],
) -> None:
    agent = make_agent_row()
    big = _write(submit, agent, "huge.txt", "a line of a very large file\n" * 36_000)
    small = _write(submit, agent, "notes/small.txt", "hello\n")  # not alike: its own card
    frames, open_after = run_fresh(
        lambda: resync(daphne_server, session_cookie(make_person("operator")), {big, small})
    )
    assert open_after
    assert all(len(f.encode()) < SERVER_LIMIT for f in frames)
    big_frame = next(f for f in frames if big in f)
    assert "32,000 characters each at most" in big_frame and "whole-call" in big_frame


def test_control_a_small_inbox_is_one_frame(
    daphne_server: str,
    make_person: Callable[..., Any],
    make_agent_row: Callable[..., Any],
    submit: Callable[..., Any],
) -> None:
    agent = make_agent_row()
    expected = {_write(submit, agent, "note.txt", BODY)}
    frames, open_after = run_fresh(
        lambda: resync(daphne_server, session_cookie(make_person("operator")), expected)
    )
    assert open_after and len(frames) == 1
