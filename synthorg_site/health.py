"""/healthz: one JSON entry per part; 200 only when every required part is up."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Any

from django.conf import settings
from django.db import connection
from django.http import HttpRequest, JsonResponse
from django.views.decorators.http import require_GET

from common.platform.heartbeat import SANDBOX_PROBE_PREFIX, beat_heartbeat_age, worker_heartbeats
from common.platform.redis import redis_client


@dataclass(frozen=True)
class PartHealth:
    ok: bool
    required: bool
    detail: str


def _database() -> PartHealth:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        return PartHealth(True, True, f"{connection.vendor} answered")
    except Exception as exc:
        return PartHealth(False, True, f"{connection.vendor}: {exc.__class__.__name__}: {exc}")


def _redis() -> PartHealth:
    try:
        redis_client().ping()
        return PartHealth(True, True, "answered PING")
    except Exception as exc:
        return PartHealth(False, True, f"{exc.__class__.__name__}: {exc}")


def _worker() -> PartHealth:
    max_age = settings.SYNTHORG_HEARTBEAT_MAX_AGE
    try:
        beats = worker_heartbeats()
    except Exception as exc:
        return PartHealth(False, True, f"cannot read heartbeats: {exc}")
    fresh = [b for b in beats if b.age_seconds <= max_age]
    if not fresh:
        seen = f"; last seen {beats[0].age_seconds:.1f}s ago" if beats else ""
        return PartHealth(False, True, f"no worker heartbeat within {max_age:g}s{seen}")
    names = ", ".join(f"{b.name} ({b.age_seconds:.1f}s)" for b in fresh)
    return PartHealth(True, True, f"{len(fresh)} worker(s): {names}")


def _beat() -> PartHealth:
    # Reported, not required: a web node stays in rotation while beat restarts elsewhere.
    try:
        age = beat_heartbeat_age()
    except Exception as exc:
        return PartHealth(False, False, f"cannot read heartbeat: {exc}")
    if age is None or age > settings.SYNTHORG_HEARTBEAT_MAX_AGE:
        return PartHealth(False, False, "no beat heartbeat seen recently")
    return PartHealth(True, False, f"scheduled {age:.1f}s ago")


def _sandbox_probes() -> dict[str, PartHealth]:
    """Each backend's probe as workers report it (a backend appears once probed)."""
    parts: dict[str, PartHealth] = {}
    try:
        client = redis_client()
        for key in client.scan_iter(match=SANDBOX_PROBE_PREFIX + "*", count=100):
            raw = client.get(key)
            if raw is None:
                continue
            probe: dict[str, Any] = json.loads(raw)
            name = (key.decode() if isinstance(key, bytes) else key)[len(SANDBOX_PROBE_PREFIX) :]
            parts[f"sandbox.{name}"] = PartHealth(
                bool(probe.get("ok")), bool(probe.get("required")), _probe_detail(probe)
            )
    except Exception:  # noqa: S110 - Redis being down is reported by its own part
        pass
    return parts


def _code_execution(probes: dict[str, PartHealth]) -> PartHealth:
    """Which backend code_runner uses, and whether that backend's probe passed."""
    from common.settings_config import synthorg_config

    try:
        backend = synthorg_config().sandboxing.backend_for("code_execution")
    except Exception as exc:
        return PartHealth(False, False, f"the config cannot be read: {exc}")
    probe = probes.get(f"sandbox.{backend}")
    state = "not probed yet" if probe is None else probe.detail
    return PartHealth(
        probe is not None and probe.ok, False, f"code_runner runs on {backend}: {state}"
    )


def _notifications() -> PartHealth:
    """Reported, not required: a webhook that is down must not take the console out."""
    from common.settings_config import synthorg_config
    from notifications_app.selectors import notification_health

    try:
        if not synthorg_config().notifications.channels:
            return PartHealth(True, False, "no channels configured")
        ok, detail = notification_health()
    except Exception as exc:
        return PartHealth(False, False, f"cannot read notifications: {exc}")
    return PartHealth(ok, False, detail)


def _probe_detail(probe: dict[str, Any]) -> str:
    """The probe's reason, then which categories the backend serves and what it gives them."""
    detail = str(probe.get("reason", ""))
    categories = probe.get("categories")
    if isinstance(categories, list):
        served = ", ".join(str(c) for c in categories) or "no category"
        detail += f"; serves: {served}"
        if probe.get("why"):
            detail += f" ({probe['why']})"
    return detail


def health_report() -> dict[str, Any]:
    """Every part's health; `failing` names the required parts that are down."""
    probes = _sandbox_probes()
    parts: dict[str, PartHealth] = {
        "database": _database(),
        "redis": _redis(),
        "worker": _worker(),
        "beat": _beat(),
        **probes,
        "code_execution": _code_execution(probes),
        "notifications": _notifications(),
    }
    failing = sorted(name for name, part in parts.items() if part.required and not part.ok)
    body = {
        "status": "ok" if not failing else "unavailable",
        "failing": failing,
        "parts": {name: asdict(part) for name, part in parts.items()},
    }
    if failing:
        body["message"] = "not ready: " + ", ".join(
            f"{name} ({parts[name].detail})" for name in failing
        )
    return body


@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    body = health_report()
    response = JsonResponse(body, status=503 if body["failing"] else 200)
    response["Cache-Control"] = "no-store"
    # A 503 here is an answer, not a server error: keep it out of the error log.
    response._has_been_logged = True  # type: ignore[attr-defined]
    return response
