"""The egress proxy: a sandbox's only way to the network.

A process in the namespace or docker sandbox has no network interface beyond
its own loopback. Its proxy variables point at a forwarder on that loopback,
which relays to a unix socket bound in from the worker, where ``EgressProxy``
serves HTTP CONNECT, plain HTTP and SOCKS5 (TCP CONNECT only). Each connection
is decided by the agent's network grant through the SSRF guard, connected to
the address that was checked, and recorded for one audit row.

PURE parts: ``decision``, ``http_head``, ``socks5``, ``records``, ``limits``,
``inside``. The proxy itself (``server``, ``relay``, ``session``) uses only the
standard library and h11; no Django imports anywhere in this package.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tools_app.egress.decision import (
        EgressDecider,
        EgressGrantError,
        NetworkGrant,
        grant_from_sub_constraints,
    )
    from tools_app.egress.gateway import EgressGateway, LocalEgressGateway
    from tools_app.egress.limits import ProxyLimits
    from tools_app.egress.records import ConnectionRecord, EgressOutcome, EgressProtocol
    from tools_app.egress.server import EgressProxy
    from tools_app.egress.session import EgressPort, egress_serving, egress_session

# Loaded on first use: the sandboxes import ``inside`` (a constant) from code that a
# bare system python runs, where the proxy's dependencies are not installed.
_EXPORTS = {
    "EgressDecider": "decision",
    "EgressGrantError": "decision",
    "NetworkGrant": "decision",
    "grant_from_sub_constraints": "decision",
    "EgressGateway": "gateway",
    "LocalEgressGateway": "gateway",
    "ProxyLimits": "limits",
    "ConnectionRecord": "records",
    "EgressOutcome": "records",
    "EgressProtocol": "records",
    "EgressProxy": "server",
    "EgressPort": "session",
    "egress_serving": "session",
    "egress_session": "session",
}


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


__all__ = [
    "ConnectionRecord",
    "EgressDecider",
    "EgressGateway",
    "EgressGrantError",
    "EgressOutcome",
    "EgressPort",
    "EgressProtocol",
    "EgressProxy",
    "LocalEgressGateway",
    "NetworkGrant",
    "ProxyLimits",
    "egress_serving",
    "egress_session",
    "grant_from_sub_constraints",
]
