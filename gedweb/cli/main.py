"""`gedweb`: the agent and operator CLI for a GedWeb server (HTTP only).

Exit codes: 0 ok; 1 the server refused the request (an error status), the
memory chain failed verification, or a push or pull refused the checkout; 2
usage error; 3 network failure after the retries.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import sys
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn
from urllib.parse import urlsplit

from gedweb.cli import agents, hooks
from gedweb.cli.client import (
    DEFAULT_URL,
    ApiError,
    Client,
    NetworkError,
    client_version,
    without_hashes,
)
from gedweb.lib.chain import CHAINED_FIELDS, CHAINED_FIELDS_V2, GENESIS_HASH, verify_chain
from gedweb.lib.ids import PROJECT_ID_RE
from gedweb.progress import Bars

EXIT_OK = 0
EXIT_REFUSED = 1  # server error status, or verification failed
EXIT_USAGE = 2
EXIT_NETWORK = 3


def _page_limit(text: str) -> int:
    """A listing's --limit: a whole number, 0 or more; the server caps it at 500."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more: {value}")
    return value


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1: {value}")
    return value


# The longest wait per HTTP attempt the CLI accepts: a day. Above it a typo
# (an extra digit) would look like a hang.
MAX_TIMEOUT = 86_400.0
# Project tokens start with this (memory.services.generate_project_token).
PROJECT_TOKEN_PREFIX = "gwp_"


