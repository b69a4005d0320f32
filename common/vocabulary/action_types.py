"""Action types: ``domain:action`` strings that classify what a call does.

The built-in taxonomy is the 41 leaf types of the SynthOrg action type system
plus ``vcs:clone``. Custom types are registered explicitly and must have
exactly one ``:`` with non-empty parts. A bare domain (``code``) is a shortcut
for every ``code:*`` type. Matching is on whole segments: ``db:mutate`` never
matches ``db:mutate_x`` and ``db`` never matches ``dbx:query``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Final

BUILTIN_ACTION_TYPES: Final[tuple[str, ...]] = (
    "code:read",
    "code:write",
    "code:create",
    "code:delete",
    "code:refactor",
    "test:write",
    "test:run",
    "docs:write",
    "vcs:read",
    "vcs:commit",
    "vcs:push",
    "vcs:branch",
    "vcs:clone",
    "deploy:staging",
    "deploy:production",
    "comms:internal",
    "comms:external",
    "budget:spend",
    "budget:exceed",
    "org:hire",
    "org:fire",
    "org:promote",
    "db:query",
    "db:mutate",
    "db:admin",
    "arch:decide",
    "tool:create",
    "memory:read",
    "knowledge:ingest",
    "knowledge:reindex",
    "browser:navigate",
    "browser:screenshot",
    "browser:diff",
    "browser:accessibility_scan",
    "browser:spec",
    "external_data:request",
    "desktop:launch",
    "desktop:click",
    "desktop:type",
    "desktop:key",
    "desktop:screenshot",
    "desktop:scroll",
)

# One segment: lower-case letters, digits and underscores, starting with a letter.
_SEGMENT = r"[a-z][a-z0-9_]*"
_ACTION_TYPE_RE: Final = re.compile(rf"^{_SEGMENT}:{_SEGMENT}$")
_DOMAIN_RE: Final = re.compile(rf"^{_SEGMENT}$")


class ActionTypeError(ValueError):
    """Base class for action type problems."""


class ActionTypeMalformedError(ActionTypeError):
    """A string is not of the form ``domain:action``."""


class ActionTypeUnknownError(ActionTypeError):
    """A well-formed action type or shortcut that nobody registered."""


def check_action_type_syntax(value: str) -> str:
    """Return ``value`` if it is ``domain:action`` with one colon, else raise."""
    if value.count(":") != 1 or not _ACTION_TYPE_RE.match(value):
        raise ActionTypeMalformedError(
            f"action type {value!r} must be 'domain:action' with exactly one ':' and "
            "non-empty lower-case parts (letters, digits, '_')"
        )
    return value


@dataclass(frozen=True, slots=True)
class ActionTypeRegistry:
    """The known action types: the built-ins plus explicitly registered ones."""

    custom: tuple[str, ...] = ()
    known: frozenset[str] = field(init=False)
    domains: frozenset[str] = field(init=False)

    def __post_init__(self) -> None:
        for value in self.custom:
            check_action_type_syntax(value)
        known = frozenset(BUILTIN_ACTION_TYPES) | frozenset(self.custom)
        object.__setattr__(self, "known", known)
        object.__setattr__(self, "domains", frozenset(a.split(":", 1)[0] for a in known))

    def with_custom(self, extra: Iterable[str]) -> ActionTypeRegistry:
        """Return a registry that also knows ``extra``."""
        return ActionTypeRegistry(custom=tuple(dict.fromkeys((*self.custom, *extra))))

    def allowed_values(self) -> tuple[str, ...]:
        """Every accepted string: full types, then domain shortcuts, sorted."""
        return (*sorted(self.known), *sorted(self.domains))

    def check_action_type(self, value: str) -> str:
        """Return ``value`` if it is a known full action type, else raise."""
        check_action_type_syntax(value)
        if value not in self.known:
            raise ActionTypeUnknownError(
                f"unknown action type {value!r}; allowed: {', '.join(sorted(self.known))}"
            )
        return value

    def check_pattern(self, value: str) -> str:
        """Return ``value`` if it is a known action type or domain shortcut, else raise."""
        if ":" in value:
            return self.check_action_type(value)
        if not _DOMAIN_RE.match(value) or value not in self.domains:
            raise ActionTypeUnknownError(
                f"unknown action type or shortcut {value!r}; allowed: "
                f"{', '.join(self.allowed_values())}"
            )
        return value

    def expand(self, patterns: Iterable[str]) -> frozenset[str]:
        """Expand patterns (types and shortcuts) to the full action types they cover."""
        result: set[str] = set()
        for pattern in patterns:
            self.check_pattern(pattern)
            if ":" in pattern:
                result.add(pattern)
            else:
                result.update(a for a in self.known if a.split(":", 1)[0] == pattern)
        return frozenset(result)


DEFAULT_ACTION_TYPES: Final = ActionTypeRegistry()


def action_type_matches(pattern: str, action_type: str) -> bool:
    """True when ``pattern`` covers ``action_type`` on whole segments."""
    if ":" in pattern:
        return pattern == action_type
    domain, sep, _ = action_type.partition(":")
    return bool(sep) and domain == pattern


@dataclass(frozen=True, slots=True)
class ActionPatternSet:
    """A precompiled set of action-type patterns for O(1) membership tests."""

    exact: frozenset[str] = frozenset()
    domains: frozenset[str] = frozenset()

    @classmethod
    def of(cls, patterns: Iterable[str]) -> ActionPatternSet:
        """Split patterns into exact types and domain shortcuts (no validation)."""
        exact: set[str] = set()
        domains: set[str] = set()
        for pattern in patterns:
            (exact if ":" in pattern else domains).add(pattern)
        return cls(frozenset(exact), frozenset(domains))

    def match(self, action_type: str) -> str | None:
        """The pattern covering ``action_type``, or None."""
        if action_type in self.exact:
            return action_type
        domain, sep, _ = action_type.partition(":")
        if sep and domain in self.domains:
            return domain
        return None
