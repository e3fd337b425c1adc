"""A toy task for smoke tests of training: 4x4 sudoku, made here in a second.

Every valid 4x4 grid (there are 288), validation grids held out of training, and givens removed
at random while the solution stays unique. Its vocabulary is a small one of its own (pad,
blank, given 1-4, digit 1-4), laid out like the ppbench family's sudoku tokens (givens keep
their token in the label, entered digits get digit tokens). Tokens only: `ptrm train`
validates on it; `ptrm eval` and `ptrm solve` need a codec family's dataset (build-data).

    python -m ptrm_cli.engine.sudoku4 data/sudoku4     # then: ptrm train examples/configs/tiny-cpu.yaml
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from ..vocab import Vocab
from .data import Split, write_dataset

VOCAB = Vocab("sudoku4", ("pad", "blank") + tuple(f"given.{d}" for d in range(1, 5))
              + tuple(f"digit.{d}" for d in range(1, 5)))


def sudoku4_grids() -> np.ndarray:
    """All 288 valid 4x4 sudoku grids, [288, 16] digits 1..4, by backtracking."""
    out, g = [], np.zeros(16, np.int64)

    def ok(i, d):
        r, c = divmod(i, 4)
        br, bc = r // 2 * 2, c // 2 * 2
        box = [g[(br + a) * 4 + bc + b] for a in range(2) for b in range(2)]
        return d not in g[r * 4:r * 4 + 4] and d not in g[c::4] and d not in box

    def fill(i):
        if i == 16:
            out.append(g.copy())
            return
        for d in range(1, 5):
            if ok(i, d):
                g[i] = d
                fill(i + 1)
                g[i] = 0

    fill(0)
    return np.array(out)


def sudoku4_split(grids, all_grids, n, rng, blanks=(2, 6)) -> Split:
    """n puzzles with a unique solution: givens removed in random order while unique."""
    inputs, labels = [], []
    for _ in range(n):
        g = grids[rng.integers(len(grids))]
        given = np.ones(16, bool)
        target = rng.integers(blanks[0], blanks[1] + 1)
        for cell in rng.permutation(16):
            if (~given).sum() >= target:
                break
            given[cell] = False
            if (all_grids[:, given] == g[given]).all(1).sum() != 1:
                given[cell] = True
        inputs.append(np.where(given, 1 + g, 1))      # blank = 1, given d = 1 + d
        labels.append(np.where(given, 1 + g, 5 + g))  # givens keep their token, digits 6..9
    return Split(inputs=np.array(inputs, np.uint16), labels=np.array(labels, np.uint16),
                 type=np.zeros(n, np.uint8), puzzle=np.arange(n, dtype=np.int32),
                 transform=np.zeros(n, np.uint8), puzzle_id=np.zeros(n, np.int32))


def write_sudoku4(path: Path, n_train=2000, n_val=256, seed=0) -> Path:
    rng = np.random.default_rng(seed)
    grids = sudoku4_grids()
    assert len(grids) == 288
    perm = rng.permutation(len(grids))
    train_grids, val_grids = grids[perm[:240]], grids[perm[240:]]  # validation grids unseen
    return write_dataset(path, vocab=VOCAB, seq_len=16, types=["sudoku"], splits={
        "train": sudoku4_split(train_grids, grids, n_train, rng),
        "val": sudoku4_split(val_grids, grids, n_val, rng)})


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1 or args[0].startswith("-"):
        print("usage: python -m ptrm_cli.engine.sudoku4 OUT_DIR", file=sys.stderr)
        return 2
    out = write_sudoku4(Path(args[0]))
    print(f"wrote {out} (4x4 sudoku: 2,000 training and 256 validation puzzles)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
