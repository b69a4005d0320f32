"""The README's backup, restored into a fresh database and a fresh var/: the console
runs on it, old tokens work, a pending approval is still pending, and the audit chain
verifies once the restore is recorded (the checkpoints of events after the backup are
set aside, never deleted).

The backup is what the README's "Backups" names: ``pg_dump`` of the database, the keys
(here the key files of var/), and the checkpoint store kept apart, which after the
backup still received checkpoints of events the backup does not hold.
"""

from __future__ import annotations

import glob
import shutil
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx
import psycopg
import pytest
from django.conf import settings
from django.core.management import call_command

from audit_app.models import AuditEvent
from common.testing import (
    BASE_DIR,
    free_port,
    http_status,
    python_argv,
    require,
    running,
    wait_until,
)
from trust_app.services.agents import agent_create, person_create, person_token_issue

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

KEY_FILES = ("audit_keys", "secret_key", "secrets_keys")


@pytest.fixture(autouse=True)
def checkpoint_store(settings: Any, tmp_path: Path) -> Path:
    """Each test's checkpoints describe its own log alone, kept apart from var/."""
    settings.SYNTHORG_AUDIT_CHECKPOINT_DIR = str(tmp_path / "checkpoints")
    return tmp_path / "checkpoints"


def _pg_tool(name: str) -> str:
    found = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    path = found[-1] if found else shutil.which(name)
    require(path is not None, f"{name} (PostgreSQL's client tools)")
    assert path is not None
    return path


def _with_database(url: str, name: str) -> str:
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path=f"/{name}"))


def _manage(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "manage.py", *args], env=env, cwd=BASE_DIR, capture_output=True,
        text=True, timeout=300, check=False,
    )  # fmt: skip


def test_a_backup_restored_into_a_fresh_database_and_var_runs_and_verifies(
    test_env: dict[str, str], daphne_server: str, tmp_path: Path
) -> None:
    require(test_env["DATABASE_URL"].startswith("postgres"), "PostgreSQL for the suite")
    # The console as it ran: an agent whose call waits for a person, an operator.
    agent = agent_create(name=f"kept-{uuid.uuid4().hex[:8]}", access_level="standard",
                         autonomy="locked")  # fmt: skip
    operator = person_create(username=f"op-{uuid.uuid4().hex[:8]}", role="operator", password=None)
    operator_token = person_token_issue(person=operator)
    with httpx.Client(headers={"Authorization": f"Bearer {agent.token}"}, timeout=30) as http:
        waiting = http.post(
            daphne_server + "/api/v1/invocations/",
            json={"tool": "read_file", "arguments": {"path": "notes.txt"}},
        ).json()
    assert waiting["status"] == "pending_approval", waiting
    call_command("synthorg_audit", "checkpoint")
    # The backup: the database, and the keys of var/.
    dump = tmp_path / "console.dump"
    subprocess.run(
        [_pg_tool("pg_dump"), "--format=custom", f"--file={dump}", test_env["DATABASE_URL"]],
        check=True, timeout=300,
    )  # fmt: skip
    backed_up_to = AuditEvent.objects.order_by("-id").values_list("id", flat=True).first()
    # Life goes on after the backup: more events, and a checkpoint of them.
    agent_create(name=f"lost-{uuid.uuid4().hex[:8]}", access_level="standard")
    call_command("synthorg_audit", "checkpoint")
    # The restore: a fresh database and a fresh var/ with the keys and the checkpoint store.
    fresh_name = f"restored_{uuid.uuid4().hex[:8]}"
    admin_url = _with_database(test_env["DATABASE_URL"], "postgres")
    with psycopg.connect(admin_url, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{fresh_name}"')
    try:
        fresh_url = _with_database(test_env["DATABASE_URL"], fresh_name)
        subprocess.run(
            [_pg_tool("pg_restore"), "--no-owner", f"--dbname={fresh_url}", str(dump)],
            check=True, timeout=300,
        )  # fmt: skip
        var = tmp_path / "var"
        var.mkdir(mode=0o700)
        for name in KEY_FILES:
            if (settings.VAR_DIR / name).exists():
                shutil.copy2(settings.VAR_DIR / name, var / name)
        store = var / "audit-checkpoints"
        shutil.copytree(settings.SYNTHORG_AUDIT_CHECKPOINT_DIR, store)
        env = dict(
            test_env, DATABASE_URL=fresh_url, SYNTHORG_VAR_DIR=str(var),
            SYNTHORG_AUDIT_CHECKPOINT_DIR=str(store),
        )  # fmt: skip
        assert _manage(env, "migrate", "--noinput").returncode == 0
        before = _manage(env, "synthorg_audit", "verify")
        # The store's newest checkpoint holds events the backup never had: said, with the fix.
        assert before.returncode == 1, before.stdout + before.stderr
        assert "synthorg_audit restored" in before.stderr, before.stderr
        restored = _manage(env, "synthorg_audit", "restored")
        assert restored.returncode == 0, restored.stdout + restored.stderr
        assert f"restored to event #{backed_up_to}" in restored.stdout, restored.stdout
        set_aside = list(store.glob("superseded-*/*.json"))
        assert len(set_aside) == 1, "the checkpoint of the lost events is kept, aside"
        after = _manage(env, "synthorg_audit", "verify")
        assert after.returncode == 0, after.stdout + after.stderr
        assert "audit chain intact" in after.stdout
        # The console runs on the restored database: old tokens, the waiting approval.
        port = free_port()
        argv = python_argv("-m", "daphne", "-b", "127.0.0.1", "-p", str(port),
                           "synthorg_site.asgi:application")  # fmt: skip
        with running(argv, env=env, log_path=tmp_path / "web.log"):
            base = f"http://127.0.0.1:{port}"
            wait_until(lambda: http_status(base + "/healthz") > 0, timeout=90, what="the node")
            with httpx.Client(base_url=base, timeout=30) as http:
                me = http.get("/api/v1/me/", headers={"Authorization": f"Bearer {agent.token}"})
                assert me.status_code == 200, me.text
                pending = http.get(
                    "/api/v1/approvals/", params={"status": "pending"},
                    headers={"Authorization": f"Bearer {operator_token}"},
                ).json()["results"]  # fmt: skip
        assert waiting["id"] in {r["invocation"]["id"] for r in pending}, pending
    finally:
        with psycopg.connect(admin_url, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{fresh_name}" WITH (FORCE)')


def test_a_restore_never_hides_a_change_inside_the_restored_range(tmp_path: Path) -> None:
    agent_create(name=f"a-{uuid.uuid4().hex[:8]}", access_level="standard")
    call_command("synthorg_audit", "checkpoint")
    # A row inside the checkpointed range is changed: the restore refuses to record.
    event = AuditEvent.objects.order_by("-id").first()
    assert event is not None
    AuditEvent.objects.filter(id=event.id).update(reason="changed afterwards")
    store = Path(settings.SYNTHORG_AUDIT_CHECKPOINT_DIR)
    before = sorted(p.name for p in store.glob("*.json"))
    with pytest.raises(Exception, match="does not verify"):
        call_command("synthorg_audit", "restored")
    assert sorted(p.name for p in store.glob("*.json")) == before
    assert not AuditEvent.objects.filter(kind="audit.restored").exists()
