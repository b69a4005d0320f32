"""Console pages of trust_app (the API lives in trust_app/api/ where there is one)."""

from django.urls import path  # noqa: F401 - pages are added here

urlpatterns: list = []
