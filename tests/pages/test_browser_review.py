"""Review, compare and inspect in a real browser (Debian's chromium, Playwright).

An operator approves a candidate and opens the entry it became; a viewer
sees the queue without buttons and a POST forged with their own session and
CSRF token is refused; a member compares two revisions of a document and
opens a delivered context bundle, whose bytes are the API's. The site is a
gunicorn started as `make run` starts it (tests/pages/live.py), seeded by
tests/pages/browser_seed.py; what changed is read from its database. Skipped
outside CI when chromium or playwright is missing (tests/browser.py).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from typing import Any

import pytest

from tests.browser import chromium, require_browser
from tests.live_server import LiveGunicorn
from tests.pages.live import seeded_site
from tests.pages.seed import PASSWORD

pytestmark = [pytest.mark.live_server, pytest.mark.browser]

require_browser()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with chromium() as instance:
        yield instance


@pytest.fixture(scope="module")
def team(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    with seeded_site(tmp_path_factory.mktemp("review"), "tests.pages.browser_seed") as (
            server, facts):
        yield {"base": f"http://127.0.0.1:{server.port}", "server": server, **facts}


def entry_count(server: LiveGunicorn, project: str) -> int:
    return server.sql("SELECT count(*) FROM memory_memoryentry WHERE project_id = %s",
                      (project,))[0][0]


def candidate_state(server: LiveGunicorn, candidate_id: int) -> tuple[str, Any]:
    return server.sql("SELECT status, entry_id FROM memory_memorycandidate WHERE id = %s",
                      (candidate_id,))[0]


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
    server = team["server"]
    before = entry_count(server, "alpha")
    otto = Session(browser, team["base"], "otto")
    otto.open("/p/alpha/")
    otto.follow("nav.tabs >> text=Review")
    card = otto.page.locator("article.candidate.pending")
    assert card.count() == 1
    assert card.locator("strong").inner_text() == "formatted price"
    assert "proposed by token “agent-codex”" in card.inner_text()
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
    assert entry_count(server, "alpha") == before + 1
    status, entry_id = candidate_state(server, team["approve"]["id"])
    assert status == "approved" and entry_id is not None
    otto.close()


def test_a_viewer_sees_no_buttons_and_a_forged_post_is_refused(browser, team):
    candidate = team["forged"]
    before = entry_count(team["server"], "gamma")
    vera = Session(browser, team["base"], "vera")
    vera.open("/p/gamma/review/")
    assert vera.page.locator("article.candidate.pending").count() == 1
    assert vera.page.locator("article.candidate button").count() == 0
    assert vera.page.locator("form[method=post][action*='/review/']").count() == 0
    # The viewer's own session and a valid CSRF token: refused all the same.
    token = next(c["value"] for c in vera.context.cookies() if c["name"] == "csrftoken")
    response = vera.page.request.post(
        f"{team['base']}/p/gamma/review/{candidate['uuid']}/approve",
        form={"csrfmiddlewaretoken": token},
        headers={"Referer": team["base"] + "/p/gamma/review/"}, max_redirects=0)
    assert response.status == 403
    assert "CSRF" not in response.text()  # refused for the role, not for the token
    assert candidate_state(team["server"], candidate["id"]) == ("pending", None)
    assert entry_count(team["server"], "gamma") == before
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
    delivery = team["delivery"]
    vera.follow(f"a[href='/p/alpha/context/{delivery['id']}']")
    assert vera.page.inner_text("main h1") == f"Context delivery #{delivery['id']}"
    assert vera.page.locator("section.bundle-section").count() >= 3
    assert delivery["sha256"] in vera.page.inner_text("dl.facts")
    raw = vera.page.request.get(f"{team['base']}/p/alpha/context/{delivery['id']}/bundle")
    assert raw.status == 200
    assert hashlib.sha256(raw.body()).hexdigest() == delivery["sha256"]
    vera.open("/p/alpha/standards/")
    vera.follow("dl.facts >> text=served")
    assert vera.page.url == team["base"] + "/p/alpha/STANDARDS.md"
    vera.close()
