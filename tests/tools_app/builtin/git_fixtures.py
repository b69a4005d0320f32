"""Real repositories, a real sandbox and a dumb-HTTP git server on loopback for the git tests."""

from __future__ import annotations

import dataclasses
import functools
import http.server
import os
import ssl
import subprocess
import threading
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

from common.vocabulary.sandbox import DEFAULT_SANDBOX_USER
from tools_app.builtin.base import ToolContext
from tools_app.egress import LocalEgressGateway
from tools_app.sandbox.backends.namespace import NamespaceSandbox
from tools_app.sandbox.linux.identity import resolve_identity
from tools_app.sandbox.protocol import (
    Owner,
    ProbeReport,
    SandboxBackend,
    SandboxResult,
    SandboxSpec,
)
from tools_app.sandbox.workspace import grant_workspace

GIT_ENV = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": "/dev/null",
    "GIT_AUTHOR_NAME": "Test",
    "GIT_AUTHOR_EMAIL": "test@example.invalid",
    "GIT_COMMITTER_NAME": "Test",
    "GIT_COMMITTER_EMAIL": "test@example.invalid",
    "PATH": "/usr/bin:/bin",
    "HOME": "/nonexistent",
}


def git(cwd: Path, *args: str) -> str:
    """Run git as the test itself (setting up fixtures, never as a tool)."""
    return subprocess.run(
        ["git", *args], cwd=cwd, env=GIT_ENV, check=True, capture_output=True, text=True
    ).stdout


def make_repo(path: Path) -> Path:
    """A repository with two commits on ``main``."""
    path.mkdir(parents=True)
    git(path, "init", "-q", "-b", "main")
    (path / "README.md").write_text("hello\n")
    git(path, "add", "README.md")
    git(path, "commit", "-q", "-m", "first commit")
    (path / "README.md").write_text("hello\nworld\n")
    git(path, "commit", "-q", "-am", "second commit")
    return path


def grant(workspace: Path) -> None:
    """Let the sandbox user read and write everything under ``workspace``."""
    grant_workspace(
        workspace, resolve_identity(DEFAULT_SANDBOX_USER, backend="test"), writable=True
    )


class RecordingSandbox:
    """A real backend (namespace, the version_control default), recording each spec.

    ``extra_env`` adds variables to every call; ``inner`` picks another backend.
    """

    def __init__(
        self,
        extra_env: Mapping[str, str] | None = None,
        inner: SandboxBackend | None = None,
    ) -> None:
        self.inner: SandboxBackend = inner or NamespaceSandbox()
        self.name = self.inner.name
        self.isolates_network = self.inner.isolates_network
        self.extra_env = dict(extra_env or {})
        self.specs: list[SandboxSpec] = []

    def run(self, spec: SandboxSpec) -> SandboxResult:
        """Record, then run for real."""
        if self.extra_env:
            spec = dataclasses.replace(spec, env={**spec.env, **self.extra_env})
        self.specs.append(spec)
        return self.inner.run(spec)

    def probe(self) -> ProbeReport:
        """The real backend's probe."""
        return self.inner.probe()

    def close(self) -> None:
        """Nothing held."""


def git_context(
    workspace: Path,
    sandbox: Any,
    *,
    git_access: str | None = "full",
    settings: Mapping[str, Any] | None = None,
    **sub: Any,
) -> ToolContext:
    """A context for the git tools on ``workspace``."""
    constraints: dict[str, Any] = {"network": "open", "allowed_hosts": [], **sub}
    if git_access is not None:
        constraints["git"] = git_access
    return ToolContext(
        agent_id="agent-7",
        agent_name="builder",
        workspace=workspace,
        sandbox=sandbox,
        owner=Owner("agent-7"),
        settings=MappingProxyType(dict(settings or {})),
        sub_constraints=MappingProxyType(constraints),
        egress=LocalEgressGateway(agent_name="builder"),
    )


