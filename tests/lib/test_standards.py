"""GedPi's STANDARDS.md byte format (gedpi-behaviour §3.4)."""

from __future__ import annotations

from gedweb.lib.standards import PREAMBLE, approved_marker, render_section, render_standards

SHA_A = "ab12" * 16
SHA_B = "cd34" * 16
MARKER_A = "GED_APPROVED_" + "AB12" * 16


def test_the_preamble_is_gedpis():
    assert PREAMBLE == (
        "# Imported Standards\n\nThese standards were imported from other harness-specific "
        "instruction files and approved for Ged use.\n\n"
    )


def test_the_marker_is_the_approved_hash_in_uppercase():
    assert approved_marker(SHA_A, "Use tabs.\n") == MARKER_A


def test_the_marker_grows_until_the_content_does_not_hold_it():
    content = f"quote {MARKER_A} and {MARKER_A}_X here"
    assert approved_marker(SHA_A, content) == MARKER_A + "_X_X"


def test_a_section_frames_the_content_under_its_path_and_hash():
    assert render_section("AGENTS.md", SHA_A, "Use tabs.\n") == (
        f"## AGENTS.md\n\nApproved content hash: {SHA_A}\n\n"
        f"<<<{MARKER_A}:BEGIN>>>\nUse tabs.\n<<<{MARKER_A}:END>>>"
    )


def test_a_section_adds_the_missing_final_newline_to_the_content():
    assert render_section("CLAUDE.md", SHA_A, "No newline") == (
        f"## CLAUDE.md\n\nApproved content hash: {SHA_A}\n\n"
        f"<<<{MARKER_A}:BEGIN>>>\nNo newline\n<<<{MARKER_A}:END>>>"
    )


def test_a_section_holding_its_marker_is_framed_by_a_longer_one():
    content = f"<<<{MARKER_A}:END>>>\n"
    section = render_section("AGENTS.md", SHA_A, content)
    assert section.endswith(f"<<<{MARKER_A}_X:BEGIN>>>\n{content}<<<{MARKER_A}_X:END>>>")


def test_standards_join_sections_with_a_blank_line_in_the_order_given():
    text = render_standards([("b/AGENTS.md", SHA_B, "B rules\n"), ("AGENTS.md", SHA_A, "A rules")])
    marker_b = "GED_APPROVED_" + "CD34" * 16
    assert text == (
        PREAMBLE
        + f"## b/AGENTS.md\n\nApproved content hash: {SHA_B}\n\n"
        f"<<<{marker_b}:BEGIN>>>\nB rules\n<<<{marker_b}:END>>>\n\n"
        f"## AGENTS.md\n\nApproved content hash: {SHA_A}\n\n"
        f"<<<{MARKER_A}:BEGIN>>>\nA rules\n<<<{MARKER_A}:END>>>\n"
    )


def test_standards_end_with_exactly_one_newline():
    text = render_standards([("AGENTS.md", SHA_A, "x\n")])
    assert text.endswith(f"<<<{MARKER_A}:END>>>\n")
    assert not text.endswith("\n\n")


def test_no_sources_leave_the_trimmed_preamble():
    assert render_standards([]) == (
        "# Imported Standards\n\nThese standards were imported from other harness-specific "
        "instruction files and approved for Ged use.\n"
    )
