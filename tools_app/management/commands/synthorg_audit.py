"""manage.py synthorg_audit verify: check the audit hash chain from the first event to the last."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from tools_app.audit_verify import audit_chain_verify


class Command(BaseCommand):
    help = "Audit log tools. verify: recompute the hash chain; exit 1 naming the first bad event."

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="action", required=True)
        sub.add_parser("verify", help="recompute every event's hash in id order")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["action"] == "verify":
            report = audit_chain_verify()
            if report.problem is not None:
                raise CommandError(report.problem, returncode=1)
            self.stdout.write(f"audit chain intact: {report.checked} event(s) verified")
