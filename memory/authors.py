"""Who an ``author`` string names, in words a reader understands.

Every write records its author as a short string (MemoryEntry.author and the
other models' ``author``): a project token's name for the API and MCP (the
token every project starts with is called "default"), ``admin`` for the admin
token, ``user:<name>`` for a person signed in to the admin or the pages,
``cli`` for manage.py commands and ``ged_import:<checkout>`` for an import.
Token names cannot contain ':' (memory.validators), so the prefixes cannot be
forged by naming a token. The pages show the description, never the bare
string: "default" on every entry told nobody who wrote it.
"""

from __future__ import annotations

from dataclasses import dataclass

from memory.api.authentication import ADMIN_AUTHOR
from memory.services import CLI_AUTHOR

USER_PREFIX = "user:"
IMPORT_PREFIX = "ged_import:"
TRUSTED_PREFIX = "ged_import:trusted-by:"


@dataclass(frozen=True)
class Author:
    """An author as the pages show it: the name, and what kind of writer it is."""

    raw: str
    kind: str  # "person", "token", "admin", "command", "import"
    name: str

    @property
    def text(self) -> str:
        """One phrase: who wrote it and through what."""
        if self.kind == "person":
            return self.name
        if self.kind == "token":
            return f"token “{self.name}”"
        if self.kind == "admin":
            return "the admin token"
        if self.kind == "command":
            return "a manage.py command"
        return f"import of {self.name}"

    @property
    def via(self) -> str:
        """What the name is, for a title attribute: how this author writes."""
        return {
            "person": "a person signed in to the pages or the admin",
            "token": "an agent or client using this project token (API, MCP, CLI)",
            "admin": "a request made with the server's admin token",
            "command": "an operator running manage.py on the server",
            "import": "ged_import, bringing a GedPi checkout's records in",
        }[self.kind]


def describe(author: str) -> Author:
    """The one reading of an author string: every page and the admin call this."""
    if author.startswith(USER_PREFIX):
        return Author(author, "person", author[len(USER_PREFIX):])
    if author.startswith(TRUSTED_PREFIX):
        return Author(author, "person", author[len(TRUSTED_PREFIX):])
    if author.startswith(IMPORT_PREFIX):
        return Author(author, "import", author[len(IMPORT_PREFIX):])
    if author == ADMIN_AUTHOR:
        return Author(author, "admin", author)
    if author == CLI_AUTHOR:
        return Author(author, "command", author)
    return Author(author, "token", author)
