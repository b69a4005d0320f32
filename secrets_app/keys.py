"""Where the broker's keys come from: `SYNTHORG_SECRETS_KEYS`, else a key file in var/.

In production the keys must be configured: a key the console made for itself
would sit beside the database it protects. Elsewhere (dev, test) a key is made
on first use in `var/secrets_keys` (mode 0600, one key a line, newest first),
the way `var/secret_key` is.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from django.conf import settings

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
    if not path.exists():
        _write_keys(path, [new_key()], exclusive=True)
    return KeyRing.from_keys(path.read_text().splitlines())


def key_file_prepend_new_key() -> KeyRing:
    """Put a fresh key in front of the key file's keys (dev and test key files only)."""
    if keys_from_environment() or settings.SYNTHORG_ENV == "production":
        raise SecretsKeyError(
            "the keys come from SYNTHORG_SECRETS_KEYS: put a new key first there, then "
            "run `synthorg_secret rotate-keys`"
        )
    ring = key_ring()
    _write_keys(key_file(), [new_key(), *ring.keys], exclusive=False)
    return key_ring()


def key_file_keep_only_newest() -> None:
    """Drop the retired keys from the key file once nothing is encrypted under them."""
    if keys_from_environment():
        return
    ring = key_ring()
    _write_keys(key_file(), [ring.keys[0]], exclusive=False)


def _write_keys(path: Path, keys: list[str], *, exclusive: bool) -> None:
    """Write the key file privately and atomically (a temporary file linked or renamed
    into place), so two processes starting at once agree on one key."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write("\n".join(keys) + "\n")
    try:
        if exclusive:
            with contextlib.suppress(FileExistsError):
                os.link(tmp, path)
        else:
            os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()
