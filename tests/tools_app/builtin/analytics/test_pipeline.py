"""The analytics tools end to end: a daphne and a worker whose config has an ``analytics``
section, and a real Prometheus (Debian's) on loopback, scraping itself behind basic
auth, as the metrics connection.

chart_render and report_build run matplotlib and Jinja2 inside the namespace
sandbox and write into the agent's workspace. Every refusal has its control beside
it: the same agent doing the allowed thing.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import shutil
import uuid
import warnings
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from audit_app.models import AuditEvent
from audit_app.record import Actor
from common.testing import free_port, require, running, wait_until
from secrets_app.services import secret_set
from tests.support.pipeline import Pipeline, call_ended, configured_pipeline
from tests.tools_app.api import conftest as api_fixtures
from tests.tools_app.api.conftest import AgentClient
from tools_app.models import Invocation
from trust_app.models import AgentPermissions

with warnings.catch_warnings():
    # bcrypt for Prometheus's web config from the system's libxcrypt, no extra package.
    warnings.simplefilter("ignore", DeprecationWarning)
    import crypt

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

make_agent = api_fixtures.make_agent
ADMIN = Actor.system("test admin")
REDIS_DB = 12
SECRET = "PROMETHEUS_PASSWORD"
USER = "synthorg"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def prometheus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """Prometheus on loopback, every endpoint behind basic auth, scraping itself each second."""
    binary = shutil.which("prometheus")
    require(binary is not None, "prometheus (Debian package prometheus) is not installed")
    assert binary is not None
    root = tmp_path_factory.mktemp("prometheus")
    port = free_port()
    password = secrets.token_urlsafe(24)
    hashed = crypt.crypt(password, crypt.mksalt(crypt.METHOD_BLOWFISH, rounds=16))
    (root / "web.yml").write_text(json.dumps({"basic_auth_users": {USER: hashed}}))
    (root / "prometheus.yml").write_text(
        json.dumps(
            {
                "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
                "scrape_configs": [
                    {
                        "job_name": "prometheus",
                        "basic_auth": {"username": USER, "password": password},
                        "static_configs": [{"targets": [f"127.0.0.1:{port}"]}],
                    }
                ],
            }
        )
    )
    argv = [
        binary,
        f"--config.file={root / 'prometheus.yml'}",
        f"--web.config.file={root / 'web.yml'}",
        f"--storage.tsdb.path={root / 'data'}",
        f"--web.listen-address=127.0.0.1:{port}",
    ]
    url = f"http://127.0.0.1:{port}"
    with running(argv, env={"PATH": "/usr/bin:/bin"}, log_path=root / "prometheus.log") as server:

        def scraped() -> bool:
            assert server.process.poll() is None, server.output()[-3000:]
            try:
                answer = httpx.get(
                    url + "/api/v1/query", params={"query": "up"}, auth=(USER, password), timeout=5
                ).json()
            except (httpx.HTTPError, ValueError):
                return False
            return bool(answer.get("data", {}).get("result"))

        wait_until(scraped, timeout=90, what="Prometheus to scrape itself once")
        yield {"url": url, "password": password}


@pytest.fixture(scope="module")
def pipeline(
    test_env: dict[str, str],
    tmp_path_factory: pytest.TempPathFactory,
    prometheus: dict[str, Any],
) -> Iterator[Pipeline]:
    config = {
        "connections": [
            {
                "name": "metrics",
                "base_url": prometheus["url"],
                "auth": {"secret": SECRET, "scheme": f"basic:{USER}"},
                "private_network": True,
                "operations": [
                    {"method": "GET", "path": "/api/v1/query"},
                    {"method": "GET", "path": "/api/v1/query_range"},
                ],
            }
        ],
        "analytics": {
            "metrics": {"connection": "metrics", "max_series": 3},
            "reports": {"timeout_seconds": 8, "max_output_bytes": 64 * 1024},
        },
    }
    root = tmp_path_factory.mktemp("analytics")
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
def credential(prometheus: dict[str, Any]) -> str:
    secret_set(name=SECRET, value=prometheus["password"], actor=ADMIN)
    return str(prometheus["password"])


def _agent(make: Callable[..., AgentClient], grants: list[str] | None = None) -> AgentClient:
    client = make("standard", autonomy="full")
    if grants is not None:
        AgentPermissions.objects.create(agent=client.agent, sub_constraints={"connections": grants})
    return client


def _succeeded(client: AgentClient, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    answer = call_ended(client, tool, arguments)
    assert answer["status"] == "succeeded", answer.get("error")
    structured: dict[str, Any] = answer["result"]["structured"]
    return structured


def _failed(client: AgentClient, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    answer = call_ended(client, tool, arguments)
    assert answer["status"] == "failed", (answer["status"], answer.get("error"))
    error: dict[str, Any] = answer["error"]
    return error


def _stored(client: AgentClient, file: dict[str, Any]) -> bytes:
    """The file's bytes as the workspace holds them, checked against the reported digest."""
    data = (Path(client.agent.workspace) / file["path"]).read_bytes()
    assert hashlib.sha256(data).hexdigest() == file["sha256"] and len(data) == file["bytes"]
    return data


