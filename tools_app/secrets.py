"""Secrets the console itself holds, so they are redacted wherever they would surface."""

from __future__ import annotations

import functools

from django.conf import settings


@functools.cache
def known_secrets() -> tuple[str, ...]:
    """The secret key, database and Redis passwords: strings no agent may ever see."""
    found = [settings.SECRET_KEY]
    for database in settings.DATABASES.values():
        found.append(str(database.get("PASSWORD") or ""))
    from urllib.parse import urlsplit

    redis_password = urlsplit(settings.REDIS_URL).password
    if redis_password:
        found.append(redis_password)
    return tuple(s for s in found if len(s) >= 8)
