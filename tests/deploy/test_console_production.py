"""The console image in production mode, as docker/compose.yaml runs it: the one-shot
migrate and a web node, both as the console's own user, on a fresh database and a fresh
volume. Production refuses to start without its settings, naming them."""

from __future__ import annotations

import re
import secrets
import uuid
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx
import psycopg
import pytest

from audit_app.chain import new_audit_key
from common.testing import free_port, http_status, wait_until
from tests.deploy.test_console_image import (  # noqa: F401 (fixture)
    MANAGED,
    console_image,
    metrics_volume,
)
from tests.support.pipeline import own_redis

pytestmark = [pytest.mark.docker, pytest.mark.integration]

REDIS_DB = 15
VAR = "/var/lib/synthorg"


@pytest.fixture(scope="module")
def production(
    console_image: tuple[Any, str],  # noqa: F811
    test_env: dict[str, str],
) -> Iterator[dict[str, Any]]:
    """A fresh database, a fresh volume, and the settings production requires."""
    client, image = console_image
    base = test_env["DATABASE_URL"]
    name = f"console_image_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(base, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    key = new_audit_key()
    redis_url = own_redis(test_env["REDIS_URL"], REDIS_DB)
    socket_path = redis_url.removeprefix("unix://").split("?", 1)[0]
    volume = client.volumes.create(labels=MANAGED)
    # As docker/compose.yaml gives every console container: the host's metrics tmpfs.
    metrics = metrics_volume(client)
    env = {
        "SYNTHORG_ENV": "production",
        "SECRET_KEY": secrets.token_urlsafe(64),
        "ALLOWED_HOSTS": "127.0.0.1",
        "DATABASE_URL": urlunsplit(urlsplit(base)._replace(path="/" + name)),
        "REDIS_URL": redis_url,
        "SYNTHORG_AUDIT_KEYS": f"{key.id}:{key.secret.decode()}",
    }
    volumes = {volume.name: {"bind": VAR, "mode": "rw"}, socket_path: {"bind": socket_path}}
    served = {**volumes, metrics.name: {"bind": f"{VAR}/metrics", "mode": "rw"}}
    try:
        yield {
            "client": client, "image": image, "env": env, "volumes": volumes,
            "served": served,
        }  # fmt: skip
    finally:
        volume.remove(force=True)
        metrics.remove(force=True)
        with psycopg.connect(base, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE "{name}" WITH (FORCE)')


def _run_once(production: dict[str, Any], role: str, env: dict[str, str]) -> tuple[int, str]:
    container = production["client"].containers.run(
        production["image"], [role], detach=True, network_mode="host", labels=MANAGED,
        environment=env, volumes=production["volumes"],
    )  # fmt: skip
    try:
        status = container.wait(timeout=240)["StatusCode"]
        return status, container.logs().decode(errors="replace")
    finally:
        container.remove(force=True)


def test_migrate_then_a_web_node_serve_the_console_as_its_own_user(
    production: dict[str, Any],
) -> None:
    # Refused: production without SECRET_KEY and audit keys names both, and migrates nothing.
    unsafe = {k: v for k, v in production["env"].items() if k not in ("SECRET_KEY",)}
    unsafe["SYNTHORG_AUDIT_KEYS"] = ""
    status, logs = _run_once(production, "migrate", unsafe)
    assert status != 0 and "SECRET_KEY is not set" in logs and "SYNTHORG_AUDIT_KEYS" in logs
    with psycopg.connect(production["env"]["DATABASE_URL"]) as conn:
        assert conn.execute("SELECT to_regclass('django_migrations')").fetchone() == (None,)

    # Allowed: the same with the settings set migrates and collects the static files.
    status, logs = _run_once(production, "migrate", production["env"])
    assert status == 0, logs[-3000:]

    port = free_port()
    web = production["client"].containers.run(
        production["image"], ["web"], detach=True, network_mode="host", labels=MANAGED,
        environment={**production["env"], "HOST": "127.0.0.1", "PORT": str(port)},
        volumes=production["served"],
    )  # fmt: skip
    try:
        url = f"http://127.0.0.1:{port}"

        def answers() -> bool:
            web.reload()
            if web.status == "exited":
                raise AssertionError(web.logs(tail=60).decode(errors="replace"))
            return http_status(url + "/healthz") in (200, 503)

        wait_until(answers, timeout=120, what="the production web container to answer")
        assert web.exec_run(["id", "-u"]).output.decode().strip() == "10002"
        mounts = web.exec_run(["cat", "/proc/mounts"]).output.decode()
        assert f"tmpfs {VAR}/metrics tmpfs" in mounts, mounts
        with httpx.Client(base_url=url, timeout=30) as http:
            page = http.get("/accounts/login/")
            assert page.status_code == 200, page.text[:500]
            # Static files come from collectstatic's manifest (hashed names) in production.
            found = re.search(r'/static/[^"]+\.[0-9a-f]{12}\.(?:css|js)', page.text)
            assert found, page.text[:2000]
            assert http.get(found.group(0)).status_code == 200
            assert http.get("/static/css/no-such-file.css").status_code == 404
    finally:
        web.remove(force=True)
