"""The page that shows a new token, loaded by several tabs at the same moment through a
real daphne: the token is shown in one of them, never in more."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from django.test import Client

from tests.common.permission_suite import signed_in
from trust_app.services.agents import agent_create, person_create
from trust_app.tokens.bearer import token_digest

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

TABS = 4


def shown_in(html: str) -> str | None:
    if 'id="new-token">' not in html:
        return None
    return html.split('id="new-token">')[1].split("</pre>")[0]


def loads_at_once(base: str, path: str, admin: Client) -> list[str]:
    """``TABS`` GETs of ``path`` with the admin's cookie, released together."""
    cookies = {"sessionid": admin.cookies["sessionid"].value}
    start = threading.Barrier(TABS)

    def load(_: int) -> str:
        with httpx.Client(base_url=base, cookies=cookies, timeout=60) as http:
            start.wait(timeout=60)
            answer = http.get(path)
        assert answer.status_code == 200, answer.text[:500]
        return answer.text

    with ThreadPoolExecutor(TABS) as pool:
        return list(pool.map(load, range(TABS)))


@pytest.mark.parametrize("issue", ["create", "rotate"])
def test_tabs_loading_the_page_at_once_show_the_token_once(daphne_server: str, issue: str) -> None:
    person_create(username="race-admin", role="admin", password=None)
    admin = signed_in("race-admin")
    created = agent_create(name=f"race-{issue}", access_level="standard")
    agent = created.agent
    if issue == "create":
        issued = admin.post(f"/agents/{agent.id}/tokens/", {"label": "raced"})
    else:
        old = agent.tokens.get()
        issued = admin.post(f"/agents/{agent.id}/tokens/{old.id}/rotate/")
    assert issued.status_code == 302
    pages = loads_at_once(daphne_server, issued["Location"], admin)
    shown = [token for token in map(shown_in, pages) if token is not None]
    # Positive control and attack in one: one tab shows the token, the others do not.
    assert len(shown) == 1, f"shown in {len(shown)} of {TABS} tabs"
    assert sum('id="token-gone"' in page for page in pages) == TABS - 1
    assert agent.tokens.filter(digest=token_digest(shown[0])).exists()
    # Loaded again together, no tab shows it.
    again = loads_at_once(daphne_server, issued["Location"], admin)
    assert all(shown_in(page) is None for page in again)
