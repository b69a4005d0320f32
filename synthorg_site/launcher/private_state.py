"""At start: the console's processes create private files, and looser modes are repaired."""

from __future__ import annotations

import os
from collections.abc import Callable

from common.platform import runtime
from common.platform.private_state import PRIVATE_UMASK, ensure_var_layout, repair_modes

# Repairs named one per line; the rest are counted in one line.
SHOWN_REPAIRS = 5


def secure_private_state(say: Callable[[str], None]) -> None:
    """Set umask 077 for the launcher and every child, lay out var/, repair and name loose modes."""
    os.umask(PRIVATE_UMASK)
    var = runtime.var_dir()
    ensure_var_layout(var)
    # The shallowest first: var/ itself and its own files say more than a tool's files.
    repaired = sorted(repair_modes(var), key=lambda e: (len(e.path.parts), str(e.path)))
    for entry in repaired[:SHOWN_REPAIRS]:
        say(f"warning: {entry.describe()} (the console's state is private to its user)")
    if len(repaired) > SHOWN_REPAIRS:
        say(
            f"warning: {len(repaired) - SHOWN_REPAIRS} more entries under {var} were made "
            "private to the console's user the same way"
        )
