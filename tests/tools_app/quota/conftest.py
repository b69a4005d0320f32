"""The built-in tool fixtures (real workspaces and backends), shared with the quota tests."""

from tests.tools_app.builtin.fs_fixtures import (
    ns_backend,
    subprocess_backend,
    workspace,
)
from tests.tools_app.sandbox.conftest import docker_client

__all__ = ["docker_client", "ns_backend", "subprocess_backend", "workspace"]
