"""How ``shell_command`` runs the checked commands that are rewritten rather than refused.

After every command has passed the lists (``shell_policy``), two kinds are
changed before the sandbox starts them:

- ``git ARGS`` becomes the git launcher (``git_launcher``) with ``ARGS``: the
  repository's config is checked and a private copy used, hooks, pagers,
  editors, helpers and every transport are off, as for the git tools;
- ``sed ARGS`` becomes ``sed --sandbox ARGS``: no ``e`` command, no ``s///e``,
  no ``r``/``w`` files.

Only commands the shell itself starts can be rewritten; under a wrapper
(``xargs``, ``find -exec``, ``sh -c``) ``shell_runners`` refuses git and
requires ``--sandbox`` for sed.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Final

from tools_app.builtin.git.command import shell_launcher_argv
from tools_app.builtin.terminal.shell.families import MULTI_CALL, program_family
from tools_app.builtin.terminal.shell.lex import Word
from tools_app.builtin.terminal.shell.parse import CommandList, Compound, Pipeline, SimpleCommand
from tools_app.builtin.terminal.shell.policy import ProgramRules, resolve_program

SED_SANDBOX: Final = "--sandbox"


@dataclasses.dataclass(frozen=True, slots=True)
class Hardening:
    """What the rewrite needs to know about the call."""

    rules: ProgramRules
    cwd_host: str
    ceiling_depth: int
    writable: bool
    identity: tuple[str, str]


def _family(word: str, hardening: Hardening) -> str:
    program = resolve_program(word, hardening.rules, hardening.cwd_host)
    family = program_family(word)
    if program.real_path and program_family(program.real_path) not in MULTI_CALL:
        family = program_family(program.real_path)
    return family


def harden_argv(argv: Sequence[str], hardening: Hardening) -> tuple[str, ...]:
    """``argv`` as the sandbox should run it."""
    family = _family(argv[0], hardening)
    if family == "git":
        launcher = shell_launcher_argv(
            ceiling_depth=hardening.ceiling_depth,
            writable=hardening.writable,
            identity=hardening.identity,
        )
        return (*launcher, *argv[1:])
    if family == "sed" and SED_SANDBOX not in argv[1:]:
        return (argv[0], SED_SANDBOX, *argv[1:])
    return tuple(argv)


def _quoted(text: str) -> Word:
    return Word(text, tuple(False for _ in text))


def _harden_command(command: SimpleCommand, hardening: Hardening) -> SimpleCommand:
    argv = command.argv
    hardened = harden_argv(argv, hardening)
    if hardened == argv:
        return command
    # The words git and sed were given keep their quoting (and active globs).
    added = len(hardened) - len(argv) + 1
    words = (*(_quoted(t) for t in hardened[:added]), *command.words[1:])
    return dataclasses.replace(command, words=words)


def harden_command_list(node: CommandList, hardening: Hardening) -> CommandList:
    """``node`` with every git and sed command rewritten, however deeply nested."""
    items = []
    for pipeline in node.items:
        commands: list[SimpleCommand | Compound] = []
        for command in pipeline.commands:
            if isinstance(command, Compound):
                body = harden_command_list(command.body, hardening)
                commands.append(dataclasses.replace(command, body=body))
            else:
                commands.append(_harden_command(command, hardening))
        items.append(Pipeline(tuple(commands), pipeline.negated))
    return dataclasses.replace(node, items=tuple(items))
