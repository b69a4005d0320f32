"""The network a tool's sandboxed command gets: none, or the call's egress proxy.

Only when the agent's sub-constraints for the tool's category grant network
(``allowlist_only`` or ``open``) does the command get the proxy, and then every
connection is decided by that grant (``tools_app.egress``). An unreadable grant
is refused; a granted call on a worker without a proxy fails with the reason.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from tools_app.builtin.base import RefusalCode, ToolContext, ToolFailedError, ToolRefusedError
from tools_app.egress.decision import EgressGrantError, grant_from_sub_constraints
from tools_app.sandbox.protocol import NetworkPolicy


@contextmanager
def sandbox_network(context: ToolContext) -> Iterator[dict[str, Any]]:
    """Yield the ``SandboxSpec`` keywords (``network``, ``egress_dir``) for this call.

    No ``network`` sub-constraint at all grants nothing: the command runs without network.
    The tool's config may narrow it further: ``allowed_hosts`` (a destination must be
    on it too) and ``denied_hosts`` (refused whatever else allows them).
    """
    if context.sub_constraints.get("network") in (None, "none"):
        yield {"network": NetworkPolicy.NONE}
        return
    try:
        grant = grant_from_sub_constraints(
            context.sub_constraints,
            denied_hosts=_hosts(context.settings, "denied_hosts"),
            tool_allowed_hosts=_hosts(context.settings, "allowed_hosts"),
        )
    except EgressGrantError as exc:
        raise ToolRefusedError(RefusalCode.HOST_NOT_ALLOWED, str(exc)) from exc
    if context.egress is None:
        raise ToolFailedError(
            "the agent may use the network, but this worker runs no egress proxy, so the "
            "sandbox would have none; run the call on a console worker",
            code="EGRESS_UNAVAILABLE",
        )
    with context.egress.session(grant) as port:
        yield {"network": NetworkPolicy.PROXY, "egress_dir": port.directory}


def _hosts(settings: Mapping[str, Any], key: str) -> tuple[str, ...]:
    value = settings.get(key) or ()
    if isinstance(value, str) or not isinstance(value, list | tuple):
        raise ToolRefusedError(
            RefusalCode.INVALID_ARGUMENT, f"the tool's setting {key!r} must be a list of hosts"
        )
    return tuple(str(entry) for entry in value)
