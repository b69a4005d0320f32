"""The audit pages as a person moves through them: filters offered from what the log
holds, a refused filter said out loud, counts, newer and older pages, neighbouring
events, and the chain's status with verification on request."""

from __future__ import annotations

import re
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.core.cache import cache
from django.db import connection, transaction
from django.test import Client
from django.utils import timezone

from audit_app.chain import CHAINED_FIELDS, event_hash
from audit_app.models import AuditEvent, AuditVerification
from audit_app.record import Actor, audit_record
from audit_app.selectors import browse
from audit_app.selectors.browse import audit_chain_status
from audit_app.services.verification import (
    audit_verification_run,
    audit_verification_run_here,
    audit_verifications_abandon,
)
from audit_app.tasks import sweep_abandoned_verifications
from tests.common.permission_suite import PermissionSuite, signed_in
from trust_app.services.agents import agent_create, person_create

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def fresh_choices(settings: Any, tmp_path: Path) -> None:
    """Filter choices are cached across requests: each test starts from its own log."""
    cache.clear()
    settings.SYNTHORG_AUDIT_CHECKPOINT_DIR = str(tmp_path / "checkpoints")


@pytest.fixture
def auditor() -> Client:
    person_create(username="audrey", role="auditor", password=None)
    return signed_in("audrey")


@pytest.fixture
def events() -> list[AuditEvent]:
    agent = agent_create(name="walker", access_level="standard").agent
    found = []
    for i in range(12):
        with transaction.atomic():
            found.append(
                audit_record(kind="invocation.decided", actor=Actor.agent(agent), agent=agent,
                             tool="read_file", category="file_system",
                             outcome="allow" if i % 3 else "deny", reason=f"call {i}")
            )  # fmt: skip
    return found


def ids_in(html: str) -> list[int]:
    return [int(m) for m in re.findall(r'data-event="(\d+)"', html)]


def test_filters_offer_the_values_in_the_log(auditor: Client, events: list[AuditEvent]) -> None:
    html = auditor.get("/audit/").content.decode()
    outcome_select = re.search(r'<select name="outcome"[^>]*>(.*?)</select>', html, re.S)
    assert outcome_select is not None
    offered = re.findall(r'<option value="([^"]*)"', outcome_select.group(1))
    assert offered[0] == "" and {"allow", "deny"} <= set(offered) and "allowed" not in offered
    assert offered[1:] == sorted(
        AuditEvent.objects.exclude(outcome="")
        .order_by("outcome")
        .values_list("outcome", flat=True)
        .distinct()
    )
    assert '<datalist id="choices-agent">' in html and '<option value="walker">' in html


def test_an_unknown_filter_value_is_an_error_naming_the_known_values(
    auditor: Client, events: list[AuditEvent]
) -> None:
    refused = auditor.get("/audit/", {"outcome": "allowed"})
    assert refused.status_code == 400
    html = refused.content.decode()
    assert "outcome: no event has &#x27;allowed&#x27;" in html
    held = re.search(r"the log holds: ([^<]*)<", html)
    assert held is not None and {"allow", "deny"} <= set(held.group(1).split(", "))
    assert ids_in(html) == []  # no misleading list
    # Positive control: the value that exists filters, and the count says how many.
    shown = auditor.get("/audit/", {"outcome": "deny"})
    assert shown.status_code == 200
    expected = [e.id for e in reversed(events) if e.outcome == "deny"]
    assert ids_in(shown.content.decode()) == expected
    assert f"{len(expected)} matching events" in shown.content.decode()
    # Names are exact: a different case is refused too, with the right name offered.
    assert auditor.get("/audit/", {"agent": "Walker"}).status_code == 400


def test_a_value_written_a_moment_ago_can_be_filtered_at_once(
    auditor: Client, events: list[AuditEvent]
) -> None:
    assert auditor.get("/audit/").status_code == 200  # the choices are cached now
    newcomer = agent_create(name="newcomer", access_level="standard").agent
    assert auditor.get("/audit/", {"agent": newcomer.name}).status_code == 200


