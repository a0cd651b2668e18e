"""The CLI's command line, before any request: options, usage errors, secrets.

Everything here ends before the client opens a connection (a usage error
exits 2 first), so no server is needed.
"""

from __future__ import annotations

import argparse
from importlib.metadata import version
from typing import Any

import pytest

from gedweb.cli.main import EXIT_USAGE, build_parser, main

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
