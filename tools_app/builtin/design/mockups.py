"""``MockupProvider``: given HTML/CSS or SVG, drawn by the browser tool's confined Chromium.

The browser's own driver (``browser/inside/driver.py``, action ``mockup``) runs in
the design category's namespace sandbox with the workspace read-only and no network
at all (not even the egress forwarder) and serves the content as the one page there
is: page scripts are off, and every other request the mockup makes (a stylesheet, an
image, a font, a frame, a redirect) is failed inside the browser and reported in
``blocked_requests``. The PNG of the viewport comes back to the worker and is kept
under ``.synthorg/mockups/`` by the design store's writing step, as the sandbox's
user and held to the workspace quota.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from django.db import transaction

from audit_app.record import Actor, audit_record
from common.config.design import MockupSection
from common.vocabulary.categories import ToolCategory
from tools_app.builtin.base import RefusalCode, ToolContext, ToolRefusedError
from tools_app.builtin.browser.driving import answer_png
from tools_app.builtin.browser.inside.driver import MOCKUP_DIR
from tools_app.builtin.design.providers import (
    StoredPicture,
    answer_of,
    require_namespace,
    store_picture,
)
from tools_app.quota.precheck import sandbox_failure
from tools_app.sandbox.errors import SandboxError
from tools_app.sandbox.protocol import Limits, MountMode, SandboxSpec, WorkspaceMount
from trust_app.models import Agent

DRIVER_SOURCE: Final = (Path(__file__).parents[1] / "browser" / "inside" / "driver.py").read_text(
    encoding="utf-8"
)
# Chromium reserves tens of GiB of address space it never touches; the memory cgroup
# bounds what it really uses.
ADDRESS_SPACE_BYTES: Final = 1 << 40
# Time beyond the render's own for the sandbox and the browser to start and stop.
START_MARGIN_SECONDS: Final = 30.0
CONTENT_TYPES: Final = {"html": "text/html; charset=utf-8", "svg": "image/svg+xml"}
AUDIT_KIND: Final = "design.mockup_render"


def mockup_viewport(section: MockupSection, value: object) -> dict[str, int]:
    """The viewport asked for, within the section's bounds; refused with the bounds."""
    if value is None:
        return {"width": section.default_width, "height": section.default_height}
    if not isinstance(value, Mapping):
        raise ToolRefusedError(RefusalCode.INVALID_ARGUMENT, "viewport must be an object")
    width, height = value.get("width"), value.get("height")
    if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 16 for v in (width, height)):
        raise ToolRefusedError(
            RefusalCode.INVALID_ARGUMENT, "viewport width and height must be integers of 16 or more"
        )
    assert isinstance(width, int) and isinstance(height, int)
    if width > section.max_width or height > section.max_height:
        raise ToolRefusedError(
            RefusalCode.LIMIT_EXCEEDED,
            f"viewport {width}x{height} is over the limit of "
            f"{section.max_width}x{section.max_height}",
        )
    return {"width": width, "height": height}


def mockup_content(section: MockupSection, arguments: Mapping[str, Any]) -> tuple[str, bytes]:
    """``(kind, bytes)`` of the one content given: ``html`` or ``svg``."""
    given = [kind for kind in CONTENT_TYPES if arguments.get(kind) is not None]
    if len(given) != 1:
        raise ToolRefusedError(RefusalCode.INVALID_ARGUMENT, "give exactly one of html or svg")
    kind = given[0]
    text = arguments[kind]
    if not isinstance(text, str) or not text.strip():
        raise ToolRefusedError(RefusalCode.INVALID_ARGUMENT, f"{kind} must be a non-empty string")
    data = text.encode("utf-8")
    if len(data) > section.max_content_bytes:
        raise ToolRefusedError(
            RefusalCode.LIMIT_EXCEEDED,
            f"{kind} is {len(data)} bytes; the limit is {section.max_content_bytes} "
            "(design.mockups.max_content_bytes)",
        )
    return kind, data


class MockupProvider:
    """The local provider: a mockup drawn in the sandbox, no network."""

    name = "mockup"
    folder = MOCKUP_DIR

    def __init__(self, section: MockupSection) -> None:
        self.section = section

    def produce(self, context: ToolContext, request: Mapping[str, Any]) -> StoredPicture:
        """Draw ``request`` (``kind``, ``content``, ``viewport``) and keep its PNG."""
        require_namespace(context)
        section = self.section
        timeout = float(section.timeout_seconds)
        driver_request = {
            "action": "mockup",
            "chromium": section.chromium_path,
            "content_type": CONTENT_TYPES[request["kind"]],
            "viewport": request["viewport"],
            "timeout_seconds": timeout,
            "max_blocked": section.max_blocked_reported,
            "proxy": False,
        }
        spec = SandboxSpec(
            argv=("python3", "-I", "-S", "-c", DRIVER_SOURCE, json.dumps(driver_request)),
            workspace=WorkspaceMount(context.workspace, MountMode.READ_ONLY),
            stdin=request["content"],
            timeout_seconds=timeout + START_MARGIN_SECONDS,
            limits=Limits(
                memory_bytes=section.memory_bytes,
                max_processes=section.max_processes,
                open_files=2048,
                address_space_bytes=ADDRESS_SPACE_BYTES,
            ),
            owner=context.owner,
        )
        try:
            result = context.sandbox.run(spec)
        except SandboxError as exc:
            raise sandbox_failure(exc, code="SANDBOX_REFUSED") from exc
        answer = answer_of(result, what="the mockup", timeout=timeout)
        data = answer_png(answer)
        kept = store_picture(
            context, data, sha256=str(answer["sha256"]), extension="png", folder=MOCKUP_DIR
        )
        blocked = [
            {"url": str(item.get("url", "")), "resource_type": str(item.get("resource_type", ""))}
            for item in answer.get("blocked_requests", [])
        ]
        return StoredPicture(
            path=str(kept["path"]),
            sha256=str(kept["sha256"]),
            media_type="image/png",
            width=int(answer["width"]),
            height=int(answer["height"]),
            bytes=None,
            details={"blocked_requests": blocked, "duration_ms": answer.get("duration_ms")},
        )


def record_mockup(
    context: ToolContext, *, kind: str, viewport: Mapping[str, int], picture: StoredPicture
) -> None:
    """The mockup's audit row: where its PNG is and its SHA-256 (what the audit page's
    picture is checked against), and what was blocked."""
    agent = Agent.objects.get(id=context.agent_id)
    blocked = list(picture.details.get("blocked_requests", []))
    with transaction.atomic():
        audit_record(
            kind=AUDIT_KIND,
            actor=Actor.agent(agent),
            agent=agent,
            invocation_id=context.invocation_uuid,
            tool="mockup_render",
            category=ToolCategory.DESIGN.value,
            action_type="docs:write",
            outcome="stored",
            reason=f"{kind} mockup {picture.width}x{picture.height} kept at {picture.path}"
            + (f"; {len(blocked)} request(s) blocked" if blocked else ""),
            data={
                "kind": kind,
                "viewport": dict(viewport),
                "path": picture.path,
                "sha256": picture.sha256,
                "media_type": picture.media_type,
                "blocked_requests": blocked[:20],
            },
        )
