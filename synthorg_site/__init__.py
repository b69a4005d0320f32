"""SynthOrg Console site package: settings, URLs, ASGI, Celery and the launcher."""

from synthorg_site.celery import app as celery_app

__all__ = ["celery_app"]
