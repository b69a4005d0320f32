"""Pure permission core: action types, access levels, tool categories, decisions.

No Django here: services load models, build ``AgentPolicy`` and ``ToolView``
objects, call ``decide`` / ``list_permitted`` and store the ``Decision``.
"""

from common.vocabulary.action_types import (
    BUILTIN_ACTION_TYPES,
    DEFAULT_ACTION_TYPES,
    ActionTypeError,
    ActionTypeMalformedError,
    ActionTypeRegistry,
    ActionTypeUnknownError,
    action_type_matches,
)
from common.vocabulary.categories import (
    ALL_CATEGORIES,
    DEFAULT_ACTION_TYPE,
    SafetyClass,
    ToolCategory,
)
from common.vocabulary.levels import (
    DEFAULT_LEVELS,
    AccessLevelOverride,
    AccessLevelPolicy,
    LevelName,
    SubConstraintOverrides,
    resolve_levels,
)
from common.vocabulary.names import name_key, name_skeleton
from trust_app.policy.agent import (
    AccessLevelUnknownError,
    AgentPolicy,
    AgentWorkspaceInvalidError,
    build_agent_policy,
)
from trust_app.policy.decision import Decision, Outcome, Rule
from trust_app.policy.engine import decide, list_permitted
from trust_app.policy.tool_view import ArgumentRole, ToolListing, ToolView

__all__ = [
    "ALL_CATEGORIES",
    "BUILTIN_ACTION_TYPES",
    "DEFAULT_ACTION_TYPE",
    "DEFAULT_ACTION_TYPES",
    "DEFAULT_LEVELS",
    "AccessLevelOverride",
    "AccessLevelPolicy",
    "AccessLevelUnknownError",
    "ActionTypeError",
    "ActionTypeMalformedError",
    "ActionTypeRegistry",
    "ActionTypeUnknownError",
    "AgentPolicy",
    "AgentWorkspaceInvalidError",
    "ArgumentRole",
    "Decision",
    "LevelName",
    "Outcome",
    "Rule",
    "SafetyClass",
    "SubConstraintOverrides",
    "ToolCategory",
    "ToolListing",
    "ToolView",
    "action_type_matches",
    "build_agent_policy",
    "decide",
    "list_permitted",
    "name_key",
    "name_skeleton",
    "resolve_levels",
]
