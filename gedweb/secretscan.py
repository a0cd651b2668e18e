"""The secret scanner: credentials in agent or user text, found by format (issue 22).

Plain Python, no Django: memory.secret_scan gives it the configured tokens
and the project's allowed fingerprints, and turns a finding into the 422
``secret_detected``. What it finds, and what it leaves alone, is in
docs/security.md ("Secrets in written text").

The formats are detect-secrets' (Yelp's scanner, kept up to date with the
providers' formats): each plugin's own regexes and its secret type, run by
this module over the whole text with ``finditer`` so a finding has its
offset, hence its line and column, and never needs the secret echoed. Not
every plugin is used, and three are run in a bounded form:

- Left out, because their assignment regexes backtrack catastrophically
  (measured: IbmCloudIamDetector takes 17 s on ``ibm_cloud_iam_key`` and
  1,000 spaces, longer than any timeout at 4,000; the same builder,
  ``RegexBasedDetector.build_assignment_regex``, serves all four):
  IbmCloudIamDetector, IbmCosHmacDetector, CloudantDetector,
  SoftlayerDetector. Every rule over outside text runs in linear time.
- Left out, because memory is full of what they flag: the high-entropy
  string plugins (Base64HighEntropyString, HexHighEntropyString) flag commit
  SHAs, SHA-256 digests, GedWeb's chain hashes and base64 fixtures, which
  every second entry holds; KeywordDetector flags prose about passwords and
  tokens (``token: the project's bearer token``), which GedWeb's own
  documents are full of; IPPublicDetector flags addresses, not secrets.
- Bounded: JwtTokenDetector's regex starts at every ``eyJ`` and rescans the
  rest of the run from each (quadratic: 0.6 s on 32,000 characters of
  ``eyJeyJ...``), OpenAIDetector's ``sk-[A-Za-z0-9-_]*[A-Za-z0-9]{20}...``
  rescans from every ``sk-`` (1 s on 20,000 characters), NpmDetector's
  ``//.+/:_authToken=`` rescans the line from every ``//``. Each is run here
  as the same match found in linear time (below), with the plugin's secret
  type and, for JWTs, its own validity check.

GedWeb's own: project tokens (``gwp_`` and 43 URL-safe characters, as
memory.services.generate_project_token makes them) and the configured admin
and memory write tokens, found as literal text.

A finding's fingerprint is ``sha256("gedweb-secret-v1\\0" kind "\\0" secret)``:
the same secret of the same kind has the same fingerprint everywhere, so an
operator allows it by fingerprint (memory.AllowedSecret) without the text.
"""

from __future__ import annotations

import base64
import bisect
import hashlib
import re
import re._constants as _regex_constants  # type: ignore[import-not-found]  # unstubbed
import re._parser as _regex_parser  # type: ignore[import-not-found]
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from detect_secrets.filters.heuristic import is_prefixed_with_dollar_sign, is_templated_secret
from detect_secrets.plugins.artifactory import ArtifactoryDetector
from detect_secrets.plugins.aws import AWSKeyDetector
from detect_secrets.plugins.azure_storage_key import AzureStorageKeyDetector
from detect_secrets.plugins.basic_auth import BasicAuthDetector
from detect_secrets.plugins.discord import DiscordBotTokenDetector
from detect_secrets.plugins.github_token import GitHubTokenDetector
from detect_secrets.plugins.gitlab_token import GitLabTokenDetector
from detect_secrets.plugins.jwt import JwtTokenDetector
from detect_secrets.plugins.mailchimp import MailchimpDetector
from detect_secrets.plugins.npm import NpmDetector
from detect_secrets.plugins.openai import OpenAIDetector
from detect_secrets.plugins.private_key import PrivateKeyDetector
from detect_secrets.plugins.pypi_token import PypiTokenDetector
from detect_secrets.plugins.sendgrid import SendGridDetector
from detect_secrets.plugins.slack import SlackDetector
from detect_secrets.plugins.square_oauth import SquareOAuthDetector
from detect_secrets.plugins.stripe import StripeDetector
from detect_secrets.plugins.telegram_token import TelegramBotTokenDetector
from detect_secrets.plugins.twilio import TwilioKeyDetector

