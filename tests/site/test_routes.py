"""The API's routes, in the order Django tries them (gedweb/urls.py).

Memory's routes come before governance's, which cost an append's route a
pass over thirty-odd patterns; a handoff's path is also a memory document's,
so its route comes before both. Each route must still be the one that
answers its own paths.
"""

from __future__ import annotations

import re

import pytest
from django.urls import resolve

from gedweb.converters import CONVERTERS
from governance.api.handoffs import HandoffView
from memory.api.views import DocumentDetailView
from tests.security.authz_matrix import is_api_route, resolver_routes

# A valid value of every converter, whatever the route.
SAMPLES = {
    "project": "alpha",
    "work": "build-shop-20261207010203040-" + "a" * 32,
    "ref": "7",
    "uuid_text": "0b7e2f4c-9f1e-4c1e-8a52-3d8f6a1b2c3d",
    "number": "3",
    "standards_import": "si_" + "Ab3-_" * 4 + "xy",
    "task": "T-1",
    "filename": "plan.md",
    "text": "name",
    "session": "session-1",
    "docpath": "adr/0001-orders.md",
}
_PARAMETER = re.compile(r"<(\w+):(\w+)>")


def _sample_path(route: str) -> str:
    return "/" + _PARAMETER.sub(lambda m: SAMPLES[m.group(1)], route)


def test_every_sample_is_a_value_of_its_converter():
    assert set(SAMPLES) == set(CONVERTERS)
    for name, value in SAMPLES.items():
        assert re.fullmatch(CONVERTERS[name].regex, value), name


# Every API path() route (the last, a regex, answers the rest of /v1 with a 404).
API_ROUTES = [route for route, _ in resolver_routes()
              if is_api_route(route) and not route.startswith("^")]


@pytest.mark.parametrize("route", API_ROUTES)
def test_each_api_route_answers_its_own_paths(route):
    assert resolve(_sample_path(route)).route == route


def test_a_handoff_is_governances_and_any_other_document_memorys():
    handoff = resolve(f"/v1/projects/alpha/documents/handoff/{SAMPLES['work']}.md")
    assert handoff.func.view_class is HandoffView
    for path in ("PROJECT.md", "adr/0001-orders.md", "handoff/not-a-work-id.md"):
        document = resolve(f"/v1/projects/alpha/documents/{path}")
        assert document.func.view_class is DocumentDetailView, path


def test_memorys_routes_are_tried_before_governances():
    routes = [route for route, _ in resolver_routes()]
    assert routes.index("v1/projects/<project:project_id>/memory") < routes.index(
        "v1/projects/<project:project_id>/work")
    assert routes.index("v1/projects/<project:project_id>/documents/handoff/<work:work_id>.md") \
        < routes.index("v1/projects/<project:project_id>/documents/<docpath:path>")
