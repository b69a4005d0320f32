"""The OpenAPI schema and its docs page, loaded on first request, answer as before."""

from __future__ import annotations

import pytest
from django.test import Client

pytestmark = pytest.mark.django_db


def test_the_schema_lists_the_agent_api() -> None:
    response = Client().get("/api/schema/", HTTP_ACCEPT="application/json")
    assert response.status_code == 200
    paths = response.json()["paths"]
    assert "/api/v1/invocations/" in paths and "/api/v1/tools/" in paths


def test_the_docs_page_points_at_the_schema() -> None:
    """Through its start-up script, a file of its own: the page has no inline script."""
    response = Client().get("/api/docs/")
    assert response.status_code == 200
    assert b"<script>" not in response.content and b"<style>" not in response.content
    assert b'src="/api/docs/?script="' in response.content
    script = Client().get("/api/docs/?script=")
    assert script.status_code == 200
    assert script["Content-Type"].startswith("application/javascript")
    assert b"/api/schema/" in script.content
