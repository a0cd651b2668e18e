"""The MEMORY.md mirror on disk (contract §4 "Markdown mirror"; catalogue C8).

The database is the source of truth: the file must always equal a full
rebuild byte for byte once caught up, damage is detected and repaired,
a failed write never fails or doubles an append, and a process killed at
any failpoint leaves a state the next writer repairs.
"""

from __future__ import annotations

import json
import os
import signal
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from gedweb.lib.mirror import render_full
from memory import mirror, services
from memory.models import MemoryEntry
from tests.subprocesses import manage

VARIED_CONTENT = [
    "plain decision",
    "```python\nprint('fenced')\n```",
    "## 7 · 2026-01-01T00:00:00.000000+00:00 · decision\n\nforged heading",
    "_Source: x | Author: admin | Entry: 00000000-0000-4000-8000-000000000000 | Corrects: - "
    "| Hash: " + "0" * 64 + "_",
    "Zürich → 東京 🎉 naïve café",
    "trailing newline\n",
    "`````` six backticks ``````",
    "multi\n\nparagraph\n\n- list\n- items\n",
    "tab\tand\rcarriage return",
    "~~~\ntilde fence\n~~~",
]


def expected_text(project) -> str:
    return render_full(project.pk, MemoryEntry.objects.for_project(project).chain_rows())


def file_bytes(project) -> bytes:
    return mirror.mirror_path(project.pk).read_bytes()


def assert_mirror_exact(project) -> None:
    text = file_bytes(project).decode("utf-8")
    assert text == expected_text(project)
    for entry_uuid in MemoryEntry.objects.for_project(project).values_list("uuid", flat=True):
        assert text.count(f"| Entry: {entry_uuid} |") == 1
    assert mirror.check(project)


@pytest.fixture
def append(django_capture_on_commit_callbacks):
    """Append through the service and run its on_commit mirror write, as a commit would."""

    def run(project, content: str = "an entry", **kwargs):
        with django_capture_on_commit_callbacks(execute=True):
            result = services.memory_entry_create(
                project=project,
                author=kwargs.pop("author", "ana"),
                category=kwargs.pop("category", "decision"),
                content=content,
                **kwargs,
            )
        return result.entry

    return run


@pytest.fixture
def restore_signals():
    # `memory mirror --follow` installs SIGTERM/SIGINT handlers in the test process.
    saved = {signum: signal.getsignal(signum) for signum in (signal.SIGINT, signal.SIGTERM)}
    yield
    for signum, handler in saved.items():
        signal.signal(signum, handler)


def run_mirror_command(*args: str) -> tuple[int, str, str]:
    out, err = StringIO(), StringIO()
    try:
        call_command("memory", "mirror", *args, stdout=out, stderr=err)
    except CommandError as exc:
        err.write(str(exc))
        return exc.returncode, out.getvalue(), err.getvalue()
    return 0, out.getvalue(), err.getvalue()


# --- byte equality on the write path ------------------------------------------------


def test_many_varied_appends_leave_the_file_equal_to_a_rebuild(alpha, append):
    for index in range(300):
        corrects = index - 5 if index % 50 == 49 else None
        append(
            alpha.project,
            f"{index}: {VARIED_CONTENT[index % len(VARIED_CONTENT)]}",
            category=("decision", "note", "fix.v2")[index % 3],
            source=f"agent-{index % 4}",
            corrects=corrects,
        )
    assert file_bytes(alpha.project) == expected_text(alpha.project).encode("utf-8")
    assert_mirror_exact(alpha.project)


def test_the_write_path_appends_in_place_and_never_rewrites_the_file(alpha, append):
    append(alpha.project, "first")
    inode = mirror.mirror_path(alpha.id).stat().st_ino
    for index in range(20):
        append(alpha.project, f"more {index} ```")
    assert mirror.mirror_path(alpha.id).stat().st_ino == inode
    assert_mirror_exact(alpha.project)


def test_the_mirror_lives_under_the_memory_root_in_the_project_directory(
    alpha, append, memory_root
):
    append(alpha.project)
    assert mirror.mirror_path(alpha.id) == memory_root / "alpha" / "MEMORY.md"
    assert (memory_root / "alpha" / "MEMORY.md").is_file()


