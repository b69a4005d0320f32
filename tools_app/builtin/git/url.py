"""Clone and push URLs: which forms are accepted, and how git is held to the checked addresses.

Accepted: ``https://host/path``, ``ssh://[user@]host[:port]/path`` and scp-like
``[user@]host:path`` (``http://`` only when config sets ``allow_plain_http``).
Refused: ``file://``, ``ext::``/any ``<transport>::`` helper, local paths,
anything starting with '-', credentials in https URLs, odd ssh user names.

Every resolved address must be public unless the host is allowlisted (the SSRF
guard). HTTP(S) clones are pinned with ``-c http.curloptResolve=host:port:ip``
to the checked addresses; SSH clones are given the checked address in place of
the name (``connect_url``), with ``-o HostKeyAlias=host`` so the host key is
still the name's. ``recheck_ssh`` also resolves again just before git runs and
refuses when an address appears that was not checked.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from tools_app.builtin.base import RefusalCode, ToolRefusedError
from tools_app.builtin.web.policy import refusal
from tools_app.net import CheckedEndpoint, EgressError, EgressGuard
from tools_app.net.urls import normalise_host, parse_target

_HELPER_RE: Final = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*::")
_SCHEME_RE: Final = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*://")
# scp-like: no slash before the first colon; the host may be a bracketed IPv6 literal.
_SCP_RE: Final = re.compile(
    r"^(?:(?P<user>[^@/:\[\]]+)@)?(?P<host>\[[^\]/]+\]|[^@/:\[\]]+):(?P<path>.*)$"
)
_SSH_USER_RE: Final = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._\-]{0,63}$")
_ALIAS_RE: Final = re.compile(r"^[A-Za-z0-9.:\-]{1,253}$")


def _address_for_url(address: str) -> str:
    return f"[{address}]" if ":" in address else address


@dataclass(frozen=True, slots=True)
class GitRemote:
    """A checked remote: the URL git is given, its transport and the checked addresses."""

    url: str
    transport: str  # "https", "http" or "ssh"
    endpoint: CheckedEndpoint
    connect_url: str = ""
    """The URL git is given: ``url``, or for SSH the same with the checked address."""

    @property
    def git_url(self) -> str:
        """What git connects to."""
        return self.connect_url or self.url

    def ssh_options(self) -> str:
        """Options for the ssh command: the host key is looked up under the name."""
        if self.transport != "ssh":
            return ""
        if not _ALIAS_RE.match(self.endpoint.host):
            raise _invalid(f"host {self.endpoint.host!r} cannot be used with ssh")
        return f" -o HostKeyAlias={self.endpoint.host}"

    def pin_options(self) -> tuple[str, ...]:
        """``-c`` options that hold an HTTP(S) transfer to the checked addresses."""
        if self.transport == "ssh":
            return ()
        host = f"[{self.endpoint.host}]" if ":" in self.endpoint.host else self.endpoint.host
        addresses = ",".join(f"[{a}]" if ":" in a else a for a in self.endpoint.addresses)
        return ("-c", f"http.curloptResolve={host}:{self.endpoint.port}:{addresses}")


def _invalid(reason: str) -> ToolRefusedError:
    return ToolRefusedError(RefusalCode.INVALID_ARGUMENT, reason)


def check_remote_url(url: str, guard: EgressGuard, *, allow_plain_http: bool = False) -> GitRemote:
    """Parse and check a clone/push URL; refuse with INVALID_ARGUMENT or HOST_NOT_ALLOWED."""
    if not url or url.startswith("-"):
        raise _invalid(
            "the URL must not be empty or start with '-' (it would be read as an option)"
        )
    if _HELPER_RE.match(url):
        raise _invalid(
            f"{url.split('::', 1)[0]}:: remote helpers are not allowed; use an https or ssh URL"
        )
    schemes = frozenset({"https", "ssh"} | ({"http"} if allow_plain_http else set()))
    try:
        if _SCHEME_RE.match(url):
            target = parse_target(url, schemes=schemes)
            if target.userinfo is not None and target.scheme != "ssh":
                raise _invalid(
                    "credentials in the URL are not allowed; the server's credentials come "
                    "from configuration"
                )
            if target.userinfo is not None:
                _check_ssh_user(target.userinfo)
            endpoint = guard.check_host(target.host, target.port, is_ip=target.is_ip)
            if target.scheme != "ssh":
                return GitRemote(target.url(), target.scheme, endpoint)
            user = f"{target.userinfo}@" if target.userinfo is not None else ""
            pinned = f"{_address_for_url(endpoint.pinned_address)}:{target.port}"
            return GitRemote(url, "ssh", endpoint, f"ssh://{user}{pinned}{target.path}")
        scp = _SCP_RE.match(url)
        if scp is None or not scp.group("path") or "/" in scp.group("host"):
            raise _invalid(
                f"{url[:200]!r} is not an https, ssh or scp-like (user@host:path) URL; local "
                "paths and file:// are not allowed"
            )
        if scp.group("user") is not None:
            _check_ssh_user(scp.group("user"))
        host, is_ip = normalise_host(scp.group("host"), url)
        endpoint = guard.check_host(host, 22, is_ip=is_ip)
        user = f"{scp.group('user')}@" if scp.group("user") is not None else ""
        pinned = _address_for_url(endpoint.pinned_address)
        return GitRemote(url, "ssh", endpoint, f"{user}{pinned}:{scp.group('path')}")
    except EgressError as exc:
        raise refusal(exc) from exc


def _check_ssh_user(user: str) -> None:
    if not _SSH_USER_RE.match(user):
        raise _invalid(f"ssh user {user!r} is not allowed (letters, digits, '.', '_', '-')")


def recheck_ssh(remote: GitRemote, guard: EgressGuard) -> None:
    """Resolve an SSH host again; refuse when an address appears that was not checked."""
    if remote.transport != "ssh" or remote.endpoint.host == remote.endpoint.pinned_address:
        return
    try:
        again = guard.check_host(remote.endpoint.host, remote.endpoint.port, is_ip=False)
    except EgressError as exc:
        raise refusal(exc) from exc
    new = set(again.addresses) - set(remote.endpoint.addresses)
    if new:
        raise ToolRefusedError(
            RefusalCode.HOST_NOT_ALLOWED,
            f"{remote.endpoint.host} now resolves to {', '.join(sorted(new))}, which was not "
            "checked (DNS changed between check and clone); try again later",
        )
