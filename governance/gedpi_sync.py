"""ged_import and ged_export over HTTP: a GedPi layout as a tar.gz (docs/interop.md, "Over HTTP").

The same services as the commands, on an archive instead of a directory:

- ``import_archive`` unpacks the upload (gedweb.checkout.archive: hostile input,
  bounded; only layout files, gedweb.checkout.sync.in_layout) into a private
  temporary directory that is always removed, and runs ``import_checkout`` on
  it: the same reads, checks, refusals and report. With ``dry_run`` the import
  runs to its end and its transaction is rolled back, so the report says what
  would be written and the database is as it was (the ledger's file is caught
  up only on commit, so it is untouched too).
- ``export_archive`` packs ``render_tree``: the bytes ``ged_export`` writes.

An upload never carries trust: ``import_checkout`` gets no ``trust``, so every
IMPORT-STATE.json decision in it arrives pending, as the command's without
``--trust-decisions`` (docs/interop.md, "The checkout's decisions are not
trusted"). Rows are written by ``author``, the uploading token's name, as every
API write is.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from django.db import transaction

from gedweb.checkout import archive, sync
from gedweb.errors import ArchiveRefused
from governance.gedpi_export import render_tree
from governance.gedpi_import import ImportResult, import_checkout
from memory.models import Project

# The name an upload's checkout has in refusals and the report when its sender
# gives none.
DEFAULT_SHOWN = "PATH"


class _DryRun(Exception):
    """Raised inside the import's outer transaction to roll it back."""

    def __init__(self, result: ImportResult) -> None:
        super().__init__("dry run")
        self.result = result


def import_archive(*, project: Project, data: bytes, author: str, dry_run: bool = False,
                   shown: str = DEFAULT_SHOWN) -> ImportResult:
    """ged_import of the checkout in ``data`` (a tar.gz of its layout); nothing on a refusal.

    The archive's limits are ``gedweb.checkout.sync.LIMITS`` (ged_import's own bounds).
    """
    with tempfile.TemporaryDirectory(prefix="gedweb-push-") as temp:
        root = Path(temp) / "checkout"
        root.mkdir(mode=0o700)
        try:
            archive.extract(data, root, sync.LIMITS, sync.in_layout)
        except archive.ArchiveError as exc:
            raise ArchiveRefused(str(exc)) from None
        if not dry_run:
            return import_checkout(project=project, root=root, shown=shown, author=author)
        try:
            with transaction.atomic():
                raise _DryRun(import_checkout(project=project, root=root, shown=shown,
                                              author=author))
        except _DryRun as done:
            return done.result


def export_archive(project: Project) -> bytes:
    """The project's GedPi layout as ged_export writes it, as a tar.gz."""
    files = render_tree(project)
    # One rule for both ends: what a pull will take is what ged_export writes.
    foreign = [rel for rel in files if not sync.is_export_path(rel)]
    if foreign:
        raise AssertionError(f"render_tree wrote {foreign[0]}, which is_export_path refuses")
    return archive.pack(files)
