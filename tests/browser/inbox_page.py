"""A new operator's inbox in Chromium at a given width, signed in and live."""

from __future__ import annotations

import secrets
import uuid
from typing import Any

from playwright.sync_api import expect

from trust_app.services.agents import person_create


def open_inbox_at(browser: Any, base: str, width: int) -> Any:
    """Sign a new operator in at ``width`` px; the page once its inbox is live."""
    username = f"operator-{uuid.uuid4().hex[:6]}"
    password = secrets.token_urlsafe(16)
    person_create(username=username, role="operator", password=password)
    context = browser.new_context(viewport={"width": width, "height": 900})
    page = context.new_page()
    page.goto(base + "/accounts/login/?next=/approvals/")
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    page.click("button[type=submit]")
    page.wait_for_url(base + "/approvals/")
    expect(page.locator("body[data-live=open]")).to_have_count(1, timeout=10_000)
    return page