FINGERPRINT_PREFIX = "gedweb-secret-v1"
GEDWEB_PROJECT_TOKEN = "GedWeb project token"
ADMIN_TOKEN = "GedWeb admin token"
MEMORY_WRITE_TOKEN = "GedWeb memory write token"
# A configured token shorter than this is not looked for: it would be found
# in ordinary words (settings refuse such tokens in production anyway).
MIN_KNOWN_TOKEN = 16

# detect-secrets' plugins run with their own regexes (module docstring).
# Each was timed on hostile input of 160,000 characters (a run of its
# prefix, of its character class, of separators) and grows linearly.
REGEX_PLUGINS: tuple[type[Any], ...] = (
    AWSKeyDetector,
    ArtifactoryDetector,
    AzureStorageKeyDetector,
    BasicAuthDetector,
    DiscordBotTokenDetector,
    GitHubTokenDetector,
    GitLabTokenDetector,
    MailchimpDetector,
    PrivateKeyDetector,
    PypiTokenDetector,
    SendGridDetector,
    SlackDetector,
    SquareOAuthDetector,
    StripeDetector,
    TelegramBotTokenDetector,
    TwilioKeyDetector,
)
# Run in their bounded form (below), under the plugin's own secret type.
BOUNDED_PLUGINS: tuple[type[Any], ...] = (JwtTokenDetector, OpenAIDetector, NpmDetector)

_GEDWEB_TOKEN = re.compile(r"gwp_[A-Za-z0-9_-]{43}")
_NEWLINE = re.compile("\n")


@dataclass(frozen=True)
class Finding:
    """One secret in one field: where and what kind, never the secret itself."""

    field: str
    kind: str
    line: int  # 1-based
    column: int  # 1-based, in characters
    offset: int  # 0-based character offset in the field's text
    length: int  # characters, so a redaction can cut exactly this span
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


# --- the bounded forms ----------------------------------------------------------------------

_JWT_CHARS = "A-Za-z0-9_=-"
# One run of JWT characters, a dot, a run, an optional dot: possessive, and
# never started inside a run, so every character is looked at a bounded
# number of times. The plugin's own regex is
# ``eyJ[A-Za-z0-9-_=]+\.[A-Za-z0-9-_=]+\.?[A-Za-z0-9-_.+/=]*?``: its lazy tail
# matches nothing, so its match is the header from the first ``eyJ`` of the
# run, the payload and the optional dot, which is what this finds.
_JWT_SPAN = re.compile(rf"(?<![{_JWT_CHARS}])[{_JWT_CHARS}]++\.[{_JWT_CHARS}]++\.?")


def _jwt_header_closes(token: str) -> bool:
    """A cheap first look (the plugin's check decodes both parts and parses their JSON)."""
    header = token[:token.index(".")]
    if len(header) % 4 == 1:
        return False
    try:
        decoded = base64.urlsafe_b64decode(header + "=" * (-len(header) % 4))
    except ValueError:
        return False
    return decoded.rstrip().endswith(b"}")


def _jwt(text: str) -> Iterator[tuple[int, str]]:
    if "eyJ" not in text:  # every token found below starts with it: one pass in C
        return
    for match in _JWT_SPAN.finditer(text):
        span = match.group()
        start = span.find("eyJ", 0, span.index(".") - 1)
        if start < 0:
            continue
        token = span[start:]
        if _jwt_header_closes(token) and JwtTokenDetector.is_formally_valid(token):
            yield match.start() + start, token


_OPENAI_MARK = "T3BlbkFJ"  # base64 of "OpenAI", in the middle of every such key
_OPENAI_RUN = re.compile(r"[A-Za-z0-9_-]++")
_ALNUM20 = re.compile(r"[A-Za-z0-9]{20}")
# The plugin's ``sk-[A-Za-z0-9-_]*`` before the 20 characters: a longer
# prefix than this is not looked for (keys as issued carry at most a project
# or service-account id there).
OPENAI_MAX_PREFIX = 256


