"""daphne: a request body is never stored past the size limit while it arrives.

Twisted (under daphne) reads a whole request body, chunked or not, into memory
or a temporary file before daphne hands it to the application, with no limit of
its own. The guard keeps at most ``SYNTHORG_MAX_REQUEST_BYTES`` + 1 bytes of any
body and drops the rest as it arrives, so a huge or endless upload costs no
memory or disk; the application then sees an over-limit body and answers 413
(synthorg_site.http_edge.body).

Twisted also parses form bodies (urlencoded, multipart) for a ``request.args``
daphne never reads, and answers a multipart body it cannot parse with a bare
400 and no log line before the application sees it; that parsing is turned off,
so the application judges every body and answers in its own words.

A request too malformed to reach the application at all (a header value holding a
line break, say) is answered in the error envelope all the same
(synthorg_site.http_edge.malformed).
"""

from __future__ import annotations

from typing import Any

import structlog
from django.conf import settings

from synthorg_site.http_edge.malformed import install_channel_answers, install_request_answers

log = structlog.get_logger(__name__)

_INSTALLED: dict[str, bool] = {"done": False}


def install() -> None:
    """Wrap daphne's request body handling (once per process; a no-op without daphne)."""
    if _INSTALLED["done"]:
        return
    try:
        from daphne.http_protocol import WebRequest
        from twisted.web.http import HTTPChannel
    except ImportError:
        return
    keep = int(settings.SYNTHORG_MAX_REQUEST_BYTES) + 1
    store = WebRequest.handleContentChunk

    def handle_content_chunk(self: Any, data: bytes) -> None:
        kept = getattr(self, "_synthorg_kept", 0)
        room = keep - kept
        if room <= 0:
            return
        piece = data[:room]
        self._synthorg_kept = kept + len(piece)
        store(self, piece)

    got_length = WebRequest.gotLength

    def got_length_without_form_parsing(self: Any, length: int | None) -> None:
        # Called once per request, before its body and before requestReceived.
        self._parsePOSTFormSubmission = False
        got_length(self, length)

    WebRequest.handleContentChunk = handle_content_chunk
    WebRequest.gotLength = got_length_without_form_parsing
    for installed, what in (
        (install_channel_answers(HTTPChannel), "twisted's bad request answer"),
        (install_request_answers(WebRequest), "daphne's error pages"),
    ):
        if not installed:
            log.warning("malformed_request.answer_not_replaced", what=what)
    _INSTALLED["done"] = True
