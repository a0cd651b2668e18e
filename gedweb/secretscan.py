"""The secret scanner: credentials in agent or user text, found by format (issues 22, 35).

Plain Python, no Django: memory.secret_scan gives it the configured tokens
and the project's allowed fingerprints, and turns a finding into the 422
``secret_detected``. What it finds, and what it leaves alone, is in
docs/security.md ("Secrets in written text").

The rules are gedweb.secretrules': gitleaks' maintained rule set and
GedWeb's own, every one on RE2, so a scan is linear in the text whatever the
text. One scan:

1. The text's normalised view (``normalise``): NFKC, with zero-width and
   other invisible characters removed, so ``ghp_\u200bAb...`` or a token in
   fullwidth letters is the token. Each character of the view keeps the
   span of the text it came from, so a finding names where the secret sits
   in the text as written (line, column, offset and length there).
2. One pass of an RE2 set of every rule's keywords over the view's
   lowercase tells which rules may run (gitleaks' own prefilter: a rule
   runs only on a text holding one of its keywords); most entries hold
   few. Then one pass of an RE2 set of those rules' regexes (16 to a set)
   tells which of them match at all; only those search the text.
3. Each remaining rule's matches, filtered as gitleaks does (secret group,
   entropy, allowlists), then GedWeb's configured tokens as literal text.

A finding's fingerprint is ``sha256("gedweb-secret-v1\\0" kind "\\0" secret)``
over the secret as the view has it: the same secret of the same kind has
the same fingerprint everywhere, however it was disguised, so an operator
allows it by fingerprint (memory.AllowedSecret) without the text.
"""

from __future__ import annotations

import bisect
import hashlib
import re
import unicodedata
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy
import re2

from gedweb.secretrules import GLOBAL_ALLOWLISTS, RULES, Rule, entropy

FINGERPRINT_PREFIX = "gedweb-secret-v1"
GEDWEB_PROJECT_TOKEN = "gedweb-project-token"
ADMIN_TOKEN = "gedweb-admin-token"
MEMORY_WRITE_TOKEN = "gedweb-memory-write-token"
# A configured token shorter than this is not looked for: it would be found
# in ordinary words (settings refuse such tokens in production anyway).
MIN_KNOWN_TOKEN = 16
# A text holding more secrets than this is reported with the first this many
# (after twice as many matches the scan stops: the text is refused anyway).
MAX_FINDINGS = 1000

_NEWLINE = re.compile("\n")


@dataclass(frozen=True)
class Finding:
    """One secret in one field: where and what kind, never the secret itself.

    ``line``, ``column``, ``offset`` and ``length`` are in the text as
    written (before normalisation), so a redaction can cut exactly this span.
    """

    field: str
    kind: str
    line: int  # 1-based
    column: int  # 1-based, in characters
    offset: int  # 0-based character offset in the field's text
    length: int  # characters
    fingerprint: str

    def as_dict(self) -> dict[str, Any]:
        return {"field": self.field, "kind": self.kind, "line": self.line,
                "column": self.column, "fingerprint": self.fingerprint}

    def describe(self) -> str:
        return (f"{self.field}: {self.kind} at line {self.line}, column {self.column} "
                f"(fingerprint {self.fingerprint})")


def fingerprint(kind: str, secret: str) -> str:
    material = f"{FINGERPRINT_PREFIX}\0{kind}\0{secret}".encode("utf-8", "surrogatepass")
    return hashlib.sha256(material).hexdigest()


# --- the normalised view ----------------------------------------------------------------------

# Invisible beyond the format (Cf), control (Cc) and surrogate (Cs)
# categories: the Hangul fillers, the combining grapheme joiner, the Khmer
# inherent vowels, the Mongolian and Unicode variation selectors, which render
# as nothing and NFKC keeps.
_INVISIBLE = frozenset("\u034f\u115f\u1160\u17b4\u17b5\u180b\u180c\u180d\u180f"
                       "\u3164\uffa0") | frozenset(map(chr, range(0xFE00, 0xFE10))) \
    | frozenset(map(chr, range(0xE0100, 0xE01F0)))
