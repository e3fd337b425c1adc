"""The `ptrm build-data` pipeline: source files -> puzzles -> splits -> augmented tokens ->
a dataset directory (docs/BUILD_DATA.md is the recipe, docs/DATASET_FORMAT.md the format).

    read      every source file through its reader (sources.py); drop other types, types
              without a codec and off-size records before decoding anything
    decode    record -> (puzzle, full solution) with the codec, in worker processes; check the
              solution with the codec's verifier, check that it fits the family's tokens, and
              compute the puzzle's canonical key (its identity up to symmetry)
    split     golden records form the golden split; a pool puzzle whose canonical key is a
              golden one, or one seen before, is dropped; validation samples N per type
              (PPBench paper: 100, 50 for tapa), the rest is train
    augment   each training puzzle -> the original (empty grid, t=0) plus `augment-1` samples:
              a random trajectory prefix of the required moves under a random dihedral
              transform (`--augmentation dihedral`), or TRM's sudoku shuffle: relabelling,
              transpose, band/stack and row/column shuffles of the whole puzzle
              (`--augmentation sudoku-trm`, sudoku_aug.py); validation and golden keep one
              unaugmented row each
    write     engine.data.write_dataset: arrays + puzzles.jsonl + counts.json + meta.json,
              atomically

Everything random comes from `seed`: validation sampling from one generator in a fixed order,
and each training puzzle's samples from a generator keyed by (seed, canonical key), so the
output does not depend on `workers` or on how work is chunked.
"""

from __future__ import annotations

import hashlib
import json
import multiprocessing as mp
import os
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from . import __version__, dihedral, sudoku_aug
from . import codec as registry
from . import sources as src
from .codec import Codec, Family, Puzzle, Solution
from .engine.data import Split, write_dataset
from .errors import ParseError, PtrmError

#: the paper's six PPBench types, in its table's order
PPBENCH_TYPES = ("sudoku", "lightup", "nurikabe", "heyawake", "tapa", "shakashaka")
#: kept grid sizes (rows, cols): the paper keeps 9x9 sudoku and 10x10 for the others
DEFAULT_SIZES = {"sudoku": (9, 9), "*": (10, 10)}
DEFAULT_VAL_PER_TYPE = 100
DEFAULT_VAL_OVERRIDES = {"tapa": 50}
SPLITS = ("train", "val", "golden")
#: --augmentation: what the training rows vary over, and the symmetry group identity forgets
AUGMENTATIONS = {
    "dihedral": "trajectory prefixes under the 8 dihedral symmetries (the paper's PPBench recipe)",
    "sudoku-trm": "TRM's shuffle_sudoku: digit relabelling, transpose, band/stack and "
                  "row/column-in-band shuffles (9x9 sudoku only)",
}
#: how many file:line messages the summary and meta.json keep per drop reason
MAX_MESSAGES = 50

#: drop reasons, in the order the summary lists them, with what they mean
REASONS = {
    "unrecognised file": "no source reader recognises the file (see `sources.READERS`)",
    "malformed": "a line or record that cannot be read or decoded (file:line in the messages)",
    "other type": "not one of --types (PPBench's other types; unknown pids)",
    "no codec": "in --types, but no installed codec reads this type",
    "wrong size": "not the kept size of its type (--sizes; default sudoku 9x9, others 10x10)",
    "no solution": "a solution-less puzzle the solver found unsolvable",
    "not unique": "a solution-less puzzle with more than one solution",
    "invalid solution": "the record's solution breaks the type's rules (codec verifier)",
    "does not fit": "the puzzle has no tokens in the family's vocabulary (a clue too large, a '?')",
    "decode error": "the codec failed on the record (a codec bug or an unexpected record)",
    "duplicate": "the same puzzle up to symmetry (canonical key) as an earlier one",
    "in golden": "the same puzzle up to symmetry as a golden puzzle: kept out of train and val",
    "augment error": "the codec failed while augmenting the puzzle",
    "below min difficulty": "a rated record (Sudoku-Extreme CSV) with rating < --min-difficulty",
    "no rating": "--min-difficulty is set and the record states no rating",
    "train cap": "beyond --train-puzzles: a seeded random sample of the training puzzles is kept",
}


class BuildError(PtrmError):
    """A build that produced nothing; `result` still holds what was read and dropped."""

    def __init__(self, message: str, result: BuildResult, *, hint: str | None = None):
        super().__init__(message, hint=hint)
        self.result = result


# -- options and results -----------------------------------------------------------------------

