"""``container_status``, ``container_restart`` and ``container_logs``: allowlisted
containers on the Docker engine ``deployment.containers.docker_host`` names.

The worker talks to that engine with the Docker SDK; an agent names a container and
nothing else. Only the names in ``deployment.containers.allowed`` are looked up, and a
container is used only when its own name is exactly that one (the engine would also
take an ID prefix). The engine is never the one the console's sandboxes run on: the
config refuses it at load and the worker checks again before it connects, against its
own environment. A restart is ``deploy:staging`` or ``deploy:production`` by the
container's environment, resolved per call by the contract before the call is
decided (rules, the invocation and the audit read it): production always waits for
a person, ``privileged`` for
two distinct people (a floor no approval rule or autonomy preset lowers). Logs are
the last lines, cut to ``max_log_bytes``, terminal escapes dropped; like every result
they pass the sanitiser, which redacts stored secrets and credentials. Every call is
audited (``deployment.container``).
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any, Final

from django.db import transaction

from audit_app.record import Actor, audit_record
from common.config import SynthOrgConfig
from common.config.deployment import AllowedContainer, ContainersSection, engine_clash
from common.settings_config import synthorg_config
from common.vocabulary.categories import SafetyClass, ToolCategory
from tools_app.builtin.base import (
    RefusalCode,
    ToolContext,
    ToolFailedError,
    ToolOutcome,
    ToolRefusedError,
)
from tools_app.builtin.deployment.gate import judged, refused_by
from tools_app.builtin.deployment.inspection import (
    STATE_EXAMPLE,
    STATE_SCHEMA,
    allowed_container,
    bounded_log,
    container_state,
    restart_action_type,
)
from tools_app.builtin.deployment.pipelines import (
    DEPLOY_ACTION_TYPES,
    PRODUCTION,
    RULE_TARGET,
    DeployRefusedError,
    action_type,
)
from tools_app.contracts import ToolContract, ToolExample
from tools_app.sandbox.backends.docker.engine import connect, sdk_errors
from trust_app.models import Agent
from trust_app.policy import Decision

AUDIT_KIND: Final = "deployment.container"
_NAME_SCHEMA: Final = {"type": "string", "minLength": 1, "maxLength": 128}
# Looking at a container changes nothing: a read-only type, not a deploy.
READ_ACTION_TYPE: Final = "code:read"
_TARGET_FAILURES: Final = (
    "HOST_NOT_ALLOWED: the container is not on the console's allowlist.",
    "CONTAINER_NOT_FOUND: no container of that name runs on the configured engine.",
    "DOCKER_UNAVAILABLE: the configured Docker engine cannot be reached.",
)


def _section() -> ContainersSection | None:
    deployment = synthorg_config().deployment
    return deployment.containers if deployment is not None else None


def _restart_action_type(arguments: Mapping[str, Any], config: SynthOrgConfig) -> str:
    return restart_action_type(
        config.deployment.containers if config.deployment else None, arguments
    )


def _record(
    context: ToolContext,
    tool: str,
    entry: AllowedContainer,
    *,
    action: str,
    outcome: str,
    reason: str,
    **data: Any,
) -> None:
    agent = Agent.objects.get(id=context.agent_id)
    with transaction.atomic():
        audit_record(
            kind=AUDIT_KIND,
            actor=Actor.agent(agent),
            agent=agent,
            invocation_id=context.invocation_uuid,
            tool=tool,
            category=ToolCategory.DEPLOYMENT.value,
            action_type=action,
            outcome=outcome,
            reason=reason[:1000],
            data={"container": entry.name, "environment": entry.environment, **data},
        )


@contextmanager
def _engine(section: ContainersSection) -> Iterator[Any]:
    """A client of the configured engine, after checking again that it is not the
    sandbox engine as this worker's own environment finds it."""
    config = synthorg_config()
    clash = engine_clash(
        section,
        sandbox_docker_host=config.sandboxing.docker.docker_host,
        sandbox_uses_docker=config.uses_docker_sandbox(),
        environ=os.environ,
    )
    if clash is not None:
        raise ToolRefusedError(RefusalCode.HOST_NOT_ALLOWED, clash)
    try:
        client = connect(
            section.docker_host,
            timeout=int(section.timeout_seconds) + section.stop_timeout_seconds,
        )
    except sdk_errors().DockerException as exc:
        raise ToolFailedError(
            f"the Docker engine at {section.docker_host} cannot be reached: {exc}",
            code="DOCKER_UNAVAILABLE",
        ) from exc
    try:
        yield client
    finally:
        client.close()


def _container(client: Any, entry: AllowedContainer) -> Any:
    errors = sdk_errors()
    try:
        container = client.containers.get(entry.name)
    except errors.NotFound as exc:
        raise ToolFailedError(
            f"no container named {entry.name} on the configured engine",
            code="CONTAINER_NOT_FOUND",
        ) from exc
    except errors.DockerException as exc:
        raise ToolFailedError(
            f"the Docker engine did not answer: {exc}", code="DOCKER_UNAVAILABLE"
        ) from exc
    # The engine also resolves ID prefixes: only the container of exactly this name counts.
    if container.attrs.get("Name") != f"/{entry.name}":
        raise ToolFailedError(
            f"no container named {entry.name} on the configured engine",
            code="CONTAINER_NOT_FOUND",
        )
    return container


