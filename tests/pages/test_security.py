"""Agent text can never run script in a reader's browser: the sanitiser, the CSP header on
every page, and no |safe in any template."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

import nh3
import pytest
from django.conf import settings
from django.template import engines
from django.test import Client

from memory import services
from memory.documents import document_put
from memory.templatetags.gedweb_markdown import (
    ALLOWED_TAGS,
    render_markdown,
    render_skill,
    render_state,
    sanitize_html,
)
from tests.pages.conftest import login, project_urls
from tests.pages.xss import PAYLOADS


class ElementCollector(HTMLParser):
    """Every element and attribute a browser would build from the page, entities decoded."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, list[tuple[str, str | None]]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, attrs))

    @classmethod
    def of(cls, html: str) -> list[tuple[str, list[tuple[str, str | None]]]]:
        parser = cls()
        parser.feed(html)
        return parser.tags


ATTRIBUTES = {"href", "title", "rel", "start"}


# The one piece of markup the filters add around nh3's output: a table's scrolling box.
WRAPPER = {"class", "tabindex", "role", "aria-label"}
FILTERS = [render_markdown, render_skill, render_state]
WITH_FRONT_MATTER = [f"---\nname: {p}\n---\n\n{p}" for p in PAYLOADS[:20]]


@pytest.mark.parametrize("render", FILTERS)
@pytest.mark.parametrize("payload", PAYLOADS + WITH_FRONT_MATTER)
def test_the_sanitiser_leaves_no_script_vector(payload, render):
    html = str(render(payload))
    for tag, attrs in ElementCollector.of(html):
        if tag == "div":
            values = dict(attrs)
            assert set(values) == WRAPPER, html
            assert values["tabindex"] == "0" and values["role"] == "region", html
            assert values["class"] in ("scroll", "front-matter scroll"), html
            assert values["aria-label"] in ("Table", "Front matter"), html
            continue
        assert tag in ALLOWED_TAGS, html
        for name, value in attrs:
            assert name in ATTRIBUTES, html
            if name == "href":
                assert re.match(r"(https?:|mailto:)", value or ""), html


@pytest.mark.parametrize("payload", PAYLOADS)
def test_sanitised_output_is_a_fixed_point(payload):
    once = str(render_markdown(payload))
    assert sanitize_html(once) == once
    assert nh3.clean(once) == nh3.clean(nh3.clean(once))


@pytest.mark.parametrize("payload", PAYLOADS)
def test_every_link_left_is_http_https_or_mailto_with_rel(payload):
    html = str(render_markdown(payload))
    for tag in re.findall(r"<a\b[^>]*>", html):
        assert 'rel="noopener noreferrer nofollow"' in tag
        href = re.search(r'href="([^"]*)"', tag)
        if href:
            assert re.match(r"(https?:|mailto:)", href.group(1)), tag


def test_markdown_still_renders_what_agents_write():
    html = str(render_markdown(
        "# Title\n\n**bold** and `code`\n\n- one\n- two\n\n"
        "```\nprint('<b>')\n```\n\n[docs](https://example.org/a?b=1) <mailto:a@example.org>"
    ))
    assert "<h1>Title</h1>" in html and "<strong>bold</strong>" in html
    assert "<li>one</li>" in html and "&lt;b&gt;" in html
    assert '<a href="https://example.org/a?b=1" rel="noopener noreferrer nofollow">' in html
    assert "mailto:" in html


# Templates every page of the site renders through; the scan must find them.
KNOWN_TEMPLATES = {"base.html", "memory/entry_list.html", "memory/_entry_row.html",
                   "memory/document_detail.html", "governance/work_detail.html",
                   "registration/login.html"}


def project_templates() -> dict[str, Path]:
    """Every template file in a directory Django loads templates from, inside this project.

    The engine's own list (settings DIRS and each installed app's templates/),
    less the installed packages': a template moved to another loaded directory
    is still scanned.
    """
    base = Path(settings.BASE_DIR).resolve()
    found: dict[str, Path] = {}
    for directory in engines["django"].template_dirs:
        directory = Path(directory).resolve()
        # Any .venv* (.venv-django6.0 too) holds installed packages.
        if not directory.is_relative_to(base) or any(
                part.startswith(".venv") for part in directory.parts):
            continue
        for path in sorted(directory.rglob("*")):
            if path.is_file() and path.suffix in (".html", ".txt", ".xml"):
                found.setdefault(path.relative_to(directory).as_posix(), path)
    return found


def test_no_template_marks_anything_safe():
    templates = project_templates()
    assert KNOWN_TEMPLATES <= set(templates), sorted(templates)
    for name, path in templates.items():
        text = path.read_text()
        assert "|safe" not in text and "autoescape off" not in text, name


