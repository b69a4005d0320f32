"""The desktop tools' contracts: what each one takes, gives and may fail with."""

from __future__ import annotations

from typing import Any, Final

from common.vocabulary.categories import SafetyClass, ToolCategory
from tools_app.builtin.desktop.session import NOT_RUNNING
from tools_app.contracts import ToolContract

OK_SCHEMA: Final = {
    "type": "object",
    "properties": {"ok": {"type": "boolean"}},
    "required": ["ok"],
    "additionalProperties": False,
}


def _contract(
    name: str,
    action: str,
    safety: SafetyClass,
    summary: str,
    description: str,
    properties: dict[str, Any],
    required: list[str],
    output: dict[str, Any] = OK_SCHEMA,
) -> ToolContract:
    return ToolContract(
        name=name,
        category=ToolCategory.DESKTOP,
        action_type=f"desktop:{action}",
        safety_class=safety,
        cost_tier="medium" if action in ("launch", "screenshot") else "low",
        summary=summary,
        description=description,
        input_schema={
            "type": "object",
            "properties": properties,
            "required": required,
            "additionalProperties": False,
        },
        output_schema=output,
        failure_modes=(
            f"{NOT_RUNNING}: no live desktop session for this agent (none launched, its "
            "programs ended, or it was idle too long); call desktop_launch.",
            "INVALID_ARGUMENT / LIMIT_EXCEEDED: the arguments break the rules the message names.",
        ),
    )


LAUNCH_CONTRACT: Final = _contract(
    "desktop_launch",
    "launch",
    SafetyClass.WRITE,
    "Start a GUI program on this agent's virtual desktop (started on first use).",
    "Starts `argv` (a program desktop.allowed_programs names) on the agent's virtual "
    "desktop, in its workspace, without network. The desktop stays for later desktop_* "
    "calls until it is idle too long, too old, or its programs end. Returns the session, "
    "the program's pid and its first window's title.",
    {
        "argv": {
            "type": "array",
            "items": {"type": "string", "maxLength": 4096},
            "minItems": 1,
            "maxItems": 64,
        },
        "env": {
            "type": "object",
            "additionalProperties": {"type": "string", "maxLength": 1024},
            "maxProperties": 32,
        },
    },
    ["argv"],
    {
        "type": "object",
        "properties": {
            "session": {"type": "string"},
            "pid": {"type": "integer"},
            "window_title": {"type": "string"},
        },
        "required": ["session", "pid", "window_title"],
        "additionalProperties": False,
    },
)
CLICK_CONTRACT: Final = _contract(
    "desktop_click",
    "click",
    SafetyClass.WRITE,
    "Click at a point of this agent's virtual desktop.",
    "Moves the pointer to (x, y) in screen pixels and clicks `button` (left by default), "
    "twice with `double`.",
    {
        "x": {"type": "integer", "minimum": 0},
        "y": {"type": "integer", "minimum": 0},
        "button": {"type": "string", "enum": ["left", "middle", "right"]},
        "double": {"type": "boolean"},
    },
    ["x", "y"],
)
TYPE_CONTRACT: Final = _contract(
    "desktop_type",
    "type",
    SafetyClass.WRITE,
    "Type text into the focused window of this agent's virtual desktop.",
    "Types `text` as key presses (a newline presses Return). Printable characters, "
    "newlines and tabs only.",
    {"text": {"type": "string", "minLength": 1, "maxLength": 100_000}},
    ["text"],
    {
        "type": "object",
        "properties": {"ok": {"type": "boolean"}, "characters": {"type": "integer"}},
        "required": ["ok", "characters"],
        "additionalProperties": False,
    },
)
KEY_CONTRACT: Final = _contract(
    "desktop_key",
    "key",
    SafetyClass.WRITE,
    "Press keys on this agent's virtual desktop, such as ctrl+s or Return.",
    "Presses each space-separated combination in `keys`: modifiers (ctrl, alt, shift, "
    "super, meta) joined by '+' to one key (a letter or digit, Return, Tab, Escape, "
    "BackSpace, Delete, arrows Up/Down/Left/Right, Home, End, Page_Up, Page_Down, F1-F12, "
    "space and punctuation names).",
    {"keys": {"type": "string", "minLength": 1, "maxLength": 400}},
    ["keys"],
)
SCROLL_CONTRACT: Final = _contract(
    "desktop_scroll",
    "scroll",
    SafetyClass.WRITE,
    "Scroll the window under the pointer on this agent's virtual desktop.",
    "Scrolls `dy` wheel steps (positive: down) and `dx` steps (positive: right).",
    {
        "dx": {"type": "integer", "minimum": -50, "maximum": 50},
        "dy": {"type": "integer", "minimum": -50, "maximum": 50},
    },
    ["dy"],
)
SCREENSHOT_CONTRACT: Final = _contract(
    "desktop_screenshot",
    "screenshot",
    SafetyClass.READ,
    "Save a PNG of this agent's virtual desktop in the workspace.",
    "Captures the whole screen into `.synthorg/screenshots/` in the workspace; returns its "
    "path, SHA-256, width and height.",
    {},
    [],
    {
        "type": "object",
        "properties": {
            "path": {"type": "string"},
            "sha256": {"type": "string", "pattern": "^[0-9a-f]{64}$"},
            "width": {"type": "integer"},
            "height": {"type": "integer"},
        },
        "required": ["path", "sha256", "width", "height"],
        "additionalProperties": False,
    },
)
