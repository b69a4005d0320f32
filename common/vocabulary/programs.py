"""Which program names are one tool, so a rule on one name covers them all (plain
standard library: the shell checks of the terminal tools and the policy share it).

``program_family("python3.11") == "python"``, ``program_family("/bin/rm") == "rm"``,
``program_family("nc.openbsd") == "nc"``. Names with a version (``perl5.36``,
``php8.2``, ``pip3.11``) or a Debian alternative suffix (``vim.basic``) fold
to their family when the base name is known; any other name is its own family.
"""

from __future__ import annotations

import posixpath
import re
from types import MappingProxyType
from typing import Final

_FAMILIES: Final[dict[str, tuple[str, ...]]] = {
    "python": ("python", "python2", "python3", "pypy", "pypy3", "ipython", "ipython3", "bpython"),
    "sh": (
        "sh",
        "bash",
        "rbash",
        "dash",
        "zsh",
        "ksh",
        "ksh93",
        "mksh",
        "pdksh",
        "ash",
        "yash",
        "posh",
        "csh",
        "tcsh",
        "fish",
    ),
    "vim": ("vi", "vim", "nvim", "view", "vimdiff", "rvim", "rview", "ex", "gvim", "evim"),
    "nc": ("nc", "ncat", "netcat", "pnetcat"),
    "perl": ("perl",),
    "ruby": ("ruby", "irb"),
    "node": ("node", "nodejs"),
    "php": ("php",),
    "lua": ("lua", "luajit"),
    "awk": ("awk", "gawk", "mawk", "nawk", "original-awk", "busybox-awk"),
    "pip": ("pip", "pip2", "pip3"),
    "emacs": ("emacs", "emacs-nox", "emacs-gtk", "emacsclient"),
    "nano": ("nano", "rnano", "pico"),
    "grep": ("grep", "egrep", "fgrep", "rgrep"),
    "sudo": ("sudo", "sudoedit", "doas", "su", "pkexec", "run0"),
    "wget": ("wget", "wget2"),
    "ssh": ("ssh", "slogin", "dbclient"),
    "scp": ("scp", "sftp"),
    "telnet": ("telnet", "telnet.netkit"),
    "docker": ("docker", "podman", "nerdctl"),
}

FAMILY_OF: Final = MappingProxyType(
    {alias: family for family, aliases in _FAMILIES.items() for alias in aliases}
)
_VERSIONED: Final = re.compile(r"^([a-z][a-z+_-]*?)[-_]?\d+(?:\.\d+)*[a-z]?(?:-dbg)?$")

# Programs whose behaviour depends on the name they are called by (argv[0]).
MULTI_CALL: Final = frozenset({"busybox", "toybox"})


def program_family(name: str) -> str:
    """The canonical family of a program name or path (lower case)."""
    base = posixpath.basename(name.rstrip("/")).lower()
    if base in FAMILY_OF:
        return FAMILY_OF[base]
    stem = base.split(".", 1)[0]
    if "." in base and stem in FAMILY_OF:
        return FAMILY_OF[stem]
    match = _VERSIONED.match(base)
    if match and match.group(1) in FAMILY_OF:
        return FAMILY_OF[match.group(1)]
    return base


def family_set(names: object) -> frozenset[str]:
    """Families of a configured list of names or paths; non-strings are ignored."""
    if isinstance(names, str):
        names = [names]
    if not isinstance(names, list | tuple | set | frozenset):
        return frozenset()
    return frozenset(program_family(n) for n in names if isinstance(n, str) and n.strip())


# Program families code_runner runs code with, and the ``language`` it takes for each
# (tools_app.builtin.code.tools.LANGUAGES, checked against this by the tests): a refusal
# of one of them points there.
CODE_RUNNER_LANGUAGES: Final = MappingProxyType({"python": "python", "sh": "shell"})


def code_runner_hint(program: str) -> str | None:
    """For an interpreter code_runner offers, the sentence pointing there; else None."""
    language = CODE_RUNNER_LANGUAGES.get(program_family(program))
    if language is None:
        return None
    return (
        f'To run {language} code, use the code_runner tool (language "{language}"), which '
        "runs it in an isolated sandbox without network"
    )
