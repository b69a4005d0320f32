"""The agent REST API of API.md: me, tools (L1–L3) and invocations.

Views only translate: they authenticate (tools_app.api.auth), validate the body,
call a service or selector, and render. Waiting is async: a waiting request sleeps
on its call's status channel and holds no thread.

Each trip of a request's work to a thread and back costs about 0.4 ms. Asking to run a
tool makes one: the checks at the door (token, permission), the body's validation and
the decision run together (``_OneHop``), and a small answer is rendered on the event
loop, where Django would send it to a thread once more (``_RenderedOnTheLoop``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import uuid
from collections.abc import AsyncIterator
from typing import Any

from adrf.views import APIView as AsyncAPIView
from asgiref.sync import sync_to_async
from django.conf import settings
from django.http import HttpResponse
from django.http.response import HttpResponseBase
from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from audit_app.record import Actor
from common import openapi
from common.canonical import arguments_hash
from common.errors import NotFoundError, PayloadTooLargeError, SynthOrgError
from tools_app.api.auth import AgentView
from tools_app.api.serializers import (
    BatchSerializer,
    InvocationCreateSerializer,
    WaitQuerySerializer,
)
from tools_app.decision import agent_rate_check
from tools_app.events import (
    CARRIED_BODY_MAX_CHARS,
    carried_body,
    rendered_size,
    wait_for_terminal,
    watch_invocation,
)
from tools_app.models import Invocation
from tools_app.representation import invocation_json
from tools_app.selectors.invocations import (
    invocation_for_agent,
    permitted_contract,
    permitted_tools,
)
from tools_app.services.invocation_batch import invocation_batch_submit
from tools_app.services.invocation_cancel import invocation_cancel
from tools_app.services.invocation_submit import CallRequest, invocation_submit
from trust_app.models import Agent
from trust_app.selectors.agents import agent_policy


def _check_size(request: Request) -> None:
    length = request.META.get("CONTENT_LENGTH") or "0"
    if length.isdigit() and int(length) > settings.SYNTHORG_MAX_REQUEST_BYTES:
        raise PayloadTooLargeError(
            f"the request body is {length} bytes; at most {settings.SYNTHORG_MAX_REQUEST_BYTES} "
            "are accepted"
        )


def _load(invocation_id: uuid.UUID) -> Invocation:
    return Invocation.objects.select_related("approval").get(id=invocation_id)


def _load_json(invocation_id: uuid.UUID) -> dict[str, Any]:
    return invocation_json(_load(invocation_id))


def _rate_and_submit(agent: Agent, call: CallRequest, invocation_id: uuid.UUID) -> Any:
    agent_rate_check(agent)
    return invocation_submit(agent=agent, call=call, invocation_id=invocation_id)


async def _wait_and_load(invocation: Invocation, wait: int) -> Invocation:
    if wait <= 0 or invocation.terminal:
        return invocation

    async def status() -> str:
        return await sync_to_async(
            lambda: Invocation.objects.values_list("status", flat=True).get(id=invocation.id)
        )()

    await wait_for_terminal(invocation.id, timeout=wait, current_status=status)
    return await sync_to_async(_load)(invocation.id)


class MeView(AgentView, APIView):
    @extend_schema(summary="Who this agent is", responses={200: openapi.ME})
    def get(self, request: Request) -> Response:
        from trust_app.selectors.trust import agent_effective_level

        agent = self.agent_of(request)
        # trust.level is the level that applies: the lower of the admin's and trust's.
        level = agent_effective_level(agent)
        return Response(
            {
                "name": agent.name,
                "access_level": agent.access_level,
                "trust": {
                    "strategy": level.strategy,
                    "level": level.level,
                    "admin_level": level.admin_level,
                    "earned_level": level.trust_level,
                    "lowered": level.lowered,
                    "reason": level.reason,
                },
                "autonomy": agent.autonomy,
            }
        )


class ToolListView(AgentView, APIView):
    @extend_schema(
        summary="L1: the tools this agent may use",
        operation_id="tools_list",
        responses={200: openapi.TOOL_LIST},
    )
    def get(self, request: Request) -> Response:
        policy = agent_policy(self.agent_of(request))
        return Response({"tools": permitted_tools(policy)})


class ToolDetailView(AgentView, APIView):
    @extend_schema(summary="L2: one tool's full definition", responses={200: openapi.TOOL_L2})
    def get(self, request: Request, name: str) -> Response:
        contract = permitted_contract(agent_policy(self.agent_of(request)), name)
        if contract is None:
            raise NotFoundError(f"no tool {name!r} that you may use")
        return Response(contract.l2())


class ToolResourceView(AgentView, APIView):
    @extend_schema(summary="L3: one resource of a tool", responses={200: openapi.TOOL_RESOURCE})
    def get(self, request: Request, name: str, resource_id: str) -> Response:
        contract = permitted_contract(agent_policy(self.agent_of(request)), name)
        resource = contract.resource(resource_id) if contract is not None else None
        if resource is None:
            raise NotFoundError(f"no resource {resource_id!r} of a tool {name!r} you may use")
        return Response(resource.model_dump(mode="json"))


class _RenderedOnTheLoop:
    """A successful answer of an invocation's size is rendered on the event loop."""

    def finalize_response(
        self, request: Request, response: Any, *args: Any, **kwargs: Any
    ) -> HttpResponseBase:
        response = super().finalize_response(request, response, *args, **kwargs)  # type: ignore[misc]
        if not isinstance(response, Response) or response.status_code >= 400:
            return response  # errors keep their marks for the envelope and the audit
        data = response.data
        if not isinstance(data, dict) or rendered_size(data) > CARRIED_BODY_MAX_CHARS:
            return response  # a large one is rendered in a thread, off the loop
        response.render()
        plain = HttpResponse(response.content, status=response.status_code)
        for name, value in response.items():
            plain[name] = value
        return plain


