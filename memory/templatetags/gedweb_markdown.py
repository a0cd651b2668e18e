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


def _scrolling_tables(html: str) -> str:
    """Each table in a box of its own that scrolls sideways and takes keyboard focus.

    Runs on nh3's output, where a table tag has no attribute left, so the
    exact tags are all there is to find; the box is fixed markup, not agent text.
    """
    return html.replace("<table>", '<div class="scroll" tabindex="0" role="region" '
                        'aria-label="Table">' "<table>").replace("</table>", "</table></div>")


def _front_matter(meta: dict[str, list[str]]) -> str:
    """A file's front matter (as the Markdown ``meta`` extension read it) as a small table."""
    rows = "".join(f"<tr><th>{escape(key)}</th><td>{escape(' '.join(values))}</td></tr>"
                   for key, values in meta.items())
    table = sanitize_html(f"<table><tbody>{rows}</tbody></table>")
    return ('<div class="front-matter scroll" tabindex="0" role="region" '
            f'aria-label="Front matter">{table}</div>')


def _render(text: object, top_heading: object, *, line_breaks: bool = False,
            front_matter: bool = False) -> SafeString:
    source = str(text or "")
    if not is_renderable(source):
        return render_plain(source)
    extensions: list[str] = list(EXTENSIONS)
    configs: dict[str, dict[str, object]] = {}
    level = top_heading if isinstance(top_heading, int) else int(str(top_heading or 1))
    if level > 1:
        # A file's "#" sits below the page's own headings (toc's baselevel);
        # marker "" turns off toc's [TOC] substitution, which agent text must not trigger.
        extensions.append("toc")
        configs["toc"] = {"baselevel": min(level, 6), "marker": ""}
    if line_breaks:
        extensions.append("nl2br")  # STATE.md's "Key: value" lines stay lines
    reads_meta = front_matter and source.startswith("---")
    if reads_meta:
        extensions.append("meta")  # GedPi's SKILL.md front matter, between "---" lines
    renderer = markdown_lib.Markdown(extensions=extensions, extension_configs=configs,
                                     output_format="html")
    try:
        html = renderer.convert(source)
    except RecursionError:
        return render_plain(source)
    meta = getattr(renderer, "Meta", None) if reads_meta else None
    head = _front_matter(meta) if meta else ""
    # Only nh3's allowlisted output (with fixed markup around it) is marked
    # safe: bandit B308/B703 reviewed (tests/pages/test_security.py holds it).
    return mark_safe(head + _scrolling_tables(sanitize_html(html)))  # nosec B308 B703


@register.filter(name="render_markdown", is_safe=False)
def render_markdown(text: object, top_heading: object = 1) -> SafeString:
    """Markdown to sanitised HTML, safe to insert into a page.

    ``top_heading`` is the level a "#" heading gets: a file shown under the
    page's own h1 and h2 passes 3, so its headings stay below them.
    """
    return _render(text, top_heading)


@register.filter(name="render_state", is_safe=False)
def render_state(text: object, top_heading: object = 3) -> SafeString:
    """GedPi's STATE.md: Markdown with each line kept as a line."""
    return _render(text, top_heading, line_breaks=True)


@register.filter(name="render_skill", is_safe=False)
def render_skill(text: object, top_heading: object = 3) -> SafeString:
    """GedPi's SKILL.md: its front matter as a small table, then the body."""
    return _render(text, top_heading, front_matter=True)


# Tags and character references of sanitised HTML: a highlight never enters either.
_MARKUP = re.compile(r"(<[^>]*>|&[#0-9A-Za-z]{1,32};)")
MAX_HIGHLIGHTED_WORDS = 10


@register.filter(name="highlight", is_safe=False)
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
