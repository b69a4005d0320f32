"""Structured logging: JSON lines in production, readable lines in dev, a request id everywhere.

The request id comes from the `X-Request-ID` header (when it is a plain token) or is
generated; it is bound for the whole request, returned in the response header, and
carried in the headers of every Celery task the request starts.
"""

from __future__ import annotations

import logging
import logging.config
import re
import uuid
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import Any

import structlog

from common.platform.middleware import SyncAsyncMiddleware

REQUEST_ID_HEADER = "X-Request-ID"
_REQUEST_ID_SHAPE = re.compile(r"^[A-Za-z0-9._-]{1,64}$")


def logging_config(*, fmt: str, level: str) -> None:
    """Route stdlib logging and structlog through one renderer."""
    shared: list[Any] = [
        structlog.contextvars.merge_contextvars,
        structlog.stdlib.add_log_level,
        structlog.stdlib.add_logger_name,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]
    renderer: Any = (
        structlog.processors.JSONRenderer()
        if fmt == "json"
        else structlog.dev.ConsoleRenderer(colors=False)
    )
    logging.config.dictConfig(
        {
            "version": 1,
            "disable_existing_loggers": False,
            "formatters": {
                "structured": {
                    "()": structlog.stdlib.ProcessorFormatter,
                    "processors": [
                        structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                        structlog.processors.format_exc_info,
                        renderer,
                    ],
                    "foreign_pre_chain": shared,
                }
            },
            "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "structured"}},
            "root": {"handlers": ["console"], "level": level},
            "loggers": {
                "django.db.backends": {"level": "INFO"},
                "daphne": {"level": "WARNING"},
                "celery": {"level": level},
                # One line per task received/succeeded drowns everything else (the
                # heartbeat runs every few seconds); invocations log their own events.
                "celery.app.trace": {"level": "WARNING"},
                "celery.worker.strategy": {"level": "WARNING"},
            },
        }
    )
    structlog.configure(
        processors=[*shared, structlog.stdlib.ProcessorFormatter.wrap_for_formatter],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=True,
    )


def request_id_from(header_value: str | None) -> str:
    """Accept a caller's request id only when it is a plain token; otherwise make one."""
    if header_value and _REQUEST_ID_SHAPE.match(header_value):
        return header_value
    return uuid.uuid4().hex


def current_request_id() -> str | None:
    value = structlog.contextvars.get_contextvars().get("request_id")
    return str(value) if value else None


@contextmanager
def bound_request_id(scope: dict[str, Any]) -> Iterator[str]:
    """For answers given before Django sees the request: its request id, bound to the logs."""
    header = None
    for name, value in scope.get("headers", ()):
        if name == REQUEST_ID_HEADER.lower().encode():
            header = bytes(value).decode("latin-1")
    request_id = request_id_from(header)
    structlog.contextvars.bind_contextvars(request_id=request_id)
    try:
        yield request_id
    finally:
        structlog.contextvars.unbind_contextvars("request_id")


class RequestIdMiddleware(SyncAsyncMiddleware):
    """Binds a request id to every log line of the request and echoes it back."""

    def _begin(self, request: Any) -> str:
        request_id = request_id_from(request.headers.get(REQUEST_ID_HEADER))
        structlog.contextvars.clear_contextvars()
        structlog.contextvars.bind_contextvars(request_id=request_id)
        request.request_id = request_id
        return request_id

    def _call(self, request: Any) -> Any:
        request_id = self._begin(request)
        try:
            response = self.get_response(request)
        finally:
            structlog.contextvars.clear_contextvars()
        response[REQUEST_ID_HEADER] = request_id
        return response

    async def _acall(self, request: Any) -> Any:
        request_id = self._begin(request)
        get_response: Callable[[Any], Awaitable[Any]] = self.get_response
        try:
            response = await get_response(request)
        finally:
            structlog.contextvars.clear_contextvars()
        response[REQUEST_ID_HEADER] = request_id
        return response
