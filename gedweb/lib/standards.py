"""GedPi's STANDARDS.md byte format (gedpi-behaviour §3.4), as a pure function.

Each accepted file becomes a section whose frame marker is derived from its
approved hash and lengthened with ``_X`` until the content does not contain
it, so no line inside the content can close its own frame.
"""

from __future__ import annotations

from collections.abc import Iterable

PREAMBLE = (
    "# Imported Standards\n"
    "\n"
    "These standards were imported from other harness-specific instruction files and "
    "approved for Ged use.\n"
    "\n"
)


def approved_marker(sha256: str, content: str) -> str:
    marker = f"GED_APPROVED_{sha256.upper()}"
    while marker in content:
        marker += "_X"
    return marker


def render_section(path: str, sha256: str, content: str) -> str:
    marker = approved_marker(sha256, content)
    body = content if content.endswith("\n") else content + "\n"
    return (
        f"## {path}\n\nApproved content hash: {sha256}\n\n"
        f"<<<{marker}:BEGIN>>>\n{body}<<<{marker}:END>>>"
    )


def render_standards(sources: Iterable[tuple[str, str, str]]) -> str:
    """STANDARDS.md from (path, sha256, content) triples, in the order given."""
    sections = "\n\n".join(render_section(path, sha, content) for path, sha, content in sources)
    return (PREAMBLE + sections).rstrip() + "\n"
