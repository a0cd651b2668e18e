"""Entry bodies shared by the seeder and the HTTP clients of the benchmark.

Content is built from made-up words (consonant-vowel syllables), so the two
search marker words below occur exactly where the workload puts them:
COMMON_WORD in about one entry in ten, RARE_WORD in about one in a thousand.
"""

from __future__ import annotations

import random
from typing import Any

COMMON_WORD = "kestrel"
RARE_WORD = "quetzal"
COMMON_EVERY = 10
RARE_EVERY = 1000

CATEGORIES = ("decision", "fact", "note", "observation", "todo")
SOURCE = "bench"

_CONSONANTS = "bdfgklmnprstvz"
_VOWELS = "aeiou"


def _vocabulary() -> list[str]:
    rng = random.Random(20261130)
    syllables = [c + v for c in _CONSONANTS for v in _VOWELS]
    words = sorted({"".join(rng.choice(syllables) for _ in range(rng.randint(2, 4)))
                    for _ in range(600)})
    assert COMMON_WORD not in words and RARE_WORD not in words
    return words


VOCABULARY = _vocabulary()


def content_for(rng: random.Random, *, common: bool, rare: bool, words: int = 40) -> str:
    """About 250 bytes of text in two short paragraphs."""
    picked = rng.choices(VOCABULARY, k=words)
    if common:
        picked[rng.randrange(words)] = COMMON_WORD
    if rare:
        picked[rng.randrange(words)] = RARE_WORD
    half = words // 2
    return " ".join(picked[:half]).capitalize() + ".\n\n" + " ".join(picked[half:]) + "."


def seeded_fields(seq: int) -> dict[str, Any]:
    """Deterministic fields of the seeded entry with this seq."""
    rng = random.Random(seq)
    return {
        "category": CATEGORIES[seq % len(CATEGORIES)],
        "content": content_for(
            rng, common=seq % COMMON_EVERY == 0, rare=seq % RARE_EVERY == 0
        ),
        "source": SOURCE,
    }


def request_body(rng: random.Random) -> dict[str, Any]:
    """A POST /memory body with the same word distribution as the seed."""
    return {
        "category": rng.choice(CATEGORIES),
        "content": content_for(
            rng,
            common=rng.randrange(COMMON_EVERY) == 0,
            rare=rng.randrange(RARE_EVERY) == 0,
        ),
        "source": SOURCE,
    }
