"""Schema fuzzing over HTTP against `make run` (issue 36 §2).

tests/security/test_schemathesis.py calls the app in-process; this one reads
/v1/schema from a live `make run` server (gunicorn, its own database) and
sends every operation's generated requests over the network, as a client
author's tools would. Positive data for each operation, path parameters
pinned to a project with one of everything, bounded and derandomized: no
answer may be a server error, and every answer's status and content type
must be ones the schema lists.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import content_type_conformance, status_code_conformance

from tests.acceptance.conftest import MadeRun

pytestmark = [pytest.mark.live_server, pytest.mark.slow, pytest.mark.timeout(900)]

MAX_EXAMPLES = 5
ADMIN_OPERATIONS = frozenset(
    {"projects_list", "projects_create", "standards_imports_accept", "standards_imports_reject"}
)
SEED = (
    "import json; from tests.security.targets import project_with_everything; "
    "token, params = project_with_everything('fuzz', 'Fuzz'); "
    "print(json.dumps({'token': token, 'params': params}, default=str))"
)

schemathesis.serializer.alias("application/gzip", "application/octet-stream")


def test_every_operation_over_http_answers_within_its_schema(made_run: MadeRun) -> None:
    seeded = json.loads(made_run.shell(SEED).strip().splitlines()[-1])
    params = {**seeded["params"], "name": "review", "number": 1}
    schema = schemathesis.openapi.from_url(f"{made_run.base}/v1/schema")
    schema.config.generation.update(with_security_parameters=False)
    operations = [result.ok() for result in schema.get_all_operations()]
    statuses: dict[int, int] = {}
    for operation in operations:
        op = operation.definition.raw["operationId"]
        pinned = dict(params)
        if op.startswith("work_file"):
            pinned["name"] = "SPEC.md"
        elif op.startswith("task_artifact"):
            pinned["name"] = "BRIEF.md"
        fixed = {k: v for k, v in pinned.items()
                 if k in {p.name for p in operation.path_parameters}}
        token = made_run.admin_token if op in ADMIN_OPERATIONS else seeded["token"]
        strategy = operation.as_strategy(generation_mode=GenerationMode.POSITIVE,
                                         path_parameters=fixed)

        @given(case=strategy)
        @settings(max_examples=MAX_EXAMPLES, deadline=None, derandomize=True, database=None,
                  suppress_health_check=list(HealthCheck))
        def run(case: Any) -> None:
            response = case.call_and_validate(
                headers={"Authorization": f"Bearer {token}"},
                checks=[not_a_server_error, status_code_conformance, content_type_conformance])
            statuses[response.status_code] = statuses.get(response.status_code, 0) + 1

        run()
    assert len(operations) > 50
    assert sum(statuses.values()) >= len(operations)
    assert not [status for status in statuses if status >= 500], statuses
    print(f"schemathesis over HTTP: {len(operations)} operations, "
          f"{sum(statuses.values())} requests, statuses {dict(sorted(statuses.items()))}")
