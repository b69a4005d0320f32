"""What an MCP client sees for an invocation or a refusal: a CallToolResult.

Only sanitised text reaches the agent: the tool's content is stored sanitised, and
every message the console adds is sanitised again on the way out, since an error
message can quote tool output. The texts speak MCP: they name the tool, the
argument or the `_meta` key to change, never a REST URL.
"""

from __future__ import annotations

from typing import Any

import mcp_types as types
from django.conf import settings
from django.core.exceptions import ObjectDoesNotExist

from common.errors import SynthOrgError
from tools_app.agent_view import agent_message, decision_text, error_text
from tools_app.models import Invocation, InvocationStatus

META_INVOCATION = "synthorg/invocation"
META_STATUS = "synthorg/status"
META_ERROR_CODE = "synthorg/error_code"
META_TRUNCATED = "synthorg/truncated"

_RAN = {InvocationStatus.SUCCEEDED, InvocationStatus.FAILED, InvocationStatus.TIMED_OUT}


def _clean(text: str) -> str:
    return agent_message(text)


def _text(text: str) -> types.TextContent:
    return types.TextContent(type="text", text=text)


def _refusal_text(tool: str, error: SynthOrgError) -> str:
    message = _clean(error.message)
    if error.code == "not_found":
        # The service's reason points REST clients at the tools list; say it in MCP.
        return (
            f"refused (unknown_tool): there is no tool {tool!r} this agent may call; "
            "tools/list names the tools you may call"
        )
    if error.code == "invalid_argument":
        return (
            f"refused (invalid_argument): {tool}: {message}. Change the arguments named "
            f"here (the inputSchema of {tool} in tools/list says what is allowed) and call again"
        )
    if error.code == "conflict":
        return (
            f"refused (conflict): {message}. Send a new _meta synthorg/idempotency_key "
            "for a different call, or the same arguments to get that call's outcome"
        )
    return f"refused ({error.code}): {message}"


def refusal_result(error: SynthOrgError, *, tool: str = "") -> types.CallToolResult:
    """A call the console refused before it became an invocation (unknown tool, invalid
    arguments, rate limit, idempotency conflict)."""
    return types.CallToolResult(
        content=[_text(_refusal_text(tool[:200], error))],
        is_error=True,
        _meta={META_ERROR_CODE: error.code},
    )


def request_problem_result(message: str) -> types.CallToolResult:
    """The MCP request itself is malformed where the REST API would answer 400."""
    return types.CallToolResult(
        content=[_text(f"refused (invalid_argument): {_clean(message)}")],
        is_error=True,
        _meta={META_ERROR_CODE: "invalid_argument"},
    )


def internal_problem_result(invocation_id: Any, request_id: str) -> types.CallToolResult:
    """The console could not finish answering a call it had recorded."""
    return types.CallToolResult(
        content=[
            _text(
                f"the console could not report the outcome of invocation {invocation_id} "
                f"(request {request_id}); it is recorded and its outcome is kept. Call the "
                "tool again with the same arguments to wait for that same invocation."
            )
        ],
        is_error=True,
        _meta={META_INVOCATION: str(invocation_id), META_ERROR_CODE: "internal"},
    )


def _resume_hint(invocation: Invocation) -> str:
    if invocation.idempotency_key:
        return (
            f"Call {invocation.tool} again with the same arguments and the same _meta "
            f"synthorg/idempotency_key {invocation.idempotency_key!r} to wait for its outcome."
        )
    return f"Call {invocation.tool} again with the same arguments to wait for its outcome."


def _pending_text(invocation: Invocation) -> str:
    text = (
        f"{invocation.tool} awaits a person's approval (invocation {invocation.id}); "
        "it has not run, and runs only if a person approves it"
    )
    try:
        approval = invocation.approval
    except ObjectDoesNotExist:  # no request: the call never waited for people
        return f"{text}. {_resume_hint(invocation)}"
    expires = approval.expires_at.isoformat().replace("+00:00", "Z")
    return (
        f"{text} (approval request {approval.id}, open until {expires}). {_resume_hint(invocation)}"
    )


