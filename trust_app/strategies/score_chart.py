"""PURE: the geometry of the trust score chart (axes, ticks, points, labels).

The template draws it as inline SVG; the same points are listed in a table
beside it, so the chart has a text alternative.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Final

WIDTH: Final = 560
HEIGHT: Final = 200
# Room for the y labels on the left and the x labels below.
LEFT, RIGHT, TOP, BOTTOM = 44, 12, 12, 36
Y_TICKS: Final = (0.0, 0.25, 0.5, 0.75, 1.0)
X_TICKS: Final = 4


@dataclass(frozen=True, slots=True)
class Tick:
    position: float
    label: str


@dataclass(frozen=True, slots=True)
class ChartPoint:
    x: float
    y: float
    at: datetime
    score: float


@dataclass(frozen=True, slots=True)
class ScoreChart:
    """Everything the SVG needs, in its own coordinates."""

    width: int
    height: int
    left: int
    top: int
    right: float
    bottom: float
    y_ticks: tuple[Tick, ...]
    x_ticks: tuple[Tick, ...]
    points: tuple[ChartPoint, ...]
    polyline: str
    summary: str
    # Where the labels go: y tick labels, x tick labels, the x title, the last value.
    y_label_x: float
    x_label_y: float
    x_title_y: float
    value_x: float
    value_y: float


def _time_label(at: datetime, span_seconds: float) -> str:
    return at.strftime("%H:%M" if span_seconds < 86_400 else "%m-%d %H:%M")


def score_chart(samples: Sequence[tuple[datetime, float]]) -> ScoreChart | None:
    """The chart of ``samples`` (time, score 0–1, oldest first); None for fewer than two."""
    if len(samples) < 2:
        return None
    first, last = samples[0][0], samples[-1][0]
    span = (last - first).total_seconds() or 1.0
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    right, bottom = LEFT + plot_w, TOP + plot_h

    def x_of(at: datetime) -> float:
        return round(LEFT + (at - first).total_seconds() / span * plot_w, 1)

    def y_of(score: float) -> float:
        return round(bottom - max(0.0, min(1.0, score)) * plot_h, 1)

    points = tuple(ChartPoint(x_of(at), y_of(score), at, score) for at, score in samples)
    y_ticks = tuple(Tick(y_of(value), f"{value:.2f}") for value in Y_TICKS)
    x_ticks = tuple(
        Tick(
            round(LEFT + plot_w * i / (X_TICKS - 1), 1),
            _time_label(first + (last - first) * i / (X_TICKS - 1), span),
        )
        for i in range(X_TICKS)
    )
    summary = (
        f"Trust score over time, {len(points)} points: {samples[0][1]:.2f} at "
        f"{first:%Y-%m-%d %H:%M} to {samples[-1][1]:.2f} at {last:%Y-%m-%d %H:%M} UTC"
    )
    return ScoreChart(
        width=WIDTH,
        height=HEIGHT,
        left=LEFT,
        top=TOP,
        right=right,
        bottom=bottom,
        y_ticks=y_ticks,
        x_ticks=x_ticks,
        points=points,
        polyline=" ".join(f"{p.x},{p.y}" for p in points),
        summary=summary,
        y_label_x=LEFT - 6,
        x_label_y=bottom + 16,
        x_title_y=HEIGHT - 2,
        value_x=points[-1].x - 4,
        value_y=max(TOP + 8, points[-1].y - 8),
    )
