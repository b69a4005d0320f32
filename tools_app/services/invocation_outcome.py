"""How a tool's outcome becomes the call's settled state: its status, the agent's
(sanitised) content and the raw content kept for auditors."""

from __future__ import annotations

import dataclasses
import itertools
from dataclasses import dataclass
from typing import Any

from audit_app.record import AuditEntry
from tools_app.agent_view import agent_message, agent_output, agent_structure
from tools_app.builtin.base import ToolOutcome
from tools_app.models import InvocationStatus
from tools_app.registry import schema_validator
from tools_app.sanitize import TRUNCATION_MARKER

# An output schema violation names at most this many problems.
_MAX_SCHEMA_PROBLEMS = 5


@dataclass(frozen=True)
class Settled:
    status: str
    is_error: bool
    content: str = ""
    raw_content: str = ""
    structured: Any = None
    exit_code: int | None = None
    truncated: bool = False
    duration_ms: int | None = None
    error_code: str = ""
    error_message: str = ""
    # Content and error message already sanitised for the agent.
    for_agent: bool = False
    # Audit rows the tool left for the call's record (ToolContext.audit_entries).
    audit: tuple[AuditEntry, ...] = ()


def settle_outcome(*, contract: Any, outcome: ToolOutcome) -> Settled:
    """The settled state of a tool that ran and returned ``outcome``."""
    status = InvocationStatus.SUCCEEDED
    error_code, error_message = outcome.error_code or "", ""
    structured = None if outcome.structured is None else agent_structure(dict(outcome.structured))
    if outcome.timed_out:
        status, error_code = InvocationStatus.TIMED_OUT, error_code or "timeout"
        error_message = "the call ran past its time limit and was stopped"
    elif outcome.is_error:
        status, error_code = InvocationStatus.FAILED, error_code or "tool_error"
        error_message = outcome.content
    else:
        validator = schema_validator(contract, "output_schema")
        problems = _schema_problems(validator, outcome.structured)
        if problems:
            error_message = "the tool's output broke its output schema: " + "; ".join(problems)
        elif structured is not None and (problems := _schema_problems(validator, structured.value)):
            # Fail closed: what the agent would be shown no longer matches the
            # tool's output schema, so it is not shown at all.
            error_message = "the tool's output broke its output schema once sanitised: " + (
                "; ".join(problems)
            )
        if problems:
            status, error_code = InvocationStatus.FAILED, "output_invalid"
    return settled_for_agent(
        Settled(
            status=status,
            is_error=status != InvocationStatus.SUCCEEDED,
            content=outcome.content,
            raw_content=outcome.content,
            structured=None if structured is None else structured.value,
            exit_code=outcome.exit_code,
            truncated=outcome.truncated,
            duration_ms=outcome.duration_ms,
            error_code=error_code,
            error_message=error_message,
        )
    )


def _schema_problems(validator: Any, structured: Any) -> list[str]:
    value = dict(structured) if structured is not None else {}
    return [
        f"output.{'.'.join(str(p) for p in e.absolute_path) or '$'}: {e.message}"
        for e in itertools.islice(validator.iter_errors(value), _MAX_SCHEMA_PROBLEMS)
    ]


def settled_for_agent(settled: Settled) -> Settled:
    """`settled` with its content and error message as an agent may see them
    (the raw content stays for auditors); the structured result is sanitised
    where it is validated."""
    if settled.for_agent:
        return settled
    content = settled.content
    if settled.truncated and content and not content.endswith(TRUNCATION_MARKER):
        # The tool cut its own output: the agent reads that it was cut, not only a flag.
        content += TRUNCATION_MARKER
    clean = agent_output(content)
    return dataclasses.replace(
        settled,
        for_agent=True,
        content=clean.text,
        truncated=settled.truncated or clean.truncated,
        # The message may quote the output: sanitised like it.
        error_message=agent_message(settled.error_message),
    )
