"""``browser_accessibility_scan`` and ``browser_spec``: a page checked in the sandbox's browser.

Both load the page as ``browser_navigate`` does (same URL check, same sandbox, same
egress proxy) and run their checks in an isolated script world of the page: it sees
the page's DOM but not its scripts, so a page cannot replace what a check calls.

axe-core is the npm package vendored beside this module (``vendor/axe-core``: its
``package.json`` and lock say which release, ``AXE_SHA256`` pins the file). The
worker reads it, refuses a copy that is not the pinned one, and hands it to the
driver on stdin; the page never sees where it came from.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from common.vocabulary.categories import SafetyClass, ToolCategory
from tools_app.builtin.base import (
    RefusalCode,
    ToolContext,
    ToolFailedError,
    ToolOutcome,
    ToolRefusedError,
)
from tools_app.builtin.browser.tools import (
    STATUS_OR_NULL,
    TIMEOUT_PROPERTY,
    URL_PROPERTY,
    browser_offered,
    browser_section,
    call_timeout,
    checked_url,
    page_viewport,
    run_driver,
)
from tools_app.contracts import ToolContract
from trust_app.policy.tool_view import ArgumentRole

AXE_FILE: Final = Path(__file__).parent / "vendor" / "axe-core" / "axe.min.js"
AXE_VERSION: Final = "4.10.3"
AXE_SHA256: Final = "880970c081707360e64f34cea25ff91892f5bc95675b0776925b9709dd8a68bb"
IMPACTS: Final = ("critical", "serious", "moderate", "minor")
MAX_VIOLATIONS: Final = 100
MAX_NODES: Final = 10
MAX_TAGS: Final = 20
TAG_PATTERN: Final = "^[A-Za-z0-9][A-Za-z0-9.-]{0,39}$"
MAX_CHECKS: Final = 50
SPEC_KINDS: Final = (
    "selector",
    "visible",
    "text",
    "attribute",
    "status",
    "no_console_errors",
    "max_load_ms",
)


@functools.cache
def axe_source() -> bytes:
    """The vendored axe-core, only when it is the pinned file."""
    try:
        data = AXE_FILE.read_bytes()
    except OSError as exc:
        raise ToolFailedError(
            f"axe-core is missing from the console's files ({AXE_FILE.name}: {exc.strerror})",
            code="BROWSER_UNAVAILABLE",
        ) from exc
    if hashlib.sha256(data).hexdigest() != AXE_SHA256:
        raise ToolFailedError(
            f"the console's axe-core file is not the pinned axe-core {AXE_VERSION}",
            code="BROWSER_UNAVAILABLE",
        )
    return data


_NODE_SCHEMA: Final = {
    "type": "object",
    "properties": {"target": {"type": "string"}, "html": {"type": "string"}},
    "required": ["target", "html"],
    "additionalProperties": False,
}

SCAN_CONTRACT: Final = ToolContract(
    name="browser_accessibility_scan",
    category=ToolCategory.BROWSER,
    action_type="browser:accessibility_scan",
    safety_class=SafetyClass.NETWORK,
    cost_tier="medium",
    summary="Check a web page for accessibility faults with axe-core in a headless browser.",
    description=(
        "Loads `url` like browser_navigate and runs axe-core "
        f"{AXE_VERSION} on it (optionally only the rules of `tags`, such as wcag2a, "
        "wcag2aa, best-practice). Returns each violated rule with its impact, what it "
        f"asks for and up to {MAX_NODES} of the elements at fault, and the number of "
        "violated rules per impact. Content inside frames is not scanned."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "url": URL_PROPERTY,
            "tags": {
                "type": "array",
                "items": {"type": "string", "pattern": TAG_PATTERN},
                "maxItems": MAX_TAGS,
                "uniqueItems": True,
            },
            "timeout_seconds": TIMEOUT_PROPERTY,
        },
        "required": ["url"],
        "additionalProperties": False,
    },
    output_schema={
        "type": "object",
        "properties": {
            "violations": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "id": {"type": "string"},
                        "impact": {"type": ["string", "null"], "enum": [*IMPACTS, None]},
                        "help": {"type": "string"},
                        "nodes": {"type": "array", "items": _NODE_SCHEMA},
                    },
                    "required": ["id", "impact", "help", "nodes"],
                    "additionalProperties": False,
                },
            },
            "counts": {
                "type": "object",
                "properties": {impact: {"type": "integer"} for impact in IMPACTS},
                "required": list(IMPACTS),
                "additionalProperties": False,
            },
        },
        "required": ["violations", "counts"],
        "additionalProperties": False,
    },
    failure_modes=(
        "HOST_NOT_ALLOWED / PATH_NOT_REACHABLE / NAVIGATION_FAILED / TIMED_OUT: as "
        "browser_navigate.",
        "BROWSER_UNAVAILABLE: the console's axe-core file is missing or not the pinned one.",
    ),
    argument_roles={"url": ArgumentRole.URL},
)


def _tags(value: object) -> list[str]:
    if value is None:
        return []
    if (
        not isinstance(value, list)
        or len(value) > MAX_TAGS
        or not all(isinstance(tag, str) and tag for tag in value)
    ):
        raise ToolRefusedError(
            RefusalCode.INVALID_ARGUMENT, f"tags must be a list of at most {MAX_TAGS} words"
        )
    return list(value)


class BrowserAccessibilityScanTool:
    """``browser_accessibility_scan``: axe-core's violations on a page, by impact."""

    contract: ToolContract = SCAN_CONTRACT
    offered = staticmethod(browser_offered)

    def run(self, context: ToolContext, arguments: Mapping[str, Any]) -> ToolOutcome:
        """Check the URL, load it in the sandbox's browser, run axe-core there."""
        section = browser_section()
        url, needs_network = checked_url(context, arguments.get("url"))
        tags = _tags(arguments.get("tags"))
        timeout = call_timeout(context, section, arguments.get("timeout_seconds"))
        answer = run_driver(
            context,
            {
                "action": "accessibility_scan",
                "url": url,
                "wait_until": "load",
                "timeout_seconds": timeout,
                "viewport": page_viewport(section, None),
                "tags": tags,
                "max_violations": MAX_VIOLATIONS,
                "max_nodes": MAX_NODES,
            },
            needs_network=needs_network,
            writes=False,
            stdin=axe_source(),
        )
        violations: list[dict[str, Any]] = [
            {
                "id": str(rule["id"]),
                "impact": rule["impact"] if rule.get("impact") in IMPACTS else None,
                "help": str(rule["help"]),
                "nodes": [
                    {"target": str(node["target"]), "html": str(node["html"])}
                    for node in rule["nodes"]
                ],
            }
            for rule in answer["violations"]
        ]
        counts = {impact: 0 for impact in IMPACTS}
        for rule in violations:
            if rule["impact"] is not None:
                counts[rule["impact"]] += 1
        lines = [
            f"{rule['impact'] or 'unrated'}: {rule['id']}: {rule['help']} (at "
            + ", ".join(node["target"] for node in rule["nodes"][:3])
            + ")"
            for rule in violations
        ]
        summary = ", ".join(f"{counts[impact]} {impact}" for impact in IMPACTS)
        content = f"axe-core {AXE_VERSION} on {answer.get('final_url', url)}: {summary}"
        content += "\n" + "\n".join(lines) if lines else "\nno violations found"
        return ToolOutcome(
            content=content,
            structured={"violations": violations, "counts": counts},
            duration_ms=answer.get("duration_ms"),
        )


