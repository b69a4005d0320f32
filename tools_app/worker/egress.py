"""The worker's egress gateway for one invocation: settings in, audit rows out.

Numbers come from ``SYNTHORG_EGRESS_*`` settings; the resolver is the system's
unless ``SYNTHORG_EGRESS_DNS_SERVER`` names one. Records are written by
``egress_connections_record`` in the worker's thread when the command ends.
"""

from __future__ import annotations

import functools
import ssl
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from django.conf import settings

from common.vocabulary.sealing import parse_injection, parse_sealed_hosts
from secrets_app.broker import GrantedSecret
from tools_app.egress import LocalEgressGateway, ProxyLimits
from tools_app.egress.authority import EgressAuthority, upstream_context
from tools_app.egress.records import ConnectionRecord
from tools_app.egress.seal import Seal
from tools_app.net import DnsServerResolver, Resolver
from tools_app.services.egress_audit import egress_connections_record


def proxy_limits() -> ProxyLimits:
    """The per-connection limits from settings."""
    return ProxyLimits(
        handshake_timeout_seconds=settings.SYNTHORG_EGRESS_HANDSHAKE_TIMEOUT_SECONDS,
        connect_timeout_seconds=settings.SYNTHORG_EGRESS_CONNECT_TIMEOUT_SECONDS,
        idle_timeout_seconds=settings.SYNTHORG_EGRESS_IDLE_TIMEOUT_SECONDS,
        max_connection_seconds=settings.SYNTHORG_EGRESS_MAX_CONNECTION_SECONDS,
        max_bytes_per_connection=settings.SYNTHORG_EGRESS_MAX_BYTES_PER_CONNECTION,
        max_connections=settings.SYNTHORG_EGRESS_MAX_CONNECTIONS,
    )


def proxy_resolver() -> Resolver | None:
    """A DNS server resolver when settings name one; else None (the system resolver)."""
    server = settings.SYNTHORG_EGRESS_DNS_SERVER
    if not server:
        return None
    return DnsServerResolver(server, settings.SYNTHORG_EGRESS_DNS_PORT)


@functools.cache
def egress_authority() -> EgressAuthority:
    """The console's authority for sealed HTTPS (``<var>/egress_ca``), one per process."""
    return EgressAuthority(Path(settings.VAR_DIR) / "egress_ca")


@functools.cache
def _upstream_tls() -> ssl.SSLContext:
    return upstream_context(settings.SYNTHORG_EGRESS_UPSTREAM_CA_FILE or None)


def seals_of(sealed: Iterable[GrantedSecret]) -> tuple[Seal, ...]:
    """The proxy's seals for a call's sealed secrets (grants already checked)."""
    return tuple(
        Seal(
            secret=granted.name,
            value=granted.value,
            hosts=parse_sealed_hosts(granted.hosts),
            injection=parse_injection(granted.inject),
        )
        for granted in sealed
    )


def sealing_for(sealed: Iterable[GrantedSecret]) -> dict[str, Any]:
    """The proxy's ``seals``, ``authority`` and ``upstream_tls`` for these secrets."""
    seals = seals_of(sealed)
    if not seals:
        return {}
    return {"seals": seals, "authority": egress_authority(), "upstream_tls": _upstream_tls()}


def invocation_egress(invocation: Any, sealed: Iterable[GrantedSecret] = ()) -> LocalEgressGateway:
    """The gateway a tool of ``invocation`` opens its sandbox's network through; with
    ``sealed`` secrets, its proxy adds them to requests to their grants' hosts."""

    def record(records: list[ConnectionRecord], unrecorded: int) -> None:
        if records or unrecorded:
            egress_connections_record(invocation=invocation, records=records, unrecorded=unrecorded)

    return LocalEgressGateway(
        agent_name=invocation.agent.name,
        resolver=proxy_resolver(),
        limits=proxy_limits(),
        on_records=record,
        max_records=settings.SYNTHORG_EGRESS_MAX_AUDITED_CONNECTIONS,
        **sealing_for(sealed),
    )
