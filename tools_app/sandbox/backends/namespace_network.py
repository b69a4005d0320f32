"""A proxied namespace call's network, made by the spawn server before bubblewrap runs.

The plan the spawn server's child follows (``spawn/inside/loopback.py``): a network
namespace of the call's own, its loopback up, the egress relay listening on it. Only a
worker running as root (one that switches to the sandbox user) may make the namespace;
otherwise, and once a worker has been refused the right, the forwarder starts inside
the sandbox, as the docker backend and a bridged MCP server do.
"""

from __future__ import annotations

import logging

from tools_app.egress.mount import FORWARD_PORT, FORWARDER_SOURCE, SOCKET_NAME
from tools_app.sandbox.linux.identity import SandboxIdentity
from tools_app.sandbox.protocol import NetworkPolicy, SandboxSpec

log = logging.getLogger("synthorg.sandbox")


class NetworkNamespaces:
    """Whether this worker process may make a network namespace before bubblewrap.

    A root worker may, unless it lacks CAP_SYS_ADMIN (a worker in a container, whose
    bubblewrap makes its namespaces from an unprivileged user namespace): the first
    refusal is remembered, said once in the log, and every later proxied call starts
    the forwarder inside its sandbox instead.
    """

    def __init__(self) -> None:
        self.refused = ""

    def refuse(self, reason: str) -> None:
        if not self.refused:
            self.refused = reason
            log.warning("egress relay inside the sandbox from now on: %s", reason)


network_namespaces = NetworkNamespaces()


def loopback_plan(spec: SandboxSpec, identity: SandboxIdentity) -> dict[str, object] | None:
    """What the spawn server makes for a proxied ``spec`` before bubblewrap, or None."""
    if not identity.switch or network_namespaces.refused:
        return None
    if spec.network is not NetworkPolicy.PROXY or spec.egress_dir is None:
        return None
    return {
        "socket": str(spec.egress_dir / SOCKET_NAME),
        "port": FORWARD_PORT,
        "relay": str(FORWARDER_SOURCE),
    }
