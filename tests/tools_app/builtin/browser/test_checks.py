"""``browser_accessibility_scan`` and ``browser_spec`` on the real namespace sandbox.

The pages are files in the workspace (no network grant needed); the pipeline tests
(``test_checks_pipeline``) run the same tools on loopback pages through the API.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings

from common.config import parse_config
from common.settings_config import config_reload
from tests.tools_app.builtin.fs_fixtures import CountingSandbox, make_context
from tools_app.builtin.base import RefusalCode, ToolRefusedError
from tools_app.builtin.browser.checks import browser_accessibility_scan, browser_spec
from tools_app.registry import build_catalog
from tools_app.sandbox.backends.namespace import NamespaceSandbox

pytestmark = [pytest.mark.integration]

CLEAN_PAGE = """<!doctype html><html lang="en"><head><title>Clean</title></head>
<body><main><h1>Clean page</h1><p>Nothing wrong here.</p>
<img src="data:image/gif;base64,R0lGODlhAQABAAAAACw=" alt="a dot">
<label for="name">Name</label><input id="name" type="text"></main></body></html>"""

# The same page with the image's alt and the field's label taken away.
FAULTY_PAGE = """<!doctype html><html lang="en"><head><title>Faulty</title></head>
<body><main><h1>Faulty page</h1><p>Two faults below.</p>
<img id="logo" src="data:image/gif;base64,R0lGODlhAQABAAAAACw=">
<input id="name" type="text"></main></body></html>"""

# The page tries to fake a clean verdict: it replaces axe, and the DOM methods a
# check would call, in its own script world.
LYING_PAGE = FAULTY_PAGE.replace(
    "</main>",
    "</main><script>Object.defineProperty(window, 'axe', {value: {run: async () =>"
    " ({violations: []})}, writable: false, configurable: false});"
    "Document.prototype.querySelectorAll = () => [];</script>",
)

SPEC_PAGE = """<!doctype html><html lang="en"><head><title>Shop</title></head>
<body><h1 id="title" data-state="ready">Welcome to the shop</h1>
<button id="buy" style="display:none">Buy</button>
<p class="price">12 euros</p>
<script>console.error("checkout widget failed");</script></body></html>"""


@pytest.fixture(autouse=True)
def browser_config(tmp_path: Path) -> Iterator[None]:
    """This process's config has a ``browser`` section (the tools read it per call)."""
    path = tmp_path / "synthorg.yaml"
    path.write_text(json.dumps({"browser": {"default_timeout_seconds": 60}}))
    settings.SYNTHORG_CONFIG = str(path)
    config_reload()
    yield


def _page(workspace: Path, name: str, body: str) -> str:
    (workspace / name).write_text(body)
    (workspace / name).chmod(0o644)
    return f"file:///workspace/{name}"


def _scan(workspace: Path, backend: Any, url: str, **arguments: Any) -> dict[str, Any]:
    result = browser_accessibility_scan.run(
        make_context(workspace, backend), {"url": url, **arguments}
    )
    assert result.structured is not None
    return dict(result.structured)


def test_axe_finds_a_seeded_violation_with_its_impact(
    workspace: Path, ns_backend: NamespaceSandbox
) -> None:
    found = _scan(workspace, ns_backend, _page(workspace, "faulty.html", FAULTY_PAGE))
    by_id = {rule["id"]: rule for rule in found["violations"]}
    assert by_id["image-alt"]["impact"] == "critical"
    assert by_id["image-alt"]["nodes"][0]["target"] == "#logo"
    assert "<img" in by_id["image-alt"]["nodes"][0]["html"]
    assert by_id["label"]["impact"] == "critical"
    assert by_id["label"]["nodes"][0]["target"] == "#name"
    assert found["counts"]["critical"] >= 2
    # Control: the same page with alt text and a label has no violation at all.
    clean = _scan(workspace, ns_backend, _page(workspace, "clean.html", CLEAN_PAGE))
    assert clean["violations"] == []
    assert clean["counts"] == {"critical": 0, "serious": 0, "moderate": 0, "minor": 0}


def test_tags_choose_the_rules(workspace: Path, ns_backend: NamespaceSandbox) -> None:
    url = _page(workspace, "faulty.html", FAULTY_PAGE)
    # image-alt and label are WCAG 2 A rules; none is a WCAG 2.2 AA-only rule.
    only_aa22 = _scan(workspace, ns_backend, url, tags=["wcag22aa"])
    assert {rule["id"] for rule in only_aa22["violations"]} & {"image-alt", "label"} == set()
    # Control: the tag that holds them finds them.
    level_a = _scan(workspace, ns_backend, url, tags=["wcag2a"])
    assert {"image-alt", "label"} <= {rule["id"] for rule in level_a["violations"]}