def test_the_count_stops_at_its_limit(
    auditor: Client, events: list[AuditEvent], settings: Any
) -> None:
    settings.SYNTHORG_AUDIT_COUNT_LIMIT = 5
    assert "more than 5 matching events" in auditor.get("/audit/").content.decode()


def test_older_and_newer_pages_walk_back_to_the_same_events(
    auditor: Client, events: list[AuditEvent]
) -> None:
    first = auditor.get("/audit/", {"agent": "walker", "limit": "5"}).content.decode()
    assert 'id="newer-page"' not in first  # the newest page has nothing newer
    older = re.search(r'id="next-page" href="([^"]+)"', first)
    assert older is not None
    second = auditor.get(older.group(1).replace("&amp;", "&")).content.decode()
    assert ids_in(second) == [e.id for e in reversed(events)][5:10]
    newer = re.search(r'id="newer-page" href="([^"]+)"', second)
    assert newer is not None
    back = auditor.get(newer.group(1).replace("&amp;", "&")).content.decode()
    assert ids_in(back) == ids_in(first)


def test_an_event_links_to_its_neighbours(auditor: Client, events: list[AuditEvent]) -> None:
    middle = events[5]
    html = auditor.get(f"/audit/{middle.id}/").content.decode()
    assert f'id="previous-event" rel="prev" href="/audit/{events[4].id}/"' in html
    assert f'id="next-event" rel="next" href="/audit/{events[6].id}/"' in html
    newest = auditor.get(f"/audit/{events[-1].id}/").content.decode()
    assert 'id="next-event"' not in newest


def test_verify_on_request_reports_intact_then_names_a_rewritten_row(
    auditor: Client, events: list[AuditEvent]
) -> None:
    assert "Not verified from the console yet" in auditor.get("/audit/").content.decode()
    queued = auditor.post("/audit/verify/", HTTP_HX_REQUEST="true")
    assert queued.status_code == 200 and 'id="chain-progress"' in queued.content.decode()
    run = AuditVerification.objects.get()
    assert run.requested_by == "audrey" and run.status == "queued"
    assert AuditEvent.objects.filter(kind="audit.verify_requested", actor_name="audrey").exists()
    # A second request while one is queued is the same run, not another.
    auditor.post("/audit/verify/")
    assert AuditVerification.objects.count() == 1
    done = audit_verification_run(verification_id=run.id)
    assert done is not None and done.status == "passed"
    assert audit_verification_run(verification_id=run.id) is None  # taken once only
    html = auditor.get(f"/audit/{events[0].id}/").content.decode()
    assert "<strong>Intact</strong>" in html and "by audrey" in html
    verified = AuditEvent.objects.get(kind="audit.verified")
    assert verified.outcome == "passed"

    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE tools_app_auditevent SET outcome = 'allow' WHERE id = %s", [events[3].id]
        )
    auditor.post("/audit/verify/")
    second = AuditVerification.objects.order_by("-id").first()
    assert second is not None and second.id != run.id
    audit_verification_run(verification_id=second.id)
    html = auditor.get("/audit/").content.decode()
    assert "<strong>Broken</strong>" in html
    assert f'href="/audit/{events[3].id}/">event #{events[3].id}</a>' in html
    last = audit_chain_status().last
    assert last is not None and last.verification == second.id and last.status == "failed"

    # A forged "passed" row in the status table, with no audit event behind it, is not
    # believed: the page keeps the failure the audit log records and says the table lies.
    forged = AuditVerification.objects.create(
        requested_by="audrey", requested_at=timezone.now(), finished_at=timezone.now(),
        status="passed", checked=len(events), summary="audit chain intact",
    )  # fmt: skip
    html = auditor.get("/audit/").content.decode()
    assert "<strong>Intact</strong>" not in html and "<strong>Broken</strong>" in html
    assert f"holds verification #{forged.id} as passed, but no audit event records" in html
    status = auditor.get("/audit/verify/status/").content.decode()
    assert "<strong>Intact</strong>" not in status and 'id="chain-untrusted"' in status


