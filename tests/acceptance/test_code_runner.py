"""code_runner works in the demo `make run` starts, and the console says where it runs.

The demo has no Docker engine; its agents accept namespace isolation for code, and
the default config runs code_execution on the namespace (bubblewrap) backend. The
control is an agent made the ordinary way (no demo setting): its level asks for
containerized code execution, so the same call is refused with the reason.
"""

from __future__ import annotations

import uuid

import httpx

from tests.acceptance.conftest import Console
from tests.acceptance.console import (
    agent_client,
    call_approved,
    make_run_env,
    manage,
)

SNIPPET = {"language": "python", "code": "print(sum(range(10)), 'from the sandbox')"}


def test_a_demo_agent_runs_code(console: Console, operator: httpx.Client) -> None:
    with console.agent("build-bot") as agent:
        done = call_approved(agent, operator, "code_runner", SNIPPET)
    assert done["status"] == "succeeded", done
    assert "45 from the sandbox" in done["result"]["content"]


def test_an_agent_without_the_demo_setting_is_refused_with_the_reason(
    console: Console, operator: httpx.Client
) -> None:
    name = f"plain-{uuid.uuid4().hex[:8]}"
    output = manage(
        make_run_env(console.var_dir), "synthorg_agent", "create", name, "--level", "standard"
    )
    token = output.strip().splitlines()[-1]
    with agent_client(console.base_url, token) as agent:
        created = agent.post(
            "/api/v1/invocations/",
            json={
                "tool": "code_runner",
                "arguments": SNIPPET,
                "idempotency_key": uuid.uuid4().hex,
            },
        )
    assert created.status_code in (201, 403), created.text
    body = created.json()
    assert "containerized" in str(body), body


def test_health_and_the_tools_page_name_the_code_execution_backend(
    console: Console, admin: httpx.Client
) -> None:
    health = httpx.get(console.base_url + "/healthz", timeout=30).json()
    part = health["parts"]["code_execution"]
    assert part["detail"].startswith("code_runner runs on namespace"), part
    page = admin.get("/tools/")
    assert page.status_code == 200
    assert "runs on the <strong>namespace</strong> sandbox backend" in page.text
