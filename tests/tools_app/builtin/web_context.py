"""Building a ToolContext for the web tools: real sandbox object, loopback allowlists."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

from tools_app.builtin.base import ToolContext
from tools_app.sandbox.backends.subprocess import SubprocessSandbox
from tools_app.sandbox.protocol import Owner


def web_context(
    *,
    network: str | None = "allowlist_only",
    allowed_hosts: tuple[str, ...] = ("127.0.0.1",),
    settings: Mapping[str, Any] | None = None,
    workspace: Path = Path("/tmp"),  # web tools never touch the workspace
    **sub: Any,
) -> ToolContext:
    """A context whose agent may reach ``allowed_hosts`` (loopback in tests) only."""
    constraints: dict[str, Any] = {"allowed_hosts": list(allowed_hosts), **sub}
    if network is not None:
        constraints["network"] = network
    return ToolContext(
        agent_id="agent-1",
        agent_name="researcher",
        workspace=workspace,
        sandbox=SubprocessSandbox(),
        owner=Owner("agent-1"),
        settings=MappingProxyType(dict(settings or {})),
        sub_constraints=MappingProxyType(constraints),
    )
