"""GedPi's legacy placeholder texts (gedpi-behaviour Appendix A) and the template catalogue."""

from __future__ import annotations

import hashlib

import pytest

from gedweb.lib import gedpi_placeholders
from gedweb.lib.gedpi_placeholders import (
    CONTEXT_MAP,
    CONTEXT_MAP_STANDALONE,
    PLACEHOLDER_BY_PATH,
    PLACEHOLDERS,
    TemplateVariant,
    template_variant,
)

# Appendix A's table, in its order (GedPi's removal order): path, byte count, SHA-256.
APPENDIX_A = [
    (".ged/CONTEXT-MAP.md", 1117,
     "5583ebba43de7e9425dc782c6917958ff10ae4a47d9b7af837b2f6973b714549"),
    (".ged/PROJECT.md", 228,
     "b0cd069ab3f558dd0441cb4536871367efb4019c69b742581ad10aef20db3724"),
    (".ged/ARCHITECTURE.md", 79,
     "d7152c93788a10ef7150a05eb03b470d8d0c43f5de95b56d732bcf6edc20e66e"),
    (".ged/PATTERNS.md", 79,
     "7a06d6faf33ef1f8fe11048346d75c445eb7a7e372dd46fb26216cf1009c9a91"),
    (".ged/GLOSSARY.md", 49,
     "3bd18221509bc895329ed18f569da850584d65ed8d7e72b7d615a460d1e19fb0"),
    (".ged/IDEAS.md", 67,
     "64843251ac6d8a5965e405c056caf68ce23af78537d83f902f9e519f44f7a524"),
    (".ged/DECISIONS.md", 134,
     "3cfcd74ea722c8614daa138be358e9bd81606770e75d4237fb5ac2b0ae880b06"),
    (".ged/STANDARDS.md", 171,
     "3df8e30dad892caef53e02b8069a0f5b9172c85a7102aee71ee45f609c952caf"),
    (".ged/SKILLS.md", 191,
     "8a5d9811fe391118ba439de4819a0dfc6fc9e99acc01ded2076bd0685a32a608"),
    (".ged/PROGRESS.md", 46,
     "acc7c8a8dea613030b0847c7961985575283d28e961a74d872c946e17d1c0cab"),
    (".ged/plans/INDEX.md", 92,
     "7ac55ff42a088520edb0cced212b67ee1b180278faa315f0f76f948207a85f52"),
    (".ged/project-skills/README.md", 103,
     "e2c4c38fdffe0ff67cef3f25d1e6f49ec36d9ab14e970e555fdc3a60415a3b47"),
    (".ged/research/README.md", 70,
     "408b58dcb19b69c841629e672da4bf5c102e8b14ec25fea2ca0b8c5702fae37b"),
    (".ged/specs/README.md", 96,
     "8e66c1eb2693957d2c84294d18cfded340a925f0c86dec54b9aa98f93905f5d4"),
    (".ged/tasks/README.md", 121,
     "0c7cde961ff06ef80a7035cedf1825a9c424b82528b03dc392852232806903f4"),
    (".ged/SKILLS-STATE.json", 20,
     "e6f681e4e2e76f0433ba659e751fbd97fb6ee6a0edd080adb45f37a937ac3457"),
    (".pi/agents/ged-brain.md", 753,
     "b8f80c473687db6ca303f8826eace2a310efb23f8f1e56319f8ed25e45888793"),
]
CURRENT_ORIGIN = "GedPi 41f5230 templates (removed by v3)"


def test_the_placeholders_are_appendix_a_in_gedpis_removal_order():
    assert [path for path, _ in PLACEHOLDERS] == [path for path, _, _ in APPENDIX_A]
    assert PLACEHOLDER_BY_PATH == dict(PLACEHOLDERS)


@pytest.mark.parametrize(("path", "size", "sha256"), APPENDIX_A)
def test_each_placeholder_has_appendix_as_bytes(path, size, sha256):
    data = PLACEHOLDER_BY_PATH[path].encode("utf-8")
    assert len(data) == size
    assert hashlib.sha256(data).hexdigest() == sha256


@pytest.mark.parametrize(("path", "size", "sha256"), APPENDIX_A)
def test_a_current_template_is_recognised_by_its_exact_bytes(path, size, sha256):
    variant = template_variant(path, PLACEHOLDER_BY_PATH[path].encode("utf-8"))
    assert variant == TemplateVariant(path, CURRENT_ORIGIN, sha256, PLACEHOLDER_BY_PATH[path])


def test_the_standalone_context_map_is_the_historical_variant_appendix_a_hashes():
    variant = template_variant(".ged/CONTEXT-MAP.md", CONTEXT_MAP_STANDALONE.encode("utf-8"))
    assert variant is not None
    assert variant.path == ".ged/CONTEXT-MAP.md"
    assert variant.origin == "standalone GedPi (VERSION 2)"
    assert variant.sha256.startswith("7df83dd2")
    assert variant.sha256 == hashlib.sha256(CONTEXT_MAP_STANDALONE.encode("utf-8")).hexdigest()
    assert variant.text == CONTEXT_MAP_STANDALONE
    assert len(CONTEXT_MAP_STANDALONE.encode("utf-8")) == 992


def test_the_standalone_context_map_is_older_text_not_the_current_one():
    assert "live under branch/work scoped directories." in CONTEXT_MAP_STANDALONE
    assert "checkpoints.json" in CONTEXT_MAP_STANDALONE
    assert CONTEXT_MAP_STANDALONE != CONTEXT_MAP
    assert [variant.text for variant in gedpi_placeholders.HISTORICAL_VARIANTS] == [
        CONTEXT_MAP_STANDALONE
    ]


def test_placeholders_are_lf_only_utf8_with_a_literal_em_dash():
    assert all("\r" not in text for _, text in PLACEHOLDERS)
    assert "\u2014" in CONTEXT_MAP and "\\u2014" not in CONTEXT_MAP


def test_one_extra_byte_or_crlf_is_no_template():
    assert template_variant(".ged/CONTEXT-MAP.md", (CONTEXT_MAP + "\n").encode("utf-8")) is None
    crlf = CONTEXT_MAP.replace("\n", "\r\n").encode("utf-8")
    assert template_variant(".ged/CONTEXT-MAP.md", crlf) is None


def test_a_templates_bytes_at_another_path_are_no_template():
    assert template_variant(".ged/PATTERNS.md", CONTEXT_MAP.encode("utf-8")) is None
    assert template_variant(".ged/notes.md", CONTEXT_MAP_STANDALONE.encode("utf-8")) is None


def test_a_catalogued_variant_records_its_path_origin_hash_and_text():
    # The catalogues are built once at import; building one entry here checks the rule itself.
    variant = gedpi_placeholders._variant(".ged/GLOSSARY.md", "an origin", "# Glossary\n")
    assert variant == TemplateVariant(
        ".ged/GLOSSARY.md", "an origin",
        hashlib.sha256(b"# Glossary\n").hexdigest(), "# Glossary\n",
    )
