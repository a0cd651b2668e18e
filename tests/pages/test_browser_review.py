"""Review, compare and inspect in a real browser (Debian's chromium, Playwright).

An operator approves a candidate and opens the entry it became; a viewer
sees the queue without buttons and a POST forged with their own session and
CSRF token is refused; a member compares two revisions of a document and
opens a delivered context bundle, whose bytes are the API's. Skipped
outside CI when chromium or playwright is missing (tests/browser.py).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from typing import Any

import pytest

from governance.models import ContextDelivery
from memory import services
from memory.models import Membership, MemoryCandidate, MemoryEntry
from tests.browser import chromium, require_browser
from tests.pages.conftest import PASSWORD
from tests.pages.seed import seed_project

pytestmark = [pytest.mark.live_server, pytest.mark.browser]

require_browser()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with chromium() as instance:
        yield instance


@pytest.fixture
def team(live_db, live_server, make_project, django_user_model) -> dict[str, Any]:
    made = make_project("alpha", "Web shop")
    alpha = seed_project(made.project)
    vera = django_user_model.objects.create_user("vera", "vera@example.org", PASSWORD)
    otto = django_user_model.objects.create_user("otto", "otto@example.org", PASSWORD)
    Membership.objects.create(user=vera, project=alpha.project)
    Membership.objects.create(user=otto, project=alpha.project, role=Membership.Role.OPERATOR)
    candidate = services.candidate_create(
        project=alpha.project, author="agent-codex", category="idea", source="planner",
        content="Cache the **formatted price** per currency for the catalogue page.")
    return {"alpha": alpha, "base": live_server.url, "candidate": candidate,
            "token": made.token}


class Session:
    """A signed-in page that records script errors and CSP violations."""

    def __init__(self, browser: Any, base: str, user: str) -> None:
        self.context = browser.new_context()
        self.page = self.context.new_page()
        self.base = base
        self.problems: list[str] = []
        self.page.on("pageerror", lambda error: self.problems.append(str(error)))
        self.page.on("console", lambda message: self.problems.append(message.text)
                     if "Content Security Policy" in message.text else None)
        self.page.goto(base + "/accounts/login/")
        self.page.fill("#id_username", user)
        self.page.fill("#id_password", PASSWORD)
        self.follow("button[type=submit]")

    def follow(self, selector: str) -> None:
        with self.page.expect_navigation():
            self.page.click(selector)

    def open(self, path: str) -> None:
        response = self.page.goto(self.base + path)
        assert response is not None and response.status == 200, path

    def close(self) -> None:
        assert self.problems == []
        self.context.close()


def test_an_operator_approves_and_the_entry_appears(browser, team):
    before = MemoryEntry.objects.filter(project=team["alpha"].project).count()
    otto = Session(browser, team["base"], "otto")
    otto.open("/p/alpha/")
    otto.follow("nav.tabs >> text=Review")
    card = otto.page.locator("article.candidate.pending")
    assert card.count() == 1
    assert card.locator("strong").inner_text() == "formatted price"
    assert "proposed by agent-codex" in card.inner_text()
    otto.follow("article.candidate.pending button.approve")
    assert otto.page.url == team["base"] + "/p/alpha/review/"
    message = otto.page.inner_text("ul.messages")
    assert f"now memory entry #{before + 1}" in message
    assert otto.page.locator("article.candidate.pending").count() == 0
    otto.follow(f"article.candidate.approved >> text=entry #{before + 1}")
    assert otto.page.inner_text("main h1").startswith(f"Entry #{before + 1}")
    assert "formatted price" in otto.page.inner_text("main")
    # Reloading the queue after the decision posts nothing again (303 to a GET).
    otto.page.reload()
    assert MemoryEntry.objects.filter(project=team["alpha"].project).count() == before + 1
    otto.close()


def test_a_viewer_sees_no_buttons_and_a_forged_post_is_refused(browser, team):
    candidate = team["candidate"]
    vera = Session(browser, team["base"], "vera")
    vera.open("/p/alpha/review/")
    assert vera.page.locator("article.candidate.pending").count() == 1
    assert vera.page.locator("article.candidate button").count() == 0
    assert vera.page.locator("form[method=post][action*='/review/']").count() == 0
    # The viewer's own session and a valid CSRF token: refused all the same.
    token = next(c["value"] for c in vera.context.cookies() if c["name"] == "csrftoken")
    response = vera.page.request.post(
        f"{team['base']}/p/alpha/review/{candidate.uuid}/approve",
        form={"csrfmiddlewaretoken": token},
        headers={"Referer": team["base"] + "/p/alpha/review/"}, max_redirects=0)
    assert response.status == 403
    assert "CSRF" not in response.text()  # refused for the role, not for the token
    candidate.refresh_from_db()
    assert candidate.status == MemoryCandidate.Status.PENDING and candidate.entry is None
    vera.close()


def test_a_member_compares_two_revisions(browser, team):
    vera = Session(browser, team["base"], "vera")
    vera.open("/p/alpha/documents/adr/0001-orders-on-postgresql.md")
    vera.page.select_option("form.compare select[name=from]", "1")
    vera.page.select_option("form.compare select[name=to]", "2")
    vera.follow("form.compare button")
    assert "/p/alpha/compare/adr/0001-orders-on-postgresql.md?from=1&to=2" in vera.page.url
    assert vera.page.inner_text("main h1").endswith("revision 1 → 2")
    removed = vera.page.locator("table.diff tr.delete").all_inner_texts()
    added = vera.page.locator("table.diff tr.insert").all_inner_texts()
    assert len(removed) == 1 and "reporting reads a replica." in removed[0]
    assert len(added) == 1 and "5-minute lag budget" in added[0]
    vera.close()


def test_a_member_opens_a_delivered_bundle(browser, team):
    vera = Session(browser, team["base"], "vera")
    vera.open("/p/alpha/context/")
    delivery = ContextDelivery.objects.filter(project=team["alpha"].project, format="text"
                                              ).order_by("id").first()
    vera.follow(f"a[href='/p/alpha/context/{delivery.pk}']")
    assert vera.page.inner_text("main h1") == f"Context delivery #{delivery.pk}"
    assert vera.page.locator("section.bundle-section").count() >= 3
    assert delivery.sha256 in vera.page.inner_text("dl.facts")
    raw = vera.page.request.get(f"{team['base']}/p/alpha/context/{delivery.pk}/bundle")
    assert raw.status == 200
    assert hashlib.sha256(raw.body()).hexdigest() == delivery.sha256
    vera.open("/p/alpha/standards/")
    vera.follow("dl.facts >> text=served")
    assert vera.page.url == team["base"] + "/p/alpha/STANDARDS.md"
    vera.close()
