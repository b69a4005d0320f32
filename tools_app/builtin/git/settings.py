"""The git tools' own settings, checked when the config loads.

The tools still read them per call (``tools_app.builtin.git.command`` and ``.remote``);
this model refuses a bad value at load, with the field and what is allowed.
"""

from __future__ import annotations

from pydantic import Field, StrictBool, StrictStr

from tools_app.builtin.web.settings import NetSettings, StringList

# Empty means /dev/null, as the tools read it.
KNOWN_HOSTS_PATTERN = r"^(/[A-Za-z0-9._/\-]+)?$"


class GitToolSettings(NetSettings):
    """``tools.<git tool>`` (git_status … git_push) beyond the common switches."""

    hostname_allowlist: StringList = None
    denied_hosts: StringList = None
    allow_plain_http: StrictBool = False
    ssh_known_hosts_file: StrictStr | None = Field(default=None, pattern=KNOWN_HOSTS_PATTERN)
    author_name: StrictStr | None = None
    author_email: StrictStr | None = None
