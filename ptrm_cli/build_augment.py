"""Augment: each puzzle of a split -> its rows of tokens (inputs, labels, transforms).

Two recipes (`--augmentation`, build_options.AUGMENTATIONS), each a worker task that build.py
maps over a split's puzzles in processes (build_pool.pmap):

    augment_task           dihedral: row 0 the original (t = 0, empty grid), rows 1.. a random
                           prefix of the required moves under a random dihedral transform
    augment_sudoku_task    sudoku-trm: row 0 the original, rows 1.. one random element of the
                           sudoku group each (TRM's shuffle_sudoku, sudoku_aug.py)

A puzzle's draws come from a generator keyed by (seed, canonical key), so its rows do not
depend on which process makes them or in what order. `SplitBuilder` then collects one split's
rows into preallocated arrays. Validation and golden puzzles go through the same tasks with
n = 1 (the original only).

Most of this file is the dihedral fast path (`_Views`): for codecs that encode one cell at a
time, each puzzle is encoded once per distinct transform and every row is a numpy copy with
the first k required cells written in. It is checked against the codec's own API on the first
puzzle of each type in each process, and the slow path is used if they differ.
"""

from __future__ import annotations

import hashlib
from functools import lru_cache

import numpy as np

from . import codec as registry
from . import dihedral, sudoku_aug
from .build_decode import Entry
from .build_options import SourceFile
from .codec import Codec, Family, Puzzle, Solution
from .engine.data import Split
from .errors import PtrmError


def _rng(seed: int, key: str) -> np.random.Generator:
    """A puzzle's own generator, keyed by (seed, its canonical key): its rows are the same
    whichever process draws them and in whatever order."""
    words = np.frombuffer(hashlib.sha256(key.encode()).digest()[:16], dtype="<u4")
    return np.random.default_rng(np.random.SeedSequence([seed & 0xFFFFFFFF, *words.tolist()]))


def _cell_local(codec: Codec) -> bool:
    """True when the codec encodes like GridCodec, one cell at a time: the input token of a cell
    is `input_token(puzzle, r, c, state value)`, so a trajectory input is the empty input with
    the filled cells' tokens put in, and it keeps the default prefix trajectory. (The fast path
    also assumes that a transform maps each cell's value on its own, so a transformed partial
    state is the transformed solution restricted to the moved cells; `_Views` checks this on the
    first puzzle of each type in each process and falls back to the codec's API if not.)"""
    try:
        from ptrm_codecs.common import GridCodec
    except ImportError:
        return False
    t = type(codec)
    return (isinstance(codec, GridCodec) and t.encode is GridCodec.encode
            and t.encode_label is GridCodec.encode_label and t._tokens is GridCodec._tokens
            and t.trajectory is Codec.trajectory)


@lru_cache(maxsize=64)
def _positions(rows: int, cols: int, t: int, family_cols: int) -> np.ndarray:
    """pos[cell] = family-grid flat position of puzzle cell `cell` (row-major) after t."""
    moved = dihedral.apply(np.arange(rows * cols).reshape(rows, cols), t)
    rr, cc = np.indices(moved.shape)
    pos = np.empty(rows * cols, dtype=np.int64)
    pos[moved.reshape(-1)] = (rr * family_cols + cc).reshape(-1)
    return pos


#: per process: type -> whether the fast path matched the codec's own API on a first puzzle
_FAST_OK: dict[str, bool] = {}


