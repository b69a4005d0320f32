"""``desktop``: the opt-in virtual desktop tools (``desktop_launch``, ``_click``, ``_type``,
``_key``, ``_scroll``, ``_screenshot``).

The section's presence turns the category on (``desktop: {}`` takes every default) on
workers where its programs are installed and the namespace sandbox works, or where the
category runs on docker (the GUI image holds the programs); elsewhere ``/healthz`` and
the tools page say what is missing. One session per agent and workspace: Xvfb, the
agent's programs on it and xdotool, all inside one confined, long-lived sandbox without
network (a namespace sandbox, or a container of its own), ended when idle, when too
old, when its programs end, or when the agent is switched off.
"""

from __future__ import annotations

from typing import Final

from pydantic import Field, StrictInt, StrictStr, field_validator

from common.strict import StrictModel

MIB: Final = 1024 * 1024
DEFAULT_PROGRAMS: Final = ("xterm", "xmessage", "xeyes", "xclock", "xcalc", "xlogo")


def _system_path(value: str) -> str:
    # Only read-only system directories are visible inside the sandbox.
    if not value.startswith("/usr/") or "/../" in value:
        raise ValueError("must be an absolute path under /usr")
    return value


class DesktopSection(StrictModel):
    """The ``desktop`` section: the programs, the screen and a session's ceilings."""

    xvfb_path: StrictStr = "/usr/bin/Xvfb"
    xdotool_path: StrictStr = "/usr/bin/xdotool"
    scrot_path: StrictStr = "/usr/bin/scrot"
    # Program names (or their real files) desktop_launch may start; an agent's own
    # denied_commands and the terminal rules of its level narrow them further.
    allowed_programs: tuple[StrictStr, ...] = DEFAULT_PROGRAMS
    width: StrictInt = Field(default=1024, ge=320, le=3840)
    height: StrictInt = Field(default=768, ge=240, le=2160)
    idle_seconds: float = Field(default=300.0, gt=0, le=86400)
    max_age_seconds: float = Field(default=3600.0, gt=0, le=86400)
    # How long desktop_launch waits for the display and for the program's first window.
    start_seconds: float = Field(default=20.0, gt=0, le=300)
    window_seconds: float = Field(default=10.0, gt=0, le=300)
    call_timeout_seconds: float = Field(default=30.0, gt=0, le=600)
    max_programs: StrictInt = Field(default=8, ge=1, le=64)
    max_text_chars: StrictInt = Field(default=2000, ge=1, le=100_000)
    type_delay_ms: StrictInt = Field(default=12, ge=0, le=1000)
    memory_mb: StrictInt = Field(default=1024, ge=128, le=16384)
    max_processes: StrictInt = Field(default=256, ge=16, le=4096)
    # CPU seconds over the session's whole life.
    cpu_seconds: StrictInt = Field(default=1800, ge=10, le=86400)
    # How often the worker holding a session checks it (idle, age, agent switched off).
    check_seconds: float = Field(default=2.0, gt=0, le=60)
    # How often the agent's page refreshes the picture of a live session: at most one
    # capture per session in this time, however many people watch it.
    watch_seconds: float = Field(default=3.0, ge=1, le=600)
    # Where sessions' control sockets live, reachable by every worker of the machine
    # (null: /run/synthorg-desktop for a worker running as root, else a directory of
    # the worker's user under /tmp).
    runtime_dir: StrictStr | None = None

    @field_validator("xvfb_path", "xdotool_path", "scrot_path")
    @classmethod
    def _programs(cls, value: str) -> str:
        return _system_path(value)

    @field_validator("allowed_programs")
    @classmethod
    def _names(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for name in value:
            if not name.strip() or "\x00" in name:
                raise ValueError("a program name must not be empty")
        return value

    @field_validator("runtime_dir")
    @classmethod
    def _absolute(cls, value: str | None) -> str | None:
        if value is None:
            return None
        if not value.startswith("/") or value.rstrip("/") in ("", "/tmp", "/run"):  # noqa: S108
            raise ValueError("must be an absolute directory of its own (not / or /tmp)")
        return value.rstrip("/")

    @property
    def memory_bytes(self) -> int:
        """The memory a whole session may use."""
        return self.memory_mb * MIB
