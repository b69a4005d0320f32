"""The desktop tools' cards (pure): where a click lands and what the keyboard sends."""

from __future__ import annotations

from approvals_app.cards.model import CardInput
from approvals_app.cards.render import render_card


def _facts(card: object) -> dict[str, str]:
    return {fact.label: fact.value for fact in card.facts}  # type: ignore[attr-defined]


def test_a_click_card_names_the_button_and_the_point() -> None:
    card = render_card(CardInput("desktop_click", "desktop", {"x": 17, "y": 23, "double": True}))
    assert card.renderer == "desktop_click"
    assert _facts(card) == {"clicks": "left double-click", "at": "x=17, y=23"}
    assert any("the screen the agent last saw" in note for note in card.notes)
    # Control: a plain right click says so.
    right = render_card(CardInput("desktop_click", "desktop", {"x": 1, "y": 2, "button": "right"}))
    assert _facts(right)["clicks"] == "right click"


def test_a_typing_card_shows_the_keystrokes_exactly_with_their_characters_flagged() -> None:
    text = "rm -rf ~/notes\u202e\n"
    card = render_card(CardInput("desktop_type", "desktop", {"text": text}))
    assert card.renderer == "desktop_type"
    [block] = card.blocks
    assert block.label == "keystrokes (typed exactly)" and block.text == text
    assert _facts(card)["characters"] == str(len(text))
    # The right-to-left override is listed for the person to check.
    assert any(value.where == "text" for value in card.flagged)


def test_a_key_card_lists_each_combination_in_order() -> None:
    card = render_card(CardInput("desktop_key", "desktop", {"keys": "ctrl+s Return"}))
    assert [(f.label, f.value) for f in card.facts] == [("key 1", "ctrl+s"), ("key 2", "Return")]


def test_arguments_of_another_shape_are_still_shown() -> None:
    card = render_card(CardInput("desktop_key", "desktop", {"keys": ["ctrl+s"]}))
    assert card.facts[0].value == "['ctrl+s']"
    assert '"keys"' in card.raw_json
