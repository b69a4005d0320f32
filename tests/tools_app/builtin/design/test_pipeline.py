"""The design tools end to end: a daphne and a worker whose config has a ``design`` section,
and an images API of the test's own on loopback, speaking the OpenAI images API's shapes
(bearer key required, JSON error envelopes, ``data[0].b64_json``), as the connection.

mockup_render runs Chromium inside the namespace sandbox with no network; every
refusal has its control beside it: the same agent doing the allowed thing.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import os
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from django.core.cache import cache
from PIL import Image

from audit_app.models import AuditEvent
from audit_app.record import Actor
from secrets_app.redaction import GENERATION_KEY, REFRESH_SECONDS
from secrets_app.services import secret_set
from tests.support.pipeline import Pipeline, call_ended, configured_pipeline
from tests.tools_app.api import conftest as api_fixtures
from tests.tools_app.api.conftest import AgentClient
from tests.tools_app.net.servers import LoopbackHttpServer, RecordedRequest, Reply
from tools_app.models import Invocation
from tools_app.quota.usage import workspace_usage
from trust_app.models import AgentPermissions

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

make_agent = api_fixtures.make_agent
ADMIN = Actor.system("test admin")
REDIS_DB = 3
KEY_SECRET = "IMAGES_API_KEY"
API_KEY = "sk-test-" + uuid.uuid4().hex
MAX_IMAGE_BYTES = 64 * 1024
JSON = {"Content-Type": "application/json"}
GENERATIONS = "/v1/images/generations"
QUOTA_TEXT = "4m"
QUOTA = 4 * 1024 * 1024


def _png(size: tuple[int, int], colour: tuple[int, int, int] = (30, 120, 200)) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", size, colour).save(buffer, "PNG")
    return buffer.getvalue()


def _noise_png(size: tuple[int, int]) -> bytes:
    buffer = io.BytesIO()
    Image.frombytes("RGB", size, os.urandom(size[0] * size[1] * 3)).save(buffer, "PNG")
    return buffer.getvalue()


def _error(status: int, message: str, kind: str, code: str | None = None) -> Reply:
    envelope = {"error": {"message": message, "type": kind, "param": None, "code": code}}
    return Reply(status, JSON, json.dumps(envelope).encode())


class ImagesApi:
    """``POST /v1/images/generations`` as an OpenAI-compatible API answers it; a few
    prompts ask it to misbehave."""

    def __init__(self, server: LoopbackHttpServer, elsewhere: LoopbackHttpServer) -> None:
        self.server = server
        self.elsewhere = elsewhere
        self.prompts: list[str] = []

    def __call__(self, request: RecordedRequest) -> Reply:
        if request.method != "POST":
            return _error(405, "Method not allowed", "invalid_request_error")
        if request.header_values("Authorization") != [f"Bearer {API_KEY}"]:
            return _error(
                401, "Incorrect API key provided.", "invalid_request_error", "invalid_api_key"
            )
        try:
            body = json.loads(request.body)
        except ValueError:
            return _error(400, "We could not parse the JSON body.", "invalid_request_error")
        prompt, size = body.get("prompt"), body.get("size", "1024x1024")
        if not isinstance(prompt, str) or not prompt:
            return _error(400, "Missing required parameter: 'prompt'.", "invalid_request_error")
        self.prompts.append(prompt)
        width, height = (int(n) for n in size.split("x"))
        if "CONTENT-POLICY" in prompt:
            return _error(
                400,
                "Your request was rejected by the safety system.",
                "image_generation_user_error",
            )
        if "NOT-AN-IMAGE" in prompt:
            return self._answer({"b64_json": _b64(b"<html><body>not a picture</body></html>")})
        if "OVERSIZED" in prompt:
            return self._answer({"b64_json": _b64(_noise_png((width, height)))})
        if "ENDLESS" in prompt:
            return Reply(200, JSON, b'{"created": 1, "data": [{"b64_json": "' + b"A" * 2**21)
        if "LINK-ELSEWHERE" in prompt:
            return self._answer({"url": self.elsewhere.url("/picture.png")})
        if "LINK-HERE" in prompt:
            return self._answer({"url": self.server.url("/files/picture.png")})
        return self._answer({"b64_json": _b64(_png((width, height))), "revised_prompt": prompt})

    @staticmethod
    def _answer(item: dict[str, Any]) -> Reply:
        return Reply(200, JSON, json.dumps({"created": 1700000000, "data": [item]}).encode())


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


@pytest.fixture(scope="module")
def elsewhere() -> Iterator[LoopbackHttpServer]:
    """A loopback server no mockup and no picture link may reach."""
    with LoopbackHttpServer() as server:
        server.route("/picture.png", Reply(200, {"Content-Type": "image/png"}, _png((8, 8))))
        yield server


@pytest.fixture(scope="module")
def images_api(elsewhere: LoopbackHttpServer) -> Iterator[ImagesApi]:
    with LoopbackHttpServer() as server:
        api = ImagesApi(server, elsewhere)
        server.route(GENERATIONS, api)

        def picture(request: RecordedRequest) -> Reply:
            if request.header_values("Authorization") != [f"Bearer {API_KEY}"]:
                return _error(401, "Incorrect API key provided.", "invalid_request_error")
            return Reply(200, {"Content-Type": "image/png"}, _png((256, 256), (10, 200, 10)))

        server.route("/files/picture.png", picture)
        yield api


@pytest.fixture(scope="module")
def pipeline(
    test_env: dict[str, str], tmp_path_factory: pytest.TempPathFactory, images_api: ImagesApi
) -> Iterator[Pipeline]:
    config = {
        "sandboxing": {"workspace_quota": QUOTA_TEXT},
        "connections": [
            {
                "name": "images",
                "base_url": images_api.server.origin,
                "auth": {"secret": KEY_SECRET, "scheme": "bearer"},
                "private_network": True,
                "operations": [{"method": "POST", "path": GENERATIONS, "kind": "read"}],
            }
        ],
        "design": {
            "mockups": {"max_width": 1600, "max_height": 1200, "timeout_seconds": 60},
            "images": {
                "connection": "images",
                "model": "test-image-1",
                "sizes": ["256x256", "512x256"],
                "max_bytes": MAX_IMAGE_BYTES,
            },
        },
    }
    root = tmp_path_factory.mktemp("design")
    with configured_pipeline(test_env, root, config, redis_db=REDIS_DB) as started:
        yield started


@pytest.fixture(scope="module")
def daphne_server(pipeline: Pipeline) -> str:
    return pipeline.url


@pytest.fixture(autouse=True)
def _settled(pipeline: Pipeline) -> Iterator[None]:
    yield
    pipeline.settle()


@pytest.fixture
def credential() -> str:
    secret_set(name=KEY_SECRET, value=API_KEY, actor=ADMIN)
    return API_KEY


def _agent(make: Callable[..., AgentClient], grants: list[str] | None = None) -> AgentClient:
    client = make("standard", autonomy="full")
    if grants is not None:
        AgentPermissions.objects.create(agent=client.agent, sub_constraints={"connections": grants})
    return client


def _succeeded(client: AgentClient, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    answer = call_ended(client, tool, arguments)
    assert answer["status"] == "succeeded", (answer["status"], answer.get("error"))
    structured: dict[str, Any] = answer["result"]["structured"]
    return structured


def _failed(client: AgentClient, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    answer = call_ended(client, tool, arguments)
    assert answer["status"] == "failed", (answer["status"], answer.get("error"))
    error: dict[str, Any] = answer["error"]
    return error


def _picture(client: AgentClient, result: dict[str, Any]) -> Image.Image:
    """The kept picture, checked against the digest the result names."""
    data = (Path(client.agent.workspace) / result["path"]).read_bytes()
    assert hashlib.sha256(data).hexdigest() == result["sha256"]
    picture = Image.open(io.BytesIO(data))
    picture.load()
    return picture


def _kept(client: AgentClient, folder: str) -> set[str]:
    path = Path(client.agent.workspace) / ".synthorg" / folder
    return {p.name for p in path.iterdir()} if path.is_dir() else set()


def test_image_generate_keeps_the_providers_picture_with_the_consoles_key(
    make_agent: Callable[..., AgentClient], credential: str, images_api: ImagesApi
) -> None:
    client = _agent(make_agent, ["images"])
    # The API answers nobody without the key, in its own error envelope.
    refused = httpx.post(images_api.server.url(GENERATIONS), json={"prompt": "x"})
    assert refused.status_code == 401
    assert refused.json()["error"]["code"] == "invalid_api_key"

    result = _succeeded(client, "image_generate", {"prompt": "a lighthouse", "size": "512x256"})
    assert result["path"].startswith(".synthorg/images/") and result["path"].endswith(".png")
    assert (result["media_type"], result["width"], result["height"]) == ("image/png", 512, 256)
    picture = _picture(client, result)
    assert picture.size == (512, 256) and picture.getpixel((5, 5)) == (30, 120, 200)
    assert result["revised_prompt"] == "a lighthouse"

    # A link answer is fetched only from the connection's own host, with its key.
    linked = _succeeded(client, "image_generate", {"prompt": "LINK-HERE", "size": "256x256"})
    assert _picture(client, linked).getpixel((0, 0)) == (10, 200, 10)

    # The provider's own refusal comes back in its words.
    policy = _failed(client, "image_generate", {"prompt": "CONTENT-POLICY", "size": "256x256"})
    assert policy["code"] == "PROVIDER_ERROR" and "safety system" in policy["message"], policy

    # A size the admin did not allow is refused before anything is sent.
    sent = len(images_api.prompts)
    odd = _failed(client, "image_generate", {"prompt": "a lighthouse", "size": "1024x1024"})
    assert odd["code"] == "INVALID_ARGUMENT" and "256x256, 512x256" in odd["message"], odd
    assert len(images_api.prompts) == sent

    # The agent never held the key; every request has its audit row.
    stored = json.dumps(
        list(
            Invocation.objects.filter(agent=client.agent).values(
                "arguments", "content", "raw_content", "structured"
            )
        ),
        default=str,
    )
    assert credential not in stored
    rows = AuditEvent.objects.filter(kind="design.image_generate", agent_id=client.agent.id)
    assert sorted(row.outcome for row in rows) == ["refused", "stored", "stored"]
    kept = next(row for row in rows if row.data.get("path") == result["path"])
    assert kept.data["sha256"] == result["sha256"] and kept.data["model"] == "test-image-1"


def test_a_provider_answer_that_is_not_a_picture_within_limits_is_refused(
    make_agent: Callable[..., AgentClient],
    credential: str,
    images_api: ImagesApi,
    elsewhere: LoopbackHttpServer,
) -> None:
    client = _agent(make_agent, ["images"])
    for prompt, code in (
        ("NOT-AN-IMAGE", "NOT_AN_IMAGE"),
        ("OVERSIZED", "IMAGE_TOO_LARGE"),
        ("ENDLESS", "RESPONSE_TOO_LARGE"),
        ("LINK-ELSEWHERE", "URL_NOT_ALLOWED"),
    ):
        error = _failed(client, "image_generate", {"prompt": prompt, "size": "256x256"})
        assert error["code"] == code, (prompt, error)
    assert _kept(client, "images") == set()
    assert elsewhere.count("/picture.png") == 0
    # Control: the same agent and size, a picture within the limits, is kept.
    result = _succeeded(client, "image_generate", {"prompt": "a small square", "size": "256x256"})
    assert _kept(client, "images") == {Path(result["path"]).name}
    assert result["bytes"] <= MAX_IMAGE_BYTES


def test_image_generate_needs_the_connection_granted(
    make_agent: Callable[..., AgentClient], credential: str
) -> None:
    stranger = _agent(make_agent, ["elsewhere"])
    answer = call_ended(stranger, "image_generate", {"prompt": "a lighthouse", "size": "256x256"})
    assert answer["status"] == "denied", answer
    assert answer["decision"]["rule"] == "connection_not_granted", answer
    # Control: granted the connection's generations operation alone, the same call runs.
    granted = _agent(make_agent, [f"images:POST {GENERATIONS}"])
    assert _succeeded(granted, "image_generate", {"prompt": "a lighthouse", "size": "256x256"})


def test_a_stored_secret_in_the_prompt_is_redacted_in_audit_rows(
    make_agent: Callable[..., AgentClient], credential: str, pipeline: Pipeline
) -> None:
    value = "hunter2-" + uuid.uuid4().hex
    secret_set(name=f"DB_PASSWORD_{uuid.uuid4().hex[:6].upper()}", value=value, actor=ADMIN)
    # The change is announced in this process's cache; the pipeline's processes share
    # another Redis database (in a deployment, both are one).
    pipeline.broker.incr(cache.make_key(GENERATION_KEY))
    # A process looks at that announcement at most every REFRESH_SECONDS.
    time.sleep(REFRESH_SECONDS * 2)
    client = _agent(make_agent, ["images"])
    answer = call_ended(
        client, "image_generate", {"prompt": f"a poster that says {value}", "size": "256x256"}
    )
    assert answer["status"] == "succeeded", answer
    # The provider echoes the prompt back: the agent is not shown the value either.
    assert value not in json.dumps(answer)
    rows = list(AuditEvent.objects.filter(agent_id=client.agent.id))
    recorded = json.dumps([(row.kind, row.reason, row.data) for row in rows], default=str)
    assert value not in recorded, [(r.kind, r.data) for r in rows if value in json.dumps(r.data)]
    # Control: the rows do hold the rest of the prompt, with the value marked.
    design = next(row for row in rows if row.kind == "design.image_generate")
    assert design.data["prompt"].startswith("a poster that says [REDACTED"), design.data


HTML_MOCKUP = """<!doctype html><html><head><style>
body { margin: 0; background: #ffffff; font-family: sans-serif; }
.card { position: absolute; left: 20px; top: 20px; width: 200px; height: 100px;
        background: rgb(220, 30, 30); }
.logo { position: absolute; left: 300px; top: 20px; width: 40px; height: 40px; }
</style></head><body><div class="card">Sign in</div>
<img class="logo" src="data:image/png;base64,%s"></body></html>"""

SVG_MOCKUP = """<svg xmlns="http://www.w3.org/2000/svg" width="300" height="200">
<rect width="300" height="200" fill="rgb(255,255,255)"/>
<circle cx="150" cy="100" r="60" fill="rgb(20,160,60)"/></svg>"""


def test_mockup_render_draws_inline_html_and_svg(make_agent: Callable[..., AgentClient]) -> None:
    client = _agent(make_agent)
    logo = _b64(_png((40, 40), (0, 0, 255)))
    html = _succeeded(
        client,
        "mockup_render",
        {"html": HTML_MOCKUP % logo, "viewport": {"width": 400, "height": 200}},
    )
    assert html["path"].startswith(".synthorg/mockups/") and html["blocked_requests"] == []
    assert (html["width"], html["height"]) == (400, 200)
    picture = _picture(client, html).convert("RGB")
    assert picture.size == (400, 200)
    assert picture.getpixel((120, 100)) == (220, 30, 30)  # the card, drawn from its CSS
    assert picture.getpixel((320, 40)) == (0, 0, 255)  # the inline data: image
    assert picture.getpixel((380, 180)) == (255, 255, 255)

    svg = _succeeded(client, "mockup_render", {"svg": SVG_MOCKUP})
    drawn = _picture(client, svg).convert("RGB")
    assert drawn.getpixel((150, 100)) == (20, 160, 60)

    # Each kept mockup has its audit row, naming the file and its digest.
    rows = AuditEvent.objects.filter(kind="design.mockup_render", agent_id=client.agent.id)
    assert {(r.data["path"], r.data["sha256"]) for r in rows} == {
        (html["path"], html["sha256"]),
        (svg["path"], svg["sha256"]),
    }

    # The viewport is held to design.mockups' bounds.
    oversized = {"svg": SVG_MOCKUP, "viewport": {"width": 4000, "height": 100}}
    wide = _failed(client, "mockup_render", oversized)
    assert wide["code"] == "LIMIT_EXCEEDED" and "1600x1200" in wide["message"], wide


def test_a_mockup_past_the_workspace_quota_is_refused_and_nothing_kept(
    make_agent: Callable[..., AgentClient],
) -> None:
    client = _agent(make_agent)
    workspace = Path(client.agent.workspace)
    # Control: under the quota, the mockup is kept.
    kept = _succeeded(client, "mockup_render", {"svg": SVG_MOCKUP})
    assert _kept(client, "mockups") == {Path(kept["path"]).name}
    # The workspace filled to a few hundred bytes under its quota: Chromium still draws
    # (with the workspace read-only), and keeping the PNG is refused in the quota's words.
    left = 300
    (workspace / "filler.bin").write_bytes(
        b"\0" * (QUOTA - workspace_usage(workspace).total - left)
    )
    refused = call_ended(client, "mockup_render", {"svg": SVG_MOCKUP.replace("20,160,60", "1,2,3")})
    assert refused["status"] == "failed", refused
    assert refused["error"]["code"] == "LIMIT_EXCEEDED", refused
    assert "workspace_quota" in refused["error"]["message"], refused
    assert _kept(client, "mockups") == {Path(kept["path"]).name}
    assert workspace_usage(workspace).total <= QUOTA
    assert not AuditEvent.objects.filter(
        invocation_id=refused["id"], kind="design.mockup_render"
    ).exists()


def test_a_mockup_cannot_reach_the_network(
    make_agent: Callable[..., AgentClient], elsewhere: LoopbackHttpServer
) -> None:
    client = _agent(make_agent)
    target = elsewhere.url
    attack = f"""<!doctype html><html><head>
<link rel="stylesheet" href="{target("/style.css")}">
<link rel="prefetch" href="{target("/prefetch")}">
<meta http-equiv="refresh" content="0; url={target("/refresh")}">
<style>@import url("{target("/imported.css")}");
body {{ background: rgb(250, 250, 250) url("{target("/background.png")}"); }}</style>
</head><body><img src="{target("/pixel.png")}">
<iframe src="{target("/frame.html")}"></iframe>
<script>fetch("{target("/script")}"); document.body.style.background = "red";</script>
<p>visible</p></body></html>"""
    result = _succeeded(client, "mockup_render", {"html": attack})
    blocked = {item["url"] for item in result["blocked_requests"]}
    assert {target("/style.css"), target("/pixel.png"), target("/frame.html")} <= blocked
    # Nothing reached the server, and the page's script never ran.
    assert elsewhere.requests == []
    assert _picture(client, result).convert("RGB").getpixel((600, 700)) == (250, 250, 250)
    assert target("/script") not in blocked
    row = AuditEvent.objects.get(kind="design.mockup_render", agent_id=client.agent.id)
    assert {item["url"] for item in row.data["blocked_requests"]} == blocked
