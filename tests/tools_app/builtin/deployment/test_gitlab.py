"""``ci_trigger`` and ``ci_status`` end to end through a GitLab connection.

GitLab is the test's own loopback server speaking its REST API under ``/api/v4``:
``POST /projects/:id/pipeline`` with ``{ref, variables}`` answers 201 with the
pipeline, ``GET /projects/:id/pipelines/:pipeline_id`` reads it, and both answer
``401 Unauthorized`` unless the ``PRIVATE-TOKEN`` header carries the stored token
(the connection's ``header:PRIVATE-TOKEN`` scheme). The agents run at autonomy
``semi``, which asks people for every ``deploy`` type; the one approval rule
approves ``deploy:staging``: a staging run goes only because its action type is
resolved per call, and a production run still waits for a person.
"""

from __future__ import annotations

import json
import secrets
import threading
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from audit_app.models import AuditEvent
from audit_app.record import Actor
from secrets_app.services import secret_set
from tests.support.pipeline import Pipeline, call_answer, call_finished, configured_pipeline
from tests.tools_app.api import conftest as api_fixtures
from tests.tools_app.api.conftest import AgentClient
from tests.tools_app.net.servers import LoopbackHttpServer, RecordedRequest, Reply
from trust_app.models import AgentPermissions
from trust_app.services.agents import person_create, person_token_issue

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

make_agent = api_fixtures.make_agent
ADMIN = Actor.system("test admin")
REDIS_DB = 1
TOKEN_SECRET = "GITLAB_TOKEN"
PROJECT = "4242"
PIPELINES = ["api-staging", "api-production"]
CONFIGURED = [
    {"name": "api-staging", "environment": "staging", "project": PROJECT, "refs": ["main"],
     "inputs": ["DEPLOY_TAG"]},
    {"name": "api-production", "environment": "production", "project": PROJECT,
     "refs": ["main", "v*"]},
]  # fmt: skip
# The token GitLab accepts: the stored secret of the test being run.
ACCEPTED: dict[str, str] = {}


class FakeGitLab:
    """GitLab's pipelines API for project 4242, as far as these tools use it."""

    def __init__(self, server: LoopbackHttpServer) -> None:
        self.server = server
        self.pipelines: dict[int, dict[str, Any]] = {}
        self._lock = threading.Lock()
        server.route(self.create_path(), self._create)

    @staticmethod
    def create_path() -> str:
        return f"/api/v4/projects/{PROJECT}/pipeline"

    def created(self) -> list[RecordedRequest]:
        return [r for r in self.server.requests if r.path == self.create_path()]

    @staticmethod
    def _json(status: int, body: object) -> Reply:
        return Reply(status, {"Content-Type": "application/json"}, json.dumps(body).encode())

    def _unauthorised(self, request: RecordedRequest) -> Reply | None:
        sent = request.header_values("PRIVATE-TOKEN")
        if ACCEPTED.get("value") and sent == [ACCEPTED["value"]]:
            return None
        return self._json(401, {"message": "401 Unauthorized"})

    def _create(self, request: RecordedRequest) -> Reply:
        refused = self._unauthorised(request)
        if refused is not None:
            return refused
        if request.method != "POST":
            return self._json(405, {"message": "405 Method Not Allowed"})
        body = json.loads(request.body or b"{}")
        if body.get("ref") not in ("main", "v1.2.0"):
            return self._json(400, {"message": {"base": ["Reference not found"]}})
        with self._lock:
            pipeline_id = 90_000 + len(self.pipelines) + 1
            self.pipelines[pipeline_id] = {
                "id": pipeline_id, "iid": len(self.pipelines) + 1, "project_id": int(PROJECT),
                "sha": "a91957a858320c0e17f3a0eca7cfacbff50ea29a", "ref": body["ref"],
                "status": "created", "source": "api", "variables": body.get("variables", []),
                "created_at": "2026-01-05T10:00:00.000Z", "updated_at": "2026-01-05T10:00:00.000Z",
                "web_url": f"https://gitlab.example.com/acme/api/-/pipelines/{pipeline_id}",
            }  # fmt: skip
        self.server.route(f"/api/v4/projects/{PROJECT}/pipelines/{pipeline_id}", self._read)
        shown = {k: v for k, v in self.pipelines[pipeline_id].items() if k != "variables"}
        return self._json(201, shown)

    def _read(self, request: RecordedRequest) -> Reply:
        refused = self._unauthorised(request)
        if refused is not None:
            return refused
        found = self.pipelines.get(int(request.path.rsplit("/", 1)[1]))
        if request.method != "GET" or found is None:
            return self._json(404, {"message": "404 Not found"})
        return self._json(200, {k: v for k, v in found.items() if k != "variables"})


