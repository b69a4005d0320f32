"""What an MCP client sees for an invocation or a refusal: a CallToolResult.

Only sanitised text reaches the agent: the tool's content is stored sanitised, and
every message the console adds is sanitised again on the way out, since an error
message can quote tool output.
"""

from __future__ import annotations

from typing import Any

import mcp_types as types
from django.conf import settings

from approvals_app.models import ApprovalRequest
from common.errors import SynthOrgError
from tools_app.models import Invocation, InvocationStatus
from tools_app.sanitize import sanitize_output
from tools_app.secrets import known_secrets

META_INVOCATION = "synthorg/invocation"
META_STATUS = "synthorg/status"
META_ERROR_CODE = "synthorg/error_code"

_RAN = {InvocationStatus.SUCCEEDED, InvocationStatus.FAILED, InvocationStatus.TIMED_OUT}


def _clean(text: str) -> str:
    return sanitize_output(
        text, known_secrets=known_secrets(), max_chars=settings.SYNTHORG_RESULT_MAX_CHARS
    ).text


def _text(text: str) -> types.TextContent:
    return types.TextContent(type="text", text=text)


def refusal_result(error: SynthOrgError) -> types.CallToolResult:
    """A call the console refused before it became an invocation (unknown tool, invalid
    arguments, rate limit, idempotency conflict)."""
    return types.CallToolResult(
        content=[_text(f"refused ({error.code}): {_clean(error.message)}")],
        is_error=True,
        _meta={META_ERROR_CODE: error.code},
    )


def request_problem_result(message: str) -> types.CallToolResult:
    """The MCP request itself is malformed where the REST API would answer 400."""
    return types.CallToolResult(
        content=[_text(f"refused (invalid_argument): {message}")],
        is_error=True,
        _meta={META_ERROR_CODE: "invalid_argument"},
    )


def _pending_text(invocation: Invocation) -> str:
    text = (
        f"invocation {invocation.id} awaits approval by a person; it was not run. "
        f"GET /api/v1/invocations/{invocation.id}/?wait=60 answers once it is decided"
    )
    if invocation.idempotency_key:
        text += (
            ", and so does this call again with the same _meta "
            f"synthorg/idempotency_key {invocation.idempotency_key!r}"
        )
    try:
        approval: ApprovalRequest = invocation.approval
    except ApprovalRequest.DoesNotExist:
        return text + "."
    expires = approval.expires_at.isoformat().replace("+00:00", "Z")
    return text + f" (approval request {approval.id}, open until {expires})."


def invocation_result(invocation: Invocation) -> types.CallToolResult:
    """The invocation as MCP shows it: its sanitised output when it ran, else why not."""
    meta: dict[str, Any] = {META_INVOCATION: str(invocation.id), META_STATUS: invocation.status}
    status = invocation.status
    if status == InvocationStatus.SUCCEEDED:
        structured = invocation.structured if invocation.structured is not None else {}
        return types.CallToolResult(
            content=[_text(invocation.content)],
            structured_content=structured,
            is_error=False,
            _meta=meta,
        )
    if invocation.error_code:
        meta[META_ERROR_CODE] = invocation.error_code
    blocks: list[types.ContentBlock] = []
    structured_content = None
    if status in _RAN and invocation.started_at is not None:
        if invocation.content:
            blocks.append(_text(invocation.content))
        structured_content = invocation.structured
    if status == InvocationStatus.DENIED:
        reason = (invocation.decision or {}).get("reason") or invocation.error_message
        blocks.append(_text(f"denied: {_clean(reason)}"))
    elif status == InvocationStatus.PENDING_APPROVAL:
        blocks.append(_text(_pending_text(invocation)))
    elif status in (InvocationStatus.QUEUED, InvocationStatus.RUNNING):
        blocks.append(
            _text(
                f"invocation {invocation.id} is still {status}; "
                f"GET /api/v1/invocations/{invocation.id}/?wait=60 answers with its result."
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
