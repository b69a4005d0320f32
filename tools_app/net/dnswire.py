"""The little of the DNS wire format (RFC 1035) needed to ask for A and AAAA records.

Used by ``DnsServerResolver`` to query one configured server directly, and by
tests to answer such queries. Names are ASCII (IDNA is applied before).
"""

from __future__ import annotations

import ipaddress
import struct
from dataclasses import dataclass
from typing import Final

TYPE_A: Final = 1
TYPE_AAAA: Final = 28
CLASS_IN: Final = 1
RCODE_NXDOMAIN: Final = 3
_MAX_POINTERS: Final = 32


class DnsWireError(ValueError):
    """A DNS message that cannot be read."""


@dataclass(frozen=True, slots=True)
class DnsQuestion:
    """One question: the query id, name and record type."""

    query_id: int
    name: str
    qtype: int


def encode_name(name: str) -> bytes:
    """A domain name as length-prefixed labels."""
    out = bytearray()
    for label in name.rstrip(".").split("."):
        raw = label.encode("ascii")
        if not 0 < len(raw) < 64:
            raise DnsWireError(f"label {label!r} must be 1 to 63 bytes")
        out += bytes([len(raw)]) + raw
    return bytes(out + b"\x00")


def encode_query(query_id: int, name: str, qtype: int) -> bytes:
    """A recursive query for ``name``/``qtype``."""
    header = struct.pack("!HHHHHH", query_id, 0x0100, 1, 0, 0, 0)
    return header + encode_name(name) + struct.pack("!HH", qtype, CLASS_IN)


def _read_name(message: bytes, offset: int) -> tuple[str, int]:
    labels: list[str] = []
    end: int | None = None
    for _ in range(_MAX_POINTERS):
        if offset >= len(message):
            raise DnsWireError("name runs past the end of the message")
        length = message[offset]
        if length & 0xC0 == 0xC0:
            if offset + 1 >= len(message):
                raise DnsWireError("truncated compression pointer")
            end = offset + 2 if end is None else end
            offset = ((length & 0x3F) << 8) | message[offset + 1]
            continue
        if length == 0:
            return ".".join(labels), (offset + 1 if end is None else end)
        labels.append(message[offset + 1 : offset + 1 + length].decode("ascii", "replace"))
        offset += 1 + length
    raise DnsWireError("too many compression pointers")


def decode_question(message: bytes) -> DnsQuestion:
    """The first question of a query."""
    if len(message) < 12:
        raise DnsWireError("message shorter than a DNS header")
    query_id, _flags, qdcount = struct.unpack("!HHH", message[:6])
    if qdcount < 1:
        raise DnsWireError("query has no question")
    name, offset = _read_name(message, 12)
    if offset + 4 > len(message):
        raise DnsWireError("truncated question")
    qtype, _qclass = struct.unpack("!HH", message[offset : offset + 4])
    return DnsQuestion(query_id, name.lower(), qtype)


def encode_response(
    question: DnsQuestion, addresses: list[str], *, nxdomain: bool = False
) -> bytes:
    """An answer to ``question`` with the addresses of its type (others are left out)."""
    wanted = 4 if question.qtype == TYPE_A else 6
    records = [ipaddress.ip_address(a) for a in addresses]
    records = [r for r in records if r.version == wanted]
    flags = 0x8180 | (RCODE_NXDOMAIN if nxdomain else 0)
    out = bytearray(struct.pack("!HHHHHH", question.query_id, flags, 1, len(records), 0, 0))
    out += encode_name(question.name) + struct.pack("!HH", question.qtype, CLASS_IN)
    for record in records:
        out += b"\xc0\x0c" + struct.pack("!HHIH", question.qtype, CLASS_IN, 0, len(record.packed))
        out += record.packed
    return bytes(out)


def decode_addresses(message: bytes, query_id: int) -> tuple[int, list[str]]:
    """``(rcode, addresses)`` from a response to query ``query_id``; CNAMEs are skipped."""
    if len(message) < 12:
        raise DnsWireError("response shorter than a DNS header")
    rid, flags, qdcount, ancount = struct.unpack("!HHHH", message[:8])
    if rid != query_id or not flags & 0x8000:
        raise DnsWireError("response does not answer this query")
    offset = 12
    for _ in range(qdcount):
        _, offset = _read_name(message, offset)
        offset += 4
    found: list[str] = []
    for _ in range(ancount):
        _, offset = _read_name(message, offset)
        if offset + 10 > len(message):
            raise DnsWireError("truncated answer")
        rtype, _rclass, _ttl, length = struct.unpack("!HHIH", message[offset : offset + 10])
        offset += 10
        data = message[offset : offset + length]
        offset += length
        if (rtype, length) in ((TYPE_A, 4), (TYPE_AAAA, 16)):
            found.append(str(ipaddress.ip_address(data)))
    return flags & 0x000F, found
