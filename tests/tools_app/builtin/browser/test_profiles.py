"""``browser.profile: per_agent_session``: an agent's calls share one browser profile.

Run directly on the real namespace sandbox with the real Redis: a workspace page stores
a value in the browser (local storage), a later call of the same agent reads it back;
another agent, a per-call profile, an ended or aged session and a switched-off agent
do not. The profile waits sealed, and one handed back from a sandbox is checked before
it is unpacked. Each attack has its control.
"""

from __future__ import annotations

import dataclasses
import io
import json
import tarfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pytest
from django.conf import settings
from django.db import transaction

from audit_app.record import Actor
from common.platform.redis import redis_client
from common.settings_config import config_reload, synthorg_config
from tests.tools_app.builtin.fs_fixtures import make_context
from tests.tools_app.net.servers import LoopbackHttpServer, RecordedRequest, Reply
from tools_app.builtin.base import ToolContext
from tools_app.builtin.browser.inside.driver import PROFILE_UNPACKED_BYTES
from tools_app.builtin.browser.profiles import PROFILE_PREFIX, profile_end, profile_keep
from tools_app.builtin.browser.tools import browser_navigate
from tools_app.egress.gateway import LocalEgressGateway
from tools_app.sandbox.backends.namespace import NamespaceSandbox
from tools_app.sandbox.protocol import Owner

pytestmark = [pytest.mark.integration]

# Stores a value in the browser (when it names one), then shows what is stored.
PAGE = """<title>Store</title><p id="out"></p><script>
const wanted = %s;
if (wanted) localStorage.setItem("note", wanted);
document.getElementById("out").textContent = "stored:" + (localStorage.getItem("note") || "none");
</script>"""


def _config(tmp_path: Path, **browser: Any) -> None:
    path = tmp_path / "synthorg.yaml"
    path.write_text(json.dumps({"browser": {"default_timeout_seconds": 60, **browser}}))
    settings.SYNTHORG_CONFIG = str(path)
    config_reload()


@pytest.fixture(autouse=True)
def per_agent(tmp_path: Path) -> Iterator[None]:
    _config(tmp_path, profile="per_agent_session")
    yield


@pytest.fixture
def agent_context(
    workspace: Path, ns_backend: NamespaceSandbox
) -> Iterator[Callable[..., ToolContext]]:
    """Contexts for agents of their own id (sessions ended after the test)."""
    made: list[str] = []

    def make(name: str) -> ToolContext:
        agent_id = f"profile-test-{name}-{time.monotonic_ns()}"
        made.append(agent_id)
        context = make_context(workspace, ns_backend)
        return dataclasses.replace(context, agent_id=agent_id, owner=Owner(agent_id))

    yield make
    for agent_id in made:
        profile_end(agent_id)


def _shown(context: ToolContext, value: str = "") -> str:
    """What the browser has stored, after storing ``value`` when one is given."""
    page = context.workspace / f"store-{value or 'read'}.html"
    page.write_text(PAGE % json.dumps(value))
    page.chmod(0o644)
    result = browser_navigate.run(context, {"url": f"file:///workspace/{page.name}"})
    assert result.structured is not None
    text: str = result.structured["text"]
    return text.split("stored:", 1)[1].split()[0]


def test_an_agents_calls_share_its_profile_and_no_other_agent_sees_it(
    agent_context: Callable[..., ToolContext],
) -> None:
    alice, bob = agent_context("alice"), agent_context("bob")
    assert _shown(alice, "alpha-42") == "alpha-42"
    # The same agent's next call, a fresh browser in a fresh sandbox, finds it.
    assert _shown(alice) == "alpha-42"
    # Another agent in the same workspace does not.
    assert _shown(bob) == "none"
    assert _shown(alice) == "alpha-42"
    # Ended, the session's profile is gone.
    profile_end(alice.agent_id)
    assert _shown(alice) == "none"


