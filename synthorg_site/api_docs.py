"""The OpenAPI schema and its docs page, loaded on their first request.

Schema generation pulls in machinery no other request needs; a web process
that is never asked for the schema never holds it.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from django.http import HttpRequest, HttpResponseBase


@cache
def _schema_view() -> Any:
    from drf_spectacular.views import SpectacularAPIView

    return SpectacularAPIView.as_view()


@cache
def _docs_view() -> Any:
    # The split view sends its start-up script as a file of its own (?script): the page's
    # policy runs no inline script.
    from drf_spectacular.views import SpectacularSwaggerSplitView

    return SpectacularSwaggerSplitView.as_view(url_name="api-schema")


def schema(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
    """GET /api/schema/: the OpenAPI schema."""
    response: HttpResponseBase = _schema_view()(request, *args, **kwargs)
    return response


def docs(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
    """GET /api/docs/: the schema's docs page."""
    response: HttpResponseBase = _docs_view()(request, *args, **kwargs)
    return response
