"""Evidence about an agent's work: invocation outcomes, task outcomes, feedback.

Plain frozen values with the few statistics the strategies share. A task is
attributed to the categories of the tools used under its task id (the
services work that out); per-category trust only counts a task on the tracks
it touched, so trust earned on files never counts towards deployment.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from types import MappingProxyType
from typing import Final


class InvocationResult(StrEnum):
    """How one tool call ended, as trust sees it."""

    SUCCESS = "success"
    FAILURE = "failure"  # the tool ran and reported an error
    ERROR = "error"  # the call did not finish (timed out, crashed)
    DENIAL = "denial"  # the policy refused the call


class Difficulty(StrEnum):
    """How hard an orchestrator judged a task."""

    TRIVIAL = "trivial"
    EASY = "easy"
    MEDIUM = "medium"
    HARD = "hard"
    EXPERT = "expert"


# Weight of a completed task of each difficulty in the task-difficulty factor.
DIFFICULTY_WEIGHT: Final = MappingProxyType(
    {
        Difficulty.TRIVIAL: 0.2,
        Difficulty.EASY: 0.4,
        Difficulty.MEDIUM: 0.6,
        Difficulty.HARD: 0.8,
        Difficulty.EXPERT: 1.0,
    }
)
QUALITY_MAX: Final = 10.0
RATING_MIN: Final = 1
RATING_MAX: Final = 5


@dataclass(frozen=True, slots=True)
class InvocationEvidence:
    """One settled tool call."""

    at: datetime
    category: str
    result: InvocationResult


@dataclass(frozen=True, slots=True)
class TaskEvidence:
    """One task an orchestrator reported."""

    at: datetime
    task_id: str
    difficulty: Difficulty
    quality: float
    completed: bool
    categories: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class FeedbackEvidence:
    """A person's rating (1–5) of one of the agent's calls."""

    at: datetime
    category: str
    rating: int


@dataclass(frozen=True, slots=True)
class Evidence:
    """Everything known about an agent's work since its trust started."""

    invocations: tuple[InvocationEvidence, ...] = ()
    tasks: tuple[TaskEvidence, ...] = ()
    feedback: tuple[FeedbackEvidence, ...] = ()

    def for_categories(self, categories: Collection[str]) -> Evidence:
        """Only the evidence about tools of ``categories``."""
        wanted = frozenset(categories)
        return Evidence(
            invocations=tuple(i for i in self.invocations if i.category in wanted),
            tasks=tuple(t for t in self.tasks if t.categories & wanted),
            feedback=tuple(f for f in self.feedback if f.category in wanted),
        )

    def since(self, moment: datetime) -> Evidence:
        """Only the evidence from ``moment`` on."""
        return Evidence(
            invocations=tuple(i for i in self.invocations if i.at >= moment),
            tasks=tuple(t for t in self.tasks if t.at >= moment),
            feedback=tuple(f for f in self.feedback if f.at >= moment),
        )

    def until(self, moment: datetime) -> Evidence:
        """Only the evidence up to ``moment`` (evidence from the future is ignored)."""
        return Evidence(
            invocations=tuple(i for i in self.invocations if i.at <= moment),
            tasks=tuple(t for t in self.tasks if t.at <= moment),
            feedback=tuple(f for f in self.feedback if f.at <= moment),
        )

    @property
    def completed_tasks(self) -> tuple[TaskEvidence, ...]:
        """The tasks reported as completed."""
        return tuple(t for t in self.tasks if t.completed)

    @property
    def last_activity(self) -> datetime | None:
        """When the agent last did anything (a call or a reported task)."""
        moments = [i.at for i in self.invocations] + [t.at for t in self.tasks]
        return max(moments) if moments else None

    def count(self, result: InvocationResult) -> int:
        """How many calls ended with ``result``."""
        return sum(1 for i in self.invocations if i.result is result)

    @property
    def settled_calls(self) -> int:
        """Calls that ran (succeeded, failed or errored); denials are not runs."""
        return len(self.invocations) - self.count(InvocationResult.DENIAL)

    @property
    def error_rate(self) -> float:
        """Failed or errored calls over calls that ran; 0 when none ran."""
        ran = self.settled_calls
        bad = self.count(InvocationResult.FAILURE) + self.count(InvocationResult.ERROR)
        return bad / ran if ran else 0.0

    @property
    def mean_quality(self) -> float | None:
        """Mean quality (0–10) of the completed tasks, None when there are none."""
        done = self.completed_tasks
        return sum(t.quality for t in done) / len(done) if done else None

    def clean_since(self, moment: datetime) -> bool:
        """True when no call failed, errored or was denied from ``moment`` on."""
        return all(i.result is InvocationResult.SUCCESS for i in self.invocations if i.at >= moment)


def days_between(start: datetime, end: datetime) -> float:
    """Days from ``start`` to ``end`` (negative when ``end`` is earlier)."""
    return (end - start) / timedelta(days=1)
