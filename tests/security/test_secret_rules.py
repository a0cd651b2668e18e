"""The secret scanner's rule set (issue 35): gitleaks' maintained rules and GedWeb's own, on RE2.

No database: the rule files load, every upstream rule is either run or
listed as dropped with why, every regex is an RE2 program (linear time by
the engine), each rule keeps its origin and version, and the keyword
prefilter never skips a rule that would match.
"""

from __future__ import annotations

import random
import re
import tomllib
from pathlib import Path

import pytest
import re2

from gedweb import secretrules, secretscan
from gedweb.secretrules import DROPPED, GITLEAKS_FILE, RULES, RuleError
from tests.security.secret_corpus import FORMATS, credentials, embeddings


def upstream() -> dict[str, dict]:
    return {rule["id"]: rule for rule in tomllib.loads(GITLEAKS_FILE.read_text())["rules"]}


def test_the_vendored_file_names_its_origin_version_and_licence():
    head = GITLEAKS_FILE.read_text().split("\n", 8)[:8]
    assert any(line.startswith("# origin: gitleaks, https://github.com/gitleaks/gitleaks")
               for line in head)
    assert any(line.startswith("# licence: MIT") for line in head)
    version = secretrules.gitleaks_version()
    assert re.fullmatch(r"v8\.\d+\.\d+\S* \(commit [0-9a-f]{40}, \d{4}-\d\d-\d\d\)", version)
    licence = (GITLEAKS_FILE.parent / "LICENSE.gitleaks").read_text()
    assert licence.startswith("MIT License") and "Zachary Rice" in licence


def test_every_upstream_rule_is_run_or_dropped_with_a_reason():
    theirs = upstream()
    loaded = {rule.id for rule in RULES if rule.origin == "gitleaks"}
    assert set(DROPPED) <= set(theirs)  # no reason kept for a rule upstream no longer has
    assert loaded == set(theirs) - set(DROPPED)
    assert all(len(reason) > 20 for reason in DROPPED.values())
    assert len(loaded) >= 200


def test_re2_compiles_every_upstream_regex_so_none_was_rewritten_or_dropped_for_it():
    """The rules RE2 cannot compile (lookaround, backreference): none in this version.

    gitleaks is written in Go, whose regexp is RE2's syntax; a future rule
    RE2 refuses would fail the load (below) until it is rewritten or listed
    in DROPPED with why.
    """
    refused = {}
    for rule_id, rule in upstream().items():
        if "regex" not in rule:
            continue
        try:
            re2.compile(rule["regex"])
        except re2.error as error:
            refused[rule_id] = str(error)
    assert refused == {}
    assert DROPPED["pkcs12-file"].startswith("a rule on file names only")


@pytest.mark.parametrize("pattern", [r"(?=sk-)sk-\w+", r"(?<!\w)ghp_\w+", r"(a)\1", r"(?!x)y"])
def test_a_rule_re2_cannot_compile_is_a_load_error_naming_it(tmp_path: Path, pattern: str):
    path = tmp_path / "rules.toml"
    path.write_text(f"[[rules]]\nid = \"bad-one\"\nregex = '''{pattern}'''\n")
    with pytest.raises(RuleError) as raised:
        secretrules.load_file(path, "test", "1", {})
    assert "bad-one" in str(raised.value) and "RE2 cannot compile" in str(raised.value)


def test_a_rule_file_with_an_unknown_field_value_is_refused(tmp_path: Path):
    path = tmp_path / "rules.toml"
    path.write_text("[[rules]]\nid = \"x\"\nregex = 'x'\nvalidate = \"nope\"\n")
    with pytest.raises(RuleError, match="unknown validate"):
        secretrules.load_file(path, "test", "1", {})
    path.write_text("[[rules]]\nid = \"x\"\nregex = 'x'\n[[rules.allowlists]]\n"
                    "regexTarget = \"file\"\n")
    with pytest.raises(RuleError, match="unknown regexTarget"):
        secretrules.load_file(path, "test", "1", {})
    path.write_text("[[rules]]\ndescription = \"no id, no regex\"\n")
    with pytest.raises(RuleError, match="needs an id and a regex"):
        secretrules.load_file(path, "test", "1", {})


def test_every_rule_is_an_re2_program_and_records_its_origin_and_version():
    gitleaks = secretrules.gitleaks_version()
    ours = tomllib.loads(secretrules.GEDWEB_FILE.read_text())["version"]
    for rule in RULES:
        assert isinstance(rule.regex, re2._Regexp), rule.id
        assert (rule.origin, rule.version) in {("gitleaks", gitleaks), ("gedweb", ours)}
    ids = [rule.id for rule in RULES]
    assert len(ids) == len(set(ids))
    assert ids[0] == "gedweb-project-token"  # GedWeb's own first: its kinds win a tie


def test_at_least_sixty_provider_formats_are_known_and_tested():
    assert len(FORMATS) >= 60
    assert len(RULES) >= 60


def test_the_adaptation_only_widens_where_a_secret_may_end():
    theirs = upstream()
    adapted = [rule for rule in RULES if rule.adapted]
    assert len(adapted) > 100
    for rule in adapted:
        original = theirs[rule.id]["regex"]
        assert rule.regex.pattern.decode() == original.replace(secretrules.GITLEAKS_END,
                                                               secretrules.PROSE_END)
    # Unadapted upstream rules run their regex byte for byte.
    for rule in RULES:
        if rule.origin == "gitleaks" and not rule.adapted:
            assert rule.regex.pattern.decode() == theirs[rule.id]["regex"]


