"""The web tools' own settings (and the DNS settings the git tools share), checked at load.

The tools still read them per call (``tools_app.builtin.web.tools`` and ``.policy``);
these models refuse a bad value at load, with the field and what is allowed. Numbers
are any positive number, as the tools read them.
"""

from __future__ import annotations

from typing import Any, Final

from pydantic import Field, StrictFloat, StrictInt, StrictStr

from common.strict import StrictModel

DEFAULT_MAX_RESPONSE_BYTES: Final = 1024 * 1024
# At most 5 redirects are followed whatever the setting says (tools_app.net.fetch).
DEFAULT_MAX_REDIRECTS: Final = 5
DEFAULT_MAX_LINKS: Final = 200
DEFAULT_MAX_TEXT_CHARS: Final = 100_000

StringList = tuple[StrictStr, ...] | None


class NetSettings(StrictModel):
    """``dns_server`` (an IP; none: the system resolver) and ``dns_port`` (53)."""

    dns_server: StrictStr | None = None
    dns_port: StrictInt = Field(default=53, ge=1, le=65535)


class WebToolSettings(NetSettings):
    """``tools.<web tool>`` (http_request, html_to_text, extract_links) beyond the common
    switches."""

    allowed_domains: StringList = None
    denied_domains: StringList = None
    max_response_bytes: StrictFloat = Field(default=DEFAULT_MAX_RESPONSE_BYTES, gt=0)
    max_redirects: StrictFloat = Field(default=DEFAULT_MAX_REDIRECTS, gt=0)
    auth_headers: dict[StrictStr, dict[StrictStr, Any]] | None = None
    max_links: StrictFloat = Field(default=DEFAULT_MAX_LINKS, gt=0)
    max_text_chars: StrictFloat = Field(default=DEFAULT_MAX_TEXT_CHARS, gt=0)
