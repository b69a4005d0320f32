"""Git containment through the public API: a real daphne and a real Celery worker.

The agent's own repository carries a filter an attacker defined; git_diff is
refused with the key named, the refusal is audited, and the call ran on the
namespace backend (version_control's default). The control: the same
repository without that key answers the diff.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from audit_app.models import AuditEvent
from common.testing import RunningProcess
from tests.tools_app.api import conftest as api_fixtures
from tests.tools_app.api.conftest import AgentClient
from tests.tools_app.builtin.git_fixtures import make_repo
from tools_app.models import Invocation
from trust_app.services.agents import workspace_grant

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

make_agent = api_fixtures.make_agent
FILTER_OUTPUT = "FILTER-RAN"


@pytest.fixture(autouse=True)
def _worker(celery_worker_process: RunningProcess) -> RunningProcess:
    return celery_worker_process


@pytest.fixture
def agent(make_agent: Callable[..., AgentClient]) -> AgentClient:
    return make_agent("elevated", autonomy="full")


def test_git_diff_refuses_a_filter_and_says_which_key(agent: AgentClient) -> None:
    workspace = Path(agent.agent.workspace)
    repo = make_repo(workspace / "proj")
    (repo / ".gitattributes").write_text("* filter=x\n")
    (repo / "README.md").write_text("changed by the agent\n")
    workspace_grant(workspace)

    control = agent.call("git_diff", {"path": "proj"}, wait=60).json()
    assert control["status"] == "succeeded", control
    assert "+changed by the agent" in control["result"]["content"]
    assert Invocation.objects.get(id=control["id"]).backend == "namespace"

    with (repo / ".git" / "config").open("a") as handle:
        handle.write(f'[filter "x"]\n\tclean = echo {FILTER_OUTPUT}\n')
    workspace_grant(workspace)
    answer = agent.call("git_diff", {"path": "proj"}, wait=60).json()
    assert answer["status"] == "failed", answer
    assert "filter.x.clean" in str(answer["error"])
    assert FILTER_OUTPUT not in str(answer)
    reasons = " ".join(
        str(event.reason) for event in AuditEvent.objects.filter(invocation_id=answer["id"])
    )
    assert "filter.x.clean" in reasons
