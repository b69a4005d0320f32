""" "Approve and remember": does a person's earlier grant cover this call?

A grant names one tool and either the exact arguments (their SHA-256) or an
argument pattern: each listed field must be present and its value (a string,
number or boolean, as text) must match the field's glob. Unlisted fields are
free, so a pattern should name every field that matters.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from approvals_app.policy.matching import argument_value
from trust_app.policy.names import name_key


@dataclass(frozen=True, slots=True)
class GrantView:
    """One live grant, as the policy sees it."""

    id: str
    tool: str
    granted_by: str
    arguments_hash: str | None = None
    pattern: Mapping[str, str] = field(default_factory=dict)


def _scalar_text(value: Any) -> str | None:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float | str):
        return str(value)
    return None


def grant_covers(grant: GrantView, *, tool: str, arguments: Mapping[str, Any], digest: str) -> bool:
    """True when ``grant`` covers a call of ``tool`` with ``arguments`` (hash ``digest``)."""
    if name_key(grant.tool) != name_key(tool):
        return False
    if grant.arguments_hash is not None:
        return grant.arguments_hash == digest
    if not grant.pattern:
        return False  # a grant with neither a hash nor a pattern covers nothing
    for name, glob in grant.pattern.items():
        text = _scalar_text(argument_value(arguments, name))
        if text is None or not fnmatch.fnmatchcase(text, glob):
            return False
    return True


def covering_grant(
    grants: Sequence[GrantView], *, tool: str, arguments: Mapping[str, Any], digest: str
) -> GrantView | None:
    """The first grant covering the call, or None."""
    for grant in grants:
        if grant_covers(grant, tool=tool, arguments=arguments, digest=digest):
            return grant
    return None
