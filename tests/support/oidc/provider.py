"""``TestProvider``: panva's oidc-provider on a loopback port, started and stopped by a
test, and a person's way through it (sign-in and consent pages) with httpx.

``scripts/test.sh`` installs the package once (``SYNTHORG_TEST_OIDC_PROVIDER_DIR``); the
provider script is copied beside its ``node_modules`` so node resolves the import.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urljoin

import httpx

from common.testing import free_port, require, wait_until

SCRIPT = Path(__file__).with_name("provider.mjs")
_FORM_ACTION = re.compile(r'<form[^>]*action="([^"]+)"')


class TestProvider:
    __test__ = False  # not a test class

    def __init__(
        self,
        *,
        accounts: Mapping[str, Mapping[str, Any]],
        redirect_uris: list[str],
        post_logout_redirect_uris: list[str],
    ) -> None:
        home = os.environ.get("SYNTHORG_TEST_OIDC_PROVIDER_DIR", "")
        require(bool(home) and (Path(home) / "node_modules" / "oidc-provider").is_dir(),
                "oidc-provider (scripts/test.sh installs it with npm)")  # fmt: skip
        require(shutil.which("node") is not None, "Node.js")
        self.home = Path(home)
        self.port = free_port()
        self.client_id = f"console-{secrets.token_hex(4)}"
        self.client_secret = secrets.token_urlsafe(32)
        self.settings = {
            "port": self.port,
            "client_id": self.client_id,
            "client_secret": self.client_secret,
            "redirect_uris": redirect_uris,
            "post_logout_redirect_uris": post_logout_redirect_uris,
            "accounts": dict(accounts),
        }
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def issuer(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> TestProvider:
        self._start()
        return self

    def restart(self, accounts: Mapping[str, Mapping[str, Any]]) -> None:
        """Stop, and start again on the same port and client with ``accounts`` (and new
        signing keys, as after a key rotation)."""
        self.__exit__()
        self.settings["accounts"] = dict(accounts)
        self._start()

    def _start(self) -> None:
        script = self.home / SCRIPT.name
        script.write_text(SCRIPT.read_text())
        env = {**os.environ, "OIDC_TEST_SETTINGS": json.dumps(self.settings), "NODE_ENV": "test"}
        self.process = subprocess.Popen(
            ["node", str(script)], cwd=self.home, env=env,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        wait_until(self._answers, timeout=60, what="the test OpenID provider")

    def __exit__(self, *exc: object) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()

    def _answers(self) -> bool:
        assert self.process is not None
        assert self.process.poll() is None, "the test OpenID provider exited"
        try:
            url = f"{self.issuer}/.well-known/openid-configuration"
            return httpx.get(url, timeout=2).status_code == 200
        except httpx.HTTPError:
            return False


def sign_in_at_provider(browser: httpx.Client, authorize_url: str, login: str) -> str:
    """Follow the provider's pages as a person does (sign in as ``login``, consent) and
    return the URL it sends the person back to (the console's callback, with the code)."""
    url = authorize_url
    for _ in range(12):
        response = browser.get(url, follow_redirects=False)
        if response.status_code in (302, 303):
            location = urljoin(url, response.headers["location"])
            if not _is_provider(location, authorize_url):
                return location
            url = location
            continue
        assert response.status_code == 200, (response.status_code, response.text[:500])
        action = _FORM_ACTION.search(response.text)
        assert action is not None, response.text[:1000]
        target = urljoin(url, action.group(1))
        if 'name="login"' in response.text:
            answer = browser.post(
                target, data={"prompt": "login", "login": login, "password": "any"},
                follow_redirects=False,
            )  # fmt: skip
        else:
            answer = browser.post(target, data={"prompt": "consent"}, follow_redirects=False)
        assert answer.status_code in (302, 303), (answer.status_code, answer.text[:500])
        location = urljoin(target, answer.headers["location"])
        if not _is_provider(location, authorize_url):
            return location
        url = location
    raise AssertionError("the provider's pages did not send the person back")


def _is_provider(url: str, authorize_url: str) -> bool:
    origin = "/".join(authorize_url.split("/", 3)[:3])
    return url.startswith(origin + "/")
