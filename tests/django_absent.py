"""The proof that the tests of the pure lib and the checkout engine need no Django.

`make test-pure` (and CI) runs tests/lib/ and tests/checkout/ with pytest-django
disabled (`-p no:django`). Then every test must end with no Django or DRF
module imported, neither by the test nor by anything of GedWeb it reached. In
the full suite pytest-django has loaded Django before the first test, and the
check has nothing to say.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest


@pytest.fixture(autouse=True)
def django_stays_absent(pytestconfig: pytest.Config) -> Iterator[None]:
    yield
    if pytestconfig.pluginmanager.has_plugin("django"):
        return
    imported = sorted(name for name in sys.modules
                      if name.split(".")[0] in ("django", "rest_framework"))
    assert imported == [], f"a Django-free test imported {imported[:5]}"
