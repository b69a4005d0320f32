"""The plain view of a tool that the decision engine works on.

Built from a ``tools_app.contracts.ToolContract`` (``contract.policy_view()``)
or, in tests and benchmarks, directly. Comparison keys and the argument names
per role are computed once at construction so each decision only does set
look-ups.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from common.vocabulary.names import name_key, name_skeleton


class ArgumentRole(StrEnum):
    """What an argument names, as declared by the tool contract (never guessed)."""

    PATH = "path"
    URL = "url"
    HOST = "host"
    COMMAND = "command"


@dataclass(frozen=True, slots=True)
class ToolView:
    """What the decision engine needs to know about a tool.

    ``isolation`` is the sandbox the tool would run under (``subprocess``,
    ``namespace`` or ``containerized``), resolved from the sandboxing config by
    the caller; None means unknown, which code-execution checks refuse.
    """

    name: str
    category: str
    action_type: str
    safety_class: str
    summary: str = ""
    cost_tier: str = "low"
    argument_roles: tuple[tuple[str, str], ...] = ()
    isolation: str | None = None
    enabled: bool = True
    key: str = field(init=False)
    skeleton: str = field(init=False)
    action_domain: str = field(init=False)
    path_arguments: tuple[str, ...] = field(init=False)
    url_arguments: tuple[str, ...] = field(init=False)
    host_arguments: tuple[str, ...] = field(init=False)
    command_arguments: tuple[str, ...] = field(init=False)
    shape: tuple[object, ...] = field(init=False)
    entry: ToolListing = field(init=False)

    def __post_init__(self) -> None:
        roles = tuple(sorted((str(k), ArgumentRole(v).value) for k, v in self.argument_roles))
        setattr_ = object.__setattr__
        setattr_(self, "argument_roles", roles)
        setattr_(self, "key", name_key(self.name))
        setattr_(self, "skeleton", name_skeleton(self.name))
        setattr_(self, "action_domain", self.action_type.partition(":")[0])
        for role in ArgumentRole:
            names = tuple(name for name, r in roles if r == role.value)
            setattr_(self, f"{role.value}_arguments", names)
        # Everything the argument-free sub-constraint checks look at; decisions
        # for tools of the same shape share their sub-constraint verdict.
        setattr_(
            self,
            "shape",
            (
                self.category,
                self.action_type,
                self.safety_class,
                self.isolation,
                bool(self.path_arguments),
                bool(self.url_arguments or self.host_arguments),
                bool(self.command_arguments),
            ),
        )
        setattr_(self, "entry", self.listing())

    @classmethod
    def build(cls, *, argument_roles: Mapping[str, str] | None = None, **fields: Any) -> ToolView:
        """Construct from keyword fields with ``argument_roles`` as a mapping."""
        return cls(argument_roles=tuple((argument_roles or {}).items()), **fields)

    def listing(self) -> ToolListing:
        """The L1 entry of this tool."""
        return ToolListing(
            name=self.name,
            category=self.category,
            action_type=self.action_type,
            safety_class=self.safety_class,
            summary=self.summary,
            cost_tier=self.cost_tier,
        )


@dataclass(frozen=True, slots=True)
class ToolListing:
    """One entry of ``GET /api/v1/tools/`` (progressive disclosure level 1)."""

    name: str
    category: str
    action_type: str
    safety_class: str
    summary: str
    cost_tier: str

    def as_dict(self) -> dict[str, str]:
        """The JSON shape of the entry."""
        return {
            "name": self.name,
            "category": self.category,
            "action_type": self.action_type,
            "safety_class": self.safety_class,
            "summary": self.summary,
            "cost_tier": self.cost_tier,
        }
