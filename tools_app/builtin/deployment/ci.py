"""``ci_trigger`` and ``ci_status``: CI pipelines through the ``deployment.ci`` connection.

The request goes out through ``external_data_request``'s connection path, unchanged:
the agent must be granted the connection (``connections`` sub-constraint, the
connection or its operation) and the request must match one of the connection's
operations; the host is the connection's (SSRF guard, redirects only within it), the
token is the console's (``auth``, masked in everything that comes back), and the
connection's rate, concurrency and response limits hold for every agent together.
That path writes its own ``external_data.request`` row; these tools add theirs
(``deployment.ci_trigger``, ``deployment.ci_status``) with the pipeline, the ref and
the run.

Only configured pipelines run, on the refs their patterns allow, with the inputs
they name, and only those the agent's ``ci_pipelines`` grant lists. A run is
``deploy:staging`` or ``deploy:production`` by its pipeline's environment, resolved
per call by the contract before the call is decided: the permission check, the
approval rules, the invocation, its card and the audit rows all read the pipeline's
own type. Production always waits for a person, and a ``privileged`` pipeline for
two distinct people, a floor that neither approval rules nor autonomy ``full``
lowers. Listings show the stricter type, ``deploy:production``.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any, Final

from django.db import transaction

from audit_app.record import Actor, audit_record
from common.config import SynthOrgConfig
from common.config.deployment import CiPipeline, CiSection
from common.settings_config import synthorg_config
from common.vocabulary.categories import SafetyClass, ToolCategory
from tools_app.builtin.base import ToolContext, ToolFailedError, ToolOutcome, ToolRefusedError
from tools_app.builtin.deployment.gate import judged, refused, refused_by
from tools_app.builtin.deployment.pipelines import (
    DEPLOY_ACTION_TYPES,
    PRODUCTION,
    CiAnswerError,
    DeployRefusedError,
    TriggerCall,
    granted_pipeline,
    run_state,
    started_run,
    status_call,
    trigger_action_type,
    trigger_call,
)
from tools_app.builtin.external_data.tool import (
    CallRefusedError,
    external_data_request,
    resolve_call,
)
from tools_app.contracts import ToolContract, ToolExample
from trust_app.models import Agent
from trust_app.policy import Decision

TRIGGER: Final = "ci_trigger"
STATUS: Final = "ci_status"
STATUS_ACTION_TYPE: Final = "vcs:read"
_NULLABLE_TEXT: Final = {"type": ["string", "null"]}


def _section() -> CiSection | None:
    deployment = synthorg_config().deployment
    return deployment.ci if deployment is not None else None


def _call_action_type(arguments: Mapping[str, Any], config: SynthOrgConfig) -> str:
    """``deploy:staging`` or ``deploy:production``: the named pipeline's environment."""
    return trigger_action_type(config.deployment.ci if config.deployment else None, arguments)


def _grant_refusal(
    pipeline: CiPipeline, section: CiSection, sub_constraints: Mapping[str, Any]
) -> DeployRefusedError | None:
    try:
        granted_pipeline(pipeline, section, sub_constraints.get("ci_pipelines"))
    except DeployRefusedError as exc:
        return exc
    return None


def _kind() -> str:
    section = _section()
    return section.kind if section is not None else "github"


def _record(
    context: ToolContext,
    tool: str,
    *,
    action_type: str,
    outcome: str,
    reason: str,
    **data: Any,
) -> None:
    agent = Agent.objects.get(id=context.agent_id)
    with transaction.atomic():
        audit_record(
            kind=f"deployment.{tool}",
            actor=Actor.agent(agent),
            agent=agent,
            invocation_id=context.invocation_uuid,
            tool=tool,
            category=ToolCategory.DEPLOYMENT.value,
            action_type=action_type,
            outcome=outcome,
            reason=reason[:1000],
            data=data,
        )


def _exchange(
    context: ToolContext, connection: str, method: str, path: str, body: object
) -> tuple[int, object]:
    """Send through the connection path; ``(HTTP status, body as parsed)``."""
    arguments: dict[str, Any] = {"connection": connection, "method": method, "path": path}
    if body is not None:
        arguments["body"] = body
    outcome = external_data_request.run(context, arguments)
    structured = outcome.structured or {}
    if structured.get("truncated"):
        raise CiAnswerError(
            "RESPONSE_TOO_LARGE",
            f"the answer was cut at connection {connection}'s response limit",
        )
    return int(structured.get("status", 0)), structured.get("body")


