"""The generator interface: what every puzzle type module under `ptrm_cli.generate` provides.

A generator works on its own small `Instance` (clues, fixed structure such as walls or rooms,
and the answer), proves uniqueness with the SAT helpers in `sat.py`, and hands the finished
puzzle to the type's codec as pzprv3 text *with the answer* (PPBENCH_FORMATS.md §2.6, §4).
`codec.parse` of that text gives the codec's own Puzzle and Solution, `codec.verify` checks the
solution independently, and `codec.to_record` writes the line `ptrm build-data` reads. So a
generator never depends on a codec's internals, only on the published text formats.

Determinism: `make` draws every random choice from the `rng` it is given, and the runner seeds
that rng from (seed, type, index) alone; the SAT solver is deterministic. Puzzle i is therefore
the same whichever worker makes it, and whatever the worker count.
"""

from __future__ import annotations

import math
import zlib
from abc import ABC, abstractmethod
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..codec import size_name
from ..errors import PtrmError

Cell = tuple[int, int]


@dataclass
class Knobs:
    """How to shape the puzzles. `minimal`: remove clues until none can go (the default).
    `max_clues`: stop removing once this many remain (an easier, denser puzzle; wins over
    `minimal`). `min_difficulty`: keep drawing puzzles until the solver needs at least this many
    conflicts to solve one and prove it unique (harder puzzles; costs time). `params`: per-type
    settings, documented in each type module (e.g. lightup `walls=0.2`)."""

    minimal: bool = True
    max_clues: int | None = None
    min_difficulty: int = 0
    params: dict[str, float] = field(default_factory=dict)

    def param(self, name: str, default: float) -> float:
        return float(self.params.get(name, default))

    def tag(self) -> str:
        """A short string that names these knobs; stored with each record so that a resumed run
        refuses to mix puzzles made with different settings."""
        parts = [] if self.minimal else ["not-minimal"]
        if self.max_clues is not None:
            parts.append(f"max_clues={self.max_clues}")
        if self.min_difficulty:
            parts.append(f"min_difficulty={self.min_difficulty}")
        parts += [f"{k}={_number(v)}" for k, v in sorted(self.params.items())]
        return ",".join(parts) or "default"


def _number(v: float) -> str:
    """`:g` (the tags files already hold), or every digit where `:g` would round: walls=0.2
    and walls=0.2000001 were both "walls=0.2", so a resumed run mixed their puzzles."""
    return f"{v:g}" if float(f"{v:g}") == v else repr(v)


@dataclass
class Instance:
    """One puzzle in a generator's own terms.

    clues:  {(r, c): value} of the clue cells (sudoku digit, wall number, island size, tapa
            clue as a sorted tuple, heyawake room number keyed by the room's top cell)
    fixed:  structure that is not a clue: lightup walls / shakashaka black cells (a set of
            cells, numbered or not), heyawake rooms (an int grid of room ids)
    answer: the solution as an int grid in the type module's own convention (documented there)
    """

    rows: int
    cols: int
    clues: dict[Cell, Any]
    fixed: Any = None
    answer: np.ndarray | None = None
    stats: dict = field(default_factory=dict)  # difficulty, attempts


class GenerationFailed(Exception):
    """One attempt did not give a valid unique puzzle; the caller draws again."""


class OverBudget(GenerationFailed):
    """A budgeted solve (`sat.Search.solve(budget=...)`) spent its conflicts: the draw is
    dropped like any other failed attempt."""


