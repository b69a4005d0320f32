"""``tools.browser_*`` (navigate, screenshot, diff, accessibility_scan, spec): their settings.

Beyond the common switches (``timeout_seconds`` is the default time of a call), a
tool may narrow the agent's network grant: ``allowed_hosts`` (a destination must be
on it too) and ``denied_hosts`` (refused whatever else allows them). The browser's
own ceilings are in the config's ``browser`` section (``common.config.browser``).
"""

from __future__ import annotations

from common.strict import StrictModel
from tools_app.builtin.terminal.settings import HostList


class BrowserToolSettings(StrictModel):
    """``tools.<browser tool>`` beyond the common switches."""

    allowed_hosts: HostList = None
    denied_hosts: HostList = None
