"""gedweb.lib.sections: where recall cuts a Markdown document."""

from __future__ import annotations

from gedweb.lib.sections import MAX_SECTIONS, Section, markdown_sections


def _texts(text: str) -> list[tuple[str, str]]:
    return [(s.heading, text[s.start:s.end]) for s in markdown_sections(text)]


def test_a_document_is_cut_at_every_heading_with_its_preamble():
    text = "Intro line.\n\n# Title\nbody\n## Part two ##\nmore\n###### Deep\nend"
    assert _texts(text) == [
        ("", "Intro line.\n\n"),
        ("Title", "# Title\nbody\n"),
        ("Part two", "## Part two ##\nmore\n"),
        ("Deep", "###### Deep\nend"),
    ]


def test_the_sections_cover_the_text_in_order():
    text = "# A\none\n# B\ntwo\n"
    sections = markdown_sections(text)
    assert sections[0].start == 0 and sections[-1].end == len(text)
    assert all(a.end == b.start for a, b in zip(sections, sections[1:]))


def test_what_is_not_a_heading():
    text = ("#hashtag\n    # indented code\n####### seven\n```\n# in a fence\n```\n"
            "~~~\n# tilde\n~~~\n")
    assert markdown_sections(text) == [Section("", 0, len(text))]


def test_a_blank_preamble_is_no_section_and_an_empty_text_has_none():
    assert [s.heading for s in markdown_sections("\n\n# Only\nx")] == ["Only"]
    assert markdown_sections("") == []
    assert markdown_sections("   \n") == []


def test_sections_past_the_maximum_fold_into_the_last():
    text = "".join(f"# H{i}\nx\n" for i in range(MAX_SECTIONS + 50))
    sections = markdown_sections(text)
    assert len(sections) == MAX_SECTIONS
    assert sections[-1].heading == f"H{MAX_SECTIONS - 1}" and sections[-1].end == len(text)


def test_a_hostile_text_is_one_pass():
    # No backtracking to time out: a megabyte of fences, hashes and headings.
    for text in ("#" * 1_000_000, "```\n" * 250_000, "# h\n" * 250_000):
        assert isinstance(markdown_sections(text), list)