_TABLE_LIMIT = 65_536  # distinct characters remembered; a hostile text cannot grow it further


def char_view(char: str) -> str:
    """One character's view: nothing if invisible, else its NFKC form."""
    if char.isascii():
        return char
    if char in _INVISIBLE or unicodedata.category(char) in ("Cf", "Cc", "Cs"):
        return ""
    return unicodedata.normalize("NFKC", char)


class _Table(dict[int, str]):
    """A ``str.translate`` table filled on first use: translate runs in C after that."""

    def __init__(self, value: Callable[[str], str]) -> None:
        super().__init__()
        self.value = value

    def __missing__(self, code: int) -> str:
        if len(self) >= _TABLE_LIMIT:
            self.clear()
        result = self[code] = self.value(chr(code))
        return result


_VIEW_TABLE = _Table(char_view)
# Each character's view length, as one character (at most 18: U+FDFA).
_LENGTH_TABLE = _Table(lambda char: chr(len(char_view(char))))


@dataclass(frozen=True)
class View:
    """The normalised text, and for each of its characters the one it came from.

    ``sources`` is None when the view is the text itself (ASCII, or nothing
    to change): then a span maps to itself.
    """

    text: str
    sources: Any = None  # numpy int64 array: view index -> index in the text as written

    def original(self, start: int, end: int) -> tuple[int, int]:
        """The span of the text as written that the view's [start, end) came from."""
        if self.sources is None:
            return start, end
        return int(self.sources[start]), int(self.sources[end - 1]) + 1


def normalise(text: str) -> View:
    """NFKC of each character of ``text``, invisible characters removed, mapped back.

    Character by character: NFKC's compatibility mapping (fullwidth and
    mathematical letters, ligatures, superscripts, ...) of each character,
    so every character of the view comes from one character of the text and
    a finding's position there is exact. (Whole-text NFKC would also fuse a
    letter with a combining mark after it; here they stay two characters,
    so a mark stuck to a token's last letter does not hide the token.)
    ASCII is its own view (the common case: no copy, no map). Linear, and in
    C after the first sight of each character (``str.translate``, numpy).
    """
    if text.isascii():
        return View(text)
    view = text.translate(_VIEW_TABLE)
    if view == text:
        return View(text)
    lengths = numpy.frombuffer(text.translate(_LENGTH_TABLE).encode("latin-1"), dtype=numpy.uint8)
    sources = numpy.repeat(numpy.arange(len(text), dtype=numpy.int64), lengths)
    return View(view, sources)


# --- the rules --------------------------------------------------------------------------------


def _keyword_set() -> tuple[Any, list[list[int]], list[int]]:
    """One RE2 set of every keyword; for each keyword, the rules it lets run."""
    options = re2.Options()
    options.max_mem = 64 << 20
    keywords = sorted({word for rule in RULES for word in rule.keywords})
    matcher = re2.Set.SearchSet(options)
    for word in keywords:
        matcher.Add(re2.escape(word))
    matcher.Compile()
    index = {word: position for position, word in enumerate(keywords)}
    by_keyword: list[list[int]] = [[] for _ in keywords]
    always = []
    for number, rule in enumerate(RULES):
        if not rule.keywords:
            always.append(number)
        for word in rule.keywords:
            by_keyword[index[word]].append(number)
    return matcher, by_keyword, always


_KEYWORDS, _RULES_BY_KEYWORD, _RULES_ALWAYS = _keyword_set()


def candidate_numbers(lowered: str) -> list[int]:
    """The rules (by index) a text may run: those without keywords, those whose keyword it holds."""
    numbers = set(_RULES_ALWAYS)
    for keyword in _KEYWORDS.Match(lowered) or ():
        numbers.update(_RULES_BY_KEYWORD[keyword])
    return sorted(numbers)


def candidate_rules(lowered: str) -> list[Rule]:
    return [RULES[number] for number in candidate_numbers(lowered)]


# The rules' regexes again, as RE2 sets of SET_SIZE each (one set of all of
# them is too large a program for RE2): one pass of a set over the text says
# which of its rules match anywhere, so only those run their search, whose
# fixed cost per call (4 us on an entry) is most of a scan. A set's DFA does
# not give up on a hard text (RE2 keeps matching with a set however often
# its cache fills); its memory is bounded by the options.
SET_SIZE = 16