def _connection_gate(
    section: CiSection,
    method: str,
    path: str,
    sub_constraints: Mapping[str, Any],
    decision: Decision,
) -> tuple[Decision | None, int]:
    """The connection's grant and operation, judged as ``external_data_request`` judges
    them: a refusal, or None and the people a sensitive operation asks for."""
    try:
        call = resolve_call(
            synthorg_config().connections,
            sub_constraints,
            {"connection": section.connection, "method": method, "path": path},
        )
    except CallRefusedError as exc:
        return refused(decision, exc.reason, exc.rule), 0
    return None, 1 if call.operation.sensitive else 0


class CiTriggerTool:
    """``ci_trigger``: start one run of a configured pipeline."""

    contract = ToolContract(
        name=TRIGGER,
        category=ToolCategory.DEPLOYMENT,
        # Listed as the stricter of the two; each call is its pipeline's own.
        action_type=PRODUCTION,
        call_action_types=DEPLOY_ACTION_TYPES,
        action_type_of_call=_call_action_type,
        safety_class=SafetyClass.NETWORK,
        idempotency="required",
        summary="Start a run of a configured CI/CD pipeline on an allowed branch or tag.",
        description=(
            "Starts one run of `pipeline` (a GitHub Actions workflow_dispatch or a GitLab "
            "pipeline, as configured) on `ref`, with `inputs` the pipeline takes. Each "
            "pipeline deploys to staging or production and may run only on the refs it "
            "allows. A production pipeline always waits for a person's approval (some for "
            "two people). Answers the run as `<pipeline>/<id>` for ci_status; `run` is "
            "null when the CI service did not say which run it started."
        ),
        input_schema={
            "type": "object",
            "properties": {
                "pipeline": {"type": "string", "minLength": 1, "maxLength": 63},
                "ref": {"type": "string", "minLength": 1, "maxLength": 255},
                "inputs": {
                    "type": "object",
                    "maxProperties": 25,
                    "additionalProperties": {"type": ["string", "number", "boolean"]},
                },
            },
            "required": ["pipeline", "ref"],
            "additionalProperties": False,
        },
        output_schema={
            "type": "object",
            "properties": {
                "pipeline": {"type": "string"},
                "environment": {"type": "string", "enum": ["staging", "production"]},
                "action_type": {"type": "string"},
                "ref": {"type": "string"},
                "run": _NULLABLE_TEXT,
                "url": _NULLABLE_TEXT,
                "status": _NULLABLE_TEXT,
            },
            "required": ["pipeline", "environment", "action_type", "ref", "run", "url", "status"],
            "additionalProperties": False,
        },
        examples=(
            ToolExample(
                description="Deploy main to staging.",
                arguments={
                    "pipeline": "web-staging",
                    "ref": "main",
                    "inputs": {"version": "2.4.1"},
                },
                result={
                    "pipeline": "web-staging",
                    "environment": "staging",
                    "action_type": "deploy:staging",
                    "ref": "main",
                    "run": "web-staging/4242",
                    "url": "https://github.com/acme/web/actions/runs/4242",
                    "status": "queued",
                },
            ),
        ),
        failure_modes=(
            "HOST_NOT_ALLOWED: the pipeline is not configured or not granted to you, the "
            "ref is not one it may run on, or its connection is not granted to you; nothing "
            "is started.",
            "INVALID_ARGUMENT: the ref is not a branch or tag name, or an input is not one "
            "the pipeline takes.",
            "LIMIT_EXCEEDED: an input is too long, or the connection's rate or concurrency "
            "limit is reached.",
            "CI_REFUSED: the CI service refused the run (its HTTP status and message are given).",
        ),
    )

    @staticmethod
    def offered(config: SynthOrgConfig) -> bool:
        """Registered only when ``deployment.ci`` is configured."""
        return config.deployment is not None and config.deployment.ci is not None

    def gate(
        self,
        *,
        arguments: Mapping[str, Any],
        sub_constraints: Mapping[str, Any],
        decision: Decision,
    ) -> Decision | None:
        """At decision time: refuse a pipeline not granted, a ref or input not allowed, or
        a connection not granted; ask one person for production, two for a privileged
        pipeline."""
        section = _section()
        named = arguments.get("pipeline")
        pipeline = section.pipeline(named) if section and isinstance(named, str) else None
        # The grant first: an agent learns nothing of a pipeline it may not use.
        if section is not None and pipeline is not None:
            ungranted = _grant_refusal(pipeline, section, sub_constraints)
            if ungranted is not None:
                return refused_by(decision, ungranted)
        try:
            call = trigger_call(section, _kind(), arguments)
        except DeployRefusedError as exc:
            return refused_by(decision, exc)
        assert section is not None
        gated, sensitive = _connection_gate(section, "POST", call.path, sub_constraints, decision)
        if gated is not None:
            return gated
        people = max(call.pipeline.required_people, sensitive)
        line = (
            f"pipeline {call.pipeline.name} on {call.ref} is {call.action_type}"
            f"{' (privileged)' if call.pipeline.safety_class == 'privileged' else ''}"
        )
        return judged(decision, line, people=people)

    def run(self, context: ToolContext, arguments: Mapping[str, Any]) -> ToolOutcome:
        """Check the run again, start it through the connection, and record it."""
        started = time.monotonic()
        section = _section()
        kind = _kind()
        call = trigger_call(section, kind, arguments)
        assert section is not None
        data = self._data(call)
        try:
            status, body = _exchange(context, section.connection, "POST", call.path, call.body)
            run, url, state = started_run(kind, call, status, body)
        except CiAnswerError as exc:
            _record(context, TRIGGER, action_type=call.action_type, outcome="failed",
                    reason=exc.message, **data)  # fmt: skip
            raise ToolFailedError(exc.message, code=exc.code) from exc
        except (ToolRefusedError, ToolFailedError) as exc:
            outcome = "refused" if isinstance(exc, ToolRefusedError) else "failed"
            _record(context, TRIGGER, action_type=call.action_type, outcome=outcome,
                    reason=str(exc), **data)  # fmt: skip
            raise
        _record(
            context, TRIGGER, action_type=call.action_type, outcome="started",
            reason=f"pipeline {call.pipeline.name} started on {call.ref}: run {run or 'not named'}",
            run=run, status=status, **data,
        )  # fmt: skip
        structured = {
            "pipeline": call.pipeline.name,
            "environment": call.pipeline.environment,
            "action_type": call.action_type,
            "ref": call.ref,
            "run": run,
            "url": url,
            "status": state,
        }
        shown = f"run {run}" if run else "a run (the CI service did not say which)"
        return ToolOutcome(
            content=f"Started {shown} of {call.pipeline.name} on {call.ref}"
            f"{f': {url}' if url else ''}.",
            structured=structured,
            duration_ms=int((time.monotonic() - started) * 1000),
        )

    @staticmethod
    def _data(call: TriggerCall) -> dict[str, Any]:
        return {
            "pipeline": call.pipeline.name,
            "environment": call.pipeline.environment,
            "ref": call.ref,
            "inputs": dict(call.inputs),
            "path": call.path,
        }


