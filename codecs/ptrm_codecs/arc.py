"""ARC (ARC-AGI-1/2, ConceptARC) grids in TRM's token layout (TRM_REFERENCE.md §5.4, §6;
docs/MAZE_ARC.md).

ARC has no rules to check: a task is a handful of demonstration pairs and the answer is
whatever output the hidden transformation gives. For this codec a *puzzle* is one input grid,
and its solution the output grid, which may have another size:

Puzzle.clues: [h, w] int8 colours 0..9 (h, w <= 30). Puzzle.meta: "task" (the task id),
    "split" ("train" for a demonstration pair, "test" for a test pair), "example" (index in
    that list), "output" (the known output grid as lists, when there is one), "offset"
    ((r, c) of the grid on the canvas; (0, 0) when absent).
Solution.grid: the output grid at its own size, int16 colours 0..9. EMPTY = -1 (never made by
    `decode`; ARC has no partial answers, so no trajectory either).

Formats: Kaggle layout files (`arc-agi_<set>_challenges.json` {task_id: {"train": [{"input",
"output"}], "test": [{"input"}]}} with `..._solutions.json` {task_id: [output, ...]}; see
`load_tasks`), one task {"train", "test"} (its first test pair), one pair {"input", "output"},
a bare grid [[...]], and ptrm records {"type": "arc", "text": <input grid as JSON>, "answer":
<output grid>, "task", "split", "example"}.

Tokens (`arc` family, 30x30 canvas, TRM's ids): 0 pad, 1 eos, colour c -> c + 2. A grid sits at
`offset`; eos fills the row just below it (over its columns) and the column just right of it
(over its rows) where those lie inside the canvas; the corner between them stays pad. `decode`
is TRM's crop: the largest rectangle anchored at the offset whose cells are all colours,
scanning rows and narrowing at the first non-colour token.

Verifier: compares with the known output in meta: one "mismatch" violation, saying "wrong size:
3x3, expected 5x5" or "differs from the expected output in 4 of 25 cells: r1c2, ..."; without
an output there is nothing to check and the answer is returned unjudged ([]).

Augmentation (pure functions below, TRM's numbering): dihedral t in 0..7 (`ptrm_cli.dihedral`),
a permutation of colours 1..9 with 0 (black) fixed, and a canvas offset; each with its exact
inverse for predictions. An augmented task is named `<name>|||t<t>|||<10-digit map>` (map[c] =
new colour of c), which `parse_aug_name` reads back, so a prediction can be taken back to the
original task's frame (`deaugment`) for voting.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
from rich.text import Text

from ptrm_cli import dihedral
from ptrm_cli.codec import Codec, Family, Parsed, Puzzle, Solution, Violation, cells_named, \
    size_name
from ptrm_cli.errors import ParseError, PtrmError, json_problem, load_json

from .families import ARC

PAD, EOS, COLOUR0 = 0, 1, 2  # token ids: colour c is COLOUR0 + c
COLOURS = 10
MAX_SIZE = 30
SEP = "|||"  # TRM's PuzzleIdSeparator
#: ARC's usual palette, for rendering
PALETTE = ("#000000", "#0074D9", "#FF4136", "#2ECC40", "#FFDC00", "#AAAAAA", "#F012BE",
           "#FF851B", "#7FDBFF", "#870C25")
#: the colours' names, as PALETTE draws them (the legend of an answer's values)
COLOUR_NAMES = ("black", "blue", "red", "green", "yellow", "grey", "magenta", "orange",
                "light blue", "maroon")

Grid = np.ndarray
#: a record's own fields, never task ids
RECORD_FIELDS = ("type", "pid", "id", "task", "split", "example")


# -- grids -------------------------------------------------------------------------------------

#: what a malformed grid's error suggests
GRID_HINT = ("an ARC grid is a JSON list of rows, each a list of colours 0..9, all rows the same "
             "length, at most 30x30: [[0, 1, 1], [1, 0, 0]]")
#: what a record without its output is told
NO_OUTPUT_HINT = ('a record gives the output as "answer"; to solve an input whose output is '
                  'unknown, pass the grid itself [[...]] or a pair {"input": grid}')
#: what a malformed task's error suggests
TASK_HINT = ('an ARC task is {"train": [{"input": grid, "output": grid}, ...], "test": '
             '[{"input": grid}, ...]}; a test pair\'s "output" is optional')


def as_grid(obj, *, what: str = "grid", source: str | None = None) -> Grid:
    """A list of rows of colours 0..9 -> [h, w] int16; a ParseError for anything else, naming
    the first bad row or cell (a colour 1.5 or "3" is not silently made 1 or 3)."""
    problem = _array_problem(obj) if isinstance(obj, np.ndarray) else _rows_problem(obj)
    if problem:
        raise ParseError(f"ARC {what}{problem}", source=source, hint=GRID_HINT)
    return np.asarray(obj).astype(np.int16)


def _rows_problem(obj) -> str | None:
    """What keeps `obj` (read from JSON, or rows a Python caller built: tuples, 1-D arrays)
    from being an ARC grid, as the rest of a message, or None. Walked row by row rather than
    cast by numpy, which makes [[1, 2], [3]] an object array without saying which row is
    short, and 1.5, "3" or true colours 1, 3 and 1."""
    want = ": expected a non-empty rectangular grid (a list of rows of colours 0..9)"
    if not isinstance(obj, (list, tuple)) or not obj:
        return f"{want}, found {_shown(obj)}"
    for r, row in enumerate(obj):
        if not _is_row(row) or not len(row):
            return f"{want}, found {_shown(row)} as row {r + 1}"
        if len(row) != len(obj[0]):
            return (f": rows differ in length: row {r + 1} has {_cells(len(row))}, row 1 has "
                    f"{_cells(len(obj[0]))}")
    size = _size_problem(len(obj), len(obj[0]))
    if size:
        return size
    for r, row in enumerate(obj):
        for c, v in enumerate(row):
            if not _is_colour(v):
                return _colour_problem(v, r, c)
    return None


def _array_problem(grid: np.ndarray) -> str | None:
    """`_rows_problem` for an array (what Python callers and transforms hand over)."""
    if grid.ndim != 2 or grid.size == 0:
        return f": expected a non-empty rectangular grid, got shape {grid.shape}"
    size = _size_problem(*grid.shape)
    if size:
        return size
    if grid.dtype.kind in "iu" and grid.min() >= 0 and grid.max() < COLOURS:
        return None
    # an object array may hold only colours (a grid of Python ints), or values of any kind
    bad = next(((r, c) for r, c in np.ndindex(grid.shape) if not _is_colour(grid[r, c])), None)
    if bad is None:
        return None
    v = grid[bad]
    return _colour_problem(v.item() if isinstance(v, np.generic) else v, *bad)


def _size_problem(h: int, w: int) -> str | None:
    if h > MAX_SIZE or w > MAX_SIZE:
        return f" is {size_name(h, w)}; ARC grids are at most {MAX_SIZE}x{MAX_SIZE}"
    return None


def _is_row(row) -> bool:
    """A row as JSON gives it (a list) or a Python caller may (a tuple, a 1-D array)."""
    return isinstance(row, (list, tuple)) or isinstance(row, np.ndarray) and row.ndim == 1


def _is_colour(v) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)) \
        and 0 <= v < COLOURS


def _colour_problem(v, r: int, c: int) -> str:
    return f": colours are 0..9 (whole numbers), found {v!r} at row {r + 1}, column {c + 1}"


def _cells(n: int) -> str:
    return f"{n} cell" + ("" if n == 1 else "s")


def _shown(v, width: int = 40) -> str:
    """A value as its JSON, cut short: what a message quotes of the input."""
    try:
        text = json.dumps(v)
    except (TypeError, ValueError):
        text = repr(v)
    return text if len(text) <= width else text[:width - 3] + "..."


def check_task(task, name: str, *, source: str | None = None) -> dict:
    """A task {"train": [pairs], "test": [pairs]} with every pair and grid checked (colours
    0..9, at most 30x30; a test pair may lack its output), as a copy with the pairs as new
    dicts; a ParseError naming the task, the pair and the grid otherwise."""
    def bad(where: str, what: str):
        return ParseError(f"ARC task {name!r}{where}: {what}", source=source, hint=TASK_HINT)

    shape = "expected {'train': [...], 'test': [...]}"
    if not isinstance(task, dict):
        raise bad("", f"{shape}, found {_shown(task)}")
    if "test" not in task:
        raise bad("", f"{shape}; it has no 'test'")
    for key in ("train", "test"):
        if not isinstance(task.get(key, []), list):
            raise bad("", f"{shape}; its {key!r} is {_shown(task[key])}, not a list of pairs")
    out = {}
    for split in ("train", "test"):
        out[split] = []
        for i, ex in enumerate(task.get(split, [])):
            problem = _pair_problem(ex, needs_output=split == "train")
            if problem:
                raise bad(f" {split} pair {i}", problem)
            for k in ("input", "output"):
                if k in ex:
                    as_grid(ex[k], what=f"task {name} {split} pair {i} {k}", source=source)
            out[split].append(dict(ex))
    return out


def _pair_problem(ex, *, needs_output: bool) -> str | None:
    """What keeps `ex` from being a pair (a demonstration needs its output), or None."""
    want = "expected {'input': grid, 'output': grid}" if needs_output else \
        "expected {'input': grid}"
    if not isinstance(ex, dict):
        return f"{want}, found {_shown(ex)}"
    missing = [k for k in ("input", "output")[:2 if needs_output else 1] if k not in ex]
    if missing:
        return f"{want}; it has no {' and no '.join(map(repr, missing))}"
    return None


def to_canvas(grid: Grid, offset: tuple[int, int] = (0, 0),
              size: tuple[int, int] = (MAX_SIZE, MAX_SIZE)) -> np.ndarray:
    """TRM's canvas: [rows, cols] int64 tokens with the grid at `offset` and its eos border."""
    grid = np.asarray(grid)
    h, w = grid.shape
    r0, c0 = offset
    rows, cols = size
    if r0 < 0 or c0 < 0 or r0 + h > rows or c0 + w > cols:
        raise PtrmError(f"a {size_name(h, w)} ARC grid at offset ({r0}, {c0}) does not fit "
                        f"the {size_name(rows, cols)} canvas")
    out = np.zeros((rows, cols), dtype=np.int64)
    out[r0:r0 + h, c0:c0 + w] = grid.astype(np.int64) + COLOUR0
    if r0 + h < rows:
        out[r0 + h, c0:c0 + w] = EOS
    if c0 + w < cols:
        out[r0:r0 + h, c0 + w] = EOS
    return out


