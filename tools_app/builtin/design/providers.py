"""``ImageProvider``: where a design tool's picture comes from, and how it is kept.

Two providers: ``OpenAIImagesProvider`` (``image_generate``: an OpenAI-compatible
images API through a configured connection, ``openai_images``) and
``MockupProvider`` (``mockup_render``: given HTML/CSS or SVG drawn by the browser
tool's confined Chromium, ``mockups``). Either keeps its picture in the agent's
workspace, written by a program in the category's sandbox as the sandbox's user,
and answers a ``StoredPicture``: where it is and its SHA-256, which the result, the
audit row and the MCP picture all name.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Protocol

from common.config.design import DesignSection
from common.settings_config import synthorg_config
from tools_app.builtin.base import RefusalCode, ToolContext, ToolFailedError
from tools_app.builtin.program_answer import program_answer
from tools_app.quota.precheck import sandbox_failure
from tools_app.sandbox.errors import SandboxError
from tools_app.sandbox.protocol import (
    MIB,
    Limits,
    MountMode,
    SandboxResult,
    SandboxSpec,
    WorkspaceMount,
)

STORE_SOURCE: Final = (Path(__file__).parent / "inside" / "store.py").read_text(encoding="utf-8")
IMAGES_FOLDER: Final = ".synthorg/images"
STORE_TIMEOUT_SECONDS: Final = 30.0
_REFUSALS: Final = frozenset(code.value for code in RefusalCode)


@dataclass(frozen=True, slots=True)
class StoredPicture:
    """A picture kept in the workspace: its path (relative), digest, kind and size."""

    path: str
    sha256: str
    media_type: str
    width: int
    height: int
    bytes: int | None
    # What else the provider reports (the mockup's blocked requests, a revised prompt).
    details: Mapping[str, Any] = field(default_factory=dict)


class ImageProvider(Protocol):
    """Makes one picture for a call and keeps it in the agent's workspace."""

    name: str
    folder: str

    def produce(self, context: ToolContext, request: Mapping[str, Any]) -> StoredPicture:
        """The picture ``request`` asks for, kept; ToolRefusedError or ToolFailedError
        with the reason otherwise."""
        ...


def design_section() -> DesignSection:
    section = synthorg_config().design
    if section is None:
        raise ToolFailedError(
            "the design tools are off: the config has no 'design' section",
            code="DESIGN_UNAVAILABLE",
        )
    return section


def require_namespace(context: ToolContext) -> None:
    """Chromium and the store program run only on the namespace sandbox."""
    name = getattr(context.sandbox, "name", "")
    if name != "namespace":
        raise ToolFailedError(
            "the design tools run only on the namespace sandbox; the design category here "
            f"uses {name or 'an unknown backend'!r}. Ask an admin to set "
            "sandboxing.overrides.design to namespace",
            code="SANDBOX_NOT_ISOLATED",
        )


def answer_of(result: SandboxResult, *, what: str, timeout: float) -> dict[str, Any]:
    """A sandboxed program's one-line answer; failures raised with its reason."""
    return program_answer(
        result, what=what, timeout=timeout, failed_code="RENDER_FAILED", refusals=_REFUSALS
    )


def store_picture(
    context: ToolContext, data: bytes, *, sha256: str, extension: str, folder: str
) -> dict[str, Any]:
    """Write ``data`` under ``folder`` in the workspace from inside the sandbox (held to
    the workspace quota like any writing call); ``{path, sha256, bytes}``."""
    require_namespace(context)
    request = {"folder": folder, "extension": extension, "sha256": sha256}
    spec = SandboxSpec(
        argv=("python3", "-I", "-S", "-c", STORE_SOURCE, json.dumps(request)),
        workspace=WorkspaceMount(context.workspace, MountMode.READ_WRITE),
        stdin=data,
        timeout_seconds=STORE_TIMEOUT_SECONDS,
        limits=Limits(
            memory_bytes=256 * MIB,
            max_processes=16,
            output_bytes=64 * 1024,
            file_size_bytes=max(len(data) * 2, MIB),
        ),
        owner=context.owner,
    )
    try:
        result = context.sandbox.run(spec)
    except SandboxError as exc:
        raise sandbox_failure(exc, code="SANDBOX_REFUSED") from exc
    answer = answer_of(result, what="storing the picture", timeout=STORE_TIMEOUT_SECONDS)
    if answer.get("sha256") != sha256:
        raise ToolFailedError("the stored picture is not the one received", code="STORE_FAILED")
    return answer
