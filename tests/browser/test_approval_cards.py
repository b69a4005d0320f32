"""Approval cards in Chromium: an operator reads each call as a person would, at 1280 and 390 px."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import expect

from trust_app.models import AgentPermissions
from trust_app.services.agents import agent_create, person_create

pytestmark = [pytest.mark.browser, pytest.mark.integration]
PASSWORD = "pw-browser-cards-1"
WIDTHS = (1280, 390)
TOKEN = "ghp_aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3xY5"


class CardAgent:
    """A locked agent (every call waits for a person) that may reach 127.0.0.1 only."""

    def __init__(self, base: str) -> None:
        created = agent_create(
            name=f"cards-{uuid.uuid4().hex[:8]}", access_level="standard", autonomy="locked"
        )
        AgentPermissions.objects.create(
            agent=created.agent, sub_constraints={"allowed_hosts": ["127.0.0.1"]}
        )
        self.name = created.agent.name
        self.workspace = Path(created.agent.workspace)
        self.http = httpx.Client(
            base_url=base, headers={"Authorization": f"Bearer {created.token}"}, timeout=60
        )

    def ask(self, tool: str, arguments: dict[str, Any]) -> str:
        """Submit a call; returns its approval request's id."""
        answer = self.http.post("/api/v1/invocations/", json={"tool": tool, "arguments": arguments})
        assert answer.status_code == 201, answer.text
        body = answer.json()
        assert body["status"] == "pending_approval", body
        return str(body["approval"]["id"])


@pytest.fixture
def card_agent(daphne_server: str) -> Iterator[CardAgent]:
    agent = CardAgent(daphne_server)
    yield agent
    agent.http.close()


def open_inbox(browser: Any, base: str, width: int) -> Any:
    username = f"operator-{uuid.uuid4().hex[:6]}"
    person_create(username=username, role="operator", password=PASSWORD)
    context = browser.new_context(viewport={"width": width, "height": 900})
    page = context.new_page()
    page.goto(base + "/accounts/login/?next=/approvals/")
    page.fill("#id_username", username)
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(base + "/approvals/")
    expect(page.locator("body[data-live=open]")).to_have_count(1, timeout=10_000)
    return page


def _fits(page: Any, selector: str, width: int) -> None:
    """The card is no wider than the window (long lines scroll inside their own box)."""
    right = page.locator(selector).evaluate("el => el.getBoundingClientRect().right")
    assert right <= width, f"{selector} reaches {right}px in a {width}px window"


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("width", WIDTHS)
def test_operator_reads_a_write_a_command_and_a_request_as_a_person_would(
    daphne_server: str, browser: Any, card_agent: CardAgent, width: int, tmp_path: Path
) -> None:
    current = "".join(f"def step_{n}():\n    return {n}\n\n" for n in range(57))  # 171 lines
    (card_agent.workspace / "src").mkdir(exist_ok=True)
    (card_agent.workspace / "src" / "steps.py").write_text(current)
    new = current.replace("return 7\n", "return 'seven'\n") + "# end\n# of file\n"
    assert new.count("\n") == 173
    page = open_inbox(browser, daphne_server, width)

    write_id = card_agent.ask("write_file", {"content": new, "path": "src/steps.py"})
    write = page.locator(f"#req-{write_id}")
    expect(write).to_be_visible(timeout=2000)  # pushed live, rendered on the server
    facts = write.locator(".facts dt")
    expect(facts.first).to_have_text("path")
    expect(write.locator("[data-fact=path] dd")).to_have_text("src/steps.py")
    expect(write.locator("[data-fact=size] dd")).to_contain_text("173 lines")
    expect(write.locator(".diff .d-del")).to_have_text(["-    return 7"])
    expect(write.locator(".diff .d-add")).to_have_text(
        ["+    return 'seven'", "+# end", "+# of file"]
    )
    # The raw JSON is one click away, path before the body.
    raw = write.locator("details.raw")
    expect(raw.locator("pre")).not_to_be_visible()
    raw.locator("summary").click()
    expect(raw.locator("pre")).to_be_visible()
    raw_text = raw.locator("pre").inner_text()
    assert raw_text.index('"path"') < raw_text.index('"content"')
    expect(write.locator(".effective-level strong")).to_have_text("standard")
    expect(write.locator(".age")).to_contain_text("ago")
    expect(write.locator("a.audit-link")).to_have_attribute(
        "href", f"/audit/invocations/{_invocation_of(write_id)}/"
    )
    _fits(page, f"#req-{write_id}", width)

    shell_id = card_agent.ask(
        "shell_command", {"argv": ["grep", "-rn", "two words", "src"], "cwd": "src"}
    )
    shell = page.locator(f"#req-{shell_id}")
    expect(shell).to_be_visible(timeout=2000)
    expect(shell.locator(".block-command pre")).to_have_text("grep -rn 'two words' src")
    expect(shell.locator("[data-fact=cwd] dd")).to_have_text("src")
    _fits(page, f"#req-{shell_id}", width)

    http_id = card_agent.ask(
        "http_request",
        {
            "url": "http://127.0.0.1:9/report",
            "method": "POST",
            "headers": {
                "Authorization": "Bearer plain-words-but-a-credential",
                "X-Trace": TOKEN,
                "Accept": "application/json",
            },
            "body": '{"rows": 3}',
        },
    )
    http = page.locator(f"#req-{http_id}")
    expect(http).to_be_visible(timeout=2000)
    expect(http.locator("[data-fact=method] dd")).to_have_text("POST")
    expect(http.locator("[data-fact=URL] dd")).to_have_text("http://127.0.0.1:9/report")
    headers = http.locator("table.headers tr")
    # Attack: a header named Authorization and a token-shaped value are masked...
    expect(headers.filter(has_text="Authorization").locator("td")).to_contain_text("masked")
    expect(headers.filter(has_text="X-Trace").locator("td")).to_contain_text("masked")
    # ...positive control: a benign header is shown as sent.
    expect(headers.filter(has_text="Accept").locator("td")).to_have_text("application/json")
    html = page.content()
    assert TOKEN not in html and "plain-words-but-a-credential" not in html
    expect(http.locator(".block-text pre")).to_have_text('{"rows": 3}')
    _fits(page, f"#req-{http_id}", width)

    page.screenshot(path=str(tmp_path / f"approval-cards-{width}.png"), full_page=True)
    # A reload renders the same cards from the same display model.
    page.reload()
    expect(page.locator(f"#req-{shell_id} .block-command pre")).to_have_text(
        "grep -rn 'two words' src"
    )
    expect(page.locator(f"#req-{write_id} .diff .d-del")).to_have_text(["-    return 7"])
    page.context.close()


def _invocation_of(request_id: str) -> str:
    from approvals_app.models import ApprovalRequest

    return str(ApprovalRequest.objects.get(id=request_id).invocation_id)
