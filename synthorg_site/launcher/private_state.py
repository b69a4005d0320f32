"""At start: the console's processes create private files, and looser modes are repaired."""

from __future__ import annotations

import os
from collections.abc import Callable

from common.platform import runtime
from common.platform.private_state import PRIVATE_UMASK, ensure_var_layout, repair_modes


def secure_private_state(say: Callable[[str], None]) -> None:
    """Set umask 077 for the launcher and every child, lay out var/, repair and name loose modes."""
    os.umask(PRIVATE_UMASK)
    var = runtime.var_dir()
    ensure_var_layout(var)
    for entry in repair_modes(var):
        say(f"warning: {entry.describe()} (the console's state is private to its user)")
