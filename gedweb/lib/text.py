"""The one rule for stored text: no NUL, not blank, valid Unicode.

Every writer of text a person or an agent supplies (memory entries,
documents and their reasons, standards imports, skills) asks this rule,
whichever path it comes by (API, admin, commands, imports), so they refuse
the same values with the same words. PostgreSQL refuses a NUL in a text
value (a 500 where it is not caught first); a lone surrogate (JSON allows
``"\\ud800"``) cannot be encoded as UTF-8, so it could be neither stored
nor hashed. Size bounds differ per field and stay with each field's
validator.
"""

from __future__ import annotations

NUL_MESSAGE = "must not contain NUL characters"
BLANK_MESSAGE = "must not be blank"
SURROGATE_MESSAGE = "must be valid Unicode text (no lone surrogates)"


def is_valid_unicode(text: str) -> bool:
    """True unless text holds a lone surrogate, which UTF-8 cannot encode."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def text_problem(
    value: str, *, blank_allowed: bool = False, blank_message: str = BLANK_MESSAGE
) -> str | None:
    """What is wrong with value as stored text, or None; checked in the order NUL, blank, Unicode.

    blank_allowed is for text whose own rule already refuses an empty value
    in its words (a document must be substantive). blank_message lets a field
    add what to do instead ("omit it instead" for an optional reason).
    """
    if "\x00" in value:
        return NUL_MESSAGE
    if not blank_allowed and not value.strip():
        return blank_message
    if not is_valid_unicode(value):
        return SURROGATE_MESSAGE
    return None
