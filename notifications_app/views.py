"""The console as an installable web app, and a person's web push subscription.

The manifest and the service worker are public (a browser fetches them without
credentials); the service worker shows what a push carries and opens its link. The
push page and its subscription endpoint are for operators and admins, each person
managing their own browsers' subscriptions (session and CSRF, as every page form).
"""

from __future__ import annotations

import json

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.template.loader import render_to_string
from django.views.decorators.http import require_GET, require_http_methods

from common.page_access import page_for
from common.roles import Role
from notifications_app.models import PushSubscription
from notifications_app.push import PushSubscriptionRefused, application_server_key
from notifications_app.services import (
    push_endpoint_hosts,
    push_subscription_remove,
    push_subscription_save,
)

MAX_BODY_BYTES = 8 * 1024


@require_GET
def manifest(request: HttpRequest) -> JsonResponse:
    """The web app manifest: the console installs as an app that opens on the inbox."""
    body = {
        "name": "SynthOrg Console",
        "short_name": "SynthOrg",
        "start_url": "/approvals/",
        "scope": "/",
        "display": "standalone",
        "background_color": "#ffffff",
        "theme_color": "#1f2937",
        "icons": [
            {"src": "/static/icons/console.svg", "sizes": "any", "type": "image/svg+xml"},
        ],
    }
    answer = JsonResponse(body, content_type="application/manifest+json")
    answer["Cache-Control"] = "no-cache"
    return answer


@require_GET
def service_worker(request: HttpRequest) -> HttpResponse:
    """The service worker, served at the root so that its scope is the whole console."""
    script = render_to_string("notifications/service-worker.js")
    answer = HttpResponse(script, content_type="application/javascript; charset=utf-8")
    answer["Cache-Control"] = "no-cache"
    answer["Service-Worker-Allowed"] = "/"
    return answer


@require_GET
@page_for(Role.OPERATOR, Role.ADMIN)
def push_page(request: HttpRequest) -> HttpResponse:
    """Turn web push on or off for this browser."""
    enabled = bool(push_endpoint_hosts())
    context = {
        "push_enabled": enabled,
        "public_key": application_server_key() if enabled else "",
        "subscriptions": PushSubscription.objects.filter(person_id=request.user.pk).count(),
    }
    return render(request, "notifications/push.html", context)


def _refusal(message: str, status: int = 400) -> JsonResponse:
    return JsonResponse({"error": {"code": "invalid_argument", "message": message}}, status=status)


@require_http_methods(["POST", "DELETE"])
@page_for(Role.OPERATOR, Role.ADMIN)
def push_subscription(request: HttpRequest) -> JsonResponse:
    """POST the browser's subscription to receive pushes; DELETE ``{endpoint}`` to stop."""
    if len(request.body) > MAX_BODY_BYTES:
        return _refusal("the body is larger than a push subscription", status=413)
    try:
        data = json.loads(request.body or b"null")
    except ValueError:
        return _refusal("the body must be JSON")
    if request.method == "DELETE":
        endpoint = data.get("endpoint") if isinstance(data, dict) else None
        if not isinstance(endpoint, str):
            return _refusal("send {endpoint} of the subscription to remove")
        removed = push_subscription_remove(person=request.user, endpoint=endpoint)
        return JsonResponse({"removed": removed})
    try:
        push_subscription_save(person=request.user, data=data)
    except PushSubscriptionRefused as exc:
        return _refusal(str(exc))
    return JsonResponse({"subscribed": True}, status=201)