def test_metrics_query_asks_prometheus_with_the_consoles_credential(
    make_agent: Callable[..., AgentClient], credential: str, prometheus: dict[str, Any]
) -> None:
    client = _agent(make_agent, ["metrics"])
    # Prometheus answers nobody without the credential.
    unauthorised = httpx.get(prometheus["url"] + "/api/v1/query", params={"query": "up"})
    assert unauthorised.status_code == 401

    now = _succeeded(client, "metrics_query", {"query": 'up{job="prometheus"}'})
    # Prometheus answered only because the console added the credential.
    assert now["result_type"] == "vector", now
    assert now["series"][0]["metric"]["job"] == "prometheus"
    assert now["series"][0]["values"][0][1] == "1"

    over = _succeeded(client, "metrics_query", {"query": "up", "range": "2m"})
    assert over["result_type"] == "matrix" and len(over["series"][0]["values"]) >= 1, over

    # Bounded: many series are cut to analytics.metrics.max_series, and it says so.
    many = _succeeded(client, "metrics_query", {"query": '{__name__=~"prometheus_.+"}'})
    assert len(many["series"]) == 3 and many["truncated"] is True

    # Prometheus's own refusal of a malformed query comes back in its words.
    bad = _failed(client, "metrics_query", {"query": "up{"})
    assert bad["code"] == "QUERY_FAILED" and "bad_data" in bad["message"], bad

    # The agent never held the credential; each query has its audit row.
    invocations = Invocation.objects.filter(agent=client.agent)
    stored = json.dumps(
        list(invocations.values("arguments", "content", "raw_content", "structured")), default=str
    )
    assert credential not in stored
    rows = AuditEvent.objects.filter(kind="analytics.metrics_query", agent_id=client.agent.id)
    assert {row.outcome for row in rows} == {"answered", "failed"}
    assert any(row.data["path"] == "/api/v1/query_range" for row in rows)

    # A metrics_query result charts as it is, against time.
    chart = _succeeded(client, "chart_render", {"data": over, "kind": "line", "title": "up"})
    assert _stored(client, chart["png"]).startswith(PNG_MAGIC)


def test_metrics_query_needs_the_connection_granted(
    make_agent: Callable[..., AgentClient], credential: str
) -> None:
    stranger = _agent(make_agent, ["elsewhere"])
    response = stranger.call("metrics_query", {"query": "up"}, idempotency_key=uuid.uuid4().hex)
    answer = response.json()
    assert answer["status"] == "denied", answer
    assert answer["decision"]["rule"] == "connection_not_granted", answer
    # Control: granted the connection's query operation alone, the same query runs.
    granted = _agent(make_agent, ["metrics:GET /api/v1/query"])
    assert _succeeded(granted, "metrics_query", {"query": "up"})["series"]


