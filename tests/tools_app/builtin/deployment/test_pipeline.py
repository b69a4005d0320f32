"""The deployment tools end to end: a daphne and a worker whose config has a
``deployment`` section.

CI is the test's own loopback server speaking GitHub's REST shapes (workflow
dispatch with ``return_run_details``, workflow runs, ``Bad credentials`` and
``Not Found`` answers), and only to the stored token sent as ``Authorization:
Bearer``. The containers run on the suite's private Docker engine from the sandbox
image; the config leaves every sandbox off docker, so that engine is not the
sandbox engine here (the refusal of the sandbox engine is tested at load, in
tests/common/config/test_deployment.py). An approval rule auto-approves every
deployment tool and the agents run at autonomy ``full``: production still asks.
Every refusal has its control beside it.
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
from django.core.cache import cache

from audit_app.models import AuditEvent
from audit_app.record import Actor
from common.testing import require
from secrets_app.redaction import GENERATION_KEY
from secrets_app.services import secret_set
from tests.support.pipeline import Pipeline, call_answer, call_finished, configured_pipeline
from tests.tools_app.api import conftest as api_fixtures
from tests.tools_app.api.conftest import AgentClient
from tests.tools_app.net.servers import LoopbackHttpServer, RecordedRequest, Reply
from tools_app.sandbox.backends.docker.engine import connect
from trust_app.models import AgentPermissions
from trust_app.services.agents import person_create, person_token_issue

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

make_agent = api_fixtures.make_agent
ADMIN = Actor.system("test admin")
REDIS_DB = 1
TOKEN_SECRET = "GITHUB_TOKEN"
IMAGE = "synthorg-sandbox:0.1.0"
# The token GitHub accepts: the stored secret of the test being run.
ACCEPTED: dict[str, str] = {}
SUFFIX = uuid.uuid4().hex[:8]
STAGING_BOX = f"deploy-test-web-staging-{SUFFIX}"
PRODUCTION_BOX = f"deploy-test-web-production-{SUFFIX}"
OTHER_BOX = f"deploy-test-other-{SUFFIX}"
# Written to the staging container's log at start: redacted once it is a stored secret.
LOG_SECRET = f"s3cr3t-{secrets.token_hex(16)}"
# A credential no one stored, known by its shape alone.
LOG_TOKEN = f"ghp_{secrets.token_hex(18)}"
WORKFLOWS = {"web-staging": "deploy-staging.yml", "web-production": "deploy-production.yml",
             "db-migrate": "migrate.yml"}  # fmt: skip
DOCS = "https://docs.github.com/rest"


class FakeGitHub:
    """GitHub's Actions REST API for repository acme/web, as far as these tools use it."""

    def __init__(self, server: LoopbackHttpServer) -> None:
        self.server = server
        self.runs: dict[int, dict[str, Any]] = {}
        self._lock = threading.Lock()
        for workflow in WORKFLOWS.values():
            server.route(self.dispatch_path(workflow), self._dispatch)
        # A run nobody started: GitHub's own 404.
        server.route("/repos/acme/web/actions/runs/999", self._run)

    @staticmethod
    def dispatch_path(workflow: str) -> str:
        return f"/repos/acme/web/actions/workflows/{workflow}/dispatches"

    def dispatched(self) -> list[RecordedRequest]:
        return [r for r in self.server.requests if r.path.endswith("/dispatches")]

    @staticmethod
    def _json(status: int, body: object) -> Reply:
        return Reply(status, {"Content-Type": "application/json; charset=utf-8"},
                     json.dumps(body).encode())  # fmt: skip

    def _unauthorised(self, request: RecordedRequest) -> Reply | None:
        sent = (request.header_values("Authorization") or [""])[0]
        if ACCEPTED.get("value") and sent == f"Bearer {ACCEPTED['value']}":
            return None
        return self._json(401, {"message": "Bad credentials", "documentation_url": DOCS,
                                "status": "401"})  # fmt: skip

    def _dispatch(self, request: RecordedRequest) -> Reply:
        refused = self._unauthorised(request)
        if refused is not None:
            return refused
        if request.method != "POST":
            return self._json(404, {"message": "Not Found", "documentation_url": DOCS})
        body = json.loads(request.body or b"{}")
        if not isinstance(body.get("ref"), str):
            return self._json(422, {"message": "Invalid request.\n\n\"ref\" wasn't supplied.",
                                    "documentation_url": DOCS, "status": "422"})  # fmt: skip
        unexpected = sorted(set(body.get("inputs") or {}) - {"version"})
        if unexpected:
            return self._json(422, {"message": f"Unexpected inputs provided: {unexpected}",
                                    "documentation_url": DOCS, "status": "422"})  # fmt: skip
        if not body.get("return_run_details"):
            return Reply(204)
        with self._lock:
            run_id = 7_000_000 + len(self.runs) + 1
            self.runs[run_id] = {
                "id": run_id, "name": request.path.split("/")[-2], "event": "workflow_dispatch",
                "head_branch": body["ref"], "head_sha": "0f3c2e1b" * 5, "status": "completed",
                "conclusion": "success", "run_attempt": 1,
                "html_url": f"https://github.com/acme/web/actions/runs/{run_id}",
                "created_at": "2026-01-05T10:00:00Z", "updated_at": "2026-01-05T10:04:10Z",
            }  # fmt: skip
        self.server.route(f"/repos/acme/web/actions/runs/{run_id}", self._run)
        return self._json(200, {
            "workflow_run_id": run_id,
            "run_url": f"https://api.github.com/repos/acme/web/actions/runs/{run_id}",
            "html_url": f"https://github.com/acme/web/actions/runs/{run_id}",
        })  # fmt: skip

    def _run(self, request: RecordedRequest) -> Reply:
        refused = self._unauthorised(request)
        if refused is not None:
            return refused
        run = self.runs.get(int(request.path.rsplit("/", 1)[1]))
        if request.method != "GET" or run is None:
            return self._json(404, {"message": "Not Found", "documentation_url": DOCS})
        return self._json(200, run)


