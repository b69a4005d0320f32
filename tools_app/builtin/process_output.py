"""PURE: the output schema shared by tools that run one process and report its streams."""

from __future__ import annotations

from types import MappingProxyType
from typing import Any, Final

PROCESS_OUTPUT_SCHEMA: Final[MappingProxyType[str, Any]] = MappingProxyType(
    {
        "type": "object",
        "properties": {
            "exit_code": {"type": ["integer", "null"]},
            "stdout": {"type": "string"},
            "stderr": {"type": "string"},
            "stdout_truncated": {"type": "boolean"},
            "stderr_truncated": {"type": "boolean"},
            "timed_out": {"type": "boolean"},
        },
        "required": ["exit_code", "stdout", "stderr", "timed_out"],
        "additionalProperties": False,
    }
)