def test_a_per_call_profile_keeps_nothing(
    tmp_path: Path, agent_context: Callable[..., ToolContext]
) -> None:
    _config(tmp_path, profile="per_call")
    assert synthorg_config().browser is not None
    alice = agent_context("alice")
    assert _shown(alice, "beta-7") == "beta-7"
    assert _shown(alice) == "none"
    assert not redis_client().exists(PROFILE_PREFIX + alice.agent_id)
    # Control: the same calls with the session profile keep it.
    _config(tmp_path, profile="per_agent_session")
    assert _shown(alice, "beta-7") == "beta-7"
    assert _shown(alice) == "beta-7"


def test_the_kept_profile_is_sealed_and_lapses_when_idle(
    agent_context: Callable[..., ToolContext],
) -> None:
    alice = agent_context("alice")
    assert _shown(alice, "sealed-secret-value-991") == "sealed-secret-value-991"
    key = PROFILE_PREFIX + alice.agent_id
    kept: dict[bytes, bytes] = redis_client().hgetall(key)  # type: ignore[assignment]
    assert kept[b"profile"] and b"sealed-secret-value-991" not in kept[b"profile"]
    assert b"localStorage" not in kept[b"profile"] and not kept[b"profile"].startswith(b"\x1f\x8b")
    section = synthorg_config().browser
    assert section is not None
    assert 0 < redis_client().ttl(key) <= section.session_idle_seconds


def test_a_session_past_its_age_starts_afresh(
    agent_context: Callable[..., ToolContext],
) -> None:
    alice = agent_context("alice")
    assert _shown(alice, "gamma-3") == "gamma-3"
    key = PROFILE_PREFIX + alice.agent_id
    section = synthorg_config().browser
    assert section is not None
    redis_client().hset(key, "started", repr(time.time() - section.session_max_seconds - 5))
    assert _shown(alice) == "none"
    # Control: a new session began; it keeps what is stored again.
    assert _shown(alice, "gamma-4") == "gamma-4"
    assert _shown(alice) == "gamma-4"


def _tar(entries: list[tuple[tarfile.TarInfo, bytes]]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for info, data in entries:
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data) if info.isreg() else None)
    return buffer.getvalue()


def _bad_profile_starts_afresh(agent: ToolContext, packed: bytes, value: str) -> None:
    """Keep ``packed`` as the agent's profile: its next call starts afresh, and (the
    control) the profile that call keeps is sound, so the one after finds ``value``."""
    section = synthorg_config().browser
    assert section is not None
    profile_keep(agent.agent_id, section, packed)
    assert _shown(agent) == "none"
    assert _shown(agent, value) == value
    assert _shown(agent) == value


@pytest.mark.parametrize(
    "entry",
    [
        ("../escaped.txt", tarfile.REGTYPE),
        ("/etc/escaped.txt", tarfile.REGTYPE),
        ("Default/../../escaped.txt", tarfile.REGTYPE),
    ],
)
def test_a_profile_handed_back_with_a_climbing_entry_is_not_unpacked(
    agent_context: Callable[..., ToolContext], workspace: Path, entry: tuple[str, bytes]
) -> None:
    """A profile comes back from a sandbox, where a page's code may have run: one whose
    entries climb out is refused whole and the call starts afresh."""
    alice = agent_context("alice")
    name, kind = entry
    info = tarfile.TarInfo(name)
    info.type = kind
    link = tarfile.TarInfo("Default/link")
    link.type = tarfile.SYMTYPE
    link.linkname = "/workspace"
    _bad_profile_starts_afresh(alice, _tar([(link, b""), (info, b"escaped")]), "delta-1")
    assert not (workspace / "escaped.txt").exists()
    assert not list(workspace.parent.glob("escaped.txt"))


def test_a_profile_that_unpacks_past_its_ceiling_starts_afresh(
    agent_context: Callable[..., ToolContext],
) -> None:
    """A small tar of a file far larger than the ceiling (zeros pack tightly)."""
    bomb = tarfile.TarInfo("Default/bomb.bin")
    packed = _tar([(bomb, bytes(PROFILE_UNPACKED_BYTES + 1))])
    assert len(packed) < 1024 * 1024
    _bad_profile_starts_afresh(agent_context("alice"), packed, "eta")