@dataclass
class BuildOptions:
    seed: int = 0
    val_per_type: int = DEFAULT_VAL_PER_TYPE
    val_overrides: dict[str, int] = field(default_factory=lambda: dict(DEFAULT_VAL_OVERRIDES))
    #: "all-sizes": sample validation among all records of a type, then drop off-size ones
    #: (the paper's order: its val counts are under 100); "kept": among kept puzzles only
    val_pool: str = "all-sizes"
    augment: int = 10
    #: None: the six PPBench types, or every type of `family` (`default_types`)
    types: tuple[str, ...] | None = PPBENCH_TYPES
    #: kept size per type ("*": the others); None = any size that fits the family grid
    sizes: dict[str, tuple[int, int] | None] = field(default_factory=lambda: dict(DEFAULT_SIZES))
    golden: tuple[Path, ...] = ()
    #: read at most `limit` records / a seeded random `subsample` of each non-golden file
    limit: int | None = None
    subsample: int | None = None
    family: str | None = None
    workers: int = 1
    progress: bool = False
    #: "dihedral" | "sudoku-trm" (AUGMENTATIONS)
    augmentation: str = "dihedral"
    #: keep a seeded random N training puzzles per type (TRM: 1000); None = all
    train_puzzles: int | None = None
    #: keep only records whose stated rating is >= N (Sudoku-Extreme CSV); None = all
    min_difficulty: int | None = None
    #: canonical keys of an earlier build's validation puzzles (`--val-from`): exactly these
    #: form validation, so a run warm-started on that build never trains on them
    val_keys: frozenset[str] | None = None

    def val_count(self, type_name: str) -> int:
        return self.val_overrides.get(type_name, self.val_per_type)

    def size_of(self, type_name: str) -> tuple[int, int] | None:
        return self.sizes.get(type_name, self.sizes.get("*"))

    def recorded(self) -> dict:
        """The options that shape the output (stored in meta.json; workers and progress
        do not change a byte)."""
        return {"seed": self.seed, "val_per_type": self.val_per_type,
                "val_overrides": dict(sorted(self.val_overrides.items())),
                "val_pool": self.val_pool, "augment": self.augment, "types": list(self.types),
                "val_from": None if self.val_keys is None else len(self.val_keys),
                "sizes": {k: "any" if v is None else f"{v[0]}x{v[1]}"
                          for k, v in sorted(self.sizes.items())},
                "limit": self.limit, "subsample": self.subsample, "family": self.family,
                "augmentation": self.augmentation, "train_puzzles": self.train_puzzles,
                "min_difficulty": self.min_difficulty}


@dataclass
class SourceFile:
    path: Path
    name: str
    role: str  # "pool" | "golden"
    kind: str | None = None
    sha256: str = ""
    bytes: int = 0
    records: int = 0
    kept: dict[str, Counter] = field(default_factory=lambda: {s: Counter() for s in SPLITS})
    dropped: Counter = field(default_factory=Counter)

    def summary(self) -> dict:
        return {"name": self.name, "role": self.role, "kind": self.kind, "sha256": self.sha256,
                "bytes": self.bytes, "records": self.records,
                "puzzles": {s: dict(sorted(c.items())) for s, c in self.kept.items()},
                "dropped": dict(sorted(self.dropped.items()))}


@dataclass
class BuildResult:
    out: Path | None
    types: list[str]
    family: str
    counts: dict[str, dict[str, int]]     # examples per split and type (= counts.json)
    puzzles: dict[str, dict[str, int]]    # base puzzles per split and type
    sources: list[dict]
    dropped: dict[str, dict[str, int]]    # reason -> type -> count
    messages: dict[str, list[str]]        # reason -> first MAX_MESSAGES "file:line: why"
    notes: list[str]
    timings: dict[str, float]             # seconds per phase; not stored in the dataset

    def to_json(self) -> dict:
        d = asdict(self)
        d["out"] = str(self.out) if self.out else None
        return d


