"""The edge middleware on its own: a server error's HTML page on /api/ becomes the
envelope (and is audited); pages elsewhere keep theirs."""

from __future__ import annotations

import json

import pytest
from django.http import HttpRequest, HttpResponse, HttpResponseServerError, JsonResponse
from django.test import RequestFactory

from audit_app.models import AuditEvent
from common.platform.logs import RequestIdMiddleware
from synthorg_site.http_edge.middleware import ApiErrorEnvelopeMiddleware

pytestmark = pytest.mark.django_db


def _crashing(request: HttpRequest) -> HttpResponse:
    return HttpResponseServerError("<html><body>Server Error (500)</body></html>")


def _stack(view: object) -> RequestIdMiddleware:
    return RequestIdMiddleware(ApiErrorEnvelopeMiddleware(view))  # type: ignore[arg-type]


def test_a_server_error_on_the_api_is_the_envelope() -> None:
    response = _stack(_crashing)(RequestFactory().get("/api/v1/tools/"))
    assert response.status_code == 500
    assert response["Content-Type"] == "application/json"
    body = json.loads(response.content)
    assert body["error"]["code"] == "internal"
    assert "request" in body["error"]["message"]
    [event] = AuditEvent.objects.filter(request_id=response["X-Request-ID"])
    assert event.kind == "request.refused" and event.outcome == "internal"


def test_a_server_error_on_a_page_keeps_its_page() -> None:
    response = _stack(_crashing)(RequestFactory().get("/agents/"))
    assert response.status_code == 500
    assert b"<html>" in response.content
    assert not AuditEvent.objects.filter(request_id=response["X-Request-ID"]).exists()


def test_a_json_answer_on_the_api_passes_unchanged() -> None:
    def view(request: HttpRequest) -> HttpResponse:
        return JsonResponse(
            {"error": {"code": "conflict", "message": "m", "details": {}}}, status=409
        )

    response = _stack(view)(RequestFactory().get("/api/v1/tools/"))
    assert response.status_code == 409
    assert json.loads(response.content)["error"]["message"] == "m"