def test_a_profile_that_is_not_a_tar_starts_afresh(
    agent_context: Callable[..., ToolContext],
) -> None:
    _bad_profile_starts_afresh(agent_context("alice"), b"not a profile at all" * 100, "epsilon")


@pytest.mark.django_db(transaction=True)
def test_switching_the_agent_off_ends_its_session(
    agent_context: Callable[..., ToolContext], workspace: Path
) -> None:
    from trust_app.agents_code.apply import agent_active_update
    from trust_app.services.agents import agent_create

    created = agent_create(
        name=f"profile-off-{time.monotonic_ns()}",
        access_level="standard",
        autonomy="full",
        workspace=str(workspace),
        actor=Actor.system("test"),
    )
    agent_id = str(created.agent.pk)
    context = dataclasses.replace(agent_context("off"), agent_id=agent_id, owner=Owner(agent_id))
    assert _shown(context, "zeta") == "zeta"
    assert redis_client().exists(PROFILE_PREFIX + context.agent_id)
    with transaction.atomic():
        agent_active_update(agent=created.agent, active=False, actor=Actor.system("test"))
    assert not redis_client().exists(PROFILE_PREFIX + context.agent_id)
    # Control: switched on again, the agent starts a new session.
    with transaction.atomic():
        agent_active_update(agent=created.agent, active=True, actor=Actor.system("test"))
    assert _shown(context) == "none"
    profile_end(context.agent_id)


def _whoami(request: RecordedRequest) -> Reply:
    cookies = "; ".join(request.header_values("cookie")) or "no-cookie"
    return Reply(200, HTML, f"<title>Who</title><p>cookie:{cookies}</p>".encode())


HTML = {"Content-Type": "text/html; charset=utf-8"}


@pytest.fixture
def site() -> Iterator[LoopbackHttpServer]:
    with LoopbackHttpServer() as server:
        login = {**HTML, "Set-Cookie": "sid=agent-session-5150; Path=/; HttpOnly"}
        server.route("/login", Reply(200, login, b"<title>In</title><p>signed in</p>"))
        server.route("/whoami", _whoami)
        yield server


def _networked(context: ToolContext, port: int) -> ToolContext:
    return dataclasses.replace(
        context,
        sub_constraints=MappingProxyType(
            {"network": "allowlist_only", "allowed_hosts": [f"127.0.0.1:{port}"]}
        ),
        egress=LocalEgressGateway(agent_name=context.agent_id),
    )


def _cookie(context: ToolContext, site: LoopbackHttpServer) -> str:
    result = browser_navigate.run(context, {"url": site.url("/whoami")})
    assert result.structured is not None
    text: str = result.structured["text"]
    return text.split("cookie:", 1)[1].strip()


def test_a_cookie_a_site_set_is_sent_on_the_agents_next_call_through_the_proxy(
    agent_context: Callable[..., ToolContext], site: LoopbackHttpServer
) -> None:
    alice = _networked(agent_context("alice"), site.port)
    bob = _networked(agent_context("bob"), site.port)
    assert _cookie(alice, site) == "no-cookie"
    signed_in = browser_navigate.run(alice, {"url": site.url("/login")})
    assert signed_in.structured is not None and "signed in" in signed_in.structured["text"]
    # A new browser in a new sandbox, the same agent: the site sees its cookie.
    assert _cookie(alice, site) == "sid=agent-session-5150"
    # Another agent's browser does not carry it.
    assert _cookie(bob, site) == "no-cookie"
    # The cookie waits sealed: Redis never holds its value.
    sealed = redis_client().hget(PROFILE_PREFIX + alice.agent_id, "profile")
    assert isinstance(sealed, bytes) and sealed
    assert b"agent-session-5150" not in sealed
