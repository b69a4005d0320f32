"""PURE: what agents may name and what the engine's answers say, bounded.

``allowed_container`` judges a name against the allowlist (``restart_action_type``
places a restart by the container's environment before the call is decided);
``container_state`` reads an
inspect answer as the tools' output; ``bounded_log`` keeps the last bytes of a log
stream, terminal escapes and controls dropped (the sanitiser then redacts secrets).
"""

from __future__ import annotations

import collections
import re
from collections.abc import Iterator, Mapping
from typing import Any, Final

from common.config.deployment import AllowedContainer, ContainersSection
from tools_app.builtin.base import RefusalCode
from tools_app.builtin.deployment.pipelines import (
    RULE_NOT_CONFIGURED,
    RULE_TARGET,
    DeployRefusedError,
    action_type,
)
from tools_app.contracts import CallActionTypeError

# CSI and OSC terminal sequences, and the other C0 controls but tab and newline.
_ESCAPES: Final = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b.")
_CONTROLS: Final = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
_STATE_PROPERTIES: Final = {
    "name": {"type": "string"},
    "environment": {"type": "string", "enum": ["staging", "production"]},
    "status": {"type": "string"},
    "running": {"type": "boolean"},
    "health": {"type": ["string", "null"]},
    "exit_code": {"type": ["integer", "null"]},
    "started_at": {"type": ["string", "null"]},
    "finished_at": {"type": ["string", "null"]},
    "restart_count": {"type": "integer"},
    "image": {"type": ["string", "null"]},
}
STATE_SCHEMA: Final = {
    "type": "object",
    "properties": _STATE_PROPERTIES,
    "required": list(_STATE_PROPERTIES),
    "additionalProperties": False,
}
STATE_EXAMPLE: Final = {
    "name": "web-staging",
    "environment": "staging",
    "status": "running",
    "running": True,
    "health": "healthy",
    "exit_code": 0,
    "started_at": "2026-01-05T10:00:00.000000000Z",
    "finished_at": None,
    "restart_count": 0,
    "image": "registry.example.com/web:2.4.1",
}


def allowed_container(section: ContainersSection | None, name: object) -> AllowedContainer:
    """The allowlist entry ``name`` names; DeployRefusedError otherwise."""
    if section is None:
        raise DeployRefusedError(
            RefusalCode.HOST_NOT_ALLOWED,
            "containers are not configured (deployment.containers)",
            RULE_NOT_CONFIGURED,
        )
    entry = section.container(name) if isinstance(name, str) else None
    if entry is None:
        listed = ", ".join(c.name for c in section.allowed)
        raise DeployRefusedError(
            RefusalCode.HOST_NOT_ALLOWED,
            f"container {str(name)[:128]!r} is not one agents may use (allowed: {listed}); "
            "nothing was done",
            RULE_TARGET,
        )
    return entry


def restart_action_type(section: ContainersSection | None, arguments: Mapping[str, Any]) -> str:
    """``deploy:staging`` or ``deploy:production``: the named container's environment;
    ``CallActionTypeError`` (with the allowlist) for a container not on it."""
    try:
        return action_type(allowed_container(section, arguments.get("name")).environment)
    except DeployRefusedError as exc:
        raise CallActionTypeError(exc.reason, exc.rule) from None


def container_state(entry: AllowedContainer, attrs: Mapping[str, Any]) -> dict[str, Any]:
    """The output of ``container_status`` from the engine's inspect answer."""
    state = attrs.get("State") or {}
    health = state.get("Health") or {}
    exit_code = state.get("ExitCode")
    return {
        "name": entry.name,
        "environment": entry.environment,
        "status": str(state.get("Status") or "unknown"),
        "running": bool(state.get("Running")),
        "health": str(health["Status"]) if health.get("Status") else None,
        "exit_code": exit_code if isinstance(exit_code, int) else None,
        "started_at": _moment(state.get("StartedAt")),
        "finished_at": _moment(state.get("FinishedAt")),
        "restart_count": int(attrs.get("RestartCount") or 0),
        "image": str((attrs.get("Config") or {}).get("Image") or "") or None,
    }


def _moment(value: object) -> str | None:
    # The engine writes the zero time for "never".
    if not value or str(value).startswith("0001-01-01"):
        return None
    return str(value)


def bounded_log(chunks: Iterator[bytes], limit: int) -> tuple[str, bool]:
    """The last ``limit`` bytes of the stream as text without terminal controls, and
    whether anything was cut."""
    kept: collections.deque[bytes] = collections.deque()
    size = 0
    cut = False
    for chunk in chunks:
        kept.append(chunk)
        size += len(chunk)
        while size - len(kept[0]) >= limit:
            size -= len(kept.popleft())
            cut = True
    data = b"".join(kept)
    if len(data) > limit:
        data, cut = data[-limit:], True
        # Start on a whole line when one begins within the kept bytes.
        newline = data.find(b"\n")
        if 0 <= newline < len(data) - 1:
            data = data[newline + 1 :]
    text = data.decode("utf-8", errors="replace")
    return _CONTROLS.sub("", _ESCAPES.sub("", text)), cut
