"""/healthz reports every part and answers 200 only when every required part is up."""

from __future__ import annotations

import json
import urllib.request

import pytest

from common.platform.heartbeat import (
    BEAT_KEY,
    SANDBOX_PROBE_PREFIX,
    WORKER_KEY_PREFIX,
    write_beat_heartbeat,
)
from common.platform.redis import redis_client
from common.testing import RunningProcess, http_status, wait_until
from synthorg_site.health import health_report

pytestmark = pytest.mark.integration


def _get(url: str) -> tuple[int, dict[str, object]]:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


@pytest.mark.django_db(transaction=True)
def test_healthz_is_200_through_daphne_with_a_live_worker(
    daphne_server: str, celery_worker_process: RunningProcess
) -> None:
    wait_until(
        lambda: http_status(daphne_server + "/healthz") == 200,
        timeout=30,
        what="/healthz to turn 200",
    )
    status, body = _get(daphne_server + "/healthz")
    assert status == 200
    parts = body["parts"]
    assert isinstance(parts, dict)
    # Beat is not required: without it the console serves, degraded, and says so.
    beat_ok = parts["beat"]["ok"]
    assert body["status"] == ("ok" if beat_ok else "degraded")
    assert body["degraded"] == ([] if beat_ok else ["beat"])
    assert {"database", "redis", "worker", "beat"} <= set(parts)
    assert parts["worker"]["ok"] is True


@pytest.mark.django_db
def test_without_beat_healthz_is_degraded_and_with_it_ok() -> None:
    client = redis_client()
    saved = client.get(BEAT_KEY)
    try:
        client.delete(BEAT_KEY)
        missing = health_report()
        assert missing["status"] in ("degraded", "unavailable")
        assert missing["degraded"] == ["beat"]
        assert "beat is not running" in str(missing.get("message", "")) or missing["failing"]
        write_beat_heartbeat()
        present = health_report()
        assert present["degraded"] == []
        assert present["parts"]["beat"]["ok"] is True
    finally:
        client.delete(BEAT_KEY)
        if saved is not None:
            client.set(BEAT_KEY, saved, ex=30)


@pytest.mark.django_db
def test_without_a_worker_heartbeat_healthz_names_the_worker(settings: object) -> None:
    client = redis_client()
    saved = {k: client.get(k) for k in client.scan_iter(match=WORKER_KEY_PREFIX + "*")}
    try:
        for key in saved:
            client.delete(key)
        report = health_report()
        assert report["failing"] == ["worker"]
        assert "worker" in report["message"]
        assert report["parts"]["database"]["ok"] is True
    finally:
        for key, value in saved.items():
            if value is not None:
                client.set(key, value, ex=30)


@pytest.mark.django_db
def test_a_failed_required_sandbox_probe_is_named() -> None:
    client = redis_client()
    key = SANDBOX_PROBE_PREFIX + "testonly"
    client.set(key, json.dumps({"ok": False, "required": True, "reason": "no engine"}), ex=30)
    try:
        report = health_report()
        assert "sandbox.testonly" in report["failing"]
        assert "no engine" in report["message"]
    finally:
        client.delete(key)


@pytest.mark.django_db
def test_redis_down_is_reported_as_redis(settings: object) -> None:
    from django.conf import settings as dj

    redis_client.cache_clear()
    original = dj.REDIS_URL
    dj.REDIS_URL = "unix:///nonexistent/redis.sock?db=0"
    try:
        report = health_report()
        assert "redis" in report["failing"]
        assert report["parts"]["redis"]["ok"] is False
    finally:
        dj.REDIS_URL = original
        redis_client.cache_clear()
