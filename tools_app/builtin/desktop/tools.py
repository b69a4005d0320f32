"""The virtual desktop tools: launch a GUI program, click, type, press keys, scroll, look.

Opt-in: registered only when the config has a ``desktop`` section and this machine
has Xvfb, xdotool and scrot. ``desktop_launch`` starts the agent's session (see
``session``): Xvfb on a display of its own inside one long-lived namespace sandbox, or
on the docker backend one container of the GUI image (the agent's workspace writable, no
network, the section's memory, process and CPU ceilings over its whole life) with the
program on it; later calls of the same
agent and workspace, taken by any worker process of the machine, drive that session.
A call with no live session fails ``desktop_app_not_running``; a call while a person has
taken over the agent's desktop (its page, ``tools_app.views.desktop``) fails
``desktop_taken_over`` naming them, until they hand it back.

Walls, in order: the arguments (program allowlist, key grammar, bounded printable
text, coordinates on the screen) are checked here; the session is looked up by the
agent the call runs for, never by an argument; the sandbox shows only that agent's
workspace and read-only system directories and has no network; a screenshot is
read back here without following links and its digest computed from the bytes read.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import secrets
import shutil
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Final

from common.config import SynthOrgConfig
from common.config.desktop import DesktopSection
from common.settings_config import synthorg_config
from common.vocabulary.categories import ToolCategory
from tools_app.builtin.base import (
    CANCELLED_CODE,
    ToolContext,
    ToolFailedError,
    ToolOutcome,
)
from tools_app.builtin.desktop.arguments import (
    checked_env,
    checked_keys,
    checked_point,
    checked_program,
    checked_steps,
    checked_text,
    refuse,
)
from tools_app.builtin.desktop.contracts import (
    CLICK_CONTRACT,
    KEY_CONTRACT,
    LAUNCH_CONTRACT,
    SCREENSHOT_CONTRACT,
    SCROLL_CONTRACT,
    TYPE_CONTRACT,
)
from tools_app.builtin.desktop.inside.host import typing_seconds
from tools_app.builtin.desktop.quota import desktop_call_held
from tools_app.builtin.desktop.screenshots import png_size, read_screenshot
from tools_app.builtin.desktop.session import (
    NOT_RUNNING,
    DesktopSessionError,
    SessionBackend,
    SessionLimits,
    SessionPlace,
    ask,
    live,
    runtime_root,
    session_place,
    start_lock,
    start_session,
    stop_session,
)
from tools_app.contracts import ToolContract
from tools_app.sandbox.backends.docker.backend import DockerSandbox
from tools_app.sandbox.backends.namespace import NamespaceSandbox
from tools_app.sandbox.errors import SandboxError
from tools_app.sandbox.protocol import Limits, MountMode, SandboxSpec, WorkspaceMount

HOST_SOURCE: Final = (Path(__file__).parent / "inside" / "host.py").read_text(encoding="utf-8")
SCREENSHOT_DIR: Final = ".synthorg/screenshots"
SESSION_PATH: Final = "/usr/local/bin:/usr/bin:/bin"
# Xvfb and toolkits reserve address space they never touch; the memory cgroup bounds use.
ADDRESS_SPACE_BYTES: Final = 1 << 38
TAKEN_OVER: Final = "desktop_taken_over"


def missing_programs(section: DesktopSection) -> list[str]:
    """The desktop's own programs this machine lacks."""
    return [
        path
        for path in (section.xvfb_path, section.xdotool_path, section.scrot_path)
        if not (os.path.isfile(path) and os.access(path, os.X_OK))
    ]


