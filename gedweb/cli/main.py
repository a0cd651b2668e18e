"""`gedweb`: the agent and operator CLI for a GedWeb server (HTTP only).

Exit codes: 0 ok; 1 the server refused the request (an error status) or the
memory chain failed verification; 2 usage error; 3 network failure after the
retries.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from typing import Any

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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="gedweb",
        description="Talk to a GedWeb server over its REST API.",
        epilog="Exit codes: 0 ok, 1 server refused or verification failed, 2 usage, "
               "3 network failure after retries.",
    )
    parser.add_argument("--url", default=os.environ.get("GEDWEB_URL") or DEFAULT_URL,
                        help="server base URL (env GEDWEB_URL, default %(default)s)")
    parser.add_argument("--token", default=os.environ.get("GEDWEB_TOKEN"),
                        help="project or admin token (env GEDWEB_TOKEN)")
    parser.add_argument("--memory-token", default=os.environ.get("GEDWEB_MEMORY_TOKEN"),
                        help="memory write token, sent as X-Memory-Token "
                             "(env GEDWEB_MEMORY_TOKEN)")
    parser.add_argument("--timeout", type=float, default=30.0,
                        help="seconds per HTTP attempt (default %(default)s)")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    memory = commands.add_parser("memory", help="project memory")
    memory_commands = memory.add_subparsers(dest="memory_command", required=True,
                                            metavar="SUBCOMMAND")
    add = memory_commands.add_parser("add", help="append an entry; prints it as JSON")
    add.add_argument("--project", required=True)
    add.add_argument("--category", required=True)
    add.add_argument("--content", required=True)
    add.add_argument("--source")
    add.add_argument("--corrects", help="uuid or seq of the entry this one corrects")
    add.add_argument("--idempotency-key",
                     help="sent as Idempotency-Key (default: a fresh key per invocation)")

    listing = memory_commands.add_parser("list", help='prints {"items": [...]}')
    listing.add_argument("--project", required=True)
    listing.add_argument("--limit", type=_positive,
                         help="entries to print (with --all: page size; default 100)")
    listing.add_argument("--category")
    listing.add_argument("--all", action="store_true", help="follow next_cursor to the end")

    verify = memory_commands.add_parser(
        "verify", help="download the whole record and re-check every link locally")
    verify.add_argument("--project", required=True)

    context = commands.add_parser("context", help="print the framed context bundle")
    context.add_argument("--project", required=True)
    context.add_argument("--work", help="work id for the runtime sections")

    mcp = commands.add_parser("mcp", help="run a Model Context Protocol server over stdio")
    mcp.add_argument("--project", required=True)
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
    args = parser.parse_args(argv)
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
