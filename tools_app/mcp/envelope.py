"""The JSON-RPC message of one POST to the gateway, checked before the SDK sees it
(pure: no Django).

The SDK answers a malformed message with a pydantic dump under a code that is not
the JSON-RPC one; the gateway answers it here instead, with the JSON-RPC code and a
sentence saying what is wrong and what is allowed. It also picks out what the
gateway itself acts on: `notifications/cancelled`, and whether a `tools/call`
asked for progress notifications.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any, Final

# JSON-RPC 2.0 error codes.
PARSE_ERROR: Final = -32700
INVALID_REQUEST: Final = -32600

CANCELLED_METHOD: Final = "notifications/cancelled"
# Protocol revisions from 2025-06-18 on have no JSON-RPC batches.
BATCH_REFUSAL: Final = (
    "JSON-RPC batches are not supported: the MCP protocol revisions this server speaks "
    "(2025-06-18 and later) send one JSON-RPC message per POST; send each request on its own"
)


@dataclass(frozen=True)
class EnvelopeProblem:
    """Why the body is not one acceptable JSON-RPC message."""

    code: int
    message: str
    request_id: str | int | None = None


@dataclass(frozen=True)
class Envelope:
    """One well-formed JSON-RPC message."""

    method: str | None
    request_id: str | int | None
    params: dict[str, Any]

    @property
    def is_request(self) -> bool:
        return self.method is not None and self.request_id is not None

    @property
    def wants_progress(self) -> bool:
        meta = self.params.get("_meta")
        return (
            self.is_request
            and self.method == "tools/call"
            and isinstance(meta, dict)
            and _is_id(meta.get("progressToken"))
        )

    @property
    def cancelled_request(self) -> str | int | None:
        """The request id a `notifications/cancelled` names (None for any other message)."""
        if self.method != CANCELLED_METHOD or self.request_id is not None:
            return None
        value = self.params.get("requestId")
        return value if _is_id(value) else None

    @property
    def cancel_reason(self) -> str:
        reason = self.params.get("reason")
        return reason if isinstance(reason, str) else ""


def _is_id(value: Any) -> bool:
    return isinstance(value, str | int) and not isinstance(value, bool)


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"the number {text[:40]} is out of range (finite numbers only)")
    return value


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON (finite numbers only)")


def read_envelope(body: bytes) -> Envelope | EnvelopeProblem:
    """The one JSON-RPC message in `body`, or what is wrong with it."""
    try:
        message = json.loads(body, parse_float=_finite, parse_constant=_no_constant)
    except RecursionError:
        return EnvelopeProblem(PARSE_ERROR, "Parse error: the JSON is nested too deeply")
    except UnicodeDecodeError:
        return EnvelopeProblem(PARSE_ERROR, "Parse error: the body is not UTF-8 text")
    except ValueError as exc:
        return EnvelopeProblem(PARSE_ERROR, f"Parse error: the body is not valid JSON ({exc})")
    if isinstance(message, list):
        return EnvelopeProblem(INVALID_REQUEST, BATCH_REFUSAL)
    if not isinstance(message, dict):
        return EnvelopeProblem(
            INVALID_REQUEST, "Invalid Request: the body must be one JSON-RPC message (an object)"
        )
    raw_id = message.get("id")
    request_id = raw_id if _is_id(raw_id) else None
    if message.get("jsonrpc") != "2.0":
        return EnvelopeProblem(
            INVALID_REQUEST, 'Invalid Request: "jsonrpc" must be "2.0"', request_id
        )
    if "id" in message and raw_id is not None and not _is_id(raw_id):
        return EnvelopeProblem(
            INVALID_REQUEST, 'Invalid Request: "id" must be a string or an integer'
        )
    method = message.get("method")
    if method is None:
        if "result" in message or "error" in message:
            # A response to a server request: the stateless server sends none, the SDK
            # acknowledges it.
            return Envelope(method=None, request_id=request_id, params={})
        return EnvelopeProblem(
            INVALID_REQUEST,
            'Invalid Request: a JSON-RPC request or notification needs a "method" string',
            request_id,
        )
    if not isinstance(method, str) or not method:
        return EnvelopeProblem(
            INVALID_REQUEST, 'Invalid Request: "method" must be a non-empty string', request_id
        )
    params = message.get("params", {})
    if params is None:
        params = {}
    if not isinstance(params, dict):
        return EnvelopeProblem(
            INVALID_REQUEST,
            'Invalid Request: "params" must be an object (MCP uses named parameters)',
            request_id,
        )
    return Envelope(method=method, request_id=request_id, params=params)
