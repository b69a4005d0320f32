"""No template of the console writes code or style the Content-Security-Policy refuses:
no inline <script> (a JSON data block is data), no on...= handler, no style attribute or
<style> element. The browser suite sees the same as violations; this names the file."""

from __future__ import annotations

import re
from pathlib import Path

from django.conf import settings

SCRIPT_TAG = re.compile(r"<script\b([^>]*)>", re.IGNORECASE)
HANDLER = re.compile(r"<[a-z][^>]*\son[a-z]+\s*=", re.IGNORECASE)
STYLE_ATTRIBUTE = re.compile(r"<[a-z][^>]*\sstyle\s*=", re.IGNORECASE)
STYLE_ELEMENT = re.compile(r"<style\b", re.IGNORECASE)
DATA_TYPES = ('type="application/json"', "type='application/json'")


def inline_code(text: str) -> list[str]:
    """What in ``text`` the policy would refuse, one short description each."""
    found = []
    for match in SCRIPT_TAG.finditer(text):
        attributes = match.group(1)
        if "src=" not in attributes and not any(t in attributes for t in DATA_TYPES):
            found.append(f"inline script: {match.group(0)[:60]}")
    found += [f"event handler: {m.group(0)[-60:]}" for m in HANDLER.finditer(text)]
    found += [f"style attribute: {m.group(0)[-60:]}" for m in STYLE_ATTRIBUTE.finditer(text)]
    found += [f"style element: {m.group(0)}" for m in STYLE_ELEMENT.finditer(text)]
    return found


def test_the_scan_finds_inline_code() -> None:
    """Control: each kind is found; a script file, a JSON block and data- names are not."""
    assert inline_code('<script src="/static/js/a.js" defer></script>') == []
    assert inline_code('<script id="m" type="application/json">{"a": 1}</script>') == []
    assert inline_code('<button data-confirm="x" data-onclick="y">') == []
    assert len(inline_code("<script>alert(1)</script>")) == 1
    assert len(inline_code('<form class="inline" onsubmit="return confirm(1)">')) == 1
    assert len(inline_code('<body style="margin: 0">')) == 1
    assert len(inline_code("<style>body { margin: 0 }</style>")) == 1


def test_no_template_has_inline_code() -> None:
    templates = sorted(Path(settings.BASE_DIR, "templates").rglob("*.html"))
    assert len(templates) > 20, templates  # the scan reached the console's templates
    found = {
        str(path.relative_to(settings.BASE_DIR)): problems
        for path in templates
        if (problems := inline_code(path.read_text()))
    }
    assert not found, found
