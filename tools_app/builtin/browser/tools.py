"""``browser_navigate`` and ``browser_screenshot``: a headless Chromium, inside the sandbox.

Opt-in: registered only when the config has a ``browser`` section. Each call starts
a fresh Chromium inside ``context.sandbox`` (namespace or docker backend, where a memory
cgroup bounds what the browser's address-space reservations really use; on docker a
fresh container of the GUI image per call),
driven over the DevTools pipe by a standard-library script (``inside/driver.py``),
since the console's Python packages are not visible inside the sandbox.

Walls, in order: the URL is checked here (``http``/``https`` only with a network
grant, ``file://`` only inside the workspace, nothing else); inside, Chromium's
every connection goes to the egress forwarder and the proxy decides it by the
agent's grant (so a page cannot reach the console's ports or any host outside the
grant, however it tries); the sandbox shows only the workspace and read-only system
directories; the driver refuses a page that ended up outside the workspace. Text a
person cannot see is dropped before the page text leaves the sandbox, and the
pipeline sanitises what remains like any tool's output.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, Final
from urllib.parse import quote, unquote, urlsplit

from common.config import SynthOrgConfig
from common.config.browser import BrowserSection
from common.vocabulary.categories import SafetyClass, ToolCategory
from tools_app.builtin.base import (
    RefusalCode,
    ToolContext,
    ToolOutcome,
    ToolRefusedError,
)
from tools_app.builtin.browser.driving import (
    answer_png,
    browser_section,
    download_limits,
    keep_downloads,
    keep_png,
    run_driver,
)
from tools_app.builtin.browser.inside.driver import WORKSPACE
from tools_app.builtin.pictures import picture_record
from tools_app.contracts import ToolContract
from trust_app.policy.tool_view import ArgumentRole

WAIT_UNTIL: Final = ("load", "domcontentloaded", "networkidle")
URL_MAX: Final = 8192
STATUS_OR_NULL: Final = {"type": ["integer", "null"]}

URL_PROPERTY: Final = {"type": "string", "minLength": 1, "maxLength": URL_MAX}
TIMEOUT_PROPERTY: Final = {"type": "number", "exclusiveMinimum": 0}
SCREENSHOT_KIND: Final = "browser.screenshot"


def browser_offered(config: SynthOrgConfig) -> bool:
    """The category is on only when the config has a ``browser`` section."""
    return config.browser is not None


def browser_readiness(config: SynthOrgConfig) -> tuple[bool, str]:
    """Whether the category can run as configured, and where (for the tools page)."""
    if config.browser is None:
        return False, "off: the config has no 'browser' section"
    backend = config.sandboxing.backend_for(ToolCategory.BROWSER.value)
    profile = (
        "a fresh profile per call"
        if config.browser.profile == "per_call"
        else "one profile per agent session, kept sealed between calls"
    )
    if backend == "docker":
        return True, (
            f"on: Chromium in a fresh container of the image {config.sandboxing.docker.gui_image} "
            f"per call on the docker sandbox, its network only through the egress proxy; {profile}"
        )
    if backend == "namespace":
        return True, (
            f"on: {config.browser.chromium_path} in the namespace sandbox, its network only "
            f"through the egress proxy; {profile}"
        )
    return False, (
        f"off: the browser runs only on the namespace or docker sandbox, and sandboxing sends "
        f"the browser category to {backend!r} (its calls fail SANDBOX_NOT_ISOLATED)"
    )


def checked_url(context: ToolContext, url: object) -> tuple[str, bool]:
    """The URL the browser opens, and whether it needs the network; refusals say why."""
    if not isinstance(url, str) or not url.strip() or len(url) > URL_MAX:
        raise ToolRefusedError(RefusalCode.INVALID_ARGUMENT, "url must be a non-empty string")
    if any(ord(ch) < 0x21 for ch in url):
        raise ToolRefusedError(RefusalCode.INVALID_ARGUMENT, "url contains spaces or controls")
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme in ("http", "https"):
        if not parts.hostname:
            raise ToolRefusedError(RefusalCode.INVALID_ARGUMENT, "url has no host")
        if context.sub_constraints.get("network") in (None, "none"):
            raise ToolRefusedError(
                RefusalCode.HOST_NOT_ALLOWED,
                "this agent has no network grant for the browser; only file:// pages in "
                "the workspace can be opened",
            )
        return url, True
    if scheme == "file":
        return _workspace_file(context, parts.netloc, unquote(parts.path)), False
    raise ToolRefusedError(
        RefusalCode.INVALID_ARGUMENT, "url must be http://, https:// or file:// in the workspace"
    )


def _workspace_file(context: ToolContext, host: str, path: str) -> str:
    """``file:///workspace/...`` naming a file that resolves inside the workspace (links
    followed), as the sandbox sees it."""
    if host not in ("", "localhost"):
        raise ToolRefusedError(RefusalCode.PATH_NOT_REACHABLE, "file:// URLs name no host")
    if path != WORKSPACE and not path.startswith(WORKSPACE + "/"):
        raise ToolRefusedError(
            RefusalCode.PATH_NOT_REACHABLE,
            f"only files inside the workspace can be opened (file://{WORKSPACE}/...)",
        )
    relative = path[len(WORKSPACE) :].lstrip("/")
    root = os.path.realpath(context.workspace)
    target = os.path.realpath(os.path.join(root, relative))
    if target != root and not target.startswith(root + os.sep):
        raise ToolRefusedError(
            RefusalCode.PATH_NOT_REACHABLE, "the file resolves to a place outside the workspace"
        )
    if not os.path.isfile(target):
        raise ToolRefusedError(RefusalCode.PATH_NOT_REACHABLE, "no such file in the workspace")
    inside = WORKSPACE + ("/" + os.path.relpath(target, root) if target != root else "")
    return "file://" + quote(inside)


def call_timeout(context: ToolContext, section: BrowserSection, requested: object) -> float:
    default = context.settings.get("timeout_seconds", section.default_timeout_seconds)
    if requested is None:
        return float(min(default, section.max_timeout_seconds))
    if isinstance(requested, bool) or not isinstance(requested, int | float):
        raise ToolRefusedError(RefusalCode.INVALID_ARGUMENT, "timeout_seconds must be a number")
    if not 0 < requested <= section.max_timeout_seconds:
        raise ToolRefusedError(
            RefusalCode.LIMIT_EXCEEDED,
            f"timeout_seconds must be above 0 and at most {section.max_timeout_seconds:g}",
        )
    return float(requested)


def page_viewport(section: BrowserSection, value: object) -> dict[str, int]:
    if value is None:
        return {"width": section.viewport.width, "height": section.viewport.height}
    if not isinstance(value, Mapping):
        raise ToolRefusedError(RefusalCode.INVALID_ARGUMENT, "viewport must be an object")
    return {"width": int(value["width"]), "height": int(value["height"])}


NAVIGATE_CONTRACT: Final = ToolContract(
    name="browser_navigate",
    category=ToolCategory.BROWSER,
    action_type="browser:navigate",
    safety_class=SafetyClass.NETWORK,
    cost_tier="medium",
    summary="Open a web page in a headless browser and read its visible text and links.",
    description=(
        "Loads `url` in a fresh headless Chromium (scripts run, as in a person's browser) "
        "inside the sandbox and returns the final URL, HTTP status, title, the text a "
        "person can see and the page's http(s) links. Text hidden from a person "
        "(display:none, invisible, transparent or same colour as its background, "
        "off-screen, clipped, aria-hidden, zero-size) is dropped and "
        "`hidden_text_removed` says so. Hosts are reached only through the egress proxy "
        "and the agent's network grant; file:// only inside the workspace. Files the URL "
        "or the page downloads are kept under `.synthorg/downloads/` in the workspace, "
        "held to its quota, and listed in `downloads` with their SHA-256."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "url": URL_PROPERTY,
            "wait_until": {"type": "string", "enum": list(WAIT_UNTIL)},
            "timeout_seconds": TIMEOUT_PROPERTY,
        },
        "required": ["url"],
        "additionalProperties": False,
    },
    output_schema={
        "type": "object",
        "properties": {
            "final_url": {"type": "string"},
            "status": STATUS_OR_NULL,
            "title": {"type": "string"},
            "text": {"type": "string"},
            "links": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {"text": {"type": "string"}, "url": {"type": "string"}},
                    "required": ["text", "url"],
                    "additionalProperties": False,
                },
            },
            "hidden_text_removed": {"type": "boolean"},
            "downloads": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "path": {"type": "string"},
                        "sha256": {"type": "string", "pattern": "^[0-9a-f]{64}$"},
                        "bytes": {"type": "integer", "minimum": 0},
                        "url": {"type": "string"},
                    },
                    "required": ["path", "sha256", "bytes", "url"],
                    "additionalProperties": False,
                },
            },
        },
        "required": ["final_url", "status", "title", "text", "links", "hidden_text_removed"],
        "additionalProperties": False,
    },
    failure_modes=(
        "HOST_NOT_ALLOWED: an http(s) URL and the agent has no network grant.",
        "PATH_NOT_REACHABLE: a file:// URL outside the workspace, or a page that moved there.",
        "NAVIGATION_FAILED: the browser could not load the page (the egress proxy refused "
        "the host, or it did not answer).",
        "TIMED_OUT: the page (or a download) was not ready within the call's time.",
        "LIMIT_EXCEEDED: the downloads passed browser.max_download_mb or what the "
        "workspace quota has left (nothing is kept).",
        "DOWNLOAD_FAILED: a download did not complete.",
    ),
    argument_roles={"url": ArgumentRole.URL},
)


class BrowserNavigateTool:
    """``browser_navigate``: a page's visible text and links, read by a real browser."""

    contract: ToolContract = NAVIGATE_CONTRACT
    offered = staticmethod(browser_offered)

    def run(self, context: ToolContext, arguments: Mapping[str, Any]) -> ToolOutcome:
        """Check the URL, load it in the sandbox's browser, return what a person sees."""
        section = browser_section()
        url, needs_network = checked_url(context, arguments.get("url"))
        wait_until = arguments.get("wait_until", "load")
        if wait_until not in WAIT_UNTIL:
            raise ToolRefusedError(
                RefusalCode.INVALID_ARGUMENT, "wait_until must be " + " | ".join(WAIT_UNTIL)
            )
        timeout = call_timeout(context, section, arguments.get("timeout_seconds"))
        answer = run_driver(
            context,
            {
                "action": "navigate",
                "url": url,
                "wait_until": wait_until,
                "timeout_seconds": timeout,
                "viewport": page_viewport(section, None),
                "downloads": download_limits(context, section),
            },
            needs_network=needs_network,
            writes=False,
        )
        downloads = keep_downloads(context, answer.get("downloads"))
        structured: dict[str, Any] = {
            "final_url": str(answer["final_url"]),
            "status": answer.get("status"),
            "title": str(answer["title"]),
            "text": str(answer["text"]),
            "links": [
                {"text": str(link["text"]), "url": str(link["url"])} for link in answer["links"]
            ],
            "hidden_text_removed": bool(answer["hidden_text_removed"]),
        }
        note = (
            "\n[text hidden from a person on this page was removed]"
            if structured["hidden_text_removed"]
            else ""
        )
        if downloads:
            structured["downloads"] = downloads
            note += "".join(
                f"\n[downloaded {d['url'][:200]} to {d['path']} ({d['bytes']} bytes, "
                f"sha256 {d['sha256']})]"
                for d in downloads
            )
        skipped = int(answer.get("downloads_skipped") or 0)
        if skipped:
            note += (
                f"\n[{skipped} more download(s) were not kept: browser.max_downloads is "
                f"{section.max_downloads}]"
            )
        content = f"{structured['title']}\n{structured['final_url']}\n\n{structured['text']}{note}"
        return ToolOutcome(
            content=content,
            structured=structured,
            truncated=bool(answer.get("text_truncated")),
            duration_ms=answer.get("duration_ms"),
        )


