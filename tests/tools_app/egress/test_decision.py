"""The pure core: grants from sub-constraints, the stricter trust rule, request parsing."""

from __future__ import annotations

import pytest

from tests.tools_app.net.servers import StaticResolver
from tools_app.egress.decision import (
    EgressDecider,
    EgressGrantError,
    explicit_address_entries,
    grant_from_sub_constraints,
)
from tools_app.egress.http_head import ProxyRequestError, parse_request_head
from tools_app.egress.socks5 import SocksRequestError, check_request_header
from tools_app.net import EgressError


def test_unknown_or_missing_network_mode_fails_closed() -> None:
    with pytest.raises(EgressGrantError, match="unknown"):
        grant_from_sub_constraints({})
    with pytest.raises(EgressGrantError, match="unknown"):
        grant_from_sub_constraints({"network": "wide"})
    grant = grant_from_sub_constraints(
        {"network": "allowlist_only", "allowed_hosts": ["a.test:443"]}, denied_hosts=["b.test"]
    )
    assert grant.grants_network and grant.allowed_hosts == ("a.test:443",)


def test_only_ip_literals_with_a_port_are_trusted_privately() -> None:
    entries = ["127.0.0.1:80", "127.0.0.1", "[::1]:8080", "name.test:80", "*.x.test:443"]
    assert explicit_address_entries(entries) == ("127.0.0.1:80", "[::1]:8080")


def test_public_name_on_the_allowlist_is_pinned_to_its_checked_address() -> None:
    resolver = StaticResolver({"api.example.com": ("93.184.216.34",)})
    grant = grant_from_sub_constraints(
        {"network": "allowlist_only", "allowed_hosts": ["api.example.com:443"]}
    )
    decider = EgressDecider(grant, agent_name="a", resolver=resolver)
    endpoint = decider.decide("API.example.com.", 443)
    assert (endpoint.host, endpoint.pinned_address) == ("api.example.com", "93.184.216.34")
    with pytest.raises(EgressError, match="not on the allowlist"):
        decider.decide("api.example.com", 80)


def test_disguised_loopback_and_metadata_are_refused_in_open_mode() -> None:
    grant = grant_from_sub_constraints({"network": "open", "allowed_hosts": ["127.0.0.1:8080"]})
    decider = EgressDecider(grant, agent_name="a", resolver=StaticResolver({}))
    assert decider.decide("127.0.0.1", 8080).pinned_address == "127.0.0.1"  # control
    for host in ("2130706434", "0x7f000002", "::ffff:127.0.0.2", "169.254.169.254", "[::1]"):
        with pytest.raises(EgressError):
            decider.decide(host, 8080)
    with pytest.raises(EgressError, match="metadata"):
        decider.decide("metadata.google.internal", 80)


def test_proxy_heads_are_parsed_by_h11() -> None:
    tunnel = parse_request_head(
        b"CONNECT [::1]:443 HTTP/1.1\r\nHost: [::1]:443\r\n\r\n", max_head_bytes=65536
    )
    assert (tunnel.host, tunnel.port, tunnel.tunnel) == ("::1", 443, True)
    forward = parse_request_head(
        b"POST http://a.test:8080/p?q=1 HTTP/1.1\r\nHost: a.test:8080\r\n"
        b"Proxy-Authorization: x\r\nContent-Length: 2\r\n\r\n",
        max_head_bytes=65536,
    )
    assert forward.upstream_head.startswith(b"POST /p?q=1 HTTP/1.1\r\n")
    assert b"Proxy-Authorization" not in forward.upstream_head
    assert forward.upstream_head.endswith(b"Connection: close\r\n\r\n")
    for bad in (
        b"GET https://a.test/ HTTP/1.1\r\nHost: a.test\r\n\r\n",
        b"GET http://a.test\\@b.test/ HTTP/1.1\r\nHost: a\r\n\r\n",
        b"NOT HTTP\r\n\r\n",
    ):
        with pytest.raises(ProxyRequestError):
            parse_request_head(bad, max_head_bytes=65536)


def test_socks_header_accepts_connect_only() -> None:
    assert check_request_header(bytes([5, 1, 0, 3])) == 3
    for header, code in (([4, 1, 0, 1], 1), ([5, 3, 0, 1], 7), ([5, 1, 0, 9], 8)):
        with pytest.raises(SocksRequestError) as raised:
            check_request_header(bytes(header))
        assert raised.value.reply_code == code


def test_a_pinned_grant_reaches_only_the_checked_remote_at_its_checked_address() -> None:
    from tools_app.egress.decision import NetworkGrant
    from tools_app.net import CheckedEndpoint

    remote = CheckedEndpoint("git.internal.test", 443, ("10.1.2.3",), trusted=True)
    decider = EgressDecider(
        NetworkGrant(mode="allowlist_only", pinned=remote),
        agent_name="a",
        resolver=StaticResolver({}),  # nothing is resolved again
    )
    assert decider.decide("git.internal.test", 443).pinned_address == "10.1.2.3"
    assert decider.decide("10.1.2.3", 443) is remote  # ssh connects by the address
    for host, port in (("git.internal.test", 22), ("other.test", 443), ("10.1.2.4", 443)):
        with pytest.raises(EgressError, match=r"only git\.internal\.test:443"):
            decider.decide(host, port)


def test_a_tool_allow_list_narrows_the_agent_grant_and_its_deny_list_wins() -> None:
    grant = grant_from_sub_constraints(
        {"network": "open"},
        tool_allowed_hosts=["api.example.com:443", "10.0.0.5:5432"],
        denied_hosts=["api.example.com:443"],
    )
    resolver = StaticResolver({"pypi.org": ("151.101.0.223",)})
    decider = EgressDecider(grant, agent_name="a", resolver=resolver)
    assert decider.decide("10.0.0.5", 5432).pinned_address == "10.0.0.5"  # control
    with pytest.raises(EgressError, match="not on the allowlist"):
        decider.decide("pypi.org", 443)  # open for the agent, not on the tool's list
    with pytest.raises(EgressError, match="deny list"):
        decider.decide("api.example.com", 443)
