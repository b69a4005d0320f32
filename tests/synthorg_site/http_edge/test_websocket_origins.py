"""The operators' socket over a real daphne opens only for pages of the console's own
origin: scheme, host and port compared whole, a page on another port of the same host
refused. Each refusal beside the same handshake from the console's origin, accepted."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect
from websockets.typing import Origin

from common.platform.origins import origin_parse, origins_setting_parse
from common.testing import free_port, http_status, python_argv, running, wait_until
from tests.common.permission_suite import signed_in
from trust_app.services.agents import person_create

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

PATH = "/ws/approvals/?view=inbox"


@pytest.fixture
def operator_cookie() -> str:
    person_create(username="origin-operator", role="operator", password=None)
    return f"sessionid={signed_in('origin-operator').cookies['sessionid'].value}"


def handshake(base: str, cookie: str, origin: str | None) -> int | None:
    """Open the socket from a page of ``origin``: None when it opened, else the refusal."""
    url = base.replace("http://", "ws://") + PATH
    try:
        with connect(
            url,
            additional_headers={"Cookie": cookie},
            origin=Origin(origin) if origin is not None else None,
            open_timeout=30,
        ):
            return None
    except InvalidStatus as exc:
        return exc.response.status_code


def test_a_page_on_another_port_of_the_same_host_is_refused(
    daphne_server: str, operator_cookie: str
) -> None:
    port = int(daphne_server.rsplit(":", 1)[1])
    other = free_port()
    # Positive controls: the console's own page, by either name ALLOWED_HOSTS accepts.
    assert handshake(daphne_server, operator_cookie, daphne_server) is None
    assert handshake(daphne_server, operator_cookie, f"http://localhost:{port}") is None
    # Attacks: the same host on another port (the reported page on :18821), another scheme,
    # another host on the same port, a page with no origin, a malformed origin.
    for origin in (
        f"http://127.0.0.1:{other}",
        "http://127.0.0.1",
        f"https://127.0.0.1:{port}",
        f"http://attacker.example:{port}",
        f"http://127.0.0.1.attacker.example:{port}",
        "null",
        f"http://127.0.0.1:{port}/page",
        None,
    ):
        assert handshake(daphne_server, operator_cookie, origin) == 403, origin


@pytest.fixture
def listed_console(test_env: dict[str, str], tmp_path: Path) -> Iterator[tuple[str, str]]:
    """A daphne whose SYNTHORG_ORIGINS names one other origin: (its URL, that origin)."""
    port, listed = free_port(), f"http://127.0.0.1:{free_port()}"
    env = {**test_env, "SYNTHORG_ORIGINS": listed}
    argv = python_argv("-m", "daphne", "-b", "127.0.0.1", "-p", str(port),
                       "synthorg_site.asgi:application")  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    with running(argv, env=env, log_path=tmp_path / "daphne.log") as server:
        wait_until(
            lambda: (
                http_status(url + "/healthz") in (200, 503) or server.process.poll() is not None
            ),
            timeout=180,
            what="daphne to answer",
        )
        assert server.process.poll() is None, server.output()
        yield url, listed


def test_the_origins_setting_replaces_what_the_hosts_imply(
    listed_console: tuple[str, str], operator_cookie: str
) -> None:
    url, listed = listed_console
    # The one origin listed opens the socket (a proxy in front serves the console there)...
    assert handshake(url, operator_cookie, listed) is None
    # ...and the console's own address, no longer implied, is refused.
    assert handshake(url, operator_cookie, url) == 403


def test_an_origin_is_scheme_host_and_port_and_a_bad_setting_is_named() -> None:
    assert str(origin_parse("HTTPS://Console.Example.org")) == "https://console.example.org:443"
    assert origin_parse("http://[::1]:8000") == origin_parse("http://[::1]:8000/")
    assert str(origin_parse("http://[::1]:8000")) == "http://[::1]:8000"
    for bad in ("console.example.org", "ftp://x", "http://x/path", "http://u@x", "http://x:99999"):
        assert origin_parse(bad) is None, bad
    with pytest.raises(
        ValueError, match=re.escape("SYNTHORG_ORIGINS: 'console.example.org' is not an")
    ):
        origins_setting_parse(
            ["https://ok.example", "console.example.org"], name="SYNTHORG_ORIGINS"
        )
