"""A person's desktop actions are checked as an agent's calls are (pure part of ``watch``)."""

from __future__ import annotations

import pytest

from common.config.desktop import DesktopSection
from tools_app.builtin.base import ToolRefusedError
from tools_app.builtin.desktop.watch import checked_person_request

SECTION = DesktopSection(width=640, height=480, max_text_chars=20)


def test_clicks_typing_and_keys_within_the_rules_become_requests() -> None:
    assert checked_person_request(SECTION, {"action": "click", "x": 639, "y": 0}) == {
        "action": "click", "x": 639, "y": 0, "button": "left", "double": False,
    }  # fmt: skip
    assert checked_person_request(SECTION, {"action": "type", "text": "echo hi\n"}) == {
        "action": "type",
        "text": "echo hi\n",
    }
    keys = checked_person_request(SECTION, {"action": "key", "keys": "ctrl+s Return"})
    assert keys == {"action": "key", "keys": ["ctrl+s", "Return"]}
    # Checked again on the worker: a checked request passes unchanged.
    assert checked_person_request(SECTION, keys) == keys


@pytest.mark.parametrize(
    "fields",
    [
        {"action": "click", "x": 640, "y": 0},
        {"action": "click", "x": "10", "y": 0},
        {"action": "click", "x": 1, "y": 1, "button": "fourth"},
        {"action": "type", "text": "bell\x07"},
        {"action": "type", "text": "x" * 21},
        {"action": "type", "text": ""},
        {"action": "key", "keys": "hyper+s"},
        {"action": "key", "keys": "ctrl+Return2"},
        {"action": "launch", "argv": ["xterm"]},
        {"action": "screenshot"},
    ],
)
def test_actions_outside_the_rules_are_refused(fields: dict[str, object]) -> None:
    with pytest.raises(ToolRefusedError):
        checked_person_request(SECTION, fields)