class Ledger:
    """Counts what each source contributes and what is dropped, and why."""

    def __init__(self, files: list[SourceFile]):
        self.files = files
        self.dropped: dict[str, Counter] = defaultdict(Counter)
        self._messages: dict[str, list[tuple]] = defaultdict(list)
        self.message_counts: Counter = Counter()

    def where(self, fi: int, loc) -> str:
        name = self.files[fi].name
        if loc is None:
            return name
        return f"{name}:{loc}" if isinstance(loc, int) else f"{name}[{loc}]"

    def drop(self, fi: int, type_name: str | None, reason: str, loc=None,
             message: str | None = None) -> None:
        self.dropped[reason][type_name or "?"] += 1
        self.files[fi].dropped[reason] += 1
        if message is not None:
            self.message_counts[reason] += 1
            if len(self._messages[reason]) < 20 * MAX_MESSAGES:
                order = (fi, 0, loc, "") if isinstance(loc, int) else (fi, 1, 0, str(loc))
                self._messages[reason].append((order, f"{self.where(fi, loc)}: {message}"))

    def messages(self) -> dict[str, list[str]]:
        """The first MAX_MESSAGES per reason, in file and line order, then a count of the rest."""
        out = {}
        for reason in self.dropped_table():
            msgs = [m for _, m in sorted(self._messages.get(reason, []), key=lambda x: x[0])]
            if not msgs:
                continue
            n = self.message_counts[reason]
            out[reason] = msgs[:MAX_MESSAGES] + ([f"... and {n - MAX_MESSAGES} more"]
                                                 if n > MAX_MESSAGES else [])
        return out

    def keep(self, fi: int, split: str, type_name: str) -> None:
        self.files[fi].kept[split][type_name] += 1

    def dropped_table(self) -> dict[str, dict[str, int]]:
        order = list(REASONS) + sorted(set(self.dropped) - set(REASONS))
        return {r: dict(sorted(self.dropped[r].items())) for r in order if self.dropped.get(r)}


# -- decoded puzzles ----------------------------------------------------------------------------

@dataclass
class Entry:
    seq: int          # position in reading order (file order, then line order)
    fi: int           # source file index
    loc: Any          # line number or entry id
    type: str
    puzzle: Puzzle
    solution: Solution
    canon: str        # canonical key: identity up to the type's symmetries
    text: str         # codec-parsable puzzle text (the puzz.link URL)


def canonical_key(codec: Codec, puzzle: Puzzle, augmentation: str = "dihedral") -> str:
    """The puzzle's identity for golden exclusion, de-duplication and the train/val split: the
    smallest `codec.key` over the dihedral transforms the codec allows, so a rotated or
    mirrored copy is the same puzzle (it is, for a model trained on all 8 transforms). Sudoku
    also forgets digit names (a relabelled copy is the same puzzle). A codec may define its own
    `canonical_key(puzzle)` and it is used instead. With the sudoku-trm augmentation the model
    sees the whole sudoku group, so the identity forgets all of it (`sudoku_aug.canonical`)."""
    if augmentation == "sudoku-trm":
        if codec.name != "sudoku" or (puzzle.rows, puzzle.cols) != (9, 9):
            raise PtrmError("the sudoku-trm augmentation is for 9x9 sudoku only")
        return "sudoku/9/group/" + sudoku_aug.canonical(puzzle.clues)
    own = getattr(codec, "canonical_key", None)
    if callable(own):
        return str(own(puzzle))
    if codec.name == "sudoku":
        return _sudoku_canonical(puzzle)
    keys = []
    for t in range(dihedral.COUNT):
        try:
            pt, _ = codec.transform(puzzle, None, t)
        except PtrmError:
            continue
        keys.append(codec.key(pt))
    return min(keys) if keys else codec.key(puzzle)


def _sudoku_canonical(puzzle: Puzzle) -> str:
    """Min over the dihedral transforms of the givens, digits renamed 1, 2, ... in order of
    first appearance (row-major): equal for every relabelled, rotated or mirrored copy."""
    n = puzzle.rows
    clues = np.asarray(puzzle.clues)
    best = None
    ts = range(dihedral.COUNT) if n != 6 else (0, 2, 4, 5)  # 3x2 boxes: no quarter turns
    for t in ts:
        flat = dihedral.apply(clues, t).reshape(-1)
        names: dict[int, int] = {}
        s = "".join("." if not v else str(names.setdefault(v, len(names) + 1))
                    for v in flat.tolist())
        if best is None or s < best:
            best = s
    return f"sudoku/{n}/{best}"


def puzzle_text(codec: Codec, puzzle: Puzzle) -> str:
    """Codec-parsable text for puzzles.jsonl: the puzz.link URL, else pzprv3, else the key."""
    for fn in (codec.to_url, codec.to_pzprv3):
        try:
            return fn(puzzle)
        except PtrmError:
            continue
    return codec.key(puzzle)


