"""The pages' details in a real browser, at 390 and 1280 px (issue 36 §6-7).

Against the hostile site of test_layout.py (a gunicorn started as `make run`
starts it): no ordinary word is split across two lines on any page, the tab
strip shows on a phone that it scrolls, the timeline's filters fold there,
the compare control is styled wherever it shows, and the overview's charts
keep to the screen with legible words.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.browser import require_browser
from tests.pages import test_layout as layout
from tests.pages.test_layout import WIDTHS, logged_in

# The layout tests' fixtures: their hostile site and browser, one of each for this module.
site = layout.site
browser = layout.browser

pytestmark = [pytest.mark.live_server, pytest.mark.browser, pytest.mark.slow]

require_browser()

# Every ordinary word (letters only, as in "allowed") laid out on the page, and those
# whose letters land on more than one line: a Range over the word has one client rect
# per line box it spans. Tokens of letters and digits (hashes, ids) are not words here:
# those may break where they must.
SPLIT_WORDS = """() => {
    const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
    const split = [], seen = new Set();
    let checked = 0;
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
        const parent = node.parentElement;
        if (!parent || parent.closest('script, style, select, option, svg, title')) continue;
        const folded = parent.closest('details:not([open])');
        if (folded && !parent.closest('summary')) continue;  // not shown: a closed <details>
        for (const match of node.data.matchAll(/(?<![\\w-])[A-Za-z]{2,24}(?![\\w-])/g)) {
            const range = document.createRange();
            range.setStart(node, match.index);
            range.setEnd(node, match.index + match[0].length);
            const rects = [...range.getClientRects()].filter(r => r.width > 0 && r.height > 0);
            if (!rects.length) continue;  // not laid out (a closed <details>, hidden text)
            checked += 1;
            seen.add(match[0]);
            const lines = new Set(rects.map(r => Math.round(r.top)));
            if (lines.size > 1) split.push(match[0] + ' in <' + parent.tagName.toLowerCase()
                                           + ' class="' + parent.className + '">');
        }
    }
    return {checked, split: split.slice(0, 10), allowed: seen.has('allowed')};
}"""


@pytest.mark.parametrize("width", WIDTHS)
def test_no_word_breaks_in_the_middle_on_any_page(browser: Any, site: Any, width: int) -> None:
    server, seeded = site
    page = logged_in(browser, server, seeded, "otto", width)
    base = f"http://127.0.0.1:{server.port}"
    split, checked = {}, {}
    for path in seeded["pages"]:
        page.goto(base + path)
        found = page.evaluate(SPLIT_WORDS)
        checked[path] = found
        if found["split"]:
            split[path] = found["split"]
    page.context.close()
    assert split == {}, split
    # Not vacuous: every page laid words out, and the guard table's "allowed" among them
    # (it read "allowe d" in a squeezed table cell before).
    assert all(found["checked"] > 20 for found in checked.values()), checked
    work_page = next(path for path in checked if path.endswith(f"/work/{seeded['work']}/"))
    assert checked[work_page]["allowed"], checked[work_page]


def test_the_tab_strip_shows_on_a_phone_that_it_scrolls(browser: Any, site: Any) -> None:
    server, seeded = site
    shown = {}
    for width in WIDTHS:
        page = logged_in(browser, server, seeded, "vera", width)
        page.goto(f"http://127.0.0.1:{server.port}/p/{seeded['project']}/")
        shown[width] = page.evaluate("""() => {
            const nav = document.querySelector('nav.tabs');
            const style = getComputedStyle(nav);
            const before = nav.scrollLeft;
            nav.scrollLeft = nav.scrollWidth;
            return {overflows: nav.scrollWidth > nav.clientWidth, scrolled: nav.scrollLeft > before,
                    shadows: (style.backgroundImage.match(/radial-gradient/g) || []).length,
                    attachments: style.backgroundAttachment};
        }""")
        page.context.close()
    phone, desktop = shown[390], shown[1280]
    assert phone["overflows"] and phone["scrolled"], phone
    # Edge shadows bound to the strip, under covers bound to its content: a shadow shows
    # exactly where tabs are hidden, at either end.
    assert phone["shadows"] == 2 and phone["attachments"] == "local, local, scroll, scroll", phone
    assert not desktop["overflows"], desktop


@pytest.mark.parametrize("width", WIDTHS)
def test_the_timeline_filters_fold_on_a_phone(browser: Any, site: Any, width: int) -> None:
    server, seeded = site
    page = logged_in(browser, server, seeded, "vera", width)
    base = f"http://127.0.0.1:{server.port}/p/{seeded['project']}/memory/"
    page.goto(base)
    category = page.locator("select[name=category]")
    summary = page.locator("form.filters summary")
    assert page.locator("input[name=q]").is_visible()
    if width == 390:
        assert summary.is_visible() and summary.inner_text().startswith("Filters")
        assert not category.is_visible()
        summary.click()
        assert category.is_visible()
        # A filter in use keeps them unfolded, so it shows what is applied.
        page.goto(base + "?category=decision")
        assert page.locator("select[name=category]").is_visible()
    else:
        assert not summary.is_visible() and category.is_visible()
        assert page.locator("input[name=since]").is_visible()
    page.context.close()


@pytest.mark.parametrize("width", WIDTHS)
def test_the_compare_control_is_styled(browser: Any, site: Any, width: int) -> None:
    server, seeded = site
    page = logged_in(browser, server, seeded, "vera", width)
    base = f"http://127.0.0.1:{server.port}/p/{seeded['project']}"
    styles = {}
    for path in ("/documents/adr/0002-hostile.md", "/compare/adr/0002-hostile.md?from=1&to=2",
                 f"/work/{seeded['work']}/revisions/2"):
        page.goto(base + path)
        styles[path] = page.evaluate("""() => {
            const form = document.querySelector('form.compare');
            const button = form.querySelector('button'), select = form.querySelector('select');
            const box = form.getBoundingClientRect();
            return {button: getComputedStyle(button).backgroundColor,
                    select: Math.round(select.getBoundingClientRect().height),
                    form: getComputedStyle(form).backgroundColor,
                    inside: box.left >= 0 && box.right <= document.documentElement.clientWidth};
        }""")
    page.context.close()
    for path, style in styles.items():
        # The site's accent button and a boxed form on every page, not the browser's defaults.
        assert style["button"] == "rgb(36, 83, 166)", (path, style)
        assert style["form"] == "rgb(245, 247, 250)" and style["select"] >= 30, (path, style)
        assert style["inside"], (path, style)


@pytest.mark.parametrize("width", WIDTHS)
def test_the_charts_fit_and_read_on_any_screen(browser: Any, site: Any, width: int) -> None:
    server, seeded = site
    page = logged_in(browser, server, seeded, "vera", width)
    page.goto(f"http://127.0.0.1:{server.port}/p/{seeded['project']}/")
    charts = page.evaluate("""() => [...document.querySelectorAll('figure.chart')].map(f => {
        const svg = f.querySelector('svg'), legend = f.querySelector('.legend li');
        const words = [...f.querySelectorAll('figcaption, .legend li, .axis span')];
        return {id: f.id, svg: svg ? svg.getBoundingClientRect().width : null,
                right: Math.max(...[...f.querySelectorAll('*')]
            .filter(e => !e.closest('details:not([open]) > :not(summary)'))
            .map(e => e.getBoundingClientRect().right)),
                smallest: Math.min(...words.map(e => parseFloat(getComputedStyle(e).fontSize))),
                bars: svg ? [...svg.querySelectorAll('rect')]
                    .reduce((n, r) => n + +r.dataset.count, 0) : 0,
                label: svg ? svg.getAttribute('aria-label') : null};
    })""")
    view = page.evaluate("() => document.documentElement.clientWidth")
    page.context.close()
    assert [c["id"] for c in charts] == ["chart-category", "chart-author", "chart-waiting"]
    for chart in charts[:2]:
        # Every entry of the hostile site is from today: the bars hold them all.
        assert chart["bars"] == seeded["entries"], chart
        assert f"{seeded['entries']} in all" in chart["label"], chart
        assert chart["svg"] > min(view, 320) * 0.8, chart  # as wide as the column allows
    for chart in charts:
        assert chart["right"] <= view, chart
        assert chart["smallest"] >= 11.5, chart  # HTML words, never shrunk with the SVG
