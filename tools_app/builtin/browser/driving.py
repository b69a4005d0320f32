"""Running the browser's driver in the sandbox, and keeping the pictures it takes.

The driver (``inside/driver.py``, standard library only) runs in the browser
category's isolating sandbox (namespace: the host's Chromium bound in read-only;
docker: a fresh container of the GUI image per call, sized by the call's limits)
with one request and answers one line. A screenshot
comes back on that line while Chromium runs with the workspace read-only (the
workspace quota's file-size limit would otherwise cut the browser's own shared memory
short); the worker then keeps it through the driver's ``save`` action, as the
sandbox's user, after checking it fits the quota, and reads it back without following
links to record its digest.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final
from urllib.parse import unquote, urlsplit

import structlog

from common.config.browser import BrowserSection
from common.settings_config import synthorg_config
from tools_app.builtin.base import (
    RefusalCode,
    ToolContext,
    ToolFailedError,
    ToolRefusedError,
)
from tools_app.builtin.browser.inside.driver import (
    DOWNLOAD_DIR,
    TIMEOUT_EXIT,
    WORKSPACE,
    download_name,
)
from tools_app.builtin.browser.profiles import (
    PROFILE_ACTIONS,
    profile_end,
    profile_keep,
    profile_load,
)
from tools_app.builtin.pictures import read_kept
from tools_app.builtin.program_answer import program_answer
from tools_app.builtin.sandbox_network import sandbox_network
from tools_app.quota.guard import QUOTA_SETTING
from tools_app.quota.precheck import refuse_write_over_quota, sandbox_failure
from tools_app.quota.usage import human_size, workspace_usage
from tools_app.sandbox.errors import SandboxError
from tools_app.sandbox.protocol import (
    Limits,
    MountMode,
    NetworkPolicy,
    Owner,
    SandboxResult,
    SandboxSpec,
    WorkspaceMount,
)

log = structlog.get_logger("synthorg.browser")

# Where Chromium may run: its own sandbox cannot nest, so ours must be the wall.
ISOLATING_BACKENDS: Final = ("namespace", "docker")

DRIVER_SOURCE: Final = (Path(__file__).parent / "inside" / "driver.py").read_text(encoding="utf-8")

# Chromium reserves tens of GiB of address space it never touches; the memory cgroup
# bounds what it really uses (``Limits.address_space_bytes``).
ADDRESS_SPACE_BYTES: Final = 1 << 40

# Time beyond the page's own for the sandbox and the browser to start and stop.
START_MARGIN_SECONDS: Final = 30.0

PNG_SIGNATURE: Final = b"\x89PNG\r\n\x1a\n"

# Time for the driver that keeps a picture (no browser starts for it).
SAVE_SECONDS: Final = 30.0

# A screenshot travels back on the driver's output (base64) before it is kept.
SCREENSHOT_OUTPUT_BYTES: Final = 96 * 1024 * 1024


def browser_section() -> BrowserSection:
    section = synthorg_config().browser
    if section is None:
        raise ToolFailedError(
            "the browser tools are off: the config has no 'browser' section",
            code="BROWSER_UNAVAILABLE",
        )
    return section


def run_driver(
    context: ToolContext,
    request: dict[str, Any],
    *,
    needs_network: bool,
    writes: bool,
    stdin: bytes = b"",
) -> dict[str, Any]:
    """Run the driver in the sandbox with ``request`` (and ``stdin``, data it reads whole);
    its answer, or the failure raised."""
    if getattr(context.sandbox, "name", "") not in ISOLATING_BACKENDS:
        raise ToolFailedError(
            "the browser runs only on the namespace or docker sandbox; the browser category "
            f"here uses {getattr(context.sandbox, 'name', 'an unknown backend')!r}. Ask an "
            "admin to set sandboxing.overrides.browser to namespace or docker",
            code="SANDBOX_NOT_ISOLATED",
        )
    section = browser_section()
    carried = section.profile == "per_agent_session" and request["action"] in PROFILE_ACTIONS
    if carried:
        packed = profile_load(context.agent_id, section)
        request = dict(
            request, profile={"bytes": len(packed), "max_bytes": section.profile_max_bytes}
        )
        stdin = packed + stdin
    with sandbox_network(context) as network:
        if needs_network and network["network"] is not NetworkPolicy.PROXY:
            raise ToolRefusedError(
                RefusalCode.HOST_NOT_ALLOWED, "this agent has no network grant for the browser"
            )
        spec = driver_spec(
            section,
            request,
            context.workspace,
            writes=writes,
            owner=context.owner,
            stdin=stdin,
            **network,
        )
        try:
            result = context.sandbox.run(spec)
        except SandboxError as exc:
            raise sandbox_failure(exc, code="SANDBOX_REFUSED") from exc
    answer = answer_of(result, request["timeout_seconds"])
    if carried:
        _keep_profile(context, section, answer)
    return answer


def _keep_profile(context: ToolContext, section: BrowserSection, answer: dict[str, Any]) -> None:
    """Keep the profile the call's browser ended with (or end the session, when it
    outgrew its ceiling or could not be restored); a failed call keeps none."""
    note = answer.pop("profile_note", None)
    encoded = answer.pop("profile", None)
    if note:
        log.warning("browser_profile_note", agent=context.agent_id, note=note)
    if encoded == "":
        profile_end(context.agent_id)
        return
    packed: bytes | None = None
    if isinstance(encoded, str):
        try:
            packed = base64.b64decode(encoded, validate=True)
        except ValueError:
            packed = None
    if packed is not None and len(packed) > section.profile_max_bytes:
        profile_end(context.agent_id)
        return
    profile_keep(context.agent_id, section, packed)


def driver_spec(
    section: BrowserSection,
    request: Mapping[str, Any],
    workspace: Path,
    *,
    writes: bool,
    owner: Owner | None = None,
    network: NetworkPolicy = NetworkPolicy.NONE,
    egress_dir: Path | None = None,
    stdin: bytes = b"",
) -> SandboxSpec:
    """The sandbox command that runs the driver on ``request`` with the section's ceilings."""
    full = dict(
        request,
        chromium=section.chromium_path,
        max_text_chars=section.max_text_chars,
        max_links=section.max_links,
        max_full_page_height=section.max_full_page_height,
        proxy=network is NetworkPolicy.PROXY,
    )
    return SandboxSpec(
        argv=("python3", "-I", "-S", "-c", DRIVER_SOURCE, json.dumps(full)),
        workspace=WorkspaceMount(
            workspace, MountMode.READ_WRITE if writes else MountMode.READ_ONLY
        ),
        timeout_seconds=float(request["timeout_seconds"]) + START_MARGIN_SECONDS,
        limits=Limits(
            memory_bytes=section.memory_bytes,
            max_processes=section.max_processes,
            open_files=2048,
            address_space_bytes=ADDRESS_SPACE_BYTES,
            output_bytes=SCREENSHOT_OUTPUT_BYTES,
        ),
        owner=owner,
        network=network,
        egress_dir=egress_dir,
        stdin=stdin,
    )


