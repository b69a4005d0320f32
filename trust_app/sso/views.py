"""Sign in and out through the organisation's provider.

``/accounts/sso/`` sends the person to the provider (state, nonce, PKCE); the provider
sends them back to ``/accounts/sso/callback/``, where the code is exchanged and the ID
token checked before anyone is signed in. Every refusal is a ``signin.failed`` event
(within the per-client budget of refused requests) and the sign-in page with the reason.
Sign-out ends the console's session, then the provider's (RP-initiated logout) when it
offers one.
"""

from __future__ import annotations

from typing import Any

import structlog
from django.contrib.auth import login, logout
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_GET, require_http_methods

from audit_app.refusals import SIGNIN_FAILED_KIND, RefusedRequest, request_refusal_record
from trust_app.services.people_sso import person_sign_in_external
from trust_app.signin.handler import signin_client_address
from trust_app.sso.backends import SINGLE_SIGN_ON_BACKEND
from trust_app.sso.claims import ClaimsRefused, person_from_claims
from trust_app.sso.provider import ProviderUnavailable, configured, provider_client

log = structlog.get_logger(__name__)

_NEXT = "synthorg_sso_next"
_ID_TOKEN = "synthorg_sso_id_token"


def _refused(request: HttpRequest, reason: str, *, status: int = 400) -> HttpResponse:
    address = signin_client_address(request)
    request_refusal_record(
        refused=RefusedRequest(
            kind=SIGNIN_FAILED_KIND,
            method=request.method or "GET",
            path=request.path,
            status=status,
            code="unauthenticated",
            message=f"single sign-on refused: {reason}"[:500],
            address=address,
        ),
    )
    log.info("sso_refused", reason=reason[:300], address=address)
    return render(request, "registration/login.html", {"sso_error": reason}, status=status)


def _safe_next(request: HttpRequest, value: str) -> str:
    if value and url_has_allowed_host_and_scheme(
        value, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return value
    return "/"


@require_GET
def sso_start(request: HttpRequest) -> HttpResponse:
    """To the provider's sign-in, with state, nonce and a PKCE challenge."""
    if configured() is None:
        raise Http404("single sign-on is not configured here")
    try:
        client = provider_client()
        request.session[_NEXT] = _safe_next(request, request.GET.get("next", ""))
        redirect_uri = request.build_absolute_uri(reverse("sso-callback"))
        response: HttpResponse = client.authorize_redirect(request, redirect_uri)
        return response
    except ProviderUnavailable as exc:
        return _refused(request, str(exc), status=503)
    except Exception as exc:
        return _refused(
            request, f"the provider could not be reached ({type(exc).__name__})", status=503
        )


@require_GET
def sso_callback(request: HttpRequest) -> HttpResponse:
    """The provider's answer: the code exchanged, the ID token checked, then sign-in."""
    oidc = configured()
    if oidc is None:
        raise Http404("single sign-on is not configured here")
    try:
        client = provider_client()
    except ProviderUnavailable as exc:
        return _refused(request, str(exc), status=503)
    from authlib.common.errors import AuthlibBaseError
    from joserfc.errors import JoseError

    try:
        token: dict[str, Any] = client.authorize_access_token(request)
    except (AuthlibBaseError, JoseError, ValueError, KeyError) as exc:
        return _refused(request, f"the provider's answer was not accepted: {_why(exc)}")
    except Exception as exc:
        return _refused(
            request, f"the provider could not be reached ({type(exc).__name__})", status=503
        )
    claims = token.get("userinfo")
    if not claims:
        return _refused(request, "the provider sent no ID token")
    if claims.get("iss") != oidc.issuer:
        return _refused(request, "the ID token's issuer is not the configured provider")
    try:
        person = person_sign_in_external(
            signed_in=person_from_claims(claims, oidc), address=signin_client_address(request)
        )
    except ClaimsRefused as exc:
        return _refused(request, exc.reason, status=403)
    after = request.session.get(_NEXT, "/")
    login(request, person, backend=SINGLE_SIGN_ON_BACKEND)
    request.session[_ID_TOKEN] = token.get("id_token", "")
    return HttpResponseRedirect(_safe_next(request, after))


def _unreachable(request: HttpRequest, exc: Exception) -> HttpResponse:
    return _refused(
        request, f"the provider could not be reached ({type(exc).__name__})", status=503
    )


def _why(exc: Exception) -> str:
    text = getattr(exc, "description", None) or getattr(exc, "error", None) or str(exc)
    return str(text)[:200] or type(exc).__name__


@require_http_methods(["POST"])
def sign_out(request: HttpRequest) -> HttpResponse:
    """The console's session ends; then the provider's, when it offers RP-initiated logout."""
    id_token = request.session.get(_ID_TOKEN, "")
    logout(request)
    back = request.build_absolute_uri(reverse("login"))
    if id_token and configured() is not None:
        try:
            client = provider_client()
            metadata = client.load_server_metadata()
            if metadata.get("end_session_endpoint"):
                response: HttpResponse = client.logout_redirect(
                    request, post_logout_redirect_uri=back, id_token_hint=id_token
                )
                return response
        except Exception as exc:
            log.warning("sso_logout_failed", error=type(exc).__name__)
    return HttpResponseRedirect(back)