def crop(tokens: np.ndarray, offset: tuple[int, int] = (0, 0),
         size: tuple[int, int] = (MAX_SIZE, MAX_SIZE)) -> Grid:
    """TRM's `_crop` (evaluators/arc.py), anchored at `offset`: over rows from the top, the
    width is the run of colour tokens from the left, never widening; the answer is the
    (rows x width) rectangle of largest area, the first one on ties; colours = token - 2.
    Never raises on model output; may return a 0x0 grid."""
    canvas = np.asarray(tokens).reshape(size)[offset[0]:, offset[1]:]
    colour = (canvas >= COLOUR0) & (canvas < COLOUR0 + COLOURS)
    # run of colours from the left in each row, then the running minimum down the rows
    runs = np.where(colour.all(axis=1), colour.shape[1], np.argmin(colour, axis=1))
    widths = np.minimum.accumulate(runs) if len(runs) else runs
    areas = widths * np.arange(1, len(widths) + 1)
    if not len(areas) or areas.max() <= 0:
        return np.zeros((0, 0), dtype=np.int16)
    best = int(np.argmax(areas))  # first maximum, as TRM's strict '>' keeps
    return (canvas[:best + 1, :widths[best]] - COLOUR0).astype(np.int16)


# -- augmentation: pure functions and their inverses -----------------------------------------

