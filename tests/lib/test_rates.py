"""Request rates as operators write them: ``N/second|minute|hour|day`` or ``off``."""

from __future__ import annotations

import pytest

from gedweb.lib.rates import Rate


@pytest.mark.parametrize(("text", "requests", "seconds"), [
    ("1/second", 1, 1),
    ("600/minute", 600, 60),
    ("20/hour", 20, 3600),
    ("5000/day", 5000, 86400),
])
def test_it_parses_each_period(text, requests, seconds):
    assert Rate.parse(text) == Rate(requests, seconds)


@pytest.mark.parametrize(("text", "seconds"), [
    ("5/s", 1), ("5/sec", 1), ("5/seconds", 1), ("5/min", 60), ("5/m", 60), ("5/minutes", 60),
    ("100/h", 3600), ("100/hr", 3600), ("100/hours", 3600), ("1000/day", 86400),
    ("1000/d", 86400), ("1000/days", 86400),
])
def test_it_reads_drfs_spellings(text, seconds):
    """Issue 36 §9: as DRF's throttles are configured."""
    assert Rate.parse(text) == Rate(int(text.split("/")[0]), seconds)


def test_it_ignores_surrounding_space_and_case():
    assert Rate.parse("  30/Minute \n") == Rate(30, 60)
    assert Rate.parse("7/DAY") == Rate(7, 86400)


@pytest.mark.parametrize("text", ["off", "OFF", "  Off  "])
def test_off_is_no_rate(text):
    assert Rate.parse(text) is None


@pytest.mark.parametrize(("text", "message"), [
    ("0/minute", "0/minute"),            # at least one request
    ("-1/minute", "-1/minute"),
    ("ten/minute", "ten/minute"),
    ("\uff11/minute", "\uff11/minute"),  # a fullwidth digit is a digit, but not ASCII
    ("10/week", "10/week"),
    ("10/mango", "10/mango"),            # DRF would read the first letter: a minute
    ("10/minutess", "10/minutess"),
    ("10", "10"),
    ("/minute", "/minute"),
    (" 10/Fortnight ", "10/fortnight"),  # the message names the text as read
    ("", ""),
])
def test_anything_else_is_refused_naming_the_text(text, message):
    with pytest.raises(ValueError) as refused:
        Rate.parse(text)
    assert refused.value.args == (message,)


def test_it_prints_as_it_is_written():
    assert str(Rate(600, 60)) == "600/minute"
    assert str(Rate(1, 1)) == "1/second"
    assert str(Rate(20, 3600)) == "20/hour"
    assert str(Rate(3, 86400)) == "3/day"


def test_it_describes_a_rate_for_people():
    assert Rate(600, 60).describe("writes") == "600 writes per minute"
    assert Rate(20000, 86400).describe("requests") == "20,000 requests per day"
    assert Rate(2, 1).describe("writes") == "2 writes per second"


def test_one_request_is_described_in_the_singular():
    assert Rate(1, 3600).describe("writes") == "1 write per hour"
    assert Rate(1, 60).describe("requests") == "1 request per minute"
