"""The sandbox user, workspaces and engine of the sandbox tests serve the egress tests too."""

from tests.tools_app.sandbox.conftest import _sandbox_user, docker_client, workspace

__all__ = ["_sandbox_user", "docker_client", "workspace"]