SCREENSHOT_CONTRACT: Final = ToolContract(
    name="browser_screenshot",
    category=ToolCategory.BROWSER,
    action_type="browser:screenshot",
    safety_class=SafetyClass.NETWORK,
    cost_tier="medium",
    summary="Open a web page in a headless browser and save a PNG screenshot in the workspace.",
    description=(
        "Loads `url` like browser_navigate and saves a PNG of the viewport (or the whole "
        "page, or one element by CSS selector) under `.synthorg/screenshots/` in the "
        "workspace; returns its path, SHA-256, width and height."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "url": URL_PROPERTY,
            "full_page": {"type": "boolean"},
            "viewport": {
                "type": "object",
                "properties": {
                    "width": {"type": "integer", "minimum": 100, "maximum": 4096},
                    "height": {"type": "integer", "minimum": 100, "maximum": 4096},
                },
                "required": ["width", "height"],
                "additionalProperties": False,
            },
            "selector": {"type": "string", "minLength": 1, "maxLength": 1000},
            "timeout_seconds": TIMEOUT_PROPERTY,
        },
        "required": ["url"],
        "additionalProperties": False,
    },
    output_schema={
        "type": "object",
        "properties": {
            "path": {"type": "string"},
            "sha256": {"type": "string", "pattern": "^[0-9a-f]{64}$"},
            "width": {"type": "integer"},
            "height": {"type": "integer"},
        },
        "required": ["path", "sha256", "width", "height"],
        "additionalProperties": False,
    },
    failure_modes=(
        "HOST_NOT_ALLOWED / PATH_NOT_REACHABLE / NAVIGATION_FAILED / TIMED_OUT: as "
        "browser_navigate.",
        "SELECTOR_NOT_FOUND: no visible element matches `selector`.",
        "LIMIT_EXCEEDED: the screenshot does not fit in what the workspace quota has left "
        "(nothing is kept).",
    ),
    argument_roles={"url": ArgumentRole.URL},
)


