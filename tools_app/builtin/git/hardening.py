"""PURE: the git configuration the console runs git with, and why each piece is there.

Git is never allowed to read a repository's own ``.git/config``: the launcher
(``git_launcher``, run inside the sandbox) reads the file once, has git parse
those bytes, refuses a key outside ``ALLOWED_LOCAL_KEYS``, and runs git with
``GIT_COMMON_DIR`` pointing at a private directory whose ``config`` it wrote
itself (objects, refs and logs are links back to the repository). The checked
bytes are the bytes used: rewriting ``.git/config`` while git runs changes
nothing, and a driver named by ``.gitattributes`` (``filter=x``) finds no
definition. On top of that, the values below are set from the environment
and the command line, which git reads after any file, so system or global
config (both switched off as well) could not change them either.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

# Every config key git-config(1) documents as running a program, or pointing git
# at other files or hosts (git 2.39), and what holds it here. None of them can
# come from the repository (only ``ALLOWED_LOCAL_KEYS`` pass); the ones marked
# "set" are also given a harmless value on every command line.
PROGRAM_KEY_FAMILIES: Final[tuple[tuple[str, str], ...]] = (
    ("core.fsmonitor", "set false"),
    ("core.sshCommand / GIT_SSH_COMMAND", "set: batch-mode ssh, no config, no proxy"),
    ("core.pager / pager.<cmd> / GIT_PAGER", "set cat; stdout is never a terminal anyway"),
    ("core.editor / GIT_EDITOR / sequence.editor", "set /bin/false"),
    ("core.askPass / GIT_ASKPASS / SSH_ASKPASS", "set /bin/false"),
    ("core.hooksPath (hooks)", "set /dev/null"),
    ("core.gitProxy", "git:// is not an allowed protocol"),
    ("core.alternateRefsCommand", "server side only; alternates are refused"),
    ("core.worktree", "the work tree is given explicitly"),
    ("core.attributesFile / core.excludesFile", "repository keys refused; global config off"),
    ("diff.external / diff.<driver>.command / diff.<driver>.textconv", "not definable"),
    ("difftool.* / mergetool.* / diff.tool / merge.tool", "not definable"),
    ("merge.<driver>.driver", "not definable"),
    ("filter.<driver>.clean / smudge / process", "not definable"),
    ("alias.<name> (!command)", "not definable; builtins win over aliases"),
    ("include.path / includeIf.<cond>.path", "not definable; read with --no-includes"),
    ("credential.helper / credential.<url>.helper", "set empty (resets the list)"),
    ("gpg.program / gpg.<format>.program / gpg.ssh.defaultKeyCommand", "set /bin/false"),
    ("commit.gpgSign / tag.gpgSign / push.gpgSign / log.showSignature", "set false"),
    ("remote.<name>.uploadpack / receivepack / vcs / proxy", "not definable"),
    ("url.<base>.insteadOf / pushInsteadOf", "not definable"),
    ("http.* (proxy, curloptResolve, followRedirects, ssl files)", "not definable; set below"),
    ("protocol.allow / protocol.<name>.allow", "GIT_ALLOW_PROTOCOL overrides all config"),
    ("submodule.<name>.update (!command) / submodule.recurse", "recursion set off"),
    ("interactive.diffFilter / imap.tunnel / sendemail.* / tar.<format>.command", "not definable"),
    ("web.browser / browser.<tool>.cmd / man.<tool>.cmd / help.browser", "not definable"),
    ("init.templateDir", "not definable; clones use --template="),
    ("uploadpack.packObjectsHook / trace2.*", "read from system and global config only: off"),
    ("extensions.* other than objectFormat (partialClone fetches)", "not definable"),
)

# Keys a repository's own config may hold: ``section.name``, ``section.*.name``
# (any subsection); anything else is refused before git runs.
ALLOWED_LOCAL_KEYS: Final[tuple[str, ...]] = (
    *(
        f"core.{name}"
        for name in (
            "repositoryformatversion", "filemode", "bare", "logallrefupdates", "ignorecase",
            "precomposeunicode", "symlinks", "autocrlf", "eol", "safecrlf", "quotepath", "abbrev",
        )
    ),
    "extensions.objectformat",
    *(f"remote.*.{name}" for name in ("url", "pushurl", "fetch", "tagopt", "prune")),
    *(f"branch.*.{name}" for name in ("remote", "merge", "rebase", "pushremote")),
    "user.name",
    "user.email",
    "init.defaultbranch",
    "pull.rebase",
    "pull.ff",
    "push.default",
    "fetch.prune",
    "gc.auto",
    "index.version",
    "i18n.commitencoding",
    "i18n.logoutputencoding",
)  # fmt: skip

_FALSE: Final = "/bin/false"
HARDENING_ENV: Final[Mapping[str, str]] = MappingProxyType(
    {
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": "/dev/null",
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_ASKPASS": _FALSE,
        "SSH_ASKPASS": _FALSE,
        "GIT_EDITOR": _FALSE,
        "GIT_SEQUENCE_EDITOR": _FALSE,
        "GIT_PAGER": "cat",
        "GIT_PROTOCOL_FROM_USER": "0",
        "GIT_NO_REPLACE_OBJECTS": "1",
        "GIT_OPTIONAL_LOCKS": "0",
        "GIT_SSH_COMMAND": _FALSE,
        "GIT_ALLOW_PROTOCOL": "",
    }
)
SSH_COMMAND: Final = (
    "ssh -F /dev/null -o BatchMode=yes -o StrictHostKeyChecking=yes "
    "-o ProxyCommand=none -o ControlMaster=no -o PermitLocalCommand=no"
)
HARDENING_OPTIONS: Final[tuple[str, ...]] = tuple(
    word
    for setting in (
        "protocol.allow=never",
        "core.hooksPath=/dev/null",
        "core.fsmonitor=false",
        "core.pager=cat",
        f"core.editor={_FALSE}",
        f"core.askPass={_FALSE}",
        f"sequence.editor={_FALSE}",
        "credential.helper=",
        "commit.gpgSign=false",
        "tag.gpgSign=false",
        "push.gpgSign=false",
        "log.showSignature=false",
        f"gpg.program={_FALSE}",
        f"gpg.openpgp.program={_FALSE}",
        f"gpg.x509.program={_FALSE}",
        f"gpg.ssh.program={_FALSE}",
        "submodule.recurse=false",
        "fetch.recurseSubmodules=false",
        "push.recurseSubmodules=no",
        "gc.auto=0",
        "maintenance.auto=false",
        # Redirects would leave the checked, pinned host (git's default follows them).
        "http.followRedirects=false",
        "safe.bareRepository=explicit",
        # The console chose the repository; its owner is the workspace's, not the sandbox user.
        "safe.directory=*",
    )
    for word in ("-c", setting)
)


def protocols(*, network: bool, allow_plain_http: bool) -> str:
    """``GIT_ALLOW_PROTOCOL``: none without network; https and ssh (and http if set) with it."""
    if not network:
        return ""
    return "https:ssh" + (":http" if allow_plain_http else "")
