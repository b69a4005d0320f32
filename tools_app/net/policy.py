"""Which hosts the guard lets through: deny list, allow lists and trusted hosts.

Entries are written ``host``, ``host:port``, ``[v6]``, an IP literal, or
``*.domain`` — which matches every subdomain of ``domain`` but never ``domain``
itself. Entries are parsed by the decision engine's own rule parser, so an entry
means the same thing in both places.

- ``deny`` wins over everything. An IP-literal deny entry also refuses a name
  that resolves to that address.
- ``restrict_to`` holds allow lists that must *all* match (the tool's configured
  domains and, in ``allowlist_only`` mode, the agent's allowlist). Empty means
  any host that passes the address checks.
- ``trusted`` hosts may resolve to private addresses; that is how internal
  servers are reached. Everything else must resolve only to public addresses.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from common.vocabulary.network import Endpoint, HostRule, NetworkTargetError, parse_host_rule
from tools_app.net.errors import EgressUrlInvalidError


def parse_rules(entries: Iterable[str], *, what: str) -> tuple[HostRule, ...]:
    """Parse host-list entries; a bad entry is a configuration error naming it."""
    rules: list[HostRule] = []
    for entry in entries:
        try:
            rules.append(parse_host_rule(str(entry).strip()))
        except NetworkTargetError as exc:
            raise EgressUrlInvalidError(f"{what} entry {entry!r} is invalid: {exc}") from exc
    return tuple(rules)


def describe(rules: Iterable[HostRule]) -> str:
    """The rules as written, comma separated, or 'none'."""
    return ", ".join(rule.display() for rule in rules) or "none"


@dataclass(frozen=True, slots=True)
class EgressPolicy:
    """Where outbound connections may go. Build it with ``EgressPolicy.build``."""

    deny: tuple[HostRule, ...] = ()
    restrict_to: tuple[tuple[HostRule, ...], ...] = ()
    trusted: tuple[HostRule, ...] = ()
    block_private: bool = True
    network_disabled_reason: str | None = None
    """When set, every destination is refused with this reason (network mode ``none``)."""

    @classmethod
    def build(
        cls,
        *,
        deny: Iterable[str] = (),
        restrict_to: Iterable[Iterable[str]] = (),
        trusted: Iterable[str] = (),
        block_private: bool = True,
        network_disabled_reason: str | None = None,
    ) -> EgressPolicy:
        """An egress policy from host-list entries as written in config."""
        return cls(
            deny=parse_rules(deny, what="deny list"),
            restrict_to=tuple(parse_rules(rules, what="allow list") for rules in restrict_to),
            trusted=parse_rules(trusted, what="allow list"),
            block_private=block_private,
            network_disabled_reason=network_disabled_reason,
        )

    def denied_by(self, endpoint: Endpoint) -> HostRule | None:
        """The deny rule ``endpoint`` (a name or an address) matches, if any."""
        return next((rule for rule in self.deny if _matches(rule, endpoint)), None)

    def missing_allowance(self, endpoint: Endpoint) -> tuple[HostRule, ...] | None:
        """The first allow list ``endpoint`` is not on, or None when it is on all."""
        for rules in self.restrict_to:
            if not any(_matches(rule, endpoint) for rule in rules):
                return rules
        return None

    def is_trusted(self, endpoint: Endpoint) -> bool:
        """True when ``endpoint`` may resolve to private addresses."""
        if not self.block_private:
            return True
        return any(_matches(rule, endpoint) for rule in self.trusted)


def _matches(rule: HostRule, endpoint: Endpoint) -> bool:
    # A port-less endpoint (an address checked after resolution) matches port-less rules.
    return rule.matches(endpoint)
