"""The answer of a program a tool runs in the sandbox and reads back as one JSON line
(the browser's driver, the design store, the chart and report renderers).

Its last line starting with ``{`` is the answer. What went wrong is told apart: stopped
for memory, out of time, ended without an answer (with the sandbox's reason and the end
of its standard error), or answered a failure of its own (a refusal where its code is one
the tool refuses with, else a failure).
"""

from __future__ import annotations

import json
from collections.abc import Collection
from typing import Any

from tools_app.builtin.base import RefusalCode, ToolFailedError, ToolRefusedError
from tools_app.sandbox.protocol import KilledBy, SandboxResult


def program_answer(
    result: SandboxResult,
    *,
    what: str,
    timeout: float,
    failed_code: str,
    refusals: Collection[str] = (),
    memory_hint: str = "",
    timeout_exit: int | None = None,
) -> dict[str, Any]:
    """``result``'s answer, its ``duration_ms`` added; failures raised with their reason.

    ``what`` names the program in messages ("the browser"); ``failed_code`` is the code
    of a program that failed without saying how; ``refusals`` the answer codes that are
    refusals; ``memory_hint`` the setting that bounds its memory; ``timeout_exit`` an exit
    status by which the program says it ran out of time.
    """
    lines = [line for line in result.stdout.splitlines() if line.startswith("{")]
    answer: dict[str, Any] = {}
    if lines:
        try:
            answer = json.loads(lines[-1])
        except ValueError:
            answer = {}
    if result.killed_by is KilledBy.MEMORY and not answer.get("ok"):
        hint = f" ({memory_hint})" if memory_hint else ""
        raise ToolFailedError(
            f"{what} needed more memory than it may use{hint}; it was stopped",
            code="MEMORY_LIMIT",
        )
    if (
        result.timed_out
        or (timeout_exit is not None and result.exit_code == timeout_exit)
        or (not answer.get("ok") and answer.get("code") == "TIMED_OUT")
    ):
        raise ToolFailedError(
            str(answer.get("message") or f"{what} did not finish within {timeout:g}s"),
            code="TIMED_OUT",
            timed_out=True,
        )
    if not answer:
        killed = f" (stopped by the sandbox: {result.killed_by.value})" if result.killed_by else ""
        raise ToolFailedError(
            f"{what} ended without an answer{killed}: exit {result.exit_code}; "
            + result.stderr.strip()[-500:],
            code=failed_code,
        )
    if not answer.get("ok"):
        code = str(answer.get("code") or failed_code)
        message = str(answer.get("message") or f"{what} failed")
        if code in refusals:
            raise ToolRefusedError(RefusalCode(code), message)
        raise ToolFailedError(message, code=code)
    answer["duration_ms"] = result.duration_ms
    return answer
