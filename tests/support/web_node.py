"""A web node (daphne) of its own for a test that needs other settings, and clients that
connect from a chosen loopback address (all of 127.0.0.0/8 is this host's)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from common.testing import free_port, http_status, python_argv, running, wait_until


@contextmanager
def web_node(test_env: dict[str, str], log_dir: Path, **settings: str) -> Iterator[str]:
    """daphne on a free loopback port with ``settings`` added to the environment; yields
    its base URL."""
    port = free_port()
    argv = python_argv("-m", "daphne", "-b", "127.0.0.1", "-p", str(port),
                       "synthorg_site.asgi:application")  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    with running(argv, env={**test_env, **settings}, log_path=log_dir / f"web-{port}.log") as web:
        wait_until(
            lambda: web.process.poll() is not None or http_status(url + "/healthz") in (200, 503),
            timeout=90,
            what="the web node to answer",
        )
        assert web.process.poll() is None, web.output()[-4000:]
        yield url


def client_from(address: str, base_url: str, **options: object) -> httpx.Client:
    """An HTTP client whose connections leave from ``address`` (a loopback address)."""
    verify = options.pop("verify", True)
    transport = httpx.HTTPTransport(local_address=address, verify=verify)  # type: ignore[arg-type]
    return httpx.Client(base_url=base_url, transport=transport, timeout=60, **options)  # type: ignore[arg-type]


_CSRF_INPUT = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')


def sign_in_form(client: httpx.Client, path: str) -> str:
    """GET a sign-in page; the CSRF token its form posts back."""
    page = client.get(path)
    assert page.status_code == 200, page.text[:500]
    found = _CSRF_INPUT.search(page.text)
    assert found, page.text[:500]
    return found.group(1)


def sign_in(
    client: httpx.Client, path: str, token: str, username: str, password: str, **headers: str
) -> httpx.Response:
    """POST a sign-in form (not following the redirect of a success)."""
    return client.post(
        path,
        data={"csrfmiddlewaretoken": token, "username": username, "password": password},
        headers={"Referer": str(client.base_url) + path, **headers},
    )
