"""GET /metrics: to a token with the ``metrics`` scope, or to a request straight from loopback."""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse

from synthorg_site.http_edge.client_address import request_is_local
from synthorg_site.http_edge.refusals import refusal_audit
from synthorg_site.metrics.access import ScrapeRefusal, scrape_refusal
from synthorg_site.metrics.exposition import CONTENT_TYPE, scrape


def _refuse(request: HttpRequest, refusal: ScrapeRefusal, **headers: str) -> JsonResponse:
    refusal_audit(request, status=refusal.status, code=refusal.code, message=refusal.message)
    response = JsonResponse(
        {"error": {"code": refusal.code, "message": refusal.message, "details": {}}},
        status=refusal.status,
    )
    for name, value in headers.items():
        response[name] = value
    return response


def metrics(request: HttpRequest) -> HttpResponse:
    if request.method not in ("GET", "HEAD"):
        wrong_method = ScrapeRefusal(
            405, "method_not_allowed", f"{request.method} is not allowed on /metrics; use GET"
        )
        return _refuse(request, wrong_method, Allow="GET, HEAD")
    # The peer itself, never an address a header names: a proxy on this host is loopback
    # to the console, and a client can write 127.0.0.1 into X-Forwarded-For.
    loopback = settings.SYNTHORG_METRICS_ALLOW_LOOPBACK and request_is_local(request)
    refusal = scrape_refusal(request, loopback=loopback)
    if refusal is not None:
        return _refuse(request, refusal, **refusal.headers)
    return HttpResponse(scrape(), content_type=CONTENT_TYPE)
