"""Why the console image could not be built."""

from __future__ import annotations


class ConsoleImageError(Exception):
    """The build failed; the message says which step and why."""
