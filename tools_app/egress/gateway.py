"""PURE: what a tool asks of the worker to give its sandbox network: an egress session.

``EgressGateway`` is handed to tools in ``ToolContext.egress``; the worker's
implementation (``tools_app.worker.egress``) adds its resolver, limits and the
audit writer. ``LocalEgressGateway`` is the same without audit (embedding, benches).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from tools_app.egress.decision import EgressDecider, NetworkGrant
from tools_app.egress.limits import ProxyLimits
from tools_app.egress.seal import Seal
from tools_app.egress.session import EgressPort, RecordsSink, egress_session
from tools_app.net import Resolver

if TYPE_CHECKING:
    import ssl

    from tools_app.egress.authority import EgressAuthority


@runtime_checkable
class EgressGateway(Protocol):
    """Opens the egress proxy for one sandboxed command."""

    def session(self, grant: NetworkGrant) -> AbstractContextManager[EgressPort]:
        """Serve ``grant`` until the ``with`` block ends; yield the directory to bind."""
        ...


class LocalEgressGateway:
    """An egress gateway with a fixed resolver, limits and record sink."""

    def __init__(
        self,
        *,
        agent_name: str,
        resolver: Resolver | None = None,
        limits: ProxyLimits | None = None,
        on_records: RecordsSink | None = None,
        max_records: int = 1000,
        seals: tuple[Seal, ...] = (),
        authority: EgressAuthority | None = None,
        upstream_tls: ssl.SSLContext | None = None,
    ) -> None:
        self.agent_name = agent_name
        self.resolver = resolver
        self.limits = limits
        self.on_records = on_records
        self.max_records = max_records
        self.seals = seals
        """The call's sealed secrets (``seal.Seal``); the proxy adds them on the way out."""
        self.authority = authority
        self.upstream_tls = upstream_tls

    @contextmanager
    def session(self, grant: NetworkGrant) -> Iterator[EgressPort]:
        """Serve ``grant`` for the duration of the block."""
        decider = EgressDecider(grant, agent_name=self.agent_name, resolver=self.resolver)
        with egress_session(
            decider, limits=self.limits, on_records=self.on_records, max_records=self.max_records,
            seals=self.seals, authority=self.authority, upstream_tls=self.upstream_tls,
        ) as port:  # fmt: skip
            yield port
