"""The team pages in a real browser: Debian's chromium driven by Playwright.

The site is a gunicorn started as `make run` starts it (tests/pages/live.py),
seeded by tests/pages/browser_seed.py. A person logs in through the form and
browses, searches and opens an entry; a corpus of script-injection payloads
stored as agent text never runs, first with the CSP enforced and then with
the browser told to ignore it, so the sanitiser is proven on its own. The
browser comes from tests/browser.py: skipped outside CI where chromium or
playwright is missing, a failure on CI.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest

from tests.browser import chromium, require_browser
from tests.pages.live import seeded_site
from tests.pages.seed import PASSWORD
from tests.pages.xss import PAYLOADS

pytestmark = [pytest.mark.live_server, pytest.mark.browser]

require_browser()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with chromium() as instance:
        yield instance


class Watch:
    """A page plus everything it did that script injection would show: dialogs, the
    window.__xss marker, CSP violations and page errors."""

    def __init__(self, page: Any, base: str) -> None:
        self.page, self.base = page, base
        self.dialogs: list[str] = []
        self.console: list[str] = []
        self.errors: list[str] = []
        page.on("dialog", self._dialog)
        page.on("console", lambda message: self.console.append(message.text))
        page.on("pageerror", lambda error: self.errors.append(str(error)))

    def _dialog(self, dialog: Any) -> None:
        self.dialogs.append(dialog.message)
        dialog.dismiss()

    def open(self, path: str) -> Any:
        response = self.page.goto(self.base + path)
        assert response is not None and response.status == 200, path
        return response

    def marker(self) -> Any:
        return self.page.evaluate("() => window.__xss")

    def csp_violations(self) -> list[str]:
        return [text for text in self.console if "Content Security Policy" in text]


@pytest.fixture(scope="module")
def people(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    with seeded_site(tmp_path_factory.mktemp("browser"), "tests.pages.browser_seed") as (
            server, facts):
        yield {"base": f"http://127.0.0.1:{server.port}", "server": server, **facts}


def follow(page: Any, selector: str) -> None:
    """Click a link or button and wait until the page it leads to has loaded."""
    with page.expect_navigation():
        page.click(selector)


def log_in(watch: Watch) -> None:
    watch.open("/accounts/login/")
    watch.page.fill("#id_username", "vera")
    watch.page.fill("#id_password", PASSWORD)
    follow(watch.page, "button[type=submit]")
    assert watch.page.url == watch.base + "/"


def test_a_member_logs_in_browses_searches_and_opens_an_entry(browser, people):
    context = browser.new_context()
    watch = Watch(context.new_page(), people["base"])
    watch.page.goto(people["base"] + "/p/alpha/memory/")
    assert "/accounts/login/" in watch.page.url  # anonymous: sent to log in
    log_in(watch)

    page = watch.page
    assert page.locator("table.list a", has_text="alpha").count() == 1
    assert "beta" not in page.inner_text("main")
    follow(page, "text=alpha")
    assert page.inner_text("main h1").startswith("Web shop")
    assert "integer cents, never floats" in page.inner_text("main")  # PROJECT.md table

    follow(page, "nav.tabs >> text=Memory")
    assert page.locator("article.entry").count() == 11
    page.fill("input[name=q]", "postgresql")
    follow(page, "form.filters button")
    assert re.findall(r"#\d+", " ".join(page.locator("a.seq").all_inner_texts())) == [
        "#11", "#10", "#1"]
    page.select_option("select[name=category]", "decision")
    page.fill("input[name=q]", "")
    follow(page, "form.filters button")
    assert page.locator("article.entry").count() == 5

    follow(page, "a.seq >> text=#10")
    assert page.inner_text("main h1").startswith("Entry #10")
    chain = page.inner_text("ol.chain")
    assert "#9" in chain and "#11" in chain

    follow(page, "nav.tabs >> text=Documents")
    follow(page, "text=adr/0001-orders-on-postgresql.md")
    assert "5-minute lag budget" in page.inner_text("article.md")
    follow(page, "text=revision 1")
    assert "5-minute lag budget" not in page.inner_text("article.md")

    follow(page, "nav.tabs >> text=Work")
    follow(page, "text=Fix coupon stacking race in checkout")
    assert "allowed" in page.inner_text("table.guard")

    for tab in ("Standards", "Skills", "Context log", "Mirror", "Overview"):
        follow(page, f"nav.tabs >> text={tab}")
        assert page.locator("main > h1").count() == 1

    assert page.goto(people["base"] + "/p/beta/").status == 404
    assert watch.csp_violations() == [] and watch.errors == [] and watch.dialogs == []
    context.close()


@pytest.mark.parametrize("bypass_csp", [False, True], ids=["csp-enforced", "csp-bypassed"])
def test_a_stored_xss_corpus_never_executes(browser, people, bypass_csp):
    pages = people["xss_pages"]
    # With bypass_csp the browser ignores the policy, so only the sanitiser stands
    # between the payloads and the page.
    context = browser.new_context(bypass_csp=bypass_csp)
    watch = Watch(context.new_page(), people["base"])
    log_in(watch)
    for path in pages:
        watch.open(path)
        for link in watch.page.locator("main a[href]").all()[:3]:
            link.hover()  # mouse-over handlers, had any survived
        assert watch.marker() is None, path
    assert watch.dialogs == []
    assert watch.errors == []
    # Nothing inline was even attempted: the sanitiser removed it before the CSP had to.
    assert watch.csp_violations() == []
    context.close()


def test_the_corpus_is_live_when_inserted_unsanitised(browser):
    """The control: the same detector sees payloads run when nothing cleans them."""
    context = browser.new_context(bypass_csp=True)
    page = context.new_page()
    page.on("dialog", lambda dialog: dialog.dismiss())
    ran = 0
    for payload in PAYLOADS:
        page.set_content(f"<main>{payload}</main>")
        page.wait_for_timeout(50)
        ran += page.evaluate("() => window.__xss") == 1
    assert ran >= 10, ran
    context.close()


def test_the_api_docs_and_admin_login_work_under_the_policy(browser, people):
    context = browser.new_context()
    watch = Watch(context.new_page(), people["base"])
    watch.open("/v1/docs")
    watch.page.wait_for_selector(".swagger-ui .info .title", timeout=20_000)
    assert "GedWeb API" in watch.page.inner_text(".swagger-ui .info .title")
    watch.open("/admin/login/")
    assert watch.page.locator("#id_username").count() == 1
    assert watch.csp_violations() == [] and watch.errors == []
    context.close()


def test_operators_use_the_admin_under_the_policy(browser, people):
    context = browser.new_context()
    watch = Watch(context.new_page(), people["base"])
    watch.open("/admin/login/")
    watch.page.fill("#id_username", "root")
    watch.page.fill("#id_password", PASSWORD)
    follow(watch.page, "input[type=submit]")
    watch.open("/admin/memory/project/alpha/change/")
    watch.page.click("#memberships-group .add-row a")  # the membership inline's JS
    watch.page.click("#memberships-group .select2-selection")  # the user autocomplete
    watch.page.wait_for_selector(".select2-results__option >> text=vera")
    watch.open("/admin/memory/membership/")
    assert watch.csp_violations() == [] and watch.errors == []
    context.close()

