"""Every team page in a real browser, on a phone and a desktop, against `make run`'s server.

A gunicorn started as `make run` starts it (gunicorn.conf.py, development
mode, DEBUG off as there) serves a site seeded with text that breaks layouts
(tests/pages/hostile.py). A viewer and an operator log in through the form;
every page, at 390 and 1280 px, must be no wider than the viewport, pass
axe-core with no serious or critical violation, and show where keyboard focus
is. A missing entry, a project the reader may not see and an unknown route
get the site's own 404 page, never Django's technical one.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import Any

import pytest

from tests.browser import chromium, require_browser
from tests.live_server import REPO, LiveGunicorn
from tests.pages.live import seeded_site

pytestmark = [pytest.mark.live_server, pytest.mark.browser, pytest.mark.slow]

require_browser()

AXE = REPO / "node_modules" / "axe-core" / "axe.min.js"
WIDTHS = (390, 1280)
# Where the axe-core counts go when GEDWEB_AXE_REPORT names a file (the docs' table).
REPORT = os.environ.get("GEDWEB_AXE_REPORT")


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LiveGunicorn, dict[str, Any]]]:
    if not AXE.exists():
        message = f"{AXE} is missing: `make test` installs it (npm ci)"
        if os.environ.get("CI"):
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    with seeded_site(tmp_path_factory.mktemp("layout"), "tests.pages.hostile") as running:
        yield running


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with chromium() as instance:
        yield instance


def logged_in(browser: Any, server: LiveGunicorn, seeded: dict[str, Any], user: str,
              width: int) -> Any:
    context = browser.new_context(viewport={"width": width, "height": 800})
    # An init script runs in every page before its own and is not bound by
    # the page's CSP, which (rightly) refuses any injected <script>.
    context.add_init_script(path=str(AXE))
    page = context.new_page()
    base = f"http://127.0.0.1:{server.port}"
    page.goto(base + "/accounts/login/")
    page.fill("#id_username", user)
    page.fill("#id_password", seeded["password"])
    with page.expect_navigation():
        page.click("button[type=submit]")
    assert page.url == base + "/", page.url
    return page


def overflow(page: Any) -> dict[str, Any]:
    """How much wider than the viewport the document is, and the widest offenders."""
    return page.evaluate("""() => {
        const view = document.documentElement.clientWidth;
        const wide = [...document.querySelectorAll('body *')]
            .filter(e => e.getBoundingClientRect().right > view + 1)
            .filter(e => ![...e.querySelectorAll('*')].some(
                c => c.getBoundingClientRect().right > view + 1))
            .slice(0, 5)
            .map(e => e.tagName.toLowerCase() + (e.className ? '.' + e.className : ''));
        return {view, width: document.documentElement.scrollWidth, wide};
    }""")


def axe_violations(page: Any) -> list[dict[str, Any]]:
    result = page.evaluate("async () => await axe.run(document, {resultTypes: ['violations']})")
    return [{"id": v["id"], "impact": v["impact"], "nodes": len(v["nodes"]),
             "help": v["help"], "where": [n["target"] for n in v["nodes"][:3]]}
            for v in result["violations"]]


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("user", ["vera", "otto"])
def test_every_page_fits_the_screen_and_passes_axe(browser: Any, site: Any, user: str,
                                                    width: int) -> None:
    server, seeded = site
    page = logged_in(browser, server, seeded, user, width)
    base = f"http://127.0.0.1:{server.port}"
    too_wide, serious, counts = {}, {}, {}
    for path in seeded["pages"]:
        response = page.goto(base + path)
        assert response is not None and response.status == 200, path
        measured = overflow(page)
        if measured["width"] > measured["view"]:
            too_wide[path] = measured
        violations = axe_violations(page)
        counts[path] = len(violations)
        bad = [v for v in violations if v["impact"] in ("serious", "critical")]
        if bad:
            serious[path] = bad
    page.context.close()
    if REPORT:
        with open(REPORT, "a", encoding="utf-8") as report:
            report.write(json.dumps({"user": user, "width": width, "counts": counts}) + "\n")
    assert too_wide == {}, json.dumps(too_wide, indent=1)
    assert serious == {}, json.dumps(serious, indent=1)


@pytest.mark.parametrize("width", WIDTHS)
def test_the_navigation_fits_a_phone_in_one_row(browser: Any, site: Any, width: int) -> None:
    server, seeded = site
    page = logged_in(browser, server, seeded, "otto", width)
    page.goto(f"http://127.0.0.1:{server.port}/p/{seeded['project']}/memory/")
    tabs = page.evaluate("""() => [...document.querySelectorAll('nav.tabs a')]
        .map(a => a.getBoundingClientRect().top)""")
    logout = page.evaluate("""() => {
        const b = document.querySelector('.logout button').getBoundingClientRect();
        return {height: b.height, line: parseFloat(getComputedStyle(
            document.querySelector('.logout button')).lineHeight) || 0};
    }""")
    page.context.close()
    assert len(set(round(top) for top in tabs)) == 1, tabs  # one row (it scrolls sideways)
    assert logout["height"] < 40, logout  # "Log out" on one line


def test_keyboard_focus_is_visible(browser: Any, site: Any) -> None:
    server, seeded = site
    page = logged_in(browser, server, seeded, "vera", 1280)
    page.goto(f"http://127.0.0.1:{server.port}/p/{seeded['project']}/memory/")
    outlines = []
    for _ in range(6):
        page.keyboard.press("Tab")
        outlines.append(page.evaluate("""() => {
            const s = getComputedStyle(document.activeElement);
            return {tag: document.activeElement.tagName, style: s.outlineStyle,
                    width: parseFloat(s.outlineWidth)};
        }"""))
    page.context.close()
    assert all(o["style"] != "none" and o["width"] >= 2 for o in outlines), outlines


@pytest.mark.parametrize("width", WIDTHS)
def test_missing_pages_get_the_sites_own_404(browser: Any, site: Any, width: int) -> None:
    server, seeded = site
    page = logged_in(browser, server, seeded, "vera", width)
    base = f"http://127.0.0.1:{server.port}"
    for path in seeded["missing"]:
        response = page.goto(base + path)
        assert response is not None and response.status == 404, path
        text = page.inner_text("body")
        assert "Not found" in page.title(), (path, page.title())
        assert "URLconf" not in text and "Using the URLconf" not in text, path
        assert page.locator("header.top .brand").count() == 1, path
        assert overflow(page)["width"] <= overflow(page)["view"], path
        assert [v for v in axe_violations(page) if v["impact"] in ("serious", "critical")] == []
    page.context.close()


@pytest.mark.parametrize("width", WIDTHS)
def test_the_pages_before_logging_in_fit_and_pass_axe(browser: Any, site: Any,
                                                       width: int) -> None:
    server, _ = site
    context = browser.new_context(viewport={"width": width, "height": 800})
    context.add_init_script(path=str(AXE))
    page = context.new_page()
    results = {}
    for path in ("/", "/accounts/login/"):
        response = page.goto(f"http://127.0.0.1:{server.port}{path}")
        assert response is not None and response.status == 200, path
        measured = overflow(page)
        serious = [v for v in axe_violations(page) if v["impact"] in ("serious", "critical")]
        results[path] = (measured["width"] <= measured["view"], serious)
    context.close()
    assert results == {"/": (True, []), "/accounts/login/": (True, [])}, results