def _decode_task(task):
    """Worker: one item -> ("ok", Entry fields) | ("drop", reason, message) | ("size", r, c)."""
    item, type_name, want, family_name, augmentation = task
    try:
        codec = registry.get(type_name)
        puzzle, solution = src.READERS[item.reader].decode(item, codec)
        if want is not None and (puzzle.rows, puzzle.cols) != want:
            return ("size", puzzle.rows, puzzle.cols)
        if solution.grid.shape != (puzzle.rows, puzzle.cols):
            return ("drop", "malformed", f"solution is {solution.grid.shape[0]}x"
                    f"{solution.grid.shape[1]}, puzzle is {puzzle.rows}x{puzzle.cols}")
        violations = codec.verify(puzzle, solution)
        if violations:
            v = violations[0]
            return ("drop", "invalid solution", f"{v.code}: {v.message}"
                    + (f" (+{len(violations) - 1} more)" if len(violations) > 1 else ""))
        family = codec.family(family_name)
        try:
            codec.encode(puzzle, None, family)
            codec.encode_label(puzzle, solution, family)
        except PtrmError as e:
            return ("drop", "does not fit", str(e))
        return ("ok", puzzle, solution, canonical_key(codec, puzzle, augmentation),
                puzzle_text(codec, puzzle))
    except src.Drop as d:
        return ("drop", d.reason, str(d))
    except (ParseError, ValueError, KeyError, IndexError, TypeError) as e:
        return ("drop", "malformed", str(e) or type(e).__name__)
    except Exception as e:  # a codec bug must not take the build down: report and go on
        return ("drop", "decode error", f"{type(e).__name__}: {e}")


# -- augmentation -------------------------------------------------------------------------------

def _rng(seed: int, key: str) -> np.random.Generator:
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


def _augment_task(task):
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


def _augment_sudoku_task(task):
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


# -- parallel map -------------------------------------------------------------------------------

def _pmap(fn: Callable, tasks: list, workers: int, tick: Callable[[int], None],
          chunksize: int = 8) -> Iterator:
    """Ordered map over `tasks`, in `workers` processes when that is worth it. The results
    are the same either way (ordered; all randomness is keyed by puzzle)."""
    if workers <= 1 or len(tasks) < 2 * chunksize:
        for t in tasks:
            yield fn(t)
            tick(1)
        return
    method = "fork" if "fork" in mp.get_all_start_methods() else "spawn"
    with mp.get_context(method).Pool(workers) as pool:
        for r in pool.imap(fn, tasks, chunksize=chunksize):
            yield r
            tick(1)


class _Progress:
    """A Rich progress bar on stderr, or nothing."""

    def __init__(self, enabled: bool):
        self.p = None
        if enabled:
            from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn,
                                       TimeElapsedColumn, TimeRemainingColumn)

            from .console import err_console
            self.p = Progress(TextColumn("{task.description:<7}"), BarColumn(),
                              MofNCompleteColumn(), TimeElapsedColumn(), TimeRemainingColumn(),
                              console=err_console, transient=True)

    def __enter__(self):
        if self.p:
            self.p.__enter__()
        return self

    def __exit__(self, *exc):
        if self.p:
            self.p.__exit__(*exc)

    def task(self, description: str, total: int | None) -> Callable[[int], None]:
        if not self.p:
            return lambda n: None
        tid = self.p.add_task(description, total=total)
        self.last = tid
        return lambda n: self.p.advance(tid, n)

    def close_open_task(self) -> None:
        """Give the last task (one started without a total) its total: it is finished."""
        if self.p:
            task = self.p.tasks[self.last]
            self.p.update(self.last, total=task.completed)


# -- the pipeline -------------------------------------------------------------------------------

def collect_sources(paths: Iterable[str | Path],
                    golden: Iterable[str | Path] = ()) -> list[SourceFile]:
    """Folders -> the files inside with a reader's suffix (sorted); files as given. A file named
    `golden*` or passed in `golden` is a golden file. The same file is read once."""
    out: list[SourceFile] = []
    seen: dict[Path, int] = {}
    golden_paths = {Path(g).resolve() for g in golden}

    def add(p: Path, role: str):
        rp = p.resolve()
        if rp in seen:
            if role == "golden":
                out[seen[rp]].role = "golden"
            return
        seen[rp] = len(out)
        out.append(SourceFile(p, p.name, role))

    for g in golden:
        g = Path(g)
        if not g.is_file():
            raise PtrmError(f"--golden {g}: no such file")
        add(g, "golden")
    suff = src.suffixes()
    for p in paths:
        p = Path(p)
        if p.is_dir():
            files = sorted(f for f in p.iterdir() if f.is_file()
                           and any(f.name.lower().endswith(s) for s in suff)
                           and not f.name.startswith("."))
            for f in files:
                add(f, "golden" if f.resolve() in golden_paths
                    or f.name.lower().startswith("golden") else "pool")
        elif p.is_file():
            add(p, "golden" if p.resolve() in golden_paths
                or p.name.lower().startswith("golden") else "pool")
        else:
            raise PtrmError(f"source {p}: no such file or folder")
    return out