def test_a_result_event_forged_without_the_key_shows_unverified(auditor: Client) -> None:
    """An `audit.verified` event written without the audit key (plain hash) claiming the
    chain passed is not shown as Intact; positive control: a real run is."""
    run = audit_verification_run_here(requested_by="audrey")
    assert run.status == "passed"
    assert "<strong>Intact</strong>" in auditor.get("/audit/").content.decode()
    head = AuditEvent.objects.order_by("-id").first()
    assert head is not None
    forged = AuditEvent(
        created_at=timezone.now(), kind="audit.verified", actor_type="system",
        actor_name="audit verification", outcome="passed", reason="audit chain intact",
        data={"verification": run.id + 1, "checked": 1}, prev_hash=head.hash, key_id=head.key_id,
    )  # fmt: skip
    forged.hash = "f" * 64  # a writer without the key cannot compute the HMAC
    AuditEvent.objects.bulk_create([forged])
    AuditVerification.objects.create(
        requested_by="audrey", requested_at=timezone.now(), status="passed"
    )
    html = auditor.get("/audit/").content.decode()
    assert "<strong>Intact</strong>" not in html and "<strong>Unverified</strong>" in html
    assert "does not verify under the audit keys" in html


def test_a_run_past_its_time_limit_is_no_longer_shown_as_current(
    auditor: Client, settings: Any
) -> None:
    """A worker that died mid-run leaves its verification 'running' for good: past the
    time limit it is not shown as in progress, and a new request starts a fresh run."""
    limit = timedelta(seconds=settings.SYNTHORG_AUDIT_VERIFY_TIME_LIMIT)
    now = timezone.now()
    stale = AuditVerification.objects.create(
        requested_by="audrey", requested_at=now - limit - timedelta(seconds=1),
        status="running", total=10, checked=3,
    )  # fmt: skip
    assert audit_chain_status().current is None
    assert 'id="chain-progress"' not in auditor.get("/audit/verify/status/").content.decode()
    auditor.post("/audit/verify/")
    fresh = AuditVerification.objects.exclude(id=stale.id).get()
    assert fresh.status == "queued"
    # Positive control: a run within its time limit is current and shown with its progress.
    AuditVerification.objects.filter(id=fresh.id).update(
        status="running", requested_at=now - limit + timedelta(seconds=60), total=10, checked=4
    )
    assert audit_chain_status().current == fresh
    status = auditor.get("/audit/verify/status/").content.decode()
    assert 'id="chain-progress"' in status and "4 of 10 event(s)" in status
    auditor.post("/audit/verify/")  # the current run answers; no second one starts
    assert AuditVerification.objects.count() == 2


def test_a_run_whose_process_stopped_is_marked_abandoned_not_broken(
    auditor: Client, settings: Any
) -> None:
    """A run left 'running' past its time limit (its process stopped) is marked abandoned
    by beat's sweep, with an audit event and a line on the page; the chain's last result
    stays what the last finished run found."""
    limit = timedelta(seconds=settings.SYNTHORG_AUDIT_VERIFY_TIME_LIMIT)
    now = timezone.now()
    passed = audit_verification_run_here(requested_by="audrey")
    stale = AuditVerification.objects.create(
        requested_by="audrey", requested_at=now - limit - timedelta(seconds=1),
        status="running", total=10, checked=3,
    )  # fmt: skip
    # Positive control: a run within its time limit is left alone by the same sweep.
    live = AuditVerification.objects.create(
        requested_by="bob", requested_at=now - limit + timedelta(seconds=60), status="running"
    )
    assert sweep_abandoned_verifications() == 1
    stale.refresh_from_db()
    live.refresh_from_db()
    assert (stale.status, live.status) == ("abandoned", "running")
    assert stale.finished_at is not None and "checking 3 of 10 event(s)" in stale.summary
    event = AuditEvent.objects.get(kind="audit.verify_abandoned")
    assert event.outcome == "abandoned" and event.data["verification"] == stale.id
    status = audit_chain_status()
    assert status.last is not None and status.last.verification == passed.id
    assert status.abandoned is not None and status.abandoned.id == stale.id
    html = auditor.get("/audit/").content.decode()
    assert "<strong>Intact</strong>" in html and 'id="chain-abandoned"' in html
    assert audit_verifications_abandon() == 0  # marked once


