"""manage.py synthorg_audit: verify the keyed audit chain, rotate its key, checkpoint it."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction

from audit_app.chain import AuditKeyError, new_audit_key
from audit_app.checkpoint import audit_checkpoint_write
from audit_app.keys import audit_key_ring, audit_keys_configured
from audit_app.models import VerificationStatus
from audit_app.record import Actor, audit_chain_start_keyed
from audit_app.services.keys import audit_key_rotate
from audit_app.services.restore import AuditRestoreError, audit_restore_record
from audit_app.services.verification import audit_verification_run_here


class Command(BaseCommand):
    help = (
        "Audit log tools. verify: recompute the keyed hash chain and hold it against the "
        "checkpoints; exit 1 naming the first bad event or the missing range. rotate-key: "
        "key new events with a fresh key (the key file in var/). new-key: print a fresh "
        "ID:SECRET for SYNTHORG_AUDIT_KEYS. checkpoint: write a signed checkpoint now. "
        "start-keyed: mark where keyed events begin after a log of unkeyed ones. restored: "
        "after a restore from a backup, set aside the checkpoints of later events."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="action", required=True)
        sub.add_parser("verify", help="recompute every event's hash in id order, then checkpoints")
        sub.add_parser("rotate-key", help="put a fresh key first in var/audit_keys")
        sub.add_parser("new-key", help="print a fresh ID:SECRET entry (nothing is stored)")
        sub.add_parser("checkpoint", help="write a signed checkpoint of the chain's head now")
        sub.add_parser(
            "restored",
            help="after restoring the database from a backup (before the console starts): "
            "set aside the checkpoints of events after the backup, verify, record the restore",
        )
        sub.add_parser(
            "start-keyed",
            help="after checking that the log's unkeyed events are genuine history, mark "
            "where keyed events begin (new events are refused until then)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        action = options["action"]
        try:
            if action == "verify":
                self._verify()
            elif action == "rotate-key":
                key_id = audit_key_rotate(actor=Actor.system("synthorg_audit rotate-key"))
                self.stdout.write(f"new events are keyed with audit key {key_id}")
            elif action == "new-key":
                key = new_audit_key()
                self.stdout.write(
                    "put this entry first in SYNTHORG_AUDIT_KEYS, keep the old ones after it:"
                )
                self.stdout.write(f"{key.id}:{key.secret.decode()}")
            elif action == "start-keyed":
                self._start_keyed()
            elif action == "restored":
                self._restored()
            elif action == "checkpoint":
                stored = audit_checkpoint_write()
                if stored is None:
                    self.stdout.write("no checkpoint written: the log is empty or has not moved")
                else:
                    mark = stored.checkpoint
                    self.stdout.write(
                        f"checkpoint {stored.name}: {mark.count} event(s) up to #{mark.head_id}"
                    )
        except AuditKeyError as exc:
            raise CommandError(str(exc), returncode=1) from exc

    def _verify(self) -> None:
        # Without usable keys nothing can be judged, and the result could not be written
        # to the keyed log either: refuse with the reason before recording a run.
        # Only look when a key should exist: outside production the ring would make the
        # first key here, and the verification must see that none was configured yet.
        try:
            if audit_keys_configured() or settings.SYNTHORG_ENV == "production":
                audit_key_ring()
        except AuditKeyError as exc:
            raise CommandError(f"the audit keys cannot be used: {exc}", returncode=1) from exc
        run = audit_verification_run_here(requested_by="synthorg_audit verify")
        if run.status != VerificationStatus.PASSED:
            # The summary names the first bad event or the missing range.
            raise CommandError(run.summary, returncode=1)
        self.stdout.write(run.summary)

    def _restored(self) -> None:
        try:
            done = audit_restore_record(actor=Actor.system("synthorg_audit restored"))
        except AuditRestoreError as exc:
            raise CommandError(str(exc), returncode=1) from exc
        if done.set_aside:
            self.stdout.write(
                f"the log was restored to event #{done.head_id}: {len(done.set_aside)} "
                f"checkpoint(s) of later events set aside in {done.directory}; the restore "
                "is recorded in the log"
            )
        else:
            self.stdout.write(
                f"no checkpoint lies past event #{done.head_id}; the restore is recorded in the log"
            )

    def _start_keyed(self) -> None:
        with transaction.atomic():
            marker = audit_chain_start_keyed(actor=Actor.system("synthorg_audit start-keyed"))
        if marker is None:
            self.stdout.write("nothing to mark: the log is empty or its newest event is keyed")
        else:
            self.stdout.write(
                f"audit event #{marker.id} marks where keyed events begin (key {marker.key_id}); "
                "the unkeyed events before it are trusted as they are"
            )
