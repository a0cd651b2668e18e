"""The secret scanner's rules: gitleaks' maintained rule set and GedWeb's own, on RE2.

Plain Python, no Django. Two files beside this module, in gitleaks' config
schema (gedweb/secret_rules/):

- ``gitleaks.toml``: gitleaks' default config, vendored unchanged under a
  header naming its origin, version (tag and commit) and licence (MIT,
  ``LICENSE.gitleaks``). Its community keeps the provider formats current; to
  update, replace the file's body and its version line.
- ``gedweb.toml``: GedWeb's own rules (project tokens, configuration lines,
  wider shapes of provider keys) and a global allowlist of placeholders and
  documented example keys.

Every rule keeps its origin and version (``Rule.origin``, ``Rule.version``;
a stored finding records both). Every regex is compiled once, at import, by
RE2 (``google-re2``), whose matching time is linear in the text: no rule can
backtrack. A rule RE2 cannot compile (a lookaround, a backreference) is a
load error, unless it is listed in ``DROPPED`` with why; so are the gitleaks
rules left out on purpose (also ``DROPPED``).

What a rule means is gitleaks' (detect/detect.go): the rule runs only on a
text whose lowercase holds one of its ``keywords``; the secret is its
``secretGroup``, else the first non-empty group, else the match; a secret
whose Shannon entropy is at or below ``entropy`` is not one; an allowlist
(the rule's own, then the global ones) drops a secret that one of its
``regexes`` matches (in the secret, the match or the line, per
``regexTarget``) or that holds one of its ``stopwords``; with ``condition =
"AND"`` every criterion it names must hold, and a criterion on file
``paths`` never holds here (a text has no path). GedWeb may add an
allowlist to a gitleaks rule (gedweb.toml's ``[[extend]]``, with why).
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import functools
import math
import re
import tomllib
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import re2

RULES_DIR = Path(__file__).resolve().parent / "secret_rules"
GITLEAKS_FILE = RULES_DIR / "gitleaks.toml"
GEDWEB_FILE = RULES_DIR / "gedweb.toml"

# gitleaks rules not loaded, and why. Every other rule of gitleaks.toml is
# loaded; tests/security/test_secret_rules.py checks both ways.
DROPPED: dict[str, str] = {
    "generic-api-key": (
        "a keyword and any value of some entropy: it flags prose and configuration about "
        "tokens, keys and passwords that memory is full of (`token: the project's bearer "
        "token`, `key = sha256 digest`); the credentials it is meant for are caught by "
        "their own rules"),
    "pkcs12-file": "a rule on file names only (no regex): a text has no file name",
}

# gitleaks ends most secrets at a quote, a space, a semicolon, an escaped
# newline or the end of the text: written for files of code, it misses the
# same key in prose ("the key was sk_..., rotate it", "(dop_v1_...)"). The
# loader lets that ending be a comma, a full stop, a colon, a closing bracket
# or an angle bracket too: a mechanical adaptation (``Rule.adapted``), the
# rule's own regex otherwise unchanged.
GITLEAKS_END = r"""(?:[\x60'"\s;]|\\[nr]|$"""
PROSE_END = r"""(?:[\x60'"\s;,.:!?)\]}>]|\\[nr]|$"""

# Patterns of gitleaks' allowlists corrected here, and why: each maps the
# upstream text to the one GedWeb runs (tests/security/test_secret_rules.py).
CORRECTED: dict[str, tuple[str, str]] = {
    # Unbracketed, it allows any secret that starts with "true", ends with
    # "null" or holds "false" anywhere: one random key in a few thousand.
    r"(?i)^true|false|null$": (r"(?i)^(?:true|false|null)$",
                               "the alternation was meant to be anchored as a whole"),
    # vault-service-token's allowlist, meant for a legacy ``s.`` token of
    # letters only, also matched inside an ``hvs.`` token whose first 24
    # characters are letters: one in 170.
    r"s\.[A-Za-z]{24}": (r"^s\.[A-Za-z]{24}$", "meant for the whole of a legacy s. token"),
}

# An RE2 program larger than the default (8 MiB of DFA state) would fall back
# to slower engines; the rules are small, this only makes room.
_MAX_MEM = 64 << 20


class RuleError(ValueError):
    """A rule file GedWeb cannot load (a regex RE2 refuses, a bad field)."""


def compile_re2(pattern: str | bytes, where: str) -> Any:
    options = re2.Options()
    options.max_mem = _MAX_MEM
    try:
        return re2.compile(pattern, options)
    except re2.error as error:
        raise RuleError(f"{where}: RE2 cannot compile {pattern!r} ({error}); rewrite it "
                        "in RE2 syntax (no lookaround, no backreference) or drop it") from None


def compile_set(patterns: list[str], where: str) -> Any:
    """One RE2 set of ``patterns``: one pass tells whether any matches a text."""
    for pattern in patterns:
        compile_re2(pattern, where)  # names the pattern RE2 refuses
    options = re2.Options()
    options.max_mem = _MAX_MEM
    matcher = re2.Set.SearchSet(options)
    for pattern in patterns:
        matcher.Add(pattern)
    matcher.Compile()
    return matcher


@dataclass(frozen=True)
class Allowlist:
    patterns: tuple[str, ...]
    regexes: Any  # an RE2 set of ``patterns``, or None
    stopwords: tuple[str, ...]
    target: str  # "secret", "match" or "line"
    all_of: bool  # condition = "AND"
    has_paths: bool

    def allows(self, secret: str, match: Callable[[], str], line: Callable[[], str]) -> bool:
        checks: list[bool] = []
        if self.has_paths:
            checks.append(False)
        if self.regexes is not None:
            subject = match() if self.target == "match" else line() if self.target == "line" \
                else secret
            checks.append(bool(self.regexes.Match(subject)))
        if self.stopwords:
            lowered = secret.lower()
            checks.append(any(word in lowered for word in self.stopwords))
        if not checks:
            return False
        return all(checks) if self.all_of else any(checks)


def _allowlist(raw: Mapping[str, Any], where: str) -> Allowlist:
    target = raw.get("regexTarget", "secret")
    if target not in ("secret", "match", "line"):
        raise RuleError(f"{where}: unknown regexTarget {target!r}")
    condition = str(raw.get("condition", "OR")).upper()
    if condition not in ("OR", "AND"):
        raise RuleError(f"{where}: unknown condition {condition!r}")
    patterns = [CORRECTED[pattern][0] if pattern in CORRECTED else pattern
                for pattern in raw.get("regexes", ())]
    return Allowlist(
        patterns=tuple(patterns),
        regexes=compile_set(patterns, where) if patterns else None,
        stopwords=tuple(word.lower() for word in raw.get("stopwords", ())),
        target=target, all_of=condition == "AND", has_paths=bool(raw.get("paths")),
    )


def _basic_auth_base64(secret: str) -> bool:
    """Docker's ``auth``: base64 of ``user:password`` with a real password in it."""
    try:
        decoded = base64.b64decode(secret + "=" * (-len(secret) % 4), validate=True)
        text = decoded.decode("utf-8")
    except (binascii.Error, ValueError):
        return False
    user, colon, password = text.partition(":")
    return bool(colon and password and text.isprintable()
                and not any(allowlist.regexes is not None and allowlist.regexes.Match(password)
                            for allowlist in GLOBAL_ALLOWLISTS))


VALIDATORS: dict[str, Callable[[str], bool]] = {"basic-auth-base64": _basic_auth_base64}


@dataclass(frozen=True)
class Rule:
    id: str
    description: str
    origin: str  # "gitleaks" or "gedweb"
    version: str  # the rule file's version: gitleaks' tag and commit, GedWeb's number
    regex: Any  # re2._Regexp of the pattern as bytes: run on the view's UTF-8
    secret_group: int
    entropy: float | None
    keywords: tuple[str, ...]
    allowlists: tuple[Allowlist, ...]
    validate: Callable[[str], bool] | None = None
    adapted: bool = False  # its secret may end at prose punctuation (GITLEAKS_END)


# c * log2(c) for the counts a secret's characters have (a secret longer than
# the table takes the slow sum).
_XLOGX = [0.0] + [count * math.log2(count) for count in range(1, 1025)]


@functools.lru_cache(maxsize=4096)
def entropy(text: str) -> float:
    """Shannon entropy in bits per character, as gitleaks computes it."""
    size = len(text)
    if not size:
        return 0.0
    counts = Counter(text).values()
    if size < len(_XLOGX):
        return math.log2(size) - sum(map(_XLOGX.__getitem__, counts)) / size
    return math.log2(size) - sum(count * math.log2(count) for count in counts) / size


_VERSION_LINE = re.compile(r"^# version: (.+)$", re.MULTILINE)


def gitleaks_version() -> str:
    """The vendored file's version line (tag and commit)."""
    found = _VERSION_LINE.search(GITLEAKS_FILE.read_text())
    if found is None:
        raise RuleError(f"{GITLEAKS_FILE.name}: no '# version:' header line")
    return found.group(1).strip()


def _rule(raw: Mapping[str, Any], origin: str, version: str) -> Rule:
    rule_id = raw.get("id")
    where = f"{origin} rule {rule_id}"
    if not isinstance(rule_id, str) or "regex" not in raw:
        raise RuleError(f"{where}: a rule needs an id and a regex")
    validate = raw.get("validate")
    if validate is not None and validate not in VALIDATORS:
        raise RuleError(f"{where}: unknown validate {validate!r}")
    pattern = raw["regex"]
    adapted = origin == "gitleaks" and GITLEAKS_END in pattern
    if adapted:
        pattern = pattern.replace(GITLEAKS_END, PROSE_END)
    return Rule(
        id=rule_id, description=raw.get("description", ""), origin=origin, version=version,
        regex=compile_re2(pattern.encode(), where), adapted=adapted,
        secret_group=int(raw.get("secretGroup", 0)),
        entropy=float(raw["entropy"]) if "entropy" in raw else None,
        keywords=tuple(word.lower() for word in raw.get("keywords", ())),
        allowlists=tuple(_allowlist(item, where) for item in raw.get("allowlists", ())),
        validate=VALIDATORS[validate] if validate else None,
    )


def load_file(path: Path, origin: str, version: str,
              dropped: Mapping[str, str]) -> tuple[list[Rule], Allowlist | None]:
    config = tomllib.loads(path.read_text())
    rules = [_rule(raw, origin, version) for raw in config.get("rules", ())
             if raw.get("id") not in dropped]
    top = config.get("allowlist")
    return rules, (_allowlist(top, f"{origin} global allowlist") if top else None)


def extended(rules: list[Rule], extensions: list[Mapping[str, Any]]) -> list[Rule]:
    """``rules`` with GedWeb's added allowlists (gedweb.toml's ``[[extend]]``), each with why."""
    by_id = {rule.id: rule for rule in rules}
    for extension in extensions:
        rule_id = extension.get("rule")
        where = f"gedweb extension of {rule_id}"
        if rule_id not in by_id:
            raise RuleError(f"{where}: no such rule to extend")
        if not extension.get("description"):
            raise RuleError(f"{where}: say why (description)")
        rule = by_id[rule_id]
        by_id[rule_id] = dataclasses.replace(
            rule, allowlists=(*rule.allowlists, _allowlist(extension, where)))
    return [by_id[rule.id] for rule in rules]


def _load() -> tuple[tuple[Rule, ...], tuple[Allowlist, ...]]:
    config = tomllib.loads(GEDWEB_FILE.read_text())
    gedweb_version = config.get("version", "")
    ours, our_allow = load_file(GEDWEB_FILE, "gedweb", str(gedweb_version), {})
    theirs, their_allow = load_file(GITLEAKS_FILE, "gitleaks", gitleaks_version(), DROPPED)
    theirs = extended(theirs, config.get("extend", []))
    ids = [rule.id for rule in (*ours, *theirs)]
    duplicates = sorted({rule_id for rule_id in ids if ids.count(rule_id) > 1})
    if duplicates:
        raise RuleError(f"rule ids defined twice: {', '.join(duplicates)}")
    # Both files' global allowlists apply to every rule: one set, one pass per secret.
    tops = [item for item in (our_allow, their_allow) if item is not None]
    patterns = [pattern for item in tops for pattern in item.patterns]
    merged = Allowlist(
        patterns=tuple(patterns),
        regexes=compile_set(patterns, "global allowlists") if patterns else None,
        stopwords=tuple(word for item in tops for word in item.stopwords),
        target="secret", all_of=False, has_paths=False)
    # GedWeb's first: where two rules find the same span, its kind is the one named.
    return (*ours, *theirs), (merged,)


RULES, GLOBAL_ALLOWLISTS = _load()
RULES_BY_ID = {rule.id: rule for rule in RULES}
GEDWEB_RULES_VERSION = str(tomllib.loads(GEDWEB_FILE.read_text()).get("version", ""))
