"""Django's failure views, in the envelope on /api/ and /mcp/."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse

from common.envelope import is_api_path
from synthorg_site.error_pages.views import csrf_failure as csrf_failure_page
from synthorg_site.http_edge.middleware import envelope_response
from synthorg_site.http_edge.refusals import refusal_audit


def csrf_failure(request: HttpRequest, reason: str = "") -> HttpResponse:
    """A failed CSRF check: the envelope (403, forbidden) on the API, the console's page else."""
    if not is_api_path(request.path):
        return csrf_failure_page(request, reason=reason)
    message = (
        f"CSRF check failed ({reason or 'no reason given'}): a signed-in session must send the "
        "X-CSRFToken header; scripts send the header `Authorization` with the value "
        "`Bearer <your personal token>` instead"
    )
    refusal_audit(request, status=403, code="forbidden", message=message)
    return envelope_response(403, message, {"reason": reason})
