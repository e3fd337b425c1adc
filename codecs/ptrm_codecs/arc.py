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
from ptrm_cli.codec import Codec, Family, Parsed, Puzzle, Solution, Violation, cells_named
from ptrm_cli.errors import ParseError, PtrmError

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


# -- grids -------------------------------------------------------------------------------------

def as_grid(obj, *, what: str = "grid", source: str | None = None) -> Grid:
    """A list of rows of colours 0..9 -> [h, w] int16; a ParseError for anything else (the
    first bad cell is named: a colour 1.5 or "3" is not silently made 1 or 3)."""
    try:
        grid = np.asarray(obj)
    except (TypeError, ValueError):
        grid = None
    if grid is None or grid.dtype == object:
        raise ParseError(f"ARC {what}: expected a rectangular list of rows of colours 0..9",
                         source=source)
    if grid.ndim != 2 or grid.shape[0] < 1 or grid.shape[1] < 1:
        raise ParseError(f"ARC {what}: expected a non-empty rectangular grid, got shape "
                         f"{grid.shape}", source=source)
    if grid.shape[0] > MAX_SIZE or grid.shape[1] > MAX_SIZE:
        raise ParseError(f"ARC {what} is {grid.shape[0]}x{grid.shape[1]}; ARC grids are at most "
                         f"{MAX_SIZE}x{MAX_SIZE}", source=source)
    # numpy reads [[true, 2]] as [[1, 2]]: booleans are looked for in the values as given
    given_bool = not isinstance(obj, np.ndarray) and any(isinstance(v, bool) for row in obj
                                                         for v in row)
    if grid.dtype.kind not in "iu" or given_bool or grid.min() < 0 or grid.max() >= COLOURS:
        cells = np.asarray(obj, dtype=object)
        ok = np.vectorize(lambda v: isinstance(v, (int, np.integer)) and not isinstance(v, bool)
                          and 0 <= v < COLOURS, otypes=[bool])(cells)
        r, c = (int(x) for x in np.argwhere(~ok)[0])
        raise ParseError(f"ARC {what}: colours are 0..9 (whole numbers), found "
                         f"{cells[r, c]!r} at row {r + 1}, column {c + 1}", source=source)
    return grid.astype(np.int16)


def check_task(task, name: str, *, source: str | None = None) -> dict:
    """A task {"train": [pairs], "test": [pairs]} with every pair and grid checked (colours
    0..9, at most 30x30; a test pair may lack its output), as a copy with the pairs as new
    dicts; a ParseError naming the task, the pair and the grid otherwise."""
    if not isinstance(task, dict) or not isinstance(task.get("test"), list) \
            or not isinstance(task.get("train", []), list):
        raise ParseError(f"ARC task {name!r}: expected {{'train': [...], 'test': [...]}}",
                         source=source)
    out = {}
    for split in ("train", "test"):
        out[split] = []
        for i, ex in enumerate(task.get(split, [])):
            if not isinstance(ex, dict) or "input" not in ex \
                    or (split == "train" and "output" not in ex):
                want = "{'input': grid, 'output': grid}" if split == "train" else \
                    "{'input': grid}"
                raise ParseError(f"ARC task {name!r} {split} pair {i}: expected {want}",
                                 source=source)
            for k in ("input", "output"):
                if k in ex:
                    as_grid(ex[k], what=f"task {name} {split} pair {i} {k}", source=source)
            out[split].append(dict(ex))
    return out


def to_canvas(grid: Grid, offset: tuple[int, int] = (0, 0),
              size: tuple[int, int] = (MAX_SIZE, MAX_SIZE)) -> np.ndarray:
    """TRM's canvas: [rows, cols] int64 tokens with the grid at `offset` and its eos border."""
    grid = np.asarray(grid)
    h, w = grid.shape
    r0, c0 = offset
    rows, cols = size
    if r0 < 0 or c0 < 0 or r0 + h > rows or c0 + w > cols:
        raise PtrmError(f"a {h}x{w} ARC grid at offset ({r0}, {c0}) does not fit the "
                        f"{rows}x{cols} canvas")
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
        raise PtrmError(f"a {h}x{w} ARC grid does not fit the {size[0]}x{size[1]} canvas")
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


def load_tasks(challenges: str | Path, solutions: str | Path | None | bool = True
               ) -> dict[str, dict]:
    """A Kaggle challenges file as {task_id: {"train": [...], "test": [...]}} (grids as
    lists), with each test pair's "output" filled from the solutions file: the sibling
    `_solutions.json` when `solutions` is True (skipped if absent), a path, or none (False)."""
    path = Path(challenges)
    tasks = _read_json(path, "ARC tasks")
    # one task or one pair read as {task_id: task} was "ARC task 'test': expected {...}": a
    # task named after a key of the file's one task
    pair = isinstance(tasks, dict) and isinstance(tasks.get("input"), list)
    if pair or isinstance(tasks, dict) and isinstance(tasks.get("test"), list):
        what = "one ARC pair {input, output}" if pair else \
            "one ARC task {train, test}"
        raise ParseError(f"this file holds {what}, not a Kaggle challenges file "
                         "{task_id: {train, test}, ...}", source=str(path),
                         hint=('a challenges file is {"<task id>": {"train": [pairs], "test": '
                               '[{"input": grid}]}}') if pair else
                         (f'wrap it as {{"{path.stem}": <the task>}}; `ptrm solve` reads a '
                          "one-task file as it is"))
    if not isinstance(tasks, dict):
        raise ParseError("an ARC challenges file maps task ids to tasks {train, test}",
                         source=str(path))
    sol_path = None
    if solutions is True:
        sibling = solutions_path(path)
        sol_path = sibling if sibling is not None and sibling.exists() else None
    elif solutions:
        sol_path = Path(solutions)
    sols = _read_json(sol_path, "ARC solutions") if sol_path else {}
    if not isinstance(sols, dict):
        raise ParseError("an ARC solutions file maps task ids to lists of output grids",
                         source=str(sol_path))
    out = {}
    for tid, task in tasks.items():
        out[tid] = task = check_task(task, tid, source=str(path))
        given = sols.get(tid, [])
        if not isinstance(given, list):
            raise ParseError(f"task {tid!r}: expected a list of output grids, one per test pair",
                             source=str(sol_path))
        for i, grid in enumerate(given[:len(task["test"])]):
            as_grid(grid, what=f"task {tid} test pair {i} output", source=str(sol_path))
            task["test"][i]["output"] = grid
    return out


