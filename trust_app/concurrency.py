"""An agent's cap on calls at once: the bounds every door that sets it checks (pure).

None means the console default (``SYNTHORG_AGENT_MAX_CONCURRENT_CALLS``); calls beyond
the cap wait their turn, queued, and are never refused for it.
"""

from __future__ import annotations

from typing import Final

MAX_CONCURRENT_CALLS_MIN: Final = 1
# The bounds of SYNTHORG_AGENT_MAX_CONCURRENT_CALLS, the console default.
MAX_CONCURRENT_CALLS_MAX: Final = 10_000


def max_concurrent_calls_problem(value: object, *, default: int | None = None) -> str | None:
    """What is wrong with ``value`` as a cap, with the allowed values; None when it is fine."""
    # bool is an int to Python, never to a person setting a cap.
    if value is None or (
        isinstance(value, int)
        and not isinstance(value, bool)
        and MAX_CONCURRENT_CALLS_MIN <= value <= MAX_CONCURRENT_CALLS_MAX
    ):
        return None
    console_default = f"the console default ({default})" if default else "the console default"
    return (
        f"{value!r} is not allowed; allowed values: a whole number from "
        f"{MAX_CONCURRENT_CALLS_MIN} to {MAX_CONCURRENT_CALLS_MAX}, or none for {console_default}"
    )