class _OneHop(AsyncAPIView):
    """A request whose checks at the door run in the thread of its work: the handler
    of a method in ``one_hop_methods`` calls ``self.initial`` there first (adrf would
    run them in a hop of their own)."""

    one_hop_methods: tuple[str, ...] = ("POST",)

    async def async_dispatch(self, request: Any, *args: Any, **kwargs: Any) -> Any:
        if request.method not in self.one_hop_methods:
            return await super().async_dispatch(request, *args, **kwargs)
        self.args, self.kwargs = args, kwargs
        request = self.initialize_request(request, *args, **kwargs)
        self.request = request
        self.headers = self.default_response_headers
        try:
            handler = getattr(self, request.method.lower())
            response = await handler(request, *args, **kwargs)
        except Exception as exc:
            response = self.handle_exception(exc)
        self.response = self.finalize_response(request, response, *args, **kwargs)
        return self.response


def _may_wait(request: Request) -> bool:
    """Whether the body asks to wait, read before anything is checked, so the call's
    status channel is listened to before it exists. Only ever a hint: a body that
    cannot be read here is judged, in order, by the checks that follow."""
    length = request.META.get("CONTENT_LENGTH") or "0"
    if not request.content_type.startswith("application/json") or not length.isdigit():
        return False
    if not 0 < int(length) <= settings.SYNTHORG_MAX_REQUEST_BYTES:
        return False
    try:
        body = json.loads(request._request.body)
    except Exception:  # unreadable here: the checks that follow say why, in their order
        return False
    return isinstance(body, dict) and body.get("wait") not in (None, 0, "0", False)