def _sha256(path: Path) -> tuple[str, int]:
    h, size = hashlib.sha256(), 0
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
            size += len(chunk)
    return h.hexdigest(), size


def default_types(family: str | None) -> tuple[str, ...]:
    """--types when not given: the six PPBench types, or with --family, every installed type
    that has that family (`--family sudoku-native` -> sudoku)."""
    if family is None:
        return PPBENCH_TYPES
    installed = registry.registered()
    found = tuple(name for name, reg in installed.items()
                  if family in [f.name for f in reg.codec.families])
    if not found:
        raise PtrmError(f"no installed codec has a {family!r} token family",
                        hint="`ptrm codecs` lists the codecs and their families")
    return found


def select_family(types: Iterable[str], family: str | None) -> tuple[dict[str, Codec], Family]:
    """Installed codecs for `types` and the family they share (`family` or the first codec's
    default). Types without a codec are left out (their records are dropped as "no codec")."""
    installed = registry.registered()
    codecs = {t: installed[t].codec for t in types if t in installed}
    if not codecs:
        return codecs, None  # reported by the caller after reading
    first = next(iter(codecs.values()))
    name = family or first.family().name
    fam = None
    for t, c in codecs.items():
        names = [f.name for f in c.families]
        if name not in names:
            raise PtrmError(f"types do not share a token family: {t} has {', '.join(names)}, "
                            f"not {name!r}", hint="pick --types of one family (or --family)")
        f = c.family(name)
        if fam is None:
            fam = f
        elif f.vocab != fam.vocab or f.seq_len != fam.seq_len:
            raise PtrmError(f"codecs disagree on the {name!r} family's vocabulary ({t})")
    return codecs, fam