def random_colour_map(rng: np.random.Generator) -> np.ndarray:
    """TRM's colour permutation: map[0] = 0, map[1..9] a permutation of 1..9."""
    return np.concatenate([[0], rng.permutation(np.arange(1, COLOURS))]).astype(np.int16)


def inverse_colour_map(mapping) -> np.ndarray:
    return np.argsort(np.asarray(mapping)).astype(np.int16)


def check_colour_map(mapping) -> np.ndarray:
    m = np.asarray(mapping, dtype=np.int16)
    if m.shape != (COLOURS,) or sorted(m.tolist()) != list(range(COLOURS)) or m[0] != 0:
        raise ValueError(f"a colour map is a permutation of 0..9 that keeps 0, got {m.tolist()}")
    return m


def augment_grid(grid: Grid, t: int, mapping) -> Grid:
    """TRM's `aug`: recolour, then dihedral symmetry t."""
    return dihedral.apply(np.asarray(mapping, dtype=np.int16)[np.asarray(grid)], t)


def deaugment_grid(grid: Grid, t: int, mapping) -> Grid:
    """The exact inverse of `augment_grid` (TRM's `inverse_aug`): inverse symmetry, then
    inverse recolouring."""
    return inverse_colour_map(mapping)[dihedral.apply(np.asarray(grid), dihedral.INVERSE[t])]


def aug_name(name: str, t: int, mapping) -> str:
    """`<name>|||t<t>|||<map>`, the map as 10 digits (map[c] for c = 0..9)."""
    return f"{name}{SEP}t{int(t)}{SEP}{''.join(str(int(x)) for x in mapping)}"


def parse_aug_name(name: str) -> tuple[str, int, np.ndarray]:
    """(original name, t, colour map) of an augmented puzzle name; a plain name is itself with
    the identity (t = 0, map 0123456789). Raises ValueError on a malformed suffix."""
    if SEP not in name:
        return name, 0, np.arange(COLOURS, dtype=np.int16)
    parts = name.split(SEP)
    if len(parts) < 3 or not parts[-2].startswith("t") or not parts[-2][1:].isdigit() \
            or not (parts[-1].isdigit() and len(parts[-1]) == COLOURS):
        raise ValueError(f"not an augmented ARC puzzle name: {name!r} (expected "
                         f"'<name>{SEP}t<0..7>{SEP}<10 digits>')")
    t = int(parts[-2][1:])
    if not 0 <= t < dihedral.COUNT:
        raise ValueError(f"{name!r}: dihedral id {t} is outside 0..7")
    return SEP.join(parts[:-2]), t, check_colour_map([int(ch) for ch in parts[-1]])


