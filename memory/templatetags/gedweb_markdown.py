"""The filters through which agent-written text reaches a page (memory/rendering.py).

Only memory.rendering's output (nh3's allowlisted HTML, or the text
escaped) is marked safe here; templates never use ``|safe``.
"""

from __future__ import annotations

import re

from django import template
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from memory.rendering import (
    ALLOWED_ATTRIBUTES,
    ALLOWED_TAGS,
    LINK_REL,
    URL_SCHEMES,
    is_renderable,
    render,
    render_cached,
    render_plain,
    sanitize_html,
)

__all__ = ["ALLOWED_ATTRIBUTES", "ALLOWED_TAGS", "LINK_REL", "URL_SCHEMES", "highlight",
           "is_renderable", "render_markdown", "render_mirror", "render_plain",
           "render_skill", "render_state", "sanitize_html"]

register = template.Library()


def _level(top_heading: object) -> int:
    return top_heading if isinstance(top_heading, int) else int(str(top_heading or 1))


def _safe(html: str) -> SafeString:
    # Only nh3's allowlisted output (with fixed markup around it) or escaped
    # text is marked safe: bandit B308/B703 reviewed (tests/pages/test_security.py holds it).
    return mark_safe(html)  # nosec B308 B703


def render_markdown(text: object, top_heading: object = 1) -> SafeString:
    """Markdown to sanitised HTML, safe to insert into a page.

    ``top_heading`` is the level a "#" heading gets: a file shown under the
    page's own h1 and h2 passes 3, so its headings stay below them.
    """
    return _safe(render_cached(str(text or ""), level=_level(top_heading)))


def render_mirror(text: object, top_heading: object = 2) -> SafeString:
    """A page of MEMORY.md: rendered each time, never cached.

    It holds a hundred entries' text, and a redaction drops the cached
    renderings of the one text it removes, not of every page that held it.
    """
    return _safe(render(str(text or ""), level=_level(top_heading)))


def render_state(text: object, top_heading: object = 3) -> SafeString:
    """GedPi's STATE.md: Markdown with each line kept as a line."""
    return _safe(render_cached(str(text or ""), kind="state", level=_level(top_heading)))


def render_skill(text: object, top_heading: object = 3) -> SafeString:
    """GedPi's SKILL.md: its front matter as a small table, then the body."""
    return _safe(render_cached(str(text or ""), kind="skill", level=_level(top_heading)))


# Tags and character references of sanitised HTML: a highlight never enters either.
_MARKUP = re.compile(r"(<[^>]*>|&[#0-9A-Za-z]{1,32};)")
MAX_HIGHLIGHTED_WORDS = 10


def highlight(html: object, query: object) -> object:
    """The words of a search marked in rendered text: ``<mark>`` around each match.

    Only the filters' own output (a SafeString) is touched, and only its text
    between tags and character references, so the markup stays what nh3 left.
    The words are literals (escaped, at most ten), matched case-insensitively,
    one pass over the text.
    """
    words = sorted({word for word in str(query or "").split() if len(word) > 1},
                   key=len, reverse=True)[:MAX_HIGHLIGHTED_WORDS]
    if not words or not isinstance(html, SafeString):
        return html
    pattern = re.compile("|".join(re.escape(escape(word)) for word in words), re.IGNORECASE)
    parts = _MARKUP.split(str(html))
    for index in range(0, len(parts), 2):  # even parts are text, odd ones markup
        parts[index] = pattern.sub(lambda match: f"<mark>{match.group()}</mark>", parts[index])
    return mark_safe("".join(parts))  # nosec B308 B703  (fixed <mark> around escaped text)


# Registered here rather than by decorating each function: mutmut leaves
# decorated functions unmutated (docs/testing.md, "What `make mutants-holes`
# runs"), and these are where agent-written text reaches a page.
for _filter in (render_markdown, render_mirror, render_state, render_skill, highlight):
    register.filter(_filter.__name__, _filter, is_safe=False)