def desktop_readiness(config: SynthOrgConfig) -> tuple[bool, str]:
    """Whether the category is on here, and why (or why not), for /healthz and the tools page."""
    section = config.desktop
    if section is None:
        return False, "off: the config has no 'desktop' section"
    backend = config.sandboxing.backend_for(ToolCategory.DESKTOP.value)
    if backend == "docker":
        return True, (
            f"on: Xvfb {section.width}x{section.height}, one container of the image "
            f"{config.sandboxing.docker.gui_image} per agent session on the docker sandbox, no "
            f"network; ends after {section.idle_seconds:g}s idle or {section.max_age_seconds:g}s"
        )
    if backend != "namespace":
        return False, (
            f"off: the desktop runs only on the namespace or docker sandbox, and "
            f"sandboxing sends the desktop category to {backend!r}"
        )
    missing = missing_programs(section)
    if missing:
        return False, (
            "off: not installed here: " + ", ".join(missing) + " (apt-get install xvfb "
            "xdotool scrot)"
        )
    if shutil.which("bwrap") is None:
        return False, "off: bubblewrap (bwrap) is not installed"
    return True, (
        f"on: Xvfb {section.width}x{section.height}, one session per agent in the namespace "
        f"sandbox, no network; ends after {section.idle_seconds:g}s idle or "
        f"{section.max_age_seconds:g}s"
    )


def desktop_offered(config: SynthOrgConfig) -> bool:
    """On where the config has a ``desktop`` section and its backend can run here."""
    return desktop_readiness(config)[0]


def desktop_section() -> DesktopSection:
    section = synthorg_config().desktop
    if section is None:
        raise ToolFailedError(
            "the desktop tools are off: the config has no 'desktop' section",
            code="DESKTOP_UNAVAILABLE",
        )
    return section


def _place(context: ToolContext, section: DesktopSection) -> SessionPlace:
    try:
        return session_place(runtime_root(section.runtime_dir), context.agent_id, context.workspace)
    except DesktopSessionError as exc:
        raise ToolFailedError(exc.message, code=exc.code) from exc
    except OSError as exc:
        raise ToolFailedError(f"the workspace is not reachable: {exc}", code=NOT_RUNNING) from exc


def _agent_still_active(agent_id: str) -> Callable[[], bool]:
    def keep() -> bool:
        from django.db import connection

        from trust_app.models import Agent

        try:
            return Agent.objects.filter(id=agent_id, active=True).exists()
        finally:
            # A watcher thread keeps no connection between its looks.
            connection.close()

    return keep


def _cancelled(context: ToolContext) -> bool:
    if context.invocation_id is None:
        return False
    from tools_app.models import Invocation

    return Invocation.objects.filter(
        id=context.invocation_id, cancel_requested_at__isnull=False
    ).exists()


def _not_taken_over(context: ToolContext) -> None:
    """Refuse the call while a person holds the agent's desktop (they hand it back)."""
    from tools_app.models import DesktopTakeover

    holder = (
        DesktopTakeover.objects.filter(agent_id=context.agent_id)
        .values_list("person_name", flat=True)
        .first()
    )
    if holder is not None:
        raise ToolFailedError(
            f"{holder} has taken over this agent's desktop: its desktop calls are refused "
            "until they hand it back; try again later",
            code=TAKEN_OVER,
        )


def _drive(
    context: ToolContext, request: dict[str, Any], *, extra_seconds: float = 0.0
) -> dict[str, Any]:
    """Send ``request`` to the agent's session; failures raised with their code."""
    section = desktop_section()
    _not_taken_over(context)
    place = _place(context, section)
    # Held to the workspace quota (a session that is gone says so before any measure).
    quota = desktop_call_held(context) if live(place) else contextlib.nullcontext()
    try:
        with quota:
            answer = ask(
                place,
                request,
                timeout=section.call_timeout_seconds + extra_seconds,
                cancelled=lambda: _cancelled(context),
            )
    except DesktopSessionError as exc:
        raise ToolFailedError(
            exc.message, code=exc.code, timed_out=exc.code == "TIMED_OUT"
        ) from exc
    if _cancelled(context):
        # A cancelled call stops the desktop it was driving: nothing more is done there.
        stop_session(place)
        raise ToolFailedError(
            "the call was cancelled; its desktop session was ended", code=CANCELLED_CODE
        )
    if not answer.get("ok"):
        code = str(answer.get("code") or "DESKTOP_FAILED")
        message = str(answer.get("message") or "the desktop failed")
        if code == NOT_RUNNING:
            message = f"{message}; start one with desktop_launch"
        raise ToolFailedError(message, code=code)
    return answer