def build(sources: Iterable[str | Path], out: str | Path | None,
          options: BuildOptions | None = None) -> BuildResult:
    """Run the whole pipeline and write the dataset to `out` (None: count only, write nothing).
    Raises `BuildError` (carrying the result) when no puzzle survives."""
    opts = options or BuildOptions()
    if opts.augment < 1:
        raise PtrmError("--augment must be at least 1 (the original example)")
    if opts.val_pool not in ("all-sizes", "kept"):
        raise PtrmError(f"--val-pool must be all-sizes or kept, not {opts.val_pool!r}")
    if opts.augmentation not in AUGMENTATIONS:
        raise PtrmError(f"--augmentation must be {' or '.join(AUGMENTATIONS)}, "
                        f"not {opts.augmentation!r}")
    if opts.train_puzzles is not None and opts.train_puzzles < 0:
        raise PtrmError(f"--train-puzzles must be 0 or more, not {opts.train_puzzles}")
    out = Path(out) if out is not None else None
    if out is not None:
        _check_out(out)
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    files = collect_sources(sources, opts.golden)
    if not files:
        raise PtrmError("no source files found", hint="pass PPBench JSONL, janko JSON or "
                        "sudoku .txt files, or folders holding them")
    if opts.types is None:
        opts = replace(opts, types=default_types(opts.family))
    types = list(dict.fromkeys(src.resolve_type(t) for t in opts.types))
    if opts.augmentation == "sudoku-trm" and (types != ["sudoku"]
                                              or opts.size_of("sudoku") != (9, 9)):
        raise PtrmError("--augmentation sudoku-trm is TRM's 9x9 sudoku shuffle: it needs "
                        "--types sudoku and the size sudoku=9x9",
                        hint="e.g. --family sudoku-native (its only type is sudoku)")
    codecs, family = select_family(types, opts.family)
    ledger = Ledger(files)
    notes: list[str] = []

    # -- read ---------------------------------------------------------------------------------
    pending: list[tuple[int, int, Any, str]] = []   # (seq, file index, item, type)
    offsize: list[tuple[int, str, str | None]] = []  # pool records of a kept type, off-size
    golden_idents: set[str] = set()
    ppbench_pool = False
    seq = 0
    with _Progress(opts.progress) as progress:
        tick = progress.task("read", None)  # records, as they stream in
        for fi, sf in enumerate(files):
            sf.sha256, sf.bytes = _sha256(sf.path)
            reader = src.reader_for(sf.path)
            if reader is None:
                ledger.drop(fi, None, "unrecognised file", None,
                            f"no reader recognises this file (kinds: {', '.join(src.READERS)})")
                continue
            sf.kind = reader.kind

            def report(loc, message, fi=fi, sf=sf):
                sf.records += 1
                ledger.drop(fi, None, "malformed", loc, message)

            items = _take(_rated(reader.read(sf.path, report), opts, sf, fi, ledger),
                          opts, sf, fi)
            for item in items:
                sf.records += 1
                seq += 1
                tick(1)
                t = src.resolve_type(item.type)
                golden = sf.role == "golden"
                ppbench_pool |= item.form == "ppbench" and not golden
                if golden and item.ident:
                    golden_idents.add(item.ident)
                if t not in types:
                    ledger.drop(fi, t, "other type")
                    continue
                if t not in codecs:
                    ledger.drop(fi, t, "no codec")
                    continue
                want = opts.size_of(t)
                if want is not None and item.rows is not None and (item.rows, item.cols) != want:
                    ledger.drop(fi, t, "wrong size")
                    if not golden:
                        offsize.append((seq, t, item.ident))
                    continue
                pending.append((seq, fi, item, t))
        progress.close_open_task()
        timings["read"] = time.perf_counter() - t0

        # -- decode -----------------------------------------------------------------------------
        t1 = time.perf_counter()
        fam_name = family.name if family else None
        tasks = [(item, t, opts.size_of(t), fam_name, opts.augmentation)
                 for _, _, item, t in pending]
        decoded: list[Entry] = []
        tick = progress.task("decode", len(tasks))
        for (s, fi, item, t), res in zip(pending, _pmap(_decode_task, tasks, opts.workers, tick)):
            if res[0] == "ok":
                _, puzzle, solution, canon, text = res
                decoded.append(Entry(s, fi, item.loc, t, puzzle, solution, canon, text))
            elif res[0] == "size":
                ledger.drop(fi, t, "wrong size")
                if files[fi].role != "golden":
                    offsize.append((s, t, item.ident))
            else:
                ledger.drop(fi, t, res[1], item.loc, res[2])
        timings["decode"] = time.perf_counter() - t1
        timings["decode_puzzles"] = len(tasks)

        del pending, tasks  # the raw records can go now

        # -- split ------------------------------------------------------------------------------
        kept_types = [t for t in types if t in codecs]
        splits_e = _split(decoded, offsize, golden_idents, files, types, opts, ledger)

        # -- augment ----------------------------------------------------------------------------
        t2 = time.perf_counter()
        built: dict[str, Split] = {}
        puzzles_count: dict[str, dict[str, int]] = {}
        for name in SPLITS:
            entries = splits_e[name]
            n_ex = opts.augment if name == "train" else 1
            tasks = [(e.type, e.puzzle, e.solution, e.canon, n_ex, opts.seed, fam_name)
                     for e in entries]
            tick = progress.task(name, len(tasks))
            split = _Builder(len(tasks) * n_ex, family.seq_len if family else 1)
            kept_n: Counter = Counter()
            fn = _augment_sudoku_task if opts.augmentation == "sudoku-trm" else _augment_task
            for e, res in zip(entries, _pmap(fn, tasks, opts.workers, tick)):
                if isinstance(res, str):
                    ledger.drop(e.fi, e.type, "augment error", e.loc, res)
                    continue
                split.add(*res, kept_types.index(e.type), _puzzle_record(e, files))
                kept_n[e.type] += 1
                ledger.keep(e.fi, name, e.type)
            built[name] = split.done()
            puzzles_count[name] = {t: kept_n.get(t, 0) for t in kept_types}
            if name == "train":
                timings["augment"] = time.perf_counter() - t2
                timings["augment_puzzles"] = len(tasks)

    counts = {name: {t: int((s.type == i).sum()) for i, t in enumerate(kept_types)}
              for name, s in built.items()}
    if ppbench_pool and not any(f.role == "golden" for f in files):
        notes.append("PPBench records were read without a golden file, so golden puzzles among "
                     "them are not kept out of train/val: pass --golden golden_300.jsonl"
                     + _bundled_golden_hint())
    for t in kept_types:
        if puzzles_count["train"].get(t, 0) == 0 and puzzles_count["val"].get(t, 0) > 0:
            notes.append(f"validation took every {t} puzzle ({puzzles_count['val'][t]}); train "
                         f"has none (lower --val-per-type)")
    result = BuildResult(out, kept_types, fam_name or "", counts, puzzles_count,
                         [f.summary() for f in files], ledger.dropped_table(),
                         ledger.messages(), notes, timings)
    total = sum(len(s) for s in built.values())
    if family is None or total == 0:
        missing = [t for t in types if t not in codecs]
        hint = (f"no codec installed for: {', '.join(missing)}" if missing else
                "see the dropped table: every record was filtered out")
        raise BuildError("no puzzle survived the filters: nothing to write", result, hint=hint)
    if out is not None:
        t3 = time.perf_counter()
        meta = {"seed": opts.seed,
                "builder": {"tool": "ptrm build-data", "version": __version__,
                            "options": opts.recorded()},
                "sources": result.sources,
                "puzzles": puzzles_count,
                "dropped": result.dropped,
                "dropped_messages": result.messages,
                "num_puzzle_ids": 1,
                **_identity_and_augmentation(opts)}
        write_dataset(out, vocab=family.vocab, seq_len=family.seq_len, types=kept_types,
                      splits=built, meta=meta)
        _umask_mode(out)
        timings["write"] = time.perf_counter() - t3
    timings["total"] = time.perf_counter() - t0
    return result