def test_chart_render_writes_png_and_svg_from_rows_and_workspace_files(
    make_agent: Callable[..., AgentClient],
) -> None:
    client = _agent(make_agent)
    workspace = Path(client.agent.workspace)
    rows = [
        {"month": "Jan", "revenue": 10, "cost": 7},
        {"month": "Feb", "revenue": 12.5, "cost": 8},
    ]
    # A title that would be TeX to mathtext, and markup that must not reach the SVG.
    title = r"Revenue $\frac{a}{b}$ </svg><script>alert(1)</script>"
    inline = _succeeded(
        client,
        "chart_render",
        {"data": rows, "kind": "bar", "x": "month", "y": ["revenue", "cost"], "title": title},
    )
    assert inline["series"] == 2 and inline["points"] == 4
    assert inline["png"]["path"].startswith(".synthorg/charts/")
    assert _stored(client, inline["png"]).startswith(PNG_MAGIC)
    svg = ET.fromstring(_stored(client, inline["svg"]))
    assert svg.tag.endswith("svg")
    assert not [e for e in svg.iter() if e.tag.endswith("script")]

    (workspace / "sales.csv").write_text("day,units\n1,3\n2,5\n3,4\n")
    from_file = _succeeded(
        client, "chart_render", {"path": "sales.csv", "kind": "line", "x": "day", "y": "units"}
    )
    assert from_file["points"] == 3 and _stored(client, from_file["svg"])

    # Attacks on the path, each refused as read_file refuses it: a symlink and a hard
    # link to a file outside the workspace, and '..'.
    outside = workspace.parent / f"outside-{uuid.uuid4().hex[:8]}.csv"
    outside.write_text("day,units\nOUTSIDE-ROW,3\n")
    os.chmod(outside, 0o644)
    try:
        (workspace / "linked.csv").symlink_to(outside)
        os.link(outside, workspace / "hard.csv")
        for path in ("linked.csv", "hard.csv", f"../{outside.name}"):
            arguments = {"path": path, "kind": "line", "x": "day", "y": "units"}
            answer = call_ended(client, "chart_render", arguments)
            # Denied when decided (the path's policy), or refused by the file runner.
            assert answer["status"] in ("denied", "failed"), (path, answer)
            if answer["status"] == "failed":
                assert answer["error"]["code"] == "PATH_NOT_REACHABLE", (path, answer)
            assert "OUTSIDE-ROW" not in json.dumps(answer)
    finally:
        outside.unlink()

    # A planted link where the charts go: nothing is written through it.
    charts = workspace / ".synthorg" / "charts"
    shutil.rmtree(charts)
    charts.symlink_to("/tmp")
    planted = _failed(
        client, "chart_render", {"data": rows, "kind": "bar", "x": "month", "y": "cost"}
    )
    assert planted["code"] == "PATH_NOT_REACHABLE", planted

    # Bounded: a value that is not a number is refused naming where it is.
    bad = _failed(
        client,
        "chart_render",
        {"data": [{"m": "Jan", "v": "ten"}], "kind": "bar", "x": "m", "y": "v"},
    )
    assert bad["code"] == "INVALID_ARGUMENT" and "row 1" in bad["message"], bad


def test_report_build_renders_in_a_sandboxed_engine(
    make_agent: Callable[..., AgentClient],
) -> None:
    client = _agent(make_agent)
    data = {"title": "Week 12", "rows": [{"name": "<script>x</script>", "value": 42}]}
    template = "# {{ title }}\n{% for r in rows %}- {{ r.name }}: {{ r.value }}\n{% endfor %}"
    markdown = _succeeded(
        client, "report_build", {"template": template, "data": data, "name": "weekly"}
    )
    assert (
        markdown["path"].startswith(".synthorg/reports/weekly-")
        and markdown["format"] == "markdown"
    )
    assert _stored(client, markdown).decode() == "# Week 12\n- <script>x</script>: 42\n"

    # The same from files in the workspace, read as read_file reads them.
    workspace = Path(client.agent.workspace)
    (workspace / "weekly.md.j2").write_text(template)
    (workspace / "weekly.json").write_text(json.dumps(data))
    from_files = _succeeded(
        client, "report_build", {"template_path": "weekly.md.j2", "data_path": "weekly.json"}
    )
    assert from_files["sha256"] == markdown["sha256"], from_files

    html = _succeeded(
        client,
        "report_build",
        {
            "template": "<h1>{{ title }}</h1><p>{{ rows[0].name }}</p>",
            "data": data,
            "format": "html",
        },
    )
    assert _stored(client, html).decode() == (
        "<h1>Week 12</h1><p>&lt;script&gt;x&lt;/script&gt;</p>"
    )

    # Attacks: Python internals, a huge value, an endless amount of output, and a loop
    # that writes nothing but never ends; each stopped, nothing written.
    before = set((Path(client.agent.workspace) / ".synthorg" / "reports").iterdir())
    unsafe = _failed(client, "report_build", {"template": "{{ ''.__class__.__mro__ }}"})
    assert unsafe["code"] == "TEMPLATE_UNSAFE", unsafe
    globals_ = _failed(client, "report_build", {"template": "{{ cycler.__init__.__globals__ }}"})
    assert globals_["code"] == "TEMPLATE_UNSAFE", globals_
    huge = _failed(client, "report_build", {"template": "{{ 'x' * 1000000000 }}"})
    assert huge["code"] == "TEMPLATE_UNSAFE", huge
    flood = "{% for i in range(100000) %}{% for j in range(100000) %}xx{% endfor %}{% endfor %}"
    assert _failed(client, "report_build", {"template": flood})["code"] == "LIMIT_EXCEEDED"
    silent = "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}"
    endless = call_ended(client, "report_build", {"template": silent})
    assert endless["status"] == "timed_out", endless
    assert set((Path(client.agent.workspace) / ".synthorg" / "reports").iterdir()) == before
