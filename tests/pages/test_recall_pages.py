"""The memory search box's two ways of matching: "Best matches" (recall) and "Exact words".

Best matches are memory.selectors.entry_recall in hybrid mode, the current
view, the page's filters; exact words are the timeline's full-text search.
The suite's recall embedder is the small deterministic one ("hashing", from
the autouse fixture in tests/django_fixtures.py): an entry has a vector only
once the indexer ran (``index()`` below). The last tests drive Debian's
chromium against a gunicorn started as `make run` starts it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from memory import services, views
from memory.models import Membership, MemoryEntry
from memory.recall import indexer, vectors
from tests.browser import chromium, require_browser
from tests.live_server import REPO
from tests.pages.conftest import login
from tests.pages.live import seeded_site
from tests.pages.seed import PASSWORD

# The question of most tests and an answer sharing some of its words but not all of them:
# "every word" finds nothing.
QUESTION = "Why do the workers keep crashing on Windows?"
ANSWER = "Workers crash on Windows: the spawn start method re-imports the settings module."
BETA_ANSWER = "Workers crash on Windows in the lab too: quokka build agents."


@pytest.fixture
def vera(site):
    return login(site.member)


def index() -> int:
    """Run the indexer until it has seen every entry; how many it embedded."""
    embedder = vectors.embedder()
    indexed = 0
    while True:
        result = indexer.follow_once(embedder)
        indexed += result.indexed
        if result.seen == 0:
            return indexed


def seqs(body: str) -> list[int]:
    return [int(n) for n in re.findall(r'class="seq" href="[^"]+">#(\d+)</a>', body)]


def rows(body: str) -> list[str]:
    return re.findall(r'<article class="entry.*?</article>', body, re.S)


def page(client: Any, **params: str) -> str:
    response = client.get("/p/alpha/memory/", params)
    assert response.status_code == 200
    return response.content.decode()


def add(project: Any, content: str, category: str = "finding", source: str = "agent",
        corrects: int | None = None) -> MemoryEntry:
    return services.memory_entry_create(project=project, author="t", category=category,
                                        source=source, content=content,
                                        corrects=corrects).entry


def written_days_ago(project: Any, days: int, content: str) -> int:
    """An entry with an earlier created_at, as an import keeps a row's own time."""
    row = services.ImportRow(key=f"old-{days}-{content}", category="history", content=content,
                             source="import", created_at=datetime.now(UTC) - timedelta(days=days),
                             label=content)
    services.memory_entries_import(project=project, rows=[row])
    return MemoryEntry.objects.get(project=project, content=content).seq


def checked(body: str) -> list[str]:
    """The values of the match radio buttons that are checked."""
    return re.findall(r'<input type="radio" name="match" value="(\w+)" checked>', body)


@pytest.fixture
def answered(site) -> MemoryEntry:
    """ANSWER in alpha, a near copy in beta, every entry indexed."""
    entry = add(site.alpha.project, ANSWER)
    add(site.beta.project, BETA_ANSWER)
    assert index() > 0
    return entry


# --- which way a search matches --------------------------------------------------------


@pytest.mark.parametrize(("text", "question"), [
    ("Why do the workers crash?", True),
    ("where is the runbook", True),
    ("How's the deploy going", True),
    ("“What” broke the build", True),
    ("DOES staging use backups", True),
    ("settings.py?", True),
    ("postgresql", False),
    ("elasticsearch 7", False),
    ("coupon race", False),
    ("whatever works", False),
    ("", False),
    ("   ", False),
])
def test_a_question_is_a_question_mark_or_a_question_word_first(text, question):
    assert views.looks_like_question(text) is question


def test_a_question_finds_an_entry_that_exact_words_miss(site, vera, answered):
    exact = page(vera, q=QUESTION, match="exact")
    assert seqs(exact) == [] and "0 entries match." in exact and "No entries match." in exact

    best = page(vera, q=QUESTION, match="best")
    shown = seqs(best)
    assert shown[0] == answered.seq
    assert f"Best matches for “{QUESTION}”" in best
    assert f"{len(shown)} best matches, best first." in best
    # Ranked best first on one page: no pager, at most RECALL_LIMIT rows.
    assert 'rel="next"' not in best and 'rel="prev"' not in best
    assert len(shown) <= views.RECALL_LIMIT
    first = best[best.index('<ol class="hits">'):]
    first = first[:first.index("</li>")]
    assert "Found by its words and meaning" in first
    # The question's own words are marked, its stop words are not.
    assert "<mark>Workers</mark>" in first and "<mark>Windows</mark>" in first
    assert "<mark>the</mark>" not in best and "<mark>on</mark>" not in best