def _identity_and_augmentation(opts: BuildOptions) -> dict:
    """meta.json's one-line statements of the identity and augmentation rules."""
    if opts.augmentation == "sudoku-trm":
        return {"identity": "canonical key: the smallest row-major string over the whole sudoku "
                            "group (digit relabelling, transpose, band/stack and row/column "
                            "shuffles; sudoku_aug.canonical)",
                "augmentation": {"kind": "sudoku-trm",
                                 "examples_per_train_puzzle": opts.augment,
                                 "row0": "original: transform 0",
                                 "samples": "one uniform random element of the sudoku group "
                                            "each, applied to puzzle and solution (TRM's "
                                            f"shuffle_sudoku); transform {sudoku_aug.TRANSFORM_ID}",
                                 "val_golden": "one unaugmented row per puzzle"}}
    return {"identity": "canonical key: min codec.key over the dihedral transforms "
                        "(sudoku: digits relabelled in order of first appearance)",
            "augmentation": {"examples_per_train_puzzle": opts.augment,
                             "row0": "original: t=0, empty grid",
                             "samples": "t uniform over the allowed dihedral transforms; "
                                        "k uniform in [1, R-1] required moves, row-major",
                             "val_golden": "one unaugmented row per puzzle"}}


def _bundled_golden_hint() -> str:
    """Where the ppbench wheel keeps its golden file, if it is installed."""
    try:
        import importlib.util
        spec = importlib.util.find_spec("ppbench")
    except (ImportError, ValueError):
        return ""
    for loc in (spec.submodule_search_locations or []) if spec else []:
        p = Path(loc) / "bundled" / "golden_300.jsonl"
        if p.is_file():
            return f" (the installed ppbench wheel has one: {p})"
    return ""


def _umask_mode(out: Path) -> None:
    """The write goes through a mkdtemp folder (mode 0700); give the dataset the usual mode."""
    mask = os.umask(0)
    os.umask(mask)
    os.chmod(out, 0o777 & ~mask)


def _check_out(out: Path) -> None:
    """Refuse to replace anything but a ptrm dataset (the write replaces the folder whole)."""
    if out.exists() and not out.is_dir():
        raise PtrmError(f"--out {out} is a file")
    if out.is_dir() and any(out.iterdir()) and not (out / "meta.json").is_file():
        raise PtrmError(f"--out {out} exists and is not a ptrm dataset: refusing to replace it",
                        hint="pick a new folder, or an earlier build-data output to rebuild")


def _rated(items: Iterator[src.Item], opts: BuildOptions, sf: SourceFile, fi: int,
           ledger: Ledger):
    """--min-difficulty, applied before --limit/--subsample (TRM filters, then subsamples)."""
    if opts.min_difficulty is None:
        yield from items
        return
    for item in items:
        if item.rating is None or item.rating < opts.min_difficulty:
            sf.records += 1
            ledger.drop(fi, src.resolve_type(item.type),
                        "no rating" if item.rating is None else "below min difficulty")
            continue
        yield item


def _take(items: Iterator[src.Item], opts: BuildOptions, sf: SourceFile, fi: int):
    """--limit (the first N records) and --subsample (a seeded random N) of a pool file."""
    if sf.role == "golden" or (opts.limit is None and opts.subsample is None):
        yield from items
        return
    if opts.limit is not None:
        for n, item in enumerate(items):
            if n >= opts.limit:
                return
            yield item
        return
    pool = list(items)
    if opts.subsample >= len(pool):
        yield from pool
        return
    rng = np.random.default_rng([opts.seed & 0xFFFFFFFF, fi, 0x5B5])
    yield from (pool[i] for i in sorted(rng.choice(len(pool), opts.subsample, replace=False)))


