"""PURE: the level that applies to an agent, and why.

The admin's level is a ceiling; trust may hold the agent lower. The level that
applies agent-wide is the lower of the two, where trust's level is the lowest
it holds on any track (per-category strategies may let some categories go
higher: the agent page's matrix shows each).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from trust_app.strategies.base import rank


@dataclass(frozen=True, slots=True)
class EffectiveLevel:
    """What applies (``level``), the admin's ``admin_level``, trust's ``trust_level`` and why."""

    level: str
    admin_level: str
    trust_level: str | None
    lowered: bool
    reason: str
    strategy: str
    tracks: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))


def effective_level(
    *, admin_level: str, strategy: str, applies: bool, earned: Mapping[str, str]
) -> EffectiveLevel:
    """The lower of ``admin_level`` and the lowest level in ``earned`` (track → level)."""
    tracks = MappingProxyType(dict(earned))
    if not applies or not earned:
        if rank(admin_level) < 0:
            why = f"{admin_level} is a custom level: trust does not move it"
        else:
            why = f"trust does not lower it (strategy {strategy}): the admin's level applies"
        return EffectiveLevel(admin_level, admin_level, None, False, why, strategy, tracks)
    ranked = [(rank(level), track, level) for track, level in earned.items() if rank(level) >= 0]
    if not ranked:
        why = "trust holds no ordered level: the admin's level applies"
        return EffectiveLevel(admin_level, admin_level, None, False, why, strategy, tracks)
    lowest_rank, _, lowest = min(ranked)
    at_lowest = sorted(track for r, track, _ in ranked if r == lowest_rank)
    where = "every category" if at_lowest == ["all"] else "track " + ", ".join(at_lowest)
    if lowest_rank < rank(admin_level):
        why = (
            f"trust holds it at {lowest} on {where} ({strategy} strategy), "
            f"below the admin's {admin_level}"
        )
        return EffectiveLevel(lowest, admin_level, lowest, True, why, strategy, tracks)
    why = f"trust has earned {lowest} ({strategy} strategy): the admin's {admin_level} applies"
    return EffectiveLevel(admin_level, admin_level, lowest, False, why, strategy, tracks)
