"""The effect line a notification carries: the card's first line, as the card states it."""

from __future__ import annotations

from typing import Any

from approvals_app.cards.characters import escaped
from approvals_app.cards.effect import effect_of
from approvals_app.cards.text import ordered
from approvals_app.selectors.cards import card_input, card_limits


def notice_effect(invocation: Any) -> str:
    """``invocation``'s effect as the policy resolved it (console secrets masked as on
    the card), invisible characters written as escapes, its middle cut when long."""
    given = card_input(invocation, read_file=False)
    arguments = ordered(dict(given.arguments), given.key_order)
    effect = effect_of(given, arguments, card_limits())
    return escaped(effect.head) + effect.cut + escaped(effect.tail)
