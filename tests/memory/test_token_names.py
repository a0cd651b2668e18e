"""Token names never pass for GedWeb's own authors (issue 16 §7, contract §9 "Authors").

A project token's name is the author of what it writes. GedWeb writes as
``admin`` (the admin token), ``cli`` (the commands), ``system``, and with a
``:`` prefix for people and imports (``user:vera``). A token named like one
would make its entries indistinguishable from theirs, so every way of
naming a token refuses those names, naming the rule, and stores nothing.
"""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.exceptions import ValidationError
from django.core.management import CommandError, call_command

from memory import services
from memory.models import Project, ProjectToken, hash_token
from memory.validators import validate_token_name

RESERVED = ["admin", "cli", "system", "Admin", "SYSTEM", "CLI"]
WITH_COLON = ["user:root", "user:admin", "ged_import:x", "a:", "ci:agent"]
ALLOWED = ["default", "ci-agent", "admin-bot", "clippy", "system.d", "agent@host", "a", "x" * 64]


@pytest.mark.parametrize("name", RESERVED)
def test_the_names_gedweb_writes_as_are_refused(name):
    with pytest.raises(ValidationError) as raised:
        validate_token_name(name)
    assert "an author GedWeb writes as itself (admin, cli, system)" in raised.value.messages[0]


@pytest.mark.parametrize("name", WITH_COLON)
def test_a_name_with_a_colon_is_refused_naming_the_rule(name):
    with pytest.raises(ValidationError) as raised:
        validate_token_name(name)
    assert raised.value.messages == [
        "must not contain ':', which GedWeb keeps for its own authors (user:..., imports)"
    ]


@pytest.mark.parametrize("name", ALLOWED)
def test_other_names_are_allowed(name):
    validate_token_name(name)


def test_a_project_with_a_reserved_first_token_name_is_not_created(db):
    with pytest.raises(ValidationError) as raised:
        services.project_create(project_id="shop", name="Shop", token_name="admin")
    assert set(raised.value.message_dict) == {"token_name"}
    assert not Project.objects.filter(pk="shop").exists()
    assert not ProjectToken.objects.exists()


@pytest.mark.parametrize("name", ["cli", "user:root"])
def test_a_second_token_with_a_reserved_name_is_not_issued(alpha, name):
    with pytest.raises(ValidationError) as raised:
        services.project_token_create(project=alpha.project, name=name)
    assert set(raised.value.message_dict) == {"name"}
    assert list(ProjectToken.objects.values_list("name", flat=True)) == ["default"]


def test_the_token_command_refuses_a_reserved_name_in_one_line(alpha):
    with pytest.raises(CommandError) as raised:
        call_command("project", "token", "alpha", "--name", "system",
                     stdout=StringIO(), stderr=StringIO())
    message = str(raised.value)
    assert "\n" not in message.strip()
    assert "system" in message and "writes as itself" in message
    assert ProjectToken.objects.filter(project=alpha.project).count() == 1


def test_a_second_token_can_be_supplied_and_is_the_one_stored(alpha):
    supplied = "ci-supplied-token-0123456789abcdef"
    record, raw = services.project_token_create(project=alpha.project, name="ci", token=supplied)
    assert raw == supplied
    assert ProjectToken.objects.get(pk=record.pk).token_hash == hash_token(supplied)


def test_a_second_token_too_short_to_supply_is_refused_by_field(alpha):
    with pytest.raises(ValidationError) as raised:
        services.project_token_create(project=alpha.project, name="ci", token="short")
    assert set(raised.value.message_dict) == {"token"}
    assert list(ProjectToken.objects.values_list("name", flat=True)) == ["default"]
