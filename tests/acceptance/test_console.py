"""The console `make run` starts answers on its public doors, with the demo organisation."""

from __future__ import annotations

from contextlib import closing

import httpx
import pytest

from tests.acceptance.conftest import Console
from tests.acceptance.console import decide, wait_for_approval


def test_health_names_every_part_and_is_green(console: Console) -> None:
    answer = httpx.get(console.base_url + "/healthz", timeout=30)
    assert answer.status_code == 200, answer.text
    parts = answer.json()["parts"]
    assert {"database", "redis", "worker"} <= set(parts), parts


@pytest.mark.parametrize("role", ["operator", "admin", "auditor"])
def test_each_demo_person_signs_in_with_the_printed_password(console: Console, role: str) -> None:
    with closing(console.person(role)) as http:
        assert http.get("/").status_code == 200


def test_a_wrong_password_is_refused(console: Console) -> None:
    username, _ = console.credentials.people["operator"]
    with httpx.Client(base_url=console.base_url, timeout=30) as http:
        http.get("/accounts/login/")
        answer = http.post(
            "/accounts/login/",
            data={
                "username": username,
                "password": "not-the-password",
                "csrfmiddlewaretoken": http.cookies["csrftoken"],
            },
        )
    assert answer.status_code == 200 and "/accounts/login/" in str(answer.url)


def test_the_operator_approves_a_waiting_call_through_the_api(
    console: Console, operator: httpx.Client
) -> None:
    """The harness's own round trip: a supervised agent's write waits for a person."""
    with console.agent("ops-bot") as agent:
        created = agent.post(
            "/api/v1/invocations/",
            json={"tool": "write_file", "arguments": {"path": "hello.txt", "content": "hi\n"}},
        )
        assert created.status_code == 201, created.text
        invocation = created.json()
        assert invocation["status"] == "pending_approval", invocation
        row = wait_for_approval(operator, invocation["id"])
        decided = decide(operator, row["id"], "approve")
        assert decided["status"] == "approved", decided
        done = agent.get(f"/api/v1/invocations/{invocation['id']}/", params={"wait": 30})
        assert done.status_code == 200, done.text
        assert done.json()["status"] == "succeeded", done.text


def test_the_first_screen_is_the_address_and_the_credentials(console: Console) -> None:
    """What a newcomer sees after `make run` up to "press Ctrl-C": the launcher's own
    lines only, the address, and each person's sign-in (the one the tests sign in with);
    the processes' logs went to var/log/."""
    printed = console.launcher.log_path.read_text(errors="replace").splitlines()
    first = printed[: next(i for i, line in enumerate(printed) if "press Ctrl-C" in line) + 1]
    assert all(line.startswith("synthorg | ") for line in first), first
    assert len(first) <= 24, first  # one screen
    assert f"console ready at http://localhost:{console.launcher.port}/" in "\n".join(first)
    for role, (username, password) in console.credentials.people.items():
        assert any(role in line and username in line and password in line for line in first)
    logs = {path.name for path in (console.var_dir / "log").iterdir()}
    assert {"web.log", "worker.log", "beat.log", "redis.log"} <= logs
    assert (console.var_dir / "log").stat().st_mode & 0o077 == 0
    assert "GET /healthz" in (console.var_dir / "log" / "web.log").read_text(errors="replace")
