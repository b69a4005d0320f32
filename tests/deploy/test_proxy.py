"""The shipped proxy config (docker/nginx/console.conf) run by Debian's own nginx in front
of two web nodes: it loads on that nginx, hands requests to the live node when the other
is down, and answers agents in the JSON envelope when no node answers.

Only the addresses change from the shipped file: the upstream nodes, the listening ports
and the certificate paths; every directive is the shipped one.
"""

from __future__ import annotations

import shutil
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from common.testing import BASE_DIR, free_port, running, wait_until
from tests.support.web_node import client_from, web_node
from trust_app.models import AgentToken
from trust_app.services.agents import agent_create

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

SHIPPED = BASE_DIR / "docker" / "nginx" / "console.conf"


def _certificate(directory: Path) -> tuple[Path, Path]:
    cert, key = directory / "console.crt", directory / "console.key"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
         "-subj", "/CN=127.0.0.1", "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True, timeout=60,
    )  # fmt: skip
    return cert, key


def _config(tmp: Path, nodes: list[int], tls: int, plain: int) -> Path:
    text = SHIPPED.read_text()
    text = text.replace("server web-1:8000", f"server 127.0.0.1:{nodes[0]}")
    text = text.replace("server web-2:8000", f"server 127.0.0.1:{nodes[1]}")
    text = text.replace("listen 443 ssl http2;", f"listen 127.0.0.1:{tls} ssl http2;")
    text = text.replace("listen 80;", f"listen 127.0.0.1:{plain};")
    cert, key = _certificate(tmp)
    text = text.replace("/etc/nginx/certs/console.crt", str(cert))
    text = text.replace("/etc/nginx/certs/console.key", str(key))
    assert text.count("127.0.0.1:") == 4, "the shipped file's addresses changed: update the test"
    (tmp / "console.conf").write_text(text)
    temp = tmp / "temp"
    temp.mkdir()
    main = tmp / "nginx.conf"
    main.write_text(
        f"""user root;
daemon off;
pid {tmp}/nginx.pid;
error_log {tmp}/error.log warn;
events {{}}
http {{
    access_log {tmp}/access.log;
    client_body_temp_path {temp}/body;
    proxy_temp_path {temp}/proxy;
    fastcgi_temp_path {temp}/fastcgi;
    uwsgi_temp_path {temp}/uwsgi;
    scgi_temp_path {temp}/scgi;
    include {tmp}/console.conf;
}}
"""
    )
    return main


@pytest.fixture
def proxy(daphne_server: str, tmp_path: Path) -> Iterator[tuple[str, list[int]]]:
    """nginx with the shipped config: node one is the session's web node, node two a
    port where nothing listens (a node that died). Yields the HTTPS base URL."""
    nginx = shutil.which("nginx") or "/usr/sbin/nginx"
    live = int(daphne_server.rsplit(":", 1)[1])
    nodes = [live, free_port()]
    tls, plain = free_port(), free_port()
    main = _config(tmp_path, nodes, tls, plain)
    checked = subprocess.run(
        [nginx, "-t", "-c", str(main)], capture_output=True, text=True, timeout=30
    )
    assert checked.returncode == 0, checked.stderr
    with running([nginx, "-c", str(main)], env={}, log_path=tmp_path / "nginx.out"):
        base = f"https://127.0.0.1:{tls}"
        wait_until(lambda: _answers(base), timeout=30, what="nginx")
        yield base, nodes


def _answers(base: str) -> bool:
    with httpx.Client(verify=False, timeout=5) as http:
        return http.get(base + "/healthz").status_code in (200, 503)


def _token() -> str:
    return agent_create(name=f"proxy-{uuid.uuid4().hex[:8]}", access_level="standard").token