def deaugment(name: str, grid: Grid) -> tuple[str, Grid]:
    """A grid predicted for augmented puzzle `name`, taken back to the original task's frame:
    (original name, grid). What the ARC evaluator does to each cropped prediction."""
    base, t, mapping = parse_aug_name(name)
    return base, deaugment_grid(grid, t, mapping)


def random_offset(rng: np.random.Generator, shapes, size: tuple[int, int] = (MAX_SIZE, MAX_SIZE)
                  ) -> tuple[int, int]:
    """TRM's translation: a uniformly random top-left corner at which every grid of `shapes`
    (an example's input and output) fits the canvas."""
    h = max(s[0] for s in shapes)
    w = max(s[1] for s in shapes)
    if h > size[0] or w > size[1]:
        raise PtrmError(f"a {size_name(h, w)} ARC grid does not fit the {size_name(*size)} "
                        "canvas")
    return int(rng.integers(0, size[0] - h + 1)), int(rng.integers(0, size[1] - w + 1))


def grid_hash(grid: Grid) -> str:
    """TRM's `_grid_hash`: sha256 over the shape bytes and the uint8 cells (voting key)."""
    g = np.asarray(grid).astype(np.uint8)
    return hashlib.sha256(bytes(g.shape) + g.tobytes()).hexdigest()


def task_hash(task: dict) -> str:
    """TRM's `puzzle_hash`: order-free hash of all (input, output) pairs of a task (train and
    test; a test pair without output hashes its input alone)."""
    pairs = []
    for split in ("train", "test"):
        for ex in task.get(split, []):
            h = grid_hash(np.asarray(ex["input"]))
            if "output" in ex:
                h += "|" + grid_hash(np.asarray(ex["output"]))
            pairs.append(h)
    return hashlib.sha256("|".join(sorted(pairs)).encode()).hexdigest()


def augment_task_grids(task: dict, t: int, mapping) -> dict:
    """The task with every grid (inputs and known outputs, train and test) augmented."""
    def one(ex):
        return {k: augment_grid(np.asarray(v), t, mapping).tolist() for k, v in ex.items()
                if k in ("input", "output")}
    return {split: [one(ex) for ex in task.get(split, [])] for split in ("train", "test")}


def augment_task(task: dict, rng: np.random.Generator, num_aug: int, *, name: str = "task",
                 retries_factor: int = 5) -> list[tuple[str, dict]]:
    """Up to `num_aug` distinct augmented versions of a task, as (name, task) with TRM's names.

    As build_arc_dataset.py: draw t uniformly in 0..7 and a colour map, apply both to every
    grid, keep the version unless its hash equals the original's or one already kept; stop at
    num_aug versions or after retries_factor * num_aug draws (a task with symmetric grids and
    few colours has fewer distinct versions). The original itself is not in the list: TRM's
    group is [original] + these."""
    seen = {task_hash(task)}
    out: list[tuple[str, dict]] = []
    for _ in range(retries_factor * num_aug):
        if len(out) >= num_aug:
            break
        t = int(rng.integers(0, dihedral.COUNT))
        mapping = random_colour_map(rng)
        version = augment_task_grids(task, t, mapping)
        h = task_hash(version)
        if h not in seen:
            seen.add(h)
            out.append((aug_name(name, t, mapping), version))
    return out


def deaugment_task(name: str, task: dict) -> tuple[str, dict]:
    """Inverse of one `augment_task` entry: (original name, original task)."""
    base, t, mapping = parse_aug_name(name)
    back = {split: [{k: deaugment_grid(np.asarray(v), t, mapping).tolist()
                     for k, v in ex.items() if k in ("input", "output")}
                    for ex in task.get(split, [])] for split in ("train", "test")}
    return base, back


# -- Kaggle files -----------------------------------------------------------------------------

def solutions_path(challenges: str | Path) -> Path | None:
    """`..._challenges.json` -> its sibling `..._solutions.json`; None for a file named
    otherwise (its "sibling" would be itself)."""
    p = Path(challenges)
    if "_challenges" not in p.name:
        return None
    return p.with_name(p.name.replace("_challenges", "_solutions"))


def one_task(obj) -> bool:
    """Whether JSON `obj` is one task {"train", "test"} (even a malformed one), not a file of
    tasks keyed by id (whose values are tasks, never lists or strings)."""
    return isinstance(obj, dict) and any(k in obj and not isinstance(obj[k], dict)
                                         for k in ("train", "test"))


