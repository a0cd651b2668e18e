"""The CLI's command line, before any request: options, usage errors, secrets.

Everything here ends before the client opens a connection (a usage error
exits 2 first), so no server is needed.
"""

from __future__ import annotations

import argparse
import json
from importlib.metadata import version
from typing import Any

import pytest

from gedweb.cli.main import (
    EXIT_USAGE,
    build_parser,
    compact_json,
    entry_line,
    main,
    secret_values,
    terminal_safe,
)

SECRET = "gwp_0123456789abcdefSECRETSECRET"
MEMORY_SECRET = "memory-write-SECRET-value-0123"


def usage_error(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    """main(argv) must stop with exit 2 and print nothing on stdout; returns stderr."""
    with pytest.raises(SystemExit) as stopped:
        main(list(argv))
    out, err = capsys.readouterr()
    assert stopped.value.code == EXIT_USAGE
    assert out == ""
    return err


# --- options before or after the command -----------------------------------------------------


def test_connection_options_are_taken_after_the_subcommand():
    args = build_parser().parse_args(["memory", "list", "--project", "p", "--token", SECRET,
                                      "--url", "http://example.test:1", "--timeout", "2.5",
                                      "--memory-token", MEMORY_SECRET])

    assert (args.token, args.url, args.timeout, args.memory_token) == (
        SECRET, "http://example.test:1", 2.5, MEMORY_SECRET)


def test_connection_options_are_taken_before_the_command():
    args = build_parser().parse_args(["--token", SECRET, "--timeout", "4", "context",
                                      "--project", "p"])

    assert (args.token, args.timeout, args.project) == (SECRET, 4.0, "p")


def test_an_option_after_the_command_wins_over_the_same_option_before_it():
    args = build_parser().parse_args(["--timeout", "4", "memory", "verify", "--project", "p",
                                      "--timeout", "7"])

    assert args.timeout == 7.0


def test_an_option_not_repeated_after_the_command_keeps_its_value_from_before(monkeypatch):
    monkeypatch.delenv("GEDWEB_URL", raising=False)
    args = build_parser().parse_args(["--url", "http://before.test", "mcp", "--project", "p"])

    assert args.url == "http://before.test"
    assert args.timeout == 30.0  # the default, not SUPPRESS's absence


def test_the_environment_gives_the_defaults(monkeypatch):
    monkeypatch.setenv("GEDWEB_TOKEN", SECRET)
    monkeypatch.setenv("GEDWEB_URL", "http://from-env.test")
    args = build_parser().parse_args(["memory", "list", "--project", "p"])

    assert (args.token, args.url) == (SECRET, "http://from-env.test")


# --- secrets never echoed ---------------------------------------------------------------------


@pytest.mark.parametrize("argv", [
    ("memory", "add", "--token", SECRET, "--project", "p"),  # missing --category
    ("memory", "list", "--project", "p", "--token", SECRET, "stray"),
    ("memory", "list", "--project", "p", f"--tokn={SECRET}"),  # a misspelt option
    ("memory", "list", "--project", "p", "--tokn", SECRET),
    ("memory", "list", "--project", "p", "--memory-tokn", MEMORY_SECRET),
    ("memory", "list", "--project", "p", "--limit", SECRET),  # a token in the wrong place
    (SECRET,),  # a token where the command goes
    ("--token", SECRET, "memroy", "list"),
])
def test_no_usage_error_repeats_a_token(capsys, argv):
    err = usage_error(capsys, *argv)

    assert "error:" in err
    assert SECRET not in err and MEMORY_SECRET not in err
    assert "SECRET" not in err


def test_a_token_from_the_environment_is_never_repeated_either(capsys, monkeypatch):
    monkeypatch.setenv("GEDWEB_MEMORY_TOKEN", MEMORY_SECRET)

    err = usage_error(capsys, "memory", "list", "--project", "p", "--category", MEMORY_SECRET,
                      "extra")

    assert "unrecognized arguments: extra" in err
    assert MEMORY_SECRET not in err


# --- --timeout --------------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["0", "-1", "-0.5", "nan", "inf", "86401", "soon", ""])
def test_a_timeout_that_is_not_a_positive_number_of_seconds_is_a_usage_error(capsys, value):
    err = usage_error(capsys, "--timeout", value, "context", "--project", "p")

    assert "argument --timeout:" in err
    assert err.strip().splitlines()[-1].startswith("gedweb: error: argument --timeout:")


@pytest.mark.parametrize("value, seconds", [("0.1", 0.1), ("30", 30.0), ("86400", 86400.0)])
def test_a_positive_timeout_up_to_a_day_is_taken(value, seconds):
    args = build_parser().parse_args(["context", "--project", "p", "--timeout", value])

    assert args.timeout == seconds


# --- --version and help -----------------------------------------------------------------------


def test_version_prints_the_installed_version(capsys):
    with pytest.raises(SystemExit) as stopped:
        main(["--version"])

    assert stopped.value.code == 0
    assert capsys.readouterr().out == f"gedweb {version('gedweb')}\n"


def every_parser(parser: argparse.ArgumentParser) -> list[tuple[str, argparse.ArgumentParser]]:
    found = [(parser.prog, parser)]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                found += every_parser(sub)
    return found


def test_every_option_of_every_command_has_help():
    missing: list[str] = []
    for prog, parser in every_parser(build_parser()):
        for action in parser._actions:
            if action.option_strings and not (action.help or "").strip():
                missing.append(f"{prog} {action.option_strings[0]}")

    assert missing == []


def test_memory_add_help_explains_category_content_and_source(capsys):
    with pytest.raises(SystemExit):
        main(["memory", "add", "--help"])
    out: Any = capsys.readouterr().out

    for option in ("--category", "--content", "--source", "--token", "--url", "--timeout"):
        assert option in out
    assert "lower-case letters" in out and "the entry's text" in out and "default: operator" in out


# --- Ferryman's habits ------------------------------------------------------------------------


@pytest.mark.parametrize("argv", [
    ["--endpoint", "http://ferry.test:1", "memory", "list", "--project", "p"],
    ["memory", "list", "--project", "p", "--endpoint", "http://ferry.test:1"],
    ["memory", "list", "--project", "p", "--endpoint=http://ferry.test:1"],
])
def test_endpoint_is_another_name_for_url(argv):
    assert build_parser().parse_args(argv).url == "http://ferry.test:1"


def test_ferrymans_token_variables_are_read_when_gedwebs_are_unset(monkeypatch):
    for name in ("GEDWEB_TOKEN", "GEDWEB_MEMORY_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("FERRYMAN_TOKEN", SECRET)
    monkeypatch.setenv("FERRYMAN_MEMORY_TOKEN", MEMORY_SECRET)
    args = build_parser().parse_args(["memory", "list", "--project", "p"])

    assert (args.token, args.memory_token) == (SECRET, MEMORY_SECRET)


def test_gedwebs_token_variables_win_over_ferrymans(monkeypatch):
    monkeypatch.setenv("GEDWEB_TOKEN", "gedweb-project-token")
    monkeypatch.setenv("GEDWEB_MEMORY_TOKEN", "gedweb-memory-token")
    monkeypatch.setenv("FERRYMAN_TOKEN", SECRET)
    monkeypatch.setenv("FERRYMAN_MEMORY_TOKEN", MEMORY_SECRET)
    args = build_parser().parse_args(["memory", "list", "--project", "p"])

    assert (args.token, args.memory_token) == ("gedweb-project-token", "gedweb-memory-token")


def test_secret_values_include_ferrymans_variables_and_a_urls_password(monkeypatch):
    monkeypatch.setenv("FERRYMAN_TOKEN", "ferry-project-secret")
    monkeypatch.setenv("FERRYMAN_MEMORY_TOKEN", "ferry-memory-secret")
    monkeypatch.setenv("GEDWEB_URL", "http://user:env-url-secret@host.test")

    found = secret_values(["--endpoint=http://agent:argv-url-secret@host.test", "memory"])

    assert {"ferry-project-secret", "ferry-memory-secret", "env-url-secret",
            "argv-url-secret"} <= set(found)


def test_a_ferryman_token_from_the_environment_is_never_repeated(capsys, monkeypatch):
    monkeypatch.delenv("GEDWEB_TOKEN", raising=False)
    monkeypatch.setenv("FERRYMAN_TOKEN", SECRET)

    err = usage_error(capsys, "memory", "get", SECRET, "--project", "p", "stray")

    assert "unrecognized arguments: stray" in err
    assert SECRET not in err


def test_a_password_in_the_url_is_never_repeated(capsys):
    err = usage_error(capsys, "--url", "ftp://agent:url-password-123@host.test", "memory", "list",
                      "--project", "p")

    assert "--url must be an http(s) URL" in err
    assert "url-password-123" not in err


# --- list limits ------------------------------------------------------------------------------


@pytest.mark.parametrize("value, limit", [("0", 0), ("1", 1), ("500", 500), ("1000", 1000)])
def test_a_limit_of_0_or_more_is_taken_as_given(value, limit):
    for argv in (["memory", "list"], ["memory", "search", "word"], ["candidates", "list"],
                 ["work", "list"]):
        assert build_parser().parse_args([*argv, "--project", "p", "--limit", value]).limit == limit


@pytest.mark.parametrize("value", ["-1", "1.5", "x", ""])
@pytest.mark.parametrize("command", [("memory", "list"), ("memory", "search", "word"),
                                     ("candidates", "list"), ("work", "list")])
def test_a_negative_or_fractional_limit_is_a_usage_error(capsys, value, command):
    err = usage_error(capsys, *command, "--project", "p", "--limit", value)

    assert err.strip().splitlines()[-1].startswith(
        f"gedweb {' '.join(command[:2])}: error: argument --limit:")


@pytest.mark.parametrize("command", [("memory", "list"), ("candidates", "list"),
                                     ("work", "list")])
def test_a_page_size_of_0_with_all_is_a_usage_error_before_any_request(capsys, command):
    # Port 9 (discard) has nobody listening: a request would end in exit 3, not 2.
    err = usage_error(capsys, *command, "--project", "p", "--all", "--limit", "0",
                      "--url", "http://127.0.0.1:9", "--token", SECRET)

    assert "--limit 0 with --all: a page size must be at least 1" in err
    assert SECRET not in err


def test_memory_list_takes_order_filters_and_the_current_view():
    args = build_parser().parse_args(["memory", "list", "--project", "p", "--order", "desc",
                                      "--since", "2026-11-30T08:00:00Z", "--source", "ci",
                                      "--current", "--category", "decision"])

    assert (args.order, args.since, args.source, args.current, args.category) == (
        "desc", "2026-11-30T08:00:00Z", "ci", True, "decision")
    assert build_parser().parse_args(["memory", "list", "--project", "p"]).order == "asc"


def test_an_unknown_order_or_status_is_a_usage_error(capsys):
    assert "invalid choice: 'newest'" in usage_error(capsys, "memory", "list", "--project", "p",
                                                      "--order", "newest")
    assert "invalid choice: 'open'" in usage_error(capsys, "candidates", "list", "--project",
                                                    "p", "--status", "open")


def test_a_document_revision_must_be_at_least_1(capsys):
    err = usage_error(capsys, "documents", "get", "PROJECT.md", "--project", "p",
                      "--revision", "0")

    assert "argument --revision: must be at least 1: 0" in err


# --- --format and --hashes --------------------------------------------------------------------


def test_format_and_hashes_are_taken_before_or_after_the_command():
    before = build_parser().parse_args(["--format", "text", "--hashes", "memory", "list",
                                        "--project", "p"])
    after = build_parser().parse_args(["memory", "list", "--project", "p", "--format", "text",
                                       "--hashes"])
    default = build_parser().parse_args(["memory", "list", "--project", "p"])

    assert (before.format, before.hashes) == (after.format, after.hashes) == ("text", True)
    assert (default.format, default.hashes) == ("json", False)


def test_an_unknown_format_is_a_usage_error(capsys):
    err = usage_error(capsys, "--token", SECRET, "memory", "list", "--project", "p",
                      "--format", "yaml")

    assert "argument --format: invalid choice: 'yaml'" in err
    assert SECRET not in err


# --- text for people --------------------------------------------------------------------------

ENTRY = {"id": "5b0e2c1a-0000-4000-8000-000000000012", "seq": 12, "project_id": "shop",
         "category": "decision", "content": "Orders stay on PostgreSQL 16.",
         "source": "architect", "corrects": None, "author": "default",
         "created_at": "2026-11-30T08:00:00.123456+00:00", "prev_hash": "0" * 64,
         "hash": "9" * 64, "corrected_by": []}


def test_an_entry_is_one_readable_line():
    assert entry_line(ENTRY) == (
        "#12 2026-11-30 08:00 decision [architect] Orders stay on PostgreSQL 16.")


def test_multi_line_content_is_shown_on_one_line():
    line = entry_line({**ENTRY, "content": "first\r\nsecond\n\tthird"})

    assert line.endswith("first \u23ce second \u23ce  third")
    assert "\n" not in line and "\r" not in line and "\t" not in line


@pytest.mark.parametrize("control", ["\x1b", "\x07", "\x08", "\x0d", "\x7f", "\x9b", "\x9d",
                                     "\u202e", "\u2066"])
def test_no_terminal_control_character_reaches_a_text_line(control):
    line = entry_line({**ENTRY, "content": f"before{control}[2Jafter",
                       "source": f"src{control}", "category": f"cat{control}"})

    assert control not in line
    assert line.count(f"\\x{ord(control):02x}" if ord(control) < 0x100
                      else f"\\u{ord(control):04x}") == 3


def test_raw_text_keeps_its_lines_and_tabs_but_not_its_controls():
    text = "# Title\n\n\tindented\r\nclear \x1b[2J screen \x9b31m red\n"

    assert terminal_safe(text, keep_line_breaks=True) == (
        "# Title\n\n\tindented\nclear \\x1b[2J screen \\x9b31m red\n")


def test_compact_json_is_one_line_with_every_control_escaped_and_the_same_value():
    value = {"content": "a\x1b[2J\x9b\u202e\x7f\nb", "seq": 1, "ümlaut": "ä"}

    text = compact_json(value)

    assert "\n" not in text and " " not in text
    assert not any(c in text for c in "\x1b\x9b\u202e\x7f")
    assert "ä" in text  # non-ASCII stays readable
    assert json.loads(text) == value
