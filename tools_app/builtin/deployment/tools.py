"""The deployment tools: ci_trigger and ci_status with ``deployment.ci``, the container
tools with ``deployment.containers``."""

from __future__ import annotations

from typing import Final

from tools_app.builtin.deployment.ci import ci_status, ci_trigger
from tools_app.builtin.deployment.containers import (
    container_logs,
    container_restart,
    container_status,
)

TOOLS: Final = (ci_trigger, ci_status, container_status, container_restart, container_logs)
