"""`gedweb`: the agent and operator CLI for a GedWeb server (HTTP only).

Exit codes: 0 ok; 1 the server refused the request (an error status) or the
memory chain failed verification; 2 usage error; 3 network failure after the
retries.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from collections.abc import Sequence
from importlib.metadata import PackageNotFoundError, version
from typing import Any, NoReturn

from gedweb.cli.client import DEFAULT_URL, ApiError, Client, NetworkError
from gedweb.lib.chain import CHAINED_FIELDS, GENESIS_HASH, verify_chain

EXIT_OK = 0
EXIT_REFUSED = 1  # server error status, or verification failed
EXIT_USAGE = 2
EXIT_NETWORK = 3


def _print_json(value: Any) -> None:
    sys.stdout.write(json.dumps(value, ensure_ascii=False, indent=2) + "\n")


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


def cli_version() -> str:
    try:
        return version("gedweb")
    except PackageNotFoundError:  # pragma: no cover - run from a tree that is not installed
        return "unknown"


def _names_a_token(word: str) -> bool:
    """--token, --memory-token, and their misspellings (--tokn, --memory-tokens)."""
    return word.startswith("--") and "tok" in word.split("=", 1)[0].lower()


def secret_values(argv: Sequence[str]) -> list[str]:
    """What on the command line may be a secret, for messages to leave out.

    The value of any option that names a token, spelled right or not
    (``--token X``, ``--tokn=X``), every word shaped like a project token, and
    the tokens taken from the environment.
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
    values += [os.environ.get(name, "") for name in ("GEDWEB_TOKEN", "GEDWEB_MEMORY_TOKEN")]
    return [value for value in values if value]


class Parser(argparse.ArgumentParser):
    """argparse, whose usage errors never repeat a secret from the command line.

    argparse quotes what it could not place ("unrecognized arguments: ...",
    "invalid choice: ..."), which may be a token: every error message, of this
    parser and of its subcommands, has the secrets given on the command line
    replaced before it is printed.
    """

    secrets: tuple[str, ...] = ()

    def error(self, message: str) -> NoReturn:
        for secret in sorted(Parser.secrets, key=len, reverse=True):
            message = message.replace(secret, "[secret]")
        super().error(message)


def _connection_options(parser: argparse.ArgumentParser, *, defaults: bool) -> None:
    """The options of every command, accepted before or after the command's name.

    The top-level parser carries the real defaults (from the environment); the
    copies on the subcommands default to SUPPRESS, so an option given after the
    command overrides one given before it and an absent one overrides nothing.
    """

    def default(value: Any) -> Any:
        return value if defaults else argparse.SUPPRESS

    parser.add_argument("--url", default=default(os.environ.get("GEDWEB_URL") or DEFAULT_URL),
                        help=f"server base URL (env GEDWEB_URL, default {DEFAULT_URL})")
    parser.add_argument("--token", default=default(os.environ.get("GEDWEB_TOKEN")),
                        help="project or admin token (env GEDWEB_TOKEN)")
    parser.add_argument("--memory-token",
                        default=default(os.environ.get("GEDWEB_MEMORY_TOKEN")),
                        help="memory write token, sent as X-Memory-Token "
                             "(env GEDWEB_MEMORY_TOKEN)")
    parser.add_argument("--timeout", type=_timeout, default=default(30.0),
                        help="seconds per HTTP attempt, more than 0 (default 30)")


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="gedweb",
        description="Talk to a GedWeb server over its REST API.",
        epilog="Exit codes: 0 ok, 1 server refused or verification failed, 2 usage, "
               "3 network failure after retries.",
    )
    parser.add_argument("--version", action="version", version=f"gedweb {cli_version()}")
    _connection_options(parser, defaults=True)
    shared = Parser(add_help=False)
    _connection_options(shared, defaults=False)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND",
                                     parser_class=Parser)

    def command(group: Any, name: str, help_text: str) -> argparse.ArgumentParser:
        sub: argparse.ArgumentParser = group.add_parser(name, help=help_text,
                                                        description=help_text,
                                                        parents=[shared])
        return sub

    def project_option(sub: argparse.ArgumentParser) -> None:
        sub.add_argument("--project", required=True, help="the project's id")

    memory = commands.add_parser("memory", help="project memory", description="project memory")
    memory_commands = memory.add_subparsers(dest="memory_command", required=True,
                                            metavar="SUBCOMMAND", parser_class=Parser)
    add = command(memory_commands, "add", "append an entry; prints it as JSON")
    project_option(add)
    add.add_argument("--category", required=True,
                     help="what kind of entry: lower-case letters, digits, - and _ "
                          "(e.g. decision, note, fact)")
    add.add_argument("--content", required=True, help="the entry's text")
    add.add_argument("--source", help="where it comes from (default: operator)")
    add.add_argument("--corrects", help="uuid or seq of the entry this one corrects")
    add.add_argument("--idempotency-key",
                     help="sent as Idempotency-Key (default: a fresh key per invocation)")

    listing = command(memory_commands, "list", 'print entries as {"items": [...]}')
    project_option(listing)
    listing.add_argument("--limit", type=_positive,
                         help="entries to print (with --all: page size; default 100)")
    listing.add_argument("--category", help="only entries of this category")
    listing.add_argument("--all", action="store_true", help="follow next_cursor to the end")

    verify = command(memory_commands, "verify",
                     "download the whole record and re-check every link locally")
    project_option(verify)

    context = command(commands, "context", "print the framed context bundle")
    project_option(context)
    context.add_argument("--work", help="work id for the runtime sections")

    mcp = command(commands, "mcp", "run a Model Context Protocol server over stdio")
    project_option(mcp)
    return parser


