"""The smallest Django application daphne can serve, for bench_floors: what daphne and
Django cost per request before the console adds anything.

``/plain``: a Django async view answering a small JSON body, with no middleware.
``/drf``: the same answer from a Django REST framework view (sync, as DRF runs it
under ASGI: in a thread), with DRF's JSON renderer and no authentication.
Run with ``daphne bench.floors_app:application``; never part of the console.
"""

from __future__ import annotations

import django
from django.conf import settings

settings.configure(
    DEBUG=False,
    SECRET_KEY="bench-floors-only",
    ALLOWED_HOSTS=["*"],
    ROOT_URLCONF=__name__,
    MIDDLEWARE=[],
    INSTALLED_APPS=["rest_framework"],
    DATABASES={},
    USE_TZ=True,
    REST_FRAMEWORK={
        "DEFAULT_AUTHENTICATION_CLASSES": [],
        "DEFAULT_PERMISSION_CLASSES": [],
        "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
        "UNAUTHENTICATED_USER": None,
    },
)
django.setup()

from django.core.asgi import get_asgi_application  # noqa: E402
from django.http import JsonResponse  # noqa: E402
from django.urls import path  # noqa: E402
from rest_framework.response import Response  # noqa: E402
from rest_framework.views import APIView  # noqa: E402

ANSWER = {"id": "00000000-0000-0000-0000-000000000000", "status": "succeeded", "result": "x"}


async def plain(request: object) -> JsonResponse:
    return JsonResponse(ANSWER)


class Drf(APIView):
    def get(self, request: object) -> Response:
        return Response(ANSWER)


urlpatterns = [path("plain", plain), path("drf", Drf.as_view())]
application = get_asgi_application()