def answer_of(result: SandboxResult, timeout: float) -> dict[str, Any]:
    """The driver's one-line answer; failures and time-outs raised with its reason."""
    return program_answer(
        result,
        what="the browser",
        timeout=timeout,
        failed_code="BROWSER_FAILED",
        refusals=(RefusalCode.PATH_NOT_REACHABLE.value, RefusalCode.LIMIT_EXCEEDED.value),
        memory_hint="browser.memory_mb",
        timeout_exit=TIMEOUT_EXIT,
    )


def _decoded(answer: Mapping[str, Any], key: str, what: str) -> bytes:
    """The bytes the driver sent base64-encoded under ``key``."""
    try:
        return base64.b64decode(str(answer[key]), validate=True)
    except (KeyError, ValueError) as exc:
        raise ToolFailedError(
            f"the browser sent no readable {what}", code="BROWSER_FAILED"
        ) from exc


def answer_png(answer: Mapping[str, Any]) -> bytes:
    """The PNG a screenshot answer carries (the browser ran with the workspace read-only)."""
    data = _decoded(answer, "png", "screenshot")
    if not data.startswith(PNG_SIGNATURE):
        raise ToolFailedError("the browser's screenshot is not a PNG", code="BROWSER_FAILED")
    return data


def keep_png(context: ToolContext, data: bytes, *, label: str) -> dict[str, str]:
    """Keep ``data`` under ``.synthorg/screenshots/`` as the sandbox's user, held to the
    workspace quota (refused before writing when it would not fit); ``{path, sha256}``
    as the worker reads the file back, links not followed."""
    refuse_write_over_quota(
        quota_bytes=getattr(context.sandbox, "quota_bytes", None),
        workspace=context.workspace,
        new_bytes=len(data),
    )
    saved = run_driver(
        context,
        {"action": "save", "label": label, "timeout_seconds": SAVE_SECONDS},
        needs_network=False,
        writes=True,
        stdin=data,
    )
    path = str(saved["path"])
    digest, _ = read_kept(context, path, what="the picture", code="BROWSER_FAILED")
    if digest != hashlib.sha256(data).hexdigest():
        raise ToolFailedError(
            "the picture in the workspace is not the one the browser took", code="BROWSER_FAILED"
        )
    return {"path": path, "sha256": digest}