class CiStatusTool:
    """``ci_status``: read one run of a configured pipeline."""

    contract = ToolContract(
        name=STATUS,
        category=ToolCategory.DEPLOYMENT,
        # Reading a run changes nothing: a read-only type, not a deploy.
        action_type=STATUS_ACTION_TYPE,
        safety_class=SafetyClass.NETWORK,
        idempotent=True,
        summary="Read the status of a CI/CD run started with ci_trigger.",
        description=(
            "Reads run `run` (`<pipeline>/<id>`, as ci_trigger answered it) from the CI "
            "service: its status (queued, in_progress, completed; GitLab: pending, "
            "running, success, failed, ...), its conclusion once finished, the ref and "
            "commit, and its page."
        ),
        input_schema={
            "type": "object",
            "properties": {"run": {"type": "string", "minLength": 3, "maxLength": 90}},
            "required": ["run"],
            "additionalProperties": False,
        },
        output_schema={
            "type": "object",
            "properties": {
                "run": {"type": "string"},
                "pipeline": {"type": "string"},
                "environment": {"type": "string", "enum": ["staging", "production"]},
                "status": {"type": "string"},
                "conclusion": _NULLABLE_TEXT,
                "finished": {"type": "boolean"},
                "ref": _NULLABLE_TEXT,
                "sha": _NULLABLE_TEXT,
                "url": _NULLABLE_TEXT,
                "created_at": _NULLABLE_TEXT,
                "updated_at": _NULLABLE_TEXT,
            },
            "required": ["run", "pipeline", "environment", "status", "conclusion", "finished"],
            "additionalProperties": False,
        },
        examples=(
            ToolExample(
                description="Is the staging deploy done?",
                arguments={"run": "web-staging/4242"},
                result={
                    "run": "web-staging/4242",
                    "pipeline": "web-staging",
                    "environment": "staging",
                    "status": "completed",
                    "conclusion": "success",
                    "finished": True,
                    "ref": "main",
                    "sha": "0f3c2e1",
                    "url": "https://github.com/acme/web/actions/runs/4242",
                    "created_at": "2026-01-05T10:00:00Z",
                    "updated_at": "2026-01-05T10:04:10Z",
                },
            ),
        ),
        failure_modes=(
            "INVALID_ARGUMENT: run is not <pipeline>/<id>.",
            "HOST_NOT_ALLOWED: the pipeline is not configured or not granted to you, or its "
            "connection is not granted to you.",
            "CI_REFUSED: the CI service does not know the run, or refused (HTTP status and "
            "message given).",
        ),
    )

    @staticmethod
    def offered(config: SynthOrgConfig) -> bool:
        """Registered only when ``deployment.ci`` is configured."""
        return config.deployment is not None and config.deployment.ci is not None

    def gate(
        self,
        *,
        arguments: Mapping[str, Any],
        sub_constraints: Mapping[str, Any],
        decision: Decision,
    ) -> Decision | None:
        """At decision time: refuse a malformed run, a pipeline unknown or not granted,
        or a connection not granted."""
        section = _section()
        try:
            call = status_call(section, _kind(), arguments)
        except DeployRefusedError as exc:
            return refused_by(decision, exc)
        assert section is not None
        ungranted = _grant_refusal(call.pipeline, section, sub_constraints)
        if ungranted is not None:
            return refused_by(decision, ungranted)
        gated, sensitive = _connection_gate(section, "GET", call.path, sub_constraints, decision)
        if gated is not None:
            return gated
        return judged(
            decision, f"run {call.run} of pipeline {call.pipeline.name}", people=sensitive
        )

    def run(self, context: ToolContext, arguments: Mapping[str, Any]) -> ToolOutcome:
        """Read the run through the connection."""
        started = time.monotonic()
        section = _section()
        kind = _kind()
        call = status_call(section, kind, arguments)
        assert section is not None
        data = {"run": call.run, "pipeline": call.pipeline.name, "path": call.path}
        try:
            status, body = _exchange(context, section.connection, "GET", call.path, None)
            state = run_state(kind, call, status, body)
        except CiAnswerError as exc:
            _record(context, STATUS, action_type=STATUS_ACTION_TYPE, outcome="failed",
                    reason=exc.message, **data)  # fmt: skip
            raise ToolFailedError(exc.message, code=exc.code) from exc
        except (ToolRefusedError, ToolFailedError) as exc:
            outcome = "refused" if isinstance(exc, ToolRefusedError) else "failed"
            _record(context, STATUS, action_type=STATUS_ACTION_TYPE, outcome=outcome,
                    reason=str(exc), **data)  # fmt: skip
            raise
        _record(
            context, STATUS, action_type=STATUS_ACTION_TYPE, outcome="answered",
            reason=_status_line(state),
            status=state["status"], conclusion=state["conclusion"], **data,
        )  # fmt: skip
        return ToolOutcome(
            content=_status_line(state),
            structured=state,
            duration_ms=int((time.monotonic() - started) * 1000),
        )


def _status_line(state: Mapping[str, Any]) -> str:
    line = f"Run {state['run']} ({state['environment']}) is {state['status']}"
    if state["conclusion"]:
        line += f", {state['conclusion']}"
    if state.get("ref"):
        line += f", on {state['ref']}"
    return line + (f": {state['url']}" if state.get("url") else ".")


ci_trigger = CiTriggerTool()
ci_status = CiStatusTool()