def _split(decoded: list[Entry], offsize, golden_idents, files, types, opts, ledger):
    """Golden first (its own duplicates dropped), then the pool: drop golden puzzles and
    repeats by canonical key, sample validation per type, the rest is train."""
    decoded.sort(key=lambda e: e.seq)
    golden: list[Entry] = []
    golden_keys: set[str] = set()
    for e in decoded:
        if files[e.fi].role != "golden":
            continue
        if e.canon in golden_keys:
            ledger.drop(e.fi, e.type, "duplicate")
            continue
        golden_keys.add(e.canon)
        golden.append(e)
    pool: list[Entry] = []
    seen: set[str] = set()
    for e in decoded:
        if files[e.fi].role == "golden":
            continue
        if e.canon in golden_keys:
            ledger.drop(e.fi, e.type, "in golden")
        elif e.canon in seen:
            ledger.drop(e.fi, e.type, "duplicate")
        else:
            seen.add(e.canon)
            pool.append(e)
    rng = np.random.default_rng(opts.seed & 0xFFFFFFFF)
    val_seq: set[int] = set()
    if opts.val_keys is not None:
        val_seq = {e.seq for e in pool if e.canon in opts.val_keys}
        missing = len(opts.val_keys) - len(val_seq)
        if missing:
            raise PtrmError(f"--val-from: {missing} of its {len(opts.val_keys)} validation "
                            "puzzles are not among the sources (or are golden / off-size)",
                            hint="pass the sources that earlier build read, plus new ones")
    for t in types if opts.val_keys is None else ():
        cands = [e.seq for e in pool if e.type == t]
        if opts.val_pool == "all-sizes":
            cands += [s for s, tt, ident in offsize if tt == t and ident not in golden_idents]
        cands.sort()
        n = min(opts.val_count(t), len(cands))
        if n > 0:
            val_seq.update(cands[i] for i in rng.choice(len(cands), n, replace=False).tolist())
    val = [e for e in pool if e.seq in val_seq]
    train = [e for e in pool if e.seq not in val_seq]
    if opts.train_puzzles is not None:
        # TRM's --subsample-size: a seeded random N of the training puzzles, per type, drawn
        # after validation so the held-out set does not depend on N
        rng = np.random.default_rng([opts.seed & 0xFFFFFFFF, 0x7A1])
        keep: set[int] = set()
        for t in types:
            cands = [e.seq for e in train if e.type == t]
            n = min(opts.train_puzzles, len(cands))
            keep.update(cands[i] for i in rng.choice(len(cands), n, replace=False).tolist())
        for e in train:
            if e.seq not in keep:
                ledger.drop(e.fi, e.type, "train cap")
        train = [e for e in train if e.seq in keep]
    return {"train": train, "val": val, "golden": golden}


def read_val_keys(dataset: str | Path) -> frozenset[str]:
    """The canonical keys of a built dataset's validation puzzles (`val/puzzles.jsonl`)."""
    path = Path(dataset) / "val" / "puzzles.jsonl"
    if not path.is_file():
        raise PtrmError(f"--val-from {dataset}: no {path.relative_to(dataset)} there",
                        hint="pass a folder written by `ptrm build-data`")
    keys = set()
    with path.open(encoding="utf-8") as f:
        for i, line in enumerate(f, 1):
            try:
                keys.add(json.loads(line)["key"])
            except (ValueError, KeyError, TypeError):
                raise PtrmError(f"{path}:{i}: expected a JSON object with a 'key'") from None
    return frozenset(keys)


def _puzzle_record(e: Entry, files: list[SourceFile]) -> dict:
    rec = {"type": e.type, "key": e.canon, "text": e.text,
           "answer": np.asarray(e.solution.grid).astype(int).tolist(),
           "source": files[e.fi].name}
    rec["line" if isinstance(e.loc, int) else "id"] = e.loc
    return rec


class _Builder:
    """One split's arrays, preallocated for every row (no concatenation peak at 1M rows)."""

    def __init__(self, capacity: int, seq_len: int):
        self.x = np.zeros((capacity, seq_len), dtype=np.uint16)
        self.y = np.zeros((capacity, seq_len), dtype=np.uint16)
        self.t = np.zeros(capacity, dtype=np.uint8)
        self.p = np.zeros(capacity, dtype=np.int32)
        self.k = np.zeros(capacity, dtype=np.uint8)
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


def default_workers() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:
        return max(1, os.cpu_count() or 1)
