"""/healthz: one JSON entry per part; 200 only when every required part is up.

Upstream MCP servers are parts of their own (``bridge.<server>``, with its state and
reason) under a ``bridge`` summary; none is required, so a server that fails its
health check shows here without taking the console out of rotation.
"""

from __future__ import annotations

import concurrent.futures
import json
from collections.abc import Callable
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


def _desktop(probes: dict[str, PartHealth]) -> PartHealth:
    """Whether the opt-in desktop tools are on here, and why not; reported, not required."""
    from common.settings_config import synthorg_config
    from tools_app.builtin.desktop.tools import desktop_readiness

    try:
        config = synthorg_config()
        on, detail = desktop_readiness(config)
    except Exception as exc:
        return PartHealth(False, False, f"the config cannot be read: {exc}")
    if on:
        backend = config.sandboxing.backend_for("desktop")
        probe = probes.get(f"sandbox.{backend}")
        state = "not probed yet" if probe is None else probe.detail
        return PartHealth(probe is not None and probe.ok, False, f"{detail}; {backend}: {state}")
    # Off because the section is absent is as configured; off for a missing part is not.
    return PartHealth(config.desktop is None, False, detail)


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


@dataclass(frozen=True)
class ServerHealth(PartHealth):
    """One upstream MCP server: its state and the reason (see ``tools_app.bridge.health``)."""

    state: str
    reason: str


def _bridge() -> dict[str, PartHealth]:
    """The upstream MCP servers as workers' health checks found them; reported, not
    required: one server that is down takes out its own tools, not the console."""
    from common.settings_config import synthorg_config
    from tools_app.bridge.health import server_states

    try:
        servers = synthorg_config().mcp_servers
    except Exception as exc:
        return {"bridge": PartHealth(False, False, f"the config cannot be read: {exc}")}
    if not servers:
        return {"bridge": PartHealth(True, False, "no MCP servers configured")}
    try:
        states = server_states(servers)
    except Exception as exc:
        why = f"cannot read the servers' health checks: {exc.__class__.__name__}: {exc}"
        return {"bridge": PartHealth(False, False, why)}
    parts: dict[str, PartHealth] = {
        f"bridge.{s.server}": ServerHealth(s.ok, False, s.describe(), s.state, s.reason)
        for s in states
    }
    down = [s.server for s in states if not s.ok]
    summary = f"{len(states) - len(down)} of {len(states)} MCP server(s) available"
    if down:
        summary += "; not available: " + ", ".join(down)
    return {"bridge": PartHealth(not down, False, summary), **parts}


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


# The checks run side by side in these threads, each bounded by the report's deadline:
# a part that hangs (a database that accepts and never answers) is reported as down
# instead of holding the answer.
_checks = concurrent.futures.ThreadPoolExecutor(max_workers=8, thread_name_prefix="healthz")


def _within_deadline(
    checks: dict[str, tuple[Callable[[], Any], bool]], deadline: float
) -> dict[str, Any]:
    futures = {name: _checks.submit(_closing(check)) for name, (check, _) in checks.items()}
    concurrent.futures.wait(futures.values(), timeout=deadline)
    results: dict[str, Any] = {}
    for name, future in futures.items():
        if future.done() and future.exception() is None:
            results[name] = future.result()
        else:
            required = checks[name][1]
            late = not future.done()
            why = f"no answer within {deadline:g}s" if late else str(future.exception())
            results[name] = PartHealth(False, required, why)
    return results


def _closing(check: Callable[[], Any]) -> Callable[[], Any]:
    def run() -> Any:
        try:
            return check()
        finally:
            # The thread's connection goes back to the pool (or is closed) after each check.
            connection.close()

    return run


def health_report() -> dict[str, Any]:
    """Every part's health; `failing` names the required parts that are down, `degraded`
    the parts not required that are down (beat: sweeps, expiries and checkpoints stop)."""
    deadline = float(settings.SYNTHORG_HEALTH_DEADLINE_SECONDS)
    found = _within_deadline(
        {
            "database": (_database, True),
            "redis": (_redis, True),
            "worker": (_worker, True),
            "beat": (_beat, False),
            "probes": (_sandbox_probes, False),
            "bridge": (_bridge, False),
        },
        deadline,
    )
    # Read in this thread (it sees this request's own transaction), and only once the
    # database answered within the deadline.
    found["notifications"] = (
        _notifications()
        if found["database"].ok
        else PartHealth(False, False, "not read: the database did not answer")
    )
    probes = found.pop("probes")
    probes = probes if isinstance(probes, dict) else {}
    bridge = found.pop("bridge")
    bridge = bridge if isinstance(bridge, dict) else {"bridge": bridge}
    parts: dict[str, PartHealth] = {
        "database": found["database"],
        "redis": found["redis"],
        "worker": found["worker"],
        "beat": found["beat"],
        **probes,
        "code_execution": _code_execution(probes),
        "desktop": _desktop(probes),
        "notifications": found["notifications"],
        **bridge,
    }
    failing = sorted(name for name, part in parts.items() if part.required and not part.ok)
    degraded = ["beat"] if not parts["beat"].ok else []
    body = {
        "status": "unavailable" if failing else "degraded" if degraded else "ok",
        "failing": failing,
        "degraded": degraded,
        "parts": {name: asdict(part) for name, part in parts.items()},
    }
    if failing:
        body["message"] = "not ready: " + ", ".join(
            f"{name} ({parts[name].detail})" for name in failing
        )
    elif degraded:
        body["message"] = (
            "serving, but beat is not running: abandoned calls are not settled, approvals "
            f"do not expire and audit checkpoints stop ({parts['beat'].detail})"
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
