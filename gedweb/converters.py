"""Path converters: a URL names an object only with a value of that object's shape.

A path value that cannot be an id (a NUL, a control character, hundreds of
characters, the wrong pattern) matches no route, so it is a 404 before any
view runs and before any query: PostgreSQL refuses a NUL in a text parameter
(psycopg.DataError), which would otherwise surface as a 500. Under /v1 the
catch-all then answers the JSON 404; on the team pages, Django's 404 page.

Two kinds:

- Identifiers the server issues or the caller only ever reads (project id,
  work id, entry ref, candidate id, revision and import numbers, task id,
  file names) use their own pattern: anything else names nothing.
- Names a PUT creates (skill name, document path) and opaque ids (pending
  mutation and commit ids, session ids) keep their own checks, so a
  malformed skill name or document path stays GedPi's 400 naming the field;
  the converter only keeps out what can never be one (control characters,
  more than 255 characters).

The id patterns are gedweb.lib.ids', the same text the services
validate with; tests/security/test_error_shapes.py checks that every valid
value still resolves.
"""

from __future__ import annotations

from django.urls import register_converter

from gedweb.lib import ids

# Printable text without a slash: Django's "str", minus C0 controls and DEL.
_TEXT = r"[^/\x00-\x1f\x7f]{1,255}"


class _Converter:
    regex: str

    def to_python(self, value: str) -> str:
        return value

    def to_url(self, value: str) -> str:
        return str(value)


class ProjectIdConverter(_Converter):
    regex = ids.PROJECT_ID


class WorkIdConverter(_Converter):
    regex = ids.WORK_ID


# A uuid, with or without hyphens (uuid.UUID reads both).
_UUID = r"[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}"


class EntryRefConverter(_Converter):
    # A seq (at most 18 digits: far beyond any log, inside a 64-bit integer)
    # or a uuid.
    regex = rf"(?:[0-9]{{1,18}}|{_UUID})"


class UuidConverter(_Converter):
    regex = _UUID


class NumberConverter(_Converter):
    """A revision or import number: at most 18 digits, so always a 64-bit integer."""

    regex = r"[0-9]{1,18}"

    def to_python(self, value: str) -> int:  # type: ignore[override]
        return int(value)


class StandardsImportIdConverter(_Converter):
    regex = ids.STANDARDS_IMPORT_ID


class TaskIdConverter(_Converter):
    regex = ids.TASK_ID


class FileNameConverter(_Converter):
    # The view names the set of files.
    regex = ids.FILE_NAME


class TextConverter(_Converter):
    """Skill names and pending ids: checked by their view, never a control character."""

    regex = _TEXT


class SessionIdConverter(_Converter):
    # An agent's session id: 1-256 characters (governance/api/views.py).
    regex = r"[^/\x00-\x1f\x7f]{1,256}"


class DocumentPathConverter(_Converter):
    """PROJECT.md, adr/<id>.md, ...: may hold slashes; the view checks the fixed set (400)."""

    regex = r"[^\x00-\x1f\x7f]{1,255}"


CONVERTERS = {
    "project": ProjectIdConverter,
    "work": WorkIdConverter,
    "ref": EntryRefConverter,
    "uuid_text": UuidConverter,
    "number": NumberConverter,
    "standards_import": StandardsImportIdConverter,
    "task": TaskIdConverter,
    "filename": FileNameConverter,
    "text": TextConverter,
    "session": SessionIdConverter,
    "docpath": DocumentPathConverter,
}


# At import, once per process: the URL modules import this one before
# naming a converter (Django refuses to register a name twice).
for _name, _converter in CONVERTERS.items():
    register_converter(_converter, _name)
