"""Which part of the console is away, as an exception says it: the database, or Redis
(cache, channel layer and Celery's broker). A request that meets one is answered
``503 unavailable`` with ``Retry-After``, never ``500 internal``."""

from __future__ import annotations

import structlog
from django.db import InterfaceError, OperationalError
from django.http import HttpResponse

from common.envelope import error_bytes, is_api_path

log = structlog.get_logger("synthorg.http")

# What a client is told to wait before trying again, in seconds.
RETRY_AFTER_SECONDS = 5
# The deepest chain of causes looked through.
_MAX_CAUSES = 8


def _redis_errors() -> tuple[type[BaseException], ...]:
    from kombu.exceptions import OperationalError as BrokerError
    from redis.exceptions import ConnectionError as RedisConnectionError
    from redis.exceptions import TimeoutError as RedisTimeoutError

    return (RedisConnectionError, RedisTimeoutError, BrokerError)


def outage_part(exc: BaseException) -> str | None:
    """``"database"`` or ``"redis"`` when ``exc`` (or what caused it) says that part is
    unreachable, else None."""
    redis_errors = _redis_errors()
    seen = 0
    current: BaseException | None = exc
    while current is not None and seen < _MAX_CAUSES:
        if isinstance(current, (OperationalError, InterfaceError)):
            return "database"
        if isinstance(current, redis_errors):
            return "redis"
        current = current.__cause__ or current.__context__
        seen += 1
    return None


def outage_message(part: str) -> str:
    return (
        f"the console's {part} is unreachable right now; nothing of this request was "
        f"lost that you cannot send again: retry in {RETRY_AFTER_SECONDS} s"
    )


def outage_response(path: str, exc: BaseException) -> HttpResponse | None:
    """503 with Retry-After when ``exc`` says a part is away (the JSON envelope on API
    paths, plain text elsewhere), else None. Not audited: the record may be what is away."""
    part = outage_part(exc)
    if part is None:
        return None
    log.warning("request_met_outage", part=part, path=path, error=str(exc)[:300])
    message = outage_message(part)
    if is_api_path(path):
        response = HttpResponse(
            error_bytes("unavailable", message, {"part": part}),
            status=503,
            content_type="application/json",
        )
    else:
        response = HttpResponse(message, status=503, content_type="text/plain; charset=utf-8")
    response["Retry-After"] = str(RETRY_AFTER_SECONDS)
    return response