@pytest.fixture(scope="module")
def github() -> Iterator[FakeGitHub]:
    with LoopbackHttpServer("127.0.0.1") as server:
        yield FakeGitHub(server)


@pytest.fixture(scope="module")
def engine(test_env: dict[str, str]) -> Iterator[Any]:
    """Three long-lived containers on the suite's engine; removed at the end."""
    host = test_env.get("DOCKER_HOST", "")
    require(bool(host), "DOCKER_HOST names no Docker engine (run through scripts/test.sh)")
    client = connect(host)
    try:
        client.images.get(IMAGE)
    except Exception:  # the SDK's own NotFound, or an engine that is down
        require(False, f"the image {IMAGE} is not on the engine at {host}")
    script = (
        f"echo 'started with key {LOG_SECRET}'; echo 'pulling with {LOG_TOKEN}'; echo ready; "
        "exec sleep infinity"
    )
    started = []
    try:
        for name in (STAGING_BOX, PRODUCTION_BOX, OTHER_BOX):
            started.append(client.containers.run(
                IMAGE, ["sh", "-c", script], name=name, detach=True, network_mode="none",
                user="65534:65534", stop_signal="SIGKILL",
            ))  # fmt: skip
        yield client
    finally:
        for container in started:
            container.remove(force=True)
        client.close()


@pytest.fixture(scope="module")
def pipeline(
    test_env: dict[str, str],
    tmp_path_factory: pytest.TempPathFactory,
    github: FakeGitHub,
    engine: Any,
) -> Iterator[Pipeline]:
    pipelines = [
        {"name": "web-staging", "environment": "staging", "repository": "acme/web",
         "workflow": WORKFLOWS["web-staging"], "refs": ["main", "release/*"],
         "inputs": ["version"]},
        {"name": "web-production", "environment": "production", "repository": "acme/web",
         "workflow": WORKFLOWS["web-production"], "refs": ["main"]},
        {"name": "db-migrate", "environment": "production", "repository": "acme/web",
         "workflow": WORKFLOWS["db-migrate"], "refs": ["main"], "safety_class": "privileged"},
    ]  # fmt: skip
    config = {
        "connections": [
            {
                "name": "github",
                "base_url": github.server.origin,
                "auth": {"secret": TOKEN_SECRET, "scheme": "bearer"},
                "private_network": True,
                "operations": [
                    {
                        "name": "dispatch",
                        "method": "POST",
                        "path": "/repos/{owner}/{repo}/actions/workflows/{id}/dispatches",
                    },
                    {
                        "name": "runs",
                        "method": "GET",
                        "path": "/repos/{owner}/{repo}/actions/runs/{id}",
                    },
                ],
            }
        ],
        "deployment": {
            "ci": {"connection": "github", "kind": "github", "pipelines": pipelines},
            "containers": {
                "docker_host": test_env["DOCKER_HOST"],
                "allowed": [
                    {"name": STAGING_BOX, "environment": "staging"},
                    {"name": PRODUCTION_BOX, "environment": "production"},
                ],
                "max_log_lines": 50,
                "stop_timeout_seconds": 1,
            },
        },
        # An admin's rule approving every deployment call: production still asks people.
        "approval": {
            "rules": [
                {
                    "name": "deploys-go",
                    "match": {"category": "deployment"},
                    "disposition": "auto_approve",
                },
            ]
        },
    }
    root = tmp_path_factory.mktemp("deployment")
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
    value = f"ghp_{secrets.token_hex(18)}"
    secret_set(name=TOKEN_SECRET, value=value, actor=ADMIN)
    ACCEPTED["value"] = value
    return value


