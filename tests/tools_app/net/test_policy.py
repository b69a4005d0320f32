"""Allow, deny and trusted lists; every resolved address checked."""

from __future__ import annotations

import pytest

from tests.tools_app.net.servers import StaticResolver
from tools_app.net import (
    EgressGuard,
    EgressHostNotAllowedError,
    EgressPolicy,
    EgressResolutionError,
    EgressUrlInvalidError,
)

PUBLIC = ("93.184.216.34",)


def guard(policy: EgressPolicy, **table: tuple[str, ...]) -> EgressGuard:
    names = {name.replace("_", "."): addresses for name, addresses in table.items()}
    return EgressGuard(policy, StaticResolver(names))


def test_deny_wins_over_allow() -> None:
    policy = EgressPolicy.build(
        deny=["bad.example.com"], restrict_to=[["*.example.com"]], trusted=["*.example.com"]
    )
    g = guard(policy, bad_example_com=PUBLIC, good_example_com=PUBLIC)
    assert g.check_url("https://good.example.com/").endpoint.addresses == PUBLIC
    with pytest.raises(EgressHostNotAllowedError, match="deny list"):
        g.check_url("https://bad.example.com/")


def test_wildcard_matches_subdomains_never_the_domain_itself() -> None:
    policy = EgressPolicy.build(restrict_to=[["*.example.com"]])
    g = guard(policy, a_example_com=PUBLIC, a_b_example_com=PUBLIC, example_com=PUBLIC)
    g.check_url("https://a.example.com/")
    g.check_url("https://a.b.example.com/")
    with pytest.raises(EgressHostNotAllowedError, match="not on the allowlist"):
        g.check_url("https://example.com/")
    with pytest.raises(EgressHostNotAllowedError, match="not on the allowlist"):
        g.check_url("https://evilexample.com/")


def test_allowlist_check_happens_before_resolution() -> None:
    resolver = StaticResolver({"other.example": PUBLIC})
    g = EgressGuard(EgressPolicy.build(restrict_to=[["api.example.com"]]), resolver)
    with pytest.raises(EgressHostNotAllowedError, match=r"allowed: api\.example\.com"):
        g.check_url("https://other.example/")
    assert resolver.asked == []


def test_every_allow_list_must_match() -> None:
    policy = EgressPolicy.build(restrict_to=[["*.example.com"], ["api.example.com"]])
    g = guard(policy, api_example_com=PUBLIC, www_example_com=PUBLIC)
    g.check_url("https://api.example.com/")
    with pytest.raises(EgressHostNotAllowedError):
        g.check_url("https://www.example.com/")


def test_every_resolved_address_is_checked() -> None:
    g = guard(EgressPolicy.build(), mixed_example=("93.184.216.34", "10.0.0.7"))
    with pytest.raises(EgressHostNotAllowedError, match=r"resolved to 10\.0\.0\.7"):
        g.check_url("http://mixed.example/")


def test_names_resolving_to_disguised_private_addresses_are_refused() -> None:
    g = guard(EgressPolicy.build(), sneaky_example=("::ffff:127.0.0.1",), six_example=("fd00::1",))
    with pytest.raises(EgressHostNotAllowedError, match="loopback"):
        g.check_url("http://sneaky.example/")
    with pytest.raises(EgressHostNotAllowedError, match="unique-local"):
        g.check_url("http://six.example/")


def test_trusted_host_may_resolve_to_private_addresses() -> None:
    policy = EgressPolicy.build(trusted=["git.internal"])
    g = guard(policy, git_internal=("10.0.0.5",), other_internal=("10.0.0.5",))
    assert g.check_url("https://git.internal/").endpoint.pinned_address == "10.0.0.5"
    with pytest.raises(EgressHostNotAllowedError, match=r"10\.0\.0\.0/8"):
        g.check_url("https://other.internal/")


def test_userinfo_cannot_borrow_a_trusted_name() -> None:
    policy = EgressPolicy.build(trusted=["git.internal"])
    g = guard(policy, git_internal=("10.0.0.5",), evil_example=("10.0.0.5",))
    with pytest.raises(EgressHostNotAllowedError, match=r"evil\.example"):
        g.check_url("http://git.internal@evil.example/")


def test_ip_deny_entry_refuses_names_resolving_to_it() -> None:
    g = guard(EgressPolicy.build(deny=["93.184.216.34"]), www_example=PUBLIC)
    with pytest.raises(EgressHostNotAllowedError, match="deny list"):
        g.check_url("https://www.example/")


def test_block_private_false_lets_private_addresses_through_but_not_metadata() -> None:
    g = guard(EgressPolicy.build(block_private=False), lan_example=("192.168.1.10",))
    assert g.check_url("http://lan.example/").endpoint.trusted
    with pytest.raises(EgressHostNotAllowedError, match="metadata"):
        g.check_url("http://169.254.169.254/")


def test_network_disabled_refuses_everything() -> None:
    g = guard(EgressPolicy.build(network_disabled_reason="network access is off"))
    with pytest.raises(EgressHostNotAllowedError, match="network access is off"):
        g.check_url("https://example.com/")


def test_unresolvable_host_is_refused_with_host_not_allowed() -> None:
    with pytest.raises(EgressResolutionError) as caught:
        guard(EgressPolicy.build()).check_url("https://nowhere.example/")
    assert caught.value.code == "HOST_NOT_ALLOWED"


def test_bad_list_entry_is_a_configuration_error() -> None:
    with pytest.raises(EgressUrlInvalidError, match="allow list entry"):
        EgressPolicy.build(trusted=["exa mple.com"])
