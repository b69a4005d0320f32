"""The outcome of a policy decision, with the rule that decided and its trace."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any


class Outcome(StrEnum):
    """What happens to a call."""

    ALLOW = "allow"
    DENY = "deny"
    REQUIRE_APPROVAL = "require_approval"


class Rule(StrEnum):
    """Names of the rules that can decide; stable, shown to admins and agents."""

    TOOL_DISABLED = "tool_disabled"
    UNKNOWN_CATEGORY = "unknown_category"
    DENIED_LIST = "denied_list"
    ALLOWED_LIST = "allowed_list"
    CUSTOM_DENY = "custom_deny"
    LEVEL_CATEGORIES = "level_categories"
    DEFAULT_DENY = "default_deny"
    DEPLOYMENT = "deployment"
    GIT_ACCESS = "git_access"
    CODE_EXECUTION = "code_execution_isolation"
    TERMINAL_ACCESS = "terminal_access"
    NETWORK_MODE = "network_mode"
    FILE_SYSTEM_SCOPE = "file_system_scope"
    INVALID_ARGUMENTS = "invalid_arguments"
    REQUIRES_APPROVAL = "requires_approval"
    SAFETY_FINANCIAL = "safety_class_financial"
    SAFETY_PRIVILEGED = "safety_class_privileged"


@dataclass(frozen=True, slots=True)
class Decision:
    """Allow, deny or require approval, with a reason an agent can act on.

    ``required_approvals`` is the number of distinct humans needed (0 unless
    the outcome is ``require_approval``). ``trace`` lists the steps taken, in
    order, ending with the step that decided.
    """

    outcome: Outcome
    reason: str
    rule: str
    trace: tuple[str, ...]
    required_approvals: int = 0

    @property
    def allowed(self) -> bool:
        """True only for an outright allow."""
        return self.outcome is Outcome.ALLOW

    @property
    def denied(self) -> bool:
        """True for a deny."""
        return self.outcome is Outcome.DENY

    def as_dict(self) -> dict[str, Any]:
        """The JSON shape used in invocations and the explain endpoint."""
        return {
            "outcome": self.outcome.value,
            "reason": self.reason,
            "rule": self.rule,
            "trace": list(self.trace),
            "required_approvals": self.required_approvals,
        }
