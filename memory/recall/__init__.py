"""Recall: entries ranked by how well they answer a question (docs/recall.md).

vectors.py (the vector index and each process's matrix), indexer.py (the
follower that makes vectors off the append's path), keyword.py (the keyword
ranking on the full-text indexes), ranking.py (both, and their blend). Every
face calls memory.selectors.entry_recall.
"""