class InvocationListCreateView(AgentView, _RenderedOnTheLoop, _OneHop):
    @extend_schema(
        summary="Ask to run a tool",
        request=InvocationCreateSerializer,
        responses={200: openapi.INVOCATION, 201: openapi.INVOCATION},
    )
    async def post(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        new_id = uuid.uuid4()
        # Subscribed before the call exists, so its result cannot slip past.
        async with watch_invocation(new_id) if _may_wait(request) else _no_watch() as watch:
            submitted, wait = await sync_to_async(self._checked_submit)(request, new_id)
            invocation = submitted.invocation
            if invocation.terminal or wait <= 0:
                body_json = await sync_to_async(invocation_json)(invocation)
            elif submitted.created and watch is not None:
                message = await watch.until_terminal(wait)
                # The terminal message usually carries the answer; else read it.
                body_json = carried_body(message) or await sync_to_async(_load_json)(invocation.id)
            else:  # an earlier call with this idempotency key, or no live updates
                invocation = await _wait_and_load(invocation, wait)
                body_json = await sync_to_async(invocation_json)(invocation)
        return Response(body_json, status=201 if submitted.created else 200)

    def _checked_submit(self, request: Request, new_id: uuid.UUID) -> tuple[Any, int]:
        """In one thread: the checks at the door, the body, the rate and the decision."""
        self.initial(request)
        _check_size(request)
        agent = self.agent_of(request)
        body = InvocationCreateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        call = CallRequest(
            tool=data["tool"],
            arguments=data["arguments"],
            idempotency_key=data.get("idempotency_key"),
            task_id=data.get("task_id", ""),
            purpose=data.get("purpose", ""),
        )
        return _rate_and_submit(agent, call, new_id), data["wait"]


@contextlib.asynccontextmanager
async def _no_watch() -> AsyncIterator[None]:
    yield None


class InvocationDetailView(AgentView, _RenderedOnTheLoop, _OneHop):
    one_hop_methods = ("GET",)

    @extend_schema(
        summary="One invocation (optionally waiting for it to finish)",
        parameters=[WaitQuerySerializer],
        responses={200: openapi.INVOCATION},
    )
    async def get(self, request: Request, invocation_id: uuid.UUID) -> Response:
        invocation, wait, body_json = await sync_to_async(self._checked_load)(
            request, invocation_id
        )
        if body_json is None:
            invocation = await _wait_and_load(invocation, wait)
            body_json = await sync_to_async(invocation_json)(invocation)
        return Response(body_json)

    def _checked_load(
        self, request: Request, invocation_id: uuid.UUID
    ) -> tuple[Invocation, int, dict[str, Any] | None]:
        """In one thread: the checks at the door, the query, the call, and its answer
        when there is nothing to wait for."""
        self.initial(request)
        query = WaitQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        wait = query.validated_data["wait"]
        invocation = invocation_for_agent(self.agent_of(request), invocation_id)
        if invocation is None:
            raise NotFoundError(f"no invocation {invocation_id} of yours")
        if wait <= 0 or invocation.terminal:
            return invocation, wait, invocation_json(invocation)
        return invocation, wait, None


class InvocationCancelView(AgentView, APIView):
    @extend_schema(
        summary="Cancel an invocation that has not finished",
        request=None,
        responses={200: openapi.INVOCATION},
    )
    def post(self, request: Request, invocation_id: uuid.UUID) -> Response:
        agent = self.agent_of(request)
        invocation = invocation_for_agent(agent, invocation_id)
        if invocation is None:
            raise NotFoundError(f"no invocation {invocation_id} of yours")
        return Response(
            invocation_json(invocation_cancel(invocation=invocation, actor=Actor.agent(agent)))
        )


class InvocationBatchView(AgentView, AsyncAPIView):
    @extend_schema(
        summary="Several calls at once", request=BatchSerializer, responses={200: openapi.BATCH}
    )
    async def post(self, request: Request) -> Response:
        _check_size(request)
        agent = self.agent_of(request)
        body = BatchSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        await sync_to_async(agent_rate_check)(agent, len(data["calls"]))
        calls = [
            CallRequest(
                tool=c["tool"],
                arguments=c.get("arguments", {}),
                idempotency_key=c.get("idempotency_key"),
                task_id=c.get("task_id", ""),
                purpose=c.get("purpose", ""),
            )
            for c in data["calls"]
        ]
        entries = await sync_to_async(invocation_batch_submit)(
            agent=agent, calls=calls, max_concurrency=data.get("max_concurrency")
        )
        waited = await asyncio.gather(
            *[
                _wait_and_load(e, data["wait"]) if isinstance(e, Invocation) else _same(e)
                for e in entries
            ]
        )
        rendered = await sync_to_async(
            lambda: [_entry_json(e, c) for e, c in zip(waited, calls, strict=True)]
        )()
        return Response({"invocations": rendered})


async def _same(value: Any) -> Any:
    return value


def _entry_json(entry: Invocation | SynthOrgError, call: CallRequest) -> dict[str, Any]:
    """An invocation, or for a call refused before it became one, the same shape with
    no id, status failed and the refusal as its error."""
    if isinstance(entry, Invocation):
        return invocation_json(entry)
    return {
        "id": None,
        "tool": call.tool,
        "arguments_hash": arguments_hash(call.arguments),
        "status": "failed",
        "decision": None,
        "approval": None,
        "result": None,
        "error": {"code": entry.code, "message": entry.message, "details": entry.details},
        "created_at": None,
        "updated_at": None,
    }
