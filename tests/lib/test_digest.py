"""The one SHA-256 of a text: raw UTF-8 bytes, no normalisation."""

from __future__ import annotations

from gedweb.lib.digest import sha256_text


def test_it_is_the_hex_sha256_of_the_utf8_bytes():
    assert sha256_text("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    assert sha256_text("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"


def test_non_ascii_text_is_hashed_as_utf8():
    # "é" is the two bytes c3 a9 in UTF-8.
    assert sha256_text("é") == "4a99557e4033c3539de2eb65472017cad5f9557f7a0625a09f1c3f6e2ba69c4c"


def test_line_endings_and_a_bom_count():
    assert sha256_text("a\r\n") != sha256_text("a\n")
    assert sha256_text("\ufeffa") != sha256_text("a")
