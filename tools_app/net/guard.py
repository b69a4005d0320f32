"""The SSRF guard: check a destination and every address it resolves to.

``EgressGuard.check_url`` parses a URL strictly and returns a ``CheckedTarget``
holding the addresses that passed; callers connect to one of those (see
``transport.PinnedTransport``) so a DNS answer that changes after the check
never matters. ``check_host`` does the same for a bare host and port (git).

Order of checks, first refusal wins: network disabled → cloud metadata name →
deny list → allow lists → resolution → per address: metadata address, deny
list, never-routable, and (unless the host is trusted) every blocked range.
"""

from __future__ import annotations

from dataclasses import dataclass

from common.vocabulary.network import Endpoint
from tools_app.net.addresses import (
    METADATA_HOSTS,
    blocked_reason,
    is_metadata_address,
    is_never_routable,
    parse_address,
)
from tools_app.net.errors import EgressHostNotAllowedError
from tools_app.net.policy import EgressPolicy, describe
from tools_app.net.resolver import Resolver, SystemResolver
from tools_app.net.urls import HTTP_SCHEMES, Target, parse_target


@dataclass(frozen=True, slots=True)
class CheckedEndpoint:
    """A host and port that passed the guard, with the addresses that were checked."""

    host: str
    port: int
    addresses: tuple[str, ...]
    trusted: bool

    @property
    def pinned_address(self) -> str:
        """The address connections go to: the first one checked."""
        return self.addresses[0]


@dataclass(frozen=True, slots=True)
class CheckedTarget:
    """A URL that passed the guard."""

    target: Target
    endpoint: CheckedEndpoint


class EgressGuard:
    """Checks destinations against an ``EgressPolicy`` using an injectable resolver."""

    def __init__(self, policy: EgressPolicy, resolver: Resolver | None = None) -> None:
        self.policy = policy
        self.resolver: Resolver = resolver if resolver is not None else SystemResolver()

    def check_url(self, url: str, *, schemes: frozenset[str] = HTTP_SCHEMES) -> CheckedTarget:
        """Parse ``url`` and check its host; raise an EgressError saying why not."""
        target = parse_target(url, schemes=schemes)
        return CheckedTarget(target, self.check_host(target.host, target.port, is_ip=target.is_ip))

    def check_host(self, host: str, port: int, *, is_ip: bool) -> CheckedEndpoint:
        """Check a normalised host (see ``urls.normalise_host``) and resolve it."""
        policy = self.policy
        where = Endpoint(host, port, is_ip).display()
        if policy.network_disabled_reason is not None:
            raise EgressHostNotAllowedError(policy.network_disabled_reason)
        if not is_ip and host in METADATA_HOSTS:
            raise EgressHostNotAllowedError(
                f"{host} is a cloud metadata service; it is never reachable from a tool"
            )
        endpoint = Endpoint(host, port, is_ip)
        rule = policy.denied_by(endpoint)
        if rule is not None:
            raise EgressHostNotAllowedError(f"{where} is on the deny list ({rule.display()})")
        missing = policy.missing_allowance(endpoint)
        if missing is not None:
            raise EgressHostNotAllowedError(
                f"{where} is not on the allowlist (allowed: {describe(missing)}); ask an "
                "admin to add it if the task needs it"
            )
        trusted = policy.is_trusted(endpoint)
        addresses = (host,) if is_ip else self.resolver.resolve(host, port)
        if not addresses:
            raise EgressHostNotAllowedError(f"{host} resolves to no address")
        checked = tuple(self._check_address(host, port, a, trusted) for a in addresses)
        return CheckedEndpoint(host, port, tuple(dict.fromkeys(checked)), trusted)

    def _check_address(self, host: str, port: int, text: str, trusted: bool) -> str:
        try:
            address = parse_address(text)
        except ValueError as exc:
            raise EgressHostNotAllowedError(f"{host} resolved to an unreadable address") from exc
        shown = host if str(address) == host else f"{host} (resolved to {address})"
        if is_metadata_address(address):
            raise EgressHostNotAllowedError(
                f"{shown} is a cloud metadata service address; it is never reachable from a tool"
            )
        rule = self.policy.denied_by(Endpoint(str(address), port, True))
        if rule is not None:
            raise EgressHostNotAllowedError(f"{shown} is on the deny list ({rule.display()})")
        if is_never_routable(address):
            raise EgressHostNotAllowedError(f"{shown} is not a unicast address")
        if not trusted:
            reason = blocked_reason(address)
            if reason is not None:
                raise EgressHostNotAllowedError(
                    f"{shown} is in {reason}; only public addresses are reachable unless "
                    "an admin allowlists the host"
                )
        return str(address)
