"""Sealed secrets through the public API, a real worker and the namespace sandbox.

An agent's program (code_runner) asks for a secret in ``secret_env``: it holds only
the reference as a placeholder, and the console's egress proxy adds the value to its
requests to the hosts the grant names, over plain HTTP and over HTTPS (the sandbox
trusts the console's authority; the proxy verifies the real server). The servers are
the test's own on loopback; they answer "authorized" only to the real value (the
positive control). Every way the program could hand the value to the agent (print,
files, reversed, encoded, exit codes) finds nothing to hand over; a host the grant
does not name gets the placeholder.
"""

from __future__ import annotations

import base64
import json
import ssl
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from approvals_app.models import ApprovalRequest
from approvals_app.services import approval_decide
from audit_app.models import AuditEvent
from common.errors import InvalidArgumentError
from common.testing import RunningProcess
from secrets_app.models import SecretGrant
from secrets_app.services import secret_grant, secret_set
from tests.secrets_app.test_http_secret import ADMIN, _leaks
from tests.tools_app.api import conftest as api_fixtures
from tests.tools_app.api.conftest import AgentClient
from tests.tools_app.net.servers import LoopbackHttpServer, RecordedRequest, Reply
from tools_app.models import Invocation
from trust_app.models import AgentPermissions
from trust_app.services.agents import person_create

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

make_agent = api_fixtures.make_agent

PROGRAM = """
import os, sys, urllib.request
token = os.environ.get("DEPLOY_TOKEN")
print("env", token)
for url in {urls!r}:
    request = urllib.request.Request(url, headers={{"Authorization": "Bearer " + str(token)}})
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            print("got", url, answer.status, answer.read().decode())
    except Exception as exc:
        print("error", url, exc)
with open("token.txt", "w") as handle:
    handle.write(str(token))
with open("token-reversed.txt", "w") as handle:
    handle.write(str(token)[::-1])
"""


@pytest.fixture(autouse=True)
def _worker(celery_worker_process: RunningProcess) -> RunningProcess:
    return celery_worker_process


def _authorizing(value: str) -> Callable[[RecordedRequest], Reply]:
    def answer(request: RecordedRequest) -> Reply:
        sent = [v for k, v in request.headers if k.lower() == "authorization"]
        if sent == [f"Bearer {value}"]:
            return Reply(200, body=b"authorized")
        return Reply(401, body=b"not authorized")

    return answer


@pytest.fixture
def servers(loopback_tls: tuple[Path, Path]) -> Iterator[dict[str, LoopbackHttpServer]]:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(*loopback_tls)
    with (
        LoopbackHttpServer() as plain,
        LoopbackHttpServer(tls=context) as secure,
        LoopbackHttpServer() as other,
    ):
        yield {"plain": plain, "secure": secure, "other": other}