def _rule_sets() -> list[Any]:
    options = re2.Options()
    options.max_mem = 64 << 20
    sets = []
    for first in range(0, len(RULES), SET_SIZE):
        matcher = re2.Set.SearchSet(options)
        for rule in RULES[first:first + SET_SIZE]:
            matcher.Add(rule.regex.pattern)
        matcher.Compile()
        sets.append(matcher)
    return sets


_RULE_SETS = _rule_sets()


def matching_rules(numbers: list[int], encoded: bytes) -> list[Rule]:
    """Of the rules ``numbers``, those whose regex matches somewhere in ``encoded``."""
    found: list[Rule] = []
    chunk, hits = -1, frozenset[int]()
    for number in numbers:
        if number // SET_SIZE != chunk:
            chunk = number // SET_SIZE
            hits = frozenset(_RULE_SETS[chunk].Match(encoded) or ())
        if number % SET_SIZE in hits:
            found.append(RULES[number])
    return found


_UTF8_SIZE = _Table(lambda char: chr(len(char.encode("utf-8", "surrogatepass"))))


def _char_offsets(text: str, encoded: bytes) -> Callable[[int], int]:
    """Byte offset in ``encoded`` -> character offset in ``text`` (its UTF-8)."""
    if len(encoded) == len(text):
        return int
    # Built once, only for a view that is not ASCII: the byte offset of each character.
    sizes = numpy.frombuffer(text.translate(_UTF8_SIZE).encode("latin-1"), dtype=numpy.uint8)
    starts = numpy.concatenate(([0], numpy.cumsum(sizes, dtype=numpy.int64)))

    def to_chars(offset: int) -> int:
        return int(numpy.searchsorted(starts, offset))
    return to_chars


def _line(text: bytes, start: int, end: int) -> str:
    stop = text.find(b"\n", end)
    return text[text.rfind(b"\n", 0, start) + 1:len(text) if stop < 0 else stop].decode()


def _rule_matches(rule: Rule, text: bytes,
                  verdicts: dict[tuple[int, int, bytes], bool]) -> Iterator[tuple[int, int, str]]:
    """(start, end, secret) of each of the rule's secrets in ``text`` (UTF-8, byte offsets).

    Filtered as gitleaks filters them. Bytes, not str: a match then costs no
    offset decoding, which a hostile text with a match every few characters
    would pay a hundred thousand times. ``verdicts`` remembers, for this text,
    whether a match with the same text was a secret (a repeated decoy is
    judged once); a rule whose allowlist reads the whole line is judged
    each time.
    """
    groups = rule.regex.groups
    by_line = any(allowlist.target == "line" for allowlist in rule.allowlists)
    for match in rule.regex.finditer(text):
        # The match's spans, read once: google-re2's group() and span()
        # re-count the pattern's groups on every call (3 us a call), which a
        # hostile text with a match every few bytes would pay each time.
        spans = match._spans
        group = rule.secret_group
        if not group and groups:
            group = next((number for number in range(1, groups + 1)
                          if spans[number][1] > spans[number][0]), 0)
        start, end = spans[group]
        if end <= start:
            continue
        whole = spans[0]
        key = (start - whole[0], end - start, text[whole[0]:whole[1]])
        verdict = None if by_line else verdicts.get(key)
        if verdict is None:
            secret = text[start:end].decode()
            verdict = _is_secret(rule, secret, text, whole)
            if not by_line:
                verdicts[key] = verdict
        if verdict:
            yield start, end, text[start:end].decode()


def _is_secret(rule: Rule, secret: str, text: bytes, whole: tuple[int, int]) -> bool:
    if rule.entropy is not None and entropy(secret) <= rule.entropy:
        return False
    if rule.validate is not None and not rule.validate(secret):
        return False

    def matched() -> str:
        return text[whole[0]:whole[1]].decode()

    def line() -> str:
        return _line(text, *whole)

    return not any(allowlist.allows(secret, matched, line)
                   for allowlist in (*rule.allowlists, *GLOBAL_ALLOWLISTS))


