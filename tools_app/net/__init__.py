"""PURE: the SSRF guard. Parse strictly, resolve, check every address, pin, re-check redirects.

Entry points: ``EgressPolicy.build`` (what is allowed), ``EgressGuard`` (check a URL
or a host), ``fetch`` (one HTTP exchange through the guard), ``PinnedTransport``
(an httpx transport bound to a checked address). No Django imports.
"""

from tools_app.net.errors import (
    EgressDeadlineError,
    EgressError,
    EgressHostNotAllowedError,
    EgressRedirectLimitError,
    EgressRequestFailedError,
    EgressResolutionError,
    EgressUrlInvalidError,
)
from tools_app.net.fetch import FetchLimits, FetchResponse, fetch, merge_headers
from tools_app.net.guard import CheckedEndpoint, CheckedTarget, EgressGuard
from tools_app.net.policy import EgressPolicy
from tools_app.net.resolver import DnsServerResolver, Resolver, SystemResolver
from tools_app.net.transport import PinnedTransport
from tools_app.net.urls import Target, parse_target

__all__ = [
    "CheckedEndpoint",
    "CheckedTarget",
    "DnsServerResolver",
    "EgressDeadlineError",
    "EgressError",
    "EgressGuard",
    "EgressHostNotAllowedError",
    "EgressPolicy",
    "EgressRedirectLimitError",
    "EgressRequestFailedError",
    "EgressResolutionError",
    "EgressUrlInvalidError",
    "FetchLimits",
    "FetchResponse",
    "PinnedTransport",
    "Resolver",
    "SystemResolver",
    "Target",
    "fetch",
    "merge_headers",
    "parse_target",
]
