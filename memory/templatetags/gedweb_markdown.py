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

import markdown as markdown_lib
import nh3
from django import template
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


@register.filter(name="render_markdown", is_safe=False)
def render_markdown(text: object) -> SafeString:
    """Markdown to sanitised HTML, safe to insert into a page."""
    html = markdown_lib.markdown(str(text or ""), extensions=EXTENSIONS, output_format="html")
    return mark_safe(sanitize_html(html))  # nh3 output only
