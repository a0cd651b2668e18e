"""The vector index: entries' vectors in the database, and each process's matrix of a project.

Vectors are derived data (docs/recall.md): made by the indexer from an
entry's content, stored one row per entry (EntryVector) as int8 with a
scale, never part of the chain, removed with the content by a redaction.

Each process keeps, per project and model, a matrix of the project's vectors
and extends it by seq, since the record only grows: a recall reads only the
vectors appended since the last one. It drops the matrix when the project's
``generation`` moved (a redaction or a rebuild removed vectors), and reloads
it whole while the project is being backfilled out of seq order.
"""

from __future__ import annotations

import itertools
import threading
from collections import OrderedDict
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import numpy.typing as npt
from django.conf import settings
from django.db import connection, transaction
from django.db.models import F

from gedweb.embedding import Embedder, Vectors, get_embedder
from memory.models import EntryVector, MemoryEntry, Project, RecallProgress

# Rows scored at once: an int8 block is widened to float32 for the product,
# so a block costs 4 x 384 x this many bytes while it is scored.
_BLOCK_ROWS = 32_768
# Stored vectors read from the database at once while a matrix loads.
_LOAD_ROWS = 10_000
# Projects whose matrix a process keeps, least recently recalled dropped first.
_CACHED_PROJECTS = 64


def embedder() -> Embedder:
    """The installation's embedder (GEDWEB_RECALL_MODEL)."""
    return get_embedder(settings.RECALL_MODEL)


def quantise(rows: Vectors) -> list[tuple[bytes, float]]:
    """Each unit vector as int8 bytes and the scale that restores it (component = byte x scale)."""
    peaks = np.abs(rows).max(axis=1)
    scales = np.where(peaks > 0, peaks / 127.0, 1.0).astype(np.float32)
    quantised = np.rint(rows / scales[:, None]).clip(-127, 127).astype(np.int8)
    return [(quantised[i].tobytes(), float(scales[i])) for i in range(len(rows))]


def dequantise(vector: bytes, scale: float) -> Vectors:
    return np.frombuffer(vector, dtype=np.int8).astype(np.float32) * np.float32(scale)