def _read_json(path: Path, what: str):
    try:
        return json.loads(path.read_text())
    except OSError as e:
        raise ParseError(f"cannot read {what}: {e.strerror or e}", source=str(path)) from None
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ParseError(f"{what} file is not valid JSON: {getattr(e, 'msg', e)}",
                         source=str(path), line=getattr(e, "lineno", None)) from None


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
            obj = json.loads(text)
        except json.JSONDecodeError as e:
            raise ParseError(f"ARC input is JSON (a task, a pair or a grid): {e.msg}",
                             source=source, line=e.lineno) from None
        puzzle, solution, fmt = self._read(obj, source=source)
        return Parsed(puzzle, solution, fmt)

    def _read(self, obj, *, source=None) -> tuple[Puzzle, Solution | None, str]:
        if isinstance(obj, list):
            return self.puzzle(obj, source=source), None, "grid"
        if not isinstance(obj, dict):
            raise ParseError("ARC input: expected a task, an {input, output} pair or a grid",
                             source=source)
        if "input" in obj:
            meta = {k: obj[k] for k in ("task", "split", "example") if k in obj}
            p = self.puzzle(obj["input"], output=obj.get("output"), source=source, **meta)
            return p, self._known(p), "pair"
        if "test" in obj:
            return self._first_test(obj.get("id", source or "task"), obj, source)
        tasks = [(k, v) for k, v in obj.items() if isinstance(v, dict) and "test" in v]
        if len(tasks) == 1 and len(obj) == 1:
            return self._first_test(tasks[0][0], tasks[0][1], source)
        if tasks:
            raise ParseError(f"this file holds {len(tasks)} ARC tasks; pass one task",
                             source=source, hint=f"ptrm solve FILE --task ID (e.g. --task "
                                                 f"{tasks[0][0]}); in Python, "
                                                 "ptrm_codecs.arc.load_tasks reads them all")
        raise ParseError("ARC input: expected a task {train, test}, a pair {input, output} or "
                         "a grid", source=source)

    def _first_test(self, task_id, task, source):
        if not task.get("test"):
            raise ParseError(f"ARC task {task_id!r} has no test pair", source=source)
        ex = task["test"][0]
        p = self.puzzle(ex["input"], output=ex.get("output"), source=source, task=str(task_id),
                        split="test", example=0)
        return p, self._known(p), "task"

    def _known(self, puzzle: Puzzle) -> Solution | None:
        out = puzzle.meta.get("output")
        return None if out is None else Solution(self.name, np.asarray(out, dtype=np.int16))

    def sniff(self, text: str) -> bool:
        """JSON shaped like ARC: a grid of integers, a pair, a task or a file of tasks."""
        s = text.strip()
        if not s or s[0] not in "[{":
            return False
        try:
            obj = json.loads(s)
        except ValueError:
            return False
        if isinstance(obj, list):
            return bool(obj) and all(isinstance(row, list) and row and all(
                isinstance(v, int) and not isinstance(v, bool) for v in row) for row in obj)
        if isinstance(obj, dict):
            return "input" in obj or "test" in obj or (bool(obj) and all(
                isinstance(v, dict) and "test" in v for v in obj.values()))
        return False

    def from_record(self, record: dict, *, source: str | None = None,
                    line: int | None = None) -> tuple[Puzzle, Solution]:
        """ptrm records ({"type": "arc", "text": <input grid JSON>, "answer": <output grid>};
        build-data's JSONL reader hands the text over as "url"), pairs and tasks (the first
        test pair). The record must carry the output."""
        if not isinstance(record, dict):
            raise ParseError("an ARC record is a JSON object", source=source, line=line)
        text = record.get("text", record.get("url"))
        meta = {k: record[k] for k in ("task", "split", "example", "id") if k in record}
        if isinstance(text, str) and "answer" in record:
            try:
                grid = json.loads(text)
            except json.JSONDecodeError as e:
                raise ParseError(f"ARC record text is the input grid as JSON: {e.msg}",
                                 source=source, line=line) from None
            p = self.puzzle(grid, output=record["answer"], source=source, **meta)
        else:
            p, _, _ = self._read(record, source=source)
            p.meta.update(meta)
        s = self._known(p)
        if s is None:
            raise ParseError("ARC record without an output: nothing to train or score on",
                             source=source, line=line)
        return p, s

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
            return [Violation("mismatch", f"wrong size: {got.shape[0]}x{got.shape[1]}, "
                                          f"expected {want.shape[0]}x{want.shape[1]}")]
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
