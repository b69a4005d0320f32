"""``ConfigError``: every problem in a config file, each naming file, field and allowed values."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from pydantic import ValidationError

TRUST_STRATEGIES: Final = ("disabled", "weighted", "per_category", "milestone")


@dataclass(frozen=True, slots=True)
class ConfigProblem:
    """One problem: the dotted field path and what is wrong (with the allowed values)."""

    path: str
    message: str


class ConfigError(ValueError):
    """The config file cannot be used; ``str()`` lists every problem, one per line."""

    def __init__(self, source: str, problems: tuple[ConfigProblem, ...]) -> None:
        self.source = source
        self.problems = problems
        lines = [
            f"{source}: {p.path}: {p.message}" if p.path else f"{source}: {p.message}"
            for p in problems
        ]
        super().__init__("\n".join(lines))


def _path(loc: tuple[int | str, ...]) -> str:
    parts: list[str] = []
    for index, item in enumerate(loc):
        # The trust section's union tag is in pydantic's location; people never wrote it.
        if index == 1 and loc[0] == "trust" and item in TRUST_STRATEGIES:
            continue
        if isinstance(item, int):
            parts.append(f"[{item}]")
        elif item == "[key]":
            parts.append(" (key)")
        else:
            parts.append(f".{item}" if parts else str(item))
    return "".join(parts)


def _message(error: Any) -> tuple[tuple[int | str, ...], str]:
    loc: tuple[int | str, ...] = tuple(error["loc"])
    kind = error["type"]
    ctx = error.get("ctx") or {}
    message = str(error["msg"])
    if kind == "unknown_field":
        unknown = ctx.get("unknown") or []
        if len(unknown) == 1:
            loc = (*loc, unknown[0])
            message = f"unknown field; allowed fields: {ctx['allowed']}"
    elif kind in ("literal_error", "enum"):
        message = f"{error['input']!r} is not allowed; allowed values: {ctx.get('expected')}"
    elif kind == "union_tag_invalid":
        loc = (*loc, str(ctx.get("discriminator", "")).strip("'"))
        message = f"{ctx.get('tag')!r} is not allowed; allowed values: {ctx.get('expected_tags')}"
    elif kind == "union_tag_not_found":
        loc = (*loc, str(ctx.get("discriminator", "")).strip("'"))
        message = "required; allowed values: " + ", ".join(repr(s) for s in TRUST_STRATEGIES)
    elif kind == "value_error":
        message = message.removeprefix("Value error, ")
    return loc, message


def problems_from(exc: ValidationError) -> tuple[ConfigProblem, ...]:
    """Translate a pydantic ``ValidationError`` into config problems."""
    problems = []
    for error in exc.errors(include_url=False):
        loc, message = _message(error)
        problems.append(ConfigProblem(_path(loc), message))
    return tuple(problems)
