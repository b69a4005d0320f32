"""PURE: cards of the desktop tools: what a click, typing or keys will reach.

A desktop call acts on whatever the agent's screen shows when it runs: the card says
where the pointer goes or what the keyboard sends, exactly, and that it lands on the
window under the pointer or holding the keyboard; the screen the agent last saw is
shown beside it (``approvals_app.selectors.desktop_pictures``).
"""

from __future__ import annotations

from typing import Any, Final

from approvals_app.cards.model import Block, CardInput, CardLimits, Fact
from approvals_app.cards.text import short_value, size_label

Parts = tuple[list[Fact], list[Block], list[str]]
SCREEN_NOTE: Final = "the screen the agent last saw is shown below: it may have changed since"


def _value(value: Any, limits: CardLimits) -> str:
    return short_value(value if isinstance(value, str) else repr(value), limits.fact_chars)


def render_desktop_click(card: CardInput, args: dict[str, Any], limits: CardLimits) -> Parts:
    button = args.get("button", "left")
    clicks = "double-click" if args.get("double") is True else "click"
    facts = [
        Fact("clicks", f"{_value(button, limits)} {clicks}"),
        Fact("at", f"x={_value(args.get('x'), limits)}, y={_value(args.get('y'), limits)}"),
    ]
    note = f"on the window under that point (pixels from the top left of the screen); {SCREEN_NOTE}"
    return facts, [], [note]


def render_desktop_type(card: CardInput, args: dict[str, Any], limits: CardLimits) -> Parts:
    text = args.get("text")
    shown = text if isinstance(text, str) else repr(text)
    facts = [Fact("characters", str(len(shown)), mono=False)]
    blocks = [
        Block(label="keystrokes (typed exactly)", kind="text", text=shown, size=size_label(shown))
    ]
    note = f"typed into the window holding the keyboard on the agent's desktop; {SCREEN_NOTE}"
    return facts, blocks, [note]


def render_desktop_key(card: CardInput, args: dict[str, Any], limits: CardLimits) -> Parts:
    keys = args.get("keys")
    combos = keys.split() if isinstance(keys, str) else [repr(keys)]
    facts = [Fact(f"key {n + 1}", _value(combo, limits)) for n, combo in enumerate(combos[:16])]
    note = f"pressed in order in the window holding the keyboard; {SCREEN_NOTE}"
    return facts, [], [note]


def render_desktop_scroll(card: CardInput, args: dict[str, Any], limits: CardLimits) -> Parts:
    facts = [
        Fact(
            "scrolls",
            f"dy={_value(args.get('dy'), limits)}, dx={_value(args.get('dx', 0), limits)}",
        )
    ]
    return facts, [], [f"in the window under the pointer; {SCREEN_NOTE}"]


DESKTOP_RENDERERS: Final = {
    "desktop_click": render_desktop_click,
    "desktop_type": render_desktop_type,
    "desktop_key": render_desktop_key,
    "desktop_scroll": render_desktop_scroll,
}
