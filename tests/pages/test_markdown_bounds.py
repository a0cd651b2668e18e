"""Agent text on the pages at bounded cost (issue 34 §5, T38): memory/rendering.py.

Every stored text renders: Markdown through cmark-gfm and nh3, or escaped
plain text when it is too long or nested too deep for bounded time. Each
rendering is cached under its text's digest, and a redaction drops it.
How long a page takes is bench/markdown_pages.py's to measure, not a test's.
"""

from __future__ import annotations

import re

import pytest
from django.core.cache import caches
from django.core.cache.backends.locmem import LocMemCache
from django.utils.html import escape

from governance import services as governance_services
from memory import rendering, services
from memory.documents import MAX_DOCUMENT_CHARS, document_put
from memory.models import MemoryCandidate
from memory.redaction import memory_entry_redact
from memory.templatetags.gedweb_markdown import (
    render_markdown,
    render_mirror,
    render_skill,
    render_state,
)
from tests.pages.conftest import login

SCRIPT = "<script>alert(1)</script>"


def _fill(unit: str, size: int) -> str:
    return (unit * (size // len(unit) + 1))[:size]


@pytest.fixture(autouse=True)
def _markdown_cache(settings):
    """A cache of this process's own for each test, as Redis would keep renderings.

    Without REDIS_URL the site keeps none (a worker's copy is one a redaction
    elsewhere could not reach); these tests need one to show what is kept.
    """
    settings.CACHES = {**settings.CACHES, rendering.CACHE: {
        "BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "md-tests"}}
    assert isinstance(caches[rendering.CACHE], LocMemCache)
    caches[rendering.CACHE].clear()
    yield
    caches[rendering.CACHE].clear()


# --- ordinary text renders as it did with Python-Markdown ---------------------------------------

ORDINARY = [
    ("# Title\n\nSome *em* and **strong** text.\n",
     ["<h1>Title</h1>", "<p>Some <em>em</em> and <strong>strong</strong> text.</p>"]),
    ("- one\n- two\n\n3. three\n4. four\n",
     ["<ul>\n<li>one</li>\n<li>two</li>\n</ul>", '<ol start="3">\n<li>three</li>']),
    ("```python\nif a < b:\n    print('<b>')\n```\n",
     ["<pre><code>if a &lt; b:\n    print('&lt;b&gt;')\n</code></pre>"]),
    ("Run `make <target>` now.\n", ["<p>Run <code>make &lt;target&gt;</code> now.</p>"]),
    ("> quoted\n", ["<blockquote>\n<p>quoted</p>\n</blockquote>"]),
    ("See [the docs](https://example.org/x \"Docs\").\n",
     ['<a href="https://example.org/x" title="Docs" rel="noopener noreferrer nofollow">'
      "the docs</a>"]),
    ("| a | b |\n| --- | --- |\n| 1 | 2 |\n", ["<th>a</th>", "<td>2</td>"]),
    ("H<sub>2</sub>O and <b>bold</b> kept.\n", ["<sub>2</sub>", "<b>bold</b>"]),
    ("~~gone~~\n", ["<del>gone</del>"]),
    ("---\n\nafter a rule\n", ["<hr>", "<p>after a rule</p>"]),
]


@pytest.mark.parametrize(("source", "fragments"), ORDINARY)
def test_ordinary_markdown_renders_as_before(source, fragments):
    html = str(render_markdown(source))
    for fragment in fragments:
        assert fragment in html, html


def test_raw_html_beyond_the_allowlist_is_dropped_and_links_lose_bad_schemes():
    html = str(render_markdown(f"{SCRIPT}\n\n<img src=x onerror=alert(1)>\n\n"
                               "[x](javascript:alert(1)) [y](../relative)\n"))
    assert "<script" not in html and "<img" not in html and "onerror" not in html
    assert "javascript:" not in html and "relative" not in html


# --- the plain-text fallback escapes (issue 34 §5 and §11) --------------------------------------


def test_text_longer_than_the_render_limit_is_shown_escaped_as_written():
    text = f"# Heading\n\n{SCRIPT}\n\n" + _fill("word ", rendering.MAX_RENDER_CHARS)

    html = str(render_markdown(text))

    assert html == f'<pre class="raw-text">{escape(text)}</pre>'
    assert "<script>" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html


def test_raw_html_nested_too_deep_for_the_sanitiser_is_shown_escaped():
    deep = "<div>\n\n" * (rendering.MAX_HTML_DEPTH + 1) + SCRIPT
    shallow = "<div>\n\n" * (rendering.MAX_HTML_DEPTH - 1) + "text"  # and its <p>

    assert str(render_markdown(deep)) == f'<pre class="raw-text">{escape(deep)}</pre>'
    assert "raw-text" not in str(render_markdown(shallow))


def test_markdown_nested_too_deep_is_shown_escaped_in_every_face():
    text = "> " * (rendering.MAX_NESTING + 1) + SCRIPT
    expected = f'<pre class="raw-text">{escape(text)}</pre>'
    for face in (render_markdown, render_mirror, render_state, render_skill):
        assert str(face(text)) == expected
    assert "raw-text" not in str(render_markdown(">" * rendering.MAX_NESTING + " x"))
    deepest_list = "".join("    " * level + "- x\n" for level in range(rendering.MAX_NESTING))
    assert str(render_markdown(deepest_list)).count("<ul>") == rendering.MAX_NESTING


def test_a_work_file_past_the_render_limit_reaches_its_page_escaped(site):
    work = site.alpha.work
    name = next(iter(governance_services.allowed_files(work)))
    content = f"{SCRIPT}\n\n" + _fill("plan ", rendering.MAX_RENDER_CHARS)
    governance_services.work_file_write(work=work, name=name, content=content, author="agent")

    response = login(site.member).get(f"/p/alpha/work/{work.work_id}/")

    assert response.status_code == 200
    page = response.content.decode()
    assert '<pre class="raw-text">&lt;script&gt;alert(1)&lt;/script&gt;' in page
    assert SCRIPT not in page


# --- the largest hostile text of each kind renders, and safely ------------------------------------

HOSTILE = {
    "code-spans": "``a`", "rules": "***\n", "setext": "a\n=\n", "emphasis": "*_",
    "images": "![", "brackets": "[a ", "list-items": "- a\n", "tags": "<a ",
}


@pytest.mark.parametrize("unit", list(HOSTILE.values()), ids=list(HOSTILE))
def test_a_hostile_candidate_at_the_entry_limit_renders_on_the_review_page(site, unit):
    content = _fill(unit, 31_000) + f"\n\nmarker-{len(unit)}\n\n{SCRIPT}\n"
    candidate = services.candidate_create(project=site.alpha.project, author="agent",
                                          category="note", content=content)

    response = login(site.operator).get("/p/alpha/review/")

    assert response.status_code == 200
    page = response.content.decode()
    assert f'id="c-{candidate.uuid}"' in page and f"marker-{len(unit)}" in page
    # Rendered, nh3 drops the script with its text; shown plain, it is escaped.
    assert SCRIPT not in page


def test_a_hostile_document_at_the_render_limit_renders_as_markdown(site):
    content = _fill("``a`", rendering.MAX_RENDER_CHARS - 100) + f"\n\n{SCRIPT}\n"
    document_put(project=site.alpha.project, path="adr/0009-hostile.md", content=content,
                 author="agent")

    response = login(site.member).get("/p/alpha/documents/adr/0009-hostile.md")

    assert response.status_code == 200
    page = response.content.decode()
    assert "<code>" in page and "raw-text" not in page
    assert SCRIPT not in page and "alert(1)" not in page


def test_a_document_at_its_kinds_limit_is_shown_escaped(site):
    content = f"# Title\n\n{SCRIPT}\n\n" + _fill("``a`", MAX_DOCUMENT_CHARS - 100)
    document_put(project=site.alpha.project, path="adr/0010-long.md", content=content,
                 author="agent")

    page = login(site.member).get("/p/alpha/documents/adr/0010-long.md").content.decode()

    assert '<pre class="raw-text"># Title\n\n&lt;script&gt;alert(1)&lt;/script&gt;' in page
    assert SCRIPT not in page


# --- rendered once per digest, dropped by a redaction ------------------------------------------


def test_a_long_text_is_rendered_once_and_then_read_from_the_cache():
    text = "A decision worth keeping.\n\n" * 100
    key = rendering.cache_key(text, "markdown", 3)
    assert caches[rendering.CACHE].get(key) is None

    first = str(render_markdown(text, 3))

    assert caches[rendering.CACHE].get(key) == first
    # The next page takes the cached rendering, whatever it holds.
    caches[rendering.CACHE].set(key, "<p>from the cache</p>")
    assert str(render_markdown(text, 3)) == "<p>from the cache</p>"
    # Each face and heading level is a rendering of its own.
    assert str(render_markdown(text, 2)) == first.replace("h3>", "h2>")
    assert caches[rendering.CACHE].get(rendering.cache_key(text, "state", 3)) is None


def test_short_texts_and_mirror_pages_are_never_cached():
    short = "x" * (rendering.MIN_CACHED_CHARS - 1)
    long = "y" * rendering.MIN_CACHED_CHARS
    render_markdown(short)
    render_mirror(long)
    assert caches[rendering.CACHE].get(rendering.cache_key(short, "markdown", 1)) is None
    assert caches[rendering.CACHE].get(rendering.cache_key(long, "markdown", 2)) is None
    render_markdown(long)
    assert caches[rendering.CACHE].get(rendering.cache_key(long, "markdown", 1)) is not None


def test_a_redaction_drops_every_cached_rendering_of_the_text(site):
    secret = "The staging box opens to quokka lantern seven.\n\n" * 60
    candidate = services.candidate_create(project=site.alpha.project, author="agent",
                                          category="note", content=secret)
    entry = services.candidate_approve(project=site.alpha.project, candidate=candidate,
                                       by="otto")
    client = login(site.operator)
    assert "quokka" in client.get(f"/p/alpha/memory/{entry.seq}").content.decode()
    assert "quokka" in client.get("/p/alpha/review/?status=resolved").content.decode()
    render_state(secret)
    render_skill(secret)
    cached = [key for key in rendering._keys(secret) if caches[rendering.CACHE].get(key)]
    assert len(cached) >= 3  # the entry page's level, the review page's, state and skill

    memory_entry_redact(project=site.alpha.project, seq=entry.seq, reason="a password",
                        by="otto")

    assert all(caches[rendering.CACHE].get(key) is None for key in rendering._keys(secret))
    assert "quokka" not in client.get(f"/p/alpha/memory/{entry.seq}").content.decode()
    assert MemoryCandidate.objects.get(pk=candidate.pk).content.startswith("[redacted by otto")


def test_rendering_is_deterministic_so_a_cached_copy_equals_a_fresh_one():
    text = "# Notes\n\n" + "- a point with `code` and **weight**\n" * 200
    cached = str(render_markdown(text, 2))
    assert cached == rendering.render(text, level=2)
    assert re.search(r"<h2>Notes</h2>", cached)
