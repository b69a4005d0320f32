"""``browser``: the opt-in headless browser tools (``browser_navigate``, ``_screenshot``,
``_diff``, ``_accessibility_scan``, ``_spec``).

The section's presence turns the category on (``browser: {}`` takes every default);
the tools are then governed by levels, lists, autonomy and approval like any other.
Chromium runs inside the category's isolating sandbox backend, its network only
through the egress proxy and the agent's grant.
"""

from __future__ import annotations

from typing import Final, Literal

from pydantic import Field, StrictInt, StrictStr, field_validator

from common.strict import StrictModel

# Debian's Chromium binary itself: /usr/bin/chromium is a shell wrapper reading /etc,
# which the sandbox does not show.
DEFAULT_CHROMIUM: Final = "/usr/lib/chromium/chromium"
MIB: Final = 1024 * 1024


class Viewport(StrictModel):
    """A page's width and height in CSS pixels."""

    width: StrictInt = Field(default=1280, ge=100, le=4096)
    height: StrictInt = Field(default=800, ge=100, le=4096)


class BrowserSection(StrictModel):
    """The ``browser`` section: where Chromium is, and the ceilings of one call."""

    chromium_path: StrictStr = DEFAULT_CHROMIUM
    # per_call: a fresh profile per call, nothing one page stores is seen by the next.
    # per_agent_session: the agent's calls share one profile (cookies, storage), kept
    # sealed between them and ended after session_idle_seconds without a browser call,
    # session_max_seconds after it began, or when the agent is switched off.
    profile: Literal["per_call", "per_agent_session"] = "per_call"
    session_idle_seconds: StrictInt = Field(default=1800, ge=60, le=7 * 86400)
    session_max_seconds: StrictInt = Field(default=86400, ge=60, le=30 * 86400)
    # The packed profile kept between calls; past it the session starts afresh.
    profile_max_mb: StrictInt = Field(default=16, ge=1, le=64)
    default_timeout_seconds: float = Field(default=30.0, gt=0, le=600)
    max_timeout_seconds: float = Field(default=120.0, gt=0, le=600)
    memory_mb: StrictInt = Field(default=1024, ge=256, le=16384)
    # Chromium's threads count against the sandbox's process ceiling.
    max_processes: StrictInt = Field(default=512, ge=64, le=4096)
    viewport: Viewport = Viewport()
    max_text_chars: StrictInt = Field(default=100_000, gt=0, le=2_000_000)
    max_links: StrictInt = Field(default=200, gt=0, le=5000)
    max_full_page_height: StrictInt = Field(default=8000, ge=100, le=32768)
    # Files a page downloads during browser_navigate, kept in the workspace under
    # .synthorg/downloads/ and held to its quota; 0 refuses every download.
    max_downloads: StrictInt = Field(default=5, ge=0, le=50)
    # One call's downloads together; also bounded by what the quota has left and by the
    # sandbox's /tmp, where the browser writes them first.
    max_download_mb: StrictInt = Field(default=16, ge=1, le=64)

    @field_validator("chromium_path")
    @classmethod
    def _system_path(cls, value: str) -> str:
        # Only read-only system directories are visible inside the sandbox.
        if not value.startswith("/usr/") or "/../" in value:
            raise ValueError("chromium_path must be an absolute path under /usr")
        return value

    @property
    def memory_bytes(self) -> int:
        """The memory one call's browser may use."""
        return self.memory_mb * MIB

    @property
    def profile_max_bytes(self) -> int:
        """What an agent's packed profile may weigh."""
        return self.profile_max_mb * MIB

    @property
    def max_download_bytes(self) -> int:
        """What one call's downloads may hold together."""
        return self.max_download_mb * MIB