def test_without_a_choice_a_question_gets_best_matches_and_words_get_exact(site, vera,
                                                                            answered):
    asked = page(vera, q=QUESTION)
    assert seqs(asked) == seqs(page(vera, q=QUESTION, match="best"))
    assert "Best matches for" in asked and checked(asked) == ["best"]
    words = page(vera, q="postgresql")
    assert "Search results for “postgresql”" in words and checked(words) == ["exact"]
    assert "best match" not in words
    # The unsearched timeline checks neither: its first search chooses by its shape.
    assert checked(page(vera)) == []
    assert checked(page(vera, match="best")) == ["best"]


def test_match_exact_keeps_todays_results(site, vera, answered):
    for query in ("postgresql", "elasticsearch 7", "coupons", "zeppelin"):
        today = page(vera, q=query)
        exact = page(vera, q=query, match="exact")
        assert seqs(exact) == seqs(today), query
        assert re.search(r'class="count" role="status">([^<]*)<', exact).group(1) == \
            re.search(r'class="count" role="status">([^<]*)<', today).group(1)
    # Newest first, every word, as the full-text search gives it.
    postgres = seqs(page(vera, q="postgresql", match="exact"))
    assert len(postgres) >= 2 and postgres == sorted(postgres, reverse=True)
    assert all("postgresql" in MemoryEntry.objects.get(project=site.alpha.project, seq=seq)
               .content.lower() for seq in postgres)


def test_a_question_searched_by_exact_words_pages_on_by_exact_words(site, vera):
    project = site.alpha.project
    for i in range(60):
        add(project, f"How kestrel pairs nest, sighting {i}", category="bulk")
    first = page(vera, q="how kestrel", match="exact")
    assert len(seqs(first)) == 50 and "60 entries match." in first
    assert checked(first) == ["exact"]
    link = re.search(r'rel="next" href="\?([^"]+)"', first).group(1).replace("&amp;", "&")
    assert {"q=how%20kestrel", "match=exact"} <= set(link.split("&"))
    second = vera.get(f"/p/alpha/memory/?{link}").content.decode()
    assert len(seqs(second)) == 10 and "Search results for" in second
    assert set(seqs(first)).isdisjoint(seqs(second))
    # Without the choice the same words are a question: one ranked page of best matches.
    best = page(vera, q="how kestrel")
    assert len(seqs(best)) == views.RECALL_LIMIT and 'rel="next"' not in best


def test_an_impossible_match_is_no_match_at_all(site, vera, answered):
    for value in ("bogus", "BEST", "", " ", "exact;drop", "b" * 300):
        assert seqs(page(vera, q="postgresql", match=value)) == seqs(page(vera, q="postgresql"))
        assert seqs(page(vera, q=QUESTION, match=value)) == seqs(page(vera, q=QUESTION))
    assert "Best matches for" in page(vera, q=QUESTION, match="bogus")
    assert checked(page(vera, q="postgresql", match="bogus")) == ["exact"]


def test_exact_words_that_find_nothing_offer_best_matches(site, vera, answered):
    body = page(vera, q=QUESTION, match="exact")
    link = re.search(r'<p class="hint">.*?href="\?([^"]+)"', body).group(1).replace("&amp;", "&")
    assert "match=best" in link.split("&")
    assert seqs(vera.get(f"/p/alpha/memory/?{link}").content.decode())[0] == answered.seq
    # A search that finds something has no such hint.
    assert 'class="hint"' not in page(vera, q="postgresql", match="exact")


# --- what best matches show ------------------------------------------------------------


def test_best_matches_apply_the_category_source_and_date_filters(site, vera, answered):
    project = site.alpha.project
    note = add(project, "Windows workers crash less with the fork server.", category="note",
               source="operator")
    index()
    in_category = seqs(page(vera, q=QUESTION, category="note"))
    assert in_category and note.seq in in_category
    assert all(MemoryEntry.objects.get(project=project, seq=s).category == "note"
               for s in in_category)
    from_operator = seqs(page(vera, q=QUESTION, source="operator"))
    assert note.seq in from_operator and answered.seq not in from_operator
    assert all(MemoryEntry.objects.get(project=project, seq=s).source == "operator"
               for s in from_operator)
    assert seqs(page(vera, q=QUESTION, source="nobody")) == []
    assert "No entries match." in page(vera, q=QUESTION, source="nobody")

    old = written_days_ago(project, 10, "Windows workers crashed in the old release.")
    index()
    today = datetime.now(UTC).date()
    until = (today - timedelta(days=6)).isoformat()
    assert seqs(page(vera, q=QUESTION, until=until)) == [old]
    recent = seqs(page(vera, q=QUESTION, since=today.isoformat()))
    assert old not in recent and answered.seq in recent
    # An impossible filter value is ignored, as on the timeline.
    assert seqs(page(vera, q=QUESTION, category="x" * 500)) == seqs(page(vera, q=QUESTION))


