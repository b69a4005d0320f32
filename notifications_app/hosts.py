"""Is a URL on one of a channel's allowed hosts? (Slack's response URLs, push services.)"""

from __future__ import annotations

from urllib.parse import urlsplit


def url_on_hosts(url: str, hosts: tuple[str, ...], *, wildcards: bool = False) -> bool:
    """``url`` is on one of ``hosts`` (``host`` or ``host:port``; with ``wildcards``, also
    ``*.domain``): over https, or over plain http to an entry that names its port (a
    receiver of one's own on a known port). No user or password in it."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return False
    host = (parts.hostname or "").lower()
    if parts.username or parts.password or not host:
        return False
    for entry in hosts:
        name, _, entry_port = entry.partition(":")
        wildcard = wildcards and name.startswith("*.")
        if not (host.endswith(name[1:]) if wildcard else host == name):
            continue
        if entry_port:
            if port == int(entry_port) and parts.scheme in ("https", "http"):
                return True
        elif parts.scheme == "https" and port in (None, 443):
            return True
    return False
