"""A path component flipping between directory and symlink while calls are decided.

One thread flips ``flip`` in the agent's workspace between an empty directory and
a symlink to a directory beside it; the test sends batches of calls naming
``flip/note`` through the public API meanwhile. Every answer is a decision (allowed, waiting
or refused with a reason), never a server error. Bounded: a fixed number of
calls, the flipper stops when they are done.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.tools_app.api.conftest import AgentClient

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

BATCHES = 4
BATCH_SIZE = 50  # SYNTHORG_BATCH_MAX_CALLS: one request decides this many calls
MAX_FLIPS = 2_000_000


def _flipper(workspace: Path, stop: threading.Event) -> None:
    flip = workspace / "flip"
    for _ in range(MAX_FLIPS):
        if stop.is_set():
            return
        try:
            flip.rmdir()
            flip.symlink_to("real")
            flip.unlink()
            flip.mkdir()
        except OSError:
            continue


def test_a_flipping_path_component_gets_a_decision_never_a_500(
    make_agent: Callable[..., AgentClient],
) -> None:
    # locked: every call waits for a person, so no call runs; only the decision is raced.
    client = make_agent("standard", autonomy="locked")
    workspace = Path(client.agent.workspace)
    (workspace / "real").mkdir()
    (workspace / "real" / "note").write_text("n")
    (workspace / "flip").mkdir()

    # Positive control: with nothing moving, the same path is decided normally.
    steady = client.call("read_file", {"path": "flip/note"})
    assert steady.status_code == 201, steady.text
    assert steady.json()["status"] == "pending_approval"

    stop = threading.Event()
    thread = threading.Thread(target=_flipper, args=(workspace, stop), daemon=True)
    thread.start()
    batch = {"calls": [{"tool": "read_file", "arguments": {"path": "flip/note"}}] * BATCH_SIZE}
    answers = []
    try:
        for _ in range(BATCHES):
            answers.append(client.http.post("/api/v1/invocations/batch/", json=batch))
    finally:
        stop.set()
        thread.join(timeout=30)
    assert not thread.is_alive()
    for answer in answers:
        assert answer.status_code in (200, 201), answer.text
        invocations = answer.json()["invocations"]
        assert len(invocations) == BATCH_SIZE
        for body in invocations:
            assert body.get("status") in ("pending_approval", "denied"), body
            if body["status"] == "denied":
                assert body["decision"]["reason"], body
    assert os.path.isdir(workspace / "real")