def test_best_matches_leave_out_corrected_entries_and_show_corrections(site, vera):
    alpha = site.alpha
    index()
    body = page(vera, q="What does search run on, Elasticsearch or PostgreSQL?")
    shown = seqs(body)
    assert alpha.second_correction.seq in shown
    assert alpha.original.seq not in shown and alpha.correction.seq not in shown
    row = next(r for r in rows(body) if f">#{alpha.second_correction.seq}</a>" in r)
    # The row as the timeline shows it: what it corrects, by seq, linked.
    assert (f'corrects <a href="/p/alpha/memory/{alpha.correction.seq}">'
            f'#{alpha.correction.seq}</a>') in row
    timeline = page(vera)
    assert f'corrects <a href="/p/alpha/memory/{alpha.correction.seq}">' in timeline


def test_best_matches_are_the_projects_current_entries_only(site, vera):
    """Recall may rank document sections too; the memory page lists entries, up to its limit."""
    index()
    body = page(vera, q="Which database do orders stay on?")
    current = MemoryEntry.objects.for_project(site.alpha.project).current().count()
    assert current < views.RECALL_LIMIT
    # Every current entry has a cosine, so all of them are ranked; nothing else is listed.
    assert len(seqs(body)) == len(rows(body)) == current
    hits = body[body.index('<ol class="hits">'):]
    assert hits[:hits.index("</ol>")].count("</li>") == current
    assert "adr/0001-orders-on-postgresql.md" not in body


def test_another_projects_entries_never_appear(site, vera, answered):
    body = page(vera, q=QUESTION)
    assert seqs(body)
    assert "/p/beta/" not in body and "quokka" not in body and "agent-beta" not in body
    for row in rows(body):
        assert "lab too" not in row
    # beta's word in the question: alpha's entries only, still.
    body = page(vera, q="What are the quokka zanzibar plans?")
    assert "agent-beta" not in body and all("quokka" not in row for row in rows(body))
    # A member of beta alone gets 404 for alpha's best matches, as for every alpha page.
    assert login(site.outsider).get("/p/alpha/memory/", {"q": QUESTION}).status_code == 404


def test_the_page_says_when_recall_by_meaning_is_unavailable(site, vera, answered, settings):
    settings.RECALL_MODEL = "off"
    body = page(vera, q=QUESTION)
    assert "Searching by meaning is unavailable" in body
    # The answer is the keyword ranking: the entry is still found, by its words.
    assert seqs(body)[0] == answered.seq
    assert "Found by its words and meaning" not in body and "Found by its words" in body
    assert "not yet searched by meaning" not in body
    settings.RECALL_MODEL = "hashing"
    assert "Searching by meaning is unavailable" not in page(vera, q=QUESTION)


def test_the_page_says_how_many_new_entries_are_not_yet_searched_by_meaning(site, vera):
    project = site.alpha.project
    entry = add(project, ANSWER)
    head = MemoryEntry.objects.filter(project=project).count()
    body = page(vera, q=QUESTION)
    assert f"The {head} newest entries are not yet searched by meaning" in body
    # The keyword ranking is never behind: the entry is found by its words meanwhile.
    assert seqs(body)[0] == entry.seq and "Found by its words" in body
    index()
    body = page(vera, q=QUESTION)
    assert "not yet searched by meaning" not in body
    assert "Found by its words and meaning" in body
    add(project, "Windows CI runners are slow.")
    assert "The newest entry is not yet searched by meaning" in page(vera, q=QUESTION)
    # Exact words say nothing of the index.
    assert "not yet searched by meaning" not in page(vera, q=QUESTION, match="exact")


def test_best_matches_cost_the_same_queries_for_2_and_20_hits(make_project, django_user_model):
    user = django_user_model.objects.create_user("q", password=PASSWORD)
    counts = []
    for n, project_id in ((2, "small"), (20, "large")):
        project = make_project(project_id).project
        Membership.objects.create(user=user, project=project)
        first = None
        for i in range(n):
            entry = add(project, f"entry {i} kestrel nests", category=f"c{i % 3}",
                        corrects=first.seq if first and i % 3 == 1 else None)
            first = first or entry
        index()
        client = login(user)
        client.get(f"/p/{project_id}/memory/")  # session and caches warm
        with CaptureQueriesContext(connection) as queries:
            body = client.get(f"/p/{project_id}/memory/", {"q": "where do kestrels nest?"})
        assert body.status_code == 200 and seqs(body.content.decode())
        counts.append(len(queries))
    assert counts[0] == counts[1], counts


