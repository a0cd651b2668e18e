"""Reading the checkout as GedPi does: through safefs, GedPi's walks and their order."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from gedweb.checkout import safefs
from gedweb.checkout.safefs import READ
from gedweb.checkout.v3.texts import collation_key


def lstat(root: Path, rel: str) -> os.stat_result | None:
    try:
        return os.lstat(safefs.check(root, rel))
    except (FileNotFoundError, NotADirectoryError):
        return None


def is_real_dir(root: Path, rel: str) -> bool:
    info = lstat(root, rel)
    return info is not None and stat.S_ISDIR(info.st_mode)


def read(root: Path, rel: str) -> bytes | None:
    try:
        return safefs.read_bytes(root, rel)
    except NotADirectoryError:
        return None


def gedpi_walk(root: Path, rel_dir: str) -> list[str]:
    """GedPi's ``walkRegularFiles``: depth first, each level in localeCompare order.

    Symlinks and special files are skipped (a Dirent that is neither a file nor a
    directory); a missing or unreadable directory yields nothing. The directory
    itself is checked for symlinks on the way first.
    """
    safefs.check(root, rel_dir, READ)
    if not is_real_dir(root, rel_dir):
        return []
    found: list[str] = []
    entries = sorted(os.scandir(Path(root) / rel_dir), key=lambda e: collation_key(e.name))
    for entry in entries:
        rel = f"{rel_dir}/{entry.name}"
        mode = entry.stat(follow_symlinks=False).st_mode
        if stat.S_ISDIR(mode):
            found.extend(gedpi_walk(root, rel))
        elif stat.S_ISREG(mode):
            found.append(rel)
    return found


def top_level(root: Path, rel_dir: str) -> tuple[list[str], list[str]]:
    """Regular files and real subdirectories directly in ``rel_dir`` (JS ``sort()``)."""
    safefs.check(root, rel_dir, READ)
    if not is_real_dir(root, rel_dir):
        return [], []
    files: list[str] = []
    dirs: list[str] = []
    for entry in os.scandir(Path(root) / rel_dir):
        mode = entry.stat(follow_symlinks=False).st_mode
        if stat.S_ISREG(mode):
            files.append(entry.name)
        elif stat.S_ISDIR(mode):
            dirs.append(entry.name)
    return sorted(files), sorted(dirs)
