"""The ``deployment`` section: what loads, and the mistakes refused at load with the field."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from common.config import SynthOrgConfig
from common.config.deployment import engine_address
from tools_app.registry import build_catalog

GITHUB: dict[str, Any] = {
    "name": "github",
    "base_url": "http://127.0.0.1:9",
    "private_network": True,
    "operations": [
        {"method": "POST", "path": "/repos/{owner}/{repo}/actions/workflows/{id}/dispatches"},
        {"method": "GET", "path": "/repos/acme/**"},
    ],
}
PIPELINE: dict[str, Any] = {
    "name": "web-staging",
    "environment": "staging",
    "repository": "acme/web",
    "workflow": "deploy.yml",
    "refs": ["main", "release/*"],
}
DEPLOYMENT_TOOLS = {"ci_trigger", "ci_status", "container_status", "container_restart",
                    "container_logs"}  # fmt: skip


def _config(deployment: dict[str, Any], **more: Any) -> SynthOrgConfig:
    return SynthOrgConfig.model_validate(
        {"connections": [GITHUB], "deployment": deployment, **more}
    )


def _ci(*pipelines: dict[str, Any], kind: str = "github") -> dict[str, Any]:
    return {"ci": {"connection": "github", "kind": kind, "pipelines": list(pipelines)}}


def _containers(docker_host: str, *names: str) -> dict[str, Any]:
    allowed = [{"name": name, "environment": "staging"} for name in names or ("web",)]
    return {"containers": {"docker_host": docker_host, "allowed": allowed}}


def _registered(config: SynthOrgConfig) -> set[str]:
    return {c.name for c in build_catalog(config, source="test")} & DEPLOYMENT_TOOLS


def test_each_part_registers_its_own_tools() -> None:
    assert _registered(SynthOrgConfig()) == set()
    assert _registered(_config(_ci(PIPELINE))) == {"ci_trigger", "ci_status"}
    assert _registered(_config(_containers("tcp://127.0.0.1:2999"))) == {
        "container_status", "container_restart", "container_logs"
    }  # fmt: skip
    both = {**_ci(PIPELINE), **_containers("tcp://127.0.0.1:2999")}
    assert _registered(_config(both)) == DEPLOYMENT_TOOLS


@pytest.mark.parametrize(
    ("deployment", "words"),
    [
        ({}, "deployment needs ci, containers or both"),
        ({"ci": {**_ci(PIPELINE)["ci"], "connection": "gitlab"}}, "names no configured connection"),
        (_ci(PIPELINE, PIPELINE), "pipeline 'web-staging' is named twice"),
        (_ci({**PIPELINE, "workflow": None}), "kind github needs repository and workflow"),
        (_ci({**PIPELINE, "project": "12"}), "kind github takes repository and workflow only"),
        (_ci({**PIPELINE, "refs": ["../main"]}), "ref pattern"),
        (_ci({**PIPELINE, "environment": "prod"}), "environment"),
        (_containers("tcp://127.0.0.1:2999", "web", "web"), "container 'web' is named twice"),
        (_containers("tcp://127.0.0.1:2999", "/etc"), "container name"),
        (_containers("ssh://deploy@host"), "must be unix:///path/to/docker.sock or tcp://"),
    ],
)
def test_mistakes_are_refused_at_load(deployment: dict[str, Any], words: str) -> None:
    with pytest.raises(ValidationError, match=words.replace("(", r"\(")):
        _config(deployment)


def test_a_gitlab_pipeline_names_its_project_by_id() -> None:
    gitlab = {"name": "api-prod", "environment": "production", "project": "4242", "refs": ["v*"]}
    operations = [{"method": "POST", "path": "/projects/{id}/pipeline"},
                  {"method": "GET", "path": "/projects/{id}/pipelines/{pipeline}"}]  # fmt: skip
    connection = {**GITHUB, "operations": operations}
    loaded = SynthOrgConfig.model_validate(
        {"connections": [connection], "deployment": _ci(gitlab, kind="gitlab")}
    )
    assert loaded.deployment is not None
    with pytest.raises(ValidationError, match="numeric id"):
        _config(_ci({**gitlab, "project": "group/api"}, kind="gitlab"))


def test_the_connection_must_take_every_request_the_pipelines_send() -> None:
    other_repo = {**PIPELINE, "name": "api", "repository": "acme2/api"}
    with pytest.raises(ValidationError, match=r"no operation for GET /repos/acme2/api/actions/"
                       r"runs/1 \(pipeline api\)"):  # fmt: skip
        _config(_ci(PIPELINE, other_repo))
    only_runs = {**GITHUB, "operations": GITHUB["operations"][1:]}
    with pytest.raises(ValidationError, match="no operation for POST /repos/acme/web/actions/"):
        SynthOrgConfig.model_validate({"connections": [only_runs], "deployment": _ci(PIPELINE)})
    # Control: the pipeline whose requests the connection takes loads.
    _config(_ci(PIPELINE))


def test_the_sandbox_engine_is_refused_as_the_container_host(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    sandbox = "unix:///run/synthorg-sandbox/docker.sock"
    # Named as the sandbox's engine: refused in any spelling, used by a category or not.
    for spelling in (sandbox, "unix://run/synthorg-sandbox/docker.sock", sandbox + "/"):
        with pytest.raises(ValidationError, match="is the sandbox engine"):
            _config(_containers(spelling), sandboxing={"docker": {"docker_host": sandbox}})
    # While a category runs in docker, the engine it finds through DOCKER_HOST is refused.
    monkeypatch.setenv("DOCKER_HOST", "tcp://localhost:2376")
    docker_code = {"overrides": {"code_execution": "docker"}}
    with pytest.raises(ValidationError, match="the docker sandbox backend uses"):
        _config(_containers("tcp://127.0.0.1:2376"), sandboxing=docker_code)
    # Controls: another engine loads beside the sandbox's, and the same engine loads
    # while no sandbox uses docker at all.
    _config(_containers("tcp://127.0.0.1:2999"), sandboxing=docker_code)
    _config(
        _containers("unix:///run/deploy/docker.sock"),
        sandboxing={"docker": {"docker_host": sandbox}},
    )
    _config(_containers("tcp://127.0.0.1:2376"))


def test_engine_addresses_compare_in_one_spelling() -> None:
    assert engine_address("tcp://LOCALHOST:2375") == engine_address("tcp://127.0.0.1")
    assert engine_address("unix://var/run/x.sock") == engine_address("unix:///var/run/x.sock")
    assert engine_address("tcp://127.0.0.1:2375") != engine_address("tcp://127.0.0.1:2376")
