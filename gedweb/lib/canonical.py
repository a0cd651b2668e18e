"""Canonical JSON: the one byte form used for hashing and comparing bodies."""

from __future__ import annotations

import json
from typing import Any


def canonical_json(value: Any) -> str:
    """Sorted keys, no spaces, non-ASCII kept: equal data gives equal text."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)

