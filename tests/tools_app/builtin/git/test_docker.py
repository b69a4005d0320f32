"""The git tools on the docker backend: the launcher needs only python3 and git in the image.

Paths are relative to the working directory the backend gives (``/workspace``
in the container), so the same checks and the same private config hold there.
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.tools_app.builtin.git_fixtures import (
    RecordingSandbox,
    git,
    git_context,
    grant,
    make_repo,
    sandbox_user_ready,
)
from tests.tools_app.sandbox.conftest import docker_engine
from tools_app.builtin.base import ToolRefusedError
from tools_app.builtin.git.tools import git_commit, git_diff, git_status
from tools_app.sandbox.backends.docker.backend import DockerSandbox, DockerSettings
from tools_app.sandbox.backends.docker.lifecycle import LifecycleStrategy

ROOT = Path("/tmp/synthorg-test-workspaces")


@pytest.fixture(scope="module")
def docker() -> Iterator[DockerSandbox]:
    sandbox_user_ready()
    client = docker_engine()
    client.close()
    backend = DockerSandbox(DockerSettings(strategy=LifecycleStrategy.PER_CALL))
    yield backend
    backend.close()


@pytest.fixture
def workspace() -> Iterator[Path]:
    ROOT.mkdir(mode=0o755, exist_ok=True)
    os.chmod(ROOT, 0o755)
    path = ROOT / f"git-docker-{uuid.uuid4().hex[:12]}"
    path.mkdir(mode=0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_git_tools_run_and_refuse_in_a_container(workspace: Path, docker: DockerSandbox) -> None:
    repo = make_repo(workspace / "proj")
    (repo / ".gitattributes").write_text("* filter=x\n")
    (repo / "README.md").write_text("changed in the container\n")
    grant(workspace)
    sandbox = RecordingSandbox(inner=docker)
    context = git_context(workspace, sandbox)

    assert " M README.md" in git_status.run(context, {"path": "proj"}).content
    assert "+changed in the container" in git_diff.run(context, {"path": "proj"}).content
    git_commit.run(context, {"path": "proj", "message": "from a container", "all": True})
    assert git(repo, "log", "-1", "--format=%s").strip() == "from a container"

    with (repo / ".git" / "config").open("a") as handle:
        handle.write('[filter "x"]\n\tclean = echo FILTER-RAN\n')
    (repo / "README.md").write_text("again\n")
    grant(workspace)
    with pytest.raises(ToolRefusedError) as caught:
        git_diff.run(context, {"path": "proj"})
    assert "'filter.x.clean'" in caught.value.reason