def _stem(source: str | None) -> str:
    """The name of a one-task file's task: the file's (`00576224.json` -> 00576224)."""
    return Path(source).stem if source else "task"


def load_tasks(challenges: str | Path, solutions: str | Path | None | bool = True
               ) -> dict[str, dict]:
    """A Kaggle challenges file as {task_id: {"train": [...], "test": [...]}} (grids as
    lists), with each test pair's "output" filled from the solutions file: the sibling
    `_solutions.json` when `solutions` is True (skipped if absent), a path, or none (False)."""
    path = Path(challenges)
    tasks = _read_json(path, "ARC tasks", CHALLENGES_HINT)
    _check_challenges(tasks, path)
    sol_path = None
    if solutions is True:
        sibling = solutions_path(path)
        sol_path = sibling if sibling is not None and sibling.exists() else None
    elif solutions:
        sol_path = Path(solutions)
    sols = _read_json(sol_path, "ARC solutions", SOLUTIONS_HINT) if sol_path else {}
    _check_solutions(sols, tasks, sol_path, path)
    out = {}
    for tid, task in tasks.items():
        out[tid] = task = check_task(task, tid, source=str(path))
        given = sols.get(tid, [])
        if not isinstance(given, list):
            raise ParseError(f"task {tid!r}: expected a list of output grids, one per test pair",
                             source=str(sol_path), hint=SOLUTIONS_HINT)
        if len(given) > len(task["test"]):  # outputs of another task, or of another file's
            raise ParseError(f"task {tid!r}: {len(given)} output grids for "
                             f"{len(task['test'])} test pair(s) in {path.name}",
                             source=str(sol_path), hint=SOLUTIONS_HINT)
        for i, grid in enumerate(given):
            as_grid(grid, what=f"task {tid} test pair {i} output", source=str(sol_path))
            task["test"][i]["output"] = grid
    return out


#: what a malformed challenges file's error suggests
CHALLENGES_HINT = ('a challenges file is {"<task id>": {"train": [pairs], "test": [{"input": '
                   'grid}]}, ...}')
#: what a malformed solutions file's error suggests
SOLUTIONS_HINT = ("a solutions file is {\"<task id>\": [output grid, ...]}, one grid per test "
                  "pair of that task in the challenges file beside it")


def _check_challenges(tasks, path: Path) -> None:
    """A challenges file maps task ids to tasks; one task or one pair on its own is said as
    such (read as {task_id: task} it was "ARC task 'test': expected {...}", a task named after
    a key of the file's one task)."""
    pair = isinstance(tasks, dict) and isinstance(tasks.get("input"), list)
    if pair or one_task(tasks):
        what = "one ARC pair {input, output}" if pair else \
            "one ARC task {train, test}"
        raise ParseError(f"this file holds {what}, not a Kaggle challenges file "
                         "{task_id: {train, test}, ...}", source=str(path),
                         hint=('a challenges file is {"<task id>": {"train": [pairs], "test": '
                               '[{"input": grid}]}}') if pair else
                         (f'wrap it as {{"{path.stem}": <the task>}}; `ptrm solve` reads a '
                          "one-task file as it is"))
    if not isinstance(tasks, dict):
        raise ParseError(f"an ARC challenges file maps task ids to tasks {{train, test}}, this "
                         f"one holds {_shown(tasks)}", source=str(path),
                         hint=f"{CHALLENGES_HINT}; `ptrm solve` reads a lone grid")


def _check_solutions(sols, tasks: dict, sol_path: Path | None, path: Path) -> None:
    """A solutions file maps task ids to lists of outputs, and names tasks of the challenges
    file: one that names none of them belongs to another file, and would leave every test
    pair without its output (unscored, or refused for training) without a word."""
    if not isinstance(sols, dict):
        raise ParseError(f"an ARC solutions file maps task ids to lists of output grids, this "
                         f"one holds {_shown(sols)}", source=str(sol_path), hint=SOLUTIONS_HINT)
    if sols and tasks and not any(tid in tasks for tid in sols):
        raise ParseError(f"this ARC solutions file names none of the {len(tasks)} tasks of "
                         f"{path.name} (it has {next(iter(sols))!r}, the challenges "
                         f"{next(iter(tasks))!r})", source=str(sol_path),
                         hint="is it the solutions file of another challenges file?")


def _read_json(path: Path, what: str, hint: str | None = None):
    try:
        return json.loads(path.read_text())
    except OSError as e:
        raise ParseError(f"cannot read {what}: {e.strerror or e}", source=str(path)) from None
    except UnicodeDecodeError as e:
        raise ParseError(f"{what} file is not UTF-8 text: {e.reason} at byte {e.start}",
                         source=str(path)) from None
    except json.JSONDecodeError as e:
        raise ParseError(f"{what} file is {json_problem(e)}", source=str(path),
                         line=e.lineno, hint=hint) from None