def test_the_corrected_allowlist_pattern_is_upstreams_and_no_longer_hides_keys():
    text = GITLEAKS_FILE.read_text()
    for pattern in secretrules.CORRECTED:
        assert f"'''{pattern}'''" in text
    (merged,) = secretrules.GLOBAL_ALLOWLISTS
    assert merged.regexes.Match("true") and merged.regexes.Match("null")
    assert not merged.regexes.Match("YrUz5CWo0XaBSneBGdVnnulL")
    hvs = "hvs.VHGmuOSWlVJaElDbynJYIlymttFCNa0RqNH-W06Zp7T2i9hxDHhtGgi5M26HlNq3X8EucE02IMaK_" \
          "EsryMGQTRi7RYJ7jktFj8rw"
    (finding,) = secretscan.Scanner().scan("c", f"VAULT_TOKEN={hvs}")
    assert finding.kind == "vault-service-token"


def test_the_keyword_prefilter_is_gitleaks_keyword_rule():
    """A rule runs on a text exactly when the text's lowercase holds one of its keywords.

    That is gitleaks' rule, part of what a rule means: sourcegraph's regex
    also takes any 40 hex digits, a commit id, but only beside its keyword.
    """
    texts = [text for credential in credentials(random.Random(11))
             for text in embeddings(credential)]
    texts += ["nothing here", "Sourcegraph: " + "a" * 40, "GHP_ in capitals", "\u00c9t\u00e9"]
    for text in texts:
        lowered = secretscan.normalise(text).text.lower()
        expected = [rule.id for rule in RULES
                    if not rule.keywords or any(word in lowered for word in rule.keywords)]
        assert [rule.id for rule in secretscan.candidate_rules(lowered)] == expected


def test_the_keyword_set_finds_a_keyword_deep_in_a_hostile_megabyte():
    """The RE2 set answers on a megabyte too (it does not give up and report nothing)."""
    for filler in ("a", "sk-", "ghp", "\u00e9"):
        text = filler * (1_000_000 // len(filler)) + " gwp_"
        assert "gedweb-project-token" in {rule.id for rule in
                                          secretscan.candidate_rules(text.lower())}


def test_entropy_is_shannons():
    assert secretrules.entropy("") == 0.0
    assert secretrules.entropy("aaaa") == 0.0
    assert secretrules.entropy("abcd") == pytest.approx(2.0)
    assert secretrules.entropy("aabb" * 300) == pytest.approx(1.0)  # past the lookup table


def test_gedwebs_extension_keeps_commit_ids_beside_sourcegraph_and_still_finds_its_tokens():
    scanner = secretscan.Scanner()
    commit = "3f2a9c1e4b5d6f7a8b9c0d1e2f3a4b5c6d7e8f90"
    assert scanner.scan("c", f"Sourcegraph indexed commit {commit} tonight.") == []
    token = "sgp_" + "a1b2c3d4e5f60718" * 2 + "9f8e7d6c"
    (finding,) = scanner.scan("c", f"SOURCEGRAPH_TOKEN={token}")
    assert (finding.kind, finding.offset, finding.length) == ("sourcegraph-access-token", 18, 44)
    rule = secretrules.RULES_BY_ID["sourcegraph-access-token"]
    assert (rule.origin, rule.version) == ("gitleaks", secretrules.gitleaks_version())


def test_an_extension_must_name_an_existing_rule_and_say_why():
    rules = [rule for rule in RULES if rule.origin == "gitleaks"]
    with pytest.raises(RuleError, match="no such rule"):
        secretrules.extended(rules, [{"rule": "nope", "description": "x", "regexes": ["a"]}])
    with pytest.raises(RuleError, match="say why"):
        secretrules.extended(rules, [{"rule": "jwt", "regexes": ["a"]}])


def test_an_ellipsis_in_a_secrets_place_is_a_placeholder():
    scanner = secretscan.Scanner()
    for text in ("host=db user=app password=...", "(machine h login u password ...)",
                 "host=db user=app password=\u2026 (from the vault)"):
        assert scanner.scan("c", text) == [], text
    assert scanner.scan("c", "host=db user=app password=Xq7-rT9!pLm2")[0].kind == "libpq-password"


# --- the formats listed in docs/api.md --------------------------------------------------------

API_DOC = Path(__file__).resolve().parent.parent.parent / "docs" / "api.md"
START, END = "<!-- formats:start -->", "<!-- formats:end -->"


def formats_listing() -> str:
    """The list docs/api.md carries: GedWeb's rules with what they find, then gitleaks' ids."""
    ours = [f"- `{rule.id}`: {rule.description}" for rule in RULES if rule.origin == "gedweb"]
    ours += [f"- `{kind}`: the token configured on this server, as literal text"
             for kind in (secretscan.ADMIN_TOKEN, secretscan.MEMORY_WRITE_TOKEN)]
    theirs = sorted(rule.id for rule in RULES if rule.origin == "gitleaks")
    return "\n".join([
        f"GedWeb's own (version {secretrules.GEDWEB_RULES_VERSION}):", "", *ours, "",
        f"gitleaks' ({secretrules.gitleaks_version()}), {len(theirs)} rules:", "",
        ", ".join(f"`{rule_id}`" for rule_id in theirs) + ".",
    ])


def test_the_api_doc_lists_every_format():
    text = API_DOC.read_text()
    listed = text[text.index(START) + len(START):text.index(END)].strip()
    assert listed == formats_listing(), (
        "docs/api.md is stale: .venv/bin/python -m tests.security.test_secret_rules --write")


if __name__ == "__main__":
    import sys

    if "--write" in sys.argv:
        text = API_DOC.read_text()
        head, rest = text.split(START, 1)
        _, tail = rest.split(END, 1)
        API_DOC.write_text(f"{head}{START}\n{formats_listing()}\n{END}{tail}")
