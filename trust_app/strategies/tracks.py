"""Which tool categories each trust track covers.

A track is named after a tool category, or after one of the seed's broader
names: ``git`` covers version control and ``network`` covers web, browser and
external data. A category that has a track of its own name belongs to that
track. Categories no track covers are not governed by trust: the configured
level alone applies to them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Final

from common.vocabulary.categories import ALL_CATEGORIES, ToolCategory
from trust_app.strategies.base import ALL_TRACKS

TRACK_ALIASES: Final[Mapping[str, frozenset[str]]] = MappingProxyType(
    {
        "git": frozenset({ToolCategory.VERSION_CONTROL.value}),
        "network": frozenset(
            {ToolCategory.WEB.value, ToolCategory.BROWSER.value, ToolCategory.EXTERNAL_DATA.value}
        ),
    }
)


def category_tracks(tracks: Iterable[str]) -> dict[str, str]:
    """Map each governed category to its track."""
    names = tuple(tracks)
    if ALL_TRACKS in names:
        return dict.fromkeys(ALL_CATEGORIES, ALL_TRACKS)
    mapping: dict[str, str] = {}
    for track in names:
        for category in TRACK_ALIASES.get(track, ()):
            mapping.setdefault(category, track)
    for track in names:
        if track in ALL_CATEGORIES:
            mapping[track] = track
    return mapping


def track_categories(track: str, tracks: Iterable[str]) -> frozenset[str]:
    """The categories ``track`` covers among ``tracks``."""
    return frozenset(c for c, t in category_tracks(tracks).items() if t == track)


def earned_by_category(levels: Mapping[str, str]) -> dict[str, str]:
    """The earned level of every governed category, from a track → level map."""
    by_track = category_tracks(levels)
    return {category: levels[track] for category, track in by_track.items()}
