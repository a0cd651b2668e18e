"""GedPi's files rendered faithfully, and the site's own error pages in development too.

The one sanitising filter module (memory/templatetags/gedweb_markdown.py)
has three faces: render_markdown (any agent text, with the level its "#"
headings take), render_skill (SKILL.md: front matter as a small table) and
render_state (STATE.md: each line kept as a line).
"""

from __future__ import annotations

import pytest
from django.test import Client, override_settings

from memory.templatetags.gedweb_markdown import (
    render_markdown,
    render_mirror,
    render_skill,
    render_state,
)
from tests.pages.conftest import login
from tests.pages.seed import SKILL

SKILL_MD = SKILL.format(name="fix-flaky-test", title="Fix a flaky test",
                        description='Fixes flaky tests. Triggers include "flaky"')


def test_skill_front_matter_is_a_small_table_not_a_rule_and_one_line():
    html = str(render_skill(SKILL_MD))
    assert html.startswith('<div class="front-matter scroll" tabindex="0" role="region" '
                           'aria-label="Front matter"><table><tbody>')
    assert "<tr><th>name</th><td>fix-flaky-test</td></tr>" in html
    assert ('<tr><th>description</th><td>Fixes flaky tests. Triggers include "flaky"</td></tr>'
            in html)
    assert "<hr>" not in html and "name: fix-flaky-test" not in html
    # The body's "#" sits below the page's own h1 and h2.
    assert "<h3>Fix a flaky test</h3>" in html and "<h1>" not in html


def test_front_matter_is_text_however_hostile():
    source = '---\nname: <script>alert(1)</script>\nnote: "<b>x</b>"\n---\n\nBody\n'
    html = str(render_skill(source))
    assert "<script>" not in html and "<b>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html


def test_text_without_front_matter_is_left_alone_by_render_skill():
    # A file that merely starts with "Key: value" is no front matter.
    assert "front-matter" not in str(render_skill("Name: not front matter\n\nBody\n"))
    assert "<p>Name: not front matter</p>" in str(render_skill("Name: not front matter\n\nBody\n"))


def test_state_md_keeps_its_lines_as_lines():
    html = str(render_state("# State\n\nMode: direct-change\nLifecycle: active\nSlice: lock\n"))
    assert "<h3>State</h3>" in html
    assert "<p>Mode: direct-change<br>\nLifecycle: active<br>\nSlice: lock</p>" in html
    # render_markdown, for other text, still joins a paragraph's lines.
    assert "<p>Mode: direct-change\nLifecycle: active</p>" in str(
        render_markdown("Mode: direct-change\nLifecycle: active\n"))


@pytest.mark.parametrize(("level", "h1", "h2"), [(1, "h1", "h2"), (2, "h2", "h3"),
                                                 (3, "h3", "h4"), (6, "h6", "h6")])
def test_headings_start_at_the_level_asked_for(level, h1, h2):
    html = str(render_markdown("# Top\n\n## Next\n", level))
    assert f"<{h1}>Top</{h1}>" in html and f"<{h2}>Next</{h2}>" in html
    assert "id=" not in html  # toc's anchors are not on the allowlist


def test_toc_marker_in_agent_text_stays_text():
    assert "<p>[TOC]</p>" in str(render_markdown("# A\n\n[TOC]\n", 3))


def test_every_table_scrolls_in_its_own_focusable_box():
    html = str(render_markdown("| a | b |\n| --- | --- |\n| 1 | 2 |\n"))
    assert html.startswith('<div class="scroll" tabindex="0" role="region" aria-label="Table">'
                           "<table>")
    assert html.rstrip().endswith("</table></div>")
    assert html.count("<table>") == html.count('<div class="scroll"') == 1


@override_settings(DEBUG=True)
@pytest.mark.parametrize("path", ["/p/alpha/memory/99999", "/p/beta/",
                                  "/p/alpha/documents/adr/9-x.md", "/no/such/route",
                                  "/p/alpha/skills/none-such"])
def test_in_development_a_missing_page_is_the_sites_own_404(site, path):
    response = login(site.member).get(path)
    assert response.status_code == 404
    body = response.content.decode()
    assert "<title>Not found · GedWeb</title>" in body
    assert "URLconf" not in body and "technical" not in body.lower()


@override_settings(DEBUG=True)
def test_in_development_the_api_keeps_its_json_404(site):
    response = Client().get("/v1/no/such/route")
    assert response.status_code == 404
    assert response.json()["code"] == "not_found"


@pytest.mark.parametrize("debug", [True, False])
def test_a_form_without_its_csrf_token_gets_the_sites_own_403(site, debug):
    client = Client(enforce_csrf_checks=True)
    client.force_login(site.member)
    with override_settings(DEBUG=debug):
        response = client.post("/accounts/logout/")
    assert response.status_code == 403
    body = response.content.decode()
    assert "The form has expired" in body and "Nothing was changed" in body
    assert "CSRF verification failed" not in body
    # Still logged in: the refused form changed nothing.
    assert client.get("/p/alpha/").status_code == 200


# The filters themselves (memory/templatetags/gedweb_markdown.py), as templates call them.


@pytest.mark.parametrize("face", [render_markdown, render_mirror, render_state, render_skill])
@pytest.mark.parametrize("empty", [None, ""])
def test_no_text_renders_as_nothing(face, empty):
    assert str(face(empty)) == ""


@pytest.mark.parametrize(("face", "level"), [(render_markdown, 1), (render_mirror, 2),
                                             (render_state, 3), (render_skill, 3)])
def test_each_filter_puts_a_top_heading_at_its_own_default_level(face, level):
    assert str(face("# Top\n")).startswith(f"<h{level}>Top</h{level}>")


@pytest.mark.parametrize(("argument", "level"), [("2", 2), (4, 4), (None, 1), ("", 1)])
def test_a_heading_level_given_as_text_or_left_empty_is_read_as_a_number(argument, level):
    assert str(render_markdown("# Top\n", argument)).startswith(f"<h{level}>Top</h{level}>")


def test_mirror_text_keeps_a_paragraphs_lines_joined_as_markdown_does():
    assert "<p>one\ntwo</p>" in str(render_mirror("one\ntwo\n"))
