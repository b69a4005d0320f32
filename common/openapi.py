"""The OpenAPI description of the REST API: answer shapes, request bodies checked by
hand, and the three ways to authenticate (imported by the views, so the schema
generator knows them)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.extensions import OpenApiAuthenticationExtension

STATUSES = [
    "pending_approval",
    "queued",
    "running",
    "succeeded",
    "failed",
    "denied",
    "expired",
    "timed_out",
    "cancelled",
]


def _obj(required: list[str], properties: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"type": "object", "required": required, "properties": properties, **extra}


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    return {**schema, "nullable": True}


STR: dict[str, Any] = {"type": "string"}
NULLABLE_STR = _nullable(STR)
DATETIME = {"type": "string", "format": "date-time"}
NULLABLE_DATETIME = _nullable(DATETIME)
UUID = {"type": "string", "format": "uuid"}
OBJECT: dict[str, Any] = {"type": "object", "additionalProperties": True}

DECISION = _obj(
    ["outcome", "reason", "rule", "trace"],
    {
        "outcome": _nullable({"type": "string", "enum": ["allow", "deny", "require_approval"]}),
        "reason": STR,
        "rule": STR,
        "trace": {"type": "array", "items": {}},
    },
)
APPROVAL_STATE = _obj(
    ["id", "status", "expires_at", "required_approvals", "approvals"],
    {
        "id": UUID,
        "status": {"type": "string", "enum": ["pending", "approved", "denied", "expired"]},
        "expires_at": DATETIME,
        "required_approvals": {"type": "integer"},
        "approvals": {"type": "integer"},
    },
)
RESULT = _obj(
    ["is_error", "content", "structured", "exit_code", "truncated", "duration_ms"],
    {
        "is_error": {"type": "boolean"},
        "content": STR,
        "structured": {},
        "exit_code": _nullable({"type": "integer"}),
        "truncated": {"type": "boolean"},
        "duration_ms": _nullable({"type": "integer"}),
    },
)
CALL_ERROR = _obj(["code", "message"], {"code": STR, "message": STR, "details": OBJECT})
_INVOCATION_FIELDS: dict[str, Any] = {
    "id": UUID,
    "tool": STR,
    "arguments_hash": {"type": "string", "pattern": "^[0-9a-f]{64}$"},
    "status": {"type": "string", "enum": STATUSES},
    "decision": DECISION,
    "approval": _nullable(APPROVAL_STATE),
    "result": _nullable(RESULT),
    "error": _nullable(CALL_ERROR),
    "task_id": NULLABLE_STR,
    "purpose": NULLABLE_STR,
    "idempotency_key": NULLABLE_STR,
    "created_at": DATETIME,
    "updated_at": DATETIME,
}
_INVOCATION_REQUIRED = [
    "id", "tool", "arguments_hash", "status", "decision", "approval", "result", "error",
    "created_at", "updated_at",
]  # fmt: skip
INVOCATION = {
    **_obj(_INVOCATION_REQUIRED, _INVOCATION_FIELDS),
    "description": "One governed tool call (API.md, Invocation).",
}
BATCH_ENTRY = {
    **_obj(
        _INVOCATION_REQUIRED,
        {
            **_INVOCATION_FIELDS,
            "id": _nullable(UUID),
            "decision": _nullable(DECISION),
            "created_at": NULLABLE_DATETIME,
            "updated_at": NULLABLE_DATETIME,
        },
    ),
    "description": "An invocation, or for a call refused before it became one: no id, "
    "status failed, and the refusal as its error.",
}
BATCH = _obj(["invocations"], {"invocations": {"type": "array", "items": BATCH_ENTRY}})
TRUST_LEVEL = _obj(
    ["strategy", "level", "admin_level", "earned_level", "lowered", "reason"],
    {
        "strategy": STR,
        "level": STR,
        "admin_level": STR,
        "earned_level": _nullable(STR),
        "lowered": {"type": "boolean"},
        "reason": STR,
    },
)
ME = _obj(
    ["name", "access_level", "trust", "autonomy"],
    {"name": STR, "access_level": STR, "trust": TRUST_LEVEL, "autonomy": STR},
)
TOOL_L1 = _obj(
    ["name", "category", "action_type", "safety_class", "summary", "cost_tier"],
    {
        "name": STR,
        "category": STR,
        "action_type": STR,
        "safety_class": STR,
        "summary": STR,
        "cost_tier": STR,
    },
)
TOOL_LIST = _obj(["tools"], {"tools": {"type": "array", "items": TOOL_L1}})
TOOL_L2 = _obj(
    [
        "name", "category", "action_type", "safety_class", "description", "input_schema",
        "output_schema", "examples", "failure_modes", "resources", "definition_hash",
    ],
    {
        "name": STR,
        "category": STR,
        "action_type": STR,
        "safety_class": STR,
        "description": STR,
        "input_schema": OBJECT,
        "output_schema": _nullable(OBJECT),
        "examples": {"type": "array", "items": OBJECT},
        "failure_modes": {"type": "array", "items": {}},
        "resources": {"type": "array", "items": STR},
        "definition_hash": STR,
    },
)  # fmt: skip
TOOL_RESOURCE = _obj(
    ["id", "media_type", "content"], {"id": STR, "media_type": STR, "content": STR}
)
APPROVAL = _obj(
    ["id", "status", "required_approvals", "approvals", "arguments_hash", "expires_at",
     "invocation", "agent", "decisions"],
    {
        "id": UUID,
        "status": STR,
        "risk_tier": STR,
        "risk_reasons": {"type": "array", "items": OBJECT},
        "card": OBJECT,
        "previews": {"type": "array", "items": OBJECT},
        "required_approvals": {"type": "integer"},
        "approvals": {"type": "integer"},
        "reason": STR,
        "rule": STR,
        "trace": {"type": "array", "items": {}},
        "arguments_hash": STR,
        "expires_at": DATETIME,
        "created_at": DATETIME,
        "decided_at": NULLABLE_DATETIME,
        "decided_by": NULLABLE_STR,
        "escalated": {"type": "boolean"},
        "escalated_at": NULLABLE_DATETIME,
        "owner_may_approve": {"type": "boolean"},
        "invocation": OBJECT,
        "agent": OBJECT,
        "decisions": {"type": "array", "items": OBJECT},
    },
)  # fmt: skip
APPROVAL_LIST = _obj(
    ["results", "next"], {"results": {"type": "array", "items": APPROVAL}, "next": NULLABLE_STR}
)
AUDIT_EVENT = _obj(
    ["id", "created_at", "kind", "actor", "outcome", "reason", "hash", "prev_hash"],
    {
        "id": {"type": "integer"},
        "created_at": DATETIME,
        "kind": STR,
        "actor": OBJECT,
        "agent": _nullable(OBJECT),
        "invocation_id": _nullable(UUID),
        "tool": STR,
        "category": STR,
        "action_type": STR,
        "arguments_hash": STR,
        "outcome": STR,
        "status": STR,
        "reason": STR,
        "rule": STR,
        "duration_ms": _nullable({"type": "integer"}),
        "request_id": STR,
        "data": OBJECT,
        "prev_hash": STR,
        "hash": STR,
    },
)
# With an argument filter (path, host, program, table): the values it matched, over all pages.
AUDIT_MATCHED = _obj(
    ["kind", "value", "events", "calls"],
    {
        "kind": {"type": "string", "enum": ["path", "host", "program", "table"]},
        "value": STR,
        "events": {"type": "integer"},
        "calls": {"type": "integer"},
    },
)
AUDIT_PAGE = _obj(
    ["results", "next"],
    {
        "results": {"type": "array", "items": AUDIT_EVENT},
        "next": _nullable({"type": "string"}),
        "matched": {"type": "array", "items": AUDIT_MATCHED},
    },
)
EXPLAIN = _obj(["tool", "agent", "decision"], {"tool": STR, "agent": STR, "decision": OBJECT})
PROMOTION = _obj(
    ["id", "agent", "status"],
    {
        "id": UUID,
        "kind": STR,
        "agent": OBJECT,
        "track": STR,
        "from_level": STR,
        "to_level": STR,
        "status": STR,
        "reasons": {"type": "array", "items": {}},
        "created_at": DATETIME,
        "decided_at": NULLABLE_DATETIME,
        "decided_by": NULLABLE_STR,
    },
)
PROMOTION_LIST = _obj(["results"], {"results": {"type": "array", "items": PROMOTION}})
TRUST_SUMMARY = _obj(["strategy", "score", "levels"], {"strategy": STR, "levels": OBJECT})
TASK_OUTCOME = _obj(
    ["id", "agent", "task_id", "difficulty", "quality", "completed", "categories", "trust"],
    {
        "id": UUID,
        "agent": UUID,
        "task_id": STR,
        "difficulty": STR,
        "quality": {"type": "number"},
        "completed": {"type": "boolean"},
        "categories": {"type": "array", "items": STR},
        "created_at": DATETIME,
        "trust": OBJECT,
    },
)
FEEDBACK = _obj(["id", "invocation", "rating"], {"id": UUID, "invocation": UUID})


def closed_object(required: list[str], properties: dict[str, Any]) -> dict[str, Any]:
    """A request body with exactly these fields (the views refuse unknown ones)."""
    return _obj(required, properties, additionalProperties=False)


REASON_BODY = closed_object(
    ["reason"], {"reason": {"type": "string", "minLength": 1, "pattern": r"\S"}}
)


class AgentTokenScheme(OpenApiAuthenticationExtension):
    target_class = "tools_app.api.auth.AgentTokenAuthentication"
    name = "agentToken"

    def get_security_definition(self, auto_schema: Any) -> dict[str, Any]:
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "An agent token (`manage.py synthorg_agent create`): agent "
            "endpoints only; people's tokens and sessions are refused there (403).",
        }


class PersonTokenScheme(OpenApiAuthenticationExtension):
    target_class = "trust_app.api.people.PersonTokenAuthentication"
    name = "personToken"

    def get_security_definition(self, auto_schema: Any) -> dict[str, Any]:
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "A personal token (`manage.py synthorg_user create --token`): "
            "people's endpoints only, no CSRF; agent tokens are refused there (403).",
        }