def _runner(make_agent: Callable[..., AgentClient], ports: list[int]) -> AgentClient:
    client = make_agent("elevated", autonomy="full")
    AgentPermissions.objects.create(
        agent=client.agent,
        sub_constraints={
            "code_execution": "namespace",
            "network": "allowlist_only",
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


def test_a_sealed_secret_reaches_the_granted_servers_and_the_program_never_holds_it(
    make_agent: Callable[..., AgentClient], servers: dict[str, LoopbackHttpServer]
) -> None:
    plain, secure, other = servers["plain"], servers["secure"], servers["other"]
    client = _runner(make_agent, [plain.port, secure.port, other.port])
    name = f"DEPLOY_{uuid.uuid4().hex[:8].upper()}"
    value = f"dk-{uuid.uuid4().hex}{uuid.uuid4().hex}"
    for server in (plain, secure, other):
        server.route("/api", _authorizing(value))
    secret_set(name=name, value=value, actor=ADMIN)
    secret_grant(
        name=name,
        agent=client.agent,
        tool="code_runner",
        hosts=[f"127.0.0.1:{plain.port}", f"127.0.0.1:{secure.port}"],
        actor=ADMIN,
    )
    reference = f"${{secret:{name}}}"
    urls = [plain.url("/api"), secure.url("/api"), other.url("/api")]
    answer = _call(
        client,
        "code_runner",
        {
            "language": "python",
            "code": PROGRAM.format(urls=urls),
            "secret_env": {"DEPLOY_TOKEN": reference},
        },
    )
    assert answer["status"] == "succeeded", answer
    content = answer["result"]["content"]
    # Positive control: both granted servers got the value, over HTTP and HTTPS.
    assert f"got {urls[0]} 200 authorized" in content, content
    assert f"got {urls[1]} 200 authorized" in content, content
    assert [v for k, v in plain.requests[0].headers if k.lower() == "authorization"] == [
        f"Bearer {value}"
    ]
    # The host the grant does not name got the placeholder, and said so.
    assert f"{urls[2]}" in content and "401" in content, content
    assert [v for k, v in other.requests[0].headers if k.lower() == "authorization"] == [
        f"Bearer {reference}"
    ]
    # The program itself held the placeholder only.
    assert f"env {reference}" in content, content
    assert not _leaks(value, json.dumps(answer))
    stored = Invocation.objects.get(id=answer["id"])
    assert not _leaks(value, stored.raw_content + json.dumps(stored.structured))

    # Files the program wrote, read back plain, reversed and base64 by the agent.
    for path in ("token.txt", "token-reversed.txt"):
        read = _call(client, "read_file", {"path": path})
        assert read["status"] == "succeeded", read
        text = json.dumps(read)
        assert not _leaks(value, text) and value[::-1] not in text, read
    encoded = _call(
        client,
        "code_runner",
        {
            "language": "python",
            "code": "import base64\ndata = open('token.txt', 'rb').read()\n"
            "print(base64.b64encode(data).decode(), data[::-1].decode(), data.hex())",
        },
    )
    assert encoded["status"] == "succeeded", encoded
    text = encoded["result"]["content"]
    assert base64.b64encode(reference.encode()).decode() in text  # the control: it ran
    for form in (
        value,
        value[::-1],
        base64.b64encode(value.encode()).decode(),
        value.encode().hex(),
    ):
        assert form not in text, text

    # Every sealed request is in the record with its host and the secret's name.
    egress = [
        e.data
        for e in AuditEvent.objects.filter(invocation_id=answer["id"], kind="egress.connection")
    ]
    sealed = [d for d in egress if d.get("secrets")]
    assert {d["port"] for d in sealed} == {plain.port, secure.port}, egress
    assert all(d["secrets"] == [name] and d["sealed_requests"] == 1 for d in sealed), sealed


def test_one_character_per_call_through_the_exit_code_leaks_only_the_placeholder(
    make_agent: Callable[..., AgentClient], servers: dict[str, LoopbackHttpServer]
) -> None:
    plain = servers["plain"]
    client = _runner(make_agent, [plain.port])
    name = f"CHAR_{uuid.uuid4().hex[:8].upper()}"
    value = f"ck-{uuid.uuid4().hex}"
    secret_set(name=name, value=value, actor=ADMIN)
    secret_grant(
        name=name,
        agent=client.agent,
        tool="code_runner",
        hosts=[f"127.0.0.1:{plain.port}"],
        actor=ADMIN,
    )
    seen = ""
    for index in range(6):
        answer = _call(
            client,
            "code_runner",
            {
                "language": "python",
                "code": f"import os, sys\nsys.exit(ord(os.environ['T'][{index}]))",
                "secret_env": {"T": f"${{secret:{name}}}"},
            },
        )
        seen += chr(answer["result"]["exit_code"])
    assert seen == "${secr"  # the placeholder, character by character
    assert seen != value[:6]


def test_a_grant_for_a_program_names_its_hosts_and_an_old_unsealed_grant_refuses_the_call(
    make_agent: Callable[..., AgentClient], servers: dict[str, LoopbackHttpServer]
) -> None:
    plain = servers["plain"]
    client = _runner(make_agent, [plain.port])
    name = f"OLD_{uuid.uuid4().hex[:8].upper()}"
    value = f"ok-{uuid.uuid4().hex}{uuid.uuid4().hex}"
    secret_set(name=name, value=value, actor=ADMIN)
    with pytest.raises(InvalidArgumentError, match="names the hosts the value may go to"):
        secret_grant(name=name, agent=client.agent, tool="code_runner", actor=ADMIN)
    # A grant stored before values were sealed (no hosts): the call is refused, not run
    # with the value in the program's environment.
    secret_grant(
        name=name, agent=client.agent, tool="code_runner", hosts=["127.0.0.1"], actor=ADMIN
    )
    SecretGrant.objects.filter(secret__name=name).update(hosts=[], inject="")
    answer = _call(
        client,
        "code_runner",
        {
            "language": "python",
            "code": "import os\nprint(os.environ.get('T'))",
            "secret_env": {"T": f"${{secret:{name}}}"},
        },
    )
    assert answer["status"] == "failed", answer
    assert "without hosts" in answer["error"]["message"] and "--host" in answer["error"]["message"]
    assert not _leaks(value, json.dumps(answer))
    # Control: granted again with its host, the same call runs.
    secret_grant(
        name=name, agent=client.agent, tool="code_runner", hosts=["127.0.0.1"], actor=ADMIN
    )
    again = _call(
        client,
        "code_runner",
        {
            "language": "python",
            "code": "import os\nprint(os.environ.get('T'))",
            "secret_env": {"T": f"${{secret:{name}}}"},
        },
    )
    assert again["status"] == "succeeded", again
    assert f"${{secret:{name}}}" in again["result"]["content"]


def test_an_injection_variable_is_refused_before_the_program_runs(
    make_agent: Callable[..., AgentClient], servers: dict[str, LoopbackHttpServer]
) -> None:
    plain = servers["plain"]
    client = _runner(make_agent, [plain.port])
    name = f"PRELOAD_{uuid.uuid4().hex[:8].upper()}"
    secret_set(name=name, value="/tmp/not-a-library.so", actor=ADMIN)
    secret_grant(
        name=name, agent=client.agent, tool="code_runner", hosts=["127.0.0.1"], actor=ADMIN
    )
    code = "import os\nprint('ran', os.environ.get('DEPLOY_TOKEN'))"
    answer = _call(
        client,
        "code_runner",
        {"language": "python", "code": code, "secret_env": {"LD_PRELOAD": f"${{secret:{name}}}"}},
    )
    assert answer["status"] == "failed", answer
    assert "secret_env cannot set LD_PRELOAD" in answer["error"]["message"], answer
    # Positive control: the same secret under an ordinary name runs (as a placeholder).
    done = _call(
        client,
        "code_runner",
        {"language": "python", "code": code, "secret_env": {"DEPLOY_TOKEN": f"${{secret:{name}}}"}},
    )
    assert done["status"] == "succeeded", done
    assert "ran ${secret:" in done["result"]["content"], done


def test_every_stored_secret_is_redacted_from_any_result_at_any_time(
    make_agent: Callable[..., AgentClient],
) -> None:
    """The second wall: a value that reached a workspace some other way (no grant,
    no call using it) is redacted from file reads and listings, plain and encoded."""
    client = _runner(make_agent, [])
    name = f"STORED_{uuid.uuid4().hex[:8].upper()}"
    value = f"st-{uuid.uuid4().hex}{uuid.uuid4().hex}"
    control = f"ct-{uuid.uuid4().hex}{uuid.uuid4().hex}"  # same shape, not a secret
    secret_set(name=name, value=value, actor=ADMIN)
    workspace = Path(client.agent.workspace)
    encoded = base64.b64encode(value.encode()).decode()
    (workspace / "leak.txt").write_text(f"plain {value}\nb64 {encoded}\ncontrol {control}\n")
    (workspace / f"named-{value}.txt").write_text("x")
    read = _call(client, "read_file", {"path": "leak.txt"})
    assert read["status"] == "succeeded", read
    text = json.dumps(read)
    assert value not in text and encoded not in text, read
    assert control in text, read  # the control is shown as it is
    listing = _call(client, "list_directory", {"path": "."})
    assert listing["status"] == "succeeded", listing
    assert value not in json.dumps(listing), listing
    assert "leak.txt" in json.dumps(listing)
    # A value set after the process first read them is known within moments.
    later = f"lt-{uuid.uuid4().hex}{uuid.uuid4().hex}"
    secret_set(name=name, value=later, actor=ADMIN)
    (workspace / "later.txt").write_text(f"later {later}\n")
    again = _call(client, "read_file", {"path": "later.txt"})
    assert later not in json.dumps(again), again
    stored = Invocation.objects.get(id=again["id"])
    assert later not in stored.raw_content


def test_the_card_says_where_a_sealed_value_goes_and_how(
    make_agent: Callable[..., AgentClient], servers: dict[str, LoopbackHttpServer]
) -> None:
    """A person deciding a call with a sealed secret reads, on the card, the secret's
    name, the hosts the console will add it to and the form it takes there, and that
    the program never holds it; the card follows the grant as it is now."""
    secure = servers["secure"]
    client = make_agent("elevated", autonomy="supervised")
    AgentPermissions.objects.create(
        agent=client.agent,
        sub_constraints={
            "code_execution": "namespace",
            "network": "allowlist_only",
            "allowed_hosts": [f"127.0.0.1:{secure.port}"],
        },
    )
    name = f"CARD_{uuid.uuid4().hex[:8].upper()}"
    value = f"ck-{uuid.uuid4().hex}"
    secure.route("/api", _authorizing(value))
    secret_set(name=name, value=value, actor=ADMIN)
    secret_grant(
        name=name,
        agent=client.agent,
        tool="code_runner",
        hosts=[f"127.0.0.1:{secure.port}"],
        inject="header:X-Deploy-Key",
        actor=ADMIN,
    )
    response = client.call(
        "code_runner",
        {
            "language": "python",
            "code": PROGRAM.format(urls=[secure.url("/api")]),
            "secret_env": {"DEPLOY_TOKEN": f"${{secret:{name}}}"},
        },
        idempotency_key=uuid.uuid4().hex,
    )
    assert response.status_code == 201, response.text
    assert response.json()["status"] == "pending_approval", response.text
    call_id = response.json()["id"]
    operator = person_create(username=f"op-{uuid.uuid4().hex[:6]}", role="operator", password=None)
    browser = Client()
    browser.force_login(operator)

    page = browser.get("/approvals/").content.decode()
    said = (
        f"<code>${{secret:{name}}}</code> in <code>arguments.secret_env.DEPLOY_TOKEN</code>, "
        f"sent by the console to <code>127.0.0.1:{secure.port}</code> only "
        "(as header:X-Deploy-Key)"
    )
    assert said in page, page[page.find("secrets-used") - 200 :][:1500]
    assert "the agent's program never holds it" in page
    assert not _leaks(value, page)

    # The card follows the grant as it is now: granted again for another host, it says so.
    secret_grant(
        name=name,
        agent=client.agent,
        tool="code_runner",
        hosts=["deploy.example.test"],
        inject="bearer",
        actor=ADMIN,
    )
    page = browser.get("/approvals/").content.decode()
    assert "sent by the console to <code>deploy.example.test</code> only (as bearer)" in page
    assert f"127.0.0.1:{secure.port}</code> only" not in page

    # Control: granted back and approved, the program's request carries the header.
    secret_grant(
        name=name,
        agent=client.agent,
        tool="code_runner",
        hosts=[f"127.0.0.1:{secure.port}"],
        inject="header:X-Deploy-Key",
        actor=ADMIN,
    )
    request = ApprovalRequest.objects.get(invocation_id=call_id)
    if request.status == "pending":
        approval_decide(request=request, person=operator, decision="approve", reason="")
    answer = client.get(call_id, wait=60).json()
    for _ in range(5):
        if answer["status"] not in ("queued", "running", "pending_approval"):
            break
        answer = client.get(call_id, wait=60).json()
    assert answer["status"] == "succeeded", answer
    sent = [r for r in secure.requests if r.path == "/api"]
    assert sent and sent[-1].header_values("X-Deploy-Key") == [value]
