"""PURE: which connections a sandboxed process may open through the egress proxy.

The agent's effective network sub-constraints (``network``: ``none`` |
``allowlist_only`` | ``open``; ``allowed_hosts``; ``block_private_addresses``)
and the tool's deny list become an ``EgressPolicy`` for the SSRF guard, with one
rule stricter than the web tools': only an allowlist entry written as an IP
literal *with a port* lets a private, loopback or link-local address through.
A name on the allowlist is reachable only while it resolves to public addresses,
so a name pointed at 127.0.0.1 (or rebound there after a check) is refused.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from common.vocabulary.network import NetworkTargetError, normalize_host, parse_host_rule
from tools_app.net import CheckedEndpoint, EgressGuard, EgressPolicy, Resolver
from tools_app.net.errors import EgressHostNotAllowedError, EgressUrlInvalidError

NETWORK_MODES: Final = ("none", "allowlist_only", "open")


class EgressGrantError(ValueError):
    """The agent's network sub-constraints cannot be read; nothing is reachable."""


@dataclass(frozen=True, slots=True)
class NetworkGrant:
    """What one call's sandbox may reach, as plain data."""

    mode: str
    allowed_hosts: tuple[str, ...] = ()
    denied_hosts: tuple[str, ...] = ()
    block_private: bool = True
    tool_allowed_hosts: tuple[str, ...] = ()
    """The tool's own allow list from config (``tools.<name>.allowed_hosts``): when set, a
    destination must be on it as well as on the agent's grant."""
    pinned: CheckedEndpoint | None = None
    """When set, the one destination a call may reach, already checked by its tool (git's
    remote): the proxy connects only there, to the address that was checked."""

    @property
    def grants_network(self) -> bool:
        """True when the sandbox gets the proxy at all (mode other than ``none``)."""
        return self.mode != "none"


def _strings(value: Any, what: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str) or not isinstance(value, Iterable):
        raise EgressGrantError(f"{what} must be a list of host entries")
    return tuple(str(item) for item in value)


def grant_from_sub_constraints(
    sub_constraints: Mapping[str, Any],
    *,
    denied_hosts: Iterable[str] = (),
    tool_allowed_hosts: Iterable[str] = (),
) -> NetworkGrant:
    """The grant for a call from the agent's effective sub-constraints (fail closed)."""
    mode = sub_constraints.get("network")
    if mode not in NETWORK_MODES:
        raise EgressGrantError(
            f"the agent's network mode {mode!r} is unknown (allowed: {', '.join(NETWORK_MODES)}); "
            "no destination is reachable until an admin sets it"
        )
    block = sub_constraints.get("block_private_addresses", True)
    if not isinstance(block, bool):
        raise EgressGrantError("block_private_addresses must be true or false")
    return NetworkGrant(
        mode=str(mode),
        allowed_hosts=_strings(sub_constraints.get("allowed_hosts"), "allowed_hosts"),
        denied_hosts=_strings(tuple(denied_hosts), "denied_hosts"),
        block_private=block,
        tool_allowed_hosts=_strings(tuple(tool_allowed_hosts), "allowed_hosts"),
    )


def explicit_address_entries(entries: Iterable[str]) -> tuple[str, ...]:
    """The entries written as an IP literal with a port (the only ones trusted privately)."""
    found: list[str] = []
    for entry in entries:
        try:
            rule = parse_host_rule(entry)
        except NetworkTargetError:
            continue  # the policy build below names the bad entry
        if rule.port is not None and not rule.wildcard and _is_ip(rule.host):
            found.append(entry)
    return tuple(found)


def _is_ip(host: str) -> bool:
    try:
        return normalize_host(f"[{host}]" if ":" in host else host)[1]
    except NetworkTargetError:
        return False


def egress_policy(grant: NetworkGrant, *, agent_name: str) -> EgressPolicy:
    """The SSRF guard's policy for ``grant``."""
    restrict = [grant.allowed_hosts] if grant.mode == "allowlist_only" else []
    if grant.tool_allowed_hosts:
        restrict.append(grant.tool_allowed_hosts)
    return EgressPolicy.build(
        deny=grant.denied_hosts,
        restrict_to=restrict,
        trusted=explicit_address_entries((*grant.allowed_hosts, *grant.tool_allowed_hosts)),
        block_private=grant.block_private,
        network_disabled_reason=(
            f"network access is not permitted for agent {agent_name}"
            if grant.mode == "none"
            else None
        ),
    )


class EgressDecider:
    """Decides one destination at a time; what it returns is what the proxy connects to."""

    def __init__(
        self, grant: NetworkGrant, *, agent_name: str, resolver: Resolver | None = None
    ) -> None:
        self.grant = grant
        self.guard = EgressGuard(egress_policy(grant, agent_name=agent_name), resolver)

    def decide(self, host: str, port: int) -> CheckedEndpoint:
        """Check ``host`` (a name, an IPv4 literal or a bracketed/bare IPv6 literal) and
        ``port``; raise an EgressError saying why not."""
        if not 0 < port < 65536:
            raise EgressUrlInvalidError(f"port {port} is not a TCP port")
        raw = f"[{host}]" if ":" in host and not host.startswith("[") else host
        try:
            normal, is_ip = normalize_host(raw)
        except NetworkTargetError as exc:
            raise EgressUrlInvalidError(str(exc)) from exc
        if not normal:
            raise EgressHostNotAllowedError("the destination names no host")
        pinned = self.grant.pinned
        if pinned is not None:
            if port == pinned.port and (normal == pinned.host or normal in pinned.addresses):
                return pinned
            raise EgressHostNotAllowedError(
                f"this call may reach only {pinned.host}:{pinned.port}, the remote it checked"
            )
        return self.guard.check_host(normal, port, is_ip=is_ip)
