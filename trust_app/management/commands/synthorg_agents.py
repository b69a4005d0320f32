"""manage.py synthorg_agents export [FILE] | apply FILE [--dry-run]: agents as code.

``export`` writes every agent (level, autonomy, owner, workspace, tool lists,
sub-constraints, cap on calls at once, secret grant names) as YAML to FILE or standard
output. ``apply`` checks FILE field by field, prints the plan (one line per change, and
the fields each existing agent keeps because the file leaves them out) and,
without ``--dry-run``, makes every change in one transaction; the first token of each
agent it creates is printed once.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from audit_app.record import Actor
from common.config.errors import ConfigError
from common.errors import SynthOrgError
from trust_app.agents_code.apply import agents_apply
from trust_app.agents_code.export import agents_export
from trust_app.agents_code.plan import Plan, agents_plan
from trust_app.agents_code.schema import (
    agents_file_dump,
    agents_file_parse,
    agents_file_size_problem,
)


class Command(BaseCommand):
    help = "Agents as code: export them as YAML, or plan and apply a YAML file."

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="action", required=True)
        export = sub.add_parser("export", help="write the agents as YAML")
        export.add_argument("file", nargs="?", default=None, help="default: standard output")
        apply = sub.add_parser("apply", help="show the plan for FILE and apply it")
        apply.add_argument("file")
        apply.add_argument("--dry-run", action="store_true", help="show the plan only")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["action"] == "export":
            self._export(options["file"])
        else:
            self._apply(options["file"], dry_run=options["dry_run"])

    def _export(self, file: str | None) -> None:
        text = agents_file_dump(agents_export())
        if file is None:
            self.stdout.write(text, ending="")
            return
        Path(file).write_text(text, encoding="utf-8")
        self.stderr.write(f"wrote {file}")

    def _show(self, plan: Plan) -> None:
        if plan.empty:
            self.stdout.write("plan: no changes")
        else:
            self.stdout.write(f"plan: {len(plan.changes)} changes")
            for change in plan.changes:
                self.stdout.write(f"  {change.line()}")
        for name, fields in plan.kept:
            self.stdout.write(f"left as they are (not in the file): {name}: {', '.join(fields)}")
        if plan.left_alone:
            self.stdout.write(f"not in the file (left alone): {', '.join(plan.left_alone)}")

    def _apply(self, file: str, *, dry_run: bool) -> None:
        try:
            # Refused by its size before it is read: a file too long is never loaded whole.
            too_long = agents_file_size_problem(Path(file).stat().st_size)
            if too_long:
                raise CommandError(f"{file}: {too_long}")
            text = Path(file).read_text(encoding="utf-8")
        except OSError as exc:
            raise CommandError(f"{file}: cannot be read ({exc.strerror})") from exc
        try:
            agents_file = agents_file_parse(text, source=file)
            if dry_run:
                self._show(agents_plan(agents_file, source=file))
                self.stdout.write("dry run: nothing changed")
                return
            applied = agents_apply(
                agents_file=agents_file,
                source=file,
                text=text,
                actor=Actor.system("synthorg_agents apply"),
            )
        except ConfigError as exc:
            raise CommandError(str(exc)) from exc
        except SynthOrgError as exc:
            raise CommandError(f"{file}: nothing applied: {exc.message}") from exc
        self._show(applied.plan)
        self.stdout.write("applied" if not applied.plan.empty else "nothing to apply")
        for name, token in applied.new_tokens.items():
            self.stdout.write(f"token of new agent {name} (shown once):")
            self.stdout.write(token)