def _agent(
    make_agent: Callable[..., AgentClient],
    grants: list[str] | None = None,
    *,
    pipelines: list[str] | None = None,
    **more: Any,
) -> AgentClient:
    client = make_agent("elevated", autonomy="full")
    if grants is not None:
        granted = list(WORKFLOWS) if pipelines is None else pipelines
        AgentPermissions.objects.create(
            agent=client.agent,
            sub_constraints={"connections": grants, "ci_pipelines": granted, **more},
        )
    return client


def _call(client: AgentClient, tool: str, **arguments: Any) -> dict[str, Any]:
    return call_answer(client, tool, arguments)


def _denied(client: AgentClient, tool: str, **arguments: Any) -> dict[str, Any]:
    """A call refused when decided: recorded as denied, never queued."""
    answer = _call(client, tool, **arguments)
    assert answer["status"] == "denied" and answer["queue"] is None, answer
    return {**answer["error"], "rule": answer["decision"]["rule"]}


def _approve(daphne_server: str, approval_id: str) -> None:
    operator = person_create(username=f"op-{uuid.uuid4().hex[:6]}", role="operator", password=None)
    decided = httpx.post(
        f"{daphne_server}/api/v1/approvals/{approval_id}/decide/",
        json={"decision": "approve", "reason": "release window"},
        headers={"Authorization": f"Bearer {person_token_issue(person=operator)}"},
        timeout=60,
    )
    assert decided.status_code == 200, decided.text


def _finished(client: AgentClient, invocation: str) -> dict[str, Any]:
    return call_finished(client, invocation)


def test_a_staging_run_starts_at_once_with_the_consoles_token_and_its_status_is_read(
    make_agent: Callable[..., AgentClient], github: FakeGitHub, token: str
) -> None:
    client = _agent(make_agent, ["github"])
    before = len(github.dispatched())
    done = _call(client, "ci_trigger", pipeline="web-staging", ref="release/2.4",
                 inputs={"version": "2.4.1"})  # fmt: skip

    assert done["status"] == "succeeded", done
    started = done["result"]["structured"]
    assert started["action_type"] == "deploy:staging" and started["environment"] == "staging"
    assert started["run"].startswith("web-staging/") and started["status"] == "queued"
    sent = github.dispatched()[before:]
    assert len(sent) == 1
    assert sent[0].path == FakeGitHub.dispatch_path(WORKFLOWS["web-staging"])
    assert sent[0].header_values("Authorization") == [f"Bearer {token}"]
    assert json.loads(sent[0].body) == {
        "ref": "release/2.4", "inputs": {"version": "2.4.1"}, "return_run_details": True
    }  # fmt: skip
    assert token not in json.dumps(done)
    row = AuditEvent.objects.get(kind="deployment.ci_trigger", invocation_id=done["id"])
    assert row.action_type == "deploy:staging" and row.outcome == "started"
    assert row.data["run"] == started["run"] and row.data["ref"] == "release/2.4"
    assert AuditEvent.objects.filter(
        kind="external_data.request", invocation_id=done["id"]
    ).exists()

    status = _call(client, "ci_status", run=started["run"])
    assert status["status"] == "succeeded", status
    state = status["result"]["structured"]
    assert state["status"] == "completed" and state["conclusion"] == "success"
    assert state["finished"] is True and state["ref"] == "release/2.4"

    # A run GitHub does not know: its own answer, as a failure.
    missing = _call(client, "ci_status", run="web-staging/999")
    assert missing["status"] == "failed", missing
    assert missing["error"]["code"] == "CI_REFUSED" and "Not Found" in missing["error"]["message"]


