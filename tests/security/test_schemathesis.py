"""Schema fuzzing (T31): every operation of /v1/schema, positive and negative data.

Schemathesis reads the schema from the app itself and calls the app
in-process over WSGI, so each generated request reaches the real views,
services and database (pytest-django's test database: SQLite or PostgreSQL,
whichever DATABASE_URL names); each test's writes are rolled back after it.
Path parameters are pinned to a real project, work item, entry, candidate
and standards import, so generated bodies and queries reach validation and
the services instead of stopping at a 404; a third test then draws each
path parameter freely (a real value or a hostile one: NUL, controls,
unicode, dot segments, over-long) and requires no server error and the JSON
error shape.

Bounded for CI: MAX_EXAMPLES per operation and mode, derandomized (the same
examples on every run), no deadline, no example database.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.config._checks import (
    NEGATIVE_DATA_REJECTION_EXPECTED_STATUSES,
    NegativeDataRejectionConfig,
)
from schemathesis.core.parameters import ParameterLocation
from schemathesis.generation.drivers import CoverageGenerator
from schemathesis.generation.feedback import NO_FEEDBACK
from schemathesis.generation.overrides import Override
from schemathesis.specs.openapi.checks import (
    allow_header_conformance,
    content_type_conformance,
    ignored_auth,
    missing_required_header,
    negative_data_rejection,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
    unsupported_method,
)

from tests.django_fixtures import ADMIN_TOKEN, MEMORY_WRITE_TOKEN
from tests.security.targets import project_with_everything

PROJECT = "fuzz"
MAX_EXAMPLES = 25
# Operations only the admin token may call; every other one runs with the
# project's own token, as an agent would.
ADMIN_OPERATIONS = frozenset(
    {"projects_list", "projects_create", "standards_imports_accept", "standards_imports_reject"}
)

# POST .../checkout takes a tar.gz (application/gzip): generated bodies go as raw
# bytes, which the archive reader refuses (400 invalid_archive, tests/interop/test_sync_api.py).
schemathesis.serializer.alias("application/gzip", "application/octet-stream")

SCHEMA = schemathesis.openapi.from_wsgi("/v1/schema", get_wsgi_application())
# The bearer token is sent by the test, not generated: generated tokens
# would only ever exercise the 401 path (ignored_auth covers that).
SCHEMA.config.generation.update(with_security_parameters=False)
# 413 is how the contract refuses a body over 1 MiB; negative generation
# produces such bodies for fields allowed up to 1,000,000 characters.
SCHEMA.config.checks.negative_data_rejection = NegativeDataRejectionConfig(
    expected_statuses=[*NEGATIVE_DATA_REJECTION_EXPECTED_STATUSES, "413"]
)

# positive_data_acceptance is left out on purpose: the schema gives each
# field's type, length and pattern, but several rules cannot be written in
# JSON Schema (Python's "printable", GedPi's substantive-content rule, a
# work_id that must exist, the governance state machine), and the contract
# answers those with 400 validation_error. Everything else is checked.
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    negative_data_rejection,
    missing_required_header,
    ignored_auth,
]
OPERATIONS = sorted(
    (result.ok() for result in SCHEMA.get_all_operations()),
    key=lambda op: op.definition.raw["operationId"],
)


def _operation_id(operation: Any) -> str:
    return operation.definition.raw["operationId"]


@pytest.fixture
def in_process_requests() -> Iterator[None]:
    """Keep the test's connection (and its transaction) open across WSGI calls.

    A real request closes its connection when it ends; Django's own test
    client switches that off the same way, or each call would close the
    connection that holds the test transaction.
    """
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    try:
        yield
    finally:
        request_started.connect(close_old_connections)
        request_finished.connect(close_old_connections)


@pytest.fixture
def fuzz_target(in_process_requests: None, db: None, settings: Any) -> dict[str, Any]:
    """A project with one of everything a path parameter can name, and its token."""
    settings.MEMORY_WRITE_TOKEN = MEMORY_WRITE_TOKEN
    token, params = project_with_everything(PROJECT, "Fuzz")
    return {
        "token": token,
        "path_parameters": {**params, "name": "review", "number": 1},
    }


def _inputs(operation: Any, target: dict[str, Any]) -> tuple[dict, dict, dict]:
    """Pinned path parameters, fixed generated headers, and the credentials to send."""
    op = _operation_id(operation)
    pinned = dict(target["path_parameters"])
    if op.startswith("work_file"):
        pinned["name"] = "SPEC.md"
    elif op.startswith("task_artifact"):
        pinned["name"] = "BRIEF.md"
    names = {p.name for p in operation.path_parameters}
    fixed = {k: v for k, v in pinned.items() if k in names}
    token = ADMIN_TOKEN if op in ADMIN_OPERATIONS else target["token"]
    # The memory token is a declared header, held fixed; the bearer token is
    # sent with each call, so ignored_auth knows it is real and probes the
    # same request without it and with a wrong one.
    return fixed, {"X-Memory-Token": MEMORY_WRITE_TOKEN}, {"Authorization": f"Bearer {token}"}


@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE],
                         ids=lambda m: m.value)
@pytest.mark.parametrize("operation", OPERATIONS, ids=_operation_id)
def test_operation_conforms_to_its_schema(
    operation: Any, mode: GenerationMode, fuzz_target: dict[str, Any]
) -> None:
    fixed, headers, credentials = _inputs(operation, fuzz_target)
    strategy = operation.as_strategy(generation_mode=mode, path_parameters=fixed, headers=headers)

    @given(case=strategy)
    @settings(
        max_examples=MAX_EXAMPLES,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    def run(case: Any) -> None:
        response = case.call_and_validate(headers=credentials, checks=CHECKS)
        sent.append((case.method, response.status_code))

    sent: list[tuple[str, int]] = []
    try:
        run()
    except Unsatisfiable:
        # Nothing left to make invalid once the path is pinned (e.g. a GET
        # whose only inputs are path parameters): no negative case exists.
        assert mode is GenerationMode.NEGATIVE
        assert sent == []
        return
    # Every case reached the app and was answered with the operation's own method.
    assert sent, f"no {mode.value} case of {_operation_id(operation)} was sent"
    assert {method for method, _ in sent} == {operation.method.upper()}


@pytest.mark.parametrize("operation", OPERATIONS, ids=_operation_id)
def test_operation_boundaries_and_methods(operation: Any, fuzz_target: dict[str, Any]) -> None:
    """Schemathesis's coverage phase: boundary values, missing parts, undeclared methods.

    Deterministic (no Hypothesis draw): each schema constraint is probed at
    and just past its edge, both valid and invalid, and every method the
    path does not declare must answer 405 with an Allow header.
    """
    fixed, headers, credentials = _inputs(operation, fuzz_target)
    cases = CoverageGenerator(
        operation=operation,
        generation_modes=[GenerationMode.POSITIVE, GenerationMode.NEGATIVE],
        generation_config=SCHEMA.config.generation_for(operation=operation, phase="coverage"),
        auth_storage=None,
        override=Override(headers=headers, path_parameters={k: str(v) for k, v in fixed.items()}),
        feedback=NO_FEEDBACK,
    )
    sent: list[tuple[str, int]] = []
    for case in cases:
        if case.meta is not None and case.meta.is_negative_at(ParameterLocation.PATH):
            # Path parameters are pinned to real objects, which overrides
            # any invalid value the coverage phase meant to send there.
            continue
        response = case.call_and_validate(
            headers=credentials, checks=[*CHECKS, unsupported_method, allow_header_conformance]
        )
        sent.append((case.method.upper(), response.status_code))
    assert any(method == operation.method.upper() for method, _ in sent), (
        f"no coverage case of {_operation_id(operation)} was sent")


# --- free path parameters ---------------------------------------------------------------

# What an attacker puts where an id goes: NUL and other controls, separators,
# dot segments, unicode (combining, astral, right-to-left), numbers past any
# integer type, and values far longer than any id.
HOSTILE_PATH_VALUES = st.one_of(
    st.sampled_from([
        "\x00", "a\x00b", "%00", "\x7f", "\n", " ", "..", ".", "-", "-1", "0", "00",
        "99999999999999999999999", "1e3", "a/b", "%2F", "\\", "ü", "e\u0301", "\u202e",
        "😀" * 5, "x" * 64, "x" * 300, "ä" * 1000, "CONTEXT.md\x00", "../../etc/passwd",
    ]),
    st.text(max_size=40),
    st.text(st.characters(codec="utf-8"), min_size=200, max_size=400),
)
FREE_MAX_EXAMPLES = 40


def _error_shape(response: Any, case: Any) -> None:
    """Every /v1 error is the contract's JSON {code, message, fields?}."""
    if response.status_code >= 400:
        body = response.json()
        assert isinstance(body.get("code"), str) and isinstance(body.get("message"), str), body


