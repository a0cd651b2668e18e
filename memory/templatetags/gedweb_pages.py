"""The team pages' one date format and one author link.

``{{ value|when }}`` renders every date the pages show the same way: a
``<time>`` element whose datetime attribute is the exact ISO 8601 instant and
whose text is ``2026-12-07 20:57 UTC`` (minutes, always UTC, the zone said).
It takes a datetime, a date, or the ISO text the services' dictionaries hold
(governance's JSON documents keep their times as strings).

``{% author value %}`` renders an author string (memory.authors.describe) as
a link to that author's entries, worded for a reader: "token “default”",
"vera", "the admin token".
"""

from __future__ import annotations

from datetime import UTC, date, datetime

from django import template
from django.urls import reverse
from django.utils.html import format_html
from django.utils.safestring import SafeString

from memory import authors

register = template.Library()

DATE_FORMAT = "%Y-%m-%d %H:%M UTC"
DAY_FORMAT = "%Y-%m-%d"


def _instant(value: object) -> datetime | date | None:
    if isinstance(value, datetime | date):
        return value
    if isinstance(value, str) and value:
        try:
            return datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return None
    return None


@register.filter(name="when", is_safe=True)
def when(value: object) -> SafeString | str:
    """A <time> element in the pages' one format; text that is no date stays as it was."""
    instant = _instant(value)
    if instant is None:
        return "" if value is None else str(value)
    if not isinstance(instant, datetime):
        return format_html('<time datetime="{}">{}</time>', instant.isoformat(),
                           instant.strftime(DAY_FORMAT))
    if instant.tzinfo is None:
        instant = instant.replace(tzinfo=UTC)  # the services store UTC throughout
    instant = instant.astimezone(UTC)
    return format_html('<time datetime="{}">{}</time>',
                       instant.isoformat().replace("+00:00", "Z"), instant.strftime(DATE_FORMAT))


@register.simple_tag
def author(value: str, project_id: str | None = None) -> SafeString:
    """Who wrote it, linked to their entries when the page has a project."""
    described = authors.describe(value)
    if project_id is None:
        return format_html('<span class="author" title="{}">{}</span>',
                           described.via, described.text)
    url = reverse("memory:author-entries", args=[project_id, value])
    return format_html('<a class="author" href="{}" title="{}">{}</a>',
                       url, described.via, described.text)
