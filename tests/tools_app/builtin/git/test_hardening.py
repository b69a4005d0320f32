"""The repository-config allowlist admits no key that runs a program or sends git elsewhere."""

from __future__ import annotations

import pytest

from tools_app.builtin.git.hardening import ALLOWED_LOCAL_KEYS, HARDENING_ENV, HARDENING_OPTIONS
from tools_app.builtin.git.inside.launcher import rule_matches

# One concrete key for each family git-config(1) documents as running a program or
# pointing git at other files or hosts (see PROGRAM_KEY_FAMILIES).
PROGRAM_KEYS = (
    "core.fsmonitor", "core.sshCommand", "core.pager", "core.editor", "core.askPass",
    "core.hooksPath", "core.gitProxy", "core.alternateRefsCommand", "core.worktree",
    "core.attributesFile", "core.excludesFile", "diff.external", "diff.x.command",
    "diff.x.textconv", "diff.tool", "difftool.x.cmd", "difftool.x.path", "merge.tool",
    "mergetool.x.cmd", "merge.x.driver", "filter.x.clean", "filter.x.smudge",
    "filter.x.process", "alias.x", "include.path", "includeIf.gitdir:/.path",
    "credential.helper", "credential.https://h.helper", "gpg.program", "gpg.ssh.program",
    "gpg.ssh.defaultKeyCommand", "gpg.x509.program", "remote.origin.uploadpack",
    "remote.origin.receivepack", "remote.origin.vcs", "remote.origin.proxy",
    "url.file:///.insteadOf", "url.file:///.pushInsteadOf", "http.proxy", "http.https://h.proxy",
    "http.curloptResolve", "http.followRedirects", "http.sslCAInfo", "http.cookieFile",
    "protocol.allow", "protocol.ext.allow", "submodule.x.update", "interactive.diffFilter",
    "imap.tunnel", "sendemail.sendmailCmd", "tar.tgz.command", "web.browser", "browser.x.cmd",
    "man.x.cmd", "help.browser", "init.templateDir", "uploadpack.packObjectsHook",
    "sequence.editor", "pager.log", "extensions.partialClone", "extensions.worktreeConfig",
    "trace2.normalTarget", "safe.directory", "core.sharedRepository", "blame.ignoreRevsFile",
    "commit.template", "mailmap.file", "commit.gpgSign", "log.showSignature",
)  # fmt: skip
HARMLESS_KEYS = (
    "core.repositoryformatversion", "core.filemode", "core.bare", "remote.origin.url",
    "remote.My-Remote.fetch", "branch.main.remote", "branch.feature/x.merge", "user.name",
    "extensions.objectformat",
)  # fmt: skip


def allowed(key: str) -> bool:
    return any(rule_matches(rule, key) for rule in ALLOWED_LOCAL_KEYS)


@pytest.mark.parametrize("key", PROGRAM_KEYS)
def test_no_program_key_is_allowed(key: str) -> None:
    assert not allowed(key)


@pytest.mark.parametrize("key", HARMLESS_KEYS)
def test_the_keys_repositories_need_are_allowed(key: str) -> None:
    assert allowed(key)


def test_rules_need_the_subsection_they_name() -> None:
    assert not allowed("remote.url")  # no subsection: not a remote's url
    assert not allowed("user.x.name")  # a subsection where none belongs
    assert rule_matches("remote.**", "remote.https://h/r.git.pushurl")


def test_every_program_setting_is_also_forced_on_the_command_line() -> None:
    options = dict(
        HARDENING_OPTIONS[i + 1].split("=", 1) for i in range(0, len(HARDENING_OPTIONS), 2)
    )
    assert options["core.hooksPath"] == "/dev/null"
    assert options["credential.helper"] == ""
    assert options["http.followRedirects"] == "false"
    assert options["protocol.allow"] == "never"
    assert HARDENING_ENV["GIT_ALLOW_PROTOCOL"] == ""
    assert HARDENING_ENV["GIT_CONFIG_NOSYSTEM"] == "1"