class _ContainerTool:
    """What the three tools share: the gate's allowlist check."""

    contract: ToolContract
    restarts = False

    @staticmethod
    def offered(config: SynthOrgConfig) -> bool:
        """Registered only when ``deployment.containers`` is configured."""
        return config.deployment is not None and config.deployment.containers is not None

    def gate(
        self,
        *,
        arguments: Mapping[str, Any],
        sub_constraints: Mapping[str, Any],
        decision: Decision,
    ) -> Decision | None:
        """At decision time: refuse a container not allowlisted; for a restart, ask one
        person in production and two for a privileged container."""
        section = _section()
        try:
            entry = allowed_container(section, arguments.get("name"))
            assert section is not None
            self.check(section, arguments)
        except DeployRefusedError as exc:
            return refused_by(decision, exc)
        if not self.restarts:
            return judged(decision, f"container {entry.name} ({entry.environment})", people=0)
        line = (
            f"restart of container {entry.name} is {action_type(entry.environment)}"
            f"{' (privileged)' if entry.safety_class == 'privileged' else ''}"
        )
        return judged(decision, line, people=entry.required_people)

    def check(self, section: ContainersSection, arguments: Mapping[str, Any]) -> None:
        """The tool's own arguments against the section (none to check by default)."""

    def _checked(self, arguments: Mapping[str, Any]) -> tuple[ContainersSection, AllowedContainer]:
        section = _section()
        entry = allowed_container(section, arguments.get("name"))
        assert section is not None
        self.check(section, arguments)
        return section, entry

    def _act(
        self, context: ToolContext, entry: AllowedContainer, action: str, work: Any
    ) -> dict[str, Any]:
        """Run ``work``; a refusal or failure is recorded before it is raised."""
        name = self.contract.name
        try:
            result: dict[str, Any] = work()
        except (ToolRefusedError, ToolFailedError) as exc:
            outcome = "refused" if isinstance(exc, ToolRefusedError) else "failed"
            _record(context, name, entry, action=action, outcome=outcome, reason=str(exc))
            raise
        except sdk_errors().DockerException as exc:
            reason = f"the Docker engine refused: {exc}"
            _record(context, name, entry, action=action, outcome="failed", reason=reason)
            raise ToolFailedError(reason[:1000], code="DOCKER_ERROR") from exc
        return result


class ContainerStatusTool(_ContainerTool):
    contract = ToolContract(
        name="container_status",
        category=ToolCategory.DEPLOYMENT,
        action_type=READ_ACTION_TYPE,
        safety_class=SafetyClass.READ,
        idempotent=True,
        summary="Read the state of an allowlisted container (running, health, restarts).",
        description=(
            "Answers the state of container `name` on the organisation's Docker engine: "
            "status, whether it runs, its health check, exit code, start and finish times, "
            "restart count and image. Only containers on the console's allowlist."
        ),
        input_schema={
            "type": "object",
            "properties": {"name": _NAME_SCHEMA},
            "required": ["name"],
            "additionalProperties": False,
        },
        output_schema=STATE_SCHEMA,
        examples=(
            ToolExample(
                description="Is the staging web container up?",
                arguments={"name": "web-staging"},
                result=STATE_EXAMPLE,
            ),
        ),
        failure_modes=_TARGET_FAILURES,
    )

    def run(self, context: ToolContext, arguments: Mapping[str, Any]) -> ToolOutcome:
        """Inspect the container."""
        started = time.monotonic()
        section, entry = self._checked(arguments)

        def work() -> dict[str, Any]:
            with _engine(section) as client:
                return container_state(entry, _container(client, entry).attrs)

        state = self._act(context, entry, READ_ACTION_TYPE, work)
        _record(
            context, self.contract.name, entry, action=READ_ACTION_TYPE, outcome="answered",
            reason=f"container {entry.name} is {state['status']}", status=state["status"],
        )  # fmt: skip
        health = f", health {state['health']}" if state["health"] else ""
        return ToolOutcome(
            content=f"Container {entry.name} ({entry.environment}) is {state['status']}{health}.",
            structured=state,
            duration_ms=int((time.monotonic() - started) * 1000),
        )


