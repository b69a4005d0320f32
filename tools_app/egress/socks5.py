"""PURE: the SOCKS5 handshake (RFC 1928), TCP CONNECT only, no authentication.

No maintained Python library parses the server side of SOCKS5, and the part
needed is small: a greeting, one request, one reply. BIND and UDP ASSOCIATE are
refused (no raw UDP leaves a sandbox), and so is any authentication method.
"""

from __future__ import annotations

import ipaddress
from typing import Final

VERSION: Final = 5
NO_AUTH: Final = 0x00
NO_ACCEPTABLE_METHOD: Final = 0xFF
CMD_CONNECT: Final = 1
ATYP_IPV4: Final = 1
ATYP_DOMAIN: Final = 3
ATYP_IPV6: Final = 4

REP_SUCCEEDED: Final = 0x00
REP_GENERAL_FAILURE: Final = 0x01
REP_NOT_ALLOWED: Final = 0x02
REP_HOST_UNREACHABLE: Final = 0x04
REP_CONNECTION_REFUSED: Final = 0x05
REP_TTL_EXPIRED: Final = 0x06
REP_COMMAND_NOT_SUPPORTED: Final = 0x07
REP_ADDRESS_NOT_SUPPORTED: Final = 0x08

_COMMANDS: Final = {1: "CONNECT", 2: "BIND", 3: "UDP ASSOCIATE"}


class SocksRequestError(ValueError):
    """The client's SOCKS5 message is not one the proxy serves; ``reply_code`` says how."""

    def __init__(self, message: str, reply_code: int = REP_GENERAL_FAILURE) -> None:
        super().__init__(message)
        self.reply_code = reply_code


def choose_method(greeting_methods: bytes) -> int:
    """The method the proxy answers a greeting with (no authentication, or none acceptable)."""
    return NO_AUTH if NO_AUTH in greeting_methods else NO_ACCEPTABLE_METHOD


def check_request_header(header: bytes) -> int:
    """Check ``VER CMD RSV ATYP``; return ATYP, or raise with the reply to send."""
    version, command, _reserved, atyp = header
    if version != VERSION:
        raise SocksRequestError(f"SOCKS version {version} is not served (only 5)")
    if command != CMD_CONNECT:
        name = _COMMANDS.get(command, f"command {command}")
        raise SocksRequestError(
            f"SOCKS {name} is not served: only TCP CONNECT leaves a sandbox",
            REP_COMMAND_NOT_SUPPORTED,
        )
    if atyp not in (ATYP_IPV4, ATYP_DOMAIN, ATYP_IPV6):
        raise SocksRequestError(f"SOCKS address type {atyp} is unknown", REP_ADDRESS_NOT_SUPPORTED)
    return atyp


def address_length(atyp: int, first: int) -> int:
    """Bytes of DST.ADDR still to read after its first byte (``first``)."""
    if atyp == ATYP_IPV4:
        return 3
    if atyp == ATYP_IPV6:
        return 15
    if first == 0:
        raise SocksRequestError("the SOCKS request names an empty host")
    return first


def decode_address(atyp: int, raw: bytes) -> str:
    """DST.ADDR as text: a dotted quad, an IPv6 literal, or the domain name as sent."""
    if atyp == ATYP_IPV4:
        return str(ipaddress.IPv4Address(raw))
    if atyp == ATYP_IPV6:
        return str(ipaddress.IPv6Address(raw))
    try:
        return raw[1:].decode("ascii")
    except UnicodeDecodeError as exc:
        raise SocksRequestError("the SOCKS host name is not ASCII (send IDNA)") from exc


def reply(code: int) -> bytes:
    """A reply with an all-zero bound address (the sandbox never needs it)."""
    return bytes([VERSION, code, 0, ATYP_IPV4, 0, 0, 0, 0, 0, 0])
