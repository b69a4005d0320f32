"""Settings that production refuses to start with. Pure: plain values in, problems out."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

MIN_SECRET_KEY_LENGTH = 50


@dataclass(frozen=True)
class ProductionSettings:
    debug: bool
    secret_key_from_env: bool
    secret_key: str
    allowed_hosts: Sequence[str]
    database_url_set: bool
    audit_keys_set: bool = True


def unsafe_production_settings(settings: ProductionSettings) -> list[str]:
    """Each unsafe setting, named, with what to do instead."""
    problems: list[str] = []
    if settings.debug:
        problems.append("DEBUG is on: set DEBUG=false (it shows tracebacks and settings to anyone)")
    if not settings.secret_key_from_env:
        problems.append("SECRET_KEY is not set: set it to a random string of 50+ characters")
    elif len(settings.secret_key) < MIN_SECRET_KEY_LENGTH or settings.secret_key.startswith(
        "django-insecure"
    ):
        problems.append(
            f"SECRET_KEY is weak: use a random string of at least {MIN_SECRET_KEY_LENGTH} "
            "characters"
        )
    if not settings.allowed_hosts:
        problems.append("ALLOWED_HOSTS is empty: list the host names the console is served on")
    elif "*" in settings.allowed_hosts:
        problems.append("ALLOWED_HOSTS contains '*': list the host names the console is served on")
    if not settings.database_url_set:
        problems.append(
            "DATABASE_URL is not set: name the production database explicitly "
            "(postgres://… ; sqlite:///PATH only for a single node)"
        )
    if not settings.audit_keys_set:
        problems.append(
            "SYNTHORG_AUDIT_KEYS is not set: set it to ID:SECRET (a secret of 32+ random "
            "characters; `manage.py synthorg_audit new-key` prints one), kept outside the database"
        )
    return problems
