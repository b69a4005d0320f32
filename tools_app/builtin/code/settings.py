"""``tools.code_runner``: the code runner's own settings, checked when the config loads.

The runner still reads them per call (``tools_app.builtin.code.tools``); this model
refuses a bad value at load, with the field and what is allowed. Numbers are any
positive number, as the runner reads them.
"""

from __future__ import annotations

from pydantic import Field, StrictBool, StrictFloat

from common.strict import StrictModel
from tools_app.builtin.terminal.settings import DEFAULT_MAX_LINK_SCAN_ENTRIES, HostList


class CodeRunnerSettings(StrictModel):
    """``tools.code_runner`` beyond the common switches."""

    max_timeout_seconds: StrictFloat = Field(default=300.0, gt=0)
    max_code_bytes: StrictFloat = Field(default=64 * 1024, gt=0)
    read_only: StrictBool = False
    max_link_scan_entries: StrictFloat = Field(default=DEFAULT_MAX_LINK_SCAN_ENTRIES, gt=0)
    allowed_hosts: HostList = None
    denied_hosts: HostList = None
