"""The action type taxonomy, custom types and shortcuts."""

from __future__ import annotations

import pytest

from common.vocabulary.action_types import ActionPatternSet
from trust_app.policy import (
    BUILTIN_ACTION_TYPES,
    ActionTypeMalformedError,
    ActionTypeRegistry,
    ActionTypeUnknownError,
    action_type_matches,
)


def test_builtins_are_the_41_seed_types_plus_vcs_clone() -> None:
    assert len(BUILTIN_ACTION_TYPES) == 42
    assert len(set(BUILTIN_ACTION_TYPES)) == 42
    assert "vcs:clone" in BUILTIN_ACTION_TYPES
    for expected in (
        "code:refactor",
        "tool:create",
        "browser:accessibility_scan",
        "desktop:scroll",
    ):
        assert expected in BUILTIN_ACTION_TYPES


@pytest.mark.parametrize("value", ["tool:audit", "x:y", "ci_cd:run_2"])
def test_custom_types_with_one_colon_register(value: str) -> None:
    registry = ActionTypeRegistry(custom=(value,))
    assert registry.check_action_type(value) == value


@pytest.mark.parametrize("value", ["noscolon", "a:b:c", ":b", "a:", "a::b", " a:b", "A:b", ""])
def test_malformed_custom_types_are_refused(value: str) -> None:
    with pytest.raises(ActionTypeMalformedError):
        ActionTypeRegistry(custom=(value,))


def test_unknown_types_and_shortcuts_name_the_allowed_values() -> None:
    registry = ActionTypeRegistry()
    with pytest.raises(ActionTypeUnknownError, match="code:read"):
        registry.check_action_type("code:reed")
    with pytest.raises(ActionTypeUnknownError, match=r"allowed: .*code"):
        registry.check_pattern("cod")


def test_shortcut_expands_to_every_type_of_the_domain() -> None:
    registry = ActionTypeRegistry(custom=("code:lint",))
    assert registry.expand(["code"]) == {
        "code:read",
        "code:write",
        "code:create",
        "code:delete",
        "code:refactor",
        "code:lint",
    }
    assert registry.expand(["vcs:push", "test"]) == {"vcs:push", "test:write", "test:run"}


@pytest.mark.parametrize(
    ("pattern", "action_type", "matches"),
    [
        ("db:mutate", "db:mutate", True),
        ("db:mutate", "db:mutate_x", False),
        ("db", "db:mutate", True),
        ("db", "dbx:query", False),
        ("db:mut", "db:mutate", False),
        ("code", "code", False),
    ],
)
def test_matching_is_on_whole_segments(pattern: str, action_type: str, matches: bool) -> None:
    assert action_type_matches(pattern, action_type) is matches
    assert (ActionPatternSet.of([pattern]).match(action_type) is not None) is matches