class ContainerRestartTool(_ContainerTool):
    restarts = True
    contract = ToolContract(
        name="container_restart",
        category=ToolCategory.DEPLOYMENT,
        # Listed as the stricter of the two; each call is its container's own.
        action_type=PRODUCTION,
        call_action_types=DEPLOY_ACTION_TYPES,
        action_type_of_call=_restart_action_type,
        safety_class=SafetyClass.WRITE,
        idempotency="required",
        summary="Restart an allowlisted container (production restarts wait for a person).",
        description=(
            "Restarts container `name` on the organisation's Docker engine: the engine "
            "stops it (after a grace period, then kills it) and starts it again. Answers "
            "its state afterwards. A production container always waits for a person's "
            "approval (some for two people)."
        ),
        input_schema={
            "type": "object",
            "properties": {"name": _NAME_SCHEMA},
            "required": ["name"],
            "additionalProperties": False,
        },
        output_schema=STATE_SCHEMA,
        examples=(
            ToolExample(
                description="Restart the staging web container.",
                arguments={"name": "web-staging"},
                result={**STATE_EXAMPLE, "restart_count": 0},
            ),
        ),
        failure_modes=_TARGET_FAILURES,
    )

    def run(self, context: ToolContext, arguments: Mapping[str, Any]) -> ToolOutcome:
        """Restart the container and read its state."""
        started = time.monotonic()
        section, entry = self._checked(arguments)
        action = action_type(entry.environment)

        def work() -> dict[str, Any]:
            with _engine(section) as client:
                container = _container(client, entry)
                container.restart(timeout=section.stop_timeout_seconds)
                container.reload()
                return container_state(entry, container.attrs)

        state = self._act(context, entry, action, work)
        _record(
            context, self.contract.name, entry, action=action, outcome="restarted",
            reason=f"container {entry.name} restarted; now {state['status']}",
            status=state["status"], started_at=state["started_at"],
        )  # fmt: skip
        return ToolOutcome(
            content=f"Restarted container {entry.name} ({entry.environment}); it is "
            f"{state['status']}.",
            structured=state,
            duration_ms=int((time.monotonic() - started) * 1000),
        )


class ContainerLogsTool(_ContainerTool):
    contract = ToolContract(
        name="container_logs",
        category=ToolCategory.DEPLOYMENT,
        action_type=READ_ACTION_TYPE,
        safety_class=SafetyClass.READ,
        idempotent=True,
        summary="Read the last lines of an allowlisted container's logs.",
        description=(
            "Answers the last `lines` lines (default and ceiling set by the console) of "
            "container `name`'s standard output and error, cut to a size limit "
            "(`truncated` says so). Secrets and credentials in the logs are redacted."
        ),
        input_schema={
            "type": "object",
            "properties": {
                "name": _NAME_SCHEMA,
                "lines": {"type": "integer", "minimum": 1, "maximum": 10_000},
            },
            "required": ["name"],
            "additionalProperties": False,
        },
        output_schema={
            "type": "object",
            "properties": {
                "name": {"type": "string"},
                "environment": {"type": "string", "enum": ["staging", "production"]},
                "lines": {"type": "integer"},
                "text": {"type": "string"},
                "truncated": {"type": "boolean"},
            },
            "required": ["name", "environment", "lines", "text", "truncated"],
            "additionalProperties": False,
        },
        examples=(
            ToolExample(
                description="The last 50 lines of the staging web container.",
                arguments={"name": "web-staging", "lines": 50},
                result={
                    "name": "web-staging",
                    "environment": "staging",
                    "lines": 2,
                    "text": "GET /healthz 200\nGET / 200\n",
                    "truncated": False,
                },
            ),
        ),
        failure_modes=(
            *_TARGET_FAILURES,
            "LIMIT_EXCEEDED: lines is over the console's ceiling.",
        ),
    )

    def check(self, section: ContainersSection, arguments: Mapping[str, Any]) -> None:
        """``lines`` within the console's ceiling."""
        lines = arguments.get("lines", section.max_log_lines)
        if not isinstance(lines, int) or isinstance(lines, bool) or lines > section.max_log_lines:
            raise DeployRefusedError(
                RefusalCode.LIMIT_EXCEEDED,
                f"lines must be a whole number up to {section.max_log_lines}",
                RULE_TARGET,
            )

    def run(self, context: ToolContext, arguments: Mapping[str, Any]) -> ToolOutcome:
        """Read the last lines, bounded."""
        started = time.monotonic()
        section, entry = self._checked(arguments)
        lines = arguments.get("lines", section.max_log_lines)

        def work() -> dict[str, Any]:
            with _engine(section) as client:
                container = _container(client, entry)
                stream = container.logs(stream=True, follow=False, tail=lines, timestamps=False)
                try:
                    text, cut = bounded_log(stream, section.max_log_bytes)
                finally:
                    getattr(stream, "close", lambda: None)()
            return {
                "name": entry.name,
                "environment": entry.environment,
                "lines": text.count("\n") + (0 if not text or text.endswith("\n") else 1),
                "text": text,
                "truncated": cut,
            }

        answer = self._act(context, entry, READ_ACTION_TYPE, work)
        _record(
            context, self.contract.name, entry, action=READ_ACTION_TYPE, outcome="answered",
            reason=f"{answer['lines']} lines of container {entry.name}",
            lines=answer["lines"], truncated=answer["truncated"],
        )  # fmt: skip
        return ToolOutcome(
            content=answer["text"],
            structured=answer,
            truncated=bool(answer["truncated"]),
            duration_ms=int((time.monotonic() - started) * 1000),
        )


container_status = ContainerStatusTool()
container_restart = ContainerRestartTool()
container_logs = ContainerLogsTool()