@pytest.mark.parametrize("operation", OPERATIONS, ids=_operation_id)
def test_free_path_parameters_never_fail_the_server(
    operation: Any, fuzz_target: dict[str, Any]
) -> None:
    """Each path parameter is drawn: a real value or a hostile one, on both databases.

    The other parameters and the body are generated as valid, so the path
    value is what is under test: a 404 (or the 400 naming a skill name or
    document path) in the JSON shape, never a 500 or a database error.
    """
    real, headers, credentials = _inputs(operation, fuzz_target)
    names = sorted(real)

    @given(data=st.data())
    @settings(
        max_examples=FREE_MAX_EXAMPLES,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    def run(data: Any) -> None:
        drawn = {name: data.draw(st.one_of(st.just(str(real[name])), HOSTILE_PATH_VALUES),
                                 label=name)
                 for name in names}
        case = data.draw(operation.as_strategy(generation_mode=GenerationMode.POSITIVE,
                                               path_parameters=drawn, headers=headers))
        response = case.call(headers=credentials)
        assert response.status_code < 500, (drawn, response.status_code, response.text[:500])
        _error_shape(response, case)
        sent.append((drawn, response.status_code))

    sent: list[tuple[dict[str, str], int]] = []
    run()
    assert sent, f"no case of {_operation_id(operation)} was sent"
    if names:
        # Both kinds of value reached the app: the real one and hostile ones.
        assert any(all(d[n] == str(real[n]) for n in names) for d, _ in sent), sent[:3]
        assert any(any(d[n] != str(real[n]) for n in names) for d, _ in sent), sent[:3]
