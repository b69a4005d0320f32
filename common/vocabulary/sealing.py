"""Sealed secrets: where a granted secret's value is added on the way out, and how.

A grant of a secret to an agent's program (``shell_command``, ``code_runner``, a
bridged stdio server) names destination hosts (``HOST[:PORT]`` or ``*.DOMAIN[:PORT]``)
and one injection: the console's egress proxy adds the value to HTTP(S) requests
to those hosts only; the program itself holds a placeholder.

Injections (``--inject``):
- ``bearer``: ``Authorization: Bearer <value>``;
- ``basic``: ``Authorization: Basic base64(<value>)``, the value being ``user:password``;
- ``basic:<user>``: the same with the value as the password of ``<user>``;
- ``header:<Name>``: ``<Name>: <value>``;
- ``query:<param>``: the request's query parameter ``<param>`` set to the value.
Whatever the program itself sent in that place is replaced.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

from common.vocabulary.network import HostRule, NetworkTargetError, parse_host_rule

INJECTION_KINDS: Final = ("bearer", "basic", "header", "query")
INJECTION_RULE: Final = "bearer, basic, basic:<user>, header:<Name> or query:<param>"
DEFAULT_INJECTION: Final = "bearer"
MAX_SEALED_HOSTS: Final = 32

# An HTTP field name (RFC 9110 token); hop-by-hop and framing fields are refused: the
# value must not change how a request is framed or routed.
_TOKEN: Final = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]{1,64}")
_PARAM: Final = re.compile(r"[A-Za-z0-9._~-]{1,64}")
_USER: Final = re.compile(r"[^:\x00-\x1f\x7f]{1,128}")
REFUSED_HEADERS: Final = frozenset(
    {
        "host",
        "content-length",
        "transfer-encoding",
        "connection",
        "upgrade",
        "te",
        "trailer",
        "keep-alive",
        "proxy-authorization",
        "proxy-connection",
        "expect",
    }
)


class SealingRuleError(ValueError):
    """A grant's hosts or injection cannot be used; the message says what is allowed."""


@dataclass(frozen=True, slots=True)
class Injection:
    """Where a sealed value goes in a request."""

    kind: str
    name: str = ""
    """The header's name (``header``), the query parameter (``query``) or the user
    (``basic:<user>``); empty otherwise."""

    def display(self) -> str:
        return f"{self.kind}:{self.name}" if self.name else self.kind

    @property
    def header(self) -> str:
        """The request header this injection sets (empty for ``query``)."""
        if self.kind == "header":
            return self.name
        return "" if self.kind == "query" else "Authorization"

    def header_value(self, value: str) -> str:
        """What ``header`` carries for ``value``: ``Bearer <value>``, ``Basic`` of
        ``user:value`` (or of ``value`` itself, already ``user:password``), or the value
        as it is (``header:<Name>``); empty for ``query``, which sets no header."""
        if self.kind == "query":
            return ""
        if self.kind == "basic":
            pair = f"{self.name}:{value}" if self.name else value
            return "Basic " + base64.b64encode(pair.encode("utf-8")).decode("ascii")
        return f"Bearer {value}" if self.kind == "bearer" else value


def parse_injection(text: str) -> Injection:
    """``bearer`` | ``basic`` | ``basic:<user>`` | ``header:<Name>`` | ``query:<param>``;
    SealingRuleError says what is wrong and what is allowed."""
    try:
        return _parse_injection(text)
    except SealingRuleError as exc:
        raise SealingRuleError(f"{exc}; allowed: {INJECTION_RULE}") from None


def _parse_injection(text: str) -> Injection:
    raw = (text or DEFAULT_INJECTION).strip()
    kind, _, name = raw.partition(":")
    kind = kind.lower()
    if kind == "bearer" and not name:
        return Injection("bearer")
    if kind == "basic":
        if name and not _USER.fullmatch(name):
            raise SealingRuleError(
                f"injection {raw!r}: the user of basic:<user> has no ':' and no control "
                "characters (at most 128 characters)"
            )
        return Injection("basic", name)
    if kind == "header":
        if not _TOKEN.fullmatch(name):
            raise SealingRuleError(
                f"injection {raw!r}: header:<Name> needs a header name (letters, digits and "
                "!#$%&'*+.^_`|~-, at most 64)"
            )
        if name.lower() in REFUSED_HEADERS:
            raise SealingRuleError(
                f"injection {raw!r}: {name} decides how a request is framed or routed; "
                f"choose another header (refused: {', '.join(sorted(REFUSED_HEADERS))})"
            )
        return Injection("header", name)
    if kind == "query":
        if not _PARAM.fullmatch(name):
            raise SealingRuleError(
                f"injection {raw!r}: query:<param> needs a parameter name (letters, digits "
                "and ._~-, at most 64)"
            )
        return Injection("query", name)
    raise SealingRuleError(f"injection {raw!r} is unknown")


def parse_sealed_hosts(entries: Iterable[str]) -> tuple[HostRule, ...]:
    """The grant's destination rules, canonical; SealingRuleError names a bad entry."""
    rules: list[HostRule] = []
    for entry in entries:
        text = str(entry).strip()
        try:
            rule = parse_host_rule(text)
        except NetworkTargetError as exc:
            raise SealingRuleError(
                f"host {text!r}: {exc}; write HOST, HOST:PORT or *.DOMAIN[:PORT]"
            ) from exc
        if rule not in rules:
            rules.append(rule)
    if len(rules) > MAX_SEALED_HOSTS:
        raise SealingRuleError(f"a grant names at most {MAX_SEALED_HOSTS} hosts")
    return tuple(rules)


def sealed_hosts_display(entries: Iterable[str]) -> tuple[str, ...]:
    """The canonical spelling of each entry (what is stored and shown)."""
    return tuple(rule.display() for rule in parse_sealed_hosts(entries))
