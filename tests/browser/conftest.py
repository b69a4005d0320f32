"""Real Chromium through Playwright, against a real daphne server."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from typing import Any

import pytest

from common.testing import require

CHROMIUM = os.environ.get("SYNTHORG_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    require(bool(shutil.which(CHROMIUM) or os.path.exists(CHROMIUM)), f"Chromium at {CHROMIUM}")
    from playwright.sync_api import sync_playwright

    # Playwright's sync API keeps an event loop running in this thread; the test's own
    # database calls stay synchronous, so Django's async-safety guard does not apply.
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context()
    page = context.new_page()
    yield page
    context.close()