@dataclass
class Matrix:
    """A project's vectors in one model, in seq order; rows past ``size`` are spare capacity.

    Extending writes into the spare rows and returns a new Matrix of a larger
    size over the same arrays, so a thread still scoring the old one reads
    rows that never change; when the capacity runs out, the arrays double.
    """

    model: str
    # (RecallProgress pk, its generation) when loaded: either moving drops it.
    stamp: tuple[int, int]
    size: int
    ids: npt.NDArray[np.int64]
    seqs: npt.NDArray[np.int64]
    vectors: npt.NDArray[Any]  # int8 rows; packed signs (uint8) when compact
    scales: npt.NDArray[np.float32]
    # Vectors past the project's through_seq were loaded: rows may still
    # arrive below them, so the next recall reloads the matrix whole.
    gapped: bool = False
    # A project of more than GEDWEB_RECALL_EXACT_ROWS entries keeps each
    # vector's signs only (1 bit a dimension, ``vectors`` then holds the
    # packed bits): 48 bytes an entry for the model's 384 dimensions instead
    # of 384, so a million entries take about 70 MB a worker. Its recall
    # shortlists by Hamming distance and scores the shortlist exactly from
    # the stored vectors (memory.recall.ranking).
    compact: bool = False

    @classmethod
    def empty(cls, model: str, stamp: tuple[int, int], dimension: int) -> Matrix:
        return cls(model, stamp, 0, np.zeros(0, np.int64), np.zeros(0, np.int64),
                   np.zeros((0, dimension), np.int8), np.zeros(0, np.float32))

    def compacted(self) -> Matrix:
        """The same rows, signs only (see ``compact``)."""
        if self.compact:
            return self
        bits = np.zeros((len(self.ids), -(-self.vectors.shape[1] // 8)), np.uint8)
        bits[: self.size] = np.packbits(self.vectors[: self.size] > 0, axis=1)
        return Matrix(self.model, self.stamp, self.size, self.ids, self.seqs, bits,
                      self.scales, self.gapped, compact=True)

    @property
    def last_seq(self) -> int:
        return int(self.seqs[self.size - 1]) if self.size else 0

    def extended(self, rows: list[tuple[int, int, bytes, float]], gapped: bool,
                 reserve: int = 0) -> Matrix:
        """These rows appended (in seq order); room made for ``reserve`` rows in all, at least."""
        if not rows:
            return Matrix(self.model, self.stamp, self.size, self.ids, self.seqs,
                          self.vectors, self.scales, gapped, self.compact)
        size = self.size + len(rows)
        ids, seqs, vectors, scales = self.ids, self.seqs, self.vectors, self.scales
        if size > len(ids):
            capacity = max(size, reserve, 2 * len(ids), 256)
            ids, seqs = np.resize(ids, capacity), np.resize(seqs, capacity)
            scales = np.resize(scales, capacity)
            grown = np.zeros((capacity, vectors.shape[1]), vectors.dtype)
            grown[: self.size] = vectors[: self.size]
            vectors = grown
        ids[self.size:size] = [row[0] for row in rows]
        seqs[self.size:size] = [row[1] for row in rows]
        scales[self.size:size] = [row[3] for row in rows]
        block = np.frombuffer(b"".join(row[2] for row in rows), np.int8).reshape(len(rows), -1)
        vectors[self.size:size] = np.packbits(block > 0, axis=1) if self.compact else block
        return Matrix(self.model, self.stamp, size, ids, seqs, vectors, scales, gapped,
                      self.compact)

    def scores(self, query: Vectors) -> npt.NDArray[np.float32]:
        """Every row's cosine with a unit query vector; compact: an estimate that orders alike.

        A compact row's estimate is cos(pi x Hamming distance / dimensions)
        between its signs and the query's, the angle that many differing
        signs suggest.
        """
        if self.compact:
            signs = np.packbits(query > 0)
            dimensions = len(query)
            # Eight bytes of signs at a time where the row allows it, summed
            # column by column: a third of the time of summing each row's
            # byte counts. The cosine of each possible distance is looked up.
            word = np.uint64 if signs.nbytes % 8 == 0 else np.uint8
            signs = signs.view(word)
            cosines = np.cos(np.pi * np.arange(dimensions + 1) / dimensions).astype(np.float32)
            out = np.empty(self.size, np.float32)
            for start in range(0, self.size, _BLOCK_ROWS):
                stop = min(start + _BLOCK_ROWS, self.size)
                block = self.vectors[start:stop].view(word)
                differ = np.zeros(stop - start, np.int32)
                for column in range(block.shape[1]):
                    differ += np.bitwise_count(block[:, column] ^ signs[column])
                out[start:stop] = cosines[differ]
            return out
        out = np.empty(self.size, np.float32)
        for start in range(0, self.size, _BLOCK_ROWS):
            stop = min(start + _BLOCK_ROWS, self.size)
            out[start:stop] = self.vectors[start:stop].astype(np.float32) @ query
        return out * self.scales[: self.size]


_matrices: OrderedDict[tuple[str, str], Matrix] = OrderedDict()
_matrices_lock = threading.Lock()


def forget_cached() -> None:
    """Drop every cached matrix of this process (tests; a settings change)."""
    with _matrices_lock:
        _matrices.clear()


def project_matrix(project: Project, model: str, dimension: int,
                   progress: RecallProgress | None) -> Matrix:
    """The project's matrix in this process, brought up to the stored vectors."""
    stamp = (progress.pk, progress.generation) if progress is not None else (0, 0)
    through_seq = progress.through_seq if progress is not None else 0
    key = (project.pk, model)
    with _matrices_lock:
        matrix = _matrices.get(key)
    if matrix is None or matrix.stamp != stamp or matrix.gapped:
        matrix = Matrix.empty(model, stamp, dimension)
    # The rows still to come, as far as the progress row knows: past the
    # exact limit the matrix keeps signs before it reads them, and it reads
    # them a chunk at a time, so a million vectors never sit in memory whole.
    expected = matrix.size + max(0, through_seq - matrix.last_seq)
    if expected > settings.RECALL_EXACT_ROWS:
        matrix = matrix.compacted()
    stored = (EntryVector.objects.filter(project=project, model=model, seq__gt=matrix.last_seq)
              .order_by("seq").values_list("entry_id", "seq", "vector", "scale")
              .iterator(chunk_size=_LOAD_ROWS))
    for chunk in itertools.batched(stored, _LOAD_ROWS):
        matrix = matrix.extended([(entry_id, seq, bytes(vector), scale)
                                  for entry_id, seq, vector, scale in chunk],
                                 gapped=False, reserve=expected)
    matrix = replace(matrix, gapped=matrix.last_seq > through_seq)
    if matrix.size > settings.RECALL_EXACT_ROWS:
        matrix = matrix.compacted()
    with _matrices_lock:
        _matrices[key] = matrix
        _matrices.move_to_end(key)
        while len(_matrices) > _CACHED_PROJECTS:
            _matrices.popitem(last=False)
    return matrix


def exact_scores(entry_ids: list[int], query: Vectors) -> dict[int, float]:
    """The exact cosines of these entries' stored vectors with the query (a compact matrix's).

    Read by primary key, 1,000 at a time, and scored in one product.
    """
    found: dict[int, float] = {}
    table = EntryVector._meta.db_table
    for start in range(0, len(entry_ids), 1000):
        chunk = entry_ids[start:start + 1000]
        with connection.cursor() as cursor:
            # The table's name and one placeholder per id; the ids are parameters.
            cursor.execute(f"SELECT entry_id, vector, scale FROM {table}"  # nosec B608
                           f" WHERE entry_id IN ({', '.join(['%s'] * len(chunk))})", chunk)
            rows = cursor.fetchall()
        if not rows:
            continue
        block = np.frombuffer(b"".join(bytes(row[1]) for row in rows), np.int8)
        cosines = (block.reshape(len(rows), -1).astype(np.float32) @ query
                   * np.array([row[2] for row in rows], np.float32))
        found.update(zip((int(row[0]) for row in rows), cosines.tolist(), strict=True))
    return found


def progress_of(project: Project, model: str) -> RecallProgress | None:
    return RecallProgress.objects.filter(project=project, model=model).first()


def forget_entry(entry: MemoryEntry) -> int:
    """Delete the entry's vector and move its project's generation; inside the caller's transaction.

    A redaction calls this after it replaced the content, in its own
    transaction: every process's matrix of the project is dropped at its
    next recall. Returns how many vectors were deleted (0 or 1).
    """
    if not transaction.get_connection().in_atomic_block:
        raise RuntimeError("forget_entry runs inside the redaction's transaction")
    deleted, _ = EntryVector.objects.filter(entry=entry).delete()
    RecallProgress.objects.filter(project_id=entry.project_id).update(
        generation=F("generation") + 1)
    return deleted


def vector_of(entry: MemoryEntry) -> dict[str, Any] | None:
    """The stored vector row of an entry, for doctor and the tests."""
    row = (EntryVector.objects.filter(entry=entry)
           .values("model", "content_sha256", "seq", "vector", "scale").first())
    return dict(row) if row is not None else None
