"""The connections page in Chromium, with connections configured (one from an OpenAPI
document, one granted to an agent): reached from the navigation by an admin, axe-core
clean and fitting the screen at both widths; an operator has no link and gets a 403."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.browser.page_checks import HEIGHT, WIDTHS, axe_findings, axe_source, width_findings
from tests.browser.test_admin_agents import PASSWORD, sign_in
from tests.support.pipeline import Pipeline, configured_pipeline
from trust_app.models import AgentPermissions
from trust_app.services.agents import agent_create, person_create

pytestmark = [pytest.mark.browser, pytest.mark.integration]

REDIS_DB = 11
DOCUMENT = """
openapi: 3.0.3
info: {title: CRM, version: "1"}
paths:
  /customers:
    get: {operationId: listCustomers, responses: {}}
    post: {operationId: createCustomer, responses: {}}
  /customers/{customer-id}:
    get: {operationId: getCustomer, responses: {}}
"""


@pytest.fixture(scope="module")
def pipeline(
    test_env: dict[str, str], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Pipeline]:
    root = tmp_path_factory.mktemp("connections-page")
    (root / "crm.yaml").write_text(DOCUMENT)
    config = {
        "connections": [
            {
                "name": "crm",
                "base_url": "https://crm.example.test/v2",
                "auth": {"secret": "CRM_TOKEN", "scheme": "header:X-Api-Key"},
                "openapi": "crm.yaml",
                "redact": ["/data/*/ssn"],
                "rate_limit": "30/min",
            },
            {
                "name": "weather-service-with-a-long-name",
                "base_url": "https://weather.example.test/api/v1/forecasts/regional",
                "operations": [{"method": "GET", "path": "/today/{region}/hourly-details"}],
            },
        ]
    }
    with configured_pipeline(test_env, root, config, redis_db=REDIS_DB) as started:
        yield started


@pytest.fixture(scope="module")
def daphne_server(pipeline: Pipeline) -> str:
    return pipeline.url


@pytest.mark.django_db(transaction=True)
def test_an_admin_reaches_a_clean_connections_page(
    daphne_server: str, page: Any, tmp_path: Path
) -> None:
    agent = agent_create(name=f"crm-reader-{uuid.uuid4().hex[:6]}", access_level="standard")
    AgentPermissions.objects.create(
        agent=agent.agent, sub_constraints={"connections": ["crm:getCustomer"]}
    )
    admin = f"adm-{uuid.uuid4().hex[:6]}"
    person_create(username=admin, role="admin", password=PASSWORD)
    sign_in(page, daphne_server, admin)
    page.get_by_role("navigation", name="main").get_by_role("link", name="Connections").click()
    page.wait_for_url(daphne_server + "/connections/")

    crm = page.locator("#connection-crm")
    assert "header:X-Api-Key" in crm.inner_text() and "CRM_TOKEN" in crm.inner_text()
    assert (
        crm.locator('[data-operation="createCustomer"] [data-kind]')
        .inner_text()
        .startswith("write")
    )
    assert crm.locator(f'[data-agent="{agent.agent.name}"]').inner_text().endswith("getCustomer")
    source = axe_source()
    found: list[str] = []
    for width, pixels in WIDTHS.items():
        page.set_viewport_size({"width": pixels, "height": HEIGHT})
        page.screenshot(path=str(tmp_path / f"connections-{width}.png"), full_page=True)
        found += [f"{pixels} px: {problem}" for problem in width_findings(page)]
        found += [f"{pixels} px: {problem}" for problem in axe_findings(page, source)]
    assert not found, "\n".join(found)


@pytest.mark.django_db(transaction=True)
def test_an_operator_has_no_link_and_is_refused(daphne_server: str, page: Any) -> None:
    operator = f"op-{uuid.uuid4().hex[:6]}"
    person_create(username=operator, role="operator", password=PASSWORD)
    sign_in(page, daphne_server, operator)
    nav = page.get_by_role("navigation", name="main")
    assert nav.get_by_role("link", name="Tools").count() == 1  # control: the nav is there
    assert nav.get_by_role("link", name="Connections").count() == 0
    answer = page.goto(daphne_server + "/connections/")
    assert answer is not None and answer.status == 403
    assert "crm" not in page.content()
