"""Where the broker's keys come from: `SYNTHORG_SECRETS_KEYS`, else a key file in var/.

In production the keys must be configured: a key the console made for itself
would sit beside the database it protects. Elsewhere (dev, test) a key is made
on first use in `var/secrets_keys` (mode 0600, one key a line, newest first),
the way `var/secret_key` is.
"""

from __future__ import annotations

from pathlib import Path

from django.conf import settings

from common.platform.key_files import ensure_key_file, read_key_lines, write_key_lines
from secrets_app.keyring import KeyRing, SecretsKeyError, new_key

KEY_FILE_NAME = "secrets_keys"


def key_file() -> Path:
    return Path(settings.VAR_DIR) / KEY_FILE_NAME


def keys_from_environment() -> bool:
    return bool([k for k in settings.SYNTHORG_SECRETS_KEYS if k.strip()])


def key_ring() -> KeyRing:
    """The keys to use now; SecretsKeyError when none may be used."""
    if keys_from_environment():
        return KeyRing.from_keys(settings.SYNTHORG_SECRETS_KEYS)
    if settings.SYNTHORG_ENV == "production":
        raise SecretsKeyError(
            "set SYNTHORG_SECRETS_KEYS (Fernet keys, newest first, comma-separated) to "
            "store or use secrets in production"
        )
    path = key_file()
    ensure_key_file(path, lambda: [new_key()])
    return KeyRing.from_keys(read_key_lines(path))


def key_file_prepend_new_key() -> KeyRing:
    """Put a fresh key in front of the key file's keys (dev and test key files only)."""
    if keys_from_environment() or settings.SYNTHORG_ENV == "production":
        raise SecretsKeyError(
            "the keys come from SYNTHORG_SECRETS_KEYS: put a new key first there, then "
            "run `synthorg_secret rotate-keys`"
        )
    ring = key_ring()
    write_key_lines(key_file(), [new_key(), *ring.keys], exclusive=False)
    return key_ring()


def key_file_keep_only_newest() -> None:
    """Drop the retired keys from the key file once nothing is encrypted under them."""
    if keys_from_environment():
        return
    ring = key_ring()
    write_key_lines(key_file(), [ring.keys[0]], exclusive=False)
