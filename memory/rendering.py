"""The one way agent-written text becomes HTML: cmark-gfm, then nh3, cached by digest.

Anything an agent wrote (memory, documents, work files, skills) is data
from outside the trust boundary. It is rendered by GitHub's cmark-gfm
(``cmarkgfm``: CommonMark with the table and strikethrough extensions) and
the HTML is then cleaned by nh3 (Rust's ammonia) with a small allowlist: no
script, style, images, forms or event handlers; links only to http, https
and mailto (relative links are dropped), always with
``rel="noopener noreferrer nofollow"``. Only nh3's output is ever marked
safe; templates never use ``|safe``.

Bounded cost (T38, docs/security.md): cmark-gfm runs in time linear in the
text (its pathological-input suite is part of its build), unlike
Python-Markdown, whose block and inline processors rescanned the rest of a
block at every match (a 32 KB text took 13.6 s). What stays superlinear is
HTML parsing itself: nh3's parser checks the stack of open elements at each
block tag, so 10,000 nested blockquotes take it 0.2 s and 32,000 four
seconds. Text nested deeper than ``MAX_NESTING`` in its Markdown or
``MAX_HTML_DEPTH`` in its HTML, or longer than ``MAX_RENDER_CHARS``, is
therefore shown as escaped plain text, which is linear. A rendering is
cached under the digest of its text (``CACHE``); a redaction drops it
(``forget``).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator

import cmarkgfm  # type: ignore[import-untyped]  # ships no type hints
import nh3
from cmarkgfm.cmark import Options  # type: ignore[import-untyped]
from django.core.cache import caches
from django.utils.html import escape

from gedweb.lib.skills import front_matter

ALLOWED_TAGS = frozenset({
    "a", "abbr", "b", "blockquote", "br", "code", "dd", "del", "dl", "dt", "em",
    "h1", "h2", "h3", "h4", "h5", "h6", "hr", "i", "li", "ol", "p", "pre", "s",
    "strong", "sub", "sup", "table", "tbody", "td", "th", "thead", "tr", "ul",
})
ALLOWED_ATTRIBUTES = {"a": {"href", "title"}, "abbr": {"title"}, "ol": {"start"}}
URL_SCHEMES = frozenset({"http", "https", "mailto"})
LINK_REL = "noopener noreferrer nofollow"
EXTENSIONS = ("table", "strikethrough")
# Raw HTML in agent text reaches nh3, which keeps what the allowlist allows
# (<b>, <sub>, <dl>...) and drops the rest, as with the renderer before.
OPTIONS = Options.CMARK_OPT_UNSAFE

# The largest text rendered as Markdown: a memory entry (32,000 bytes)
# always fits; a longer skill (up to 100,000 characters), document (200,000)
# or work file (1,000,000) is shown as plain text. cmark-gfm and nh3 are
# linear, but the worst 100,000 characters take them about 0.3 s on two busy
# cores, past the pages' 250 ms (`make bench`, bench/markdown_pages.py).
MAX_RENDER_CHARS = 64_000
MAX_NESTING = 32
# In the HTML: a list level is two elements (ul, li), and inline markup and
# raw HTML add to that. nh3's cost per tag grows with the depth: at 100 it is
# nothing, at 10,000 a page takes seconds.
MAX_HTML_DEPTH = 100
# Below this a rendering costs less than reading it from the cache would;
# it also keeps the timeline's 600-character snippets out of the cache.
MIN_CACHED_CHARS = 2_000
CACHE = "markdown"
# Part of every key: a change of renderer or of its settings bumps it.
RENDERER_VERSION = "cmark-gfm-1"
KINDS = ("markdown", "state", "skill")
LEVELS = range(1, 7)

# Markdown's containers at the start of a line (blockquote markers, list
# markers, indentation), found only where more than MAX_NESTING of them
# stand: each container takes at least one character, so a shorter prefix
# is never too deep, and ordinary text costs one scan in C.
_DEEP_PREFIX = re.compile(
    r"^(?:[ \t>]|[-*+](?=[ \t])|\d{1,9}[.)](?=[ \t]))" "{%d,}+" % (MAX_NESTING + 1),
    re.MULTILINE)
_CONTAINER_MARKER = re.compile(r">|[-*+](?=[ \t])|\d{1,9}[.)](?=[ \t])")
# Tags of cmark's output (its own, always closed, and raw HTML passed on).
_TAG = re.compile(r"<(/?)([A-Za-z][A-Za-z0-9-]*)[^>]*>")
_VOID = frozenset({
    "area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param",
    "source", "track", "wbr",
})
_META_LINE = re.compile(r"[ ]{0,3}([A-Za-z0-9_-]+):[ \t]*(.*)")


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
    markers = len(_CONTAINER_MARKER.findall(prefix))
    indent = len(prefix.expandtabs(4)) - len(prefix.replace(" ", "").replace("\t", ""))
    return markers + indent // 4


def is_renderable(text: str) -> bool:
    """Whether the text is short enough and its Markdown shallow enough to render."""
    if len(text) > MAX_RENDER_CHARS:
        return False
    return all(_nesting(m.group()) <= MAX_NESTING for m in _DEEP_PREFIX.finditer(text))


def html_depth_within(html: str, limit: int = MAX_HTML_DEPTH) -> bool:
    """Whether no element of the HTML sits more than ``limit`` deep, in one pass.

    An end tag closes only the element on top, so unclosed raw HTML (a
    ``<div>`` per paragraph) counts as nested, as the HTML parser builds it;
    the count can only overstate the depth, which shows such a text as plain.
    """
    stack: list[str] = []
    for match in _TAG.finditer(html):
        name = match.group(2).lower()
        if match.group(1):
            if stack and stack[-1] == name:
                stack.pop()
        elif name not in _VOID and not match.group().endswith("/>"):
            stack.append(name)
            if len(stack) > limit:
                return False
    return True


def render_plain(text: str) -> str:
    """The text escaped, as it was written, for what Markdown cannot render in bounded time."""
    return f'<pre class="raw-text">{escape(text)}</pre>'


def _scrolling_tables(html: str) -> str:
    """Each table in a box of its own that scrolls sideways and takes keyboard focus.

    Runs on nh3's output, where a table tag has no attribute left, so the
    exact tags are all there is to find; the box is fixed markup, not agent text.
    """
    return html.replace("<table>", '<div class="scroll" tabindex="0" role="region" '
                        'aria-label="Table">' "<table>").replace("</table>", "</table></div>")


def _shift_headings(html: str, level: int) -> str:
    """A "#" heading becomes ``<h{level}>``, the others below it, none past h6.

    Runs on nh3's output, where a heading tag has no attribute left.
    """
    # From h6 down, so a heading already moved is never moved again.
    for old in range(6, 0, -1):
        new = min(old + level - 1, 6)
        if new != old:
            html = html.replace(f"<h{old}>", f"<h{new}>").replace(f"</h{old}>", f"</h{new}>")
    return html


def _front_matter(text: str) -> tuple[str, str]:
    """A SKILL.md's front matter as a small table, and the body after it.

    ``key: value`` lines (keys lowercased), and lines indented four spaces
    continuing the value above: what GedPi writes, as Python-Markdown's
    ``meta`` extension read it. Front matter with any other line is left in
    the text, so nothing of it goes unshown.
    """
    block = front_matter(text)
    if block is None:
        return "", text
    meta: dict[str, list[str]] = {}
    key = None
    for line in block.split("\n"):
        field = _META_LINE.fullmatch(line)
        if field is not None:
            key = field.group(1).lower()
            meta.setdefault(key, []).append(field.group(2).strip())
        elif key is not None and line.startswith("    ") and line.strip():
            meta[key].append(line.strip())
        else:
            return "", text
    rows = "".join(f"<tr><th>{escape(key)}</th><td>{escape(' '.join(values))}</td></tr>"
                   for key, values in meta.items())
    table = sanitize_html(f"<table><tbody>{rows}</tbody></table>")
    head = ('<div class="front-matter scroll" tabindex="0" role="region" '
            f'aria-label="Front matter">{table}</div>')
    # "---\n", the block, "\n---" and the line end after it, if any.
    return head, text[len(block) + 8:]


def render(text: str, *, kind: str = "markdown", level: int = 1) -> str:
    """Agent text as sanitised HTML (or escaped plain text), without the cache.

    ``kind``: "markdown", "state" (GedPi's STATE.md: each line kept as a
    line) or "skill" (SKILL.md: front matter as a small table, then the
    body). ``level`` is the level a "#" heading gets.
    """
    if not is_renderable(text):
        return render_plain(text)
    head, body = _front_matter(text) if kind == "skill" else ("", text)
    options = OPTIONS | (Options.CMARK_OPT_HARDBREAKS if kind == "state" else 0)
    html = cmarkgfm.markdown_to_html_with_extensions(body, options=options,
                                                     extensions=list(EXTENSIONS))
    # Markdown alone nests no deeper than its containers, checked above; only
    # raw HTML can take the elements deeper, and it needs a "<" per tag.
    if body.count("<") > MAX_HTML_DEPTH and not html_depth_within(html):
        return render_plain(text)
    return head + _scrolling_tables(_shift_headings(sanitize_html(html), level))


def cache_key(text: str, kind: str, level: int) -> str:
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    return f"md:{RENDERER_VERSION}:{kind}:{level}:{digest}"


def _keys(text: str) -> Iterator[str]:
    for kind in KINDS:
        for level in LEVELS:
            yield cache_key(text, kind, level)


def render_cached(text: str, *, kind: str = "markdown", level: int = 1) -> str:
    """``render``, once per text: every later page reads it from the cache."""
    level = min(max(level, 1), 6)
    if len(text) < MIN_CACHED_CHARS:
        return render(text, kind=kind, level=level)
    cache = caches[CACHE]
    key = cache_key(text, kind, level)
    html = cache.get(key)
    if not isinstance(html, str):
        html = render(text, kind=kind, level=level)
        cache.set(key, html)
    return html


def forget(text: str) -> None:
    """Drop every cached rendering of this text: a redaction reaches every copy."""
    caches[CACHE].delete_many(list(_keys(text)))
