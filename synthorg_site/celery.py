"""The Celery app: every tool call runs in a worker, on the queue of its sandbox backend."""

from __future__ import annotations

import os
from typing import Any

import structlog
from celery import Celery, signals
from kombu import Exchange, Queue

from synthorg_site.broker_clients import broker_clients_apply
from synthorg_site.broker_repair import broker_repair_apply

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "synthorg_site.settings")

# One queue per sandbox backend, so a slow backend never starves another and each
# can be scaled with its own workers; maintenance carries sweeps and heartbeats.
QUEUES = ("default", "sandbox.subprocess", "sandbox.namespace", "sandbox.docker", "maintenance")

# Before any connection exists: a worker must survive a restart of its Redis broker.
broker_repair_apply()
# One Redis client per channel, not one per message sent or acknowledged.
broker_clients_apply()

app = Celery("synthorg")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.conf.update(
    task_queues=[Queue(name, Exchange(name), routing_key=name) for name in QUEUES],
    task_default_queue="default",
    task_routes={
        "synthorg_site.tasks.*": {"queue": "maintenance"},
        "tools_app.sweep_*": {"queue": "maintenance"},
        "tools_app.audit_*": {"queue": "maintenance"},
        "trust_app.*": {"queue": "maintenance"},
        "approvals_app.sweep_*": {"queue": "maintenance"},
        "notifications_app.*": {"queue": "maintenance"},
    },
    # broker_transport_options come from settings (CELERY_BROKER_TRANSPORT_OPTIONS):
    # the Redis timeouts and the visibility timeout.
    # A worker process supervises many calls at once: each runs in a thread that waits
    # on its sandbox (the waiting is done by the sandbox's processes, not by Python),
    # so a call that sleeps holds neither a process nor a database connection. The
    # number of threads is SYNTHORG_WORKER_CALLS (CELERY_WORKER_CONCURRENCY in settings).
    worker_pool="threads",
    task_acks_late=True,
    task_reject_on_worker_lost=True,
    worker_prefetch_multiplier=1,
    task_ignore_result=True,
    # No result backend is configured (the database holds every outcome), and the
    # disabled one keeps no state: one for the whole process, instead of one built for
    # each thread that sends a task (every web request runs in a thread of its own).
    result_backend_thread_safe=True,
    task_serializer="json",
    accept_content=["json"],
    broker_connection_retry_on_startup=True,
    worker_hijack_root_logger=False,
    worker_redirect_stdouts=False,
    # Celery's Django fixup would close the database connections around every task;
    # the tasks give their connection back themselves (to the pool on PostgreSQL).
    CELERY_DB_REUSE_MAX=500,
    beat_schedule={
        "beat-heartbeat": {"task": "synthorg_site.tasks.beat_heartbeat", "schedule": 2.0},
        "trust-evaluate-all": {
            "task": "trust_app.evaluate_all",
            "schedule": 3600.0,
            "options": {"queue": "maintenance"},
        },
        "sweep-dispatch": {
            "task": "tools_app.sweep_dispatch",
            "schedule": 5.0,
            "options": {"queue": "maintenance"},
        },
        "sweep-abandoned-invocations": {
            "task": "tools_app.sweep_abandoned_invocations",
            "schedule": 5.0,
            "options": {"queue": "maintenance"},
        },
        "sweep-expired-approvals": {
            "task": "approvals_app.sweep_expired_approvals",
            "schedule": 1.0,
            "options": {"queue": "maintenance"},
        },
        "sweep-abandoned-verifications": {
            "task": "tools_app.sweep_abandoned_verifications",
            "schedule": 300.0,
            "options": {"queue": "maintenance"},
        },
        "sweep-refusal-summaries": {
            "task": "tools_app.sweep_refusal_summaries",
            "schedule": 60.0,
            "options": {"queue": "maintenance"},
        },
        "sweep-notifications": {
            "task": "notifications_app.sweep_notifications",
            "schedule": 5.0,
            "options": {"queue": "maintenance"},
        },
        "sweep-escalate-approvals": {
            "task": "approvals_app.sweep_escalate_approvals",
            "schedule": 15.0,
            "options": {"queue": "maintenance"},
        },
    },
)
app.autodiscover_tasks()
app.autodiscover_tasks(["synthorg_site"])