def test_a_project_without_entries_mirrors_to_the_header_alone(alpha):
    mirror.sync(alpha.project)
    assert file_bytes(alpha.project) == render_full("alpha", []).encode()
    assert mirror.check(alpha.project)


def test_sync_of_a_current_mirror_changes_nothing(alpha, append):
    append(alpha.project)
    before = file_bytes(alpha.project)
    assert mirror.sync(alpha.project) == mirror.SyncResult("alpha", appended=0, rebuilt=False)
    assert file_bytes(alpha.project) == before


def test_sync_of_a_mirror_behind_the_record_appends_only_the_missing_blocks(
    alpha, append, settings
):
    append(alpha.project, "mirrored")
    settings.MIRROR_WRITER = "follower"
    for index in range(3):
        append(alpha.project, f"not yet mirrored {index}")
    assert mirror.sync(alpha.project) == mirror.SyncResult("alpha", appended=3, rebuilt=False)
    assert_mirror_exact(alpha.project)


def test_projects_have_separate_mirrors(alpha, beta, append):
    append(alpha.project, "for alpha")
    append(beta.project, "for beta")
    assert b"for beta" not in file_bytes(alpha.project)
    assert b"for alpha" not in file_bytes(beta.project)
    assert_mirror_exact(alpha.project)
    assert_mirror_exact(beta.project)


# --- damage: detected by check(), repaired by sync() or rebuild() -------------------


def _delete(path: Path) -> None:
    path.unlink()


def _empty(path: Path) -> None:
    path.write_bytes(b"")


