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
    found.extend(_configured_header_values())
    found.extend(_database_connection_passwords())
    return tuple(s for s in found if len(s) >= 8)


def _configured_header_values() -> list[str]:
    """Values of per-domain auth headers in the tools config (tokens the console injects)."""
    from common.settings_config import synthorg_config

    values: list[str] = []
    for section in synthorg_config().tools.values():
        headers_by_host = (section.model_extra or {}).get("auth_headers") or {}
        for headers in headers_by_host.values():
            for value in (headers or {}).values():
                value = str(value)
                values.append(value)
                # "Bearer abc…": the token alone must not leak either.
                _scheme, _, credential = value.partition(" ")
                if credential:
                    values.append(credential)
    return values


def _database_connection_passwords() -> list[str]:
    """Passwords in the URLs of the database tools' configured connections."""
    from common.settings_config import synthorg_config
    from tools_app.builtin.database_config import connection_passwords

    sections = {
        name: section.model_extra or {} for name, section in synthorg_config().tools.items()
    }
    return connection_passwords(sections)