@pytest.fixture(scope="module")
def gitlab() -> Iterator[FakeGitLab]:
    with LoopbackHttpServer("127.0.0.1") as server:
        yield FakeGitLab(server)


@pytest.fixture(scope="module")
def pipeline(
    test_env: dict[str, str], tmp_path_factory: pytest.TempPathFactory, gitlab: FakeGitLab
) -> Iterator[Pipeline]:
    config = {
        "connections": [
            {
                "name": "gitlab",
                "base_url": f"{gitlab.server.origin}/api/v4",
                "auth": {"secret": TOKEN_SECRET, "scheme": "header:PRIVATE-TOKEN"},
                "private_network": True,
                "operations": [
                    {"name": "create", "method": "POST", "path": "/projects/{id}/pipeline"},
                    {"name": "read", "method": "GET", "path": "/projects/{id}/pipelines/{pid}"},
                ],
            }
        ],
        "deployment": {
            "ci": {
                "connection": "gitlab",
                "kind": "gitlab",
                "pipelines": CONFIGURED,
            }
        },
        "approval": {
            "rules": [
                {
                    "name": "staging-goes",
                    "match": {"action_type": "deploy:staging"},
                    "disposition": "auto_approve",
                },
            ]
        },
    }
    root = tmp_path_factory.mktemp("gitlab")
    with configured_pipeline(test_env, root, config, redis_db=REDIS_DB) as started:
        yield started


@pytest.fixture(scope="module")
def daphne_server(pipeline: Pipeline) -> str:
    return pipeline.url


@pytest.fixture(autouse=True)
def _settled(pipeline: Pipeline) -> Iterator[None]:
    yield
    pipeline.settle()


@pytest.fixture
def token() -> str:
    value = f"glpat-{secrets.token_urlsafe(20)}"
    secret_set(name=TOKEN_SECRET, value=value, actor=ADMIN)
    ACCEPTED["value"] = value
    return value


def _agent(make_agent: Callable[..., AgentClient], pipelines: list[str]) -> AgentClient:
    client = make_agent("elevated", autonomy="semi")
    AgentPermissions.objects.create(
        agent=client.agent,
        sub_constraints={"connections": ["gitlab"], "ci_pipelines": pipelines},
    )
    return client


def _call(client: AgentClient, tool: str, **arguments: Any) -> dict[str, Any]:
    return call_answer(client, tool, arguments)


def _finished(client: AgentClient, invocation: str) -> dict[str, Any]:
    return call_finished(client, invocation)


def _operator(daphne_server: str) -> httpx.Client:
    person = person_create(username=f"op-{uuid.uuid4().hex[:6]}", role="operator", password=None)
    return httpx.Client(
        base_url=daphne_server,
        headers={"Authorization": f"Bearer {person_token_issue(person=person)}"},
        timeout=60,
    )


def _recorded(invocation: str) -> str:
    """Every audit row of the call, as one text."""
    rows = AuditEvent.objects.filter(invocation_id=invocation).values(
        "kind", "action_type", "reason", "data"
    )
    return json.dumps(list(rows), default=str)


