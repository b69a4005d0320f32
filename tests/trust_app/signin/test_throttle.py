"""Guessing passwords through a real web node: throttled, audited within a budget, and the
right person still gets in (from another address at once, from the same one after the
delay). Clients connect from their own loopback addresses, as distinct clients do."""

from __future__ import annotations

import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest

from audit_app.models import AuditEvent
from audit_app.refusals import request_refusals_summarise
from common.testing import wait_until
from tests.support.web_node import client_from, sign_in, sign_in_form, web_node
from trust_app.services.agents import person_create

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

LOCK, LOCK_MAX = 30, 60
ACCOUNT_FAILURES, ADDRESS_FAILURES = 5, 20
BUDGET = 10  # failed sign-ins audited one by one per client and minute
PASSWORD = "pw-signin-throttle-1234"
LOGIN, ADMIN_LOGIN = "/accounts/login/", "/admin/login/"


@pytest.fixture(scope="module")
def node(test_env: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    settings = {
        "SYNTHORG_SIGNIN_LOCK_SECONDS": str(LOCK),
        "SYNTHORG_SIGNIN_LOCK_MAX_SECONDS": str(LOCK_MAX),
        "SYNTHORG_SIGNIN_ACCOUNT_FAILURES": str(ACCOUNT_FAILURES),
        "SYNTHORG_SIGNIN_ADDRESS_FAILURES": str(ADDRESS_FAILURES),
        "SYNTHORG_REFUSAL_AUDIT_PER_MINUTE": str(BUDGET),
    }
    with web_node(test_env, tmp_path_factory.mktemp("signin"), **settings) as url:
        yield url


@pytest.fixture
def budget(settings: Any) -> None:
    # The summary sweep runs here: it must know the web node's budget.
    settings.SYNTHORG_REFUSAL_AUDIT_PER_MINUTE = BUDGET


@dataclass
class Flood:
    """Wrong passwords for one account from one address, one after the other."""

    path: str
    address: str
    username: str
    attempts: int
    forge: bool = False
    answers: list[httpx.Response] = field(default_factory=list)
    started: float = 0.0
    ended: float = 0.0

    def run(self, base: str) -> Flood:
        self.started = time.time()
        with client_from(self.address, base) as http:
            token = sign_in_form(http, self.path)
            for n in range(self.attempts):
                # A forged header changes nothing: no proxy is trusted here.
                forged = {"X-Forwarded-For": f"203.0.113.{n % 250 + 1}"} if self.forge else {}
                self.answers.append(
                    sign_in(http, self.path, token, self.username, f"guess-{n}", **forged)
                )
        self.ended = time.time()
        return self

    def statuses(self, code: int) -> list[httpx.Response]:
        return [a for a in self.answers if a.status_code == code]


def _locks(address: str, scope: str) -> list[dict[str, Any]]:
    return [
        e.data
        for e in AuditEvent.objects.filter(kind="signin.locked").order_by("id")
        if e.data["address"] == address and e.data["scope"] == scope
    ]


def _signs_in(base: str, address: str, path: str, username: str) -> httpx.Response:
    with client_from(address, base) as http:
        answer = sign_in(http, path, sign_in_form(http, path), username, PASSWORD)
        if answer.status_code == 302:
            assert "sessionid" in http.cookies, answer.headers
        return answer


def _locked(answer: httpx.Response, words: str) -> bool:
    return (
        answer.status_code == 429
        and int(answer.headers["Retry-After"]) >= 1
        and f"Too many failed sign-ins {words}" in answer.text
    )


def test_two_hundred_guesses_are_throttled_audited_and_the_person_still_gets_in(
    node: str, budget: None
) -> None:
    person_create(username="olga", role="operator", password=PASSWORD)
    person_create(username="root", role="admin", password=PASSWORD, superuser=True)
    floods = [
        *(Flood(LOGIN, f"127.20.0.{n}", "olga", 50, forge=True) for n in range(1, 5)),
        *(Flood(ADMIN_LOGIN, f"127.21.0.{n}", "root", 50) for n in range(1, 5)),
    ]
    with ThreadPoolExecutor(max_workers=len(floods)) as pool:
        list(pool.map(lambda flood: flood.run(node), floods))

    for flood in floods:
        assert {a.status_code for a in flood.answers} <= {200, 429}, flood.address
        checked = flood.statuses(200)
        wrong = (
            "did not match" if flood.path == LOGIN else "enter the correct username and password"
        )
        assert all(wrong in a.text for a in checked), flood.path
        assert all(_locked(a, "") for a in flood.statuses(429))
        # Each lock came after ACCOUNT_FAILURES wrong passwords, each longer than the last;
        # only the passwords before a lock were read (the rest were refused unread).
        locks = _locks(flood.address, "account_from_address")
        assert locks, f"{flood.address} was never locked"
        assert [lock["seconds"] for lock in locks] == [
            min(LOCK_MAX, LOCK * 2**n) for n in range(len(locks))
        ]
        assert len(checked) <= (ACCOUNT_FAILURES - 1) * (len(locks) + 1), flood.address
        assert len(flood.statuses(429)) >= flood.attempts - len(checked)
    # The forged addresses appear nowhere: every row names the real client.
    kinds = ("signin.failed", "signin.locked")
    seen = {e.data["address"] for e in AuditEvent.objects.filter(kind__in=kinds)}
    assert seen == {flood.address for flood in floods}

    # Audited within the budget: each failure is a row or counted in a summary, and
    # never more than BUDGET rows a minute per client.
    request_refusals_summarise(now=time.time() + 120)
    for flood in floods:
        rows = AuditEvent.objects.filter(kind="signin.failed", data__address=flood.address)
        counted = sum(
            e.data["counted"]
            for e in AuditEvent.objects.filter(
                kind="signin.failures_counted", data__client=f"anonymous:{flood.address}"
            )
        )
        minutes = int(flood.ended // 60) - int(flood.started // 60) + 1
        assert rows.count() + counted == flood.attempts, flood.address
        assert 0 < rows.count() <= BUDGET * minutes
        assert counted > 0 or flood.attempts <= BUDGET * minutes
        row = rows.first()
        assert row is not None and row.actor_type == "anonymous"
        assert (row.actor_name, row.data["username"], row.data["path"]) == (
            flood.address,
            flood.username,
            flood.path,
        )

    # The right person, from another address, at once: no lock is on an account alone.
    assert _signs_in(node, "127.20.1.1", LOGIN, "olga").status_code == 302
    assert _signs_in(node, "127.21.1.1", ADMIN_LOGIN, "root").status_code == 302

    # From a guessing address, after the delay (the tries while locked are refused
    # unread and do not lengthen it).
    for flood in (floods[0], floods[4]):
        tries: list[httpx.Response] = []

        def gets_in(flood: Flood = flood, tries: list[httpx.Response] = tries) -> bool:
            tries.append(_signs_in(node, flood.address, flood.path, flood.username))
            return tries[-1].status_code == 302

        wait_until(gets_in, timeout=LOCK_MAX * 3, poll=3, what=f"{flood.address} to sign in")
        assert all(_locked(t, "") for t in tries[:-1]), flood.address


def test_a_locked_address_refuses_even_the_right_password_until_its_lock_ends(
    node: str,
) -> None:
    person_create(username="petra", role="operator", password=PASSWORD)
    flood = Flood(LOGIN, "127.22.0.1", "petra", ACCOUNT_FAILURES).run(node)
    assert [a.status_code for a in flood.answers] == [200] * (ACCOUNT_FAILURES - 1) + [429]
    assert _locked(flood.answers[-1], "to this account from your address")
    # The lock set just now holds LOCK seconds: the right password is refused unread.
    refused = _signs_in(node, flood.address, LOGIN, "petra")
    assert _locked(refused, "to this account from your address"), refused.text[:300]
    failed = AuditEvent.objects.filter(kind="signin.failed", data__address=flood.address)
    assert failed.filter(data__password_checked=False, status="429").count() == 1
    # Control: the same right password from another address signs in.
    assert _signs_in(node, "127.22.0.2", LOGIN, "petra").status_code == 302


def test_one_address_guessing_many_accounts_is_locked_for_all_of_them(node: str) -> None:
    person_create(username="quinn", role="operator", password=PASSWORD)
    spray = "127.23.0.1"
    answers = []
    with client_from(spray, node) as http:
        token = sign_in_form(http, LOGIN)
        # A name with no account counts like one with an account: nothing tells them apart.
        for n in range(ADDRESS_FAILURES):
            answers.append(sign_in(http, LOGIN, token, f"nobody-{n}", "guess").status_code)
    assert answers == [200] * (ADDRESS_FAILURES - 1) + [429]
    assert [lock["seconds"] for lock in _locks(spray, "address")] == [LOCK]
    assert _locks(spray, "account_from_address") == []
    # Every account is refused from there, the right password included...
    assert _locked(_signs_in(node, spray, LOGIN, "quinn"), "from your address")
    # ...and not from elsewhere.
    assert _signs_in(node, "127.23.0.2", LOGIN, "quinn").status_code == 302


def test_signing_in_forgets_that_accounts_failures_from_that_address(node: str) -> None:
    person_create(username="rosa", role="operator", password=PASSWORD)
    address = "127.24.0.1"
    # Control first: ACCOUNT_FAILURES - 1 wrong, the right one, then as many wrong again
    # stay below the lock, since the sign-in cleared the count.
    Flood(LOGIN, address, "rosa", ACCOUNT_FAILURES - 1).run(node)
    assert _signs_in(node, address, LOGIN, "rosa").status_code == 302
    again = Flood(LOGIN, address, "rosa", ACCOUNT_FAILURES - 1).run(node)
    assert [a.status_code for a in again.answers] == [200] * (ACCOUNT_FAILURES - 1)
    # One more reaches the limit: the count was kept, and locks.
    assert Flood(LOGIN, address, "rosa", 1).run(node).answers[0].status_code == 429


def test_the_sign_in_page_is_unchanged_for_a_first_wrong_password(node: str) -> None:
    person_create(username="sven", role="operator", password=PASSWORD)
    flood = Flood(LOGIN, "127.25.0.1", "sven", 1).run(node)
    answer = flood.answers[0]
    assert answer.status_code == 200 and "did not match" in answer.text
    assert "Retry-After" not in answer.headers and "Too many" not in answer.text