_SELECTOR: Final = {"type": "string", "minLength": 1, "maxLength": 1000}


def _check_schema(kind: str, properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {"kind": {"const": kind}, **properties},
        "required": ["kind", *required],
        "additionalProperties": False,
    }


CHECK_SCHEMAS: Final = (
    _check_schema("selector", {"selector": _SELECTOR}, ["selector"]),
    _check_schema("visible", {"selector": _SELECTOR}, ["selector"]),
    _check_schema(
        "text",
        {"selector": _SELECTOR, "contains": {"type": "string", "minLength": 1, "maxLength": 10000}},
        ["contains"],
    ),
    _check_schema(
        "attribute",
        {
            "selector": _SELECTOR,
            "name": {"type": "string", "minLength": 1, "maxLength": 200},
            "equals": {"type": "string", "maxLength": 10000},
        },
        ["selector", "name", "equals"],
    ),
    _check_schema(
        "status", {"equals": {"type": "integer", "minimum": 100, "maximum": 599}}, ["equals"]
    ),
    _check_schema("no_console_errors", {}, []),
    _check_schema("max_load_ms", {"ms": {"type": "integer", "minimum": 1}}, ["ms"]),
)

SPEC_CONTRACT: Final = ToolContract(
    name="browser_spec",
    category=ToolCategory.BROWSER,
    action_type="browser:spec",
    safety_class=SafetyClass.NETWORK,
    cost_tier="medium",
    summary="Check a list of assertions about a web page in a headless browser.",
    description=(
        "Loads `url` like browser_navigate and checks each assertion of `checks`: "
        "`selector` (an element matches), `visible` (the first match is visible), "
        "`text` (the text of the first match, or of the page, contains `contains`), "
        "`attribute` (the first match's attribute `name` equals `equals`), `status` "
        "(the page's HTTP status equals `equals`), `no_console_errors` (no console "
        "error, uncaught exception or failed resource up to the checks), `max_load_ms` "
        "(the page loaded within `ms`). Returns each check's verdict and whether all passed."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "url": URL_PROPERTY,
            "checks": {
                "type": "array",
                "items": {"oneOf": list(CHECK_SCHEMAS)},
                "minItems": 1,
                "maxItems": MAX_CHECKS,
            },
            "timeout_seconds": TIMEOUT_PROPERTY,
        },
        "required": ["url", "checks"],
        "additionalProperties": False,
    },
    output_schema={
        "type": "object",
        "properties": {
            "passed": {"type": "boolean"},
            "checks": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "kind": {"type": "string", "enum": list(SPEC_KINDS)},
                        "passed": {"type": "boolean"},
                        "detail": {"type": "string"},
                    },
                    "required": ["kind", "passed", "detail"],
                    "additionalProperties": False,
                },
            },
            "status": STATUS_OR_NULL,
        },
        "required": ["passed", "checks"],
        "additionalProperties": False,
    },
    failure_modes=(
        "HOST_NOT_ALLOWED / PATH_NOT_REACHABLE / NAVIGATION_FAILED / TIMED_OUT: as "
        "browser_navigate (a page that does not load fails the call, not its checks).",
    ),
    argument_roles={"url": ArgumentRole.URL},
)

