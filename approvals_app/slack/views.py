"""``POST /integrations/slack/<channel>/actions/``: Slack's request for a button click.

Nothing here trusts the network: the request must carry Slack's signature with the
channel's signing secret, be less than five minutes old and not seen before (each
signature is remembered for ten minutes). The Slack user must be linked to a person in
the channel's ``users``; the click then decides as that person through
``approval_decide``, under every rule the console's own pages follow (who may decide,
the owner's bar, quorum, expiry, the arguments' hash). The message is then updated in
place through Slack's ``response_url`` (on the channel's ``response_hosts`` only), saying
who decided or why the click was refused. CSRF does not apply: the signature is the proof.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

import httpx
import structlog
from django.contrib.auth import get_user_model
from django.core.cache import cache
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from approvals_app.services import approval_decide
from audit_app.refusals import RefusedRequest, request_refusal_record
from common.config.notifications import SlackChannel
from common.envelope import error_bytes
from common.errors import SynthOrgError
from common.settings_config import synthorg_config
from notifications_app.slack import (
    MAX_SKEW_SECONDS,
    SlackClick,
    SlackRequestRefused,
    check_slack_request,
    escape_mrkdwn,
    parse_click,
    response_url_allowed,
)

log = structlog.get_logger("synthorg.slack")
_SEEN_PREFIX = "synthorg:slack:seen:"
_UPDATE_TIMEOUT_SECONDS = 3.0


def _error(status: int, code: str, message: str) -> HttpResponse:
    return HttpResponse(
        error_bytes(code, message, {}), status=status, content_type="application/json"
    )


def _refuse(request: HttpRequest, status: int, code: str, message: str) -> HttpResponse:
    request_refusal_record(
        refused=RefusedRequest(
            method="POST",
            path=request.path,
            status=status,
            code=code,
            message=f"slack: {message}",
            address=str(request.META.get("REMOTE_ADDR", "")),
        )
    )
    return _error(status, code, message)


def _channel(name: str) -> SlackChannel | None:
    channel = synthorg_config().notifications.channel(name)
    if isinstance(channel, SlackChannel) and channel.interactive and channel.enabled:
        return channel
    return None


@csrf_exempt
@require_POST
def slack_actions(request: HttpRequest, channel: str) -> HttpResponse:
    found = _channel(channel)
    if found is None:
        return _error(404, "not_found", "no interactive Slack channel of that name")
    secret = os.environ.get(str(found.signing_secret_env), "")
    if not secret:
        return _error(
            503,
            "unavailable",
            f"the channel's signing secret ({found.signing_secret_env}) is not set",
        )
    body = request.body
    signature = request.headers.get("X-Slack-Signature", "")
    try:
        check_slack_request(
            secret=secret,
            timestamp=request.headers.get("X-Slack-Request-Timestamp", ""),
            signature=signature,
            body=body,
            now=time.time(),
        )
        if not cache.add(_SEEN_PREFIX + signature, 1, timeout=2 * MAX_SKEW_SECONDS):
            raise SlackRequestRefused("this signed request was seen before (a replay)")
        click = parse_click(body)
    except SlackRequestRefused as exc:
        return _refuse(request, 401, "unauthenticated", exc.reason)
    person = _person(found, click.user_id)
    if person is None:
        _refuse(request, 403, "forbidden", f"Slack user {click.user_id} is linked to no person")
        text = "Your Slack account is not linked to a person in the console: nothing was decided."
        _update(found, click, text, replace=False)
        return JsonResponse({"ok": False, "text": text})
    try:
        approval_decide(
            request=click.request_id,
            person=person,
            decision=click.decision,
            reason="approved in Slack" if click.decision == "approve" else "denied in Slack",
            arguments_hash=click.arguments_hash,
        )
    except SynthOrgError as exc:
        text = f"Not decided: {exc.message}"
        _update(found, click, text, replace=False)
        return JsonResponse({"ok": False, "text": text})
    done = "approved" if click.decision == "approve" else "denied"
    text = f"{done.capitalize()} by {person.get_username()} (in Slack)."
    _update(found, click, text, replace=True)
    return JsonResponse({"ok": True, "text": text})


def _person(channel: SlackChannel, slack_user: str) -> Any:
    username = channel.users.get(slack_user)
    if not username:
        return None
    return get_user_model().objects.filter(username=username, is_active=True).first()


def _update(channel: SlackChannel, click: SlackClick, text: str, *, replace: bool) -> None:
    """Say it in the channel: the message replaced by the outcome, or a note to the
    person who clicked (``ephemeral``) when nothing was decided."""
    if not response_url_allowed(click.response_url, channel.response_hosts):
        log.warning("slack_response_url_refused", channel=channel.name)
        return
    body: dict[str, Any] = {"text": escape_mrkdwn(text)}
    if replace:
        body["replace_original"] = True
    else:
        body["response_type"] = "ephemeral"
        body["replace_original"] = False
    try:
        with httpx.Client(timeout=_UPDATE_TIMEOUT_SECONDS, follow_redirects=False) as client:
            client.post(click.response_url, content=json.dumps(body).encode(),
                        headers={"Content-Type": "application/json"})  # fmt: skip
    except httpx.HTTPError as exc:
        log.warning("slack_update_failed", channel=channel.name, error=type(exc).__name__)
