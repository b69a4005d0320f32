"""``deployment``: the opt-in deployment tools (``ci_trigger``, ``ci_status``,
``container_status``, ``container_restart``, ``container_logs``).

The section's presence turns the category on; each part turns on its own tools:

- ``ci``: ``ci_trigger`` and ``ci_status`` through a configured connection to GitHub's
  REST API (``kind: github``: a workflow's ``workflow_dispatch``) or GitLab's
  (``kind: gitlab``: a project's pipeline). Only the listed ``pipelines`` run, each on
  the refs its ``refs`` patterns allow, with the inputs it names;
- ``containers``: ``container_status``, ``container_restart`` and ``container_logs``
  for the containers named in ``allowed``, on the Docker engine at ``docker_host``,
  which must not be the engine the console's own sandboxes run on.

Every pipeline and container belongs to an ``environment``: a trigger or a restart is
``deploy:staging`` or ``deploy:production`` by it. Production always waits for a
person's approval, and ``safety_class: privileged`` for two distinct people's.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Final, Literal
from urllib.parse import urlsplit

from pydantic import Field, StrictInt, StrictStr, field_validator, model_validator

from common.config.connections import Connection, offers_operation
from common.strict import StrictModel

Environment = Literal["staging", "production"]
DeploySafety = Literal["network", "write", "privileged"]
DEFAULT_DOCKER_SOCKET: Final = "unix:///var/run/docker.sock"
_NAME: Final = re.compile(r"[a-z][a-z0-9_-]{0,62}")
# Docker's own rule for container names.
_CONTAINER: Final = re.compile(r"[a-zA-Z0-9][a-zA-Z0-9_.-]{0,127}")
_REPOSITORY: Final = re.compile(r"[A-Za-z0-9-]{1,39}/[A-Za-z0-9._-]{1,100}")
_WORKFLOW: Final = re.compile(r"[0-9]{1,20}|[A-Za-z0-9._-]{1,200}\.ya?ml")
_PROJECT: Final = re.compile(r"[0-9]{1,20}")
_INPUT: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_-]{0,99}")
# A ref pattern: git ref characters and '*' (any run of characters, '/' included).
_REF_PATTERN: Final = re.compile(r"[A-Za-z0-9._/*-]{1,255}")


def _name(value: str, what: str) -> str:
    if not _NAME.fullmatch(value):
        raise ValueError(
            f"{what} {value!r}: lowercase letters, digits, '_' and '-', starting with a "
            "letter (at most 63)"
        )
    return value


def _distinct(names: list[str], what: str) -> None:
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise ValueError(f"{what} {name!r} is named twice")
        seen.add(name)


class CiPipeline(StrictModel):
    """One pipeline an agent may run: where it is, which refs, which environment."""

    name: StrictStr
    environment: Environment
    repository: StrictStr | None = None
    """GitHub: ``owner/repo``."""
    workflow: StrictStr | None = None
    """GitHub: the workflow's file name (``deploy.yml``) or numeric id."""
    project: StrictStr | None = None
    """GitLab: the project's numeric id (a path would need an encoded '/', which the
    connection path refuses)."""
    refs: tuple[StrictStr, ...] = Field(min_length=1)
    """Branch or tag names the pipeline may run on; ``*`` matches any run of characters
    (``main``, ``release/*``)."""
    inputs: tuple[StrictStr, ...] = ()
    """The inputs (GitHub) or variables (GitLab) an agent may set; none: no inputs."""
    safety_class: DeploySafety = "network"
    """``privileged``: every run waits for two distinct people."""

    @field_validator("name")
    @classmethod
    def _pipeline_name(cls, value: str) -> str:
        return _name(value, "pipeline name")

    @field_validator("repository")
    @classmethod
    def _repository(cls, value: str | None) -> str | None:
        if value is not None and not _REPOSITORY.fullmatch(value):
            raise ValueError(f"repository {value!r} must be owner/repo")
        return value

    @field_validator("workflow")
    @classmethod
    def _workflow(cls, value: str | None) -> str | None:
        if value is not None and not _WORKFLOW.fullmatch(value):
            raise ValueError(
                f"workflow {value!r} must be a workflow file name (deploy.yml) or its numeric id"
            )
        return value

    @field_validator("project")
    @classmethod
    def _project(cls, value: str | None) -> str | None:
        if value is not None and not _PROJECT.fullmatch(value):
            raise ValueError(f"project {value!r} must be the project's numeric id")
        return value

    @field_validator("refs")
    @classmethod
    def _refs(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for pattern in value:
            if not _REF_PATTERN.fullmatch(pattern) or ".." in pattern or pattern[0] in "/-":
                raise ValueError(
                    f"ref pattern {pattern!r}: letters, digits, '.', '_', '-', '/' and '*', "
                    "not starting with '/' or '-', no '..'"
                )
        return value

    @field_validator("inputs")
    @classmethod
    def _inputs(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for name in value:
            if not _INPUT.fullmatch(name):
                raise ValueError(f"input name {name!r}: letters, digits, '_' and '-'")
        _distinct(list(value), "input")
        return value

    def trigger_path(self, kind: str) -> str:
        """The path, under the connection's base URL, that starts a run."""
        if kind == "github":
            return f"/repos/{self.repository}/actions/workflows/{self.workflow}/dispatches"
        return f"/projects/{self.project}/pipeline"

    def run_path(self, kind: str, run_id: str) -> str:
        """The path that reads run ``run_id``."""
        if kind == "github":
            return f"/repos/{self.repository}/actions/runs/{run_id}"
        return f"/projects/{self.project}/pipelines/{run_id}"

    @property
    def required_people(self) -> int:
        """People who must approve a run: two when privileged, one for production."""
        if self.safety_class == "privileged":
            return 2
        return 1 if self.environment == "production" else 0


class CiSection(StrictModel):
    """``deployment.ci``: the CI service's connection and the pipelines."""

    connection: StrictStr
    """A configured connection to the API's root (https://api.github.com, or
    https://gitlab.example.com/api/v4) whose ``auth`` holds the token."""
    kind: Literal["github", "gitlab"]
    pipelines: tuple[CiPipeline, ...] = Field(min_length=1)
    max_input_chars: StrictInt = Field(default=1000, ge=1, le=65536)

    @model_validator(mode="after")
    def _pipelines(self) -> CiSection:
        _distinct([p.name for p in self.pipelines], "pipeline")
        for pipeline in self.pipelines:
            if self.kind == "github" and (pipeline.repository is None or pipeline.workflow is None):
                raise ValueError(
                    f"pipeline {pipeline.name}: kind github needs repository and workflow"
                )
            if self.kind == "gitlab" and pipeline.project is None:
                raise ValueError(f"pipeline {pipeline.name}: kind gitlab needs project")
            if (self.kind == "github" and pipeline.project is not None) or (
                self.kind == "gitlab" and (pipeline.repository or pipeline.workflow)
            ):
                raise ValueError(
                    f"pipeline {pipeline.name}: kind {self.kind} takes "
                    f"{'repository and workflow' if self.kind == 'github' else 'project'} only"
                )
        return self

    def pipeline(self, name: str) -> CiPipeline | None:
        return next((p for p in self.pipelines if p.name == name), None)

    def missing_operations(self, connection: Connection) -> list[str]:
        """The requests of the pipelines that no operation of ``connection`` takes."""
        missing: list[str] = []
        for pipeline in self.pipelines:
            for method, path in (
                ("POST", pipeline.trigger_path(self.kind)),
                ("GET", pipeline.run_path(self.kind, "1")),
            ):
                if not offers_operation(connection.operations, method, path):
                    missing.append(f"{method} {path} (pipeline {pipeline.name})")
        return missing


class AllowedContainer(StrictModel):
    """One container agents may look at and restart."""

    name: StrictStr
    environment: Environment
    safety_class: DeploySafety = "write"
    """``privileged``: every restart waits for two distinct people."""

    @field_validator("name")
    @classmethod
    def _container_name(cls, value: str) -> str:
        if not _CONTAINER.fullmatch(value):
            raise ValueError(
                f"container name {value!r}: letters, digits, '_', '.' and '-', starting with "
                "a letter or digit"
            )
        return value

    @property
    def required_people(self) -> int:
        if self.safety_class == "privileged":
            return 2
        return 1 if self.environment == "production" else 0


class ContainersSection(StrictModel):
    """``deployment.containers``: the Docker engine and the allowlisted containers."""

    docker_host: StrictStr
    """``unix:///path/to/docker.sock`` or ``tcp://host:port``; never the sandbox engine."""
    allowed: tuple[AllowedContainer, ...] = Field(min_length=1)
    max_log_lines: StrictInt = Field(default=200, ge=1, le=10_000)
    max_log_bytes: StrictInt = Field(default=64 * 1024, ge=1024, le=4 * 1024 * 1024)
    stop_timeout_seconds: StrictInt = Field(default=10, ge=0, le=300)
    """How long a restart lets the container stop before the engine kills it."""
    timeout_seconds: float = Field(default=60.0, gt=0, le=600)

    @field_validator("docker_host")
    @classmethod
    def _docker_host(cls, value: str) -> str:
        engine_address(value)
        return value

    @model_validator(mode="after")
    def _names(self) -> ContainersSection:
        _distinct([c.name for c in self.allowed], "container")
        return self

    def container(self, name: str) -> AllowedContainer | None:
        return next((c for c in self.allowed if c.name == name), None)


class DeploymentSection(StrictModel):
    """The ``deployment`` section; at least one of ``ci`` and ``containers``."""

    ci: CiSection | None = None
    containers: ContainersSection | None = None

    @model_validator(mode="after")
    def _something(self) -> DeploymentSection:
        if self.ci is None and self.containers is None:
            raise ValueError("deployment needs ci, containers or both")
        return self


def engine_address(value: str) -> str:
    """A Docker engine address in one spelling (``unix:///real/path`` or
    ``tcp://host:port``), so two spellings of one engine compare equal."""
    parts = urlsplit(value.strip())
    scheme = parts.scheme.lower()
    if scheme == "unix":
        path = (parts.netloc + parts.path) if parts.netloc else parts.path
        if not path.startswith("/"):
            path = "/" + path
        return "unix://" + os.path.realpath(path)
    if scheme in ("tcp", "http", "https") and parts.hostname:
        try:
            port = parts.port or 2375
        except ValueError as exc:
            raise ValueError(f"docker_host {value!r}: {exc}") from exc
        host = parts.hostname.lower()
        host = "127.0.0.1" if host in ("localhost", "127.0.0.1", "::1") else host
        return f"tcp://{host}:{port}"
    raise ValueError(
        f"docker_host {value!r} must be unix:///path/to/docker.sock or tcp://host:port"
    )


def sandbox_engine(docker_host: str | None, environ: Mapping[str, str]) -> str:
    """The engine the sandbox's docker backend uses: its ``docker_host``, else
    ``DOCKER_HOST``, else the default socket (as the Docker SDK chooses)."""
    return engine_address(docker_host or environ.get("DOCKER_HOST") or DEFAULT_DOCKER_SOCKET)


def engine_clash(
    containers: ContainersSection,
    *,
    sandbox_docker_host: str | None,
    sandbox_uses_docker: bool,
    environ: Mapping[str, str],
) -> str | None:
    """Why ``containers.docker_host`` is the console's own sandbox engine, or None.

    An agent that may restart containers on the engine its own sandboxes run on could
    stop or inspect other agents' sandboxes; so that engine is refused: the one named
    by ``sandboxing.docker.docker_host``, or, while any sandbox uses Docker, the one
    the backend finds without it (``DOCKER_HOST``, else the default socket).
    """
    target = engine_address(containers.docker_host)
    if sandbox_docker_host is not None and engine_address(sandbox_docker_host) == target:
        return (
            f"deployment.containers.docker_host {containers.docker_host!r} is the sandbox "
            "engine (sandboxing.docker.docker_host); name another Docker engine"
        )
    if sandbox_uses_docker and sandbox_engine(sandbox_docker_host, environ) == target:
        return (
            f"deployment.containers.docker_host {containers.docker_host!r} is the engine the "
            "docker sandbox backend uses (DOCKER_HOST or the default socket); name another "
            "Docker engine"
        )
    return None
