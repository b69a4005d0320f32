"""The level that applies (pure): the lower of the admin's level and trust's, with why."""

from __future__ import annotations

from trust_app.strategies.effective import effective_level


def test_trust_below_the_admins_level_applies_and_says_so() -> None:
    level = effective_level(
        admin_level="elevated", strategy="weighted", applies=True, earned={"all": "sandboxed"}
    )
    assert (level.level, level.admin_level, level.trust_level) == (
        "sandboxed",
        "elevated",
        "sandboxed",
    )
    assert level.lowered
    assert "trust holds it at sandboxed on every category" in level.reason
    assert "below the admin's elevated" in level.reason


def test_trust_above_the_admins_level_leaves_the_admins_level() -> None:
    level = effective_level(
        admin_level="restricted", strategy="weighted", applies=True, earned={"all": "standard"}
    )
    assert level.level == "restricted" and not level.lowered
    assert "the admin's restricted applies" in level.reason


def test_per_category_takes_the_lowest_track_and_names_it() -> None:
    level = effective_level(
        admin_level="standard",
        strategy="per_category",
        applies=True,
        earned={"file_system": "standard", "web": "restricted", "terminal": "restricted"},
    )
    assert level.level == "restricted"
    assert "track terminal, web" in level.reason


def test_no_trust_and_custom_levels_keep_the_admins_level() -> None:
    off = effective_level(admin_level="elevated", strategy="disabled", applies=False, earned={})
    assert off.level == "elevated" and not off.lowered and "disabled" in off.reason
    custom = effective_level(admin_level="ops", strategy="weighted", applies=False, earned={})
    assert custom.level == "ops" and "custom level" in custom.reason
