"""An agent's cap on the console `make run` starts (its embedded database): calls beyond
the cap wait their turn, queued with their place, and all run; none is refused."""

from __future__ import annotations

import time
import uuid
from typing import Any

from tests.acceptance.conftest import Console
from tests.acceptance.console import agent_client, make_run_env, manage

CAP = 2
CALLS = 4
SLEEP_SECONDS = 4


def test_calls_beyond_the_cap_wait_in_line_and_all_run(console: Console) -> None:
    name = f"capped-{uuid.uuid4().hex[:8]}"
    output = manage(
        make_run_env(console.var_dir),
        "synthorg_agent", "create", name, "--level", "elevated", "--autonomy", "full",
        "--max-concurrent-calls", str(CAP),
    )  # fmt: skip
    token = output.strip().splitlines()[-1]
    with agent_client(console.base_url, token) as agent:
        created = []
        for _ in range(CALLS):
            sleep = {"argv": ["sleep", str(SLEEP_SECONDS)]}
            answer = agent.post(
                "/api/v1/invocations/", json={"tool": "shell_command", "arguments": sleep}
            )
            assert answer.status_code == 201, answer.text
            created.append(answer.json())
        # The first CAP start at once; the others wait, with their place in the line.
        assert [c["queue"] for c in created[:CAP]] == [None] * CAP, created
        assert [c["status"] for c in created[CAP:]] == ["queued"] * (CALLS - CAP), created
        assert [c["queue"]["position"] for c in created[CAP:]] == [1, 2], created
        # While they sleep, never more than CAP run at once.
        most_running = 0
        deadline = time.monotonic() + 120
        ended: list[dict[str, Any]] = []

        def statuses(order: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
            return {c["id"]: agent.get(f"/api/v1/invocations/{c['id']}/").json() for c in order}

        while time.monotonic() < deadline:
            # Read forth, then back: a call running at both its reads ran throughout, so
            # every call counted here ran at once (between the last read forth and the
            # first read back); no call that ended in between is counted.
            forth = statuses(created)
            back = statuses(created[::-1])
            both = [i for i in forth if forth[i]["status"] == back[i]["status"] == "running"]
            most_running = max(most_running, len(both))
            if all(b["status"] not in ("queued", "running") for b in back.values()):
                ended = [back[c["id"]] for c in created]
                break
            time.sleep(0.5)
    assert ended, "the calls did not all end within 120 s"
    assert [e["status"] for e in ended] == ["succeeded"] * CALLS, ended
    assert 1 <= most_running <= CAP
