"""Who the client is: the socket's peer, or what trusted proxies say it was.

``X-Forwarded-For`` is a list anyone can write to: a client sends its own header and
each proxy appends the address it received the request from. So only the entries
appended by proxies the console trusts (``SYNTHORG_TRUSTED_PROXIES``) are believed,
read from the right: starting at the socket's peer, each address that is a trusted
proxy hands over to the entry on its left; the first address that is not a trusted
proxy is the client. Without trusted proxies the header is never read, and the peer
is the client. An entry that is not an address ends the walk at the trusted hop that
wrote it: that hop's address is the last one known.

Pure: no Django imports.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

Network = ipaddress.IPv4Network | ipaddress.IPv6Network
Address = ipaddress.IPv4Address | ipaddress.IPv6Address

# Headers by which a proxy says it forwarded a request. Only X-Forwarded-For is read for
# the address; any of them present means the request did not start at its peer.
FORWARDING_HEADERS = ("x-forwarded-for", "forwarded", "x-real-ip")


class TrustedProxiesError(ValueError):
    """An entry of the trusted proxies is not an IP address or network."""


def trusted_networks(entries: Iterable[str]) -> tuple[Network, ...]:
    """Parse addresses and networks (``127.0.0.1``, ``10.1.0.0/16``, ``::1``); a bad
    entry raises TrustedProxiesError naming it."""
    networks: list[Network] = []
    for raw in entries:
        entry = raw.strip()
        if not entry:
            continue
        try:
            networks.append(ipaddress.ip_network(entry, strict=False))
        except ValueError:
            raise TrustedProxiesError(
                f"{entry!r} is not an IP address or network (e.g. 10.0.0.5, 10.0.0.0/24, ::1)"
            ) from None
    return tuple(networks)


def parse_address(text: str) -> Address | None:
    """An address as proxies write it: bare, ``[v6]`` or ``[v6]:port``, ``v4:port``;
    None when it is not one (``unknown``, a host name, garbage)."""
    value = text.strip().strip('"')
    if value.startswith("["):
        value = value[1:].partition("]")[0]
    elif value.count(":") == 1:  # v4:port; a bare v6 address has several colons
        value = value.partition(":")[0]
    try:
        address = ipaddress.ip_address(value)
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def is_trusted(address: Address | None, networks: Sequence[Network]) -> bool:
    return address is not None and any(address in network for network in networks)


def forwarded_for_entries(values: Iterable[str]) -> list[str]:
    """The hops of every X-Forwarded-For header line, in order (lines join with commas)."""
    return [part.strip() for value in values for part in value.split(",") if part.strip()]


@dataclass(frozen=True)
class ClientAddress:
    """The client of one request, and how it was found."""

    address: str
    peer: str
    # A trusted proxy's header named the client (the address is not the peer's).
    via_proxy: bool = False


def client_address(
    *, peer: str, forwarded_for: Sequence[str], trusted: Sequence[Network]
) -> ClientAddress:
    """The client of a request from ``peer`` carrying these X-Forwarded-For hops."""
    current = parse_address(peer)
    if not is_trusted(current, trusted) or not forwarded_for:
        return ClientAddress(address=str(current) if current is not None else peer, peer=peer)
    for entry in reversed(forwarded_for):
        hop = parse_address(entry)
        if hop is None:
            break  # the trusted hop to its right is the last address known
        current = hop
        if not is_trusted(hop, trusted):
            break
    return ClientAddress(address=str(current), peer=peer, via_proxy=current != parse_address(peer))