# The fields each kind of check takes, with their types (bool is not an int here).
_CHECK_FIELDS: Final[dict[str, dict[str, type]]] = {
    "selector": {"selector": str},
    "visible": {"selector": str},
    "text": {"selector": str, "contains": str},
    "attribute": {"selector": str, "name": str, "equals": str},
    "status": {"equals": int},
    "no_console_errors": {},
    "max_load_ms": {"ms": int},
}
_CHECK_REQUIRED: Final[dict[str, tuple[str, ...]]] = {
    "selector": ("selector",),
    "visible": ("selector",),
    "text": ("contains",),
    "attribute": ("selector", "name", "equals"),
    "status": ("equals",),
    "no_console_errors": (),
    "max_load_ms": ("ms",),
}


def _checks(value: object) -> list[dict[str, Any]]:
    """The checks as the driver takes them; anything malformed is refused by name."""
    if not isinstance(value, list) or not 1 <= len(value) <= MAX_CHECKS:
        raise ToolRefusedError(
            RefusalCode.INVALID_ARGUMENT, f"checks must be a list of 1 to {MAX_CHECKS} checks"
        )
    checks: list[dict[str, Any]] = []
    for index, check in enumerate(value):
        kind = check.get("kind") if isinstance(check, Mapping) else None
        if kind not in _CHECK_FIELDS:
            raise ToolRefusedError(
                RefusalCode.INVALID_ARGUMENT,
                f"checks[{index}].kind must be " + " | ".join(SPEC_KINDS),
            )
        fields = _CHECK_FIELDS[kind]
        extra = set(check) - {"kind", *fields}
        missing = set(_CHECK_REQUIRED[kind]) - set(check)
        wrong = [
            name
            for name, kind_type in fields.items()
            if name in check
            and (not isinstance(check[name], kind_type) or isinstance(check[name], bool))
        ]
        texts = [check[name] for name in fields if isinstance(check.get(name), str)]
        if extra or missing or wrong or any("\x00" in text for text in texts):
            raise ToolRefusedError(
                RefusalCode.INVALID_ARGUMENT,
                f"checks[{index}] ({kind}) takes "
                + (", ".join(fields) or "nothing else")
                + (f"; needs {', '.join(sorted(missing))}" if missing else ""),
            )
        checks.append({"kind": kind, **{name: check[name] for name in fields if name in check}})
    return checks


class BrowserSpecTool:
    """``browser_spec``: a page's assertions, each with its verdict."""

    contract: ToolContract = SPEC_CONTRACT
    offered = staticmethod(browser_offered)

    def run(self, context: ToolContext, arguments: Mapping[str, Any]) -> ToolOutcome:
        """Check the URL and the checks, load the page, judge each check."""
        section = browser_section()
        url, needs_network = checked_url(context, arguments.get("url"))
        checks = _checks(arguments.get("checks"))
        timeout = call_timeout(context, section, arguments.get("timeout_seconds"))
        answer = run_driver(
            context,
            {
                "action": "spec",
                "url": url,
                "wait_until": "load",
                "timeout_seconds": timeout,
                "viewport": page_viewport(section, None),
                "checks": checks,
                "console": any(check["kind"] == "no_console_errors" for check in checks),
            },
            needs_network=needs_network,
            writes=False,
        )
        verdicts = [
            {"kind": str(v["kind"]), "passed": bool(v["passed"]), "detail": str(v["detail"])}
            for v in answer["checks"]
        ]
        passed = all(v["passed"] for v in verdicts)
        lines = [
            f"{'pass' if v['passed'] else 'FAIL'} {v['kind']}: {v['detail']}" for v in verdicts
        ]
        failed = sum(not v["passed"] for v in verdicts)
        head = f"{len(verdicts) - failed} of {len(verdicts)} checks passed on " + str(
            answer.get("final_url", url)
        )
        return ToolOutcome(
            content=head + "\n" + "\n".join(lines),
            structured={"passed": passed, "checks": verdicts, "status": answer.get("status")},
            duration_ms=answer.get("duration_ms"),
        )


browser_accessibility_scan: Final = BrowserAccessibilityScanTool()
browser_spec: Final = BrowserSpecTool()

TOOLS: Final = (browser_accessibility_scan, browser_spec)