class BrowserScreenshotTool:
    """``browser_screenshot``: a PNG of a page, kept in the workspace as evidence."""

    contract: ToolContract = SCREENSHOT_CONTRACT
    offered = staticmethod(browser_offered)

    def run(self, context: ToolContext, arguments: Mapping[str, Any]) -> ToolOutcome:
        """Check the URL, load it in the sandbox's browser, save the picture."""
        section = browser_section()
        url, needs_network = checked_url(context, arguments.get("url"))
        timeout = call_timeout(context, section, arguments.get("timeout_seconds"))
        full_page = arguments.get("full_page", False)
        if not isinstance(full_page, bool):
            raise ToolRefusedError(RefusalCode.INVALID_ARGUMENT, "full_page must be true or false")
        selector = arguments.get("selector")
        if selector is not None and (not isinstance(selector, str) or "\x00" in selector):
            raise ToolRefusedError(RefusalCode.INVALID_ARGUMENT, "selector must be a string")
        answer = run_driver(
            context,
            {
                "action": "screenshot",
                "url": url,
                "wait_until": "load",
                "timeout_seconds": timeout,
                "viewport": page_viewport(section, arguments.get("viewport")),
                "full_page": full_page,
                "selector": selector,
                "keep": False,
            },
            needs_network=needs_network,
            writes=False,
        )
        kept = keep_png(context, answer_png(answer), label="")
        path, digest = kept["path"], kept["sha256"]
        structured = {
            "path": path,
            "sha256": digest,
            "width": int(answer["width"]),
            "height": int(answer["height"]),
        }
        picture_record(
            context,
            kind=SCREENSHOT_KIND,
            tool=SCREENSHOT_CONTRACT.name,
            category=ToolCategory.BROWSER.value,
            action_type=SCREENSHOT_CONTRACT.resolved_action_type,
            pictures=[
                {"label": "screenshot", "path": path, "sha256": digest, "media_type": "image/png"}
            ],
            reason=f"screenshot of {answer.get('final_url', url)} kept at {path}",
            data={"url": str(answer.get("final_url", url))},
        )
        content = (
            f"screenshot of {answer.get('final_url', url)} saved to {structured['path']} "
            f"({structured['width']}x{structured['height']}, sha256 {structured['sha256']})"
        )
        return ToolOutcome(
            content=content, structured=structured, duration_ms=answer.get("duration_ms")
        )


browser_navigate: Final = BrowserNavigateTool()
browser_screenshot: Final = BrowserScreenshotTool()

TOOLS: Final = (browser_navigate, browser_screenshot)
