"""An agent's effective policy, compiled once for fast decisions.

``build_agent_policy`` merges the agent's level (from the config) with its
per-agent sub-constraint overrides and normalises its allowed and denied lists,
so ``decide`` only does set look-ups. Rebuild it when the agent, its
permissions or the config change.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Final

from common.vocabulary.action_types import ActionPatternSet
from common.vocabulary.levels import (
    DEFAULT_LEVELS,
    LEVEL_RANK,
    AccessLevelPolicy,
    FileSystemScope,
    LevelName,
    SubConstraintOverrides,
)
from common.vocabulary.names import name_key, name_skeleton
from common.vocabulary.network import HostRule, parse_host_rule
from trust_app.policy.effective import stricter
from trust_app.policy.paths import PathResolver

_MAX_SHARED_PROFILES: Final = 10_000
_SHARED_VERDICTS: dict[tuple[object, ...], dict[tuple[object, ...], object]] = {}


def _shared_verdicts(profile: tuple[object, ...]) -> dict[tuple[object, ...], object]:
    if len(_SHARED_VERDICTS) > _MAX_SHARED_PROFILES:
        _SHARED_VERDICTS.clear()
    return _SHARED_VERDICTS.setdefault(profile, {})


class AccessLevelUnknownError(ValueError):
    """The agent names an access level the config does not define."""


class AgentWorkspaceInvalidError(ValueError):
    """The agent's workspace or project root is not an absolute path."""


@dataclass(frozen=True, slots=True)
class AgentPolicy:
    """Everything ``decide`` needs about one agent, precomputed."""

    name: str
    level: str
    constraints: AccessLevelPolicy
    workspace: str | None
    scope_roots: tuple[str, ...]
    allowed_keys: frozenset[str]
    denied_keys: frozenset[str]
    denied_skeletons: frozenset[str]
    categories: frozenset[str]
    approval_patterns: ActionPatternSet
    host_rules: tuple[HostRule, ...]
    allowed_commands: frozenset[str]
    path_resolver: PathResolver | None = None
    # Sub-constraint verdicts per tool shape (see ToolView.shape), filled lazily
    # and shared by every agent with the same level, constraints and workspace
    # presence: those are all the argument-free checks look at.
    static_verdicts: dict[tuple[object, ...], object] = field(
        default_factory=dict, compare=False, repr=False
    )
    # Tool categories whose effective level is below ``level`` because the agent
    # has earned less there: the policy to decide their tools with.
    category_policies: Mapping[str, AgentPolicy] = field(
        default_factory=lambda: MappingProxyType({}), compare=False, repr=False
    )
    # For such a scoped policy: the configured level it is bounded by.
    ceiling: str | None = None

    def for_category(self, category: str) -> AgentPolicy:
        """The policy that decides tools of ``category`` (lowered by trust where earned less)."""
        return self.category_policies.get(category, self)

    @property
    def is_custom(self) -> bool:
        """True for the custom level, which grants only what is listed."""
        return self.level == LevelName.CUSTOM


def _absolute(path: str | None, what: str) -> str | None:
    if path is None:
        return None
    if not path.startswith("/") or "\x00" in path:
        raise AgentWorkspaceInvalidError(f"{what} {path!r} must be an absolute path")
    return posixpath.normpath(path)


def _scope_roots(
    constraints: AccessLevelPolicy, workspace: str | None, project_root: str | None
) -> tuple[str, ...]:
    if constraints.file_system is FileSystemScope.FULL:
        return ("/",)
    if constraints.file_system is FileSystemScope.PROJECT_DIRECTORY:
        root = project_root or workspace
        return (root,) if root else ()
    if constraints.file_system is FileSystemScope.WORKSPACE_ONLY:
        return (workspace,) if workspace else ()
    return ()


def _compile(
    *,
    name: str,
    level: str,
    constraints: AccessLevelPolicy,
    workspace: str | None,
    project_root: str | None,
    allowed: tuple[str, ...],
    denied: tuple[str, ...],
    path_resolver: PathResolver | None,
    category_policies: Mapping[str, AgentPolicy] | None = None,
    ceiling: str | None = None,
) -> AgentPolicy:
    scope_roots = _scope_roots(constraints, workspace, project_root)
    profile = (level, constraints, bool(scope_roots))
    return AgentPolicy(
        name=name,
        level=level,
        constraints=constraints,
        workspace=workspace,
        scope_roots=scope_roots,
        allowed_keys=frozenset(name_key(n) for n in allowed),
        denied_keys=frozenset(name_key(n) for n in denied),
        denied_skeletons=frozenset(name_skeleton(n) for n in denied),
        categories=frozenset(c.value for c in constraints.categories),
        approval_patterns=ActionPatternSet.of(constraints.requires_approval),
        host_rules=tuple(parse_host_rule(h) for h in constraints.allowed_hosts),
        allowed_commands=frozenset(constraints.allowed_commands),
        path_resolver=path_resolver,
        static_verdicts=_shared_verdicts(profile),
        category_policies=MappingProxyType(dict(category_policies or {})),
        ceiling=ceiling,
    )


def build_agent_policy(
    *,
    name: str,
    level: str,
    levels: Mapping[str, AccessLevelPolicy] = DEFAULT_LEVELS,
    allowed: Iterable[str] = (),
    denied: Iterable[str] = (),
    overrides: SubConstraintOverrides | None = None,
    workspace: str | None = None,
    project_root: str | None = None,
    path_resolver: PathResolver | None = None,
    earned: Mapping[str, str] | None = None,
) -> AgentPolicy:
    """Compile an agent's level, lists and overrides into an ``AgentPolicy``.

    ``levels`` comes from ``SynthOrgConfig.access_levels()``; ``path_resolver``
    (``os.path.realpath`` in production) makes path checks follow symlinks.
    ``earned`` maps tool categories to the level the agent has earned there
    through trust: a category earned below ``level`` (the configured ceiling)
    is decided at the stricter of the two; earning more than the ceiling
    changes nothing. The custom level is outside the order and ignores it.
    """
    if level not in levels:
        raise AccessLevelUnknownError(
            f"unknown access level {level!r}; allowed: {', '.join(levels)}"
        )
    constraints = levels[level].merged(overrides)
    common = {
        "name": name,
        "workspace": _absolute(workspace, "workspace"),
        "project_root": _absolute(project_root, "project root"),
        "allowed": tuple(allowed),
        "denied": tuple(denied),
        "path_resolver": path_resolver,
    }
    scoped: dict[str, AgentPolicy] = {}
    by_level: dict[str, AgentPolicy] = {}
    ceiling_rank = LEVEL_RANK.get(level)
    for category, earned_level in (earned or {}).items():
        if ceiling_rank is None:
            break
        if earned_level not in LEVEL_RANK or earned_level not in levels:
            raise AccessLevelUnknownError(
                f"unknown earned level {earned_level!r} for {category}; "
                f"allowed: {', '.join(LEVEL_RANK)}"
            )
        if LEVEL_RANK[earned_level] >= ceiling_rank:
            continue
        if earned_level not in by_level:
            by_level[earned_level] = _compile(
                level=earned_level,
                constraints=stricter(levels[earned_level], constraints),
                ceiling=level,
                **common,  # type: ignore[arg-type]
            )
        scoped[category] = by_level[earned_level]
    return _compile(
        level=level,
        constraints=constraints,
        category_policies=scoped,
        **common,  # type: ignore[arg-type]
    )
