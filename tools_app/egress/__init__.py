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
from tools_app.egress.session import EgressPort, egress_session

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
    "egress_session",
    "grant_from_sub_constraints",
]
