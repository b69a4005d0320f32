"""What every console page must pass in the browser: axe-core, the width and control sizes.

axe-core comes from npm (tests/browser/axe/package-lock.json), installed with `npm ci`
the first time a test asks for it, and is injected into the page under test.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

AXE_DIR = Path(__file__).parent / "axe"
AXE_SCRIPT = AXE_DIR / "node_modules" / "axe-core" / "axe.min.js"
AXE_PACKAGE = AXE_DIR / "node_modules" / "axe-core" / "package.json"
NPM_TIMEOUT_SECONDS = 600
WIDTHS = {"wide": 1280, "narrow": 390}
HEIGHT = 900
SERIOUS = ("serious", "critical")
# WCAG 2.5.8 (target size, minimum); the layout aims at 44 px for what is touched most.
MIN_TARGET_PX = 24


def _locked_axe_version() -> str:
    lock = json.loads((AXE_DIR / "package-lock.json").read_text())
    return str(lock["packages"]["node_modules/axe-core"]["version"])


def axe_source() -> str:
    """axe.min.js as locked, installed with `npm ci` when it is missing or another version."""
    installed = json.loads(AXE_PACKAGE.read_text())["version"] if AXE_PACKAGE.exists() else None
    if installed != _locked_axe_version():
        assert shutil.which("npm"), "npm is missing: scripts/require.sh test installs it"
        done = subprocess.run(
            ["npm", "ci", "--no-audit", "--no-fund"],
            cwd=AXE_DIR,
            capture_output=True,
            text=True,
            timeout=NPM_TIMEOUT_SECONDS,
            check=False,
        )
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return AXE_SCRIPT.read_text()


def inject_script(page: Any, source: str) -> None:
    """Run ``source`` in the page as the browser's tooling does, past its
    Content-Security-Policy (an inline <script> tag would be refused, as it should)."""
    session = page.context.new_cdp_session(page)
    try:
        done = session.send("Runtime.evaluate", {"expression": source})
    finally:
        session.detach()
    assert "exceptionDetails" not in done, done["exceptionDetails"]


def axe_findings(page: Any, source: str) -> list[str]:
    """Serious and critical axe-core violations on the page, one readable line each."""
    if not page.evaluate("typeof window.axe !== 'undefined'"):
        inject_script(page, source)
    result = page.evaluate(
        """async () => {
          const r = await axe.run(document, {resultTypes: ["violations"]});
          return r.violations.map(v => ({id: v.id, impact: v.impact, help: v.help,
            nodes: v.nodes.slice(0, 5).map(n => n.target.join(" ") + " :: " +
              (n.failureSummary || "").split("\\n").slice(1, 2).join(""))}));
        }"""
    )
    return [
        f"{v['impact']} {v['id']} ({v['help']}): " + " | ".join(v["nodes"])
        for v in result
        if v["impact"] in SERIOUS
    ]


def width_findings(page: Any) -> list[str]:
    """Horizontal scroll, and controls smaller than a finger can hit."""
    found: list[str] = []
    scroll, inner = page.evaluate("[document.scrollingElement.scrollWidth, window.innerWidth]")
    if scroll > inner:
        wide = page.evaluate(
            """() => Array.from(document.querySelectorAll('body *'))
              .filter(e => e.getBoundingClientRect().right > window.innerWidth + 1)
              .slice(0, 5).map(e => e.tagName.toLowerCase() + (e.id ? '#' + e.id : '')
                + (typeof e.className === 'string' && e.className
                   ? '.' + e.className.split(' ').join('.') : '')
                + ' right=' + Math.round(e.getBoundingClientRect().right))"""
        )
        found.append(f"page is {scroll} px wide in a {inner} px window: {wide}")
    small = page.evaluate(
        """(min) => Array.from(document.querySelectorAll(
              'button, input:not([type=hidden]), select, textarea, summary, nav a, a.button'))
            .filter(e => e.offsetParent !== null)
            .map(e => [e, e.getBoundingClientRect()])
            .filter(([e, r]) => r.width < min || r.height < min)
            .slice(0, 5)
            .map(([e, r]) => e.outerHTML.slice(0, 80) + ' '
                 + Math.round(r.width) + 'x' + Math.round(r.height))""",
        MIN_TARGET_PX,
    )
    if small:
        found.append(f"controls under {MIN_TARGET_PX} px: {small}")
    header_fits = page.evaluate(
        """() => { const bar = document.querySelector('.topbar');
                   if (!bar) return true;
                   const box = bar.getBoundingClientRect();
                   return Array.from(bar.querySelectorAll('a, button, span')).every(e => {
                     const r = e.getBoundingClientRect();
                     return r.width === 0
                       || (r.bottom <= box.bottom + 1 && r.right <= box.right + 1);
                   }); }"""
    )
    if not header_fits:
        found.append("the header's items spill out of its dark bar (white on white)")
    return found
