"""Milestone-style criteria shared by the per-category and milestone strategies."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from trust_app.strategies.evidence import Evidence, days_between


@dataclass(frozen=True, slots=True)
class Criteria:
    """What an agent must show to move up one level; None means not asked."""

    tasks_completed: int | None = None
    quality_score_min: float | None = None
    time_active_days: int | None = None
    clean_history_days: int | None = None


@dataclass(frozen=True, slots=True)
class CriteriaResult:
    """Whether the criteria hold, how close the agent is (0–1), and why."""

    met: bool
    progress: float
    reasons: tuple[str, ...]


def _ratio(have: float, need: float) -> float:
    return 1.0 if need <= 0 else max(0.0, min(1.0, have / need))


def check_criteria(
    criteria: Criteria, evidence: Evidence, started_at: datetime, now: datetime
) -> CriteriaResult:
    """Check ``criteria`` against ``evidence`` as of ``now``."""
    ratios: list[float] = []
    reasons: list[str] = []
    met = True
    days_active = days_between(started_at, now)
    if criteria.tasks_completed is not None:
        done = len(evidence.completed_tasks)
        ok = done >= criteria.tasks_completed
        met &= ok
        ratios.append(_ratio(done, criteria.tasks_completed))
        reasons.append(f"tasks completed {done} of {criteria.tasks_completed} needed")
    if criteria.quality_score_min:
        quality = evidence.mean_quality
        ok = quality is not None and quality >= criteria.quality_score_min
        met &= ok
        ratios.append(_ratio(quality or 0.0, criteria.quality_score_min))
        shown = "none yet" if quality is None else f"{quality:.1f}"
        reasons.append(f"mean quality {shown}, needs {criteria.quality_score_min:g}")
    if criteria.time_active_days is not None:
        ok = days_active >= criteria.time_active_days
        met &= ok
        ratios.append(_ratio(days_active, criteria.time_active_days))
        reasons.append(f"active {int(days_active)} of {criteria.time_active_days} days needed")
    if criteria.clean_history_days is not None:
        window = criteria.clean_history_days
        clean = evidence.clean_since(now - timedelta(days=window))
        # A history shorter than the window is not yet a clean one.
        ok = clean and days_active >= window
        met &= ok
        ratios.append(_ratio(days_active, window) if clean else 0.0)
        state = "clean" if clean else "not clean (failures, errors or denials)"
        reasons.append(f"last {window} days {state}, active {int(days_active)} days")
    progress = min(ratios) if ratios else 1.0
    return CriteriaResult(met=met, progress=progress, reasons=tuple(reasons))
