"""A person signs in with the demo credentials in a real browser."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command

pytestmark = [pytest.mark.browser, pytest.mark.integration]


@pytest.mark.django_db(transaction=True)
def test_operator_signs_in_with_demo_credentials_and_out_again(
    daphne_server: str, page: Any, var_dir: Path
) -> None:
    (var_dir / "demo-credentials.txt").unlink(missing_ok=True)
    call_command("synthorg_demo")
    role, username, password = next(
        line.split(" ")
        for line in (var_dir / "demo-credentials.txt").read_text().splitlines()
        if line.startswith("operator ")
    )
    page.goto(daphne_server + "/")
    assert page.url.startswith(daphne_server + "/accounts/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", "wrong")
    page.click("button[type=submit]")
    assert page.get_by_role("alert").inner_text().startswith("Your username and password")
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    page.click("button[type=submit]")
    page.wait_for_url(daphne_server + "/")
    assert page.locator(".person-name").inner_text() == username
    assert page.locator(".role").inner_text() == role
    assert page.locator("#pending-count").is_visible()
    page.click("text=Sign out")
    page.wait_for_url("**/accounts/login/")