def _backend(context: ToolContext) -> SessionBackend:
    # The worker hands over its backend wrapped (metrics, the workspace quota's per-call
    # measure); a session outlives calls and needs the backend itself.
    backend: object = context.sandbox
    for _ in range(8):
        if not hasattr(backend, "inner"):
            break
        backend = backend.inner
    if not isinstance(backend, NamespaceSandbox | DockerSandbox):
        raise ToolFailedError(
            "the desktop runs only on the namespace or docker sandbox; the desktop category "
            f"here uses {getattr(context.sandbox, 'name', 'an unknown backend')!r}. Ask an "
            "admin to set sandboxing.overrides.desktop to namespace or docker",
            code="SANDBOX_NOT_ISOLATED",
        )
    return backend


def host_spec(
    section: DesktopSection, context: ToolContext, argv: list[str], env: dict[str, str]
) -> SandboxSpec:
    """The session's sandbox: the host program, with the section's ceilings for its life."""
    setup = {
        "argv": argv,
        "env": env,
        "control": "/run/synthorg-desktop/control.sock",
        "path": SESSION_PATH,
        "xvfb": section.xvfb_path,
        "xdotool": section.xdotool_path,
        "scrot": section.scrot_path,
        "width": section.width,
        "height": section.height,
        "idle_seconds": section.idle_seconds,
        "max_age_seconds": section.max_age_seconds,
        "start_seconds": section.start_seconds,
        "window_seconds": section.window_seconds,
        "max_programs": section.max_programs,
        "type_delay_ms": section.type_delay_ms,
    }
    return SandboxSpec(
        argv=("python3", "-I", "-S", "-c", HOST_SOURCE, json.dumps(setup)),
        workspace=WorkspaceMount(context.workspace, MountMode.READ_WRITE),
        timeout_seconds=section.max_age_seconds,
        limits=Limits(
            memory_bytes=section.memory_bytes,
            cpu_seconds=section.cpu_seconds,
            max_processes=section.max_processes,
            open_files=1024,
            address_space_bytes=max(ADDRESS_SPACE_BYTES, section.memory_bytes),
        ),
        owner=context.owner,
        terminals=True,  # xterm, the desktop's terminal, needs them
    )


class DesktopLaunchTool:
    """``desktop_launch``: a program on the agent's desktop, the session started if needed."""

    contract: ToolContract = LAUNCH_CONTRACT
    offered = staticmethod(desktop_offered)

    def run(self, context: ToolContext, arguments: Mapping[str, Any]) -> ToolOutcome:
        """Check the program, then start it in the agent's session (started first if none)."""
        section = desktop_section()
        backend = _backend(context)
        argv = checked_program(
            arguments.get("argv"), section.allowed_programs, context.sub_constraints
        )
        env = checked_env(arguments.get("env"))
        _not_taken_over(context)
        place = _place(context, section)
        began = time.monotonic()
        try:
            with start_lock(place):
                if live(place):
                    answer = _drive(context, {"action": "launch", "argv": argv, "env": env})
                else:
                    with desktop_call_held(context):
                        answer = start_session(
                            place,
                            backend,
                            host_spec(section, context, argv, env),
                            limits=SessionLimits(
                                idle_seconds=section.idle_seconds,
                                max_age_seconds=section.max_age_seconds,
                                check_seconds=section.check_seconds,
                                start_seconds=section.start_seconds + section.window_seconds + 10,
                            ),
                            keep=_agent_still_active(context.agent_id),
                            describe={"agent_id": context.agent_id},
                        )
        except DesktopSessionError as exc:
            raise ToolFailedError(exc.message, code=exc.code) from exc
        except SandboxError as exc:
            raise ToolFailedError(exc.reason, code="SANDBOX_REFUSED") from exc
        structured = {
            "session": place.key,
            "pid": int(answer["pid"]),
            "window_title": str(answer.get("window_title") or ""),
        }
        content = (
            f"started {os.path.basename(argv[0])} (pid {structured['pid']}) on desktop "
            f"session {place.key}; window: {structured['window_title'] or '(none yet)'}"
        )
        return ToolOutcome(
            content=content,
            structured=structured,
            duration_ms=int((time.monotonic() - began) * 1000),
        )


