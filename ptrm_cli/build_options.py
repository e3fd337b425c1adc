"""What a `ptrm build-data` run takes and what it reports: the options, the per-file and
overall result, and the ledger that accounts for every record read (kept in a split, or
dropped with a reason). The other build_* modules and `build.build` share these; nothing here
reads a file or runs a codec.

The drop reasons live here, with their meanings, because the ledger, the summary table and
docs/BUILD_DATA.md all list them in this order.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path

from .engine.data import ANY_SIZE
from .errors import PtrmError

#: the paper's six PPBench types, in its table's order
PPBENCH_TYPES = ("sudoku", "lightup", "nurikabe", "heyawake", "tapa", "shakashaka")
#: kept grid sizes (rows, cols) in the PPBench family: the paper keeps 9x9 sudoku and 10x10
#: for the others; any other family keeps its own grid (maze 30x30, sudoku-native 9x9)
DEFAULT_SIZES = {"sudoku": (9, 9), "*": (10, 10)}


def default_sizes(family) -> dict[str, tuple[int, int] | None]:
    """The kept sizes when --sizes is not given: the paper's for the PPBench family (or when
    no codec named a family), else the family's own grid."""
    if family is None or family.name == "ppbench":
        return dict(DEFAULT_SIZES)
    return {"*": (family.rows, family.cols)}


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
    "wrong size": "not the kept size of its type (--sizes; default: PPBench sudoku 9x9, others "
                  "10x10; another family's own grid)",
    "no solution": "a solution-less puzzle the solver found unsolvable",
    "not unique": "a solution-less puzzle with more than one solution",
    "invalid solution": "the record's solution breaks the type's rules (codec verifier)",
    "does not fit": "the puzzle has no tokens in the family's vocabulary (a clue too large, a '?')",
    "decode error": "the codec failed on the record (a codec bug or an unexpected record)",
    "duplicate": "the same puzzle up to symmetry (canonical key) as an earlier one",
    "in golden": "the same puzzle up to symmetry as a golden puzzle: kept out of train and val",
    "excluded": "the same puzzle up to symmetry as one of a dataset given to --exclude",
    "augment error": "the codec failed while augmenting the puzzle",
    "below min difficulty": "a rated record (Sudoku-Extreme or Maze-Hard CSV) with rating < "
                            "--min-difficulty",
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
    #: kept size per type ("*": the others; a size of None: any that fits the family grid);
    #: None = the family's default (`default_sizes`), resolved by `build`
    sizes: dict[str, tuple[int, int] | None] | None = None
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
    #: canonical keys of other builds' puzzles, every split (`--exclude`): dropped here, so a
    #: new held-out set shares no puzzle (nor a transformed copy) with those builds
    exclude_keys: frozenset[str] = frozenset()

    def val_count(self, type_name: str) -> int:
        return self.val_overrides.get(type_name, self.val_per_type)

    def size_of(self, type_name: str) -> tuple[int, int] | None:
        sizes = DEFAULT_SIZES if self.sizes is None else self.sizes
        return sizes.get(type_name, sizes.get("*"))

    def recorded(self) -> dict:
        """The options that shape the output (stored in meta.json; workers and progress
        do not change a byte)."""
        return {"seed": self.seed, "val_per_type": self.val_per_type,
                "val_overrides": dict(sorted(self.val_overrides.items())),
                "val_pool": self.val_pool, "augment": self.augment, "types": list(self.types),
                "val_from": None if self.val_keys is None else len(self.val_keys),
                "exclude": len(self.exclude_keys),
                "sizes": {k: ANY_SIZE if v is None else f"{v[0]}x{v[1]}"
                          for k, v in sorted((self.sizes or DEFAULT_SIZES).items())},
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
