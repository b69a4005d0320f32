"""Which IP addresses an agent's request may never reach, and why.

Every form an address can hide in is unwrapped first: IPv4-mapped and
IPv4-compatible IPv6, 6to4 (``2002::/16``), NAT64 (``64:ff9b::/96``) and Teredo
(``2001::/32``) carry an IPv4 address that is checked as well.
"""

from __future__ import annotations

import ipaddress
from functools import lru_cache
from typing import Final

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

_V4: Final = ipaddress.IPv4Network
_V6: Final = ipaddress.IPv6Network

BLOCKED_IPV4: Final[tuple[tuple[ipaddress.IPv4Network, str], ...]] = (
    (_V4("0.0.0.0/8"), "the 'this network' range 0.0.0.0/8"),
    (_V4("10.0.0.0/8"), "the private range 10.0.0.0/8 (RFC 1918)"),
    (_V4("100.64.0.0/10"), "the carrier-grade NAT range 100.64.0.0/10"),
    (_V4("127.0.0.0/8"), "the loopback range 127.0.0.0/8"),
    (_V4("169.254.0.0/16"), "the link-local range 169.254.0.0/16"),
    (_V4("172.16.0.0/12"), "the private range 172.16.0.0/12 (RFC 1918)"),
    (_V4("192.0.0.0/24"), "the IETF protocol assignments range 192.0.0.0/24"),
    (_V4("192.0.2.0/24"), "the documentation range 192.0.2.0/24"),
    (_V4("192.88.99.0/24"), "the 6to4 relay anycast range 192.88.99.0/24"),
    (_V4("192.168.0.0/16"), "the private range 192.168.0.0/16 (RFC 1918)"),
    (_V4("198.18.0.0/15"), "the benchmarking range 198.18.0.0/15"),
    (_V4("198.51.100.0/24"), "the documentation range 198.51.100.0/24"),
    (_V4("203.0.113.0/24"), "the documentation range 203.0.113.0/24"),
    (_V4("224.0.0.0/4"), "the multicast range 224.0.0.0/4"),
    (_V4("240.0.0.0/4"), "the reserved range 240.0.0.0/4"),
    (_V4("255.255.255.255/32"), "the broadcast address"),
)
BLOCKED_IPV6: Final[tuple[tuple[ipaddress.IPv6Network, str], ...]] = (
    (_V6("::/128"), "the unspecified address ::"),
    (_V6("::1/128"), "the loopback address ::1"),
    (_V6("64:ff9b:1::/48"), "the local-use NAT64 range 64:ff9b:1::/48"),
    (_V6("100::/64"), "the discard range 100::/64"),
    (_V6("2001::/23"), "the IETF special-purpose range 2001::/23 (Teredo, ORCHID, benchmarking)"),
    (_V6("2001:db8::/32"), "the documentation range 2001:db8::/32"),
    (_V6("3fff::/20"), "the documentation range 3fff::/20"),
    (_V6("fc00::/7"), "the unique-local range fc00::/7"),
    (_V6("fe80::/10"), "the link-local range fe80::/10"),
    (_V6("fec0::/10"), "the deprecated site-local range fec0::/10"),
    (_V6("ff00::/8"), "the multicast range ff00::/8"),
)

# Cloud instance metadata services. Refused even for allowlisted hosts: nothing an
# agent does needs the instance's credentials. 168.63.129.16 (Azure's wire server)
# is a public address, so the ranges above do not cover it.
METADATA_ADDRESSES: Final[frozenset[IPAddress]] = frozenset(
    ipaddress.ip_address(a)
    for a in (
        "169.254.169.254",
        "169.254.170.2",
        "169.254.169.123",
        "100.100.100.200",
        "168.63.129.16",
        "fd00:ec2::254",
        "fd00:ec2::23",
    )
)
METADATA_HOSTS: Final[frozenset[str]] = frozenset(
    {
        "metadata",
        "metadata.google.internal",
        "metadata.goog",
        "metadata.azure.com",
        "metadata.azure.internal",
        "instance-data",
        "instance-data.ec2.internal",
        "metadata.tencentyun.com",
        "metadata.platformequinix.com",
        "metadata.packet.net",
    }
)

_NAT64: Final = _V6("64:ff9b::/96")
_SIX_TO_FOUR: Final = _V6("2002::/16")
_TEREDO: Final = _V6("2001::/32")


def parse_address(text: str) -> IPAddress:
    """The address ``text`` names; IPv4-mapped IPv6 becomes the IPv4 it carries."""
    address = ipaddress.ip_address(text.split("%", 1)[0])
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def embedded_ipv4(address: ipaddress.IPv6Address) -> tuple[tuple[str, ipaddress.IPv4Address], ...]:
    """The IPv4 addresses an IPv6 address carries, each with the mechanism's name."""
    value = int(address)
    found: list[tuple[str, ipaddress.IPv4Address]] = []
    if address.ipv4_mapped is not None:
        found.append(("IPv4-mapped", address.ipv4_mapped))
    elif value >> 32 == 0 and value > 1:
        found.append(("IPv4-compatible", ipaddress.IPv4Address(value & 0xFFFFFFFF)))
    if address in _NAT64:
        found.append(("NAT64", ipaddress.IPv4Address(value & 0xFFFFFFFF)))
    if address.sixtofour is not None:
        found.append(("6to4", address.sixtofour))
    if address.teredo is not None:
        server, client = address.teredo
        found.append(("Teredo server", server))
        found.append(("Teredo client", client))
    return tuple(found)


def _ipv4_reason(address: ipaddress.IPv4Address) -> str | None:
    for network, label in BLOCKED_IPV4:
        if address in network:
            return label
    if not address.is_global:
        return "a non-public range"
    return None


@lru_cache(maxsize=4096)
def blocked_reason(address: IPAddress) -> str | None:
    """Why ``address`` is not public (a phrase naming the range), or None when it is."""
    if isinstance(address, ipaddress.IPv4Address):
        return _ipv4_reason(address)
    for mechanism, inner in embedded_ipv4(address):
        inner_reason = _ipv4_reason(inner)
        if inner_reason is not None:
            return f"a {mechanism} address carrying {inner}, in {inner_reason}"
    for network, label in BLOCKED_IPV6:
        if address in network:
            return label
    if address in _NAT64 or address in _SIX_TO_FOUR:
        return None  # the carried IPv4 address was checked above and is public
    if not address.is_global or address.is_reserved:
        return "a non-public IPv6 range"
    return None


def is_metadata_address(address: IPAddress) -> bool:
    """True for a cloud metadata service address, in any of its IPv6 disguises."""
    if address in METADATA_ADDRESSES:
        return True
    if isinstance(address, ipaddress.IPv6Address):
        return any(inner in METADATA_ADDRESSES for _, inner in embedded_ipv4(address))
    return False


def is_never_routable(address: IPAddress) -> bool:
    """Unspecified, multicast and broadcast: no unicast connection, allowlisted or not."""
    if isinstance(address, ipaddress.IPv4Address):
        return address.is_unspecified or address.is_multicast or address == _BROADCAST
    return address.is_unspecified or address.is_multicast


_BROADCAST: Final = ipaddress.IPv4Address("255.255.255.255")