class DesktopClickTool:
    """``desktop_click``."""

    contract: ToolContract = CLICK_CONTRACT
    offered = staticmethod(desktop_offered)

    def run(self, context: ToolContext, arguments: Mapping[str, Any]) -> ToolOutcome:
        """Click at a point on the screen."""
        section = desktop_section()
        x, y = checked_point(arguments.get("x"), arguments.get("y"), section.width, section.height)
        button = arguments.get("button", "left")
        if button not in ("left", "middle", "right"):
            raise refuse("button must be left, middle or right")
        double = arguments.get("double", False)
        if not isinstance(double, bool):
            raise refuse("double must be true or false")
        _drive(context, {"action": "click", "x": x, "y": y, "button": button, "double": double})
        return ToolOutcome(
            content=f"{'double-' if double else ''}clicked {button} at ({x}, {y})",
            structured={"ok": True},
        )


class DesktopTypeTool:
    """``desktop_type``."""

    contract: ToolContract = TYPE_CONTRACT
    offered = staticmethod(desktop_offered)

    def run(self, context: ToolContext, arguments: Mapping[str, Any]) -> ToolOutcome:
        """Type the text into the focused window."""
        section = desktop_section()
        text = checked_text(arguments.get("text"), section.max_text_chars)
        answer = _drive(
            context,
            {"action": "type", "text": text},
            extra_seconds=typing_seconds(len(text), section.type_delay_ms),
        )
        characters = int(answer.get("characters", len(text)))
        return ToolOutcome(
            content=f"typed {characters} characters",
            structured={"ok": True, "characters": characters},
        )


class DesktopKeyTool:
    """``desktop_key``."""

    contract: ToolContract = KEY_CONTRACT
    offered = staticmethod(desktop_offered)

    def run(self, context: ToolContext, arguments: Mapping[str, Any]) -> ToolOutcome:
        """Press the key combinations in order."""
        desktop_section()
        keys = checked_keys(arguments.get("keys"))
        _drive(context, {"action": "key", "keys": keys})
        return ToolOutcome(content="pressed " + " ".join(keys), structured={"ok": True})


class DesktopScrollTool:
    """``desktop_scroll``."""

    contract: ToolContract = SCROLL_CONTRACT
    offered = staticmethod(desktop_offered)

    def run(self, context: ToolContext, arguments: Mapping[str, Any]) -> ToolOutcome:
        """Turn the wheel under the pointer."""
        desktop_section()
        dy = checked_steps(arguments.get("dy"), "dy", required=True)
        dx = checked_steps(arguments.get("dx"), "dx", required=False)
        _drive(context, {"action": "scroll", "dx": dx, "dy": dy})
        return ToolOutcome(content=f"scrolled dx={dx} dy={dy}", structured={"ok": True})


class DesktopScreenshotTool:
    """``desktop_screenshot``: the screen as a PNG in the workspace, as evidence."""

    contract: ToolContract = SCREENSHOT_CONTRACT
    offered = staticmethod(desktop_offered)

    def run(self, context: ToolContext, arguments: Mapping[str, Any]) -> ToolOutcome:
        """Capture the screen, then read the file back and describe what was read."""
        desktop_section()
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        name = f"desktop-{stamp}-{secrets.token_hex(4)}.png"
        answer = _drive(context, {"action": "screenshot", "name": name})
        relative = f"{SCREENSHOT_DIR}/{name}"
        if answer.get("path") != relative:
            raise ToolFailedError("the desktop saved the picture elsewhere", code="DESKTOP_FAILED")
        data = read_screenshot(context.workspace, relative)
        width, height = png_size(data)
        structured = {
            "path": relative,
            "sha256": hashlib.sha256(data).hexdigest(),
            "width": width,
            "height": height,
        }
        return ToolOutcome(
            content=f"screenshot of the desktop saved to {relative} ({width}x{height}, "
            f"sha256 {structured['sha256']})",
            structured=structured,
        )


desktop_launch: Final = DesktopLaunchTool()
desktop_click: Final = DesktopClickTool()
desktop_type: Final = DesktopTypeTool()
desktop_key: Final = DesktopKeyTool()
desktop_scroll: Final = DesktopScrollTool()
desktop_screenshot: Final = DesktopScreenshotTool()

TOOLS: Final = (
    desktop_launch,
    desktop_click,
    desktop_type,
    desktop_key,
    desktop_scroll,
    desktop_screenshot,
)