def test_the_shipped_config_loads_on_debians_nginx_and_serves_through_a_dead_node(
    proxy: tuple[str, list[int]],
) -> None:
    base, _ = proxy
    headers = {"Authorization": f"Bearer {_token()}"}
    with httpx.Client(base_url=base, verify=False, headers=headers, timeout=30) as http:
        # Round robin meets the dead node on every other request: each is handed on.
        reads = [http.get("/api/v1/me/") for _ in range(6)]
        assert [r.status_code for r in reads] == [200] * 6, [r.text for r in reads]
        # A POST the dead node never received is handed on too, and recorded once.
        calls = [
            http.post(
                "/api/v1/invocations/", json={"tool": "read_file", "arguments": {"path": "x"}}
            )
            for _ in range(4)
        ]
        assert [c.status_code for c in calls] == [201] * 4, [c.text for c in calls]
        assert len({c.json()["id"] for c in calls}) == 4


def test_with_no_node_answering_agents_get_the_json_envelope(
    daphne_server: str, tmp_path: Path
) -> None:
    nginx = shutil.which("nginx") or "/usr/sbin/nginx"
    tls, plain = free_port(), free_port()
    main = _config(tmp_path, [free_port(), free_port()], tls, plain)
    with running([nginx, "-c", str(main)], env={}, log_path=tmp_path / "nginx.out"):
        base = f"https://127.0.0.1:{tls}"
        with httpx.Client(base_url=base, verify=False, timeout=30) as http:
            wait_until(lambda: http.get("/api/v1/me/").status_code == 503, timeout=30, what="nginx")
            for path in ("/api/v1/me/", "/mcp/", "/api/v1/invocations/"):
                answer = http.get(path)
                assert answer.status_code == 503, (path, answer.text)
                assert answer.headers["content-type"].startswith("application/json")
                assert answer.headers["Retry-After"] == "5"
                assert answer.json()["error"]["code"] == "unavailable"
            posted = http.post("/api/v1/invocations/", json={"tool": "read_file"})
            assert posted.status_code == 503 and posted.json()["error"]["code"] == "unavailable"
            # Control: a page for people keeps nginx's own answer (not JSON).
            page = http.get("/approvals/")
            assert page.status_code == 502
            assert "json" not in page.headers.get("content-type", "")


def test_the_console_sees_the_client_nginx_saw_never_the_clients_own_header(
    test_env: dict[str, str], tmp_path: Path
) -> None:
    """The shipped config replaces X-Forwarded-For with the address nginx took the
    connection from; a node trusting only nginx records that address."""
    nginx = shutil.which("nginx") or "/usr/sbin/nginx"
    with web_node(test_env, tmp_path, SYNTHORG_TRUSTED_PROXIES="127.0.0.1") as node:
        tls, plain = free_port(), free_port()
        main = _config(tmp_path, [int(node.rsplit(":", 1)[1]), free_port()], tls, plain)
        with running([nginx, "-c", str(main)], env={}, log_path=tmp_path / "nginx.out"):
            base = f"https://127.0.0.1:{tls}"
            wait_until(lambda: _answers(base), timeout=30, what="nginx")
            created = agent_create(name=f"proxy-{uuid.uuid4().hex[:8]}", access_level="standard")
            token = AgentToken.objects.get(agent=created.agent)
            bearer = {"Authorization": f"Bearer {created.token}"}
            for forged in ("203.0.113.7", "127.0.0.1", "198.51.100.1, 127.0.0.1"):
                AgentToken.objects.filter(pk=token.pk).update(last_used_address="")
                with client_from("127.40.0.9", base, verify=False) as http:
                    me = http.get("/api/v1/me/", headers={**bearer, "X-Forwarded-For": forged})
                    assert me.status_code == 200, me.text
                    # /metrics through the proxy is never "loopback", whatever is forged.
                    scraped = http.get("/metrics", headers={"X-Forwarded-For": forged})
                    assert scraped.status_code == 401, scraped.text[:200]
                token.refresh_from_db()
                assert token.last_used_address == "127.40.0.9", forged
        # Positive control: straight to the node from loopback, /metrics is served.
        with client_from("127.0.0.1", node) as http:
            assert http.get("/metrics").status_code == 200
