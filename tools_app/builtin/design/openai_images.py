"""``OpenAIImagesProvider``: ``POST /v1/images/generations`` of an OpenAI-compatible API,
through a configured connection.

The connection is the whole of the network side, as for ``external_data_request``
and ``metrics_query``: its base URL fixes the host (reached through the SSRF guard,
redirects only within it), its ``auth`` is the credential the console adds (never
seen by the agent, masked in whatever comes back), its rate, concurrency and
response-size limits hold for every agent together, and the agent must be granted
the connection (or its generations operation).

The answer's ``data[0].b64_json`` is decoded and kept only when its headers say PNG,
JPEG or WebP within ``design.images.max_bytes`` and ``max_pixels``; a ``url``
answer is fetched only from the connection's own host, through the same guard.
Every request sent, refused or failed is audited (``design.image_generate``), the
prompt redacted of every stored secret's value like any argument.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from collections.abc import Mapping
from typing import Any, Final
from urllib.parse import urlsplit

from django.db import transaction

from audit_app.record import Actor, audit_record
from common.config.connections import Connection
from common.config.design import GENERATIONS_PATH, ImageSection
from common.settings_config import synthorg_config
from common.vocabulary.categories import ToolCategory
from tools_app.builtin.base import RefusalCode, ToolContext, ToolFailedError, ToolRefusedError
from tools_app.builtin.design.formats import PictureFormat, PictureFormatError, picture_format
from tools_app.builtin.design.providers import IMAGES_FOLDER, StoredPicture, store_picture
from tools_app.builtin.external_data.exchange import (
    ConnectionCredential,
    CredentialMask,
    Record,
    connection_limits,
    connection_send,
)
from tools_app.builtin.external_data.tool import resolve_call
from tools_app.net import (
    FetchResponse,
)
from tools_app.sanitize import redact_secrets
from tools_app.secrets import known_secrets_now
from trust_app.models import Agent

TOOL_NAME: Final = "image_generate"
AUDIT_KIND: Final = "design.image_generate"
ACTION_TYPE: Final = "external_data:request"
REDACTED: Final = "[REDACTED]"


def generations_call(section: ImageSection) -> dict[str, str]:
    """The connection call ``image_generate`` makes, as ``external_data_request`` names it."""
    return {"connection": section.connection, "method": "POST", "path": GENERATIONS_PATH}


class ImageAnswerError(Exception):
    """The provider's answer is not a picture this console keeps."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class OpenAIImagesProvider:
    """The HTTP provider: one generated picture per call, through the connection."""

    name = "openai_images"
    folder = IMAGES_FOLDER

    def __init__(self, section: ImageSection) -> None:
        self.section = section

    def produce(self, context: ToolContext, request: Mapping[str, Any]) -> StoredPicture:
        """Ask for ``request['prompt']`` at ``request['size']``; keep what comes back."""
        section = self.section
        if context.sub_constraints.get("network") not in ("allowlist_only", "open"):
            raise ToolRefusedError(
                RefusalCode.HOST_NOT_ALLOWED,
                f"network access is not permitted for agent {context.agent_name}",
            )
        call = resolve_call(
            synthorg_config().connections, context.sub_constraints, generations_call(section)
        )
        connection = call.connection
        record = _Recorder(context, connection.name, section, request)
        credential = ConnectionCredential.for_call(context, connection, tool=TOOL_NAME)
        masked = credential.mask
        body: dict[str, Any] = {
            "model": section.model,
            "prompt": request["prompt"],
            "size": request["size"],
            "n": 1,
        }
        if section.request_b64_json:
            body["response_format"] = "b64_json"
        with connection_limits(connection, _noted(record), agent=context.agent_id):
            url = connection.base_url + GENERATIONS_PATH
            response = self._send(record, connection, credential, "POST", url, body)
            try:
                data, revised = self._picture_bytes(
                    record, masked, connection, credential, response
                )
                shape = _checked_picture(section, data)
            except ImageAnswerError as exc:
                message = masked(exc.message)
                record(outcome="refused", reason=message, status=response.status)
                raise ToolFailedError(message, code=exc.code) from exc
        digest = hashlib.sha256(data).hexdigest()
        stored = store_picture(
            context, data, sha256=digest, extension=shape.extension, folder=IMAGES_FOLDER
        )
        record(
            outcome="stored",
            reason=f"{len(data)} bytes of {shape.media_type} ({shape.width}x{shape.height}) "
            f"kept at {stored['path']}",
            status=response.status,
            path=stored["path"],
            sha256=digest,
            bytes=len(data),
        )
        return StoredPicture(
            path=str(stored["path"]),
            sha256=digest,
            media_type=shape.media_type,
            width=shape.width,
            height=shape.height,
            bytes=len(data),
            details={"revised_prompt": masked(revised) if revised is not None else None},
        )

    def _picture_bytes(
        self,
        record: _Recorder,
        masked: CredentialMask,
        connection: Connection,
        credential: ConnectionCredential,
        response: FetchResponse,
    ) -> tuple[bytes, str | None]:
        """The picture's bytes and the provider's revised prompt, from its answer."""
        if response.truncated:
            raise ImageAnswerError(
                "RESPONSE_TOO_LARGE",
                f"the provider's answer is over the connection's limit of "
                f"{connection.max_response_bytes} bytes; nothing was kept",
            )
        try:
            answer = json.loads(response.body)
        except ValueError:
            answer = None
        if response.status >= 400:
            error = answer.get("error") if isinstance(answer, dict) else None
            words = error.get("message") if isinstance(error, dict) else None
            kind = error.get("type") or error.get("code") if isinstance(error, dict) else None
            detail = f"{kind}: {words}" if kind and words else str(words or "no error message")
            raise ImageAnswerError(
                "PROVIDER_ERROR", f"the images API answered HTTP {response.status}: {detail[:500]}"
            )
        items = answer.get("data") if isinstance(answer, dict) else None
        if not isinstance(items, list) or not items or not isinstance(items[0], dict):
            raise ImageAnswerError("NOT_AN_IMAGE", "the provider's answer holds no picture")
        first = items[0]
        revised = first.get("revised_prompt")
        revised = revised[:4000] if isinstance(revised, str) else None
        encoded = first.get("b64_json")
        if isinstance(encoded, str):
            if len(encoded) > (self.section.max_bytes * 4) // 3 + 8:
                raise ImageAnswerError(
                    "IMAGE_TOO_LARGE",
                    f"the picture is over the limit of {self.section.max_bytes} bytes "
                    "(design.images.max_bytes); nothing was kept",
                )
            try:
                return base64.b64decode(encoded, validate=True), revised
            except (binascii.Error, ValueError):
                raise ImageAnswerError(
                    "NOT_AN_IMAGE", "the provider's b64_json is not base64"
                ) from None
        url = first.get("url")
        if isinstance(url, str):
            return self._fetched(record, masked, connection, credential, url), revised
        raise ImageAnswerError("NOT_AN_IMAGE", "the provider's answer holds no picture")

    def _fetched(
        self,
        record: _Recorder,
        masked: CredentialMask,
        connection: Connection,
        credential: ConnectionCredential,
        url: str,
    ) -> bytes:
        """A ``url`` answer's picture, fetched only from the connection's own origin."""
        home, there = urlsplit(connection.base_url), urlsplit(url)
        same = (
            there.scheme == home.scheme
            and there.hostname == home.hostname
            and (there.port or 0) == (home.port or 0)
            and there.path.startswith("/")
        )
        if not same:
            raise ImageAnswerError(
                "URL_NOT_ALLOWED",
                f"the provider answered a link to another host ({there.hostname or '?'}); "
                f"pictures are fetched only from the connection {connection.name}'s host",
            )
        link = f"{home.scheme}://{home.netloc}{there.path}" + (
            f"?{there.query}" if there.query else ""
        )
        response = self._send(record, connection, credential, "GET", link, None)
        if response.status >= 400 or response.truncated:
            raise ImageAnswerError(
                "NOT_AN_IMAGE",
                f"the picture's link answered HTTP {response.status}"
                + (" with more than the connection's size limit" if response.truncated else ""),
            )
        return response.body

    @staticmethod
    def _send(
        record: _Recorder,
        connection: Connection,
        credential: ConnectionCredential,
        method: str,
        url: str,
        body: Mapping[str, Any] | None,
    ) -> FetchResponse:
        """One request to the connection's host (``connection_send``: the SSRF guard, its
        credential added by the console); refusals and failures audited and raised."""
        headers = {"Accept": "application/json" if body is not None else "image/*"}
        payload = None
        if body is not None:
            headers["Content-Type"] = "application/json"
            payload = json.dumps(body, ensure_ascii=False).encode("utf-8")
        answer = connection_send(
            connection,
            credential,
            method=method,
            url=url,
            headers=headers,
            body=payload,
            record=_noted(record),
        )
        return answer.response