def test_a_pipeline_ref_input_or_connection_not_allowed_is_refused_before_anything_is_sent(
    make_agent: Callable[..., AgentClient], github: FakeGitHub, token: str
) -> None:
    client = _agent(make_agent, ["github"])
    ungranted = _agent(make_agent, ["github:runs"])
    before = len(github.dispatched())

    wrong_ref = _denied(client, "ci_trigger", pipeline="web-staging", ref="feature/x")
    assert wrong_ref["rule"] == "deployment_target", wrong_ref
    assert "may run on main, release/*, not 'feature/x'" in wrong_ref["message"]
    sneaky = _denied(client, "ci_trigger", pipeline="web-staging", ref="main..evil")
    assert sneaky["rule"] == "deployment_target", sneaky
    extra = _denied(client, "ci_trigger", pipeline="web-staging", ref="main",
                    inputs={"command": "rm -rf /"})  # fmt: skip
    assert "input 'command' is not one pipeline web-staging takes" in extra["message"]
    unknown = _denied(client, "ci_trigger", pipeline="web-canary", ref="main")
    assert unknown["rule"] == "deployment_target", unknown
    not_granted = _denied(ungranted, "ci_trigger", pipeline="web-staging", ref="main")
    assert not_granted["rule"] == "connection_not_granted", not_granted
    assert len(github.dispatched()) == before

    # Controls: the same agents doing the allowed thing.
    assert _call(client, "ci_trigger", pipeline="web-staging", ref="main")["status"] == "succeeded"
    run = f"web-staging/{max(github.runs)}"
    assert _call(ungranted, "ci_status", run=run)["status"] == "succeeded"
    assert len(github.dispatched()) == before + 1


def test_an_agent_triggers_only_the_pipelines_it_is_granted(
    make_agent: Callable[..., AgentClient], github: FakeGitHub, token: str
) -> None:
    staging_only = _agent(make_agent, ["github"], pipelines=["web-staging"])
    none = _agent(make_agent, ["github"], pipelines=[])
    before = len(github.dispatched())

    refused = _denied(staging_only, "ci_trigger", pipeline="web-production", ref="main")
    assert refused["rule"] == "pipeline_not_granted", refused
    assert "(granted: web-staging)" in refused["message"]
    # The grant is judged first: nothing about the other pipeline's refs is told.
    hidden = _denied(staging_only, "ci_trigger", pipeline="web-production", ref="feature/x")
    assert hidden["rule"] == "pipeline_not_granted" and "may run on" not in hidden["message"]
    shown = _denied(staging_only, "ci_trigger", pipeline="web-staging", ref="feature/x")
    assert shown["rule"] == "deployment_target" and "may run on" in shown["message"]
    assert _denied(none, "ci_trigger", pipeline="web-staging", ref="main")["rule"] == (
        "pipeline_not_granted"
    )
    assert len(github.dispatched()) == before
    # Control: the listed pipeline goes, and its runs are read.
    done = _call(staging_only, "ci_trigger", pipeline="web-staging", ref="main")
    assert done["status"] == "succeeded", done
    assert len(github.dispatched()) == before + 1
    run = done["result"]["structured"]["run"]
    assert _call(staging_only, "ci_status", run=run)["status"] == "succeeded"
    read = _denied(none, "ci_status", run=run)
    assert read["rule"] == "pipeline_not_granted", read


def test_the_permission_check_reads_each_calls_own_deploy_type(
    make_agent: Callable[..., AgentClient], github: FakeGitHub, token: str
) -> None:
    # An agent whose level asks a person for production deploys only: its staging runs
    # go at once; one that asks for staging deploys waits for its staging run.
    production_asks = _agent(make_agent, ["github"], requires_approval=["deploy:production"])
    staging_asks = _agent(make_agent, ["github"], requires_approval=["deploy:staging"])
    before = len(github.dispatched())

    waits = _call(staging_asks, "ci_trigger", pipeline="web-staging", ref="main")
    assert waits["status"] == "pending_approval", waits
    assert "requires approval for deploy:staging" in waits["decision"]["reason"]
    decided = AuditEvent.objects.get(kind="invocation.decided", invocation_id=waits["id"])
    assert decided.action_type == "deploy:staging"
    assert len(github.dispatched()) == before

    goes = _call(production_asks, "ci_trigger", pipeline="web-staging", ref="main")
    assert goes["status"] == "succeeded", goes
    decided = AuditEvent.objects.get(kind="invocation.decided", invocation_id=goes["id"])
    assert decided.action_type == "deploy:staging"
    asks = _call(production_asks, "ci_trigger", pipeline="web-production", ref="main")
    assert asks["status"] == "pending_approval", asks
    assert "requires approval for deploy:production" in asks["decision"]["reason"]
    assert len(github.dispatched()) == before + 1