def test_a_page_cannot_fake_a_clean_scan_or_a_passing_check(
    workspace: Path, ns_backend: NamespaceSandbox
) -> None:
    url = _page(workspace, "lying.html", LYING_PAGE)
    found = _scan(workspace, ns_backend, url)
    assert {"image-alt", "label"} <= {rule["id"] for rule in found["violations"]}
    checked = browser_spec.run(
        make_context(workspace, ns_backend),
        {"url": url, "checks": [{"kind": "selector", "selector": "#logo"}]},
    )
    assert checked.structured is not None and checked.structured["passed"] is True


def test_spec_checks_pass_and_fail_each_as_they_should(
    workspace: Path, ns_backend: NamespaceSandbox
) -> None:
    url = _page(workspace, "shop.html", SPEC_PAGE)
    checks: list[dict[str, Any]] = [
        {"kind": "selector", "selector": "#title"},  # pass
        {"kind": "selector", "selector": "#basket"},  # fail
        {"kind": "visible", "selector": ".price"},  # pass
        {"kind": "visible", "selector": "#buy"},  # fail: display none
        {"kind": "text", "contains": "Welcome to the shop"},  # pass
        {"kind": "text", "selector": ".price", "contains": "15 euros"},  # fail
        {"kind": "attribute", "selector": "#title", "name": "data-state", "equals": "ready"},
        {"kind": "attribute", "selector": "#title", "name": "data-state", "equals": "busy"},
        {"kind": "selector", "selector": "#["},  # fail: not CSS
        {"kind": "no_console_errors"},  # fail: the page logs one
        {"kind": "max_load_ms", "ms": 600_000},  # pass
        {"kind": "max_load_ms", "ms": 1},  # fail
    ]
    expected = [True, False, True, False, True, False, True, False, False, False, True, False]
    result = browser_spec.run(make_context(workspace, ns_backend), {"url": url, "checks": checks})
    assert result.structured is not None
    verdicts = result.structured["checks"]
    assert [v["kind"] for v in verdicts] == [c["kind"] for c in checks]
    assert [v["passed"] for v in verdicts] == expected, verdicts
    assert result.structured["passed"] is False
    assert "checkout widget failed" in verdicts[9]["detail"]
    # Control: a page without the error passes no_console_errors, and all checks pass.
    quiet = _page(workspace, "quiet.html", SPEC_PAGE.replace("console.error", "console.log"))
    passing = [c for c, ok in zip(checks, expected, strict=True) if ok]
    result = browser_spec.run(
        make_context(workspace, ns_backend),
        {"url": quiet, "checks": [*passing, {"kind": "no_console_errors"}]},
    )
    assert result.structured is not None
    assert result.structured["passed"] is True, result.structured


def test_malformed_checks_are_refused_before_a_browser_starts(
    workspace: Path, ns_backend: NamespaceSandbox
) -> None:
    counting = CountingSandbox(ns_backend)
    context = make_context(workspace, counting)
    url = _page(workspace, "shop.html", SPEC_PAGE)
    for checks in (
        [],
        [{"kind": "eval", "selector": "#title"}],
        [{"kind": "status", "equals": True}],
        [{"kind": "status", "equals": 200, "script": "x"}],
        [{"kind": "attribute", "selector": "#title"}],
    ):
        with pytest.raises(ToolRefusedError) as refused:
            browser_spec.run(context, {"url": url, "checks": checks})
        assert refused.value.code is RefusalCode.INVALID_ARGUMENT, checks
    with pytest.raises(ToolRefusedError):
        browser_accessibility_scan.run(context, {"url": url, "tags": "wcag2a"})
    assert counting.specs == []
    # Control: a well-formed check runs, in the sandbox.
    result = browser_spec.run(
        context, {"url": url, "checks": [{"kind": "selector", "selector": "h1"}]}
    )
    assert result.structured is not None
    assert len(counting.specs) == 1


def test_diff_scan_and_spec_are_registered_only_with_the_browser_section() -> None:
    without = build_catalog(parse_config({}))
    with_section = build_catalog(parse_config({"browser": {}}))
    for name, action in (
        ("browser_diff", "browser:diff"),
        ("browser_accessibility_scan", "browser:accessibility_scan"),
        ("browser_spec", "browser:spec"),
    ):
        assert without.contract(name) is None
        contract = with_section.contract(name)
        assert contract is not None and contract.action_type == action
