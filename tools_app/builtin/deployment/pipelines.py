"""PURE: a CI call checked against ``deployment.ci``, as the CI service's REST request,
and its answer read.

``trigger_call`` and ``status_call`` answer the checked call, or raise
``DeployRefusedError`` naming the decision rule it is recorded under. The gate asks
them when the call is decided and the tool again before anything is sent, so both
read a call the same way. ``trigger_action_type`` places a trigger before that: its
pipeline's environment is the call's action type, which the permission check, the
approval rules and the audit read. ``granted_pipeline`` holds a pipeline to the
agent's ``ci_pipelines`` grant. A run is named ``<pipeline>/<id>``
(``web-staging/4242``): the pipeline fixes where the run is, so an agent can only
read runs of pipelines it may trigger.

GitHub: ``POST /repos/{owner}/{repo}/actions/workflows/{workflow}/dispatches`` with
``{ref, inputs, return_run_details: true}`` answers 200 with ``workflow_run_id`` (or
204 without it, from a server that predates that parameter); a run is
``GET /repos/{owner}/{repo}/actions/runs/{id}``. GitLab:
``POST /projects/{id}/pipeline`` with ``{ref, variables}`` answers 201 with the
pipeline; a run is ``GET /projects/{id}/pipelines/{id}``.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from common.config.deployment import CiPipeline, CiSection
from tools_app.builtin.base import RefusalCode, ToolRefusedError
from tools_app.contracts import CallActionTypeError

RULE_NOT_CONFIGURED: Final = "deployment_not_configured"
RULE_TARGET: Final = "deployment_target"
RULE_NOT_GRANTED: Final = "pipeline_not_granted"
RULE_ASKS: Final = "deployment_approval"
STAGING: Final = "deploy:staging"
PRODUCTION: Final = "deploy:production"
DEPLOY_ACTION_TYPES: Final = (STAGING, PRODUCTION)
_REF: Final = re.compile(r"[A-Za-z0-9._/-]{1,255}")
_RUN: Final = re.compile(r"([a-z][a-z0-9_-]{0,62})/([0-9]{1,20})")
# A run state that will not change any more (GitHub's status, GitLab's status).
FINISHED: Final = frozenset({"completed", "success", "failed", "canceled", "skipped"})


class DeployRefusedError(ToolRefusedError):
    """A refusal with the decision rule it is recorded under."""

    def __init__(self, code: RefusalCode, reason: str, rule: str) -> None:
        super().__init__(code, reason)
        self.rule = rule


class CiAnswerError(Exception):
    """The CI service refused the request or answered something else."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass(frozen=True, slots=True)
class TriggerCall:
    """One run to start, as the request that starts it."""

    pipeline: CiPipeline
    ref: str
    inputs: Mapping[str, str]
    path: str
    body: Mapping[str, Any]

    @property
    def action_type(self) -> str:
        return action_type(self.pipeline.environment)


@dataclass(frozen=True, slots=True)
class StatusCall:
    """One run to read."""

    pipeline: CiPipeline
    run_id: str
    path: str

    @property
    def run(self) -> str:
        return f"{self.pipeline.name}/{self.run_id}"


def action_type(environment: str) -> str:
    return PRODUCTION if environment == "production" else STAGING


def _invalid(reason: str) -> DeployRefusedError:
    return DeployRefusedError(RefusalCode.INVALID_ARGUMENT, reason, RULE_TARGET)


def _section(section: CiSection | None) -> CiSection:
    if section is None:
        raise DeployRefusedError(
            RefusalCode.HOST_NOT_ALLOWED,
            "CI is not configured (deployment.ci)",
            RULE_NOT_CONFIGURED,
        )
    return section


def _pipeline(section: CiSection, name: object) -> CiPipeline:
    pipeline = section.pipeline(name) if isinstance(name, str) else None
    if pipeline is None:
        listed = ", ".join(p.name for p in section.pipelines)
        raise DeployRefusedError(
            RefusalCode.HOST_NOT_ALLOWED,
            f"pipeline {str(name)[:80]!r} is not one the console runs (pipelines: {listed}); "
            "nothing was started",
            RULE_TARGET,
        )
    return pipeline


def trigger_action_type(section: CiSection | None, arguments: Mapping[str, Any]) -> str:
    """The action type of a ``ci_trigger`` call: its pipeline's environment.

    Raises ``CallActionTypeError`` for a pipeline not configured, with the configured
    ones: such a call is refused before anyone is asked.
    """
    try:
        return action_type(_pipeline(_section(section), arguments.get("pipeline")).environment)
    except DeployRefusedError as exc:
        raise CallActionTypeError(exc.reason, exc.rule) from None


def granted_pipeline(pipeline: CiPipeline, section: CiSection, granted: object) -> None:
    """Refuse ``pipeline`` unless the agent's ``ci_pipelines`` grant lists it."""
    names = {str(entry) for entry in granted or ()} if isinstance(granted, list | tuple) else set()
    if pipeline.name in names:
        return
    allowed = [p.name for p in section.pipelines if p.name in names]
    raise DeployRefusedError(
        RefusalCode.HOST_NOT_ALLOWED,
        f"pipeline {pipeline.name} is not one this agent may use (granted: "
        f"{', '.join(allowed) or 'none'}); nothing was sent; ask an admin to add it to "
        "the agent's ci_pipelines",
        RULE_NOT_GRANTED,
    )


