"""A named secret in code_runner's environment, through the API and a real worker.

The program in the namespace sandbox holds the value (its SHA-256, printed by
the program, matches: the positive control) and prints it plain, base64 and hex;
the agent reads none of them. Without a grant the same call is refused, and an
injection variable name is refused before any process starts.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Callable
from typing import Any

import pytest

from common.testing import RunningProcess
from secrets_app.services import secret_grant, secret_set
from tests.secrets_app.test_http_secret import ADMIN, _leaks
from tests.tools_app.api import conftest as api_fixtures
from tests.tools_app.api.conftest import AgentClient
from tools_app.models import Invocation
from trust_app.models import AgentPermissions

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

make_agent = api_fixtures.make_agent

PROGRAM = """
import base64, hashlib, os
value = os.environ.get("DEPLOY_TOKEN")
if value is None:
    print("NO VALUE")
else:
    print("sha256", hashlib.sha256(value.encode()).hexdigest())
    print("plain", value)
    print("b64", base64.b64encode(value.encode()).decode())
    print("hex", value.encode().hex())
"""


@pytest.fixture(autouse=True)
def _worker(celery_worker_process: RunningProcess) -> RunningProcess:
    return celery_worker_process


def _runner(make_agent: Callable[..., AgentClient]) -> AgentClient:
    client = make_agent("elevated", autonomy="full")
    AgentPermissions.objects.create(
        agent=client.agent, sub_constraints={"code_execution": "namespace"}
    )
    return client


def _run(client: AgentClient, **extra: Any) -> Any:
    return client.call(
        "code_runner",
        {"language": "python", "code": PROGRAM, **extra},
        idempotency_key=uuid.uuid4().hex,
        wait=60,
    )


def test_a_granted_secret_reaches_the_program_and_never_the_agent(
    make_agent: Callable[..., AgentClient],
) -> None:
    client = _runner(make_agent)
    name = f"DEPLOY_{uuid.uuid4().hex[:8].upper()}"
    value = f"dk-{uuid.uuid4().hex}{uuid.uuid4().hex}"
    secret_set(name=name, value=value, actor=ADMIN)
    reference = {"DEPLOY_TOKEN": f"${{secret:{name}}}"}

    refused = _run(client, secret_env=reference)
    assert refused.status_code == 403, refused.text
    assert name not in refused.text

    secret_grant(name=name, agent=client.agent, tool="code_runner", actor=ADMIN)
    response = _run(client, secret_env=reference)
    assert response.status_code == 201, response.text
    answer = response.json()
    assert answer["status"] == "succeeded", answer
    content = answer["result"]["content"]
    # Positive control: the program held the value.
    assert f"sha256 {hashlib.sha256(value.encode()).hexdigest()}" in content, content
    assert "plain [REDACTED" in content, content
    # The attack: printed plain, base64 and hex, the agent reads none of them.
    assert not _leaks(value, json.dumps(answer)), answer
    stored = Invocation.objects.get(id=answer["id"])
    assert stored.arguments["secret_env"] == reference
    assert not _leaks(value, stored.raw_content + json.dumps(stored.structured))

    # Without secret_env the program sees no such variable.
    plain = _run(client).json()
    assert "NO VALUE" in plain["result"]["content"], plain


def test_an_injection_variable_is_refused_before_the_program_runs(
    make_agent: Callable[..., AgentClient],
) -> None:
    client = _runner(make_agent)
    name = f"PRELOAD_{uuid.uuid4().hex[:8].upper()}"
    secret_set(name=name, value="/tmp/not-a-library.so", actor=ADMIN)
    secret_grant(name=name, agent=client.agent, tool="code_runner", actor=ADMIN)
    answer = _run(client, secret_env={"LD_PRELOAD": f"${{secret:{name}}}"}).json()
    assert answer["status"] == "failed", answer
    assert "secret_env cannot set LD_PRELOAD" in answer["error"]["message"], answer
    # Positive control: the same secret under an ordinary name is delivered.
    done = _run(client, secret_env={"DEPLOY_TOKEN": f"${{secret:{name}}}"}).json()
    assert done["status"] == "succeeded", done
    assert "sha256" in done["result"]["content"], done