def test_production_asks_a_person_and_a_privileged_pipeline_two_whatever_the_rules_say(
    make_agent: Callable[..., AgentClient], github: FakeGitHub, token: str, daphne_server: str
) -> None:
    client = _agent(make_agent, ["github"])
    before = len(github.dispatched())

    production = _call(client, "ci_trigger", pipeline="web-production", ref="main")
    assert production["status"] == "pending_approval", production
    assert production["approval"]["required_approvals"] == 1
    assert "deploy:production" in production["decision"]["reason"]
    privileged = _call(client, "ci_trigger", pipeline="db-migrate", ref="main")
    assert privileged["status"] == "pending_approval", privileged
    assert privileged["approval"]["required_approvals"] == 2
    assert len(github.dispatched()) == before

    _approve(daphne_server, production["approval"]["id"])
    done = _finished(client, production["id"])
    assert done["status"] == "succeeded", done
    assert done["result"]["structured"]["action_type"] == "deploy:production"
    assert len(github.dispatched()) == before + 1
    row = AuditEvent.objects.get(kind="deployment.ci_trigger", invocation_id=done["id"])
    assert row.action_type == "deploy:production"


def test_allowlisted_containers_are_read_restarted_and_their_logs_redacted(
    make_agent: Callable[..., AgentClient], engine: Any, daphne_server: str, pipeline: Pipeline
) -> None:
    client = _agent(make_agent)
    secret_set(name="DEPLOY_KEY", value=LOG_SECRET, actor=ADMIN)
    # Announced in this process's cache; the pipeline's processes share another Redis
    # database (in a deployment, both are one), and a worker checks it as a call starts.
    pipeline.broker.incr(cache.make_key(GENERATION_KEY))

    status = _call(client, "container_status", name=STAGING_BOX)
    assert status["status"] == "succeeded", status
    state = status["result"]["structured"]
    assert state["running"] is True and state["status"] == "running"
    assert state["environment"] == "staging" and state["image"] == IMAGE

    logs = _call(client, "container_logs", name=STAGING_BOX, lines=10)
    assert logs["status"] == "succeeded", logs
    text = logs["result"]["structured"]["text"]
    assert "ready" in text and "started with key" in text and "pulling with" in text
    assert LOG_SECRET not in json.dumps(logs) and LOG_TOKEN not in json.dumps(logs)
    too_many = _denied(client, "container_logs", name=STAGING_BOX, lines=51)
    assert too_many["rule"] == "deployment_target" and "up to 50" in too_many["message"]

    # A container on the engine but not on the allowlist: refused; the engine is not asked.
    other = _denied(client, "container_status", name=OTHER_BOX)
    assert other["rule"] == "deployment_target" and "not one agents may use" in other["message"]
    other_start = engine.containers.get(OTHER_BOX).attrs["State"]["StartedAt"]
    assert _denied(client, "container_restart", name=OTHER_BOX)["rule"] == "deployment_target"
    assert engine.containers.get(OTHER_BOX).attrs["State"]["StartedAt"] == other_start

    first_start = engine.containers.get(STAGING_BOX).attrs["State"]["StartedAt"]
    restarted = _call(client, "container_restart", name=STAGING_BOX)
    assert restarted["status"] == "succeeded", restarted
    assert engine.containers.get(STAGING_BOX).attrs["State"]["StartedAt"] != first_start
    row = AuditEvent.objects.get(kind="deployment.container", invocation_id=restarted["id"])
    assert row.action_type == "deploy:staging" and row.outcome == "restarted"

    # Production: a person first, although the rule approves and autonomy is full.
    production_start = engine.containers.get(PRODUCTION_BOX).attrs["State"]["StartedAt"]
    pending = _call(client, "container_restart", name=PRODUCTION_BOX)
    assert pending["status"] == "pending_approval", pending
    assert pending["approval"]["required_approvals"] == 1
    assert engine.containers.get(PRODUCTION_BOX).attrs["State"]["StartedAt"] == production_start
    _approve(daphne_server, pending["approval"]["id"])
    done = _finished(client, pending["id"])
    assert done["status"] == "succeeded", done
    assert engine.containers.get(PRODUCTION_BOX).attrs["State"]["StartedAt"] != production_start
