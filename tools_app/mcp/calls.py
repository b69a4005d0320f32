"""MCP calls in flight, across web nodes: what `notifications/cancelled` and a
repeated call refer to.

The gateway is stateless (no MCP session), so the only handle a client has on a
call in flight is its JSON-RPC request id, and the cancel notification may reach
another web node than the call. Both are kept in Redis:

- `request id -> invocation`, while the call is being answered, so a
  `notifications/cancelled` naming that request id cancels that invocation;
- a cancel that arrives before the call has recorded its invocation leaves a mark
  the call reads once it has one (a mark older than the call itself, less
  `SYNTHORG_MCP_CANCEL_SKEW_SECONDS` for clocks of different web nodes, was meant
  for an earlier request with the same id and is ignored);
- `(tool, arguments) -> invocation` for a call answered before it finished (still
  waiting for a person, or still running), so a stock client that calls the same
  tool with the same arguments again waits for that same invocation instead of
  asking a person twice.

Request ids are per agent: two clients of one agent that use the same request id
for calls in flight at the same moment cannot be told apart, and a cancel names
the later one.
"""

from __future__ import annotations

import hashlib
import json
import time
import uuid
from dataclasses import dataclass
from typing import Any

from django.conf import settings

from common.canonical import arguments_hash
from common.platform.redis import redis_client
from trust_app.policy import name_key

_PREFIX = "synthorg:mcp"


def _digest(*parts: str) -> str:
    return hashlib.sha256("\x00".join(parts).encode()).hexdigest()


def _request_key(agent_id: Any, request_id: str | int) -> str:
    # json.dumps tells the request id 1 from "1", as JSON-RPC does.
    return f"{_PREFIX}:call:{agent_id}:{_digest(json.dumps(request_id))}"


def _cancel_key(agent_id: Any, request_id: str | int) -> str:
    return f"{_PREFIX}:cancel:{agent_id}:{_digest(json.dumps(request_id))}"


def _in_flight_seconds() -> int:
    return int(settings.SYNTHORG_MCP_APPROVAL_WAIT_SECONDS + settings.CELERY_TASK_TIME_LIMIT + 60)


@dataclass(frozen=True)
class CallBegun:
    """What Redis knew when the call began."""

    resumed: uuid.UUID | None
    cancelled_first: bool


def _cancel_is_for(value: Any, arrived_at: float) -> bool:
    try:
        marked_at = float(value)
    except (TypeError, ValueError):
        return False
    return marked_at >= arrived_at - settings.SYNTHORG_MCP_CANCEL_SKEW_SECONDS


def call_begin(
    *,
    agent_id: Any,
    request_id: str | int | None,
    tool: str,
    arguments: Any,
    invocation_id: uuid.UUID,
    resumable: bool,
    arrived_at: float,
) -> CallBegun:
    """In one round trip: take the unfinished invocation this call resumes (when
    `resumable`), record that `request_id` answers `invocation_id`, and read whether a
    cancel for it came first."""
    resume_key = _resume_key(agent_id, tool, arguments) if resumable else None
    pipe = redis_client().pipeline(transaction=True)
    if resume_key is not None:
        pipe.get(resume_key)
        pipe.delete(resume_key)
    if request_id is not None:
        pipe.set(_request_key(agent_id, request_id), str(invocation_id), ex=_in_flight_seconds())
        pipe.get(_cancel_key(agent_id, request_id))
    if resume_key is None and request_id is None:
        return CallBegun(resumed=None, cancelled_first=False)
    replies = pipe.execute()
    resumed = replies[0] if resume_key is not None else None
    cancel_mark = replies[-1] if request_id is not None else None
    return CallBegun(
        resumed=uuid.UUID(resumed.decode()) if isinstance(resumed, bytes) else None,
        cancelled_first=cancel_mark is not None and _cancel_is_for(cancel_mark, arrived_at),
    )


def call_started(*, agent_id: Any, request_id: str | int, invocation_id: uuid.UUID) -> None:
    """Record that this request answers `invocation_id` (one it resumed)."""
    redis_client().set(
        _request_key(agent_id, request_id), str(invocation_id), ex=_in_flight_seconds()
    )


def call_for_request(*, agent_id: Any, request_id: str | int) -> uuid.UUID | None:
    """The invocation the agent's request is answering, if it is still in flight."""
    value = redis_client().get(_request_key(agent_id, request_id))
    return uuid.UUID(value.decode()) if isinstance(value, bytes) else None


def cancel_requested(*, agent_id: Any, request_id: str | int) -> None:
    """Mark the request cancelled, for a call that has not recorded its invocation yet."""
    marked_at = str(time.time()).encode()
    redis_client().set(_cancel_key(agent_id, request_id), marked_at, ex=_in_flight_seconds())


def _resume_key(agent_id: Any, tool: str, arguments: Any) -> str | None:
    try:
        digest = arguments_hash(arguments)
    except (TypeError, ValueError, OverflowError, RecursionError):
        return None  # the submission refuses such arguments and says why
    return f"{_PREFIX}:resume:{agent_id}:{_digest(name_key(tool), digest)}"


def unfinished_call_kept(*, agent_id: Any, tool: str, arguments: Any, invocation_id: Any) -> None:
    """The call was answered before it finished: the same call again resumes it."""
    key = _resume_key(agent_id, tool, arguments)
    if key is not None:
        ttl = settings.SYNTHORG_APPROVAL_TTL_SECONDS + settings.CELERY_TASK_TIME_LIMIT
        redis_client().set(key, str(invocation_id), ex=ttl)
