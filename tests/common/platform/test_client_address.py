"""The client address from the peer and trusted proxies' X-Forwarded-For (pure)."""

from __future__ import annotations

import pytest

from common.platform.client_address import (
    TrustedProxiesError,
    client_address,
    forwarded_for_entries,
    parse_address,
    trusted_networks,
)

PROXIES = trusted_networks(["127.0.0.1", "192.0.2.0/24", "::1"])


def _client(peer: str, header: str | None, trusted: object = PROXIES) -> str:
    hops = forwarded_for_entries([header] if header is not None else [])
    return client_address(peer=peer, forwarded_for=hops, trusted=trusted).address  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "header",
    [
        None,
        "203.0.113.7",  # rightmost (the only hop)
        "127.0.0.1, 203.0.113.7",  # a loopback address on the left
        "203.0.113.7, 127.0.0.1",  # a trusted address on the right
        "203.0.113.9, 198.51.100.4, 192.0.2.10, 192.0.2.11",  # many hops
    ],
)
def test_without_trusted_proxies_the_peer_is_the_client_whatever_the_header(
    header: str | None,
) -> None:
    assert _client("198.51.100.20", header, trusted=()) == "198.51.100.20"
    assert _client("127.0.0.1", header, trusted=()) == "127.0.0.1"


@pytest.mark.parametrize("header", ["203.0.113.7", "127.0.0.1", "192.0.2.10, 127.0.0.1"])
def test_a_peer_that_is_not_a_trusted_proxy_is_the_client(header: str) -> None:
    assert _client("198.51.100.20", header) == "198.51.100.20"


@pytest.mark.parametrize(
    ("header", "client"),
    [
        ("203.0.113.7", "203.0.113.7"),
        # The client's own header is on the left of what the proxy appended: ignored.
        ("127.0.0.5, 203.0.113.7", "203.0.113.7"),
        ("203.0.113.9, 198.51.100.4, 192.0.2.10, 192.0.2.11", "198.51.100.4"),
        ("203.0.113.7, 192.0.2.10", "203.0.113.7"),
        # Every hop trusted: the leftmost is the client.
        ("192.0.2.10, 192.0.2.11", "192.0.2.10"),
        # An entry that is not an address ends the walk at the trusted hop that wrote it.
        ("203.0.113.7, unknown", "127.0.0.1"),
        ("unknown, 203.0.113.7", "203.0.113.7"),
        ("203.0.113.7, 192.0.2.10, not-an-address", "127.0.0.1"),
        ("[2001:db8::7]:443", "2001:db8::7"),
        ("203.0.113.7:5123", "203.0.113.7"),
        ("", "127.0.0.1"),
    ],
)
def test_through_trusted_proxies_the_header_is_read_from_the_right(
    header: str, client: str
) -> None:
    assert _client("127.0.0.1", header) == client


def test_header_lines_join_in_order_and_mapped_addresses_are_plain() -> None:
    hops = forwarded_for_entries(["203.0.113.1, 203.0.113.2", "192.0.2.10"])
    assert hops == ["203.0.113.1", "203.0.113.2", "192.0.2.10"]
    found = client_address(peer="::ffff:127.0.0.1", forwarded_for=hops, trusted=PROXIES)
    assert (found.address, found.via_proxy) == ("203.0.113.2", True)
    assert parse_address("::ffff:203.0.113.5") == parse_address("203.0.113.5")
    # Control: without a header the peer stands, and is said to.
    alone = client_address(peer="127.0.0.1", forwarded_for=[], trusted=PROXIES)
    assert (alone.address, alone.via_proxy) == ("127.0.0.1", False)


def test_a_bad_trusted_proxy_is_named() -> None:
    with pytest.raises(TrustedProxiesError, match=r"'proxy\.internal'"):
        trusted_networks(["10.0.0.1", "proxy.internal"])
    assert len(trusted_networks(["10.0.0.1", " 10.1.0.0/16 ", ""])) == 2
