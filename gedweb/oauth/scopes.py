"""What an OAuth grant allows: one project, one of three memory scopes, and who may grant which.

A token's scope string, as django-oauth-toolkit stores it, is
``"<memory scope> project:<id>"``. The consent page (gedweb/oauth/views.py)
writes it from what the person picked; the client's requested scope only
preselects the choice. Refresh tokens keep it (a refresh never widens scope).

The three scopes are cumulative:

- ``memory:read``: every read of the project (GET and HEAD);
- ``memory:propose``: that, and proposing or withdrawing memory candidates;
- ``memory:write``: every call a project token may make, memory writes
  included, past the memory write boundary (granted only by someone who
  showed the memory write token on the consent page, when one is set).

Who may grant which follows the team pages' roles: a viewer reads, so grants
``memory:read``; an operator (or a superuser) grants any of the three.
"""

from __future__ import annotations

from dataclasses import dataclass

from gedweb.lib.ids import PROJECT_ID_RE

READ, PROPOSE, WRITE = "memory:read", "memory:propose", "memory:write"
MEMORY_SCOPES = (READ, PROPOSE, WRITE)
PROJECT_PREFIX = "project:"
# What each scope includes.
INCLUDES = {READ: {READ}, PROPOSE: {READ, PROPOSE}, WRITE: {READ, PROPOSE, WRITE}}
# The highest scope each role may grant (see the module docstring).
ROLE_MAX = {"viewer": READ, "operator": WRITE, "superuser": WRITE}
# The challenge's scope (WWW-Authenticate) and the metadata's scopes_supported.
CHALLENGE_SCOPE = " ".join(MEMORY_SCOPES)


@dataclass(frozen=True)
class GrantScope:
    """A token's scope, read: its memory scope and its project."""

    memory: str
    project_id: str

    def allows(self, needed: str) -> bool:
        return needed in INCLUDES[self.memory]

    def as_string(self) -> str:
        return f"{self.memory} {PROJECT_PREFIX}{self.project_id}"


def parse(scope: str) -> GrantScope | None:
    """The grant a token's scope string names; None unless it is exactly one memory
    scope and one project (so DCR's registration tokens, or anything else the toolkit
    issues, authenticate nothing here)."""
    words = scope.split()
    memory = [word for word in words if word in MEMORY_SCOPES]
    projects = [word[len(PROJECT_PREFIX):] for word in words if word.startswith(PROJECT_PREFIX)]
    if len(words) != 2 or len(memory) != 1 or len(projects) != 1:
        return None
    if not PROJECT_ID_RE.fullmatch(projects[0]):
        return None
    return GrantScope(memory=memory[0], project_id=projects[0])


def is_known(word: str) -> bool:
    """A scope word the authorization server accepts: a memory scope or a project's."""
    if word in MEMORY_SCOPES:
        return True
    return word.startswith(PROJECT_PREFIX) and bool(
        PROJECT_ID_RE.fullmatch(word[len(PROJECT_PREFIX):])
    )


def grantable(role: str | None) -> tuple[str, ...]:
    """The memory scopes a person with ``role`` may grant, lowest first."""
    highest = ROLE_MAX.get(role or "")
    if highest is None:
        return ()
    return tuple(scope for scope in MEMORY_SCOPES if scope in INCLUDES[highest])
