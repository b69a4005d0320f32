"""Every stored secret's value, for redaction only: the second wall behind sealing.

Sealing keeps values out of agents' programs; if a value still reaches an answer
(a server that echoes its credentials, an old grant, a mistake), the sanitiser
redacts it because it knows every stored value, of every secret and every version
still held, not only those of the call being run. The values are decrypted once
per process and kept in memory; a change (set, rotate, revoke, key rotation) bumps
a generation number in the shared cache, which each process checks at most every
``REFRESH_SECONDS`` (and a worker as each call starts) before it reads them again.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from typing import Final

from django.core.cache import cache
from django.db import DatabaseError, transaction

GENERATION_KEY: Final = "secrets:generation"
REFRESH_SECONDS: Final = 2.0


class _Known:
    """This process's copy of the values and the generation it was read at."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.values: tuple[str, ...] = ()
        self.generation: object = None
        self.checked = 0.0


_known = _Known()


def stored_secret_values(*, fresh: bool = False) -> tuple[str, ...]:
    """The values of every stored secret version (never shown; for redaction only).

    ``fresh``: check the generation now (a worker does so as each call starts, so a
    value stored before the call is always known to it)."""
    if _in_event_loop():
        # An async view or consumer may not query the database: what is known so far
        # (read by this process's threads, which do) is what it redacts with.
        return _known.values
    now = time.monotonic()
    with _known.lock:
        recent = now - _known.checked < REFRESH_SECONDS
        if _known.generation is not None and recent and not fresh:
            return _known.values
        held = _known.generation
    try:
        generation: object = cache.get(GENERATION_KEY, 0)
    except Exception:
        # The cache is away: keep what is known (an empty start reads the database).
        generation = held if held is not None else -1
    with _known.lock:
        if generation == _known.generation:
            _known.checked = now
            return _known.values
    try:
        loaded = _load()
    except DatabaseError:
        # The database is away: the values known so far stay (read again next time).
        with _known.lock:
            return _known.values
    with _known.lock:
        _known.values, _known.generation, _known.checked = loaded, generation, now
    return loaded


def _in_event_loop() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def _load() -> tuple[str, ...]:
    from secrets_app.keyring import SecretsKeyError, SecretValueUnreadableError
    from secrets_app.keys import key_ring
    from secrets_app.models import SecretVersion

    try:
        ring = key_ring()
    except SecretsKeyError:
        return ()
    values: list[str] = []
    for ciphertext in SecretVersion.objects.exclude(ciphertext="").values_list(
        "ciphertext", flat=True
    ):
        with contextlib.suppress(SecretValueUnreadableError):
            values.append(ring.decrypt(ciphertext))
    return tuple(dict.fromkeys(values))


def stored_secrets_changed() -> None:
    """Call inside the transaction that changed a value: every process reads them again
    once it commits."""

    def bump() -> None:
        try:
            cache.incr(GENERATION_KEY)
        except ValueError:
            cache.set(GENERATION_KEY, 1, timeout=None)
        except Exception:  # noqa: S110 - the cache is away: processes refresh on their own
            pass
        with _known.lock:
            _known.generation = None  # this process reads them at once

    transaction.on_commit(bump)