def _truncate_mid_block(path: Path) -> None:
    data = path.read_bytes()
    last_block = data.rfind(b"\n## ")
    path.write_bytes(data[: last_block + (len(data) - last_block) // 2])


def _truncate_last_byte(path: Path) -> None:
    path.write_bytes(path.read_bytes()[:-1])


def _append_junk(path: Path) -> None:
    with path.open("ab") as handle:
        handle.write(b"junk appended by hand\n")


def _append_a_copy_of_the_last_block(path: Path) -> None:
    data = path.read_bytes()
    with path.open("ab") as handle:
        handle.write(data[data.rfind(b"\n## ") :])


def _edit_a_byte_in_the_middle(path: Path) -> None:
    data = bytearray(path.read_bytes())
    middle = data.index(b"entry 2 of 5")
    data[middle] = ord("E")
    path.write_bytes(bytes(data))


TAIL_DAMAGE = [
    pytest.param(_delete, id="deleted"),
    pytest.param(_empty, id="emptied"),
    pytest.param(_truncate_mid_block, id="truncated-mid-block"),
    pytest.param(_truncate_last_byte, id="truncated-last-byte"),
    pytest.param(_append_junk, id="junk-appended"),
]
# The O(1) catch-up trusts a file whose last block is exactly the newest
# entry's; damage before that is found by check() and fixed by rebuild().
ANY_DAMAGE = [
    *TAIL_DAMAGE,
    pytest.param(_append_a_copy_of_the_last_block, id="last-block-doubled"),
    pytest.param(_edit_a_byte_in_the_middle, id="byte-edited-in-middle"),
]
SOME_DAMAGE = [
    pytest.param(_delete, id="deleted"),
    pytest.param(_truncate_mid_block, id="truncated-mid-block"),
    pytest.param(_edit_a_byte_in_the_middle, id="byte-edited-in-middle"),
]


@pytest.fixture
def mirrored(alpha, append):
    for index in range(5):
        append(alpha.project, f"entry {index} of 5 ```")
    assert_mirror_exact(alpha.project)
    return alpha


@pytest.mark.parametrize("damage", ANY_DAMAGE)
def test_check_detects_damage(mirrored, damage):
    damage(mirror.mirror_path(mirrored.id))
    assert mirror.check(mirrored.project) is False


@pytest.mark.parametrize("damage", ANY_DAMAGE)
def test_rebuild_repairs_any_damage(mirrored, damage):
    damage(mirror.mirror_path(mirrored.id))
    mirror.rebuild(mirrored.project)
    assert_mirror_exact(mirrored.project)


@pytest.mark.parametrize("damage", TAIL_DAMAGE)
def test_sync_repairs_tail_damage(mirrored, damage):
    damage(mirror.mirror_path(mirrored.id))
    result = mirror.sync(mirrored.project)
    assert result.rebuilt
    assert_mirror_exact(mirrored.project)


@pytest.mark.parametrize("damage", TAIL_DAMAGE)
def test_the_next_append_repairs_tail_damage(mirrored, damage, append):
    damage(mirror.mirror_path(mirrored.id))
    append(mirrored.project, "after the damage")
    assert_mirror_exact(mirrored.project)


def test_a_mirror_copied_from_another_project_is_rebuilt(mirrored, beta, append):
    append(beta.project, "beta's only entry")
    mirror.mirror_path(beta.id).write_bytes(file_bytes(mirrored.project))
    assert mirror.check(beta.project) is False
    assert mirror.sync(beta.project).rebuilt
    assert_mirror_exact(beta.project)


def test_a_mirror_ending_with_a_block_of_an_unknown_hash_is_rebuilt(mirrored):
    path = mirror.mirror_path(mirrored.id)
    data = path.read_bytes()
    hash_start = data.rindex(b"Hash: ") + len(b"Hash: ")
    forged = data[:hash_start] + b"f" * 64 + b"_\n"
    path.write_bytes(forged)
    assert mirror.sync(mirrored.project).rebuilt
    assert_mirror_exact(mirrored.project)


def test_a_mirror_whose_last_line_names_no_valid_entry_id_is_rebuilt(mirrored):
    # 36 characters of the id's alphabet, but no UUID: the file is the
    # one to rebuild, not a lookup to fail.
    path = mirror.mirror_path(mirrored.id)
    data = path.read_bytes()
    id_start = data.rindex(b"Entry: ") + len(b"Entry: ")
    path.write_bytes(data[:id_start] + b"-" * 36 + data[id_start + 36:])
    assert mirror.mirrored_seqs([mirrored.id]) == {mirrored.id: None}
    assert mirror.sync(mirrored.project).rebuilt
    assert_mirror_exact(mirrored.project)


def test_mirrored_seqs_names_what_each_file_provably_holds(mirrored, beta, make_project):
    make_project("gamma")  # no entries, no file yet
    mirror.sync(beta.project)  # the header alone
    assert mirror.mirrored_seqs([mirrored.id, beta.id, "gamma"]) == {
        mirrored.id: 5, beta.id: 0, "gamma": None}


def _edit_the_last_block_keeping_its_trailer(path: Path) -> None:
    data = bytearray(path.read_bytes())
    content = data.rindex(b"entry 4 of 5")
    assert content > data.rindex(b"\n## ")  # in the last block, before its trailer
    data[content] = ord("E")
    path.write_bytes(bytes(data))


def test_a_last_block_edited_with_its_trailer_intact_is_rebuilt_by_sync(mirrored):
    # The trailer still names the newest entry's uuid and hash: only the
    # byte comparison of the whole block tells the file is not the record.
    _edit_the_last_block_keeping_its_trailer(mirror.mirror_path(mirrored.id))
    assert mirror.check(mirrored.project) is False
    assert mirror.sync(mirrored.project).rebuilt
    assert_mirror_exact(mirrored.project)


def test_a_last_block_edited_with_its_trailer_intact_is_repaired_by_the_next_append(
    mirrored, append
):
    _edit_the_last_block_keeping_its_trailer(mirror.mirror_path(mirrored.id))
    append(mirrored.project, "after the edit")
    assert_mirror_exact(mirrored.project)
    assert b"Entry 4 of 5" not in file_bytes(mirrored.project)


@pytest.mark.parametrize("damage", SOME_DAMAGE)
def test_the_check_command_exits_1_naming_the_damaged_project(mirrored, damage):
    damage(mirror.mirror_path(mirrored.id))
    returncode, out, err = run_mirror_command("--check")
    assert returncode == 1
    assert json.loads(out)["drifted"] == ["alpha"]
    assert str(mirror.mirror_path("alpha")) in err


@pytest.mark.parametrize("damage", SOME_DAMAGE)
def test_the_rebuild_command_repairs_and_check_then_exits_0(mirrored, damage):
    damage(mirror.mirror_path(mirrored.id))
    assert run_mirror_command("--rebuild")[0] == 0
    returncode, out, _ = run_mirror_command("--check")
    assert (returncode, json.loads(out)) == (0, {"checked": 1, "drifted": []})
    assert_mirror_exact(mirrored.project)


def test_the_check_command_names_only_the_drifted_project(mirrored, beta, append):
    append(beta.project, "beta stays intact")
    _append_junk(mirror.mirror_path(mirrored.id))
    returncode, out, _ = run_mirror_command("--check")
    assert (returncode, json.loads(out)) == (1, {"checked": 2, "drifted": ["alpha"]})


def test_the_commands_can_target_one_project(mirrored, beta, append):
    append(beta.project, "beta")
    _append_junk(mirror.mirror_path(mirrored.id))
    _append_junk(mirror.mirror_path(beta.id))
    assert run_mirror_command("--rebuild", "--project", "beta")[0] == 0
    assert run_mirror_command("--check", "--project", "beta")[0] == 0
    assert run_mirror_command("--check", "--project", "alpha")[0] == 1


def test_the_check_command_refuses_an_unknown_project(db):
    returncode, _, err = run_mirror_command("--check", "--project", "nope")
    assert returncode == 1 and "nope" in err


# --- symlinks ------------------------------------------------------------------------


def test_a_symlinked_mirror_file_is_replaced_not_followed(alpha, append, tmp_path):
    outside = tmp_path / "outside.md"
    outside.write_bytes(b"precious file outside the mirror root\n")
    path = mirror.mirror_path(alpha.id)
    path.parent.mkdir(parents=True)
    path.symlink_to(outside)
    append(alpha.project, "must not land outside")
    assert outside.read_bytes() == b"precious file outside the mirror root\n"
    assert path.is_file() and not path.is_symlink()
    assert_mirror_exact(alpha.project)


def test_check_does_not_follow_a_symlinked_mirror_file(mirrored, tmp_path):
    outside = tmp_path / "outside.md"
    path = mirror.mirror_path(mirrored.id)
    outside.write_bytes(path.read_bytes())
    path.unlink()
    path.symlink_to(outside)
    assert mirror.check(mirrored.project) is False


def test_a_symlinked_project_directory_is_not_written_through(alpha, append, tmp_path, memory_root):
    outside = tmp_path / "outside-dir"
    outside.mkdir()
    memory_root.mkdir(parents=True)
    (memory_root / alpha.id).symlink_to(outside, target_is_directory=True)
    entry = append(alpha.project, "committed even though the mirror path is unsafe")
    assert list(outside.iterdir()) == []
    assert MemoryEntry.objects.filter(pk=entry.pk).count() == 1
    with pytest.raises(mirror.MirrorPathError):
        mirror.sync(alpha.project)


def test_the_check_command_reports_a_symlinked_project_directory_as_drift(
    mirrored, tmp_path, memory_root
):
    outside = tmp_path / "outside-dir"
    (memory_root / mirrored.id).rename(outside)
    (memory_root / mirrored.id).symlink_to(outside, target_is_directory=True)
    returncode, out, err = run_mirror_command("--check")
    assert returncode == 1
    assert json.loads(out)["drifted"] == ["alpha"]
    assert "alpha" in err


def test_the_rebuild_command_refuses_a_symlinked_project_directory_in_one_line(
    mirrored, tmp_path, memory_root
):
    outside = tmp_path / "outside-dir"
    (memory_root / mirrored.id).rename(outside)
    (memory_root / mirrored.id).symlink_to(outside, target_is_directory=True)
    before = {path.name: path.read_bytes() for path in outside.iterdir()}
    returncode, _, err = run_mirror_command("--rebuild")
    assert returncode == 1
    assert "alpha" in err and "\n" not in err.strip()
    assert {path.name: path.read_bytes() for path in outside.iterdir()} == before


def test_the_check_command_reports_a_project_directory_that_is_a_file_as_drift(
    alpha, memory_root
):
    memory_root.mkdir(parents=True)
    (memory_root / alpha.id).write_bytes(b"not a directory")
    returncode, out, _ = run_mirror_command("--check")
    assert (returncode, json.loads(out)["drifted"]) == (1, ["alpha"])


# --- a failed mirror write never fails or doubles the append --------------------------


def test_a_failed_mirror_write_after_commit_keeps_the_entry_and_catches_up_later(
    live_db, make_project, memory_root
):
    target = make_project("fragile")
    memory_root.mkdir(parents=True)
    blocker = memory_root / "fragile"
    blocker.write_bytes(b"a regular file where the mirror directory belongs\n")
    with pytest.raises(OSError):
        mirror.sync(target.project)

    result = services.memory_entry_create(
        project=target.project, author="ana", category="decision", content="survives"
    )

    assert not result.replayed
    seqs = MemoryEntry.objects.filter(project=target.project).values_list("seq", flat=True)
    assert list(seqs) == [1]
    assert blocker.read_bytes() == b"a regular file where the mirror directory belongs\n"
    blocker.unlink()
    mirror.sync(target.project)
    assert_mirror_exact(target.project)


def test_after_a_failed_write_the_next_append_catches_up_without_a_duplicate(alpha, append):
    append(alpha.project, "one")
    path = mirror.mirror_path(alpha.id)
    inode = path.stat().st_ino
    lock = path.parent / mirror.LOCK_NAME
    lock.unlink()
    lock.symlink_to(path.parent / "elsewhere")  # opening the lock now fails (O_NOFOLLOW)

    append(alpha.project, "two, committed while the mirror cannot be written")
    assert MemoryEntry.objects.filter(project=alpha.project).count() == 2
    assert b"two, committed" not in path.read_bytes()

    lock.unlink()
    append(alpha.project, "three")
    assert path.stat().st_ino == inode  # caught up by appending, not rebuilt
    assert_mirror_exact(alpha.project)


def test_a_failed_write_does_not_fail_the_append_over_the_api(
    live_db, make_project, client_for, memory_root
):
    # live_db: the request's commit runs the mirror write inside the request.
    target = make_project("fragile")
    memory_root.mkdir(parents=True)
    (memory_root / target.id).write_bytes(b"not a directory")
    response = client_for(target.token).post(
        f"/v1/projects/{target.id}/memory", {"category": "note", "content": "x"}, format="json"
    )
    assert response.status_code == 201
    assert MemoryEntry.objects.filter(project=target.project).count() == 1


# --- follower mode --------------------------------------------------------------------


def test_in_follower_mode_an_append_does_not_touch_the_disk(alpha, append, settings, memory_root):
    settings.MIRROR_WRITER = "follower"
    append(alpha.project, "follower mode")
    assert MemoryEntry.objects.filter(project=alpha.project).count() == 1
    assert not memory_root.exists()


def test_follow_once_brings_every_mirror_current(
    alpha, beta, append, settings, memory_root, restore_signals
):
    settings.MIRROR_WRITER = "follower"
    for index in range(3):
        append(alpha.project, f"alpha {index}")
    append(beta.project, "beta")
    out = StringIO()
    call_command("memory", "mirror", "--follow", "--once", stdout=out)
    assert_mirror_exact(alpha.project)
    assert_mirror_exact(beta.project)


def test_follow_once_catches_up_a_mirror_that_fell_behind(alpha, append, settings, restore_signals):
    append(alpha.project, "inline")
    inode = mirror.mirror_path(alpha.id).stat().st_ino
    settings.MIRROR_WRITER = "follower"
    append(alpha.project, "followed")
    call_command("memory", "mirror", "--follow", "--once", stdout=StringIO())
    assert mirror.mirror_path(alpha.id).stat().st_ino == inode
    assert_mirror_exact(alpha.project)


# --- crashes: a child process SIGKILLed at each failpoint ---------------------------------


def cli_add(memory_root: Path, project_id: str, content: str, failpoint: str | None = None):
    return manage(
        memory_root,
        "memory", "add", "--project", project_id, "--category", "decision", "--content", content,
        **({"GEDWEB_FAILPOINT": failpoint} if failpoint else {}),
    )


def entries_with_content(project, content: str) -> int:
    return MemoryEntry.objects.filter(project=project, content=content).count()


@pytest.mark.slow
def test_a_kill_right_after_commit_keeps_the_entry_and_the_next_add_catches_up(
    live_db, make_project, memory_root
):
    target = make_project("crash")
    services.memory_entry_create(
        project=target.project, author="ana", category="n", content="before"
    )
    old = file_bytes(target.project)

    killed = cli_add(memory_root, "crash", "killed after commit", failpoint="mirror.after_commit")

    assert killed.returncode == -signal.SIGKILL
    assert entries_with_content(target.project, "killed after commit") == 1
    assert file_bytes(target.project) == old
    recovered = cli_add(memory_root, "crash", "next add")
    assert recovered.returncode == 0, recovered.stderr
    assert MemoryEntry.objects.filter(project=target.project).count() == 3
    assert_mirror_exact(target.project)


def test_a_kill_in_the_middle_of_an_append_is_repaired_by_the_next_sync(
    live_db, make_project, memory_root
):
    target = make_project("crash")
    services.memory_entry_create(
        project=target.project, author="ana", category="n", content="before"
    )
    old = file_bytes(target.project)

    killed = cli_add(memory_root, "crash", "torn " * 50, failpoint="mirror.append.torn")

    assert killed.returncode == -signal.SIGKILL
    assert entries_with_content(target.project, "torn " * 50) == 1
    torn = file_bytes(target.project)
    assert torn.startswith(old) and len(old) < len(torn)
    assert not mirror.check(target.project)
    assert mirror.sync(target.project).rebuilt
    assert MemoryEntry.objects.filter(project=target.project).count() == 2
    assert_mirror_exact(target.project)


@pytest.mark.slow
def test_a_kill_before_the_rebuild_rename_leaves_the_old_file_whole(
    live_db, make_project, memory_root
):
    target = make_project("crash")
    services.memory_entry_create(
        project=target.project, author="ana", category="n", content="before"
    )
    _append_junk(mirror.mirror_path("crash"))  # forces the next write to rebuild
    old = file_bytes(target.project)

    killed = cli_add(
        memory_root, "crash", "killed mid-rebuild", failpoint="mirror.rebuild.before_rename"
    )

    assert killed.returncode == -signal.SIGKILL
    assert entries_with_content(target.project, "killed mid-rebuild") == 1
    assert file_bytes(target.project) == old  # the complete old version, never a partial one
    rebuilt = manage(memory_root, "memory", "mirror", "--rebuild")
    assert rebuilt.returncode == 0, rebuilt.stderr
    assert MemoryEntry.objects.filter(project=target.project).count() == 2
    assert_mirror_exact(target.project)


def test_a_kill_during_the_first_rebuild_leaves_no_mirror_and_the_next_append_builds_it(
    live_db, make_project, memory_root
):
    target = make_project("crash")
    killed = cli_add(memory_root, "crash", "first entry", failpoint="mirror.rebuild.before_rename")
    assert killed.returncode == -signal.SIGKILL
    assert entries_with_content(target.project, "first entry") == 1
    assert not mirror.mirror_path("crash").exists()
    services.memory_entry_create(
        project=target.project, author="ana", category="n", content="second entry"
    )
    assert_mirror_exact(target.project)


@pytest.mark.slow
def test_the_check_command_as_a_process_exits_1_naming_the_project_without_a_traceback(
    live_db, make_project, memory_root
):
    target = make_project("crash")
    services.memory_entry_create(project=target.project, author="ana", category="n", content="x")
    _truncate_mid_block(mirror.mirror_path("crash"))
    drifted = manage(memory_root, "memory", "mirror", "--check")
    assert drifted.returncode == 1
    assert json.loads(drifted.stdout)["drifted"] == ["crash"]
    assert "crash" in drifted.stderr and "Traceback" not in drifted.stderr


def test_a_rebuild_removes_temp_files_left_by_a_killed_writer(alpha, memory_root):
    from memory import mirror as disk_mirror
    from memory import services as memory_services

    memory_services.memory_entry_create(
        project=alpha.project, author="t", category="note", content="one"
    )
    directory = memory_root / alpha.id
    directory.mkdir(parents=True, exist_ok=True)
    stale = directory / f"{disk_mirror.TMP_PREFIX}99999"
    stale.write_text("half a mirror")
    disk_mirror.rebuild(alpha.project)
    assert not stale.exists()
    assert disk_mirror.check(alpha.project)


def test_a_project_without_entries_needs_no_mirror_file(alpha):
    assert not mirror.mirror_path(alpha.id).exists()
    assert mirror.check(alpha.project) is True


def test_a_deleted_mirror_of_a_project_with_entries_is_drift(mirrored):
    mirror.mirror_path(mirrored.id).unlink()
    assert mirror.check(mirrored.project) is False


# --- the writer's fast path ------------------------------------------------------


def test_the_writer_catches_up_one_entry_with_one_query(
    alpha, append, settings, django_assert_num_queries
):
    for index in range(3):
        append(alpha.project, f"mirrored {index}")
    settings.MIRROR_WRITER = "follower"
    append(alpha.project, "written by the next sync")
    with django_assert_num_queries(1):
        result = mirror.sync_after_append("alpha", 4)
    assert result == mirror.SyncResult("alpha", appended=1, rebuilt=False)
    assert_mirror_exact(alpha.project)


def test_the_writer_appends_nothing_when_another_writer_got_there_first(
    alpha, append, django_assert_num_queries
):
    append(alpha.project, "one")
    append(alpha.project, "two")
    before = file_bytes(alpha.project)
    with django_assert_num_queries(1):
        result = mirror.sync_after_append("alpha", 2)
    assert result == mirror.SyncResult("alpha", appended=0, rebuilt=False)
    assert file_bytes(alpha.project) == before


def test_the_writer_falls_back_to_a_full_sync_when_the_file_is_further_behind(
    alpha, append, settings
):
    append(alpha.project, "mirrored")
    settings.MIRROR_WRITER = "follower"
    for index in range(3):
        append(alpha.project, f"behind {index}")
    assert mirror.sync_after_append("alpha", 4) == mirror.SyncResult(
        "alpha", appended=3, rebuilt=False)
    assert_mirror_exact(alpha.project)


@pytest.mark.parametrize("damage", TAIL_DAMAGE)
def test_the_writer_repairs_tail_damage(mirrored, damage, append, settings):
    damage(mirror.mirror_path(mirrored.id))
    settings.MIRROR_WRITER = "follower"
    append(mirrored.project, "after the damage")
    mirror.sync_after_append("alpha", 6)
    assert_mirror_exact(mirrored.project)


def test_the_writer_needs_no_query_when_the_append_passes_its_rows(
    alpha, append, settings, django_assert_num_queries
):
    append(alpha.project, "one")
    settings.MIRROR_WRITER = "follower"
    result = services.memory_entry_create(
        project=alpha.project, author="ana", category="decision", content="two")
    assert [row["seq"] for row in result.mirror_rows] == [1, 2]
    with django_assert_num_queries(0):
        synced = mirror.sync_after_append("alpha", 2, result.mirror_rows)
    assert synced == mirror.SyncResult("alpha", appended=1, rebuilt=False)
    assert_mirror_exact(alpha.project)


@pytest.mark.parametrize("damage", TAIL_DAMAGE)
def test_rows_passed_by_the_append_do_not_hide_tail_damage(mirrored, damage, settings):
    damage(mirror.mirror_path(mirrored.id))
    settings.MIRROR_WRITER = "follower"
    result = services.memory_entry_create(
        project=mirrored.project, author="ana", category="decision", content="after")
    mirror.sync_after_append("alpha", result.entry.seq, result.mirror_rows)
    assert_mirror_exact(mirrored.project)


# --- group commit: blocks this process already wrote ------------------------------


def _synced_entry(project, content, settings):
    settings.MIRROR_WRITER = "follower"
    result = services.memory_entry_create(
        project=project, author="ana", category="decision", content=content)
    return result


def test_a_block_this_process_wrote_is_not_written_or_read_again(
    alpha, append, settings, django_assert_num_queries
):
    append(alpha.project, "one")
    first = _synced_entry(alpha.project, "two", settings)
    second = _synced_entry(alpha.project, "three", settings)
    # The writer of seq 3 gets there first and writes seq 2's block as well.
    assert mirror.sync_after_append("alpha", 3, second.mirror_rows).appended == 2
    before = file_bytes(alpha.project)
    with django_assert_num_queries(0):
        result = mirror.sync_after_append("alpha", 2, first.mirror_rows)
    assert result == mirror.SyncResult("alpha", appended=0, rebuilt=False)
    assert file_bytes(alpha.project) == before
    assert_mirror_exact(alpha.project)


def _replace_without_last_block(path):
    # A new inode (as a rebuild's rename makes) holding the file up to seq 2.
    replacement = path.with_name("replacement")
    replacement.write_bytes(path.read_bytes()[: path.read_bytes().index(b"\n## 2 ")])
    os.replace(replacement, path)


def _cut_last_block_in_place(path):
    os.truncate(path, path.read_bytes().index(b"\n## 2 "))  # same inode, smaller


@pytest.mark.parametrize("lose_block", [_replace_without_last_block, _cut_last_block_in_place],
                         ids=["replaced", "cut-in-place"])
def test_a_file_that_lost_a_block_this_process_wrote_is_read_again(
    alpha, append, settings, lose_block
):
    append(alpha.project, "one")
    first = _synced_entry(alpha.project, "two", settings)
    mirror.sync_after_append("alpha", 2, first.mirror_rows)
    lose_block(mirror.mirror_path("alpha"))
    assert mirror.sync_after_append("alpha", 2, first.mirror_rows).appended == 1
    assert_mirror_exact(alpha.project)


def test_a_block_with_another_hash_at_the_same_seq_is_not_taken_for_it(
    alpha, append, settings
):
    append(alpha.project, "one")
    first = _synced_entry(alpha.project, "two", settings)
    mirror.sync_after_append("alpha", 2, first.mirror_rows)
    forged = tuple({**row, "hash": "f" * 64} if row["seq"] == 2 else row
                   for row in first.mirror_rows)
    path = mirror.mirror_path("alpha")
    recent = mirror._recent_blocks(path)
    assert recent.holds(path, first.mirror_rows[-1])
    assert not recent.holds(path, forged[-1])


# --- the writer's turn, reserved before the commit (PostgreSQL appends) ------------


def _lock_is_free(project_id: str) -> bool:
    import fcntl

    fd = os.open(mirror.project_dir(project_id) / mirror.LOCK_NAME, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    finally:
        os.close(fd)
    return True


def test_a_reservation_holds_the_mirror_lock_until_released(alpha, append):
    append(alpha.project, "one")
    reservation = mirror.reserve("alpha")
    assert reservation is not None and reservation.directory is not None
    assert not _lock_is_free("alpha")
    reservation.release()
    assert _lock_is_free("alpha")
    reservation.release()  # a second release (rollback after the write) is harmless
    assert _lock_is_free("alpha")


def test_the_writer_with_a_reservation_appends_and_releases_it(alpha, append, settings):
    append(alpha.project, "one")
    settings.MIRROR_WRITER = "follower"
    result = services.memory_entry_create(
        project=alpha.project, author="ana", category="decision", content="two")
    settings.MIRROR_WRITER = "inline"
    reservation = mirror.reserve("alpha")
    mirror.after_commit("alpha", 2, result.mirror_rows, reservation)
    assert _lock_is_free("alpha")
    assert_mirror_exact(alpha.project)


def test_no_reservation_in_follower_mode_or_for_a_symlinked_directory(
    alpha, settings, memory_root, tmp_path
):
    settings.MIRROR_WRITER = "follower"
    assert mirror.reserve("alpha") is None
    settings.MIRROR_WRITER = "inline"
    memory_root.mkdir(parents=True, exist_ok=True)
    (memory_root / "alpha").symlink_to(tmp_path)
    assert mirror.reserve("alpha") is None


def test_appends_in_their_own_transactions_leave_the_mirror_lock_free(live_db, make_project):
    # On PostgreSQL these appends reserve the mirror's turn under the row
    # lock; on SQLite they take it after the commit. Either way, free after.
    target = make_project("turns")
    for n in range(5):
        services.memory_entry_create(project=target.project, author="ana",
                                     category="decision", content=f"entry {n}")
    assert _lock_is_free("turns")
    assert mirror.check(target.project)