class DumbGitServer:
    """Serves a directory of bare repositories over plain HTTP on 127.0.0.1, counting requests."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.requests: list[str] = []
        outer = self

        class Handler(http.server.SimpleHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                outer.requests.append(self.path)
                super().do_GET()

        handler = functools.partial(Handler, directory=str(root))
        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        self.port = int(self._server.server_address[1])
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.05,), daemon=True
        )

    def __enter__(self) -> DumbGitServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


def publish_bare(source: Path, root: Path, name: str) -> None:
    """A bare clone of ``source`` under ``root`` with dumb-HTTP info files."""
    bare = root / name
    subprocess.run(
        ["git", "clone", "-q", "--bare", str(source), str(bare)], env=GIT_ENV, check=True
    )
    git(bare, "update-server-info")


def sandbox_user_ready() -> None:
    """Create the sandbox user when the tests run as root (as the sandbox tests do)."""
    if os.geteuid() == 0:
        script = Path(__file__).resolve().parents[3] / "docker" / "ensure-sandbox-user.sh"
        subprocess.run(["sh", str(script)], check=True, capture_output=True)


class SmartGitServer:
    """``git http-backend`` behind a loopback HTTP server: clone and push over smart HTTP.

    With ``tls``, it serves HTTPS; with ``authorization``, it answers 401 (asking for
    Basic credentials, as git hosts do) to any request without exactly that header
    value. ``authorizations`` records the header of every request (None: absent)."""

    def __init__(
        self,
        root: Path,
        *,
        tls: ssl.SSLContext | None = None,
        authorization: str | None = None,
    ) -> None:
        self.root = root
        self.requests: list[str] = []
        self.authorizations: list[str | None] = []
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _backend(self) -> None:
                outer.requests.append(f"{self.command} {self.path}")
                outer.authorizations.append(self.headers.get("Authorization"))
                path, _, query = self.path.partition("?")
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                if authorization is not None and self.headers.get("Authorization") != (
                    authorization
                ):
                    denied = b"authentication required"
                    self.send_response(401)
                    self.send_header("WWW-Authenticate", 'Basic realm="git"')
                    self.send_header("Content-Length", str(len(denied)))
                    self.end_headers()
                    self.wfile.write(denied)
                    return
                env = {
                    **GIT_ENV,
                    "GIT_PROJECT_ROOT": str(outer.root),
                    "GIT_HTTP_EXPORT_ALL": "1",
                    "REQUEST_METHOD": self.command,
                    "PATH_INFO": path,
                    "QUERY_STRING": query,
                    "CONTENT_TYPE": self.headers.get("Content-Type", ""),
                    "CONTENT_LENGTH": str(len(body)),
                    "HTTP_CONTENT_ENCODING": self.headers.get("Content-Encoding", ""),
                    "GIT_PROTOCOL": self.headers.get("Git-Protocol", ""),
                    "REMOTE_ADDR": "127.0.0.1",
                }
                done = subprocess.run(
                    ["git", "http-backend"], input=body, env=env, capture_output=True, check=False
                )
                head, _, payload = done.stdout.partition(b"\r\n\r\n")
                status = 200
                headers: list[tuple[str, str]] = []
                for line in head.decode("latin-1").split("\r\n"):
                    name, _, value = line.partition(":")
                    if name.lower() == "status":
                        status = int(value.strip().split()[0])
                    elif name:
                        headers.append((name, value.strip()))
                self.send_response(status)
                for name, value in headers:
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            do_GET = _backend
            do_POST = _backend

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        if tls is not None:
            self._server.socket = tls.wrap_socket(self._server.socket, server_side=True)
        self.scheme = "https" if tls is not None else "http"
        self.port = int(self._server.server_address[1])
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.05,), daemon=True
        )

    def url(self, name: str) -> str:
        """The clone URL of repository ``name``."""
        return f"{self.scheme}://127.0.0.1:{self.port}/{name}"

    def __enter__(self) -> SmartGitServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


def publish_pushable(source: Path, root: Path, name: str) -> Path:
    """A bare clone of ``source`` under ``root`` that accepts anonymous smart-HTTP pushes."""
    bare = root / name
    subprocess.run(
        ["git", "clone", "-q", "--bare", str(source), str(bare)], env=GIT_ENV, check=True
    )
    git(bare, "config", "http.receivepack", "true")
    return bare
