"""The handlers Django calls for refused or failed page requests (see synthorg_site.urls)."""

from __future__ import annotations

import logging

from django.http import HttpRequest, HttpResponse
from django.middleware.csrf import REASON_NO_CSRF_COOKIE
from django.template import loader
from django.utils.http import url_has_allowed_host_and_scheme

logger = logging.getLogger(__name__)

TEMPLATE = "errors/page.html"
BARE_TEMPLATE = "errors/bare_500.html"

TITLES = {
    400: "That request could not be read",
    403: "Not for your role",
    404: "Nothing here",
    405: "Not like that",
    500: "Something broke on our side",
}
DEFAULT_EXPLANATIONS = {
    400: "The console could not understand what the browser sent.",
    403: "Your account is signed in, but this page needs another role.",
    404: "There is no page at this address, or what it named no longer exists.",
    405: "This address does not answer that kind of request.",
    500: "The error has been logged. Try again in a moment; if it keeps happening, "
    "tell an admin the time it happened.",
}


def _reason(exception: Exception | None) -> str:
    # Http404 and PermissionDenied raised by the console carry a sentence meant for people;
    # Django's own resolver exceptions carry a dict (the tried patterns), never shown.
    if exception is None or not exception.args or not isinstance(exception.args[0], str):
        return ""
    return exception.args[0]


def _came_from(request: HttpRequest) -> str:
    """The page the person came from, when it is one of the console's own."""
    referer = request.META.get("HTTP_REFERER", "")
    try:
        host = request.get_host()
    except Exception:  # a Host header the console does not serve: no link back
        return ""
    if referer and url_has_allowed_host_and_scheme(
        referer, allowed_hosts={host}, require_https=request.is_secure()
    ):
        return referer
    return ""


def error_page(
    request: HttpRequest,
    status: int,
    *,
    reason: str = "",
    allowed: str = "",
    title: str = "",
    explanation: str = "",
) -> HttpResponse:
    """The console's page for ``status``, in the layout, with a way back."""
    context = {
        "status": status,
        "title": title or TITLES.get(status, "That did not work"),
        "explanation": explanation or DEFAULT_EXPLANATIONS.get(status, ""),
        "reason": reason,
        "allowed": allowed,
        "path": request.path,
        "came_from": _came_from(request),
    }
    body = loader.render_to_string(TEMPLATE, context, request=request)
    return HttpResponse(body, status=status)


def page_403(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    return error_page(request, 403, reason=_reason(exception))


def page_404(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    return error_page(request, 404, reason=_reason(exception))


def page_400(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    return error_page(request, 400)


def page_500(request: HttpRequest) -> HttpResponse:
    """The layout needs the person (database, session); when that is what failed, a bare page."""
    try:
        return error_page(request, 500)
    except Exception:  # the page must not fail the way the request did
        logger.exception("error page 500 could not be rendered in the layout")
        return HttpResponse(loader.render_to_string(BARE_TEMPLATE), status=500)


CSRF_TITLE = "That form could not be accepted"
CSRF_EXPLANATION = (
    "The console accepts a form only from one of its own pages, opened in your current "
    "session. Nothing was changed."
)


def csrf_failure(request: HttpRequest, reason: str = "") -> HttpResponse:
    """A form sent without a valid CSRF token: usually a page left open across a sign-in.

    Not "Not for your role": the person's role has nothing to do with it.
    """
    if reason == REASON_NO_CSRF_COOKIE:
        said = "Your browser did not send the console's cookie: allow cookies for this site, "
        said += "reload the page and try again."
    else:
        said = "The form was older than your session, or came from another site. "
        said += "Reload the page and try again."
    return error_page(request, 403, reason=said, title=CSRF_TITLE, explanation=CSRF_EXPLANATION)