# -- the codec -------------------------------------------------------------------------------

class ArcCodec(Codec):
    name = "arc"
    description = "ARC-AGI: one input grid -> its output grid (TRM canvas)"
    families = (ARC,)
    EMPTY = -1
    rules = ("No fixed rules: a task shows a few input -> output grid pairs, and the answer is "
             "the output grid that the same hidden transformation gives for a test input. An "
             "answer is judged against a known output (a pair, a task with its solutions); a "
             "lone grid is answered but not judged.")
    example = '{"input": [[0, 1], [1, 1]], "output": [[1, 0], [0, 0]]}'
    # EMPTY too, as every codec's legend: no answer holds it, `trajectory`'s empty grid does
    legend = {EMPTY: "no colour (EMPTY; an answer is produced whole, so never in one)",
              **dict(enumerate(COLOUR_NAMES))}
    has_rules = False  # an answer is right or wrong against the expected output, nothing else

    # -- puzzles ---------------------------------------------------------------------------
    def puzzle(self, grid, *, output=None, source: str | None = None, **meta) -> Puzzle:
        """A puzzle from an input grid; `output` (the known answer) goes into meta. `source`
        names the file in errors."""
        g = as_grid(grid, what="input", source=source)
        if output is not None:
            meta["output"] = as_grid(output, what="output", source=source).tolist()
        return Puzzle(self.name, g.shape[0], g.shape[1], g.astype(np.int8), meta)

    def examples(self, task_id: str, task: dict) -> list[tuple[Puzzle, Solution | None]]:
        """Every pair of a task (demonstrations, then tests) as (puzzle, solution or None)."""
        out = []
        for split in ("train", "test"):
            for i, ex in enumerate(task.get(split, [])):
                p = self.puzzle(ex["input"], output=ex.get("output"), task=task_id, split=split,
                                example=i)
                s = Solution(self.name, np.asarray(p.meta["output"], dtype=np.int16)) \
                    if "output" in p.meta else None
                out.append((p, s))
        return out

    # -- parsing ---------------------------------------------------------------------------
    def parse(self, text: str, *, source: str | None = None) -> Parsed:
        try:
            obj = load_json(text)
        except json.JSONDecodeError as e:
            raise ParseError(f"ARC input (a task, a pair or a grid) is {json_problem(e)}",
                             source=source, line=e.lineno, hint=GRID_HINT) from None
        puzzle, solution, fmt = self._read(obj, source=source)
        return Parsed(puzzle, solution, fmt)

    def _read(self, obj, *, source=None) -> tuple[Puzzle, Solution | None, str]:
        if isinstance(obj, list):
            return self.puzzle(obj, source=source), None, "grid"
        if not isinstance(obj, dict):
            raise ParseError(f"ARC input: expected a task, an {{input, output}} pair or a grid, "
                             f"found {_shown(obj)}", source=source, hint=TASK_HINT)
        if "input" in obj:
            meta = {k: obj[k] for k in ("task", "split", "example") if k in obj}
            p = self.puzzle(obj["input"], output=obj.get("output"), source=source, **meta)
            return p, self._known(p), "pair"
        if one_task(obj):
            return self._first_test(obj.get("id") or _stem(source), obj, source)
        # a file of tasks {id: task}, or a record holding them beside its own fields
        entries = {k: v for k, v in obj.items() if k not in RECORD_FIELDS}
        tasks = [k for k, v in entries.items() if isinstance(v, dict) and "test" in v]
        if not tasks:
            raise ParseError("ARC input: expected a task {train, test}, a pair {input, output} or "
                             "a grid", source=source, hint=TASK_HINT)
        odd = next((k for k in entries if k not in tasks), None)
        if odd is not None:  # a file of tasks with one that is not: that one is the mistake
            check_task(entries[odd], odd, source=source)
        if len(tasks) == 1:
            return self._first_test(tasks[0], entries[tasks[0]], source)
        # --task goes to the task pipeline, which needs a model with per-task embeddings
        raise ParseError(f"this file holds {len(tasks)} ARC tasks; pass one task",
                         source=source, hint=f"with an ARC model trained on them, ptrm solve FILE "
                                             f"--task ID (e.g. --task {tasks[0]}); with any "
                                             "other, save one task to a file of its own; in "
                                             "Python, ptrm_codecs.arc.load_tasks reads them all")

    def _first_test(self, task_id, task, source):
        task = check_task(task, str(task_id), source=source)
        if not task["test"]:
            raise ParseError(f"ARC task {str(task_id)!r} has no test pair: its 'test' list is "
                             "empty", source=source, hint=TASK_HINT)
        ex = task["test"][0]
        p = self.puzzle(ex["input"], output=ex.get("output"), source=source, task=str(task_id),
                        split="test", example=0)
        return p, self._known(p), "task"

    def _known(self, puzzle: Puzzle) -> Solution | None:
        out = puzzle.meta.get("output")
        return None if out is None else Solution(self.name, np.asarray(out, dtype=np.int16))

    def sniff(self, text: str) -> bool:
        """JSON shaped like ARC: a grid, a pair, a task or a file of tasks. A bracketed text
        that is not valid JSON, an empty list or a list of lists is taken as a grid too, so
        `parse` says what is wrong with it (a cut-short grid, a ragged row, a bad colour)
        rather than "cannot tell the puzzle type"; a JSON list of anything else (records, say)
        is not ARC's to claim, and is left to the other codecs and to --codec."""
        s = text.strip()
        if not s.startswith(("[", "{")):
            return False
        try:
            obj = load_json(s)
        except ValueError:
            return s.startswith("[")
        if isinstance(obj, list):
            return all(isinstance(row, list) for row in obj)
        return isinstance(obj, dict) and ("input" in obj or one_task(obj) or any(
            isinstance(v, dict) and "test" in v for v in obj.values()))

    def from_record(self, record: dict, *, source: str | None = None,
                    line: int | None = None) -> tuple[Puzzle, Solution]:
        """ptrm records ({"type": "arc", "text": <input grid JSON>, "answer": <output grid>};
        build-data's JSONL reader hands the text over as "url"), pairs and tasks (the first
        test pair). The record must carry the output."""
        if not isinstance(record, dict):
            raise ParseError("an ARC record is a JSON object", source=source, line=line)
        text = record.get("text", record.get("url"))
        meta = {k: record[k] for k in ("task", "split", "example", "id") if k in record}
        if text is not None and not any(k in record for k in ("input", "train", "test")):
            p = self._record_puzzle(record, text, meta, source=source, line=line)
        else:
            p, _, _ = self._read(record, source=source)
            p.meta.update(meta)
        s = self._known(p)
        if s is None:
            raise ParseError("ARC record without an output: nothing to train or score on",
                             source=source, line=line, hint=NO_OUTPUT_HINT)
        return p, s

    def _record_puzzle(self, record: dict, text, meta: dict, *, source, line) -> Puzzle:
        """A ptrm record's puzzle: "text" the input grid as JSON (or as the list itself, as a
        hand-written record may have it), "answer" the output grid."""
        if "answer" not in record:
            raise ParseError("ARC record without an output ('answer': the output grid): nothing "
                             "to train or score on", source=source, line=line,
                             hint=NO_OUTPUT_HINT)
        grid = text
        if isinstance(text, str):
            try:
                grid = load_json(text)
            except json.JSONDecodeError as e:
                raise ParseError(f"ARC record text (the input grid as JSON) is {json_problem(e)}",
                                 source=source, line=line, hint=GRID_HINT) from None
        return self.puzzle(grid, output=record["answer"], source=source, **meta)

    def to_record(self, puzzle: Puzzle, solution: Solution, **extra) -> dict:
        meta = {k: puzzle.meta[k] for k in ("task", "split", "example") if k in puzzle.meta}
        return {"type": self.name, "text": json.dumps(puzzle.clues.astype(int).tolist(),
                                                      separators=(",", ":")),
                "answer": np.asarray(solution.grid).astype(int).tolist(), **meta, **extra}

    def key(self, puzzle: Puzzle) -> str:
        rows = "/".join("".join(str(int(v)) for v in row) for row in puzzle.clues)
        task = puzzle.meta.get("task")
        return f"arc/{task}/{puzzle.rows}x{puzzle.cols}/{rows}" if task is not None \
            else f"arc/{puzzle.rows}x{puzzle.cols}/{rows}"

    def canonical_key(self, puzzle: Puzzle) -> str:
        # a rotated example is another example, not a duplicate: no minimum over symmetries
        return self.key(puzzle)

    # -- tokens ----------------------------------------------------------------------------
    def _offset(self, puzzle: Puzzle, offset) -> tuple[int, int]:
        off = offset if offset is not None else puzzle.meta.get("offset", (0, 0))
        return int(off[0]), int(off[1])

    def encode(self, puzzle, state=None, family: Family | None = None, *, offset=None):
        """The input grid on the canvas at `offset` (default: meta's, else (0, 0)); `state` is
        ignored (ARC has no partial answers)."""
        family = family or self.family()
        return to_canvas(puzzle.clues, self._offset(puzzle, offset),
                         (family.rows, family.cols)).reshape(-1)

    def encode_label(self, puzzle, solution, family: Family | None = None, *, offset=None):
        """The output grid on the canvas at the same offset as the input."""
        family = family or self.family()
        grid = np.asarray(solution.grid)
        if grid.ndim != 2 or grid.size == 0 or grid.min() < 0 or grid.max() >= COLOURS:
            raise PtrmError(f"an ARC output is a non-empty grid of colours 0..9, got "
                            f"shape {grid.shape}")
        return to_canvas(grid, self._offset(puzzle, offset), (family.rows, family.cols)).reshape(-1)

    def decode(self, puzzle, tokens, family: Family | None = None, *, offset=None):
        family = family or self.family()
        return Solution(self.name, crop(tokens, self._offset(puzzle, offset),
                                        (family.rows, family.cols)))

    # -- rules -----------------------------------------------------------------------------
    def judges(self, puzzle):
        return puzzle.meta.get("output") is not None

    def verify(self, puzzle, solution):
        """ARC has no rules: the only check is against a known output (meta "output")."""
        known = puzzle.meta.get("output")
        if known is None:
            return []
        want = np.asarray(known)
        got = np.asarray(solution.grid)
        # the messages are the verdict users read (`ptrm solve` shows them without the code):
        # said of the expected output, as there is no rule to name
        if got.ndim != 2:
            return [Violation("mismatch", "the answer is not a grid")]
        if got.shape != want.shape:
            return [Violation("mismatch", f"wrong size: {size_name(*got.shape)}, expected "
                                          f"{size_name(*want.shape)}")]
        diff = tuple((int(r), int(c)) for r, c in np.argwhere(got != want))
        if diff:
            return [Violation("mismatch", f"differs from the expected output in {len(diff)} of "
                              f"{want.size} cells: {cells_named(diff)}", diff)]
        return []

    # -- augmentation ----------------------------------------------------------------------
    def transform(self, puzzle, solution, t):
        """Dihedral symmetry t on the input, the solution and the known output. A translation
        offset in meta is kept as it is (the caller re-draws it: it may no longer fit)."""
        meta = dict(puzzle.meta)
        if meta.get("output") is not None:
            meta["output"] = dihedral.apply(np.asarray(meta["output"]), t).tolist()
        clues = dihedral.apply(puzzle.clues, t)
        p = Puzzle(self.name, clues.shape[0], clues.shape[1], clues, meta)
        s = None if solution is None else Solution(self.name, dihedral.apply(solution.grid, t))
        return p, s

    def required_cells(self, puzzle, solution):
        return []  # an ARC answer is produced whole: no moves, no trajectory states

    def trajectory(self, puzzle, solution, k):
        return Solution(self.name, np.full_like(np.asarray(solution.grid), self.EMPTY))

    # -- people ----------------------------------------------------------------------------
    def render(self, puzzle, solution=None):
        cols = [grid_text(puzzle.clues, "input")]
        if solution is not None:
            known = puzzle.meta.get("output")
            ok = None if known is None else not self.verify(puzzle, solution)
            title = "output" + ("" if ok is None else (" (correct)" if ok else " (wrong)"))
            cols += [Text("\n→", style="bold"), grid_text(solution.grid, title)]
            if ok is False:  # a verdict without the right answer beside it says too little
                cols.append(grid_text(known, "expected"))
        return side_by_side(cols)


