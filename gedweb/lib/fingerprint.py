"""GedPi's canonical record hash and the plan file-set fingerprint (§2.12)."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping


def record_digest(records: Iterable[tuple[str, str | bytes]]) -> str:
    """SHA-256 over length-prefixed (label, value) pairs, so ("a","bc") != ("ab","c")."""
    digest = hashlib.sha256()
    for label, value in records:
        label_bytes = label.encode("utf-8")
        value_bytes = value if isinstance(value, bytes) else value.encode("utf-8")
        digest.update(f"{len(label_bytes)}:".encode())
        digest.update(label_bytes)
        digest.update(f"{len(value_bytes)}:".encode())
        digest.update(value_bytes)
    return digest.hexdigest()


def file_set_fingerprint(files: Mapping[str, bytes]) -> dict[str, object]:
    """``{digest, paths}`` of repository-relative paths and their raw bytes."""
    paths = sorted(files)
    records: list[tuple[str, str | bytes]] = [("format", "ged-file-set-v1")]
    for path in paths:
        records.append(("path", path))
        records.append(("content", files[path]))
    return {"digest": record_digest(records), "paths": paths}