def _openai(text: str) -> Iterator[tuple[int, str]]:
    """``sk-[A-Za-z0-9-_]*[A-Za-z0-9]{20}T3BlbkFJ[A-Za-z0-9]{20}``, anchored on the mark.

    Every character of such a key is in the plugin's prefix class, so a key
    lies within one run of it: each run is read once, each mark in it is
    checked in a bounded window. A text without the mark has no key: one
    pass in C, instead of a Python loop over every word.
    """
    if _OPENAI_MARK not in text:
        return
    for run in _OPENAI_RUN.finditer(text):
        run_start, run_end = run.span()
        end = run_start
        position = text.find(_OPENAI_MARK, run_start, run_end)
        while position >= 0:
            head, tail = position - 20, position + len(_OPENAI_MARK)
            if (head >= end + 3 and tail + 20 <= run_end
                    and _ALNUM20.fullmatch(text, head, position)
                    and _ALNUM20.fullmatch(text, tail, tail + 20)):
                start = text.find("sk-", max(end, head - 3 - OPENAI_MAX_PREFIX), head)
                if start >= 0:
                    yield start, text[start:tail + 20]
                    end = tail + 20
                    position = text.find(_OPENAI_MARK, end, run_end)
                    continue
            position = text.find(_OPENAI_MARK, position + 1, run_end)


_NPM_MARK = "/:_authToken="
_NPM_VALUE = re.compile(r"[ \t\f\v\r]*+(?:(npm_.+)|([A-Fa-f0-9-]{36}))")


def _npm(text: str) -> Iterator[tuple[int, str]]:
    """``//.+/:_authToken=\\s*((npm_.+)|([A-Fa-f0-9-]{36})).*`` per line, anchored on the mark.

    Each line holding the mark is bounded once; its first ``//`` is found once.
    """
    line_end = -1
    slashes = -1
    position = text.find(_NPM_MARK)
    while position >= 0:
        if position > line_end:
            line_start = text.rfind("\n", 0, position) + 1
            line_end = text.find("\n", position)
            line_end = len(text) if line_end < 0 else line_end
            slashes = text.find("//", line_start, line_end)
        # ``//.+`` : a "//" with at least one character before the mark, on this line.
        if 0 <= slashes < position - 2:
            value = _NPM_VALUE.match(text, position + len(_NPM_MARK), line_end)
            if value is not None:
                group = 1 if value.group(1) else 2
                yield value.start(group), value.group(group)
                # The plugin's trailing ``.*`` takes the rest of the line.
                position = text.find(_NPM_MARK, line_end)
                continue
        position = text.find(_NPM_MARK, position + 1)


_BOUNDED = {
    JwtTokenDetector.secret_type: _jwt,
    OpenAIDetector.secret_type: _openai,
    NpmDetector.secret_type: _npm,
}


# --- the scanner ------------------------------------------------------------------------------


# The plugins whose groups capture the secret itself (the password of a URL,
# an AWS secret key after its variable's name). The others' groups capture
# a prefix (``(ghp|gho|...)_``): detect-secrets would report ``ghp`` as the
# secret, so every GitHub token would share one fingerprint. Theirs is the
# whole match.
_SECRET_GROUPS = frozenset({BasicAuthDetector.secret_type, AWSKeyDetector.secret_type})


def _regex_matches(kind: str, pattern: re.Pattern[str],
                   text: str) -> Iterator[tuple[int, str]]:
    """Each match's secret: its first non-empty group for _SECRET_GROUPS, else the match."""
    groups = pattern.groups if kind in _SECRET_GROUPS else 0
    for match in pattern.finditer(text):
        index = next((i for i in range(1, groups + 1) if match.group(i)), 0)
        yield match.start(index), match.group(index)


