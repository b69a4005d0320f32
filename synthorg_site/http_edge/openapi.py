"""The OpenAPI schema tells the truth about refusals and limits (a drf-spectacular
postprocessing hook): every operation documents the error envelope for each
status the edge can answer, with the limits the console enforces."""

from __future__ import annotations

from typing import Any

from django.conf import settings

from common.envelope import CODE_FOR_STATUS, DEFAULT_MESSAGE

ERROR_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "API.md's error envelope: every refusal under /api/ and /mcp/.",
    "required": ["error"],
    "additionalProperties": False,
    "properties": {
        "error": {
            "type": "object",
            "required": ["code", "message", "details"],
            "properties": {
                "code": {"type": "string", "enum": sorted(set(CODE_FOR_STATUS.values()))},
                "message": {
                    "type": "string",
                    "description": "what was wrong and what is allowed, in words to act on",
                },
                "details": {"type": "object", "additionalProperties": True},
            },
        }
    },
}

_METHODS = {"get", "put", "post", "delete", "patch", "head", "options", "trace"}


def _limits() -> str:
    return (
        "\n\nLimits: request bodies at most "
        f"{settings.SYNTHORG_MAX_REQUEST_BYTES} bytes (413), sent with Content-Length or "
        "chunked; JSON nested at most "
        f"{settings.SYNTHORG_JSON_MAX_DEPTH} levels; numbers finite (no NaN, Infinity, "
        f"1e309); `wait` 0-{settings.SYNTHORG_WAIT_MAX_SECONDS} seconds; a batch holds 1-"
        f"{settings.SYNTHORG_BATCH_MAX_CALLS} calls and `max_concurrency` is 1-"
        f"{settings.SYNTHORG_BATCH_MAX_CALLS}; agents make at most "
        f"{settings.SYNTHORG_AGENT_RATE_LIMIT_PER_MINUTE} calls a minute (429 with "
        "Retry-After). Strings may not hold NUL characters or lone surrogates. Every "
        "error is the Error envelope."
    )


def _error_response(status: int) -> dict[str, Any]:
    code = CODE_FOR_STATUS[status]
    response: dict[str, Any] = {
        "description": f"{code}: {DEFAULT_MESSAGE[code]}",
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
    }
    if status == 429:
        response["headers"] = {
            "Retry-After": {
                "schema": {"type": "integer", "minimum": 1},
                "description": "seconds to wait before trying again",
            }
        }
    if status == 401:
        response["headers"] = {"WWW-Authenticate": {"schema": {"type": "string"}}}
    if status == 405:
        response["headers"] = {"Allow": {"schema": {"type": "string"}}}
    return response


def error_responses_hook(
    result: dict[str, Any], generator: Any, request: Any, public: bool
) -> dict[str, Any]:
    """Add the Error schema, an error response per status to every operation, and the limits."""
    result.setdefault("components", {}).setdefault("schemas", {})["Error"] = ERROR_SCHEMA
    info = result.setdefault("info", {})
    info["description"] = str(info.get("description", "")) + _limits()
    for operations in result.get("paths", {}).values():
        for method, operation in operations.items():
            if method not in _METHODS:
                continue
            responses = operation.setdefault("responses", {})
            for status in CODE_FOR_STATUS:
                responses.setdefault(str(status), _error_response(status))
    return result
