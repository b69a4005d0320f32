"""PURE: the budgets of progressive disclosure and how a load spends them.

Levels (seed): L1 is each tool's one-line metadata (``list_tools``), L2 its full body
(``load_tool``), L3 a resource fetched on demand (``load_tool_resource``). Tokens are
estimated as ``ceil(len(canonical JSON) / 4)`` — about four characters per token for
English text and JSON, close enough to budget with, and the same on every worker.

Budgets come from the tools' own settings: ``tools.list_tools.l1_token_budget``
(3000) and ``tools.load_tool.l2_token_budget`` (15000),
``.auto_unload_on_budget_pressure`` (true) and ``.unload_threshold_percent`` (80).
When loading a body fills the L2 budget past the threshold, the oldest loaded bodies
are unloaded first (FIFO by load order) until it is back under; L1 never unloads.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from common.strict import StrictModel
from tools_app.builtin.base import RefusalCode, ToolFailedError, ToolRefusedError

CHARS_PER_TOKEN: Final = 4


def estimate_tokens(value: Any) -> int:
    """Estimated tokens of ``value`` as compact, key-sorted JSON (at least 1)."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return max(1, math.ceil(len(text) / CHARS_PER_TOKEN))


class _L1Budget(BaseModel):
    l1_token_budget: int = Field(default=3000, ge=1, le=1_000_000)


class _L2Budget(BaseModel):
    l2_token_budget: int = Field(default=15000, ge=1, le=10_000_000)
    auto_unload_on_budget_pressure: bool = True
    unload_threshold_percent: float = Field(default=80.0, gt=0, le=100)


class DisclosureSettings(_L1Budget, _L2Budget):
    """The seed's ToolDisclosureConfig, read from the discovery tools' settings."""

    model_config = ConfigDict(extra="ignore", frozen=True)


class ListToolsSettings(_L1Budget, StrictModel):
    """``tools.list_tools`` beyond the common switches (checked when the config loads)."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class LoadToolSettings(_L2Budget, StrictModel):
    """``tools.load_tool`` beyond the common switches (checked when the config loads)."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class LoadToolResourceSettings(StrictModel):
    """``tools.load_tool_resource``: only the common switches."""


def disclosure_settings(settings: Mapping[str, Any]) -> DisclosureSettings:
    """The budgets, or a CONFIG_INVALID failure naming the bad field (fail closed)."""
    try:
        return DisclosureSettings.model_validate(dict(settings))
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise ToolFailedError(
            f"the discovery tools' config is invalid at {where}: {first['msg']}",
            code="CONFIG_INVALID",
        ) from None


@dataclass(frozen=True, slots=True)
class LoadedBody:
    """One loaded L2 body: the tool's name and its estimated tokens."""

    name: str
    tokens: int

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "tokens": self.tokens}


@dataclass(frozen=True, slots=True)
class LoadResult:
    """The loaded bodies after a load, oldest first, and those it unloaded."""

    loaded: tuple[LoadedBody, ...]
    unloaded: tuple[str, ...]

    @property
    def tokens_used(self) -> int:
        return sum(body.tokens for body in self.loaded)


def spend_l2_budget(
    loaded: tuple[LoadedBody, ...], body: LoadedBody, budget: DisclosureSettings
) -> LoadResult:
    """Load ``body`` (again: it moves to the newest place), unloading the oldest if needed."""
    if body.tokens > budget.l2_token_budget:
        raise ToolRefusedError(
            RefusalCode.LIMIT_EXCEEDED,
            f"the body of {body.name!r} is about {body.tokens} tokens, more than the whole "
            f"L2 budget of {budget.l2_token_budget}",
        )
    kept = [b for b in loaded if b.name != body.name] + [body]
    unloaded: list[str] = []
    if budget.auto_unload_on_budget_pressure:
        ceiling = budget.l2_token_budget * budget.unload_threshold_percent / 100
        while len(kept) > 1 and sum(b.tokens for b in kept) > ceiling:
            unloaded.append(kept.pop(0).name)
    elif sum(b.tokens for b in kept) > budget.l2_token_budget:
        names = ", ".join(b.name for b in loaded)
        raise ToolRefusedError(
            RefusalCode.LIMIT_EXCEEDED,
            f"loading {body.name!r} would pass the L2 budget of {budget.l2_token_budget} "
            f"tokens (loaded: {names}); automatic unloading is switched off",
        )
    return LoadResult(loaded=tuple(kept), unloaded=tuple(unloaded))


def within_l1_budget(
    entries: list[dict[str, Any]], budget: int
) -> tuple[list[dict[str, Any]], int]:
    """The leading entries whose tokens fit ``budget`` (always at least one), and their tokens.

    At least one entry is returned so that paging with ``offset`` always moves on.
    """
    chosen: list[dict[str, Any]] = []
    used = 0
    for entry in entries:
        cost = estimate_tokens(entry)
        if chosen and used + cost > budget:
            break
        chosen.append(entry)
        used += cost
    return chosen, used
