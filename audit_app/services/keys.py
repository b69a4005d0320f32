"""audit_key_rotate: new events are keyed with a fresh key; the older keys stay to verify."""

from __future__ import annotations

from django.db import transaction

from audit_app.chain import AUDIT_KEY_ROTATED
from audit_app.keys import audit_key_ring, key_file_prepend_new_key
from audit_app.record import Actor, audit_record


def audit_key_rotate(*, actor: Actor) -> str:
    """Put a new key first in the key file and record the rotation under it; its id.

    The rotation event is the first event keyed with the new key, so the log shows
    where each key took over.
    """
    previous = audit_key_ring().newest.id
    ring = key_file_prepend_new_key()
    with transaction.atomic():
        audit_record(
            kind=AUDIT_KEY_ROTATED,
            actor=actor,
            reason=f"audit key {ring.newest.id} replaces {previous} for new events",
            data={"key_id": ring.newest.id, "previous_key_id": previous},
        )
    return ring.newest.id
