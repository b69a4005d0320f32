"""``browser_diff``: a baseline screenshot against a fresh one of a page, or another file.

The pictures are read from the workspace with the file tools' own walk
(``file_system.inside.runner``): the path is checked first (``check_agent_path``:
nothing outside the workspace, nothing under the always-denied paths), then every
component is opened relative to its parent without following links the kernel
would, and the file itself must be a regular file with one link, not a symlink.
The comparison (``visual_diff``) runs in the worker; the diff picture is saved
under ``.synthorg/screenshots/`` by the driver in the sandbox, as the agent's own
screenshots are, so it belongs to the sandbox's user and a planted link is refused.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from typing import Any, Final

from common.vocabulary.categories import SafetyClass, ToolCategory
from tools_app.builtin.base import (
    RefusalCode,
    ToolContext,
    ToolFailedError,
    ToolOutcome,
    ToolRefusedError,
)
from tools_app.builtin.browser.driving import answer_png, browser_section, keep_png, run_driver
from tools_app.builtin.browser.tools import (
    TIMEOUT_PROPERTY,
    URL_PROPERTY,
    browser_offered,
    call_timeout,
    checked_url,
)
from tools_app.builtin.file_system.execution import file_system_scope
from tools_app.builtin.file_system.inside.runner import (
    RunnerRefusal,
    Walk,
    open_regular,
    read_all,
    require_regular,
    resolve,
)
from tools_app.builtin.file_system.paths import PathRules, check_agent_path, workspace_roots
from tools_app.builtin.pictures import picture_record, workspace_relative
from tools_app.contracts import ToolContract
from trust_app.policy.tool_view import ArgumentRole

DEFAULT_THRESHOLD: Final = 0.99
DIFF_KIND: Final = "browser.diff"
MAX_PNG_BYTES: Final = 32 * 1024 * 1024
_DIR_FLAGS: Final = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
_PATH_PROPERTY: Final = {"type": "string", "minLength": 1, "maxLength": 4096}
_REGION: Final = {"type": "integer", "minimum": 0}

DIFF_CONTRACT: Final = ToolContract(
    name="browser_diff",
    category=ToolCategory.BROWSER,
    action_type="browser:diff",
    safety_class=SafetyClass.NETWORK,
    cost_tier="medium",
    summary="Compare a baseline PNG in the workspace with a fresh screenshot of a page.",
    description=(
        "Compares the PNG at `baseline` (a path in the workspace) with a new screenshot "
        "of `url` (taken at the baseline's size, or of the whole page with `full_page`) "
        "or with the PNG at `candidate`. Returns the structural similarity (SSIM, 1.0 "
        f"for identical pictures), `changed` when it is below `threshold` (default "
        f"{DEFAULT_THRESHOLD}) or the sizes differ, the boxes of the areas whose pixels "
        "differ, and a picture of the differences saved under `.synthorg/screenshots/`."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "baseline": _PATH_PROPERTY,
            "url": URL_PROPERTY,
            "candidate": _PATH_PROPERTY,
            "threshold": {"type": "number", "exclusiveMinimum": 0, "maximum": 1},
            "full_page": {"type": "boolean"},
            "timeout_seconds": TIMEOUT_PROPERTY,
        },
        "required": ["baseline"],
        "oneOf": [{"required": ["url"]}, {"required": ["candidate"]}],
        "additionalProperties": False,
    },
    output_schema={
        "type": "object",
        "properties": {
            "ssim": {"type": "number"},
            "changed": {"type": "boolean"},
            "diff_path": {"type": "string"},
            "regions": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {"x": _REGION, "y": _REGION, "width": _REGION, "height": _REGION},
                    "required": ["x", "y", "width", "height"],
                    "additionalProperties": False,
                },
            },
            "candidate_path": {"type": "string"},
        },
        "required": ["ssim", "changed", "diff_path", "regions"],
        "additionalProperties": False,
    },
    failure_modes=(
        "PATH_NOT_REACHABLE: a path outside the workspace, a symlink, a file with more "
        "than one link, or under an always-denied path.",
        "INVALID_ARGUMENT: neither or both of `url` and `candidate`; a file that is not a PNG.",
        "LIMIT_EXCEEDED: a picture larger than the comparison takes.",
        "HOST_NOT_ALLOWED / NAVIGATION_FAILED / TIMED_OUT: as browser_screenshot.",
    ),
    argument_roles={
        "url": ArgumentRole.URL,
        "baseline": ArgumentRole.PATH,
        "candidate": ArgumentRole.PATH,
    },
)


def read_workspace_file(context: ToolContext, raw: object, what: str) -> tuple[str, bytes]:
    """The path as the agent should see it and the bytes of a regular file in the
    workspace; links out, symlinks and hard links refused."""
    if file_system_scope(context) == "none":
        raise ToolRefusedError(
            RefusalCode.PATH_NOT_REACHABLE,
            "file-system access is not permitted for this agent (scope none)",
        )
    rules = PathRules(workspace_roots=workspace_roots(context.workspace))
    path = check_agent_path(raw, rules)
    if path.is_anchor:
        raise ToolRefusedError(RefusalCode.INVALID_ARGUMENT, f"{what} must name a file")
    anchor = os.open(context.workspace, _DIR_FLAGS)
    walk = Walk(anchor, "workspace", list(rules.floor))
    try:
        name, found = resolve(walk, list(path.parts), follow_last=False)
        st = require_regular(walk, name, found)
        if st.st_size > MAX_PNG_BYTES:
            raise ToolRefusedError(
                RefusalCode.LIMIT_EXCEEDED,
                f"{what} is {st.st_size} bytes; at most {MAX_PNG_BYTES} are compared",
            )
        fd = open_regular(walk, name, st)
        try:
            data = read_all(fd, MAX_PNG_BYTES)
        finally:
            os.close(fd)
    except RunnerRefusal as exc:
        if exc.code == "NOT_FOUND":
            raise ToolFailedError(f"{what}: {exc.reason}", code="NOT_FOUND") from None
        code = RefusalCode.__members__.get(exc.code, RefusalCode.PATH_NOT_REACHABLE)
        raise ToolRefusedError(code, f"{what}: {exc.reason}") from None
    except PermissionError:
        raise ToolFailedError(
            f"{what} {path.display()!r} cannot be read by the console", code="PERMISSION_DENIED"
        ) from None
    finally:
        walk.close()
        os.close(anchor)
    return path.display(), data


def _threshold(value: object) -> float:
    if value is None:
        return DEFAULT_THRESHOLD
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= 1:
        raise ToolRefusedError(
            RefusalCode.INVALID_ARGUMENT, "threshold must be a number above 0 and at most 1"
        )
    return float(value)


def _picture(data: bytes, what: str) -> Any:
    # numpy, SciPy and scikit-image take seconds of CPU to import: only a process that
    # compares pictures pays for them, not every worker, web node and command at start.
    from tools_app.builtin.browser.visual_diff import PictureError, decode_png

    try:
        return decode_png(data, what)
    except PictureError as exc:
        code = RefusalCode.LIMIT_EXCEEDED if "pixels" in str(exc) else RefusalCode.INVALID_ARGUMENT
        raise ToolRefusedError(code, str(exc)) from None


def _record(
    context: ToolContext,
    compared: tuple[tuple[str, str, bytes], ...],
    *,
    diff_path: str,
    diff_digest: str,
    ssim: float,
) -> None:
    """The diff's audit row: the two pictures compared, as the worker read them, and the
    diff picture (a path outside the workspace is named in the reason only)."""
    pictures = [
        {
            "label": label,
            "path": relative,
            "sha256": hashlib.sha256(data).hexdigest(),
            "media_type": "image/png",
        }
        for label, shown, data in compared
        if (relative := workspace_relative(context.workspace, shown)) is not None
    ]
    pictures.append(
        {"label": "diff", "path": diff_path, "sha256": diff_digest, "media_type": "image/png"}
    )
    picture_record(
        context,
        kind=DIFF_KIND,
        tool=DIFF_CONTRACT.name,
        category=ToolCategory.BROWSER.value,
        action_type=DIFF_CONTRACT.resolved_action_type,
        pictures=pictures,
        reason=f"{compared[1][1]} against {compared[0][1]}: SSIM {ssim:.4f}; diff at {diff_path}",
        data={"ssim": ssim},
    )


class BrowserDiffTool:
    """``browser_diff``: SSIM, changed regions and a diff picture of two screenshots."""

    contract: ToolContract = DIFF_CONTRACT
    offered = staticmethod(browser_offered)

    def run(self, context: ToolContext, arguments: Mapping[str, Any]) -> ToolOutcome:
        """Read the baseline, take or read the candidate, compare, save the diff picture."""
        section = browser_section()
        has_url, has_candidate = "url" in arguments, "candidate" in arguments
        if has_url == has_candidate:
            raise ToolRefusedError(
                RefusalCode.INVALID_ARGUMENT, "give either url or candidate, not both or neither"
            )
        threshold = _threshold(arguments.get("threshold"))
        full_page = arguments.get("full_page", False)
        if not isinstance(full_page, bool):
            raise ToolRefusedError(RefusalCode.INVALID_ARGUMENT, "full_page must be true or false")
        if has_url:
            url, needs_network = checked_url(context, arguments.get("url"))
            timeout = call_timeout(context, section, arguments.get("timeout_seconds"))
        baseline_path, baseline_data = read_workspace_file(
            context, arguments.get("baseline"), "baseline"
        )
        baseline = _picture(baseline_data, "baseline")
        duration = 0
        if has_url:
            height, width = baseline.shape[:2]
            shot = run_driver(
                context,
                {
                    "action": "screenshot",
                    "url": url,
                    "wait_until": "load",
                    "timeout_seconds": timeout,
                    # The page at the baseline's size, so like is compared with like.
                    "viewport": {
                        "width": min(max(width, 100), 4096),
                        "height": min(max(height, 100), 4096),
                    },
                    "full_page": full_page,
                    "selector": None,
                    "keep": False,
                },
                needs_network=needs_network,
                writes=False,
            )
            duration += int(shot.get("duration_ms") or 0)
            candidate_data = answer_png(shot)
            candidate_path = keep_png(context, candidate_data, label="")["path"]
        else:
            candidate_path, candidate_data = read_workspace_file(
                context, arguments.get("candidate"), "candidate"
            )
        candidate = _picture(candidate_data, "candidate")
        from tools_app.builtin.browser.visual_diff import compare  # see _picture

        result = compare(baseline, candidate, threshold=threshold)
        saved = keep_png(context, result.diff_png, label="diff-")
        _record(
            context,
            (
                ("baseline", baseline_path, baseline_data),
                ("candidate", candidate_path, candidate_data),
            ),
            diff_path=saved["path"],
            diff_digest=saved["sha256"],
            ssim=result.ssim,
        )
        regions = [
            {"x": r.x, "y": r.y, "width": r.width, "height": r.height} for r in result.regions
        ]
        structured = {
            "ssim": result.ssim,
            "changed": result.changed,
            "diff_path": str(saved["path"]),
            "regions": regions,
            "candidate_path": candidate_path,
        }
        verdict = "changed" if result.changed else "unchanged"
        boxes = "; ".join(f"{r['width']}x{r['height']} at ({r['x']}, {r['y']})" for r in regions)
        content = (
            f"{candidate_path} against {baseline_path}: SSIM {result.ssim:.4f}, {verdict} "
            f"(threshold {threshold:g}); {len(regions)} changed region(s)"
            + (f": {boxes}" if boxes else "")
            + f"; diff picture {saved['path']}"
        )
        return ToolOutcome(content=content, structured=structured, duration_ms=duration)


browser_diff: Final = BrowserDiffTool()

TOOLS: Final = (browser_diff,)
