"""PURE: which ``git`` command lines ``shell_command`` runs, judged argument by argument.

Git's own options can run programs (``-c alias.x='!cmd'``, ``--upload-pack``,
``--exec``, ``grep -O``, ``--config-env``, ``--exec-path``); so can a
repository's config, which is why ``shell_command`` hands every git command to
the same launcher as the git tools (``git_launcher``: checked config, no
hooks, pager, editor, helpers or protocols). Here the command line itself is
judged first, and a refusal names the argument:

- global options: only ``-C DIR`` and harmless switches; ``-c``, ``--git-dir``,
  ``--work-tree``, ``--exec-path``… are refused;
- subcommands: a fixed list of local ones; aliases, network commands
  (fetch, push, clone…), tools that start programs (difftool, bisect run,
  help…) and ones that would write config the launcher does not keep are
  refused;
- options of those subcommands that start programs are refused, also
  abbreviated (git accepts any unambiguous prefix of a long option).
"""

from __future__ import annotations

from typing import Final

from tools_app.builtin.terminal.shell.wrappers import CommandRefusedError

GLOBAL_SWITCHES: Final = frozenset(
    {
        "--no-pager",
        "-P",
        "-p",
        "--paginate",
        "--no-replace-objects",
        "--literal-pathspecs",
        "--glob-pathspecs",
        "--noglob-pathspecs",
        "--icase-pathspecs",
        "--no-optional-locks",
        "--version",
        "-v",
        "-h",
    }
)
ALLOWED_SUBCOMMANDS: Final = frozenset(
    {
        # reading
        "status", "log", "diff", "show", "shortlog", "describe", "blame", "annotate",
        "grep", "ls-files", "ls-tree", "cat-file", "rev-parse", "rev-list", "show-ref",
        "for-each-ref", "merge-base", "name-rev", "diff-tree", "diff-files", "diff-index",
        "whatchanged", "reflog", "count-objects", "check-ignore", "check-attr", "version",
        "show-branch", "range-diff", "verify-commit", "verify-tag", "archive", "fsck",
        "config", "bisect",
        # local writing
        "add", "commit", "branch", "switch", "checkout", "restore", "reset", "rm", "mv",
        "tag", "stash", "init", "merge", "cherry-pick", "revert", "rebase", "apply", "am",
        "format-patch", "clean", "notes", "hash-object",
    }
)  # fmt: skip
# Long options that make git start a program or reach a remote, for any subcommand.
REFUSED_LONG_OPTIONS: Final = (
    "--upload-pack",
    "--receive-pack",
    "--exec",
    "--ext-diff",
    "--open-files-in-pager",
    "--remote",
    "--help",
    "--config-env",
)
# Short options that start a program, per subcommand (also inside clusters: -inO).
REFUSED_SHORT_OPTIONS: Final = {"grep": "O", "rebase": "x"}
CONFIG_READ_OPTIONS: Final = frozenset(
    {"--get", "--get-all", "--get-regexp", "--get-urlmatch", "--list", "-l", "--get-color"}
)
REFUSED_GLOBAL_REASONS: Final = {
    "-c": "sets configuration, and git's configuration can name programs",
    "--config-env": "sets configuration, and git's configuration can name programs",
    "--exec-path": "changes where git finds the programs it runs",
    "--git-dir": "points git at another repository; use cwd or -C",
    "--work-tree": "points git at another work tree; use cwd or -C",
    "--namespace": "is not supported here",
    "--bare": "bare repositories are not supported here",
    "--super-prefix": "is internal to git",
}


def _refuse(argument: str, why: str) -> CommandRefusedError:
    return CommandRefusedError(f"git argument {argument!r} is refused: {why}")


def _long_matches(argument: str, options: tuple[str, ...]) -> str | None:
    """The refused long option ``argument`` spells or abbreviates, if any."""
    name = argument.split("=", 1)[0]
    if len(name) < 3:
        return None
    return next((option for option in options if option.startswith(name)), None)


def _split_global(args: list[str]) -> tuple[str | None, list[str]]:
    """(subcommand, its arguments) after checking git's global options."""
    index = 0
    while index < len(args):
        arg = args[index]
        if arg == "-C":
            if index + 1 >= len(args):
                raise _refuse(arg, "-C needs a directory")
            index += 2
            continue
        if not arg.startswith("-"):
            return arg, args[index + 1 :]
        name = arg.split("=", 1)[0]
        if name in REFUSED_GLOBAL_REASONS or (name.startswith("-c") and not name.startswith("--")):
            key = name if name in REFUSED_GLOBAL_REASONS else "-c"
            raise _refuse(arg, REFUSED_GLOBAL_REASONS[key])
        if name not in GLOBAL_SWITCHES:
            raise _refuse(arg, "it is not a global option git may be given here")
        index += 1
    return None, []


def check_git_arguments(args: list[str]) -> None:
    """Refuse unless ``git args`` is a local command without program-starting options."""
    # No check for "ext::…" words: every command that takes a URL is refused below,
    # and GIT_ALLOW_PROTOCOL is empty (``git grep std::vector`` stays possible).
    subcommand, rest = _split_global(list(args))
    if subcommand is None:
        return
    if subcommand not in ALLOWED_SUBCOMMANDS:
        raise _refuse(
            subcommand,
            "not a git command allowed in shell_command (aliases, network commands and "
            "commands that start other programs are refused; git_clone, git_push and the "
            "other git tools cover the rest)",
        )
    short_refused = REFUSED_SHORT_OPTIONS.get(subcommand, "")
    for arg in rest:
        if arg == "--":
            break
        if arg.startswith("--"):
            refused = _long_matches(arg, REFUSED_LONG_OPTIONS)
            if refused is not None:
                raise _refuse(arg, f"{refused} makes git start a program or reach a remote")
        elif arg.startswith("-") and short_refused and short_refused in arg[1:]:
            raise _refuse(arg, f"-{short_refused} makes git {subcommand} start a program")
    if subcommand == "config" and not CONFIG_READ_OPTIONS & {a.split("=", 1)[0] for a in rest}:
        raise _refuse(
            "config",
            "git config may only read here (--get, --list…); the launcher does not keep "
            "settings written to the repository's config",
        )
    if subcommand == "bisect" and "run" in rest:
        raise _refuse("run", "git bisect run starts a program")
