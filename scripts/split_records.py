"""A built dataset's split as ptrm records (one JSON line each), for `ptrm build-data` to read.

A later build keeps an earlier one's validation split with `--val-from OLD`, which needs those
puzzles among its sources. When a source file is dropped (stage 4 drops the old generator's
sudoku, docs/GENERATORS.md "Sudoku grids"), its validation puzzles come back as their own file:

    python3 scripts/split_records.py data/ppbench-val val sudoku data/gen4/sudoku_val_stage1.jsonl

Each record is `{"type", "url", "answer", "id", "source"}` from the split's puzzles.jsonl and is
checked by the codec's rules before it is written.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from ptrm_cli import codec as registry


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dataset", type=Path, help="a `ptrm build-data` folder (or one holding "
                                               "SPLIT/puzzles.jsonl)")
    ap.add_argument("split", help="val, test, golden, ...")
    ap.add_argument("type", help="the puzzle type to write (e.g. sudoku)")
    ap.add_argument("out", type=Path)
    a = ap.parse_args()
    codec = registry.get(a.type)
    rows = [json.loads(line) for line in (a.dataset / a.split / "puzzles.jsonl").open()]
    out = []
    if any("answer" not in r for r in rows):
        raise SystemExit(f"{a.dataset}/{a.split}/puzzles.jsonl holds no answers (a split that "
                         "`ptrm build-data` wrote does)")
    for i, row in enumerate(r for r in rows if r["type"] == a.type):
        rec = {"type": a.type, "url": row["text"], "answer": row["answer"],
               "id": f"{a.dataset.name}-{a.split}-{a.type}-{i:04d}",
               "source": f"{a.dataset}/{a.split}"}
        puzzle, solution = codec.from_record(rec)
        if codec.verify(puzzle, solution):
            raise SystemExit(f"{a.dataset}/{a.split}: {a.type} puzzle {i} breaks the rules")
        out.append(json.dumps(rec, separators=(",", ":")))
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text("".join(line + "\n" for line in out))
    print(f"wrote {len(out)} {a.type} record(s) to {a.out}")


if __name__ == "__main__":
    main()