# --- in a browser ----------------------------------------------------------------------

BROWSER_QUESTION = "why do two coupons apply at checkout"
AXE = REPO / "node_modules" / "axe-core" / "axe.min.js"


@pytest.fixture(scope="module")
def recall_site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """The browser tests' seeded site, its entries indexed by the hashing embedder."""
    require_browser()
    with seeded_site(tmp_path_factory.mktemp("recall"), "tests.pages.browser_seed",
                     GEDWEB_RECALL_MODEL="hashing") as (server, facts):
        done = server.manage("memory", "index")
        assert done.returncode == 0, done.stdout + done.stderr
        # One entry after the index: the pages say it is not yet searched by meaning.
        done = server.manage("memory", "add", "--project", "alpha", "--category", "finding",
                             "--content", "Checkout coupons were re-validated after the race fix.")
        assert done.returncode == 0, done.stdout + done.stderr
        yield {"base": f"http://127.0.0.1:{server.port}", "server": server, **facts}


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with chromium() as instance:
        yield instance


def logged_in(browser: Any, base: str, width: int = 1280, axe: bool = False) -> Any:
    context = browser.new_context(viewport={"width": width, "height": 800})
    if axe:
        context.add_init_script(path=str(AXE))
    page = context.new_page()
    page.goto(base + "/accounts/login/")
    page.fill("#id_username", "vera")
    page.fill("#id_password", PASSWORD)
    with page.expect_navigation():
        page.click("button[type=submit]")
    assert page.url == base + "/"
    return page


@pytest.mark.live_server
@pytest.mark.browser
def test_a_member_asks_a_question_and_gets_the_best_matches(browser, recall_site):
    page = logged_in(browser, recall_site["base"])
    csp: list[str] = []
    page.on("console", lambda message: csp.append(message.text)
            if "Content Security Policy" in message.text else None)
    page.goto(recall_site["base"] + "/p/alpha/memory/")
    page.fill("input[name=q]", BROWSER_QUESTION)
    # No "?" and a question word first: the choice is the person's, made with the label.
    page.get_by_label("Exact words").check()
    page.get_by_label("Best matches").check()
    assert page.get_by_label("Exact words").is_checked() is False
    with page.expect_navigation():
        page.click("form.filters button[type=submit]")
    assert "match=best" in page.url
    assert page.inner_text("main h1") == f"Best matches for “{BROWSER_QUESTION}”"
    first = page.locator("ol.hits > li").first
    assert first.locator("a.seq").inner_text() == "#3"  # seed.py's coupon race finding
    assert "two coupons apply when requests race" in first.inner_text()
    assert "Found by its words and meaning" in first.inner_text()
    assert page.get_by_label("Best matches").is_checked()
    # The same words as exact words: nothing holds all of them.
    page.get_by_label("Exact words").check()
    with page.expect_navigation():
        page.click("form.filters button[type=submit]")
    assert page.locator("article.entry").count() == 0
    assert "No entries match." in page.inner_text("main")
    assert csp == []
    page.context.close()


@pytest.mark.live_server
@pytest.mark.browser
@pytest.mark.parametrize("width", [390, 1280])
def test_best_matches_fit_the_screen_and_pass_axe(browser, recall_site, width):
    if not AXE.exists():
        message = f"{AXE} is missing: `make test` installs it (npm ci)"
        if os.environ.get("CI"):
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    page = logged_in(browser, recall_site["base"], width, axe=True)
    response = page.goto(recall_site["base"] + "/p/alpha/memory/?q=" + BROWSER_QUESTION
                         + "&match=best&category=finding")
    assert response is not None and response.status == 200
    assert page.locator("ol.hits > li").count() >= 1
    measured = page.evaluate("""() => ({view: document.documentElement.clientWidth,
                                         width: document.documentElement.scrollWidth})""")
    assert measured["width"] <= measured["view"], measured
    result = page.evaluate("async () => await axe.run(document, {resultTypes: ['violations']})")
    serious = [(v["id"], v["help"]) for v in result["violations"]
               if v["impact"] in ("serious", "critical")]
    assert serious == []
    page.context.close()