def _corrects(value: str | None) -> str | int | None:
    if value is not None and value.isdigit():
        return int(value)
    return value


def local_verify(entries: list[dict[str, Any]]) -> dict[str, Any]:
    """verify_chain over downloaded entries; a malformed entry is a broken link."""
    needed = (*CHAINED_FIELDS, "prev_hash", "hash")
    checked: list[dict[str, Any]] = []
    for entry in entries:
        if isinstance(entry, dict) and all(name in entry for name in needed):
            checked.append(entry)
        else:  # cannot match any link, so verify_chain names its position
            checked.append({**{name: None for name in needed}, "seq": -1,
                            "hash": GENESIS_HASH[:-1]})
    return verify_chain(checked).as_dict()


def run(args: argparse.Namespace, client: Client) -> int:
    if args.command == "context":
        text = client.context(args.project, args.work)
        sys.stdout.write(text if text.endswith("\n") or not text else text + "\n")
        return EXIT_OK
    if args.memory_command == "add":
        entry = client.memory_add(args.project, args.category, args.content, args.source,
                                  _corrects(args.corrects), args.idempotency_key)
        _print_json(entry)
        return EXIT_OK
    if args.memory_command == "list":
        if args.all:
            items = client.memory_all(args.project, page_size=min(args.limit or 500, 500),
                                      category=args.category)
        else:
            items = client.memory_page(args.project, limit=args.limit,
                                       category=args.category).get("items", [])
        _print_json({"items": items})
        return EXIT_OK
    if args.memory_command == "verify":
        report = local_verify(client.memory_all(args.project))
        _print_json(report)
        if not report["ok"]:
            print(f"gedweb: memory chain of {args.project!r} is broken at seq "
                  f"{report['first_bad_seq']}", file=sys.stderr)
            return EXIT_REFUSED
        return EXIT_OK
    raise AssertionError(f"unhandled command {args.command}")  # pragma: no cover


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    words = list(sys.argv[1:] if argv is None else argv)
    Parser.secrets = tuple(secret_values(words))
    args = parser.parse_args(words)
    try:
        client = Client(args.url, args.token, args.memory_token, timeout=args.timeout)
    except ValueError as exc:
        parser.error(str(exc))
    if args.command == "mcp":
        from gedweb.cli.mcp_server import serve

        return serve(client, args.project)
    try:
        return run(args, client)
    except ApiError as exc:
        print(f"gedweb: {exc.one_line()}", file=sys.stderr)
        return EXIT_REFUSED
    except NetworkError as exc:
        print(f"gedweb: {exc}", file=sys.stderr)
        return EXIT_NETWORK
    except (ValueError, UnicodeDecodeError):
        print("gedweb: the server's answer is not the JSON the API promises", file=sys.stderr)
        return EXIT_REFUSED
    except KeyboardInterrupt:
        print("gedweb: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return EXIT_OK


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
