"""git_clone and git_push with a sealed ``credential``, through the public API, a real
worker, the namespace sandbox and a git server of the test's own (``git http-backend``
over HTTPS on loopback) that demands Basic credentials, as git hosts do.

git in the sandbox never holds the value: the call's arguments carry the reference, and
the console's egress proxy adds ``Authorization: Basic`` to the requests to the host the
grant names. Controls: without the credential, and with a grant for another host, the
server refuses and nothing of the value reaches it or the agent.
"""

from __future__ import annotations

import base64
import ssl
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from audit_app.models import AuditEvent
from common.testing import RunningProcess
from secrets_app.services import secret_grant, secret_set
from tests.secrets_app.test_http_secret import ADMIN
from tests.tools_app.api import conftest as api_fixtures
from tests.tools_app.api.conftest import AgentClient
from tests.tools_app.builtin.git_fixtures import (
    SmartGitServer,
    git,
    make_repo,
    publish_pushable,
)
from trust_app.models import AgentPermissions

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

make_agent = api_fixtures.make_agent
USER = "x-access-token"


@pytest.fixture(autouse=True)
def _worker(celery_worker_process: RunningProcess) -> RunningProcess:
    return celery_worker_process


@pytest.fixture
def value() -> str:
    return f"ghp_{uuid.uuid4().hex}{uuid.uuid4().hex[:8]}"


def _basic(value: str) -> str:
    return "Basic " + base64.b64encode(f"{USER}:{value}".encode()).decode()


