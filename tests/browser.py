"""Debian's chromium driven by Playwright, for the page and acceptance tests.

`playwright install` is never used (no browser downloads here): .ci/run
installs Debian's chromium and fails when it cannot. Outside CI a missing
browser skips the module, saying why; on CI (CI=true) it fails the run, so
the browser tests can never pass by not running.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = Path(os.environ.get("GEDWEB_CHROMIUM", "/usr/bin/chromium"))
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]


def require_browser() -> Any:
    """playwright.sync_api, or skip the calling module (fail it on CI) saying what is missing."""
    problem = None
    if not CHROMIUM.exists():
        problem = f"no browser: {CHROMIUM} is missing (apt-get install chromium; .ci/run does)"
    else:
        try:
            from playwright import sync_api
        except ImportError:
            problem = "the playwright package is missing (pip install -e '.[dev]')"
    if problem is not None:
        if os.environ.get("CI"):
            pytest.fail(f"browser tests cannot run on CI: {problem}", pytrace=False)
        pytest.skip(problem, allow_module_level=True)
    return sync_api


@contextmanager
def chromium() -> Iterator[Any]:
    """A launched headless chromium; Playwright's loop thread may use the ORM meanwhile."""
    sync_api = require_browser()
    # Playwright's sync API keeps an asyncio loop on this thread, which makes
    # Django refuse ORM calls here; the tests' own setup and cleanup are plain
    # synchronous code, so that guard is lifted while the browser runs.
    previous = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    try:
        with sync_api.sync_playwright() as playwright:
            instance = playwright.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
            try:
                yield instance
            finally:
                instance.close()
    finally:
        if previous is None:
            os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
        else:
            os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = previous
