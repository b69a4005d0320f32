""" "Approve and remember": does a person's earlier grant cover this call?

A grant names one tool and either the exact arguments (their SHA-256) or an
argument pattern: each listed field must be present and its value (a string,
number or boolean, as text; a path, URL or host normalised as the permission
policy reads it) must match the field's glob. Unlisted fields are
free, so a pattern should name every field that matters.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from approvals_app.policy.matching import CallFacts
from approvals_app.policy.readings import argument_value, role_readings
from common.vocabulary.names import name_key


@dataclass(frozen=True, slots=True)
class GrantView:
    """One live grant, as the policy sees it."""

    id: str
    tool: str
    granted_by: str
    arguments_hash: str | None = None
    pattern: Mapping[str, str] = field(default_factory=dict)


def grant_covers(grant: GrantView, *, facts: CallFacts, digest: str) -> bool:
    """True when ``grant`` covers the call ``facts`` describes (arguments hash ``digest``).

    A pattern is tested on the normalised readings of each argument, by the role
    the tool contract gives it (paths relative to the workspace, URLs and hosts
    canonical), and every reading must match: ``notes/*`` never covers
    ``notes/../.git/config``. A value that cannot be read is not covered.
    """
    if name_key(grant.tool) != name_key(facts.tool):
        return False
    if grant.arguments_hash is not None:
        return grant.arguments_hash == digest
    if not grant.pattern:
        return False  # a grant with neither a hash nor a pattern covers nothing
    for name, glob in grant.pattern.items():
        role = facts.argument_roles.get(name.split(".", 1)[0])
        value = argument_value(facts.arguments, name)
        readings = role_readings(value, role, facts.workspace_roots)
        if not readings or not all(fnmatch.fnmatchcase(r, glob) for r in readings):
            return False
    return True


def covering_grant(
    grants: Sequence[GrantView], *, facts: CallFacts, digest: str
) -> GrantView | None:
    """The first grant covering the call, or None."""
    for grant in grants:
        if grant_covers(grant, facts=facts, digest=digest):
            return grant
    return None