def _noted(record: _Recorder) -> Record:
    def noted(outcome: str, reason: str) -> None:
        record(outcome=outcome, reason=reason)

    return noted


def _checked_picture(section: ImageSection, data: bytes) -> PictureFormat:
    if len(data) > section.max_bytes:
        raise ImageAnswerError(
            "IMAGE_TOO_LARGE",
            f"the picture is {len(data)} bytes; the limit is {section.max_bytes} "
            "(design.images.max_bytes); nothing was kept",
        )
    try:
        shape = picture_format(data)
    except PictureFormatError as exc:
        raise ImageAnswerError(
            "NOT_AN_IMAGE", f"the provider's answer is not a picture to keep: {exc}"
        ) from exc
    if shape.width * shape.height > section.max_pixels:
        raise ImageAnswerError(
            "IMAGE_TOO_LARGE",
            f"the picture is {shape.width}x{shape.height} pixels; the limit is "
            f"{section.max_pixels} pixels (design.images.max_pixels); nothing was kept",
        )
    return shape


class _Recorder:
    """Audit rows of one image_generate call (``design.image_generate``)."""

    def __init__(
        self,
        context: ToolContext,
        connection: str,
        section: ImageSection,
        request: Mapping[str, Any],
    ) -> None:
        self.context = context
        self.base = {
            "connection": connection,
            "model": section.model,
            "size": request.get("size"),
            # The prompt as audit rows show any argument: every stored secret redacted.
            "prompt": redact_secrets(str(request.get("prompt", "")), known_secrets_now())[:2000],
        }

    def __call__(self, *, outcome: str, reason: str, **data: Any) -> None:
        agent = Agent.objects.get(id=self.context.agent_id)
        with transaction.atomic():
            audit_record(
                kind=AUDIT_KIND,
                actor=Actor.agent(agent),
                agent=agent,
                invocation_id=self.context.invocation_uuid,
                tool=TOOL_NAME,
                category=ToolCategory.DESIGN.value,
                action_type=ACTION_TYPE,
                outcome=outcome,
                reason=redact_secrets(reason, known_secrets_now())[:1000],
                data={**self.base, **data},
            )
