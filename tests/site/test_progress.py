"""Progress on a terminal, quiet in pipes and CI (issue 36 §8)."""

from __future__ import annotations

import io

from gedweb.progress import progress_bar
from memory import mirror, services


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
