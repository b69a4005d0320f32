"""A worker asked to stop (SIGTERM to its process group, as systemd, compose and the
launcher send it) lets its running calls finish before it exits: each ends with its
own outcome, run once, and nothing is left for the sweeper to call lost."""

from __future__ import annotations

import os
import signal
import subprocess
import uuid
from pathlib import Path

import httpx
import pytest

from audit_app.models import AuditEvent
from common.testing import wait_until
from tests.faults.test_redis_restart import console_on
from tools_app.models import Invocation
from trust_app.services.agents import agent_create

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


def test_a_worker_told_to_stop_finishes_its_running_calls_first(
    test_env: dict[str, str], tmp_path: Path
) -> None:
    created = agent_create(
        name=f"stop-{uuid.uuid4().hex[:8]}", access_level="elevated", autonomy="full"
    )
    workspace = Path(created.agent.workspace)
    headers = {"Authorization": f"Bearer {created.token}"}
    with (
        console_on(test_env, tmp_path) as (base, _, worker_pid),
        httpx.Client(base_url=base, headers=headers, timeout=60) as http,
    ):
        calls = [
            {"tool": "test_counter", "arguments": {"text": f"s{n}", "seconds": 4}} for n in range(3)
        ]
        ids = [http.post("/api/v1/invocations/", json=call).json()["id"] for call in calls]
        rows = Invocation.objects.filter(id__in=ids)
        wait_until(
            lambda: rows.filter(status="running").count() == 3, timeout=60, what="calls to run"
        )
        os.killpg(worker_pid, signal.SIGTERM)
        # It exits on its own once its calls are done (no second signal).
        wait_until(
            lambda: (
                subprocess.run(["kill", "-0", str(worker_pid)], check=False).returncode != 0
                or _zombie(worker_pid)
            ),
            timeout=90,
            what="the worker to exit",
        )
        ended = list(rows.values("status", "error_code", "error_message", "worker"))
        said = (tmp_path / "worker.log").read_text()[-3000:]
        assert {e["status"] for e in ended} == {"succeeded"}, (ended, said)
    runs = (workspace / "counter.txt").read_text().split()
    assert sorted(word for word in runs if word.startswith("s")) == ["s0", "s1", "s2"]
    for invocation_id in ids:
        endings = AuditEvent.objects.filter(invocation_id=invocation_id, kind="invocation.finished")
        assert list(endings.values_list("status", flat=True)) == ["succeeded"]
    log = (tmp_path / "worker.log").read_text()
    assert "worker_lost" not in log


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0] == "Z"
    except OSError:
        return True
