"""What an "approve and remember" pattern would have covered, shown before it is granted.

A person who approves a call and remembers a pattern for a while lets every call the
pattern covers through without anyone. Before they grant it they see the agent's recent
calls of the tool that the pattern covers, read exactly as the grant would read them
(``grant_covers``: paths normalised against the workspace, URLs and hosts canonical), by
what became of each: went ahead without a person, asked a person, or was refused. The
count answers "what am I letting through?" with the agent's own recent behaviour.

Also a starting pattern for the person to edit: each path's folder, each URL's origin
and each host as it is; other arguments are left free or named exactly by the person.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from approvals_app.policy.grants import GrantView, grant_covers
from approvals_app.policy.matching import CallFacts
from approvals_app.policy.readings import argument_value, role_readings
from trust_app.policy.tool_view import ArgumentRole

RAN: Final = "ran"  # went ahead without a person
ASKED: Final = "asked"  # waited for a person (whatever they decided)
REFUSED: Final = "refused"  # refused by the policy before anyone was asked
FATES: Final = (RAN, ASKED, REFUSED)


@dataclass(frozen=True, slots=True)
class PastCall:
    """One earlier call of the agent, as a grant would read it, and what became of it."""

    id: str
    facts: CallFacts
    digest: str
    fate: str
    when: str  # ISO time, for the example line


@dataclass(frozen=True, slots=True)
class Reach:
    """The calls a pattern covers among those looked at."""

    looked_at: int
    covered: int
    by_fate: Mapping[str, int]
    examples: tuple[PastCall, ...]
    capped: bool  # more calls were in the window than were looked at

    @property
    def ran(self) -> int:
        return self.by_fate.get(RAN, 0)

    @property
    def asked(self) -> int:
        return self.by_fate.get(ASKED, 0)

    @property
    def refused(self) -> int:
        return self.by_fate.get(REFUSED, 0)


def pattern_reach(
    pattern: Mapping[str, str],
    *,
    tool: str,
    calls: Sequence[PastCall],
    capped: bool = False,
    examples: int = 5,
) -> Reach:
    """Which of ``calls`` a grant of ``pattern`` for ``tool`` covers, counted by fate."""
    grant = GrantView(id="", tool=tool, granted_by="", pattern=dict(pattern))
    covered = [c for c in calls if grant_covers(grant, facts=c.facts, digest=c.digest)]
    by_fate = {fate: sum(1 for c in covered if c.fate == fate) for fate in FATES}
    return Reach(
        looked_at=len(calls),
        covered=len(covered),
        by_fate=by_fate,
        examples=tuple(covered[:examples]),
        capped=capped,
    )


def suggested_pattern(facts: CallFacts) -> dict[str, str]:
    """A pattern to start from for ``facts``'s call (never one that covers everything)."""
    suggested: dict[str, str] = {}
    for name, role in facts.argument_roles.items():
        readings = role_readings(argument_value(facts.arguments, name), role, facts.workspace_roots)
        if not readings or len(readings) != 1:
            continue
        (reading,) = readings
        glob = _suggested_glob(reading, role)
        if glob:
            suggested[name] = glob
    return suggested


def _suggested_glob(reading: str, role: str) -> str:
    if role == ArgumentRole.PATH:
        folder = posixpath.dirname(reading)
        if folder and folder not in (".", "/"):
            return f"{folder}/*"
        extension = posixpath.splitext(reading)[1]
        return f"*{extension}" if extension else reading
    if role == ArgumentRole.URL:
        scheme, _, rest = reading.partition("://")
        host = rest.split("/", 1)[0]
        return f"{scheme}://{host}/*" if scheme and host else ""
    if role == ArgumentRole.HOST:
        return reading
    return ""


def pattern_text(pattern: Mapping[str, str]) -> str:
    """The pattern as a person reads it: ``path matches q/*, url matches https://h/*``."""
    return ", ".join(f"{name} matches {glob}" for name, glob in sorted(pattern.items()))