def test_stored_payloads_reach_pages_only_as_inert_text(site):
    project = site.alpha.project
    for payload in PAYLOADS:
        services.memory_entry_create(project=project, author="mallory", category="xss",
                                     source="attacker", content=payload)
    document_put(project=project, path="adr/0099-xss.md", author="mallory",
                 content="# XSS corpus\n\n" + "\n\n".join(PAYLOADS))
    client = login(site.member)
    pages = ["/p/alpha/memory/?category=xss", "/p/alpha/mirror/?after=11",
             "/p/alpha/documents/adr/0099-xss.md", "/p/alpha/"]
    pages += [f"/p/alpha/memory/{seq}" for seq in range(12, 12 + len(PAYLOADS))]
    for url in pages:
        tags = ElementCollector.of(client.get(url).content.decode())
        assert tags, url
        for tag, attrs in tags:
            assert tag not in ("script", "style", "iframe", "object", "embed", "img", "svg",
                               "math", "base", "meta", "form", "input") or url_is_ours(tag,
                                                                                      attrs), tag
            for name, value in attrs:
                assert not name.startswith("on") and name not in ("style", "srcdoc"), (url, name)
                if name in ("href", "src", "action"):
                    # Agent links are absolute http(s)/mailto; the rest are the page's own.
                    assert re.match(r"(https?:|mailto:|/|\?)", value or ""), (url, value)


def url_is_ours(tag: str, attrs: list[tuple[str, str | None]]) -> bool:
    """The page's own form and inputs (search, match, dates, logout), never agent content.

    And the overview's charts: an SVG of bars the server draws (templates/_chart.html).
    """
    values = dict(attrs)
    if tag == "svg":
        return values.get("class") == "bars" and values.get("role") == "img"
    if tag == "form":
        return (values.get("action") or "").startswith(("/p/alpha/", "/accounts/"))
    if tag == "input":
        return values.get("name") in ("q", "match", "since", "until", "csrfmiddlewaretoken")
    if tag == "meta":
        return set(values) <= {"charset", "name", "content"} and "http-equiv" not in values
    return False


def _csp(response) -> str:
    return response.headers.get("Content-Security-Policy", "")


def test_every_page_carries_the_content_security_policy(site):
    client = login(site.member)
    urls = project_urls(site.alpha) + ["/", "/p/beta/", "/does-not-exist"]
    for url in urls:
        policy = _csp(client.get(url))
        assert "script-src 'self'" in policy, url
        assert "default-src 'self'" in policy and "object-src 'none'" in policy, url
        assert "frame-ancestors 'none'" in policy and "base-uri 'none'" in policy, url
        assert "unsafe-inline" not in policy and "unsafe-eval" not in policy, url
    anonymous = Client()
    for url in ("/", "/accounts/login/", "/admin/login/", "/healthz", "/v1/contract"):
        assert "script-src 'self'" in _csp(anonymous.get(url)), url


def test_pages_use_no_inline_script_or_style(site):
    client = login(site.member)
    for url in project_urls(site.alpha)[:-1] + ["/"]:
        response = client.get(url)
        if not response["Content-Type"].startswith("text/html"):
            continue
        body = response.content.decode()
        assert not re.search(r"<script(?![^>]*\bsrc=)|<style|\sstyle=", body), url


def test_the_api_docs_admit_only_their_own_inline_script_by_nonce(db):
    response = Client().get("/v1/docs")
    assert response.status_code == 200
    policy = _csp(response)
    nonce = re.search(r"script-src 'self' 'nonce-([^']+)'", policy).group(1)
    body = response.content.decode()
    assert f'<script nonce="{nonce}">' in body and f'<style nonce="{nonce}">' in body
    assert "unsafe-inline" not in policy
    for src in re.findall(r'<(?:script|link)[^>]+(?:src|href)="([^"]+)"', body):
        assert src.startswith("/static/"), src  # swagger from the sidecar, no CDN
        assert Client().get(src).status_code == 200, src


def test_the_docs_policy_is_the_site_policy_plus_nonces():
    from django.utils.csp import CSP

    from gedweb.urls import DOCS_CSP

    for directive, values in settings.SECURE_CSP.items():
        extra = [CSP.NONCE] if directive in ("script-src", "style-src") else []
        assert DOCS_CSP[directive] == [*values, *extra], directive


def test_the_admin_login_page_loads_under_the_policy(db):
    response = Client().get("/admin/login/")
    assert response.status_code == 200
    assert not re.search(r"<script(?![^>]*\bsrc=)", response.content.decode())


def test_the_session_and_csrf_cookies_are_http_only(site):
    client = Client()
    client.get("/accounts/login/")
    response = client.post("/accounts/login/", {"username": "vera",
                                                "password": "pw-correct-horse-battery"})
    assert response.cookies["sessionid"]["httponly"]
    assert response.cookies["sessionid"]["samesite"] == "Lax"