class TestVerifyAccess(PermissionSuite):
    path = "/audit/verify/"
    method = "post"
    allowed = frozenset({"admin", "auditor"})
    ok_status = 302


class TestChainStatusAccess(PermissionSuite):
    path = "/audit/verify/status/"
    allowed = frozenset({"admin", "auditor"})


def test_a_log_rehashed_without_the_key_shows_unverified(auditor: Client) -> None:
    """Downgrade: every event (the passed result's too) re-hashed with plain SHA-256 and
    its key id emptied. The page does not keep showing Intact; control: before, it does."""
    audit_verification_run_here(requested_by="audrey")
    assert "<strong>Intact</strong>" in auditor.get("/audit/").content.decode()
    prev = "0" * 64
    with connection.cursor() as cursor:
        for row in AuditEvent.objects.order_by("id"):
            fields = {name: getattr(row, name) for name in CHAINED_FIELDS}
            fields["created_at"] = fields["created_at"].isoformat()
            fields["agent_id"] = str(row.agent_id) if row.agent_id else None
            fields["invocation_id"] = str(row.invocation_id) if row.invocation_id else None
            digest = event_hash(prev, fields)
            cursor.execute(
                "UPDATE tools_app_auditevent SET prev_hash = %s, hash = %s, key_id = '' "
                "WHERE id = %s",
                [prev, digest, row.id],
            )
            prev = digest
    html = auditor.get("/audit/").content.decode()
    assert "<strong>Intact</strong>" not in html and "<strong>Unverified</strong>" in html
    assert "is unkeyed (plain SHA-256, no key id) although an audit key is configured" in html
    auditor.post("/audit/verify/")  # refused to record; the panel still says why
    status = auditor.get("/audit/verify/status/").content.decode()
    assert "<strong>Unverified</strong>" in status


def _last_result_after_the_run_ends(run_id: int) -> Any:
    """The panel's read of the newest result, with the run finishing (as a fast worker
    does) just before it reads."""
    original = browse._last_result

    def finishing_first() -> Any:
        if AuditVerification.objects.filter(id=run_id, status="queued").exists():
            audit_verification_run(verification_id=run_id)
        return original()

    return finishing_first


def test_a_run_that_ends_while_the_panel_is_read_is_shown_as_current_or_as_its_result(
    auditor: Client, events: list[AuditEvent], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The panel reads the run in progress, then the newest result. A run that ends between
    # the two (a short chain, a fast worker) is seen by the first read as current, or by
    # the second as its result: never as neither, which left the panel "not verified"
    # and no longer following the run.
    auditor.post("/audit/verify/")
    run = AuditVerification.objects.get()
    monkeypatch.setattr(browse, "_last_result", _last_result_after_the_run_ends(run.id))
    status = audit_chain_status()
    assert AuditVerification.objects.get(id=run.id).status == "passed"
    assert status.current is not None and status.current.id == run.id
    # The next poll shows its result.
    monkeypatch.undo()
    after = audit_chain_status()
    assert after.current is None
    assert after.last is not None and after.last.verification == run.id


def test_a_run_that_ended_before_the_panel_is_read_is_shown_as_its_result(
    auditor: Client, events: list[AuditEvent]
) -> None:
    # The control: a run finished before the read is its result, at once.
    auditor.post("/audit/verify/")
    run = AuditVerification.objects.get()
    audit_verification_run(verification_id=run.id)
    status = audit_chain_status()
    assert status.current is None
    assert status.last is not None and status.last.verification == run.id
