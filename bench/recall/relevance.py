"""The prompt hook's relevance floor, measured (docs/agents.md, "Relevance").

`gedweb hook prompt` adds the entries recalled for a prompt only when one is
relevant enough: its cosine with the prompt, under the installation's model,
is at least the model's floor (governance/context.py, RELEVANCE_FLOORS).
This script measures that rule on the evaluation sets of bench/recall/sets/
(FORMAT.md), with no server and no database: every entry and query is
embedded by the model itself, as the indexer and recall embed them.

- **answerable** prompts: each set's own queries against its own entries;
  the prompt is served when a relevant entry's cosine reaches the floor.
- **unanswerable** prompts: every other set's queries against this set's
  entries (a question about a fictional web shop asked of two friends'
  chat, and so on); the prompt gets nothing when no entry reaches the floor.

For each floor it prints the share of answerable prompts that keep an
answer and the share of unanswerable ones that stay silent, and the floor
the hook uses: the highest at which at least 90 % of answerable prompts
keep their answer (a missed memory costs the agent a tool call; a wrong
one costs every prompt's context).

    .venv/bin/python bench/recall/relevance.py [--model minilm|hashing] [--write]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
SETS = Path(__file__).resolve().parent / "sets"
RESULTS = ROOT / "bench" / "results"
KEEP_ANSWERABLE = 0.90

sys.path.insert(0, str(ROOT))

from gedweb.embedding import get_embedder  # noqa: E402


def _load() -> list[dict[str, Any]]:
    return [json.loads(path.read_text()) for path in sorted(SETS.glob("*.json"))]


def measure(model: str) -> dict[str, Any]:
    embedder = get_embedder(model)
    sets = _load()
    vectors = {}
    for data in sets:
        entries = embedder.embed([entry["content"] for entry in data["entries"]])
        queries = embedder.embed([query["q"] for query in data["queries"]])
        vectors[data["name"]] = (np.asarray(entries, np.float32), np.asarray(queries, np.float32))
    answerable: list[float] = []
    unanswerable: list[float] = []
    for data in sets:
        entries, queries = vectors[data["name"]]
        keys = {entry["key"]: row for row, entry in enumerate(data["entries"])}
        scores = queries @ entries.T
        for row, query in enumerate(data["queries"]):
            answerable.append(max(float(scores[row, keys[key]]) for key in query["relevant"]))
        for other in sets:
            if other["name"] == data["name"]:
                continue
            other_queries = vectors[other["name"]][1]
            unanswerable += [float(value) for value in (other_queries @ entries.T).max(axis=1)]
    answered = np.array(answerable)
    silent = np.array(unanswerable)
    floors = [round(value / 100, 2) for value in range(5, 80)]
    table = [{"floor": floor,
              "answerable_kept": round(float((answered >= floor).mean()), 3),
              "unanswerable_silent": round(float((silent < floor).mean()), 3)}
             for floor in floors]
    chosen = max(row["floor"] for row in table if row["answerable_kept"] >= KEEP_ANSWERABLE)
    return {"model": embedder.model_id, "answerable": len(answerable),
            "unanswerable": len(unanswerable), "keep_answerable": KEEP_ANSWERABLE,
            "chosen_floor": chosen, "table": table}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--model", choices=("minilm", "hashing"), default="minilm")
    parser.add_argument("--write", action="store_true",
                        help="also write bench/results/relevance-<model>.json")
    args = parser.parse_args()
    result = measure(args.model)
    print(f"{result['model']}: {result['answerable']} answerable prompts, "
          f"{result['unanswerable']} unanswerable")
    print("floor  answerable kept  unanswerable silent")
    for row in result["table"]:
        if round(row["floor"] * 100) % 5 and row["floor"] != result["chosen_floor"]:
            continue
        mark = "  <- chosen" if row["floor"] == result["chosen_floor"] else ""
        print(f"{row['floor']:5.2f}  {row['answerable_kept']:15.3f}  "
              f"{row['unanswerable_silent']:19.3f}{mark}")
    if args.write:
        RESULTS.mkdir(exist_ok=True)
        path = RESULTS / f"relevance-{args.model}.json"
        path.write_text(json.dumps({**result, "command":
                                    f"bench/recall/relevance.py --model {args.model} --write"},
                                   indent=2) + "\n")
        print(f"written: {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
