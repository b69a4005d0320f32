"""The memory tools' own settings, checked when the config loads.

The tools still read them per call (``positive_int`` in ``tools_app.builtin.memory.tools``);
these models refuse a bad value at load, with the field and what is allowed.
"""

from __future__ import annotations

from typing import Final

from pydantic import Field, StrictInt

from common.strict import StrictModel

DEFAULT_MAX_CONTENT_CHARS: Final = 8000
DEFAULT_MAX_TAGS: Final = 16
DEFAULT_MAX_MEMORIES: Final = 10_000
DEFAULT_MAX_RESULTS: Final = 50


class MemoryStoreSettings(StrictModel):
    """``tools.memory_store`` beyond the common switches."""

    max_content_chars: StrictInt = Field(default=DEFAULT_MAX_CONTENT_CHARS, ge=1)
    max_tags: StrictInt = Field(default=DEFAULT_MAX_TAGS, ge=1)
    max_memories_per_agent: StrictInt = Field(default=DEFAULT_MAX_MEMORIES, ge=1)


class MemorySearchSettings(StrictModel):
    """``tools.memory_search`` beyond the common switches."""

    max_results: StrictInt = Field(default=DEFAULT_MAX_RESULTS, ge=1)


class MemoryRecallSettings(StrictModel):
    """``tools.memory_recall``: only the common switches."""
