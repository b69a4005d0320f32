"""PURE: the desktop tools' arguments, checked before anything reaches a session.

Programs: the section's ``allowed_programs``, narrowed by the agent's own
``denied_commands`` and the shell's never-run list; a terminal emulator (a shell
in a window) only for an agent whose level gives it a terminal. Keys: a fixed
grammar (modifiers, then one key of a closed list). Text: printable, bounded.
Coordinates: on the screen.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, Final

from tools_app.builtin.base import RefusalCode, ToolRefusedError
from tools_app.builtin.terminal.shell.families import program_family
from tools_app.builtin.terminal.shell.policy import (
    DEFAULT_SEARCH_PATH,
    CommandRefusedError,
    ProgramRules,
    check_argv,
    resolve_program,
)
from tools_app.sandbox.env import is_denied

MAX_ARGV_WORDS: Final = 64
MAX_ARGV_BYTES: Final = 16 * 1024
MAX_ENV: Final = 32
MAX_ENV_VALUE: Final = 1024
MAX_KEY_COMBOS: Final = 16
MAX_SCROLL: Final = 50
ENV_NAME: Final = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")
# The session sets these itself; an agent's value would move the display or the lookup.
SESSION_OWN_ENV: Final = frozenset({"DISPLAY", "XAUTHORITY", "PATH", "HOME", "TMPDIR", "PWD"})
TERMINAL_EMULATORS: Final = frozenset(
    {"xterm", "uxterm", "lxterm", "koi8rxterm", "x-terminal-emulator", "rxvt", "urxvt"}
)
MODIFIERS: Final = {
    "ctrl": "ctrl",
    "control": "ctrl",
    "alt": "alt",
    "shift": "shift",
    "super": "super",
    "meta": "meta",
}
NAMED_KEYS: Final = {
    name.lower(): name
    for name in (
        "Return", "Tab", "Escape", "BackSpace", "Delete", "Insert", "Home", "End",
        "Page_Up", "Page_Down", "Up", "Down", "Left", "Right", "space", "minus", "equal",
        "comma", "period", "slash", "backslash", "semicolon", "apostrophe", "grave",
        "bracketleft", "bracketright", "Menu", "Print",
        *(f"F{n}" for n in range(1, 13)),
    )
}  # fmt: skip
KEY_ALIASES: Final = {"enter": "Return", "esc": "Escape", "del": "Delete", "pgup": "Page_Up"}


def refuse(message: str, code: RefusalCode = RefusalCode.INVALID_ARGUMENT) -> ToolRefusedError:
    return ToolRefusedError(code, message)


def checked_program(
    argv: object, allowed_programs: Sequence[str], sub_constraints: Mapping[str, Any]
) -> list[str]:
    """``argv`` with its program as the file the check judged; refusals say why."""
    if (
        not isinstance(argv, list | tuple)
        or not argv
        or len(argv) > MAX_ARGV_WORDS
        or not all(isinstance(w, str) and "\x00" not in w for w in argv)
    ):
        raise refuse(f"argv must be a list of 1 to {MAX_ARGV_WORDS} strings")
    words = [str(w) for w in argv]
    if sum(len(w.encode()) for w in words) > MAX_ARGV_BYTES:
        raise refuse(f"argv is longer than {MAX_ARGV_BYTES} bytes", RefusalCode.LIMIT_EXCEEDED)
    allowed = frozenset(program_family(p) for p in allowed_programs)
    denied = frozenset(
        program_family(str(p)) for p in (sub_constraints.get("denied_commands") or ())
    )
    rules = ProgramRules(allowed=allowed, denied=denied, search_path=DEFAULT_SEARCH_PATH)
    try:
        check_argv(words, rules, "/")
        program = resolve_program(words[0], rules, "/")
    except CommandRefusedError as exc:
        raise refuse(
            f"{exc.reason} (desktop.allowed_programs in the config names what may run)",
            RefusalCode.BINARY_NOT_ALLOWED,
        ) from exc
    if program.real_path is None:
        raise refuse(f"{words[0]!r} is not installed here", RefusalCode.BINARY_NOT_ALLOWED)
    terminal = str(sub_constraints.get("terminal") or "restricted_commands")
    if program.families & TERMINAL_EMULATORS and terminal == "none":
        raise refuse(
            f"{words[0]} opens a shell, and this agent has no terminal access (terminal: none)",
            RefusalCode.BINARY_NOT_ALLOWED,
        )
    # What was judged is what runs: the resolved file, not the name looked up again.
    return [program.real_path, *words[1:]]


def checked_env(env: object) -> dict[str, str]:
    if env is None:
        return {}
    if not isinstance(env, Mapping) or len(env) > MAX_ENV:
        raise refuse(f"env must be an object of at most {MAX_ENV} variables")
    checked: dict[str, str] = {}
    for name, value in env.items():
        if not isinstance(name, str) or not ENV_NAME.match(name):
            raise refuse(f"env: {str(name)[:80]!r} is not a variable name")
        if name.upper() in SESSION_OWN_ENV or is_denied(name):
            raise refuse(f"env: {name} may not be set for a desktop program")
        if not isinstance(value, str) or "\x00" in value or len(value) > MAX_ENV_VALUE:
            raise refuse(f"env: {name} must be a string of at most {MAX_ENV_VALUE} characters")
        checked[name] = value
    return checked


def checked_keys(keys: object) -> list[str]:
    """``"ctrl+s"``, ``"Return"``, ``"ctrl+shift+t Tab"``: combos as xdotool names them."""
    if not isinstance(keys, str) or not keys.strip():
        raise refuse("keys must be a string like 'ctrl+s' or 'Return'")
    combos = keys.split()
    if len(combos) > MAX_KEY_COMBOS:
        raise refuse(f"keys names more than {MAX_KEY_COMBOS} combinations")
    return [_combo(combo) for combo in combos]


def _combo(combo: str) -> str:
    parts = combo.split("+")
    *modifiers, key = parts
    names = []
    for modifier in modifiers:
        name = MODIFIERS.get(modifier.lower())
        if name is None or name in names:
            raise refuse(
                f"keys: {modifier!r} is not a modifier; modifiers: "
                + ", ".join(sorted(set(MODIFIERS.values())))
            )
        names.append(name)
    return "+".join([*names, _key(key)])


def _key(key: str) -> str:
    if len(key) == 1 and key.isascii() and key.isalnum():
        return key
    lowered = key.lower()
    named = KEY_ALIASES.get(lowered) or NAMED_KEYS.get(lowered)
    if named is None:
        raise refuse(
            f"keys: {key[:40]!r} is not a key; use a letter or digit, or one of "
            + ", ".join(sorted(NAMED_KEYS.values()))
        )
    return named


def checked_text(text: object, limit: int) -> str:
    if not isinstance(text, str) or not text:
        raise refuse("text must be a non-empty string")
    if len(text) > limit:
        raise refuse(f"text is longer than {limit} characters", RefusalCode.LIMIT_EXCEEDED)
    for ch in text:
        if ch in "\n\t":
            continue
        if not ch.isprintable():
            raise refuse(f"text contains the control character U+{ord(ch):04X}")
    return text


def checked_point(x: object, y: object, width: int, height: int) -> tuple[int, int]:
    for name, value, size in (("x", x, width), ("y", y, height)):
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < size:
            raise refuse(f"{name} must be an integer from 0 to {size - 1} (the screen is "
                         f"{width}x{height})")  # fmt: skip
    return int(x), int(y)  # type: ignore[call-overload]


def checked_steps(value: object, name: str, *, required: bool) -> int:
    if value is None and not required:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or abs(value) > MAX_SCROLL:
        raise refuse(f"{name} must be an integer from -{MAX_SCROLL} to {MAX_SCROLL}")
    return value
