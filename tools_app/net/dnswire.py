"""DNS messages for A and AAAA questions, built and read with dnspython.

Used by ``DnsServerResolver`` to query one configured server directly, and by
tests to answer such queries. Names are ASCII (IDNA is applied before).
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import Final

import dns.exception
import dns.flags
import dns.message
import dns.name
import dns.rcode
import dns.rdataclass
import dns.rdatatype
import dns.rrset

TYPE_A: Final = int(dns.rdatatype.A)
TYPE_AAAA: Final = int(dns.rdatatype.AAAA)
CLASS_IN: Final = int(dns.rdataclass.IN)
RCODE_NXDOMAIN: Final = int(dns.rcode.NXDOMAIN)


class DnsWireError(ValueError):
    """A DNS message that cannot be read."""


@dataclass(frozen=True, slots=True)
class DnsQuestion:
    """One question: the query id, name and record type."""

    query_id: int
    name: str
    qtype: int


def _name(name: str) -> dns.name.Name:
    try:
        return dns.name.from_text(name.rstrip(".") + ".")
    except (dns.exception.DNSException, UnicodeError) as exc:
        raise DnsWireError(f"name {name!r} cannot be sent ({exc})") from exc


def _parse(message: bytes) -> dns.message.Message:
    try:
        return dns.message.from_wire(message)
    except (dns.exception.DNSException, ValueError, UnicodeError) as exc:
        raise DnsWireError(f"unreadable DNS message ({exc})") from exc


def encode_name(name: str) -> bytes:
    """A domain name as length-prefixed labels."""
    return _name(name).to_wire() or b""


def query_message(query_id: int, name: str, qtype: int) -> dns.message.Message:
    """A recursive query for ``name``/``qtype`` (no EDNS), as a message."""
    query = dns.message.make_query(_name(name), dns.rdatatype.RdataType.make(qtype), use_edns=False)
    query.id = query_id
    return query


def encode_query(query_id: int, name: str, qtype: int) -> bytes:
    """A recursive query for ``name``/``qtype``."""
    return query_message(query_id, name, qtype).to_wire()


def decode_question(message: bytes) -> DnsQuestion:
    """The first question of a query."""
    parsed = _parse(message)
    if not parsed.question:
        raise DnsWireError("query has no question")
    first = parsed.question[0]
    name = first.name.to_text(omit_final_dot=True)
    return DnsQuestion(parsed.id, name.lower(), int(first.rdtype))


def encode_response(
    question: DnsQuestion, addresses: list[str], *, nxdomain: bool = False
) -> bytes:
    """An answer to ``question`` with the addresses of its type (others are left out)."""
    wanted = 4 if question.qtype == TYPE_A else 6
    records = [ipaddress.ip_address(a) for a in addresses]
    texts = [str(r) for r in records if r.version == wanted]
    response = dns.message.Message(id=question.query_id)
    response.flags = dns.flags.QR | dns.flags.RD | dns.flags.RA
    response.set_rcode(dns.rcode.NXDOMAIN if nxdomain else dns.rcode.NOERROR)
    name = _name(question.name)
    rdtype = dns.rdatatype.RdataType.make(question.qtype)
    response.question = [dns.rrset.RRset(name, dns.rdataclass.IN, rdtype)]
    if texts and question.qtype in (TYPE_A, TYPE_AAAA):
        response.answer = [dns.rrset.from_text_list(name, 0, "IN", rdtype, texts)]
    # In the order given: the first address is the one a client connects to.
    return response.to_wire(want_shuffle=False)


def addresses_of(response: dns.message.Message) -> tuple[int, list[str]]:
    """``(rcode, addresses)`` of a response; CNAMEs and other records are skipped."""
    found = [
        str(rdata)
        for rrset in response.answer
        if rrset.rdtype in (dns.rdatatype.A, dns.rdatatype.AAAA)
        for rdata in rrset
    ]
    return int(response.rcode()), found


def decode_addresses(message: bytes, query_id: int) -> tuple[int, list[str]]:
    """``(rcode, addresses)`` from a response to query ``query_id``; CNAMEs are skipped."""
    parsed = _parse(message)
    if parsed.id != query_id or not parsed.flags & dns.flags.QR:
        raise DnsWireError("response does not answer this query")
    return addresses_of(parsed)
