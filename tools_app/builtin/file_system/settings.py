"""The file tools' own settings, checked when the config loads.

The tools still read them per call (``FileSystemSettings.from_mapping`` in
``tools_app.builtin.file_system.execution``); this model refuses a bad value at load,
with the field and what is allowed. ``timeout_seconds`` is a common switch.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, Field, StrictBool, StrictInt, StrictStr

from common.strict import StrictModel
from tools_app.builtin.file_system.paths import DEFAULT_MAX_PATH_BYTES
from tools_app.sandbox.protocol import MIB


def _pattern(value: str) -> str:
    if not value.strip("/"):
        raise ValueError("each denied_paths entry must be a path pattern, not empty or only '/'")
    return value


class FileToolSettings(StrictModel):
    """``tools.<file tool>`` (read_file, write_file, edit_file, list_directory, delete_file,
    stat) beyond the common switches."""

    max_path_length: StrictInt = Field(default=DEFAULT_MAX_PATH_BYTES, gt=0)
    max_read_bytes: StrictInt = Field(default=MIB, gt=0)
    max_write_bytes: StrictInt = Field(default=MIB, gt=0)
    max_entries: StrictInt = Field(default=1000, gt=0)
    read_only: StrictBool = False
    denied_paths: tuple[Annotated[StrictStr, AfterValidator(_pattern)], ...] | None = None