def test_a_staging_pipeline_runs_by_its_rule_with_the_token_only_gitlab_sees(
    make_agent: Callable[..., AgentClient], gitlab: FakeGitLab, token: str
) -> None:
    client = _agent(make_agent, PIPELINES)
    before = len(gitlab.created())
    done = _call(client, "ci_trigger", pipeline="api-staging", ref="main",
                 inputs={"DEPLOY_TAG": "v1.2.0"})  # fmt: skip

    assert done["status"] == "succeeded", done
    assert "staging-goes" in json.dumps(done["decision"])
    started = done["result"]["structured"]
    assert started["action_type"] == "deploy:staging" and started["status"] == "created"
    assert started["run"].startswith("api-staging/9")
    sent = gitlab.created()[before:]
    assert len(sent) == 1 and sent[0].method == "POST"
    assert sent[0].header_values("PRIVATE-TOKEN") == [token]
    assert json.loads(sent[0].body) == {
        "ref": "main", "variables": [{"key": "DEPLOY_TAG", "value": "v1.2.0"}]
    }  # fmt: skip
    decided = AuditEvent.objects.get(kind="invocation.decided", invocation_id=done["id"])
    assert decided.action_type == "deploy:staging" and decided.outcome == "allow"
    row = AuditEvent.objects.get(kind="deployment.ci_trigger", invocation_id=done["id"])
    assert row.action_type == "deploy:staging" and row.outcome == "started"
    assert token not in json.dumps(done) and token not in _recorded(done["id"])

    status = _call(client, "ci_status", run=started["run"])
    assert status["status"] == "succeeded", status
    state = status["result"]["structured"]
    assert (state["status"], state["finished"], state["ref"]) == ("created", False, "main")
    gitlab.pipelines[int(started["run"].split("/")[1])]["status"] = "success"
    state = _call(client, "ci_status", run=started["run"])["result"]["structured"]
    assert (state["status"], state["conclusion"], state["finished"]) == (
        "success", "success", True
    )  # fmt: skip
    assert gitlab.server.requests[-1].header_values("PRIVATE-TOKEN") == [token]


def test_a_production_pipeline_waits_for_a_person_and_the_card_shows_no_token(
    make_agent: Callable[..., AgentClient], gitlab: FakeGitLab, token: str, daphne_server: str
) -> None:
    client = _agent(make_agent, PIPELINES)
    before = len(gitlab.created())

    pending = _call(client, "ci_trigger", pipeline="api-production", ref="v1.2.0")
    assert pending["status"] == "pending_approval", pending
    assert pending["approval"]["required_approvals"] == 1
    assert len(gitlab.created()) == before
    decided = AuditEvent.objects.get(kind="invocation.decided", invocation_id=pending["id"])
    assert decided.action_type == "deploy:production"

    with _operator(daphne_server) as operator:
        listed = operator.get("/api/v1/approvals/", params={"status": "pending"})
        assert listed.status_code == 200, listed.text
        assert pending["approval"]["id"] in listed.text and "api-production" in listed.text
        assert token not in listed.text
        approved = operator.post(
            f"/api/v1/approvals/{pending['approval']['id']}/decide/",
            json={"decision": "approve", "reason": "release window"},
        )
        assert approved.status_code == 200, approved.text

    done = _finished(client, pending["id"])
    assert done["status"] == "succeeded", done
    assert done["result"]["structured"]["action_type"] == "deploy:production"
    assert len(gitlab.created()) == before + 1
    assert gitlab.created()[-1].header_values("PRIVATE-TOKEN") == [token]
    row = AuditEvent.objects.get(kind="deployment.ci_trigger", invocation_id=done["id"])
    assert row.action_type == "deploy:production"
    assert token not in json.dumps(done) and token not in _recorded(done["id"])


def test_unknown_or_ungranted_pipelines_are_refused_before_anyone_is_asked(
    make_agent: Callable[..., AgentClient], gitlab: FakeGitLab, token: str
) -> None:
    staging_only = _agent(make_agent, ["api-staging"])
    before = len(gitlab.created())

    unknown = _call(staging_only, "ci_trigger", pipeline="api-canary", ref="main")
    assert unknown["status"] == "denied" and unknown["approval"] is None, unknown
    assert unknown["decision"]["rule"] == "deployment_target"
    assert "(pipelines: api-staging, api-production)" in unknown["decision"]["reason"]
    ungranted = _call(staging_only, "ci_trigger", pipeline="api-production", ref="main")
    assert ungranted["status"] == "denied" and ungranted["approval"] is None, ungranted
    assert ungranted["decision"]["rule"] == "pipeline_not_granted"
    assert "(granted: api-staging)" in ungranted["decision"]["reason"]
    assert len(gitlab.created()) == before

    # Control: the pipeline the agent is granted goes.
    done = _call(staging_only, "ci_trigger", pipeline="api-staging", ref="main")
    assert done["status"] == "succeeded", done
    assert len(gitlab.created()) == before + 1
