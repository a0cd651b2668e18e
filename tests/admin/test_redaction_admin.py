"""The admin's "Redact content" action: a confirmation step, its own permission, the service.

A superuser or a holder of memory.redact_memoryentry confirms with a reason
and the entry is redacted as `memory redact` would; an operator with every
other permission, or a viewer, never sees the action, and a POST naming it
changes nothing. A project the staff member cannot see stays out of reach.
"""

from __future__ import annotations

import pytest

from memory import services
from memory.models import MemoryEntry
from tests.admin.conftest import OPERATOR, VIEW_ONLY

pytestmark = pytest.mark.django_db

ENTRIES = "/admin/memory/memoryentry/"
REDACT = ["memory.redact_memoryentry"]


@pytest.fixture
def leaked(alpha):
    services.memory_entry_create(project=alpha.project, author="a", category="note",
                                 content="first")
    return services.memory_entry_create(project=alpha.project, author="a", category="note",
                                        content="the phrase quokka lantern").entry


def redact(client, pk, follow=False, **fields):
    return client.post(ENTRIES, {"action": "redact_entries", "_selected_action": [pk], **fields},
                       follow=follow)


def test_the_action_asks_for_a_reason_then_redacts(root, leaked):
    confirm = redact(root, leaked.pk)
    assert confirm.status_code == 200
    page = confirm.content.decode()
    assert "Redact the content of 1 entry" in page and 'name="reason"' in page
    assert MemoryEntry.objects.get(pk=leaked.pk).content == "the phrase quokka lantern"

    empty = redact(root, leaked.pk, confirm="yes", reason="  ")
    assert "Say why the content is redacted." in empty.content.decode()
    assert not MemoryEntry.objects.get(pk=leaked.pk).is_redacted

    done = redact(root, leaked.pk, confirm="yes", reason="a passphrase", follow=True)
    assert "Redacted 1 entry." in done.content.decode()
    entry = MemoryEntry.objects.get(pk=leaked.pk)
    assert entry.is_redacted and entry.content.startswith("[redacted by user:root at ")
    assert entry.content.endswith(": a passphrase]")
    assert services.memory_chain_verify(project=leaked.project).ok

    again = redact(root, leaked.pk, confirm="yes", reason="again", follow=True)
    assert "was already redacted by user:root" in again.content.decode()


@pytest.mark.parametrize("perms", [VIEW_ONLY, OPERATOR], ids=["viewer", "operator"])
def test_without_the_redact_permission_the_action_is_neither_shown_nor_run(staff, alpha,
                                                                           leaked, perms):
    client = staff("olga", perms, operator_of=(alpha,))
    assert "redact_entries" not in client.get(ENTRIES).content.decode()
    redact(client, leaked.pk, confirm="yes", reason="a passphrase")
    assert MemoryEntry.objects.get(pk=leaked.pk).content == "the phrase quokka lantern"


def test_the_permission_works_only_on_projects_the_staff_member_may_see(staff, alpha, beta,
                                                                        leaked):
    theirs = services.memory_entry_create(project=beta.project, author="b", category="note",
                                          content="beta's text").entry
    client = staff("olga", VIEW_ONLY + REDACT, operator_of=(alpha,))
    assert "redact_entries" in client.get(ENTRIES).content.decode()
    redact(client, theirs.pk, confirm="yes", reason="not mine")
    assert MemoryEntry.objects.get(pk=theirs.pk).content == "beta's text"
    redact(client, leaked.pk, confirm="yes", reason="mine")
    assert MemoryEntry.objects.get(pk=leaked.pk).is_redacted
