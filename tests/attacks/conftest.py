"""Attack tests: the sandbox walls and the console's private state, tried from outside."""

from __future__ import annotations

from tests.tools_app.api.conftest import make_agent

__all__ = ["make_agent"]
