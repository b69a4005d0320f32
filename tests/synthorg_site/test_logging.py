"""A request id on every log line of a request and on the Celery tasks it starts."""

from __future__ import annotations

import json
import logging
import uuid
from pathlib import Path

import pytest
from django.test import Client

from common.platform.logs import logging_config, request_id_from
from common.testing import python_argv, running, wait_until
from tools_app.tasks import execute_invocation


def test_request_id_is_echoed_and_a_bad_one_replaced() -> None:
    response = Client().get("/healthz", HTTP_X_REQUEST_ID="abc-123")
    assert response["X-Request-ID"] == "abc-123"
    forged = Client().get("/healthz", HTTP_X_REQUEST_ID="evil\nline")
    assert forged["X-Request-ID"] != "evil\nline"
    assert len(forged["X-Request-ID"]) == 32
    assert request_id_from("x" * 65) != "x" * 65


def test_log_lines_are_json_with_the_request_id(capsys: pytest.CaptureFixture[str]) -> None:
    import structlog

    # The handler made here writes to this test's captured stream, closed after it: the
    # session's own handlers come back, or every later test's log lines would be lost.
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    logging_config(fmt="json", level="INFO")
    try:
        structlog.contextvars.bind_contextvars(request_id="rid-42")
        structlog.get_logger("synthorg.test").info("tool_called", tool="read_file")
        logging.getLogger("plain.stdlib").warning("from stdlib")
    finally:
        structlog.contextvars.clear_contextvars()
        root.handlers[:] = handlers
        root.setLevel(level)
    lines = [json.loads(line) for line in capsys.readouterr().err.splitlines() if line]
    assert lines[0]["event"] == "tool_called" and lines[0]["request_id"] == "rid-42"
    assert lines[1]["event"] == "from stdlib" and lines[1]["request_id"] == "rid-42"


@pytest.mark.integration
@pytest.mark.django_db(transaction=True)
def test_a_task_started_in_a_request_logs_that_request_id(
    test_env: dict[str, str], tmp_path: Path
) -> None:
    """A worker of its own, on a queue of its own: the session's other workers (the shared
    one, and those other modules start) can never take this task and log it elsewhere."""
    import structlog

    from common.platform.heartbeat import worker_heartbeats

    queue = f"test-logging-{uuid.uuid4().hex[:8]}"
    name = f"{queue}@localhost"
    argv = python_argv(
        "-m", "celery", "-A", "synthorg_site", "worker", "-Q", queue, "-n", name,
        "--without-gossip", "--without-mingle", "-l", "INFO",
    )  # fmt: skip
    with running(argv, env=test_env, log_path=tmp_path / "worker.log") as worker:
        wait_until(
            lambda: any(b.name == name for b in worker_heartbeats()),
            timeout=120,
            what="the worker's heartbeat",
        )
        structlog.contextvars.bind_contextvars(request_id="rid-task-7")
        try:
            # Any task will do; one for an invocation that does not exist does nothing.
            result = execute_invocation.apply_async(args=[str(uuid.uuid4())], queue=queue)
        finally:
            structlog.contextvars.clear_contextvars()

        def logged() -> bool:
            return any(
                result.id in line and "rid-task-7" in line for line in worker.output().splitlines()
            )

        try:
            wait_until(logged, timeout=120, what="the worker to log the task with its request id")
        except AssertionError as exc:
            seen = [line for line in worker.output().splitlines() if result.id in line]
            raise AssertionError(
                f"{exc}; the worker's lines naming the task: {seen[-5:]}; {_queue_state(queue)}; "
                f"the worker's broker: {test_env.get('REDIS_URL')}"
            ) from exc


def _queue_state(queue: str) -> str:
    """Where the task is when the worker has not logged it: still waiting in its queue
    (never taken), or gone (taken, or never stored), and the broker it was sent to."""
    app = execute_invocation.app
    try:
        with app.connection_for_write() as connection:
            _, waiting, consumers = connection.default_channel.queue_declare(queue, passive=True)
            return f"sent to {connection.as_uri()}: {waiting} waiting, {consumers} consumers"
    except Exception as exc:
        return f"the queue could not be read: {exc!r}"