@pytest.fixture
def hosts(
    loopback_tls: tuple[Path, Path], tmp_path: Path, value: str
) -> Iterator[tuple[SmartGitServer, SmartGitServer, Path]]:
    """The granted git host and another one, both demanding the same credential."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(*loopback_tls)
    source = make_repo(tmp_path / "source")
    granted_root, other_root = tmp_path / "granted", tmp_path / "other"
    granted_root.mkdir()
    other_root.mkdir()
    bare = publish_pushable(source, granted_root, "project.git")
    publish_pushable(source, other_root, "project.git")
    with (
        SmartGitServer(granted_root, tls=context, authorization=_basic(value)) as granted,
        SmartGitServer(other_root, tls=context, authorization=_basic(value)) as other,
    ):
        yield granted, other, bare


def _builder(make_agent: Callable[..., AgentClient], ports: list[int]) -> AgentClient:
    """Open network (git_push reads its remote from the repository, so it has no URL
    argument for an allowlist-only policy to check); the loopback hosts are trusted."""
    client = make_agent("elevated", autonomy="full")
    AgentPermissions.objects.create(
        agent=client.agent,
        sub_constraints={
            "network": "open",
            "allowed_hosts": [f"127.0.0.1:{port}" for port in ports],
        },
    )
    return client


def _call(client: AgentClient, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    response = client.call(tool, arguments, idempotency_key=uuid.uuid4().hex, wait=60)
    assert response.status_code in (200, 201), response.text
    answer = response.json()
    for _ in range(5):  # a loaded machine: wait as long as a person would
        if answer["status"] not in ("queued", "running"):
            break
        answer = client.get(answer["id"], wait=60).json()
    return answer


def _grant(client: AgentClient, name: str, value: str, port: int) -> str:
    secret_set(name=name, value=value, actor=ADMIN)
    for tool in ("git_clone", "git_push"):
        secret_grant(
            name=name,
            agent=client.agent,
            tool=tool,
            hosts=[f"127.0.0.1:{port}"],
            inject=f"basic:{USER}",
            actor=ADMIN,
        )
    return f"${{secret:{name}}}"


def _text(answer: dict[str, Any]) -> str:
    return repr(answer.get("result")) + repr(answer.get("error"))


def test_a_sealed_credential_clones_and_pushes_and_git_never_holds_it(
    make_agent: Callable[..., AgentClient],
    hosts: tuple[SmartGitServer, SmartGitServer, Path],
    value: str,
    loopback_tls: tuple[Path, Path],
) -> None:
    granted, other, bare = hosts
    client = _builder(make_agent, [granted.port, other.port])
    name = f"GIT_{uuid.uuid4().hex[:8].upper()}"
    reference = _grant(client, name, value, granted.port)

    # Control: the server demands the credential (asked directly, as any client would).
    refs = granted.url("project.git/info/refs?service=git-upload-pack")
    trusted = ssl.create_default_context(cafile=str(loopback_tls[0]))
    assert httpx.get(refs, verify=trusted).status_code == 401
    assert httpx.get(refs, verify=trusted, headers={
        "Authorization": _basic(value)}).status_code == 200  # fmt: skip
    # Without the credential, git's own TLS meets the host: nothing sealed, nothing sent.
    bare_try = _call(client, "git_clone", {"url": granted.url("project.git"), "directory": "a"})
    assert bare_try["status"] == "failed", bare_try
    assert value not in _text(bare_try)
    seen = len(granted.authorizations)

    cloned = _call(
        client,
        "git_clone",
        {"url": granted.url("project.git"), "directory": "b", "credential": reference},
    )
    assert cloned["status"] == "succeeded", cloned["error"]
    assert _basic(value) in granted.authorizations[seen:]  # the proxy added it
    assert value not in _text(cloned)

    # What git left in the workspace holds no trace of the value.
    config = _call(client, "read_file", {"path": "b/.git/config"})
    assert config["status"] == "succeeded", config
    assert "127.0.0.1" in _text(config) and value not in _text(config)
    assert USER not in _text(config)

    # A commit pushed with the credential arrives in the bare repository.
    written = _call(client, "write_file", {"path": "b/NOTES.md", "content": "sealed push\n"})
    assert written["status"] == "succeeded", written
    committed = _call(
        client, "git_commit", {"path": "b", "message": "notes", "paths": ["NOTES.md"]}
    )
    assert committed["status"] == "succeeded", committed
    pushed = _call(client, "git_push", {"path": "b", "branch": "main", "credential": reference})
    assert pushed["status"] == "succeeded", pushed["error"]
    assert value not in _text(pushed)
    assert git(bare, "log", "-1", "--format=%s", "main").strip() == "notes"

    # The other host demands the same credential, but the grant does not name it.
    elsewhere = _call(
        client,
        "git_clone",
        {"url": other.url("project.git"), "directory": "c", "credential": reference},
    )
    assert elsewhere["status"] == "failed", elsewhere
    assert _basic(value) not in other.authorizations
    assert value not in _text(elsewhere)

    # Each sealed connection names the secret in the record, never its value.
    for answer, port in ((cloned, granted.port), (pushed, granted.port)):
        egress = [
            event.data
            for event in AuditEvent.objects.filter(
                invocation_id=answer["id"], kind="egress.connection"
            )
        ]
        assert any(d.get("secrets") == [name] and d["port"] == port for d in egress), egress
    rows = AuditEvent.objects.filter(agent_id=client.agent.id)
    assert rows.count() > 0
    assert not any(value in repr(row.data) for row in rows)


def test_a_credential_outside_its_slot_or_ungranted_is_refused(
    make_agent: Callable[..., AgentClient],
    hosts: tuple[SmartGitServer, SmartGitServer, Path],
    value: str,
) -> None:
    granted, _other, _bare = hosts
    client = _builder(make_agent, [granted.port])
    name = f"GIT_{uuid.uuid4().hex[:8].upper()}"
    reference = _grant(client, name, value, granted.port)
    # In the URL instead of the credential slot: refused at submission.
    response = client.call(
        "git_clone",
        {"url": granted.url(f"project.git?{reference}"), "directory": "d"},
        idempotency_key=uuid.uuid4().hex,
    )
    assert response.status_code == 400, response.text
    # A secret never granted to this agent: refused at submission, nothing sent.
    before = len(granted.requests)
    refused = client.call(
        "git_clone",
        {"url": granted.url("project.git"), "directory": "e", "credential": "${secret:NOPE}"},
        idempotency_key=uuid.uuid4().hex,
    )
    assert refused.status_code == 403, refused.text
    assert "arguments.credential" in refused.text
    assert len(granted.requests) == before
    # Control: the granted credential in its slot clones.
    cloned = _call(
        client,
        "git_clone",
        {"url": granted.url("project.git"), "directory": "f", "credential": reference},
    )
    assert cloned["status"] == "succeeded", cloned["error"]
    assert len(granted.requests) > before
