"""Sessions stored under a keyed hash of their key (``SESSION_ENGINE``).

Django's database store keeps the cookie's value itself as the primary key, so
anyone who reads the session table holds every signed-in person's cookie. This
store keeps only an HMAC of it (keyed by ``SECRET_KEY``, truncated to the
column's 40 characters, 160 bits): a stolen row is not a cookie, and the value
in it, sent as one, is hashed again and matches nothing.

Sessions stored by the plain database store before the switch match nothing
either; their owners sign in again.
"""

from __future__ import annotations

from typing import Any

from django.contrib.sessions.backends import db
from django.utils import timezone
from django.utils.crypto import salted_hmac

# The session table's primary key is a 40-character column.
STORED_KEY_LENGTH = 40
HASH_SALT = "synthorg_site.sessions.stored_key"


def stored_key(session_key: str) -> str:
    """The value stored for ``session_key``: its keyed hash, never the key."""
    digest = salted_hmac(HASH_SALT, session_key, algorithm="sha256").hexdigest()
    return digest[:STORED_KEY_LENGTH]


class SessionStore(db.SessionStore):
    """The database store, keyed by the hash of the cookie's value."""

    def _get_session_from_db(self) -> Any:
        if self.session_key is None:
            return None
        try:
            return self.model.objects.get(
                session_key=stored_key(self.session_key), expire_date__gt=timezone.now()
            )
        except self.model.DoesNotExist:
            self._session_key = None
            return None

    async def _aget_session_from_db(self) -> Any:
        if self.session_key is None:
            return None
        try:
            return await self.model.objects.aget(
                session_key=stored_key(self.session_key), expire_date__gt=timezone.now()
            )
        except self.model.DoesNotExist:
            self._session_key = None
            return None

    def exists(self, session_key: str) -> bool:
        return bool(self.model.objects.filter(session_key=stored_key(session_key)).exists())

    async def aexists(self, session_key: str) -> bool:
        return bool(await self.model.objects.filter(session_key=stored_key(session_key)).aexists())

    def create_model_instance(self, data: dict[str, Any]) -> Any:
        row = super().create_model_instance(data)
        row.session_key = stored_key(row.session_key)
        return row

    async def acreate_model_instance(self, data: dict[str, Any]) -> Any:
        row = await super().acreate_model_instance(data)
        row.session_key = stored_key(row.session_key)
        return row

    def delete(self, session_key: str | None = None) -> None:
        key = session_key if session_key is not None else self.session_key
        if key is None:
            return
        self.model.objects.filter(session_key=stored_key(key)).delete()

    async def adelete(self, session_key: str | None = None) -> None:
        key = session_key if session_key is not None else self.session_key
        if key is None:
            return
        await self.model.objects.filter(session_key=stored_key(key)).adelete()