def kinds() -> list[str]:
    """Every kind of secret the scanner knows (rule ids), for the docs and the tests."""
    return [rule.id for rule in RULES] + [ADMIN_TOKEN, MEMORY_WRITE_TOKEN]


class Scanner:
    """Finds secrets in texts; ``known`` maps a kind to a token configured on this server."""

    def __init__(self, known: Mapping[str, str | None] | None = None) -> None:
        self.known = {kind: token for kind, token in (known or {}).items()
                      if token and len(token) >= MIN_KNOWN_TOKEN}

    def _matches(self, text: str) -> Iterator[tuple[int, int, int, str, str]]:
        """(start, end, rule order, kind, secret) in the view's text, in characters."""
        encoded = text.encode()
        to_chars = _char_offsets(text, encoded)
        found = 0
        rules = matching_rules(candidate_numbers(text.lower()), encoded)
        for order, rule in enumerate(rules):
            verdicts: dict[tuple[int, int, bytes], bool] = {}
            for start, end, secret in _rule_matches(rule, encoded, verdicts):
                yield to_chars(start), to_chars(end), order, rule.id, secret
                found += 1
                if found >= 2 * MAX_FINDINGS:  # the text is refused many times over
                    return
        for order, (kind, token) in enumerate(self.known.items(), start=len(RULES)):
            offset = text.find(token)
            while offset >= 0:
                yield offset, offset + len(token), order, kind, token
                offset = text.find(token, offset + len(token))

    def scan(self, field: str, text: str | None) -> list[Finding]:
        """The findings in one field's text, in the order of their offsets.

        Where several rules find overlapping spans (a key both gitleaks and
        GedWeb know), one finding is kept: the earliest, longest span, first
        rule.
        """
        if not text:
            return []
        view = normalise(text)
        found = sorted(self._matches(view.text), key=lambda item: (item[0], -item[1], item[2]))
        if not found:
            return []
        kept: list[tuple[int, int, str, str]] = []
        reach = -1
        for start, end, _, kind, secret in found:
            if start < reach:
                continue
            reach = end
            kept.append((start, end, kind, secret))
            if len(kept) == MAX_FINDINGS:
                break
        newlines = [match.start() for match in _NEWLINE.finditer(text)]
        findings = []
        for start, end, kind, secret in kept:
            offset, stop = view.original(start, end)
            line = bisect.bisect_left(newlines, offset)
            line_start = newlines[line - 1] + 1 if line else 0
            findings.append(Finding(field=field, kind=kind, line=line + 1,
                                    column=offset - line_start + 1, offset=offset,
                                    length=stop - offset, fingerprint=fingerprint(kind, secret)))
        return findings

    def scan_fields(self, fields: Mapping[str, str | None]) -> list[Finding]:
        return [finding for name, text in fields.items() for finding in self.scan(name, text)]


# --- JSON documents (evidence, governance) ----------------------------------------------------


def json_strings(value: Any, path: str = "") -> Iterator[tuple[str, str]]:
    """(path, text) of every string in a JSON value, keys included (``a.b``, ``a.0``)."""
    stack: list[tuple[str, Any]] = [(path, value)]
    while stack:
        where, item = stack.pop()
        if isinstance(item, str):
            yield where, item
        elif isinstance(item, dict):
            for key, child in reversed(list(item.items())):
                name = f"{where}.{key}" if where else str(key)
                yield f"{name} (key)", str(key)
                stack.append((name, child))
        elif isinstance(item, list):
            for index in range(len(item) - 1, -1, -1):
                stack.append((f"{where}.{index}" if where else str(index), item[index]))


def new_json_strings(before: Any, after: Any, path: str = "") -> dict[str, str]:
    """The strings of ``after`` that ``before`` does not hold at the same path."""
    old = set(json_strings(before, path)) if before is not None else set()
    return {where: text for where, text in json_strings(after, path) if (where, text) not in old}


def scan_all(scanner: Scanner, items: Iterable[tuple[str, str | None]]) -> list[Finding]:
    return [finding for name, text in items for finding in scanner.scan(name, text)]