def _timeout(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not math.isfinite(value) or not 0 < value <= MAX_TIMEOUT:
        raise argparse.ArgumentTypeError(
            f"must be more than 0 and at most {MAX_TIMEOUT:g} seconds: {text!r}")
    return value


def _names_a_token(word: str) -> bool:
    """--token, --memory-token, and their misspellings (--tokn, --memory-tokens)."""
    return word.startswith("--") and "tok" in word.split("=", 1)[0].lower()


# Where a token may come from besides the command line: GedWeb's variables
# first, Ferryman's when GedWeb's are unset.
TOKEN_VARIABLES = ("GEDWEB_TOKEN", "FERRYMAN_TOKEN")
MEMORY_TOKEN_VARIABLES = ("GEDWEB_MEMORY_TOKEN", "FERRYMAN_MEMORY_TOKEN")


def _first_set(names: Sequence[str]) -> str | None:
    for name in names:
        if value := os.environ.get(name):
            return value
    return None


def _url_password(word: str) -> str | None:
    """The password of a URL such as http://user:secret@host, which is a credential too."""
    if "://" not in word or "@" not in word:
        return None
    try:
        return urlsplit(word.split("=", 1)[1] if word.startswith("--") else word).password
    except ValueError:
        return None


def secret_values(argv: Sequence[str]) -> list[str]:
    """What on the command line may be a secret, for messages to leave out.

    The value of any option that names a token, spelled right or not
    (``--token X``, ``--tokn=X``), every word shaped like a project token, the
    password of a URL, and the tokens taken from the environment (GedWeb's and
    Ferryman's variables).
    """
    values: list[str] = []
    for position, word in enumerate(argv):
        if _names_a_token(word):
            if "=" in word:
                values.append(word.split("=", 1)[1])
            elif position + 1 < len(argv):
                values.append(argv[position + 1])
        elif word.startswith(PROJECT_TOKEN_PREFIX):
            values.append(word)
        values.append(_url_password(word) or "")
    values += [os.environ.get(name, "") for name in (*TOKEN_VARIABLES, *MEMORY_TOKEN_VARIABLES)]
    values.append(_url_password(os.environ.get("GEDWEB_URL", "")) or "")
    return [value for value in values if value]


def redact(message: str, secrets: Iterable[str]) -> str:
    for secret in sorted(secrets, key=len, reverse=True):
        message = message.replace(secret, "[secret]")
    return message


class Parser(argparse.ArgumentParser):
    """argparse, whose usage errors never repeat a secret from the command line.

    argparse quotes what it could not place ("unrecognized arguments: ...",
    "invalid choice: ..."), which may be a token: every error message, of this
    parser and of its subcommands, has the secrets given on the command line
    replaced before it is printed.
    """

    secrets: tuple[str, ...] = ()
    # `gedweb hook`: a usage error must not exit 2 (Claude Code would block the prompt).
    failing_open = False

    def error(self, message: str) -> NoReturn:
        if Parser.failing_open:
            raise HookUsageError(redact(message, Parser.secrets))
        super().error(redact(message, Parser.secrets))


class HookUsageError(Exception):
    """A usage error of `gedweb hook`, which still exits 0 (hooks fail open)."""


# --- showing text from the server -------------------------------------------------------------

# What could drive a terminal or disguise text: the C0 controls, DEL, the C1
# controls (0x9b is a one-byte CSI on some terminals) and the Unicode bidi
# controls that reorder what is shown. Stored text is written by agents, so
# none of it reaches the terminal as it is.
_TERMINAL_CONTROLS = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
LINE_BREAK_MARK = " \u23ce "  # ⏎: where a multi-line text broke, shown on one line


def _escape(character: str) -> str:
    code = ord(character)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def terminal_safe(text: str, *, keep_line_breaks: bool) -> str:
    """``text`` with every control character shown as an escape (ESC as ``\\x1b``).

    With ``keep_line_breaks`` (a document, the context bundle) newlines and
    tabs stay as they are; without (one line of a listing) each line break
    becomes ``⏎`` and a tab a space.
    """
    text = text.replace("\r\n", "\n")
    if keep_line_breaks:
        return _TERMINAL_CONTROLS.sub(
            lambda match: match[0] if match[0] in "\n\t" else _escape(match[0]), text)
    text = LINE_BREAK_MARK.join(text.split("\n")).replace("\t", " ")
    return _TERMINAL_CONTROLS.sub(lambda match: _escape(match[0]), text)


def compact_json(value: Any) -> str:
    """One line of JSON; the controls json.dumps keeps as they are (DEL, C1, bidi) are
    written as \\u escapes, so the value is the same and the terminal is safe."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return _TERMINAL_CONTROLS.sub(lambda match: f"\\u{ord(match[0]):04x}", text)


def _field(record: dict[str, Any], name: str) -> str:
    value = record.get(name)
    return terminal_safe("-" if value is None else str(value), keep_line_breaks=False)


def _when(moment: Any) -> str:
    """2026-11-30T08:00:00.123456+00:00 (or GedPi's ...Z) as 2026-11-30 08:00."""
    text = str(moment or "")
    if re.match(r"\d{4}-\d\d-\d\dT\d\d:\d\d", text):
        return f"{text[:10]} {text[11:16]}"
    return terminal_safe(text or "-", keep_line_breaks=False)


def entry_line(entry: dict[str, Any]) -> str:
    """#12 2026-11-30 08:00 decision [architect] Orders stay on PostgreSQL 16."""
    return (f"#{_field(entry, 'seq')} {_when(entry.get('created_at'))} "
            f"{_field(entry, 'category')} [{_field(entry, 'source')}] {_field(entry, 'content')}")


def recalled_line(entry: dict[str, Any]) -> str:
    """0.912 #12 2026-11-30 08:00 decision [architect] Orders stay on PostgreSQL 16."""
    score = entry.get("score")
    shown = f"{score:.3f}" if isinstance(score, (int, float)) else "?"
    return f"{shown} {entry_line(entry)}"


def candidate_line(candidate: dict[str, Any]) -> str:
    return (f"{_field(candidate, 'id')} {_when(candidate.get('created_at'))} "
            f"{_field(candidate, 'status')} {_field(candidate, 'category')} "
            f"[{_field(candidate, 'source')}] {_field(candidate, 'content')}")


def document_line(document: dict[str, Any]) -> str:
    sha256 = _field(document, "sha256")[:12]
    return (f"{_field(document, 'path')} r{_field(document, 'revision')} "
            f"{_when(document.get('updated_at') or document.get('created_at'))} "
            f"[{_field(document, 'author')}] sha256:{sha256}")


def work_line(work: dict[str, Any]) -> str:
    return (f"{_field(work, 'work_id')} {_when(work.get('created_at'))} {_field(work, 'mode')} "
            f"[{_field(work, 'author')}] {_field(work, 'summary')}")


def work_detail_line(work: dict[str, Any]) -> str:
    """One work item as GET .../work/{id} answers it: META and the governance document."""
    meta, governance = (part if isinstance(part := work.get(name), dict) else {}
                        for name in ("meta", "governance"))
    decision = governance.get("decision")
    mode = _field(decision, "mode") if isinstance(decision, dict) else "-"
    return (f"{_field(work, 'work_id')} {_when(meta.get('createdAt'))} {mode} "
            f"{_field(governance, 'lifecycle')} {_field(meta, 'summary')}")


@dataclass
class Output:
    """How answers are printed: ``json`` (one compact line, the API's answer) or ``text``."""

    format: str
    hashes: bool

    def lean(self, record: dict[str, Any]) -> dict[str, Any]:
        """An entry or candidate without its chain links, unless --hashes asked for them."""
        return record if self.hashes else without_hashes(record)

    def record(self, record: Any, line: Callable[[dict[str, Any]], str], *,
               lean: bool = False) -> None:
        record = _record(record)
        if self.format == "json":
            self._write(compact_json(self.lean(record) if lean else record))
        else:
            self._write(line(record))

    def page(self, page: dict[str, Any], line: Callable[[dict[str, Any]], str], *,
             lean: bool = False) -> None:
        items = [_record(item) for item in _items(page)]
        if self.format == "json":
            shown = [self.lean(item) for item in items] if lean else items
            self._write(compact_json({**page, "items": shown}))
        else:
            for item in items:
                self._write(line(item))

    def listing(self, items: Iterable[Any], line: Callable[[dict[str, Any]], str], *,
                lean: bool = False) -> None:
        """A whole listing (``--all``), written item by item as the pages arrive.

        The same bytes as page() of ``{"items": [...], "next_cursor": null}``,
        without holding the items: a listing of a million entries is printed
        in the memory of one page. A page that fails after others were
        printed leaves those on stdout (the exit status still says so).
        """
        if self.format == "json":
            sys.stdout.write(LISTING_START)
            for position, item in enumerate(items):
                record = _record(item)
                sys.stdout.write(("," if position else "")
                                 + compact_json(self.lean(record) if lean else record))
            self._write(LISTING_END)
        else:
            for item in items:
                self._write(line(_record(item)))

    def text(self, text: str) -> None:
        """Raw text (a document, the bundle, STANDARDS.md), ending with a newline."""
        text = terminal_safe(text, keep_line_breaks=True)
        sys.stdout.write(text if text.endswith("\n") or not text else text + "\n")

    @staticmethod
    def _write(line: str) -> None:
        sys.stdout.write(line + "\n")


# compact_json({"items": [...], "next_cursor": None}) around its items.
LISTING_START, LISTING_END = compact_json({"items": [None], "next_cursor": None}).split("null", 1)


def _items(page: Any) -> list[Any]:
    items = page.get("items") if isinstance(page, dict) else None
    if not isinstance(items, list):
        raise ApiError(200, "bad_response", "the listing has no items array")
    return items


def _record(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ApiError(200, "bad_response", "the answer is not a JSON object")
    return value


# --- the command line -------------------------------------------------------------------------


def _global_options(parser: argparse.ArgumentParser, *, defaults: bool) -> None:
    """The options of every command, accepted before or after the command's name.

    The top-level parser carries the real defaults (from the environment); the
    copies on the subcommands default to SUPPRESS, so an option given after the
    command overrides one given before it and an absent one overrides nothing.
    """

    def default(value: Any) -> Any:
        return value if defaults else argparse.SUPPRESS

    parser.add_argument("--url", "--endpoint", dest="url",
                        default=default(os.environ.get("GEDWEB_URL") or DEFAULT_URL),
                        help=f"server base URL (env GEDWEB_URL, default {DEFAULT_URL}); "
                             "--endpoint is Ferryman's name for it")
    parser.add_argument("--token", default=default(_first_set(TOKEN_VARIABLES)),
                        help="project or admin token (env GEDWEB_TOKEN, else FERRYMAN_TOKEN)")
    parser.add_argument("--memory-token", default=default(_first_set(MEMORY_TOKEN_VARIABLES)),
                        help="memory write token, sent as X-Memory-Token "
                             "(env GEDWEB_MEMORY_TOKEN, else FERRYMAN_MEMORY_TOKEN)")
    parser.add_argument("--timeout", type=_timeout, default=default(30.0),
                        help="seconds per HTTP attempt, more than 0 (default 30)")
    parser.add_argument("--format", choices=("json", "text"), default=default("json"),
                        help="json (default): the API's answer as one compact line; "
                             "text: one readable line per item, documents as their text")
    parser.add_argument("--hashes", action="store_true", default=default(False),
                        help="json: keep the entries' prev_hash and hash (left out by default)")


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="gedweb",
        description="Talk to a GedWeb server over its REST API.",
        epilog="Exit codes: 0 ok, 1 server refused, verification failed or push/pull refused "
               "the checkout, 2 usage, 3 network failure after retries.",
    )
    parser.add_argument("--version", action="version", version=f"gedweb {client_version()}")
    _global_options(parser, defaults=True)
    shared = Parser(add_help=False)
    _global_options(shared, defaults=False)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND",
                                     parser_class=Parser)

    def command(group: Any, name: str, help_text: str) -> argparse.ArgumentParser:
        sub: argparse.ArgumentParser = group.add_parser(name, help=help_text,
                                                        description=help_text,
                                                        parents=[shared])
        project_option(sub)
        return sub

    def project_option(sub: argparse.ArgumentParser) -> None:
        sub.add_argument("--project", required=True, help="the project's id")

    def group(name: str, help_text: str) -> Any:
        sub = commands.add_parser(name, help=help_text, description=help_text)
        return sub.add_subparsers(dest=f"{name}_command", required=True, metavar="SUBCOMMAND",
                                  parser_class=Parser)

    def limit_option(sub: argparse.ArgumentParser, what: str) -> None:
        sub.add_argument("--limit", type=_page_limit,
                         help=f"{what} to print, 0 or more (the server gives at most 500, "
                              "default 100); with --all the page size")

    memory = group("memory", "project memory")
    add = command(memory, "add", "append an entry; prints it")
    add.add_argument("--category", required=True,
                     help="what kind of entry: lower-case letters, digits, - and _ "
                          "(e.g. decision, note, fact)")
    add.add_argument("--content", required=True, help="the entry's text")
    add.add_argument("--source", help="where it comes from (default: operator)")
    add.add_argument("--corrects", help="uuid or seq of the entry this one corrects")
    add.add_argument("--idempotency-key",
                     help="sent as Idempotency-Key (default: a fresh key per invocation)")

    listing = command(memory, "list", 'print entries ({"items": [...], "next_cursor": ...})')
    limit_option(listing, "entries")
    listing.add_argument("--order", choices=("asc", "desc"), default="asc",
                         help="asc: oldest first (default); desc: newest first")
    listing.add_argument("--category", help="only entries of this category")
    listing.add_argument("--source", help="only entries from this source")
    listing.add_argument("--since", help="only entries written at or after this ISO 8601 time")
    listing.add_argument("--current", action="store_true",
                         help="leave out entries that a later entry corrects (view=current)")
    listing.add_argument("--all", action="store_true",
                         help="follow next_cursor to the end, in the chosen order")

    search = command(memory, "search", "full-text search, newest first: every word must occur")
    search.add_argument("query", metavar="QUERY", help="the words to find (case-insensitive)")
    limit_option(search, "matches")
    search.add_argument("--category", help="only entries of this category")
    search.add_argument("--since", help="only entries written at or after this ISO 8601 time")

    recall = command(memory, "recall", "the entries that best answer a question in your own "
                     "words, best first (docs/recall.md)")
    recall.add_argument("query", metavar="TEXT", help="the question or task (1-4,000 characters)")
    recall.add_argument("--limit", type=int, default=10, help="how many entries (1-50, default 10)")
    recall.add_argument("--mode", choices=("hybrid", "semantic", "keyword"), default="hybrid",
                        help="hybrid (default) blends keyword and meaning")
    recall.add_argument("--category", help="only entries of this category")
    recall.add_argument("--all", action="store_true",
                        help="include entries a later entry corrects (view=all)")

    get = command(memory, "get", "print one entry with the entries that correct it")
    get.add_argument("ref", metavar="REF", help="the entry's uuid or seq")

    command(memory, "verify", "download the whole record and re-check every link locally")

    candidates = group("candidates", "proposed entries waiting for review")
    propose = command(candidates, "propose", "propose an entry for review (any project token)")
    propose.add_argument("--category", required=True,
                         help="what kind of entry: lower-case letters, digits, - and _")
    propose.add_argument("--content", required=True, help="the proposed entry's text")
    propose.add_argument("--source", help="where it comes from (default: operator)")
    propose.add_argument("--idempotency-key",
                         help="sent as Idempotency-Key (default: a fresh key per invocation)")
    candidate_list = command(candidates, "list", "print candidates, oldest first")
    candidate_list.add_argument("--status",
                                choices=("pending", "approved", "rejected", "withdrawn"),
                                help="only candidates in this state (default: all)")
    limit_option(candidate_list, "candidates")
    candidate_list.add_argument("--all", action="store_true",
                                help="follow next_cursor to the end")
    for decision, help_text in (("approve", "approve a pending candidate; prints the new entry "
                                            "(needs memory write rights; never retried)"),
                                ("reject", "reject a pending candidate; prints it "
                                           "(never retried)"),
                                ("withdraw", "withdraw a pending candidate this token proposed; "
                                             "prints it (never retried)")):
        decide = command(candidates, decision, help_text)
        decide.add_argument("candidate_id", metavar="ID", help="the candidate's id (a uuid)")

    documents = group("documents", "durable documents (PROJECT.md, CONTEXT.md, ADRs, ...)")
    document_list = command(documents, "list", "print the current revision of every document")
    document_list.add_argument("--prefix", help="only paths starting with this (e.g. adr/)")
    document_get = command(documents, "get", "print a document (text: its content)")
    document_get.add_argument("path", metavar="PATH",
                              help="the document's path, e.g. adr/0001-x.md")
    document_get.add_argument("--revision", type=_positive,
                              help="an earlier revision, 1 or more (default: the newest)")

    work = group("work", "work items")
    work_list = command(work, "list", "print work items, oldest first")
    limit_option(work_list, "work items")
    work_list.add_argument("--all", action="store_true", help="follow next_cursor to the end")
    work_get = command(work, "get", "print one work item: META and its governance")
    work_get.add_argument("work_id", metavar="WORK_ID", help="the work item's id")

    context = command(commands, "context", "print the framed context bundle")
    context.add_argument("--work", help="work id for the runtime sections")
    context.add_argument("--task", help="what you are about to do: adds the entries recalled "
                         "for it (1-1,000 characters)")
    context.add_argument("--budget", type=int,
                         help="tokens (characters / 4) for those entries (default 1,000)")
    command(commands, "standards", "print STANDARDS.md (the accepted instructions)")
    command(commands, "mcp", "run a Model Context Protocol server over stdio")

    init = command(commands, "init", "write the files that wire GedWeb into an agent: its MCP "
                                     "registration, hooks and instructions (no token)")
    init.add_argument("agent", metavar="AGENT", choices=agents.AGENTS,
                      help="claude-code, codex or cursor")
    init.add_argument("path", metavar="PATH", nargs="?", default=".",
                      help="the repository's root directory (default: the current one)")
    init.add_argument("--dry-run", action="store_true",
                      help="print what would change, as a diff, and write nothing")
    init.add_argument("--force", action="store_true",
                      help="replace a GedWeb entry that differs from what init writes")
    hook = command(commands, "hook", "a Claude Code hook: reads its JSON on stdin, prints the "
                                     "context it adds; always exits 0 (fails open)")
    hook.add_argument("event", metavar="EVENT", choices=hooks.EVENTS,
                      help="session-start, prompt or session-end")
    hook.add_argument("--budget", type=_positive, default=hooks.DEFAULT_PROMPT_BUDGET,
                      help="prompt: tokens (characters / 4) for the recalled entries "
                           f"(default {hooks.DEFAULT_PROMPT_BUDGET})")

    push = command(commands, "push", "upload the checkout's GedPi layout and import it "
                                     "(ged_import on the server); prints its report")
    push.add_argument("path", metavar="PATH", nargs="?", default=".",
                      help="the checkout's root directory (default: the current one); "
                           "only read, never changed")
    push.add_argument("--dry-run", action="store_true",
                      help="run the whole import on the server and roll it back: the report "
                           "of what would be written, nothing written")
    pull = command(commands, "pull", "download the project's GedPi layout (what ged_export "
                                     "writes) into PATH")
    pull.add_argument("path", metavar="PATH", nargs="?", default=".",
                      help="the checkout's root directory (default: the current one; created "
                           "if missing)")
    pull.add_argument("--force", action="store_true",
                      help="overwrite local files changed since the last pull")
    return parser


def _corrects(value: str | None) -> str | int | None:
    if value is not None and value.isdigit():
        return int(value)
    return value


def local_verify(entries: Iterable[Any]) -> dict[str, Any]:
    """verify_chain over downloaded entries, as they arrive; a malformed entry is a broken link.

    Each entry is checked and dropped, so the memory used is one page's
    (and verify_chain's redacted entries), whatever the length of the record.
    """
    needed_v1 = {*CHAINED_FIELDS, "prev_hash", "hash"}
    needed_v2 = {*CHAINED_FIELDS_V2, "content", "id", "prev_hash", "hash"}

    def checked() -> Iterator[dict[str, Any]]:
        for entry in entries:
            if isinstance(entry, dict):
                # A server from before chain format 2 sends neither field: format 1.
                entry = {"content_sha256": None, "redacts": None, **entry}
                needed = needed_v1 if entry["content_sha256"] is None else needed_v2
            if isinstance(entry, dict) and all(name in entry for name in needed):
                yield entry
            else:  # cannot match any link, so verify_chain names its position
                yield {**{name: None for name in needed_v1}, "seq": -1,
                       "hash": GENESIS_HASH[:-1]}

    return verify_chain(checked()).as_dict()


# A whole listing is read in pages of at most this (the server's maximum).
MAX_PAGE = 500


def _page_size(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    if args.limit == 0:
        parser.error("--limit 0 with --all: a page size must be at least 1")
    return min(args.limit or MAX_PAGE, MAX_PAGE)


def run(args: argparse.Namespace, client: Client, parser: argparse.ArgumentParser) -> int:
    out = Output(args.format, args.hashes)
    project = args.project
    if args.command == "mcp":
        from gedweb.cli.mcp_server import serve

        # A wrong token, URL or project is one line and a non-zero exit now,
        # not a server that starts and then fails every call.
        try:
            client.project(project)
        except ApiError as exc:
            if exc.status != 404:
                raise
            raise ApiError(404, exc.code, f"no project {project!r} that this token can see",
                           exc.fields) from None
        return serve(client, project)
    if args.command == "init":
        return _init(args)
    if args.command == "context":
        out.text(client.context(project, args.work, args.task, args.budget))
    elif args.command == "standards":
        out.text(client.standards(project))
    elif args.command == "memory":
        return _memory(args, client, parser, out)
    elif args.command == "candidates":
        _candidates(args, client, parser, out)
    elif args.command == "documents":
        if args.documents_command == "list":
            out.page(client.documents(project, args.prefix), document_line)
        else:
            document = _record(client.document(project, args.path, args.revision))
            if out.format == "text":
                out.text(str(document.get("content", "")))
            else:
                out.record(document, document_line)
    elif args.command in ("push", "pull"):
        return _sync(args, client, out)
    elif args.command == "work":
        if args.work_command == "list":
            if args.all:
                out.listing(client.iter_items(client.project_path(project, "work"),
                                              page_size=_page_size(args, parser),
                                              cursor_type=str), work_line)
            else:
                out.page(client.work_page(project, limit=args.limit), work_line)
        else:
            out.record(client.work_get(project, args.work_id), work_detail_line)
    else:  # pragma: no cover - argparse allows no other command
        raise AssertionError(f"unhandled command {args.command}")
    return EXIT_OK


def _memory(args: argparse.Namespace, client: Client, parser: argparse.ArgumentParser,
            out: Output) -> int:
    project, action = args.project, args.memory_command
    if action == "add":
        out.record(client.memory_add(project, args.category, args.content, args.source,
                                     _corrects(args.corrects), args.idempotency_key),
                   entry_line, lean=True)
    elif action == "list":
        filters = {"category": args.category, "source": args.source, "since": args.since,
                   "view": "current" if args.current else None}
        if args.all:
            out.listing(client.memory_iter(project, page_size=_page_size(args, parser),
                                           order=args.order, **filters), entry_line, lean=True)
        else:
            out.page(client.memory_page(project, limit=args.limit, order=args.order, **filters),
                     entry_line, lean=True)
    elif action == "search":
        out.page(client.memory_page(project, q=args.query, order="desc", limit=args.limit,
                                    category=args.category, since=args.since),
                 entry_line, lean=True)
    elif action == "recall":
        answer = client.memory_recall(project, args.query, limit=args.limit, mode=args.mode,
                                      category=args.category,
                                      view="all" if args.all else None)
        if answer.get("degraded"):
            _complain(f"recall is degraded: {answer['degraded']}")
        out.page(answer, recalled_line, lean=True)
    elif action == "get":
        out.record(client.memory_get(project, args.ref), entry_line, lean=True)
    elif action == "verify":
        # Every link is checked, so the download keeps the hashes whatever --hashes says.
        report = local_verify(client.memory_iter(project))
        if out.format == "json":
            out.record(report, str)
        elif report["ok"]:
            redacted = f", {report['redacted']} redacted" if report["redacted"] else ""
            sys.stdout.write(f"ok: {report['entries']} entries{redacted}, head {report['head']}\n")
        else:
            sys.stdout.write(f"broken at seq {report['first_bad_seq']} "
                             f"({report['entries']} entries)\n")
        if not report["ok"]:
            _complain(f"memory chain of {project!r} is broken at seq {report['first_bad_seq']}")
            return EXIT_REFUSED
    return EXIT_OK


def _candidates(args: argparse.Namespace, client: Client, parser: argparse.ArgumentParser,
                out: Output) -> None:
    project, action = args.project, args.candidates_command
    if action == "propose":
        out.record(client.candidate_propose(project, args.category, args.content, args.source,
                                            args.idempotency_key), candidate_line, lean=True)
    elif action == "list":
        if args.all:
            out.listing(client.iter_items(client.project_path(project, "memory", "candidates"),
                                          page_size=_page_size(args, parser), status=args.status),
                        candidate_line, lean=True)
        else:
            out.page(client.candidates_page(project, status=args.status, limit=args.limit),
                     candidate_line, lean=True)
    elif action == "approve":  # the answer is the new entry
        out.record(client.candidate_decide(project, args.candidate_id, "approve"),
                   entry_line, lean=True)
    else:  # reject or withdraw: the answer is the candidate
        out.record(client.candidate_decide(project, args.candidate_id, action),
                   candidate_line, lean=True)


def _sync(args: argparse.Namespace, client: Client, out: Output) -> int:
    """gedweb push and pull (docs/interop.md, "Over HTTP"); a local refusal is exit 1."""
    # Imported here: the checkout engine is most of the CLI's start-up, which
    # `gedweb hook` pays within its 2 s.
    from gedweb.checkout import archive, sync

    root = Path(args.path)
    try:
        # Bars on stderr when it is a terminal (gedweb.progress); stdout keeps the answer.
        with Bars(sys.stderr) as bars:
            if args.command == "push":
                # Read only: the checkout is never written, locked or touched.
                data = archive.pack(sync.collect_layout(root))
                report = client.checkout_push(args.project, data, name=args.path,
                                              dry_run=args.dry_run, progress=bars)
            else:
                received = client.checkout_pull(args.project, sync.LIMITS.archive_bytes,
                                                progress=bars)
                try:
                    files = archive.read_all(received, sync.LIMITS, sync.in_layout)
                except archive.ArchiveError as exc:
                    raise sync.SyncRefused(f"the server's archive is refused: {exc}") from None
                result = sync.pull_layout(root, files, project=args.project, force=args.force,
                                          progress=bars)
        if args.command == "push":
            out.record(report, _report_lines)
        else:
            out.record(result.as_dict(), _pull_lines)
    except sync.SyncRefused as exc:
        _complain(str(exc))
        return EXIT_REFUSED
    return EXIT_OK


def _report_lines(report: dict[str, Any]) -> str:
    """ged_import's report for people: counts, then one line per skipped file and standard."""
    lines = []
    for key in ("created", "unchanged"):
        counted = report.get(key)
        pairs = sorted(counted.items()) if isinstance(counted, dict) else []
        shown = ", ".join(f"{kind} {number}" for kind, number in pairs)
        lines.append(f"{key}: {shown or 'nothing'}")
    for key, label in (("skipped", "skipped"), ("standards", "standards"),
                       ("not_reproducible", "not reproducible")):
        values = report.get(key)
        for value in values if isinstance(values, list) else []:
            lines.append(f"{label}: {value}")
    return "\n".join(terminal_safe(line, keep_line_breaks=False) for line in lines)


def _pull_lines(result: dict[str, Any]) -> str:
    lines = [f"{key} {rel}" for key in ("written", "unchanged", "kept") for rel in result[key]]
    return "\n".join(terminal_safe(line, keep_line_breaks=False) for line in lines) or \
        "nothing to pull"


def _init(args: argparse.Namespace) -> int:
    """gedweb init AGENT (gedweb/cli/agents.py): plan every file, then write or show it."""
    url = args.url.rstrip("/")
    parts = urlsplit(url)
    if parts.username or parts.password or parts.query or parts.fragment:
        _complain("init writes --url into files: give it without a user, password, query "
                  "or fragment")
        return EXIT_USAGE
    if not PROJECT_ID_RE.fullmatch(args.project):
        _complain(f"--project: not a project id: {args.project!r}")
        return EXIT_USAGE
    root = Path(args.path)
    settings = agents.Settings(project=args.project, url=url, force=args.force)
    try:
        changes = agents.plan(args.agent, root, settings)
        secrets = [value for value in Parser.secrets if len(value) >= 12]
        for change in changes:
            if any(secret.encode() in change.after for secret in secrets):
                raise agents.InitRefused(f"{change.path} would hold a token; nothing written")
        if not args.dry_run:
            agents.write(root, changes)
    except agents.InitRefused as exc:
        _complain(str(exc))
        return EXIT_REFUSED
    except OSError as exc:
        _complain(f"cannot write: {exc}")
        return EXIT_REFUSED
    done = {"create": "created", "update": "updated", "unchanged": "unchanged"}
    for change in changes:
        if args.dry_run:
            shown = "unchanged" if change.action == "unchanged" else f"would {change.action}"
            sys.stdout.write(f"{shown} {change.path}\n")
        else:
            sys.stdout.write(f"{done[change.action]} {change.path}\n")
    if args.dry_run:
        sys.stdout.write("".join(change.diff() for change in changes))
    sys.stdout.write("no token was written: the agent reads GEDWEB_TOKEN (and "
                     "GEDWEB_MEMORY_TOKEN, to write) from its environment\n")
    return EXIT_OK


# Global options that take a value, to find the command's name among the words.
_VALUE_OPTIONS = frozenset({"--url", "--endpoint", "--token", "--memory-token", "--timeout",
                            "--format"})


def _command_word(words: Sequence[str]) -> str | None:
    skip = False
    for word in words:
        if skip:
            skip = False
        elif word.startswith("-"):
            skip = word in _VALUE_OPTIONS
        else:
            return word
    return None


def _hook(words: list[str], started: float) -> int:
    """gedweb hook EVENT: fails open, whatever the options, input or server (hooks.py)."""
    Parser.failing_open = True
    try:
        args = build_parser().parse_args(words)
    except HookUsageError as exc:
        _complain(f"hook: {exc}; no context given")
        return EXIT_OK
    code = hooks.run(args.event, project=args.project, url=args.url, token=args.token,
                     memory_token=args.memory_token, budget=args.budget,
                     stdin=sys.stdin.buffer, stdout=sys.stdout, complain=_complain,
                     started=started)
    if any(thread.name.startswith("gedweb-hook-") and thread.is_alive()
           for thread in threading.enumerate()):
        hooks.exit_now(code)  # the request still waits on a slow server: leave now
    return code


def _complain(message: str) -> None:
    """One line on stderr, with no secret and no control character in it."""
    line = terminal_safe(redact(message, Parser.secrets), keep_line_breaks=False)
    print(f"gedweb: {line}", file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    started = hooks.process_started()
    words = list(sys.argv[1:] if argv is None else argv)
    Parser.secrets = tuple(secret_values(words))
    if _command_word(words) == "hook":
        return _hook(words, started)
    parser = build_parser()
    args = parser.parse_args(words)
    try:
        client = Client(args.url, args.token, args.memory_token, timeout=args.timeout)
    except ValueError as exc:
        parser.error(str(exc))
    try:
        return run(args, client, parser)
    except ApiError as exc:
        _complain(exc.one_line())
        return EXIT_REFUSED
    except NetworkError as exc:
        _complain(str(exc))
        return EXIT_NETWORK
    except (ValueError, UnicodeDecodeError):
        _complain("the server's answer is not the JSON the API promises")
        return EXIT_REFUSED
    except KeyboardInterrupt:
        _complain("interrupted")
        return 130
    except BrokenPipeError:
        return EXIT_OK


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
