"""An auditor filters the audit log by agent in a real browser and exports exactly those rows."""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any

import pytest
from django.db import transaction

from audit_app.models import AuditEvent
from audit_app.record import Actor, audit_record
from trust_app.services.agents import agent_create, person_create

pytestmark = [pytest.mark.browser, pytest.mark.integration]

PASSWORD = "pw-auditor-browser"


@pytest.mark.django_db(transaction=True)
def test_auditor_filters_by_agent_and_the_csv_holds_exactly_those_rows(
    daphne_server: str, page: Any, tmp_path: Path
) -> None:
    agents = [agent_create(name=n, access_level="standard").agent for n in ("ant", "bee")]
    for i in range(60):
        agent = agents[i % 2]
        with transaction.atomic():
            audit_record(kind="invocation.decided", actor=Actor.agent(agent), agent=agent,
                         tool="read_file", outcome="allow" if i % 3 else "deny",
                         reason=f"call {i}")  # fmt: skip
    person_create(username="audrey", role="auditor", password=PASSWORD)

    page.goto(daphne_server + "/audit/")
    page.fill("#id_username", "audrey")
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(daphne_server + "/audit/")
    page.fill("input[name=agent]", "bee")
    page.click("#audit-filters button[type=submit]")
    page.wait_for_url("**/audit/?*agent=bee*")
    page.wait_for_function(
        "() => [...document.querySelectorAll('#audit-results td:nth-child(5)')]"
        ".every(td => td.textContent === 'bee')"
    )
    with page.expect_download() as download_info:
        page.click("#export-csv")
    download = download_info.value
    target = tmp_path / "audit.csv"
    download.save_as(target)
    rows = list(csv.DictReader(io.StringIO(target.read_text())))
    expected = list(
        AuditEvent.objects.filter(agent_name="bee").order_by("-id").values_list("id", flat=True)
    )
    assert [int(r["id"]) for r in rows] == expected
    assert len(expected) == 31  # 30 decided calls and the agent's creation
    assert {r["agent_name"] for r in rows} == {"bee"}
