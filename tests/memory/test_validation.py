"""The validation toolkit (gedweb.validation) and the project's directory (mirror.memory_dir).

One collector names every bad field of a write; one function turns a
ValidationError into the one line commands and imports print; one function
says where a project's files live outside the workspace.
"""

from __future__ import annotations

import hashlib
import os
from datetime import UTC, datetime, tzinfo

import pytest
from django.core.exceptions import ValidationError

from gedweb.commands import one_line
from gedweb.errors import Conflict
from gedweb.lib.canonical import canonical_json
from gedweb.validation import FieldErrors, collect_errors, validate_text, validation_error_line
from memory import checkpoints, mirror
from memory.models import MemoryEntry, format_timestamp
from memory.services import ImportRow, memory_entries_import
from memory.validators import validate_category, validate_content, validate_project_id


def test_collect_errors_names_every_bad_field_with_all_its_messages():
    with pytest.raises(ValidationError) as refused:
        collect_errors({
            "category": (validate_category, "Bad"),
            "content": (validate_content, "\x00"),
            "fine": (validate_content, "text"),
        })
    assert refused.value.message_dict == {
        "category": ["must start with a lowercase letter and use only a-z, 0-9, '_', '.', '-' "
                     "(at most 64 characters)"],
        "content": ["must not contain NUL characters"],
    }


def test_collect_errors_raises_nothing_when_every_field_passes():
    assert collect_errors({"content": (validate_content, "text")}) is None


def test_field_errors_keeps_checked_and_added_messages_in_order_per_field():
    errors = FieldErrors()
    errors.check("content", validate_text, " ")
    errors.add("content", "a second rule")
    errors.add("expected_revision", "must be 0")
    with pytest.raises(ValidationError) as refused:
        errors.raise_if_any()
    assert refused.value.message_dict == {
        "content": ["must not be blank", "a second rule"],
        "expected_revision": ["must be 0"],
    }


def test_field_errors_without_a_refusal_raises_nothing():
    errors = FieldErrors()
    errors.check("content", validate_text, "text")
    errors.raise_if_any()
    assert errors.errors == {}


def test_the_one_line_of_an_error_by_field_names_each_field():
    exc = ValidationError({"category": ["bad", "worse"], "content": ["blank"]})
    assert validation_error_line(exc) == "category: bad worse; content: blank"


def test_the_one_line_of_a_plain_error_joins_its_messages():
    assert validation_error_line(ValidationError(["first", "second"])) == "first second"
    assert validation_error_line(ValidationError("only")) == "only"


def test_commands_print_validation_and_domain_errors_in_the_same_one_line():
    assert one_line(ValidationError({"name": ["taken"]})) == "name: taken"
    assert one_line(Conflict("already there")) == "already there"


def test_an_import_row_refusal_is_one_line_naming_the_row_and_stores_nothing(alpha):
    row = ImportRow(key="k1", category="Bad", content=" ", source="ferryman",
                    created_at=datetime(2026, 1, 1, tzinfo=UTC), label="row 7")
    with pytest.raises(ValidationError) as refused:
        memory_entries_import(project=alpha.project, rows=[row])
    assert refused.value.messages == [
        "row 7: category: must start with a lowercase letter and use only a-z, 0-9, '_', '.', "
        "'-' (at most 64 characters); content: must not be blank"
    ]
    assert not MemoryEntry.objects.exists()


def test_the_project_id_message_quotes_the_pattern_it_checks():
    with pytest.raises(ValidationError) as refused:
        validate_project_id("Alpha")
    assert refused.value.messages == [
        "must be 1-64 lowercase letters, digits or inner hyphens "
        "(^[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?$)"
    ]


# --- <GEDWEB_MEMORY_ROOT>/<project> -------------------------------------------------------


def test_the_memory_dir_is_the_project_under_the_root(memory_root):
    assert mirror.memory_dir("alpha") == memory_root / "alpha"


def test_every_file_of_a_project_lives_in_its_memory_dir(memory_root, settings, tmp_path):
    settings.MEMORY_ROOT = tmp_path / "elsewhere"
    directory = tmp_path / "elsewhere" / "alpha"
    assert mirror.memory_dir("alpha") == directory
    assert mirror.project_dir("alpha") == directory
    assert mirror.mirror_path("alpha") == directory / "MEMORY.md"
    assert checkpoints.file_path("alpha") == directory / "CHECKPOINTS"
    assert checkpoints.file_path("alpha", name="LEDGER-CHECKPOINTS") == (
        directory / "LEDGER-CHECKPOINTS"
    )


def test_writers_refuse_a_symlinked_memory_dir_that_readers_still_name(memory_root, tmp_path):
    memory_root.mkdir(parents=True, exist_ok=True)
    os.symlink(tmp_path, memory_root / "alpha")
    assert mirror.memory_dir("alpha") == memory_root / "alpha"
    with pytest.raises(mirror.MirrorPathError):
        mirror.project_dir("alpha")
    assert checkpoints.file_path("alpha") == memory_root / "alpha" / "CHECKPOINTS"


def test_an_import_row_with_a_bad_source_and_key_names_both_fields(alpha):
    row = ImportRow(key="", category="note", content="text", source="",
                    created_at=datetime(2026, 1, 1, tzinfo=UTC), label="row 2")
    with pytest.raises(ValidationError) as refused:
        memory_entries_import(project=alpha.project, rows=[row])
    line = refused.value.messages[0]
    assert line.startswith("row 2: source: ")
    assert "; key: must be 1-255 printable ASCII characters" in line
    assert not MemoryEntry.objects.exists()


class _NoOffset(tzinfo):
    """A zone that names no offset: the time is as naive as one without tzinfo."""

    def utcoffset(self, dt: datetime | None) -> None:
        return None


@pytest.mark.parametrize("zone", [None, _NoOffset()], ids=["naive", "no-offset-zone"])
def test_an_import_row_without_a_utc_offset_is_refused_in_one_line(alpha, zone):
    row = ImportRow(key="k1", category="note", content="text", source="import",
                    created_at=datetime(2026, 1, 1, tzinfo=zone), label="row 3")
    with pytest.raises(ValidationError) as refused:
        memory_entries_import(project=alpha.project, rows=[row])
    assert refused.value.messages == ["row 3: created_at: must carry a UTC offset"]
    assert not MemoryEntry.objects.exists()


def test_an_imported_row_stores_the_canonical_fingerprint_of_its_fields(alpha):
    # Stored rows outlive a release: a re-import after an upgrade must compute the same hash.
    when = datetime(2026, 1, 1, 12, 30, tzinfo=UTC)
    row = ImportRow(key="k1", category="note", content="text", source="import",
                    created_at=when, label="row 1")
    memory_entries_import(project=alpha.project, rows=[row])
    expected = hashlib.sha256(canonical_json({
        "category": "note", "content": "text", "source": "import",
        "created_at": format_timestamp(when),
    }).encode()).hexdigest()
    assert MemoryEntry.objects.get().request_hash == expected