def download_limits(context: ToolContext, section: BrowserSection) -> dict[str, object]:
    """What one call's downloads may be: how many, how many bytes together (the section's
    ceiling, or what the workspace quota has left when that is less), and why."""
    limit = section.max_download_bytes
    why = f"browser.max_download_mb is {section.max_download_mb}"
    quota: int | None = getattr(context.sandbox, "quota_bytes", None)
    # The workspace is measured only when downloads may be kept at all.
    if quota is not None and section.max_downloads:
        left = max(0, quota - workspace_usage(Path(os.path.realpath(context.workspace))).total)
        if left < limit:
            limit = left
            why = (
                f"the workspace quota of {human_size(quota)} ({QUOTA_SETTING}) has "
                f"{human_size(left)} left; delete files to make room"
            )
    return {"max_count": section.max_downloads, "max_bytes": limit, "why": why}


def _download_url_allowed(url: str) -> bool:
    """A download came from the web, the page itself (data:, blob:), or the workspace."""
    scheme = url.split(":", 1)[0].lower()
    if scheme in ("http", "https", "data", "blob"):
        return True
    if scheme != "file":
        return False
    path = unquote(urlsplit(url).path)
    return path == WORKSPACE or (path.startswith(WORKSPACE + "/") and "/../" not in path + "/")


def keep_downloads(context: ToolContext, answered: object) -> list[dict[str, Any]]:
    """Keep the files the browser downloaded under ``.synthorg/downloads/``, as the
    sandbox's user, held to the workspace quota (refused before writing when they would
    not fit); ``[{path, sha256, bytes, url}]`` as the worker reads them back."""
    if not answered:
        return []
    if not isinstance(answered, list):
        raise ToolFailedError("the browser's downloads are unreadable", code="BROWSER_FAILED")
    files: list[dict[str, object]] = []
    contents: list[bytes] = []
    for entry in answered:
        url = str(entry.get("url", ""))
        if not _download_url_allowed(url):
            raise ToolRefusedError(
                RefusalCode.PATH_NOT_REACHABLE,
                "the page downloaded a file from outside the workspace; nothing was kept",
            )
        data = _decoded(entry, "data", "download")
        digest = hashlib.sha256(data).hexdigest()
        name = download_name(entry.get("name", ""))
        files.append({"name": name, "bytes": len(data), "sha256": digest, "url": url})
        contents.append(data)
    refuse_write_over_quota(
        quota_bytes=getattr(context.sandbox, "quota_bytes", None),
        workspace=context.workspace,
        new_bytes=sum(len(data) for data in contents),
    )
    saved = run_driver(
        context,
        {
            "action": "save_downloads",
            "files": [{k: f[k] for k in ("name", "bytes", "sha256")} for f in files],
            "timeout_seconds": SAVE_SECONDS,
        },
        needs_network=False,
        writes=True,
        stdin=b"".join(contents),
    )
    kept: list[dict[str, Any]] = []
    for answered_file, wanted in zip(saved.get("files") or [], files, strict=False):
        path = str(answered_file.get("path", ""))
        if not path.startswith(DOWNLOAD_DIR + "/"):
            raise ToolFailedError(
                "a download was kept at an unexpected place", code="BROWSER_FAILED"
            )
        digest, _ = read_kept(context, path, what="the download", code="BROWSER_FAILED")
        if digest != wanted["sha256"]:
            raise ToolFailedError(
                "a file in the workspace is not the one the browser downloaded",
                code="BROWSER_FAILED",
            )
        kept.append(
            {"path": path, "sha256": digest, "bytes": wanted["bytes"], "url": wanted["url"]}
        )
    if len(kept) != len(files):
        raise ToolFailedError("not every download was kept", code="BROWSER_FAILED")
    return kept
