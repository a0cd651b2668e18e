"""The one way agent-written text reaches a page: Markdown, then nh3.

Anything an agent wrote (memory, documents, work files, skills) is data
from outside the trust boundary. It is rendered with ``markdown`` and the
HTML is then cleaned by nh3 (Rust's ammonia) with a small allowlist: no
script, style, images, forms or event handlers; links only to http, https
and mailto (relative links are dropped), always with
``rel="noopener noreferrer nofollow"``. Only nh3's
output is ever marked safe; templates never use ``|safe``.
"""

from __future__ import annotations

import re

import markdown as markdown_lib  # type: ignore[import-untyped]  # types-Markdown is not in the dev lock
import nh3
from django import template
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

register = template.Library()

ALLOWED_TAGS = frozenset({
    "a", "abbr", "b", "blockquote", "br", "code", "dd", "del", "dl", "dt", "em",
    "h1", "h2", "h3", "h4", "h5", "h6", "hr", "i", "li", "ol", "p", "pre", "s",
    "strong", "sub", "sup", "table", "tbody", "td", "th", "thead", "tr", "ul",
})
ALLOWED_ATTRIBUTES = {"a": {"href", "title"}, "abbr": {"title"}, "ol": {"start"}}
URL_SCHEMES = frozenset({"http", "https", "mailto"})
LINK_REL = "noopener noreferrer nofollow"
EXTENSIONS = ["fenced_code", "tables", "sane_lists"]

# Python-Markdown recurses once per nesting level of lists and blockquotes
# and scans for link and tag ends in time quadratic in the number of "[" and
# "<" in one block: 10,000 nested list markers raise RecursionError and 8,000
# "[" take over ten seconds. Text beyond these bounds is shown as escaped
# plain text instead (T38), so a page always answers quickly.
MAX_RENDER_CHARS = 64_000
MAX_NESTING = 32
MAX_BRACKETS_PER_BLOCK = 500
MAX_TAGS_PER_BLOCK = 1_000
_CONTAINER_PREFIX = re.compile(r"^(?:[ \t>]|[-*+](?=[ \t])|\d{1,9}[.)](?=[ \t]))*", re.MULTILINE)
_BLOCK_BREAK = re.compile(r"\n[ \t]*\n")


def sanitize_html(html: str) -> str:
    """HTML reduced to the allowlist; applying it twice changes nothing."""
    return nh3.clean(
        html,
        tags=set(ALLOWED_TAGS),
        attributes={tag: set(names) for tag, names in ALLOWED_ATTRIBUTES.items()},
        url_schemes=set(URL_SCHEMES),
        link_rel=LINK_REL,
        # A relative link in agent text points into the agent's repository,
        # not this site; dropping it also drops every scheme trick that a
        # URL parser would read as a path.
        url_relative="deny",
        strip_comments=True,
    )


def _nesting(prefix: str) -> int:
    markers = len(re.findall(r">|[-*+](?=[ \t])|\d{1,9}[.)](?=[ \t])", prefix))
    indent = len(prefix.expandtabs(4)) - len(re.sub(r"[ \t]", "", prefix))
    return markers + indent // 4


def is_renderable(text: str) -> bool:
    """Whether Markdown can render this text in bounded time and stack."""
    if len(text) > MAX_RENDER_CHARS:
        return False
    if any(_nesting(m.group()) > MAX_NESTING for m in _CONTAINER_PREFIX.finditer(text)):
        return False
    return all(
        block.count("[") <= MAX_BRACKETS_PER_BLOCK and block.count("<") <= MAX_TAGS_PER_BLOCK
        for block in _BLOCK_BREAK.split(text)
    )


def render_plain(text: str) -> SafeString:
    """The text escaped, as it was written, for what Markdown cannot render safely."""
    return mark_safe(f'<pre class="raw-text">{escape(text)}</pre>')  # nosec B308 B703


@register.filter(name="render_markdown", is_safe=False)
def render_markdown(text: object) -> SafeString:
    """Markdown to sanitised HTML, safe to insert into a page."""
    source = str(text or "")
    if not is_renderable(source):
        return render_plain(source)
    try:
        html = markdown_lib.markdown(source, extensions=EXTENSIONS, output_format="html")
    except RecursionError:
        return render_plain(source)
    # Only nh3's allowlisted output is marked safe: bandit B308/B703 reviewed
    # (tests/pages/test_security.py holds it).
    return mark_safe(sanitize_html(html))  # nosec B308 B703
