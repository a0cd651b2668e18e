"""The checkpoint import's refusals: GedPi's error codes."""

from __future__ import annotations

UNSAFE_LAYOUT = "unsafe-layout"
SOURCE_DRIFT = "source-drift"
ARTIFACT_CONFLICT = "artifact-conflict"
INVALID_JOURNAL = "invalid-journal"
INTEGRITY_FAILURE = "integrity-failure"
ERROR_CODES = (UNSAFE_LAYOUT, SOURCE_DRIFT, ARTIFACT_CONFLICT, INVALID_JOURNAL, INTEGRITY_FAILURE)


class CheckpointError(Exception):
    """The legacy checkpoint step refused to continue; nothing unsafe was written."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"
