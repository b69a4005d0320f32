"""PURE: options by which an everyday program would start another one, refused by name.

A program on the allow list must not become a way to run one that is not:
``tar --to-command``, ``sed 's/x/id/e'``, ``awk 'BEGIN{system("id")}'``,
``rsync -e``, ``ssh -o ProxyCommand``, ``man -P``, ``less +!cmd``, ``zip -TT``,
``sort --compress-program``, ``split --filter``, ``rg --pre``, ``fd -x``…
Each family's refused options are listed here; long options are also matched
when abbreviated (GNU tools accept any unambiguous prefix), short ones inside
clusters (``-xzI``) and in tar's old dash-less form (``tar xIf``). What cannot
be judged (an awk program file, an editor reading commands) is refused too.
``sed`` and ``git`` are handled by rewriting rather than refusing (see
``terminal_harden``: ``sed --sandbox``, git through the launcher); under a
wrapper, where no rewrite reaches, ``sed`` needs ``--sandbox`` and ``git`` is
refused.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from tools_app.builtin.terminal.shell.git import check_git_arguments
from tools_app.builtin.terminal.shell.wrappers import CommandRefusedError


@dataclass(frozen=True, slots=True)
class RunnerOptions:
    """The options of one family that start programs."""

    long: tuple[str, ...] = ()
    short: str = ""  # letters, refused alone or inside a cluster
    dashless_first: bool = False  # tar's "xzf" first word is a cluster too


RUNNERS: Final = {
    "tar": RunnerOptions(
        long=(
            "--to-command",
            "--use-compress-program",
            "--checkpoint-action",
            "--info-script",
            "--new-volume-script",
            "--rsh-command",
            "--rmt-command",
        ),
        short="IF",
        dashless_first=True,
    ),
    "rsync": RunnerOptions(long=("--rsh", "--rsync-path", "--daemon", "--config"), short="e"),
    # ssh's -o is judged by its key (_check_ssh); scp and sftp refuse -o outright.
    "ssh": RunnerOptions(short="FJI"),
    "scp": RunnerOptions(short="SFJDob"),
    "man": RunnerOptions(long=("--pager", "--html", "--browser", "--preprocessor"), short="PHp"),
    "less": RunnerOptions(long=("--lesskey-file", "--lesskey-src"), short="k"),
    "more": RunnerOptions(),
    "zip": RunnerOptions(long=("--unzip-command", "--test"), short="T"),
    "sort": RunnerOptions(long=("--compress-program",)),
    "split": RunnerOptions(long=("--filter",)),
    "sdiff": RunnerOptions(long=("--diff-program",)),
    "diff3": RunnerOptions(long=("--diff-program",)),
    "cpio": RunnerOptions(long=("--rsh-command",)),
    "wget": RunnerOptions(long=("--use-askpass",)),
    "rg": RunnerOptions(long=("--pre",)),
    "fd": RunnerOptions(long=("--exec", "--exec-batch"), short="xX"),
    "fdfind": RunnerOptions(long=("--exec", "--exec-batch"), short="xX"),
}
# Programs that read commands able to start a shell; nothing here can judge them.
EDITORS: Final = frozenset({"vim", "emacs", "nano", "ed", "ex", "joe", "mcedit", "mg", "jed"})
_SED_SANDBOX: Final = "--sandbox"
_AWK_REFUSED_TEXT: Final = ("system", "|", "getline", "@load")
_AWK_REFUSED_OPTIONS: Final = ("-f", "--file", "-E", "--exec", "-l", "--load", "--include", "-i")


def _long_match(name: str, options: tuple[str, ...]) -> str | None:
    if len(name) < 3:
        return None
    return next((option for option in options if option.startswith(name)), None)


def _refuse(program: str, argument: str, why: str) -> CommandRefusedError:
    return CommandRefusedError(f"{program} argument {argument!r} is refused: {why}")


def _check_options(family: str, args: list[str], options: RunnerOptions) -> None:
    for position, arg in enumerate(args):
        if arg == "--":
            return
        if arg.startswith("--"):
            refused = _long_match(arg.split("=", 1)[0], options.long)
            if refused is not None:
                raise _refuse(family, arg, f"{refused} starts another program")
            continue
        cluster = ""
        if arg.startswith("-") and arg != "-":
            cluster = arg[1:]
        elif options.dashless_first and position == 0:
            cluster = arg
        if family == "ssh" and arg.startswith("-o"):
            continue  # judged by _check_ssh_options
        hit = next((letter for letter in cluster if letter in options.short), None)
        if hit is not None:
            raise _refuse(family, arg, f"-{hit} can start another program or read its options")
        if family in ("less", "more") and arg.startswith("+"):
            raise _refuse(family, arg, "initial commands can start a shell")


def _check_awk(args: list[str]) -> None:
    for arg in args:
        if arg.split("=", 1)[0] in _AWK_REFUSED_OPTIONS or any(
            arg.startswith(short) and len(arg) > 2 for short in ("-f", "-E", "-l", "-i")
        ):
            raise _refuse(
                "awk", arg, "a program file or extension cannot be judged; pass the program inline"
            )
    for arg in args:
        for text in _AWK_REFUSED_TEXT:
            if text in arg:
                raise _refuse(
                    "awk",
                    arg,
                    f"{text!r} can start a program (system(), pipes and getline from commands "
                    "are refused; a '|' in a regular expression is refused too, use grep -E)",
                )


def check_runner(family: str, args: list[str], *, top_level: bool) -> None:
    """Refuse ``family args`` when it would start another program.

    ``top_level`` is true when the command is one the terminal rewrites
    (``sed`` gets ``--sandbox``, ``git`` the launcher); under a wrapper it is not.
    """
    if family in EDITORS:
        raise CommandRefusedError(
            f"{family} reads commands that can start a shell; use the edit_file tool"
        )
    if family == "git":
        if not top_level:
            raise CommandRefusedError(
                "git runs only as a command of its own (not through env, xargs, find -exec or "
                "sh -c), where the console gives it its checked configuration"
            )
        check_git_arguments(args)
        return
    if family == "sed":
        if not top_level and _SED_SANDBOX not in args:
            raise CommandRefusedError(
                "sed under a wrapper must be given --sandbox (its e command and s///e flag "
                "run programs)"
            )
        return
    if family == "awk":
        _check_awk(args)
        return
    options = RUNNERS.get(family)
    if options is not None:
        _check_options(family, args, options)
    if family == "ssh":
        _check_ssh(args)


_SSH_REFUSED_KEYS: Final = frozenset(
    {
        "proxycommand",
        "localcommand",
        "permitlocalcommand",
        "knownhostscommand",
        "proxyjump",
        "include",
        "match",
        "pkcs11provider",
        "securitykeyprovider",
        "remotecommand",
    }
)


def _check_ssh(args: list[str]) -> None:
    """ssh is refused its -o options that start programs (``-o`` itself is in ``short``)."""
    for index, arg in enumerate(args):
        if not arg.startswith("-o"):
            continue
        value = arg[2:] or (args[index + 1] if index + 1 < len(args) else "")
        key = value.replace("=", " ").split(" ", 1)[0].lower()
        if key in _SSH_REFUSED_KEYS:
            raise _refuse("ssh", arg, f"{key} starts another program")