# The passwords of documentation's example URLs (``postgres://user:password@host``):
# words that name a password rather than being one, and runs of one character.
PLACEHOLDER_PASSWORDS = frozenset({"password", "passwd", "pass", "pwd", "secret", "token",
                                   "example", "redacted"})


def _placeholder(kind: str, secret: str) -> bool:
    """detect-secrets' own filters for a value that names a secret rather than being one.

    For a URL's password only: every other format is a credential by its shape.
    """
    if kind != BasicAuthDetector.secret_type:
        return False
    return (is_templated_secret(secret) or is_prefixed_with_dollar_sign(secret)
            or secret.lower() in PLACEHOLDER_PASSWORDS or len(set(secret)) == 1)


def required_text(pattern: re.Pattern[str]) -> str | None:
    """The longest run of literal characters that every match of ``pattern`` contains.

    A text without it cannot match, which ``in`` tells in one pass in C: most
    entries hold none of the providers' prefixes, and each regex searched
    in full cost about as much as all of an entry's other checks. Only the
    pattern's top level is read (what is inside a group or a repeat may not
    be in a match), from the tree Python's own regex compiler parses it into;
    a case-insensitive pattern has none (its letters match other letters).
    """
    if pattern.flags & re.IGNORECASE:
        return None
    longest, run = "", ""
    for op, argument in _regex_parser.parse(pattern.pattern, pattern.flags).data:
        if op is _regex_constants.LITERAL:
            run += chr(argument)
        else:
            longest, run = max(longest, run, key=len), ""
    return max(longest, run, key=len) or None


_RULES: tuple[tuple[str, re.Pattern[str], str | None], ...] = tuple(
    (kind, pattern, required_text(pattern)) for kind, pattern in (
        *((plugin.secret_type, pattern) for plugin in REGEX_PLUGINS
          for pattern in plugin.denylist),
        (GEDWEB_PROJECT_TOKEN, _GEDWEB_TOKEN),
    )
)


def kinds() -> list[str]:
    """Every kind of secret the scanner knows, for the docs and the tests."""
    names = dict.fromkeys(kind for kind, _, _ in _RULES)
    names.update(dict.fromkeys(_BOUNDED))
    names.update({ADMIN_TOKEN: None, MEMORY_WRITE_TOKEN: None})
    return list(names)


class Scanner:
    """Finds secrets in texts; ``known`` maps a kind to a token configured on this server."""

    def __init__(self, known: Mapping[str, str | None] | None = None) -> None:
        self.known = {kind: token for kind, token in (known or {}).items()
                      if token and len(token) >= MIN_KNOWN_TOKEN}

    def _matches(self, text: str) -> Iterator[tuple[str, int, str]]:
        for kind, pattern, required in _RULES:
            if required is not None and required not in text:
                continue
            for offset, secret in _regex_matches(kind, pattern, text):
                yield kind, offset, secret
        for kind, finder in _BOUNDED.items():
            for offset, secret in finder(text):
                yield kind, offset, secret
        for kind, token in self.known.items():
            offset = text.find(token)
            while offset >= 0:
                yield kind, offset, token
                offset = text.find(token, offset + len(token))

    def scan(self, field: str, text: str | None) -> list[Finding]:
        """The findings in one field's text, in the order of their offsets."""
        if not text:
            return []
        seen: set[tuple[str, int, str]] = set()
        found = []
        for kind, offset, secret in self._matches(text):
            if (kind, offset, secret) in seen or _placeholder(kind, secret):
                continue
            seen.add((kind, offset, secret))
            found.append((offset, kind, secret))
        if not found:
            return []
        found.sort(key=lambda item: (item[0], item[1]))
        newlines = [match.start() for match in _NEWLINE.finditer(text)]
        findings = []
        for offset, kind, secret in found:
            line = bisect.bisect_left(newlines, offset)
            line_start = newlines[line - 1] + 1 if line else 0
            findings.append(Finding(field=field, kind=kind, line=line + 1,
                                    column=offset - line_start + 1, offset=offset,
                                    length=len(secret), fingerprint=fingerprint(kind, secret)))
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