def side_by_side(blocks: list[Text], gap: int = 2) -> Text:
    """Texts as columns, joined line by line into one Text. Not a Rich Table: a table squeezes
    its columns into the terminal, which folds each row of a wide grid (a 30x30 output is 60
    columns) into several lines; whole lines stay a grid in a file, and a terminal too narrow
    for them folds them for display only."""
    lines = [b.split("\n", allow_blank=True) for b in blocks]
    widths = [max(ln.cell_len for ln in block) for block in lines]
    out = Text()
    for i in range(max(len(block) for block in lines)):
        row = Text()
        for j, block in enumerate(lines):
            part = block[i] if i < len(block) else Text()
            row.append_text(part)
            row.append(" " * (widths[j] - part.cell_len + gap))
        row.rstrip()
        out.append_text(row)
        out.append("\n")
    out.rstrip()
    return out


def grid_text(grid, title: str) -> Text:
    """A grid as coloured cells under a bold `title HxW` line (for Rich)."""
    grid = np.asarray(grid)
    out = Text(f"{title} {grid.shape[0]}x{grid.shape[1] if grid.ndim == 2 else 0}\n",
               style="bold")
    for r, row in enumerate(grid):
        for v in row:
            v = int(v)
            out.append(f"{v} " if 0 <= v < COLOURS else "? ",
                       style=f"black on {PALETTE[v]}" if 0 <= v < COLOURS else "red")
        if r < len(grid) - 1:
            out.append("\n")
    return out
