"""Shared pieces of the git tools: the access check, contract builder and text outcome."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from common.vocabulary.categories import SafetyClass, ToolCategory
from common.vocabulary.levels import GIT_ACTIONS, GitAccess
from tools_app.builtin.base import RefusalCode, ToolContext, ToolOutcome, ToolRefusedError
from tools_app.contracts import ToolContract
from trust_app.policy.tool_view import ArgumentRole

PATH_PROPERTY: Final = {
    "type": "string",
    "default": ".",
    "maxLength": 4096,
    "description": "Repository directory, relative to the workspace.",
}
PATHS_PROPERTY: Final = {
    "type": "array",
    "items": {"type": "string", "maxLength": 4096},
    "maxItems": 256,
}
_TEXT_OUTPUT: Final = {
    "type": "object",
    "properties": {"output": {"type": "string"}, "truncated": {"type": "boolean"}},
    "required": ["output", "truncated"],
}
_VC: Final = ToolCategory.VERSION_CONTROL


def require_git_access(context: ToolContext, action_type: str) -> None:
    """Refuse unless the agent's ``git`` sub-constraint permits ``action_type``."""
    mode = context.sub_constraints.get("git")
    if mode not in {m.value for m in GitAccess}:
        raise ToolRefusedError(
            RefusalCode.INVALID_ARGUMENT,
            "the agent's git access is unknown, so git does not run; ask an admin to set it",
        )
    if mode != GitAccess.FULL and action_type not in GIT_ACTIONS[mode]:
        raise ToolRefusedError(
            RefusalCode.INVALID_ARGUMENT,
            f"git access {mode} does not permit {action_type}; ask an admin if the task needs it",
        )


def git_contract(
    name: str,
    action: str,
    safety: SafetyClass,
    summary: str,
    props: dict[str, Any],
    required: list[str] | None = None,
    output: dict[str, Any] | None = None,
    roles: dict[str, ArgumentRole] | None = None,
    idempotency: str = "optional",
    description: str = "",
) -> ToolContract:
    return ToolContract.model_validate(
        {
            "name": name,
            "category": _VC,
            "action_type": action,
            "safety_class": safety,
            "summary": summary,
            "description": description or summary,
            "idempotency": idempotency,
            "input_schema": {
                "type": "object",
                "properties": props,
                "required": required or [],
                "additionalProperties": False,
            },
            "output_schema": output or _TEXT_OUTPUT,
            "argument_roles": roles or {"path": ArgumentRole.PATH},
        }
    )


def text_outcome(
    result_stdout: str, truncated: bool, extra: Mapping[str, Any] | None = None
) -> ToolOutcome:
    return ToolOutcome(
        content=result_stdout,
        structured={"output": result_stdout, "truncated": truncated, **(extra or {})},
        truncated=truncated,
    )
