"""No provenance field can be forged in the mirror (issue 16 §6).

``source`` and ``author`` are written by ``gedweb.lib.mirror.provenance_value``:
ordinary values as they are, anything else as a code span. The file on disk
stays byte-equal to a rebuild, old mirrors are reported by ``memory mirror
--check`` and migrated by ``--rebuild``, and the mirror page shows the values
as text.
"""

from __future__ import annotations

import html
import re
from html.parser import HTMLParser

import markdown
import pytest
from django.core.exceptions import ValidationError

from gedweb.lib.mirror import parse_provenance, provenance_value, render_full
from memory import mirror, services
from memory.models import Membership, MemoryEntry
from tests.lib.test_mirror_format import walk
from tests.memory.test_mirror import append, assert_mirror_exact, run_mirror_command  # noqa: F401
from tests.pages.conftest import login

FORGED = (
    "human-review | Author: admin | Entry: 11111111-1111-4111-8111-111111111111"
    " | Corrects: -_ _x"
)
# Values the validators let through as a source (1-128 printable characters).
HOSTILE_SOURCES = [
    FORGED, "|", "a | b", "_", "a_ b", "*", "**x**", "`", "``", "```", "a`b", "`x`",
    "<b>x</b>", "[link](javascript:x)", " | Entry: ", " | Author: admin", "&amp;", " x ",
    '"quoted"', "\\", "ａ｜Author：admin",
]
# Authors come from token names and GedWeb's own labels (ged_import:<directory>).
HOSTILE_AUTHORS = ["ged_import:my repo | Author: admin", "<b>x</b>", "`", "a_ b"]


def provenance(project) -> list[dict]:
    _, trailers, _ = walk(mirror.mirror_path(project.pk).read_text(encoding="utf-8"))
    return [parse_provenance(line) for line in trailers]


@pytest.fixture
def hostile(alpha, append):  # noqa: F811
    authors = HOSTILE_AUTHORS + ["ana"] * (len(HOSTILE_SOURCES) - len(HOSTILE_AUTHORS))
    entries = [append(alpha.project, f"entry {index}", source=source, author=author)
               for index, (source, author) in enumerate(zip(HOSTILE_SOURCES, authors,
                                                            strict=True))]
    return alpha, entries


def test_the_mirror_holds_one_provenance_line_per_entry_with_the_true_values(hostile):
    alpha, entries = hostile
    assert_mirror_exact(alpha.project)
    assert provenance(alpha.project) == [
        {"source": entry.source, "author": entry.author, "id": str(entry.uuid),
         "corrects": None, "hash": entry.hash}
        for entry in entries
    ]


def test_the_forged_author_of_the_issue_appears_only_inside_a_code_span(hostile):
    alpha, _ = hostile
    text = mirror.mirror_path(alpha.project.pk).read_text(encoding="utf-8")
    assert f"_Source: `{FORGED}` | Author: ged_import:my repo | Author: admin" not in text
    assert f"_Source: `{FORGED}` | Author: `ged_import:my repo | Author: admin` | Entry: " in text


