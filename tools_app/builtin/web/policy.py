"""From a tool call's context to the SSRF guard's policy, and from guard errors to refusals.

Shared by the web and git tools. Keys read from ``ToolContext.sub_constraints``
(the agent's effective sub-constraints, as plain data):

- ``network``: ``none`` | ``allowlist_only`` | ``open``. Missing means the worker
  did not say, and the call is refused (fail closed).
- ``allowed_hosts``: host entries (``host[:port]``, ``*.domain``, IP). In
  ``allowlist_only`` mode a destination must be on it; in every mode a host on it
  may resolve to private addresses.
- ``block_private_addresses``: default true; false lets any host resolve privately.

Keys read from ``ToolContext.settings`` (the tool's config section) are named by
the caller: the tool's own allow list (a restriction, and trusted like the
agent's) and deny list (wins over everything).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from tools_app.builtin.base import RefusalCode, ToolContext, ToolRefusedError
from tools_app.net import (
    DnsServerResolver,
    EgressError,
    EgressGuard,
    EgressPolicy,
    Resolver,
)

NETWORK_MODES = ("none", "allowlist_only", "open")


def string_list(settings: Mapping[str, Any], key: str) -> tuple[str, ...]:
    """A list of strings from config; anything else is a configuration error."""
    value = settings.get(key) or ()
    if isinstance(value, str) or not isinstance(value, Iterable):
        raise ToolRefusedError(RefusalCode.INVALID_ARGUMENT, f"config {key!r} must be a list")
    return tuple(str(item) for item in value)


def egress_policy(
    context: ToolContext, *, allow: Iterable[str] = (), deny: Iterable[str] = ()
) -> EgressPolicy:
    """The egress policy for this call: the agent's sub-constraints plus the tool's lists."""
    return egress_policy_of(context.sub_constraints, context.agent_name, allow=allow, deny=deny)


def egress_policy_of(
    sub: Mapping[str, Any],
    agent_name: str,
    *,
    allow: Iterable[str] = (),
    deny: Iterable[str] = (),
) -> EgressPolicy:
    """The egress policy of ``agent_name``'s effective sub-constraints ``sub`` plus a
    tool's lists (the same one a call gets, for judging a destination before it runs)."""
    mode = sub.get("network")
    if mode not in NETWORK_MODES:
        raise ToolRefusedError(
            RefusalCode.HOST_NOT_ALLOWED,
            "the agent's network mode is unknown, so no destination is reachable; ask an "
            "admin to set the agent's network access",
        )
    tool_allow = tuple(allow)
    agent_allow = string_list(sub, "allowed_hosts")
    restrict: list[tuple[str, ...]] = []
    if tool_allow:
        restrict.append(tool_allow)
    if mode == "allowlist_only":
        restrict.append(agent_allow)
    try:
        return EgressPolicy.build(
            deny=deny,
            restrict_to=restrict,
            trusted=(*tool_allow, *agent_allow),
            block_private=bool(sub.get("block_private_addresses", True)),
            network_disabled_reason=(
                f"network access is not permitted for agent {agent_name}"
                if mode == "none"
                else None
            ),
        )
    except EgressError as exc:
        raise refusal(exc) from exc


def resolver_from(settings: Mapping[str, Any]) -> Resolver | None:
    """A ``DnsServerResolver`` when config names ``dns_server`` (an IP; ``dns_port``, 53)."""
    server = settings.get("dns_server")
    if not server:
        return None
    port = settings.get("dns_port", 53)
    if not isinstance(port, int) or not 0 < port < 65536:
        raise ToolRefusedError(RefusalCode.INVALID_ARGUMENT, "config 'dns_port' must be a port")
    return DnsServerResolver(str(server), port)


def build_guard(
    context: ToolContext,
    *,
    allow: Iterable[str] = (),
    deny: Iterable[str] = (),
    resolver: Resolver | None = None,
) -> EgressGuard:
    """The guard for this call; ``resolver`` (tests, embedding) wins over config."""
    return EgressGuard(
        egress_policy(context, allow=allow, deny=deny),
        resolver or resolver_from(context.settings),
    )


def refusal(exc: EgressError) -> ToolRefusedError:
    """The tool-level refusal for a guard error, with the same code and reason."""
    return ToolRefusedError(RefusalCode(exc.code), exc.reason)
