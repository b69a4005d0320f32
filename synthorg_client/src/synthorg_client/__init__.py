"""Python client for the SynthOrg Console agent API."""

from synthorg_client.client import Client
from synthorg_client.errors import (
    Conflict,
    Forbidden,
    InvalidArgument,
    NotFound,
    PayloadTooLarge,
    RateLimited,
    SynthOrgError,
    Unauthenticated,
    Unavailable,
)
from synthorg_client.models import (
    TERMINAL_STATUSES,
    Approval,
    Call,
    Decision,
    Invocation,
    InvocationError,
    Result,
)

__all__ = [
    "TERMINAL_STATUSES",
    "Approval",
    "Call",
    "Client",
    "Conflict",
    "Decision",
    "Forbidden",
    "InvalidArgument",
    "Invocation",
    "InvocationError",
    "NotFound",
    "PayloadTooLarge",
    "RateLimited",
    "Result",
    "SynthOrgError",
    "Unauthenticated",
    "Unavailable",
]