class Generator(ABC):
    #: codec / PPBench name
    name: str = ""
    #: (rows, cols) used when --size is not given
    default_size: tuple[int, int] = (10, 10)
    #: how many fresh attempts `make` may use before giving up (each is cheap)
    max_attempts: int = 200
    #: per-type params with their defaults, for --help and docs
    params: dict[str, tuple[float, str]] = {}
    #: the params that are fractions, chances or 0/1 switches: checked to lie in [0, 1]
    fractions: frozenset[str] = frozenset()
    #: the params that are 0/1 switches: any other value is refused (0.5 read as "on", yet
    #: tagged apart from 1, so a file made with it resumed only with 0.5 again)
    switches: frozenset[str] = frozenset()
    #: the params that count (repairs, tries, steps): a fraction is refused (2.5 ran as 2, yet
    #: was tagged apart from 2, as a switch's 0.5 was)
    counts: frozenset[str] = frozenset()
    #: raised when the same (seed, index, knobs) starts making other puzzles; records say it
    #: from 2 on ("version"), and a file is only ever completed by its own version
    version: int = 1
    #: the page whose tables explain this type's knobs (what a refused knob's hint points to)
    docs: str = "docs/GENERATORS.md"

    def check_size(self, rows: int, cols: int) -> None:
        if not (4 <= rows <= 30 and 4 <= cols <= 30):
            raise PtrmError(f"{self.name}: size {size_name(rows, cols)} is out of range "
                            "(4..30 a side)", hint=self.size_hint())

    def size_hint(self) -> str:
        """The sizes this type makes, as a refused --size's hint says them."""
        rows, cols = self.default_size
        return f"{self.name} takes --size ROWSxCOLS, 4 to 30 a side (default {rows}x{cols})"

    def knob_hint(self, key: str) -> str:
        """Where to go from a refused value of knob `key` (the message says what it means)."""
        return (f"{key} defaults to {self.params[key][0]:g}; the {self.name} knobs and what "
                f"they do: {self.docs}")

    def check_params(self, knobs: Knobs) -> None:
        unknown = sorted(set(knobs.params) - set(self.params))
        if unknown:
            known = ", ".join(f"{k} (default {v[0]:g}: {v[1]})" for k, v in self.params.items())
            raise PtrmError(f"{self.name}: unknown --param {', '.join(unknown)}",
                            hint=f"{self.name} takes: {known or 'no params'}")
        for key, value in knobs.params.items():  # NaN passes every range check below
            if not math.isfinite(value):
                raise PtrmError(f"{self.name}: --param {key}={value:g}: expected a finite number "
                                f"({self.params[key][1]})",
                                hint=self.knob_hint(key))
            if value < 0:  # every knob is a fraction, a chance, a weight or a count
                raise PtrmError(f"{self.name}: --param {key}={value:g}: expected a number >= 0 "
                                f"({self.params[key][1]})", hint=self.knob_hint(key))
            if key in self.fractions and value > 1:
                raise PtrmError(f"{self.name}: --param {key}={value:g}: expected a number "
                                f"from 0 to 1 ({self.params[key][1]})", hint=self.knob_hint(key))
            if key in self.switches and value not in (0, 1):
                raise PtrmError(f"{self.name}: --param {key}={value:g}: expected 0 or 1 "
                                f"({self.params[key][1]})", hint=self.knob_hint(key))
            if key in self.counts and value != int(value):
                raise PtrmError(f"{self.name}: --param {key}={value:g}: expected a whole "
                                f"number ({self.params[key][1]})", hint=self.knob_hint(key))

    def check_knobs(self, knobs: Knobs, rows: int, cols: int) -> None:
        """Refuse knobs that cannot work for this type at this size, before any work (none
        here: a type that has such knobs says so)."""

    # -- making ----------------------------------------------------------------------------
    def make(self, rng: np.random.Generator, rows: int, cols: int, knobs: Knobs) -> Instance:
        """A uniquely solvable puzzle. Draws attempts until one is unique and hard enough
        (ten times as many draws are allowed with a difficulty floor)."""
        limit = self.max_attempts * (10 if knobs.min_difficulty else 1)
        for attempt in range(1, limit + 1):
            try:
                inst = self.attempt(rng, rows, cols, knobs)
            except GenerationFailed:
                continue
            sols, stats = self.solve(inst, limit=2)
            if len(sols) != 1:  # the attempt's own proof disagrees with a fresh check: a bug
                raise AssertionError(f"{self.name}: generated puzzle has {len(sols)} solutions "
                                     f"on re-check")
            if stats["conflicts"] < knobs.min_difficulty:
                continue
            inst.stats = {"difficulty": stats, "attempts": attempt}
            return inst
        raise PtrmError(f"{self.name}: no puzzle after {limit} attempts",
                        hint="lower --min-difficulty or change --param settings")

    @abstractmethod
    def attempt(self, rng: np.random.Generator, rows: int, cols: int, knobs: Knobs) -> Instance:
        """One try: a random solution, its clues, clue removal. Raise `GenerationFailed` when
        this draw cannot give a unique puzzle."""

    # -- checking --------------------------------------------------------------------------
    @abstractmethod
    def solve(self, inst: Instance, limit: int = 2) -> tuple[list[np.ndarray], dict]:
        """Up to `limit` distinct solutions of the puzzle's clues (answer grids in the module's
        convention), from a fresh solver, and that solver's statistics (the difficulty
        signal: conflicts, decisions, propagations, SAT calls, cuts)."""

    # -- text ------------------------------------------------------------------------------
    @abstractmethod
    def to_pzprv3(self, inst: Instance, answer: bool = True) -> str:
        """pzprv3 text of the puzzle, with the answer filled in."""

    def read_url(self, url: str) -> Instance:
        """A puzz.link URL -> Instance without answer (re-checks, statistics of real puzzles)."""
        raise NotImplementedError

    def read_janko(self, problem: str) -> Instance:
        """A janko "problem" text grid -> Instance without answer."""
        raise NotImplementedError

    # -- statistics ------------------------------------------------------------------------
    def clue_stats(self, inst: Instance) -> dict:
        """Scalars describing the clues (per puzzle), plus `values`: a Counter of clue values."""
        return {"clues": len(inst.clues), "density": len(inst.clues) / (inst.rows * inst.cols),
                "values": Counter(str(v) for v in inst.clues.values())}


def do_not_apply(given: list[str]) -> str:
    """The verb after a list of refused options: "--max-clues does not apply", "--max-clues,
    --no-minimal do not apply"."""
    return "does not apply" if len(given) == 1 else "do not apply"


def puzzle_rng(seed: int, name: str, index: int) -> np.random.Generator:
    """The random stream of puzzle `index`: a function of (seed, type, index) only."""
    return np.random.default_rng(np.random.SeedSequence([seed, zlib.crc32(name.encode()), index]))


def shuffled(rng: np.random.Generator, items) -> list:
    items = list(items)
    return [items[i] for i in rng.permutation(len(items))]


def write_pzprv3(pid: str, rows: int, cols: int, sections: list[list[list[str]]], *,
                 one_size_line: bool = False, head: list[str] | None = None) -> str:
    """pzprv3 text as pzpr.js writes it (PPBENCH_FORMATS.md §2.6): header, size, then the
    sections' lines, every token followed by one space, one final newline."""
    lines = ["pzprv3", pid, str(rows)] + ([] if one_size_line else [str(cols)]) + (head or [])
    lines += ["".join(f"{t} " for t in row) for section in sections for row in section]
    return "\n".join(lines) + "\n"