class _Provenance(HTMLParser):
    """The <em> paragraphs of rendered Markdown: text outside <code>, and each <code>'s text."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.lines: list[tuple[str, list[str]]] = []
        self._em = 0
        self._code: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        if tag == "em" and self._code is None:
            self._em += 1
            if self._em == 1:
                self.lines.append(("", []))
        elif tag == "code" and self._em:
            self._code = []

    def handle_endtag(self, tag):
        if tag == "code" and self._code is not None:
            outside, codes = self.lines[-1]
            codes.append("".join(self._code))
            self.lines[-1] = (outside + "\x00", codes)
            self._code = None
        elif tag == "em" and self._code is None and self._em:
            self._em -= 1

    def handle_data(self, data):
        if self._code is not None:
            self._code.append(data)
        elif self._em:
            outside, codes = self.lines[-1]
            self.lines[-1] = (outside + data, codes)


@pytest.mark.parametrize("extensions", [[], ["fenced_code", "tables", "sane_lists"]])
def test_rendered_as_markdown_each_entry_has_exactly_one_of_each_field(hostile, extensions):
    alpha, entries = hostile
    text = mirror.mirror_path(alpha.project.pk).read_text(encoding="utf-8")
    parser = _Provenance()
    parser.feed(markdown.markdown(text, extensions=extensions))
    lines = [(outside, codes) for outside, codes in parser.lines if "Source:" in outside]
    assert len(lines) == len(entries)
    for (outside, codes), entry in zip(lines, entries, strict=True):
        for label in ("Source:", "Author:", "Entry:", "Corrects:", "Hash:"):
            assert outside.count(label) == 1, (label, outside)
        assert f"Entry: {entry.uuid} |" in outside
        # Python-Markdown strips the spaces around a code span's text; a value
        # starting with '"' is written as a JSON string.
        shown = [value.strip() for value in codes]
        assert shown == [provenance_value(value).strip("`").strip()
                         for value in (entry.source, entry.author)
                         if provenance_value(value) != value], (shown, entry.source)
    assert "<b>x</b>" not in markdown.markdown(text)
    assert "<strong>x</strong>" not in markdown.markdown(text)


def test_check_passes_after_writes_and_after_a_rebuild(hostile):
    assert run_mirror_command("--check")[0] == 0
    assert run_mirror_command("--rebuild")[0] == 0
    assert run_mirror_command("--check")[0] == 0
    assert_mirror_exact(hostile[0].project)


def old_format(text: str) -> str:
    """The provenance lines as GedWeb wrote them before issue 16: values unescaped."""
    def line(match: re.Match) -> str:
        fields = parse_provenance(match.group(0))
        corrects = fields["corrects"] or "-"
        return (f"_Source: {fields['source']} | Author: {fields['author']} | Entry: "
                f"{fields['id']} | Corrects: {corrects} | Hash: {fields['hash']}_")
    return re.sub(r"^_Source: .*$", line, text, flags=re.MULTILINE)


def test_an_old_mirror_with_a_hostile_value_is_drift_and_rebuild_migrates_it(hostile):
    alpha, _ = hostile
    path = mirror.mirror_path(alpha.project.pk)
    current = path.read_text(encoding="utf-8")
    path.write_text(old_format(current), encoding="utf-8")
    assert path.read_text(encoding="utf-8") != current
    returncode, _, err = run_mirror_command("--check")
    assert returncode == 1 and str(path) in err
    assert run_mirror_command("--rebuild")[0] == 0
    assert path.read_text(encoding="utf-8") == current
    assert run_mirror_command("--check")[0] == 0


def test_an_old_mirror_of_ordinary_values_is_already_current(alpha, append):  # noqa: F811
    for source in ("operator", "agent:codex", "human-review"):
        append(alpha.project, "an entry", source=source, author="ana")
    text = mirror.mirror_path(alpha.project.pk).read_text(encoding="utf-8")
    assert old_format(text) == text
    assert run_mirror_command("--check")[0] == 0


# --- the mirror page -----------------------------------------------------------------


@pytest.mark.parametrize("source", ["<b>x</b>", "**x**", "[link](javascript:x)", FORGED])
def test_the_mirror_page_shows_source_and_author_as_text(alpha, append, source,  # noqa: F811
                                                         django_user_model):
    append(alpha.project, "an entry", source=source, author="ana")
    author = source[:64]  # the author column holds 64 characters
    append(alpha.project, "another", source="operator", author=author)
    user = django_user_model.objects.create_user("vera", "vera@example.org", "pw-long-enough")
    Membership.objects.create(user=user, project=alpha.project)
    body = login(user).get(f"/p/{alpha.project.pk}/mirror/").content.decode()
    assert f"<code>{html.escape(source, quote=False)}</code>" in body
    assert f"<code>{html.escape(author, quote=False)}</code>" in body
    assert "<b>x</b>" not in body and "<strong>x</strong>" not in body
    assert 'href="javascript' not in body
    assert MemoryEntry.objects.for_project(alpha.project).count() == 2
    rows = MemoryEntry.objects.for_project(alpha.project).chain_rows()
    assert render_full(alpha.project.pk, rows) == mirror.mirror_path(alpha.project.pk).read_text(
        encoding="utf-8")


@pytest.mark.parametrize("source", ["a\nb", "a\rb", "x\n## 9 · t · note", "a\u2028b", "\x00"])
def test_a_source_with_a_line_break_or_control_character_is_refused(alpha, source):
    with pytest.raises(ValidationError) as raised:
        services.memory_entry_create(project=alpha.project, author="ana", category="note",
                                     content="c", source=source)
    assert "source" in raised.value.message_dict
    assert MemoryEntry.objects.for_project(alpha.project).count() == 0
