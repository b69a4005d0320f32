"""PURE: CI calls as the service's requests, and its answers read (GitHub and GitLab)."""

from __future__ import annotations

from typing import Any

import pytest

from common.config.deployment import CiSection
from tools_app.builtin.deployment.pipelines import (
    CiAnswerError,
    DeployRefusedError,
    granted_pipeline,
    run_state,
    started_run,
    status_call,
    trigger_action_type,
    trigger_call,
)
from tools_app.contracts import CallActionTypeError

GITHUB = CiSection.model_validate(
    {"connection": "ci", "kind": "github", "pipelines": [
        {"name": "web", "environment": "staging", "repository": "acme/web",
         "workflow": "deploy.yml", "refs": ["main", "release/*"], "inputs": ["version"]},
    ]}
)  # fmt: skip
GITLAB = CiSection.model_validate(
    {"connection": "ci", "kind": "gitlab", "pipelines": [
        {"name": "api", "environment": "production", "project": "4242", "refs": ["v*"],
         "inputs": ["TAG"]},
    ]}
)  # fmt: skip


def test_a_github_dispatch_asks_for_the_run_it_starts() -> None:
    call = trigger_call(GITHUB, "github", {"pipeline": "web", "ref": "release/2.4",
                                          "inputs": {"version": 2, }})  # fmt: skip
    assert call.path == "/repos/acme/web/actions/workflows/deploy.yml/dispatches"
    assert call.body == {"ref": "release/2.4", "inputs": {"version": "2"},
                         "return_run_details": True}  # fmt: skip
    assert call.action_type == "deploy:staging"
    answer = {"workflow_run_id": 99, "run_url": "u", "html_url": "https://github.com/r/99"}
    assert started_run("github", call, 200, answer) == ("web/99", "https://github.com/r/99",
                                                        "queued")  # fmt: skip
    # A server without return_run_details: started, run unknown.
    assert started_run("github", call, 204, "") == (None, None, None)
    with pytest.raises(CiAnswerError, match="HTTP 422, Unexpected inputs"):
        started_run("github", call, 422, {"message": "Unexpected inputs provided: ['x']"})


def test_a_gitlab_pipeline_is_created_with_variables_and_read_by_id() -> None:
    call = trigger_call(
        GITLAB, "gitlab", {"pipeline": "api", "ref": "v1.2", "inputs": {"TAG": "x"}}
    )
    assert call.path == "/projects/4242/pipeline" and call.action_type == "deploy:production"
    assert call.body == {"ref": "v1.2", "variables": [{"key": "TAG", "value": "x"}]}
    created = {"id": 77, "status": "created", "web_url": "https://gitlab.example.com/p/77"}
    assert started_run("gitlab", call, 201, created)[0] == "api/77"
    status = status_call(GITLAB, "gitlab", {"run": "api/77"})
    assert status.path == "/projects/4242/pipelines/77"
    state = run_state("gitlab", status, 200, {**created, "status": "failed", "ref": "v1.2"})
    assert (state["status"], state["conclusion"], state["finished"]) == ("failed", "failed", True)
    running = run_state("gitlab", status, 200, {**created, "status": "running"})
    assert running["conclusion"] is None and running["finished"] is False


@pytest.mark.parametrize(
    ("arguments", "words"),
    [
        ({"pipeline": "web", "ref": "feature/x"}, "may run on main, release/*"),
        ({"pipeline": "web", "ref": "release/../main"}, "must be a branch or tag name"),
        ({"pipeline": "web", "ref": "-main"}, "must be a branch or tag name"),
        ({"pipeline": "web", "ref": "main", "inputs": {"cmd": "x"}}, "input 'cmd' is not one"),
        ({"pipeline": "web", "ref": "main", "inputs": {"version": "x" * 1001}}, "at most 1000"),
        ({"pipeline": "nope", "ref": "main"}, "pipeline 'nope' is not one the console runs"),
    ],
)
def test_a_trigger_outside_the_pipeline_is_refused(arguments: dict[str, Any], words: str) -> None:
    with pytest.raises(DeployRefusedError, match=words.replace("*", r"\*")):
        trigger_call(GITHUB, "github", arguments)
    # Control: the pipeline's own ref, without inputs, is a request.
    assert trigger_call(GITHUB, "github", {"pipeline": "web", "ref": "main"}).ref == "main"


@pytest.mark.parametrize("run", ["99", "web/abc", "web/1/../2", "other/99", "web/-1"])
def test_a_run_must_name_a_configured_pipeline_and_a_number(run: str) -> None:
    with pytest.raises(DeployRefusedError):
        status_call(GITHUB, "github", {"run": run})
    assert (
        status_call(GITHUB, "github", {"run": "web/99"}).path == "/repos/acme/web/actions/runs/99"
    )


TWO = CiSection.model_validate(
    {"connection": "ci", "kind": "gitlab", "pipelines": [
        {"name": "api-staging", "environment": "staging", "project": "7", "refs": ["main"]},
        {"name": "api-production", "environment": "production", "project": "7",
         "refs": ["main"]},
    ]}
)  # fmt: skip


def test_a_trigger_is_placed_by_its_pipelines_environment() -> None:
    assert trigger_action_type(TWO, {"pipeline": "api-staging"}) == "deploy:staging"
    assert trigger_action_type(TWO, {"pipeline": "api-production"}) == "deploy:production"
    for name in ("api-canary", None, 7):
        with pytest.raises(CallActionTypeError, match="pipelines: api-staging, api-production"):
            trigger_action_type(TWO, {"pipeline": name})
    with pytest.raises(CallActionTypeError, match="not configured"):
        trigger_action_type(None, {"pipeline": "api-staging"})


def test_only_the_pipelines_an_agent_is_granted_go() -> None:
    staging, production = TWO.pipelines
    for granted in (None, [], ["api-staging"], "api-production", ["api-production-2"]):
        with pytest.raises(DeployRefusedError, match="api-production is not one this agent"):
            granted_pipeline(production, TWO, granted)
    with pytest.raises(DeployRefusedError, match=r"\(granted: api-staging\)"):
        granted_pipeline(production, TWO, ["api-staging", "gone"])
    # Controls: a listed pipeline goes.
    granted_pipeline(production, TWO, ["api-production"])
    granted_pipeline(staging, TWO, ("api-staging", "api-production"))