def checked_ref(pipeline: CiPipeline, ref: object) -> str:
    """A branch or tag name the pipeline's ``refs`` allow."""
    if (
        not isinstance(ref, str)
        or not _REF.fullmatch(ref)
        or ".." in ref
        or "//" in ref
        or ref[0] in "/-"
        or ref.endswith(("/", ".lock", "."))
    ):
        raise _invalid(
            f"ref {str(ref)[:80]!r} must be a branch or tag name (letters, digits, '.', '_', "
            "'-' and '/')"
        )
    if not any(fnmatch.fnmatchcase(ref, pattern) for pattern in pipeline.refs):
        raise DeployRefusedError(
            RefusalCode.HOST_NOT_ALLOWED,
            f"pipeline {pipeline.name} may run on {', '.join(pipeline.refs)}, not {ref!r}; "
            "nothing was started",
            RULE_TARGET,
        )
    return ref


def _inputs(pipeline: CiPipeline, given: object, limit: int) -> dict[str, str]:
    if given is None:
        return {}
    if not isinstance(given, Mapping):
        raise _invalid("inputs must be an object of names and values")
    inputs: dict[str, str] = {}
    for name, value in given.items():
        if name not in pipeline.inputs:
            raise DeployRefusedError(
                RefusalCode.INVALID_ARGUMENT,
                f"input {str(name)[:80]!r} is not one pipeline {pipeline.name} takes "
                f"(inputs: {', '.join(pipeline.inputs) or 'none'})",
                RULE_TARGET,
            )
        if isinstance(value, bool):
            value = "true" if value else "false"
        if not isinstance(value, str | int | float):
            raise _invalid(f"input {name}: a string, number or boolean")
        text = str(value)
        if len(text) > limit:
            raise DeployRefusedError(
                RefusalCode.LIMIT_EXCEEDED,
                f"input {name} is {len(text)} characters; at most {limit}",
                RULE_TARGET,
            )
        inputs[str(name)] = text
    return inputs


def trigger_call(section: CiSection | None, kind: str, arguments: Mapping[str, Any]) -> TriggerCall:
    """The run ``arguments`` ask for, as the CI service's request."""
    ci = _section(section)
    pipeline = _pipeline(ci, arguments.get("pipeline"))
    ref = checked_ref(pipeline, arguments.get("ref"))
    inputs = _inputs(pipeline, arguments.get("inputs"), ci.max_input_chars)
    if kind == "github":
        body: dict[str, Any] = {"ref": ref, "inputs": inputs, "return_run_details": True}
    else:
        body = {"ref": ref, "variables": [{"key": k, "value": v} for k, v in inputs.items()]}
    return TriggerCall(pipeline, ref, inputs, pipeline.trigger_path(kind), body)


def status_call(section: CiSection | None, kind: str, arguments: Mapping[str, Any]) -> StatusCall:
    """The run ``arguments`` name (``<pipeline>/<id>``), as the request that reads it."""
    ci = _section(section)
    run = arguments.get("run")
    match = _RUN.fullmatch(run) if isinstance(run, str) else None
    if match is None:
        raise _invalid(
            f"run {str(run)[:80]!r} must be <pipeline>/<id> as ci_trigger answered it "
            "(web-staging/4242)"
        )
    pipeline = _pipeline(ci, match.group(1))
    run_id = match.group(2)
    return StatusCall(pipeline, run_id, pipeline.run_path(kind, run_id))


def _message(body: object) -> str:
    if isinstance(body, Mapping):
        for key in ("message", "error", "error_description"):
            if body.get(key):
                return str(body[key])[:500]
    return str(body)[:200] if body else "no message"


def started_run(
    kind: str, call: TriggerCall, status: int, body: object
) -> tuple[str | None, str | None, str | None]:
    """``(run, url, status)`` of the run a trigger started (``run`` None when GitHub
    did not say which); CiAnswerError when the service refused it."""
    if kind == "github":
        if status == 204:
            return None, None, None
        if status == 200 and isinstance(body, Mapping) and body.get("workflow_run_id"):
            run = f"{call.pipeline.name}/{int(body['workflow_run_id'])}"
            return run, _text(body.get("html_url")), "queued"
    elif status == 201 and isinstance(body, Mapping) and body.get("id"):
        run = f"{call.pipeline.name}/{int(body['id'])}"
        return run, _text(body.get("web_url")), _text(body.get("status"))
    raise CiAnswerError(
        "CI_REFUSED", f"{kind} did not start the run: HTTP {status}, {_message(body)}"
    )


def run_state(kind: str, call: StatusCall, status: int, body: object) -> dict[str, Any]:
    """The output of ``ci_status`` from the service's answer."""
    if status != 200 or not isinstance(body, Mapping) or "status" not in body:
        raise CiAnswerError(
            "CI_REFUSED", f"{kind} did not give run {call.run}: HTTP {status}, {_message(body)}"
        )
    state = _text(body.get("status")) or "unknown"
    if kind == "github":
        conclusion, ref = _text(body.get("conclusion")), _text(body.get("head_branch"))
        url, sha = _text(body.get("html_url")), _text(body.get("head_sha"))
    else:
        finished = state in FINISHED
        conclusion = state if finished else None
        ref, url, sha = _text(body.get("ref")), _text(body.get("web_url")), _text(body.get("sha"))
    return {
        "run": call.run,
        "pipeline": call.pipeline.name,
        "environment": call.pipeline.environment,
        "status": state,
        "conclusion": conclusion,
        "finished": state in FINISHED,
        "ref": ref,
        "sha": sha,
        "url": url,
        "created_at": _text(body.get("created_at")),
        "updated_at": _text(body.get("updated_at")),
    }


def _text(value: object) -> str | None:
    return None if value is None else str(value)[:500]
