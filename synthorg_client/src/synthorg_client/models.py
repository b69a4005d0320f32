"""The Invocation as the agent API answers it, in plain dataclasses."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

TERMINAL_STATUSES = frozenset(
    {"succeeded", "failed", "denied", "expired", "timed_out", "cancelled"}
)


@dataclass(frozen=True)
class Decision:
    """Why the console allowed, denied or sent a call for approval."""

    outcome: str
    reason: str
    rule: str
    trace: tuple[str, ...] = ()

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Decision:
        """Build from the `decision` object of an Invocation."""
        return cls(
            outcome=str(data.get("outcome", "")),
            reason=str(data.get("reason", "")),
            rule=str(data.get("rule", "")),
            trace=tuple(str(step) for step in data.get("trace") or ()),
        )


@dataclass(frozen=True)
class Approval:
    """The approval request behind a call that needed a person."""

    id: str
    status: str
    expires_at: str | None
    required_approvals: int
    approvals: int

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Approval:
        """Build from the `approval` object of an Invocation."""
        return cls(
            id=str(data.get("id") or ""),
            status=str(data.get("status", "")),
            expires_at=data.get("expires_at"),
            required_approvals=int(data.get("required_approvals") or 0),
            approvals=int(data.get("approvals") or 0),
        )


@dataclass(frozen=True)
class Result:
    """What the tool produced, sanitised by the console."""

    is_error: bool
    content: str
    structured: Any = None
    exit_code: int | None = None
    truncated: bool = False
    duration_ms: int | None = None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Result:
        """Build from the `result` object of an Invocation."""
        return cls(
            is_error=bool(data.get("is_error", False)),
            content=str(data.get("content") or ""),
            structured=data.get("structured"),
            exit_code=data.get("exit_code"),
            truncated=bool(data.get("truncated", False)),
            duration_ms=data.get("duration_ms"),
        )


@dataclass(frozen=True)
class InvocationError:
    """Why an invocation did not succeed."""

    code: str
    message: str

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> InvocationError:
        """Build from the `error` object of an Invocation."""
        return cls(code=str(data.get("code", "")), message=str(data.get("message", "")))


@dataclass(frozen=True)
class Invocation:
    """One governed tool call. `raw` keeps the answer as sent, fields added later included."""

    id: str
    tool: str
    status: str
    arguments_hash: str = ""
    decision: Decision | None = None
    approval: Approval | None = None
    result: Result | None = None
    error: InvocationError | None = None
    created_at: str | None = None
    updated_at: str | None = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def is_terminal(self) -> bool:
        """True once the status can no longer change."""
        return self.status in TERMINAL_STATUSES

    @property
    def succeeded(self) -> bool:
        """True when the tool ran and its result is good."""
        return self.status == "succeeded"

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Invocation:
        """Build from an Invocation object of the agent API."""

        def part(name: str, build: Any) -> Any:
            value = data.get(name)
            return build(value) if isinstance(value, Mapping) else None

        return cls(
            id=str(data.get("id") or ""),
            tool=str(data.get("tool", "")),
            status=str(data.get("status", "")),
            arguments_hash=str(data.get("arguments_hash") or ""),
            decision=part("decision", Decision.from_json),
            approval=part("approval", Approval.from_json),
            result=part("result", Result.from_json),
            error=part("error", InvocationError.from_json),
            created_at=data.get("created_at"),
            updated_at=data.get("updated_at"),
            raw=dict(data),
        )

    def to_json(self) -> dict[str, Any]:
        """The Invocation as the console sent it."""
        return dict(self.raw)


@dataclass(frozen=True)
class Call:
    """One call of a batch."""

    tool: str
    arguments: Mapping[str, Any]
    idempotency_key: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The call as the batch endpoint expects it."""
        body: dict[str, Any] = {"tool": self.tool, "arguments": dict(self.arguments)}
        if self.idempotency_key is not None:
            body["idempotency_key"] = self.idempotency_key
        return body