class _Views:
    """One puzzle's examples. Per transform t (cached): the transformed puzzle and solution,
    the empty input and the label; on the fast path also the family positions of the required
    cells (in trajectory order) after t and their filled-in input tokens, so an example with k
    moves is `empty` with the first k of those written in (numpy, no per-example encode)."""

    def __init__(self, codec: Codec, family: Family, puzzle: Puzzle, solution: Solution,
                 required: list[tuple[int, int]], fast: bool):
        self.codec, self.family, self.puzzle, self.solution = codec, family, puzzle, solution
        self.required, self.fast = required, fast
        self.req_flat = np.array([r * puzzle.cols + c for r, c in required], dtype=np.int64)
        self.cache: dict[int, tuple] = {}

    def _tokens(self, puzzle: Puzzle, fn, grid: list | None) -> np.ndarray:
        """GridCodec._tokens without its per-cell overhead: the same token ids."""
        vid, fc, empty = self.family.vocab.id, self.family.cols, self.codec.EMPTY
        out = [0] * self.family.seq_len
        for r in range(puzzle.rows):
            row, base = (grid[r] if grid is not None else None), r * fc
            for c in range(puzzle.cols):
                out[base + c] = vid(fn(puzzle, r, c, empty if row is None else row[c]))
        return np.array(out, dtype=np.uint16)

    def get(self, t: int):
        if t not in self.cache:
            c, fam = self.codec, self.family
            pt, st = c.transform(self.puzzle, self.solution, t)
            if self.fast:
                sol = st.grid.tolist()
                empty = self._tokens(pt, c.input_token, None)
                label = self._tokens(pt, c.label_token, sol)
                order = _positions(self.puzzle.rows, self.puzzle.cols, t, fam.cols)[self.req_flat]
                vid, fc = fam.vocab.id, fam.cols
                filled = np.array([vid(c.input_token(pt, p // fc, p % fc, sol[p // fc][p % fc]))
                                   for p in order.tolist()], dtype=np.uint16)
            else:
                empty = c.encode(pt, None, fam).astype(np.uint16)
                label = c.encode_label(pt, st, fam).astype(np.uint16)
                order = filled = None
            self.cache[t] = (pt, empty, label, order, filled)
        return self.cache[t]

    def example(self, t: int, k: int) -> tuple[np.ndarray, np.ndarray]:
        pt, empty, label, order, filled = self.get(t)
        if k == 0:
            return empty, label
        if order is not None:
            x = empty.copy()
            x[order[:k]] = filled[:k]
            return x, label
        c = self.codec
        state = c.trajectory(self.puzzle, self.solution, k)
        _, state_t = c.transform(self.puzzle, state, t)
        return c.encode(pt, state_t, self.family).astype(np.uint16), label


def augment_task(task):
    """Worker: one puzzle -> (inputs [n, L], labels [n, L], transforms [n]) or an error string.

    Row 0 is the original (t = 0, empty grid). Rows 1.. draw t uniformly among the transforms
    the codec allows and k uniformly in [1, R-1] (R = number of required moves; k = 0 when
    R < 2): the input holds the first k required moves in row-major order, then everything is
    transformed by t; the label is always the full solution."""
    type_name, puzzle, solution, canon, n, seed, family_name = task
    try:
        codec = registry.get(type_name)
        family = codec.family(family_name)
        required = codec.required_cells(puzzle, solution) if n > 1 else []
        fast = _cell_local(codec) and _FAST_OK.get(type_name, True)
        views = _Views(codec, family, puzzle, solution, required, fast)
        allowed = list(range(dihedral.COUNT))
        while True:
            rng = _rng(seed, canon)
            plan = [(0, 0)]
            R = len(required)
            for _ in range(n - 1):
                t = allowed[int(rng.integers(len(allowed)))]
                k = int(rng.integers(1, R)) if R >= 2 else 0
                plan.append((t, k))
            try:
                for t in sorted({t for t, _ in plan}):
                    views.get(t)
                break
            except PtrmError:
                # a transform this puzzle does not allow (6x6 sudoku): draw among the others
                ok = []
                for t in range(dihedral.COUNT):
                    try:
                        views.get(t)
                        ok.append(t)
                    except PtrmError:
                        pass
                if ok == allowed or not ok:
                    raise
                allowed = ok
        xs, ys = _rows(views, plan, family)
        if views.fast and not _FAST_OK.get(type_name):
            # first puzzle of this type in this process: the fast path must equal the API's
            slow = _Views(codec, family, puzzle, solution, required, False)
            sx, sy = _rows(slow, plan, family)
            _FAST_OK[type_name] = bool((sx == xs).all() and (sy == ys).all())
            if not _FAST_OK[type_name]:
                xs, ys = sx, sy
        return xs, ys, np.array([t for t, _ in plan], dtype=np.uint8)
    except Exception as e:
        return f"{type(e).__name__}: {e}"


def _rows(views: _Views, plan, family: Family) -> tuple[np.ndarray, np.ndarray]:
    xs = np.empty((len(plan), family.seq_len), dtype=np.uint16)
    ys = np.empty((len(plan), family.seq_len), dtype=np.uint16)
    for j, (t, k) in enumerate(plan):
        xs[j], ys[j] = views.example(t, k)
    return xs, ys


def augment_sudoku_task(task):
    """Worker, `--augmentation sudoku-trm`: one 9x9 sudoku -> n rows, TRM's recipe. Row 0 is
    the original; rows 1.. each apply one random group element (sudoku_aug.draw, from the
    generator keyed by (seed, canonical key)) to puzzle and solution alike. Input = the
    shuffled puzzle, label = its solution: no trajectory states. `transform` is 0 for row 0
    and sudoku_aug.TRANSFORM_ID for the others."""
    type_name, puzzle, solution, canon, n, seed, family_name = task
    try:
        codec = registry.get(type_name)
        family = codec.family(family_name)
        tf = sudoku_aug.concat(sudoku_aug.identity(1), sudoku_aug.draw(_rng(seed, canon), n - 1))
        clues = sudoku_aug.apply(puzzle.clues, tf)
        sols = sudoku_aug.apply(solution.grid, tf)
        encode = getattr(codec, "encode_grids", None)
        if encode is not None:
            xs, ys = encode(clues, None, family), encode(clues, sols, family, label=True)
        else:  # a sudoku codec without the batch encoder: one row at a time
            ps = [Puzzle(codec.name, 9, 9, c.astype(np.int16)) for c in clues]
            xs = np.stack([codec.encode(p, None, family) for p in ps])
            ys = np.stack([codec.encode_label(p, Solution(codec.name, s.astype(np.int16)), family)
                           for p, s in zip(ps, sols)])
        ts = np.full(n, sudoku_aug.TRANSFORM_ID, dtype=np.uint8)
        ts[0] = 0
        return xs.astype(np.uint16), ys.astype(np.uint16), ts
    except Exception as e:
        return f"{type(e).__name__}: {e}"


# -- one split's arrays ------------------------------------------------------------------------

def puzzle_record(e: Entry, files: list[SourceFile]) -> dict:
    """The puzzle's line in the split's puzzles.jsonl."""
    rec = {"type": e.type, "key": e.canon, "text": e.text,
           "answer": np.asarray(e.solution.grid).astype(int).tolist(),
           "source": files[e.fi].name}
    rec["line" if isinstance(e.loc, int) else "id"] = e.loc
    return rec


class SplitBuilder:
    """One split's arrays, preallocated for every row (no concatenation peak at 1M rows)."""

    def __init__(self, capacity: int, seq_len: int):
        try:
            self.x = np.zeros((capacity, seq_len), dtype=np.uint16)
            self.y = np.zeros((capacity, seq_len), dtype=np.uint16)
            self.t = np.zeros(capacity, dtype=np.uint8)
            self.p = np.zeros(capacity, dtype=np.int32)
            self.k = np.zeros(capacity, dtype=np.uint8)
        except (MemoryError, ValueError):  # ValueError: more than numpy can index (a typo)
            gib = 2 * capacity * seq_len * 2 / 2 ** 30
            raise PtrmError(f"a split of {capacity:,} rows does not fit in memory (its inputs "
                            f"and labels alone take {gib:,.0f} GiB)",
                            hint="lower --augment (rows per training puzzle) or "
                                 "--train-puzzles") from None
        self.n = 0
        self.puzzles: list[dict] = []

    def add(self, xs, ys, ts, type_index: int, record: dict) -> None:
        a, b = self.n, self.n + len(xs)
        self.x[a:b], self.y[a:b], self.t[a:b] = xs, ys, ts
        self.p[a:b], self.k[a:b] = len(self.puzzles), type_index
        self.puzzles.append(record)
        self.n = b

    def done(self) -> Split:
        n = self.n
        return Split(inputs=self.x[:n], labels=self.y[:n], type=self.k[:n], puzzle=self.p[:n],
                     transform=self.t[:n], puzzle_id=np.zeros(n, dtype=np.int32),
                     puzzles=self.puzzles)
