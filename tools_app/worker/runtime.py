"""What a worker process holds for its lifetime: the sandbox backends, built once."""

from __future__ import annotations

import functools

from common.settings_config import synthorg_config
from tools_app.sandbox.factory import SandboxBackends, build_sandbox_backends


@functools.cache
def sandbox_backends() -> SandboxBackends:
    return build_sandbox_backends(synthorg_config().sandboxing)
