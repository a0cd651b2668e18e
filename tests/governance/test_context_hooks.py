"""GET /context?session= and ?only=recalled: what `gedweb hook` asks for.

The session is recorded with the delivery; ``only=recalled`` answers the
recalled entries alone, framed as data behind a lead that says so, only
those above the relevance floor, and 204 with nothing logged when none is.
"""

from __future__ import annotations

import json

import pytest

from governance.context import PROMPT_LEAD, RECALLED_FILE, RELEVANCE_FLOORS, relevant
from governance.models import ContextDelivery
from memory.recall import vectors
from memory.recall.ranking import Hit
from tests.governance.test_context import frames
from tests.governance.test_context_recall import NOTES, notes  # noqa: F401  (a fixture)

pytestmark = pytest.mark.django_db


def _get(api, project_id, **query):
    return api.get(f"/v1/projects/{project_id}/context", query)


def test_a_session_is_recorded_with_the_delivery(api, notes):  # noqa: F811
    response = _get(api, notes.id, session="2b7c6a0e-0d6c-4a59-9b1e-0f3c8f8f6a11")
    assert response.status_code == 200
    delivery = ContextDelivery.objects.get()
    assert delivery.session == "2b7c6a0e-0d6c-4a59-9b1e-0f3c8f8f6a11"
    _get(api, notes.id)
    assert ContextDelivery.objects.order_by("-pk").first().session is None


@pytest.mark.parametrize("session", ["", "has space", "x" * 129, "line\nbreak", "é"])
def test_a_bad_session_is_a_400_and_nothing_is_logged(api, notes, session):  # noqa: F811
    response = _get(api, notes.id, session=session)
    assert response.status_code == 400
    assert "session" in response.json()["fields"]
    assert not ContextDelivery.objects.exists()


def test_only_recalled_answers_the_relevant_entries_alone(api, notes):  # noqa: F811
    response = _get(api, notes.id, task="the upload client keeps resetting connections",
                    only="recalled", session="s-1")
    assert response.status_code == 200
    text = response.content.decode()
    assert text.startswith(PROMPT_LEAD + "\n\n")
    found = frames(text)
    assert [(f["trust"], json.loads(f["file"])) for f in found] == [
        ("durable-data", RECALLED_FILE)]
    assert NOTES[1][1] in found[0]["content"]
    # No boundary, no other section: the lead and the frame only.
    assert "Trust Boundary" not in text
    delivery = ContextDelivery.objects.get()
    assert delivery.session == "s-1"
    assert json.loads(delivery.recalled)[0] == 2
    assert delivery.sha256 == response["X-Context-Sha256"]


def test_only_recalled_with_nothing_relevant_is_a_204_and_logs_nothing(api, notes):  # noqa: F811
    response = _get(api, notes.id, task="zygote quasar marmalade xylophone", only="recalled")
    assert response.status_code == 204
    assert response.content == b""
    assert not ContextDelivery.objects.exists()


@pytest.mark.parametrize("query", [{"only": "recalled"},
                                   {"only": "everything", "task": "upload"},
                                   {"only": "recalled", "task": "upload", "work_id": "W-1"}])
def test_only_needs_a_task_and_no_work(api, notes, query):  # noqa: F811
    response = _get(api, notes.id, **query)
    assert response.status_code == 400
    assert "only" in response.json()["fields"]
    assert not ContextDelivery.objects.exists()


def test_the_relevance_rule_is_the_models_floor_else_a_keyword_match():
    model = vectors.embedder().model_id
    floor = RELEVANCE_FLOORS[model]
    assert relevant(Hit(None, 1.0, None, 1, cosine=floor), model)
    assert not relevant(Hit(None, 1.0, 1, 1, cosine=floor - 0.001), model)
    # No cosine (not indexed yet, or no model): a keyword match decides.
    assert relevant(Hit(None, 1.0, 3, None), model)
    assert not relevant(Hit(None, 1.0, None, None), model)
    assert relevant(Hit(None, 1.0, 2, None, cosine=0.99), "some-future-model")
    assert not relevant(Hit(None, 1.0, None, 1, cosine=0.99), "some-future-model")
