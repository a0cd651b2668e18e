"""Progress on a terminal, quiet in pipes and CI (issue 36 §8)."""

from __future__ import annotations

import io
import json
from typing import Any

from django.core.management import call_command

from gedweb.progress import progress_bar
from governance.gedpi_export import export_tree
from governance.gedpi_import import import_checkout
from memory import mirror, services
from tests.interop.gedpi_trees import migrated_checkout, write_tree


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_bar_is_drawn_on_a_terminal_only(monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    terminal, pipe = Terminal(), io.StringIO()
    for stream in (terminal, pipe):
        with progress_bar(3, unit="entries", file=stream, description="alpha verify") as bar:
            bar.update(3)
    # Drawn on start (tqdm redraws at most every 0.1 s) and cleared at the end.
    assert "alpha verify:" in terminal.getvalue() and "/3 [" in terminal.getvalue()
    assert pipe.getvalue() == ""


def test_ci_and_empty_work_draw_nothing(monkeypatch):
    monkeypatch.setenv("CI", "true")
    terminal = Terminal()
    with progress_bar(3, unit="entries", file=terminal) as bar:
        bar.update(3)
    monkeypatch.delenv("CI")
    with progress_bar(0, unit="entries", file=terminal) as bar:
        bar.update(0)
    assert terminal.getvalue() == ""


def test_verify_and_a_mirror_rebuild_count_every_entry(alpha, memory_root):
    for seq in range(1, 6):
        services.memory_entry_create(project=alpha.project, author="agent", category="note",
                                     content=f"entry {seq}")
    counted: list[int] = []
    assert services.memory_chain_verify(project=alpha.project, on_entry=counted.append).ok
    assert counted == [1] * 5
    counted.clear()
    mirror.rebuild(alpha.project, on_entry=counted.append)
    assert counted == [1] * 5
    assert mirror.check(alpha.project)


class Recorded:
    """A Progress that keeps every stage announced and every advance."""

    def __init__(self) -> None:
        self.stages: list[tuple[str, int, str]] = []
        self.advanced: dict[str, int] = {}

    def __call__(self, total: int, description: str, unit: str = "items") -> Any:
        self.stages.append((description, total, unit))
        self.advanced[description] = 0

        def advance(n: int) -> None:
            self.advanced[description] += n

        return advance


def test_ged_import_and_export_count_every_item_and_file(alpha, memory_root, tmp_path):
    root = write_tree(tmp_path / "src", migrated_checkout())
    recorded = Recorded()
    result = import_checkout(project=alpha.project, root=root, progress=recorded)
    items = sum(result.created.values()) + sum(result.unchanged.values())
    assert items > 10
    assert recorded.stages == [("import", items, "items")]
    assert recorded.advanced == {"import": items}

    # A second import of the same tree counts the same items, all unchanged.
    again = Recorded()
    second = import_checkout(project=alpha.project, root=root, progress=again)
    assert second.created == {} and again.stages == [("import", items, "items")]
    assert again.advanced == {"import": items}

    recorded = Recorded()
    exported = export_tree(project=alpha.project, root=tmp_path / "out", progress=recorded)
    assert len(exported.written) > 10
    assert recorded.stages == [("export", len(exported.written), "files")]
    assert recorded.advanced == {"export": len(exported.written)}
    # Nothing left to write: an empty stage, nothing advanced.
    recorded = Recorded()
    export_tree(project=alpha.project, root=tmp_path / "out", progress=recorded)
    assert recorded.stages == [("export", 0, "files")] and recorded.advanced == {"export": 0}


def test_the_commands_draw_nothing_in_a_pipe(alpha, memory_root, tmp_path, monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    root = write_tree(tmp_path / "src", migrated_checkout())
    for name, args in (("ged_import", [str(root), "--project", "alpha"]),
                       ("ged_export", ["--project", "alpha", str(tmp_path / "out")])):
        out, err = io.StringIO(), io.StringIO()
        call_command(name, *args, stdout=out, stderr=err)
        assert json.loads(out.getvalue())["root"]
        assert err.getvalue() == ""
