"""Secrets the console itself holds, so they are redacted wherever they would surface."""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Iterable, Iterator
from contextvars import ContextVar

from django.conf import settings

from secrets_app.redaction import stored_secret_values
from tools_app.sanitize.keys import is_secret_name, not_a_secret

# Values of named secrets (secrets_app) substituted into the call being run: its
# result, errors and raw output are redacted of them like of the console's own.
_call_secrets: ContextVar[tuple[str, ...]] = ContextVar("call_secrets", default=())


@contextlib.contextmanager
def call_secrets(values: Iterable[str]) -> Iterator[None]:
    """Within this block, `values` count as known secrets too (one call's secrets)."""
    token = _call_secrets.set(tuple(values))
    try:
        yield
    finally:
        _call_secrets.reset(token)


def call_known_secrets() -> tuple[str, ...]:
    """The secrets of the call being run alone (empty outside one)."""
    return _call_secrets.get()


def known_secrets_now() -> tuple[str, ...]:
    """The console's own secrets, those of the call being run, and the values of every
    stored secret (secrets_app.redaction: the second wall behind sealing)."""
    return known_secrets() + _call_secrets.get() + stored_secret_values()


@functools.cache
def known_secrets() -> tuple[str, ...]:
    """The secret key, database and Redis passwords, injected header values and the
    values of secret-named variables of the console's own environment: strings no
    agent may ever see."""
    found = [settings.SECRET_KEY]
    for database in settings.DATABASES.values():
        found.append(str(database.get("PASSWORD") or ""))
    from urllib.parse import urlsplit

    redis_password = urlsplit(settings.REDIS_URL).password
    if redis_password:
        found.append(redis_password)
    found.extend(_configured_header_values())
    found.extend(_database_connection_passwords())
    found.extend(_environment_secrets())
    minimum = settings.SYNTHORG_SECRET_MIN_LENGTH
    return tuple(dict.fromkeys(s for s in found if len("".join(s.split())) >= minimum))


def _environment_secrets() -> list[str]:
    """Values of the console's environment variables whose names say secret
    (`*_TOKEN`, `*_SECRET*`, `*_PASSWORD`, `AWS_SECRET_ACCESS_KEY`, …); a path or a
    number under such a name (`SSH_AUTH_SOCK`, `PWD`) is not one."""
    return [
        value
        for name, value in os.environ.items()
        if is_secret_name(name) and not not_a_secret(value)
    ]


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
    from tools_app.builtin.database.config import connection_passwords

    sections = {
        name: section.model_extra or {} for name, section in synthorg_config().tools.items()
    }
    return connection_passwords(sections)