@app.on_after_configure.connect
def _schedule_audit_checkpoints(sender: Celery, **_: Any) -> None:
    """The audit checkpoint's interval is a setting, read once Django's settings are."""
    from django.conf import settings

    sender.conf.beat_schedule["audit-checkpoint"] = {
        "task": "tools_app.audit_checkpoint",
        "schedule": float(settings.SYNTHORG_AUDIT_CHECKPOINT_SECONDS),
        "options": {"queue": "maintenance"},
    }


_log = structlog.get_logger("synthorg.celery")


@signals.before_task_publish.connect
def _carry_request_id(headers: dict[str, Any] | None = None, **_: Any) -> None:
    """A task started by a request carries that request's id."""
    from common.platform.logs import current_request_id

    request_id = current_request_id()
    if headers is not None and request_id and "request_id" not in headers:
        headers["request_id"] = request_id


@signals.task_prerun.connect
def _bind_request_id(task: Any = None, **_: Any) -> None:
    from django.db import close_old_connections

    # A kept connection past CONN_MAX_AGE, or one that broke, is closed here;
    # the next query opens a new one.
    close_old_connections()
    structlog.contextvars.clear_contextvars()
    request_id = getattr(task.request, "request_id", None) if task is not None else None
    structlog.contextvars.bind_contextvars(
        task=getattr(task, "name", None), task_id=getattr(task.request, "id", None)
    )
    if request_id:
        structlog.contextvars.bind_contextvars(request_id=request_id)
    # Tasks that run every few seconds (heartbeats) stay out of the log.
    if task is not None and not getattr(task, "quiet", False):
        _log.info("task_started")


@signals.task_postrun.connect
def _unbind(**_: Any) -> None:
    structlog.contextvars.clear_contextvars()
    from common.platform.database import database_connections_release

    # The pool's connection goes back between tasks: threads waiting for work hold none.
    database_connections_release()


@signals.worker_ready.connect
def _start_heartbeat(sender: Any = None, **_: Any) -> None:
    from common.platform.heartbeat import start_worker_heartbeat

    queues = sorted(sender.app.amqp.queues.consume_from) if sender is not None else []
    hostname = getattr(sender, "hostname", None) or "worker"
    start_worker_heartbeat(hostname=hostname, queues=queues)
    from tools_app.worker.start import worker_started

    worker_started(queues)
    _log.info("worker_ready", hostname=hostname, queues=queues)


@signals.worker_shutdown.connect
def _stop_heartbeat(sender: Any = None, **_: Any) -> None:
    from common.platform.heartbeat import stop_worker_heartbeat

    stop_worker_heartbeat()
    from tools_app.worker.start import worker_stopping

    worker_stopping()


@signals.worker_process_init.connect
@signals.worker_init.connect
def _start_tracing(**_: Any) -> None:
    """The process that runs the tasks traces (when OTEL_* ask for it): the worker itself
    with the threads pool, and each child of a prefork pool after its fork (the batch
    exporter's thread must live in the process that uses it; once per process)."""
    from common.platform.tracing import tracing_start

    tracing_start("worker")


@signals.worker_process_shutdown.connect
def _release_process_metrics(**_: Any) -> None:
    """A prefork child that exits (this runs in it) drops its live metric files and
    the lock that says it lives (prometheus multiprocess), and sends the spans it
    still holds."""
    from common.platform.metrics.process import process_metrics_release
    from common.platform.tracing import tracing_flush

    process_metrics_release()
    tracing_flush()


@signals.celeryd_after_setup.connect
def _consume_this_machines_queue(instance: Any = None, **_: Any) -> None:
    """A worker serving the desktop's sandbox queue also takes the work bound to its
    machine (calls to a desktop session standing there: tools_app.builtin.desktop)."""
    from tools_app.services.desktop_control import desktop_queue
    from tools_app.worker.machine import machine_name, machine_queue

    queues = instance.app.amqp.queues
    if desktop_queue() in queues.consume_from:
        name = machine_queue(machine_name())
        # Declared as every queue here is (its own direct exchange), as a sender makes it.
        queues.select_add(Queue(name, Exchange(name), routing_key=name))