def _denied_text(invocation: Invocation) -> str:
    # A person's denial is recorded as the invocation's error ("denied by NAME:
    # REASON"); the decision still holds the routing reason that asked for a person.
    reason = (invocation.decision or {}).get("reason") or ""
    if invocation.error_message:
        message = error_text(invocation.error_message, decision_reason=reason)
    else:
        message = decision_text(str(reason or "no reason was recorded"))
    if message.startswith("denied by "):
        return f"{message}. A person refused this call; do not repeat it unchanged."
    return f"denied: {message}"


def _truncation_text(tool: str) -> str:
    return (
        f"[output truncated: {tool} returned more than the console shows "
        f"(at most {settings.SYNTHORG_RESULT_MAX_CHARS} characters); ask for a smaller part]"
    )


def _marked(structured: Any, truncated: bool) -> Any:
    if truncated and isinstance(structured, dict) and isinstance(structured.get("truncated"), bool):
        # The tool's own flag covers only its own limit; the console's cut counts too.
        return {**structured, "truncated": True}
    return structured


def _structured(invocation: Invocation) -> dict[str, Any] | None:
    structured: dict[str, Any] | None = _marked(invocation.structured, invocation.truncated)
    return structured


def _success(
    *, invocation_id: str, tool: str, content: str, structured: Any, truncated: bool
) -> types.CallToolResult:
    meta: dict[str, Any] = {META_INVOCATION: invocation_id, META_STATUS: "succeeded"}
    blocks: list[types.ContentBlock] = [_text(content)]
    if truncated:
        meta[META_TRUNCATED] = True
        blocks.append(_text(_truncation_text(tool)))
    structured = _marked(structured, truncated)
    return types.CallToolResult(
        content=blocks,
        structured_content=structured if isinstance(structured, dict) else {},
        is_error=False,
        _meta=meta,
    )


def carried_success_result(body: dict[str, Any] | None) -> types.CallToolResult | None:
    """A succeeded invocation's result from the agent's view its terminal status message
    carried (the REST rendering of the same stored, sanitised fields); None otherwise."""
    if body is None or body.get("status") != InvocationStatus.SUCCEEDED:
        return None
    result = body.get("result")
    if not isinstance(result, dict) or not isinstance(result.get("content"), str):
        return None
    return _success(
        invocation_id=str(body.get("id")),
        tool=str(body.get("tool")),
        content=result["content"],
        structured=result.get("structured"),
        truncated=bool(result.get("truncated")),
    )


def invocation_result(invocation: Invocation) -> types.CallToolResult:
    """The invocation as MCP shows it: its sanitised output when it ran, else why not."""
    status = invocation.status
    if status == InvocationStatus.SUCCEEDED:
        return _success(
            invocation_id=str(invocation.id),
            tool=invocation.tool,
            content=invocation.content,
            structured=invocation.structured,
            truncated=invocation.truncated,
        )
    meta: dict[str, Any] = {META_INVOCATION: str(invocation.id), META_STATUS: invocation.status}
    if invocation.truncated:
        meta[META_TRUNCATED] = True
    if invocation.error_code:
        meta[META_ERROR_CODE] = invocation.error_code
    blocks: list[types.ContentBlock] = []
    structured_content = None
    if status in _RAN and invocation.started_at is not None:
        if invocation.content:
            blocks.append(_text(invocation.content))
            if invocation.truncated:
                blocks.append(_text(_truncation_text(invocation.tool)))
        structured_content = _structured(invocation)
    if status == InvocationStatus.DENIED:
        blocks.append(_text(_denied_text(invocation)))
    elif status == InvocationStatus.PENDING_APPROVAL:
        blocks.append(_text(_pending_text(invocation)))
    elif status in (InvocationStatus.QUEUED, InvocationStatus.RUNNING):
        blocks.append(
            _text(
                f"{invocation.tool} (invocation {invocation.id}) is still {status}; "
                f"its outcome is kept. {_resume_hint(invocation)}"
            )
        )
    else:
        code = invocation.error_code or status
        message = _clean(invocation.error_message or "no reason was recorded")
        if invocation.content and invocation.content.startswith(message[:200]):
            # A failed run's message is the start of its output, already shown above.
            blocks.append(_text(f"{status} ({code})"))
        else:
            blocks.append(_text(f"{status} ({code}): {message}"))
    return types.CallToolResult(
        content=blocks,
        structured_content=structured_content,
        is_error=True,
        _meta=meta,
    )
