"""One upstream call, from the Celery task's side: it runs in the worker process's warm
pool (``bridge.pool``) while the task waits for it in slices of
``SYNTHORG_BRIDGE_CANCEL_POLL_SECONDS``, looking whether the console's call was
cancelled; a cancel or the tool's timeout cancels the request, which sends
``notifications/cancelled`` upstream.
"""

from __future__ import annotations

import concurrent.futures
import threading
import time
from typing import Any

from django.conf import settings

from common.config.mcp import McpServer
from tools_app.bridge.credentials import ServerSecrets
from tools_app.bridge.pool import bridge_pool, describe_error, pool_key
from tools_app.bridge.results import outcome_from_result
from tools_app.builtin.base import (
    CANCELLED_CODE,
    ToolContext,
    ToolFailedError,
    ToolOutcome,
    ToolRefusedError,
)


def _cancelled(invocation_id: str | None) -> bool:
    """Whether a cancel came for this running call (it stays running until it stops)."""
    if invocation_id is None:
        return False
    from tools_app.models import Invocation

    return Invocation.objects.filter(id=invocation_id, cancel_requested_at__isnull=False).exists()


def call_upstream(
    *, server: McpServer, tool: str, arguments: dict[str, Any], timeout: float,
    context: ToolContext, secrets: ServerSecrets | None = None,
    pinned_hash: str | None = None,
) -> ToolOutcome:  # fmt: skip
    """Run one upstream call for a Celery task; its timeout and cancellation apply.

    With ``pinned_hash``, the server must list ``tool`` with that definition just before
    the call (``BridgePool.call``), else the call is not sent.
    """
    pool = bridge_pool()
    workspace = context.workspace if server.workspace == "agent" else None
    started = time.monotonic()
    sent = threading.Event()
    key = pool_key(server, context.agent_id)
    future = pool.submit(
        pool.call(server, key, workspace, tool, arguments, sent, secrets, pinned_hash)
    )
    deadline: float | None = None
    while True:
        if deadline is None and sent.is_set():
            deadline = time.monotonic() + timeout
        left = (deadline - time.monotonic()) if deadline is not None else timeout
        if left <= 0:
            future.cancel()  # the request is abandoned: notifications/cancelled goes upstream
            raise ToolFailedError(
                f"the MCP server {server.name} did not answer within {timeout:g} s; the call "
                "was cancelled upstream",
                code="timeout",
                timed_out=True,
            )
        try:
            result = future.result(timeout=min(left, settings.SYNTHORG_BRIDGE_CANCEL_POLL_SECONDS))
            break
        except concurrent.futures.TimeoutError:
            if _cancelled(context.invocation_id):
                future.cancel()
                raise ToolFailedError(
                    "the call was cancelled while it ran; the MCP server was told to stop it",
                    code=CANCELLED_CODE,
                ) from None
        except (ToolFailedError, ToolRefusedError):
            raise
        except concurrent.futures.CancelledError:
            raise ToolFailedError("the upstream call was cancelled", code="cancelled") from None
        except Exception as exc:
            raise ToolFailedError(
                f"the MCP server {server.name} failed the call: {describe_error(exc)}",
                code="upstream_error",
            ) from None
    return outcome_from_result(
        result,
        max_bytes=settings.SYNTHORG_BRIDGE_MAX_OUTPUT_BYTES,
        duration_ms=int((time.monotonic() - started) * 1000),
    )
