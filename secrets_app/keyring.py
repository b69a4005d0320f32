"""PURE: the keys that encrypt secret values at rest (Fernet, newest key first).

`cryptography`'s MultiFernet encrypts with the first key and decrypts with any,
so adding a key in front and re-encrypting every value (`rotate`) retires the
older ones without a moment when a value cannot be read.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field

from cryptography.fernet import Fernet, InvalidToken, MultiFernet


class SecretsKeyError(Exception):
    """The configured keys cannot be used; the message says which and why (never the key)."""


class SecretValueUnreadableError(Exception):
    """A stored value does not decrypt with any configured key."""


def key_id(key: str) -> str:
    """A short public name for a key (a digest prefix), stored beside each value."""
    return hashlib.sha256(key.encode("ascii", "replace")).hexdigest()[:12]


def new_key() -> str:
    """A fresh random Fernet key."""
    return Fernet.generate_key().decode("ascii")


@dataclass(frozen=True)
class KeyRing:
    """Fernet keys, newest first: values are encrypted with the first one."""

    keys: tuple[str, ...]
    _fernet: MultiFernet = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self.keys:
            raise SecretsKeyError("no secrets key is configured")
        fernets = []
        for position, key in enumerate(self.keys, start=1):
            try:
                fernets.append(Fernet(key.encode("ascii")))
            except (ValueError, UnicodeEncodeError) as exc:
                raise SecretsKeyError(
                    f"secrets key {position} is not a Fernet key (32 url-safe base64-encoded "
                    "bytes, as `Fernet.generate_key()` makes)"
                ) from exc
        object.__setattr__(self, "_fernet", MultiFernet(fernets))

    @classmethod
    def from_keys(cls, keys: Sequence[str]) -> KeyRing:
        """A ring from keys as configured (blank entries and surrounding spaces dropped)."""
        return cls(tuple(dict.fromkeys(k.strip() for k in keys if k.strip())))

    @property
    def newest_id(self) -> str:
        return key_id(self.keys[0])

    def encrypt(self, value: str) -> str:
        return self._fernet.encrypt(value.encode("utf-8")).decode("ascii")

    def decrypt(self, token: str) -> str:
        try:
            return self._fernet.decrypt(token.encode("ascii")).decode("utf-8")
        except (InvalidToken, UnicodeError) as exc:
            raise SecretValueUnreadableError(
                "a stored secret does not decrypt with any configured key"
            ) from exc

    def rotate(self, token: str) -> str:
        """The same value encrypted under the newest key."""
        try:
            return self._fernet.rotate(token.encode("ascii")).decode("ascii")
        except (InvalidToken, UnicodeError) as exc:
            raise SecretValueUnreadableError(
                "a stored secret does not decrypt with any configured key"
            ) from exc
