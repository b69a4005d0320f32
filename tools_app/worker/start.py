"""What a worker does when it starts: reclaim orphaned containers, report sandbox probes.

Probe results go to Redis, where /healthz shows each backend as workers report it;
they are refreshed every SYNTHORG_SANDBOX_PROBE_INTERVAL seconds.
"""

from __future__ import annotations

import contextlib
import json
import threading

import structlog
from django.conf import settings

from common.platform.heartbeat import SANDBOX_PROBE_PREFIX
from common.platform.redis import redis_client
from common.settings_config import synthorg_config

log = structlog.get_logger("synthorg.worker")
_stop = threading.Event()


def backends_for_queues(queues: list[str]) -> list[str]:
    """The sandbox backends this worker serves, by the queues it consumes."""
    return [q.removeprefix("sandbox.") for q in queues if q.startswith("sandbox.")]


def reclaim_orphaned_containers() -> None:
    """Remove managed containers left by workers of this host that died."""
    config = synthorg_config().sandboxing
    if "docker" not in config.referenced_backends():
        return
    try:
        from tools_app.sandbox.backends.docker.engine import connect
        from tools_app.sandbox.backends.docker.lifecycle import reclaim_orphans

        client = connect(config.docker.docker_host)
        removed = reclaim_orphans(client)
        if removed:
            log.info("orphaned_containers_reclaimed", count=len(removed))
    except Exception as exc:  # the docker probe reports an engine that is down
        log.warning("orphan_reclaim_failed", error=str(exc))


def publish_probes(backends: list[str]) -> None:
    """Probe each backend for real and write the result where /healthz reads it."""
    from tools_app.sandbox.factory import build_backend
    from tools_app.sandbox.routes import WHY_BACKEND, categories_of

    config = synthorg_config().sandboxing
    required = set(config.referenced_backends())
    ttl = int(settings.SYNTHORG_SANDBOX_PROBE_INTERVAL * 3)
    for name in backends:
        try:
            backend = build_backend(name, config)
            try:
                report = backend.probe()
            finally:
                backend.close()
            ok, reason = report.ok, report.reason
        except Exception as exc:
            ok, reason = False, getattr(exc, "reason", str(exc))
        payload = {
            "ok": ok,
            "required": name in required,
            "reason": reason,
            "categories": categories_of(config, name),
            "why": WHY_BACKEND.get(name, ""),
        }
        with contextlib.suppress(Exception):
            redis_client().set(SANDBOX_PROBE_PREFIX + name, json.dumps(payload), ex=ttl)
        log.info("sandbox_probe", backend=name, ok=ok, reason=reason)


def worker_started(queues: list[str]) -> None:
    """Run once in the worker's main process when it is ready."""
    reclaim_orphaned_containers()
    backends = backends_for_queues(queues)

    def probe_forever() -> None:
        while True:
            publish_probes(backends)
            if _stop.wait(settings.SYNTHORG_SANDBOX_PROBE_INTERVAL):
                return

    threading.Thread(target=probe_forever, name="synthorg-probes", daemon=True).start()
    from tools_app.bridge.discovery import start_discovery

    start_discovery()


def worker_stopping() -> None:
    _stop.set()
    from tools_app.bridge.discovery import stop_discovery

    stop_discovery()
