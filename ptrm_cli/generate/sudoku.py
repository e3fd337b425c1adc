"""Sudoku generator (n = 4, 6 or 9; boxes √n x √n, 3x2 for 6).

Encoding: x(r, c, d) "cell (r, c) holds digit d", exactly one digit per cell, every digit
exactly once per row, column and box (pairwise at-most-one plus one at-least-one clause). A
given is the assumption x(r, c, d) itself, so a removed given is simply not assumed.

Making one: a full grid from the solver (a random first row assumed, random preferred digits
as solver phases), moved by a uniformly random symmetry of the sudoku (digits relabelled;
bands, rows within a band, stacks and columns within a stack permuted; transposed or not when
the boxes are square), then givens removed in random order while the puzzle stays unique.
`symmetric=1` removes givens in pairs under a half turn, as most published sudoku do.

The symmetry matters: the solver's grids are far from uniform (before it, over 2,000 9x9
grids, the bottom-right cell held a 1 in 81% and the centre a 9 in 77%), and a model trained
on them learned those habits: it solved 20 of 20 generated puzzles as made and 9 of 20 with
their digits relabelled (docs/GENERATORS.md, "Sudoku grids").

Answer convention: the full digit grid (givens included).
"""

from __future__ import annotations

import math

import numpy as np

from .base import GenerationFailed, Generator, Instance, Knobs, write_pzprv3
from .sat import Formula, Search, difficulty, reduce_clues, solutions


def box_shape(n: int) -> tuple[int, int]:
    return (2, 3) if n == 6 else (math.isqrt(n), math.isqrt(n))


def shuffled(grid: np.ndarray, rng) -> np.ndarray:
    """A uniformly random image of a full grid under the sudoku's symmetries: relabelled
    digits, permuted bands / rows within each band / stacks / columns within each stack, and
    a transpose when the boxes are square. Every image is a valid grid."""
    n = grid.shape[0]
    br, bc = box_shape(n)
    digits = np.concatenate([[0], rng.permutation(n) + 1])
    rows = np.concatenate([b * br + rng.permutation(br) for b in rng.permutation(n // br)])
    cols = np.concatenate([s * bc + rng.permutation(bc) for s in rng.permutation(n // bc)])
    out = digits[grid][np.ix_(rows, cols)]
    if br == bc and rng.random() < 0.5:
        out = out.T
    return np.ascontiguousarray(out).astype(grid.dtype)


class SudokuGenerator(Generator):
    name = "sudoku"
    default_size = (9, 9)
    params = {"symmetric": (0.0, "1 = remove givens in pairs symmetric under a half turn")}
    fractions = frozenset({"symmetric"})
    switches = frozenset({"symmetric"})
    version = 2  # 2026-11-26: grids moved by a random symmetry (see the module's docstring)

    def check_size(self, rows, cols):
        from ..codec import size_name
        from ..errors import PtrmError
        if rows != cols or rows not in (4, 6, 9):
            raise PtrmError(f"sudoku: size must be 4x4, 6x6 or 9x9, not {size_name(rows, cols)}",
                            hint=self.size_hint())

    def size_hint(self):
        return "sudoku takes --size 4x4, 6x6 or 9x9 (default 9x9)"

    def check_knobs(self, knobs, rows, cols):
        from ..errors import PtrmError
        if knobs.max_clues is not None and knobs.max_clues >= rows * cols:
            raise PtrmError(f"sudoku: --max-clues {knobs.max_clues} would keep all {rows * cols} "
                            "cells given: a solved grid, not a puzzle",
                            hint=f"at most {rows * cols - 1}")
        if not knobs.minimal and knobs.max_clues is None:  # the full clue set: every cell
            raise PtrmError(f"sudoku: --no-minimal would keep all {rows * cols} cells given: a "
                            "solved grid, not a puzzle",
                            hint=f"--max-clues K (K < {rows * cols}) for denser puzzles")

    # -- encoding --------------------------------------------------------------------------
    @staticmethod
    def _x(n: int, r: int, c: int, d: int) -> int:
        return 1 + (r * n + c) * n + (d - 1)

    def _formula(self, n: int) -> Formula:
        f = Formula()
        f.vars(n ** 3)
        x = lambda r, c, d: self._x(n, r, c, d)  # noqa: E731
        br, bc = box_shape(n)
        for r in range(n):
            for c in range(n):
                f.exactly([x(r, c, d) for d in range(1, n + 1)], 1)
        units = [[(r, c) for c in range(n)] for r in range(n)]
        units += [[(r, c) for r in range(n)] for c in range(n)]
        units += [[(r0 + i, c0 + j) for i in range(br) for j in range(bc)]
                  for r0 in range(0, n, br) for c0 in range(0, n, bc)]
        for unit in units:
            for d in range(1, n + 1):
                f.exactly([x(r, c, d) for r, c in unit], 1)
        return f

    def _grid(self, n: int, model: set[int]) -> np.ndarray:
        grid = np.zeros((n, n), dtype=np.int16)
        for r in range(n):
            for c in range(n):
                for d in range(1, n + 1):
                    if self._x(n, r, c, d) in model:
                        grid[r, c] = d
        return grid

    # -- making ----------------------------------------------------------------------------
    def attempt(self, rng, rows, cols, knobs: Knobs) -> Instance:
        n = rows
        with Search(self._formula(n)) as search:
            phases = []
            for r in range(n):
                for c in range(n):
                    pick = int(rng.integers(1, n + 1))
                    phases += [self._x(n, r, c, d) * (1 if d == pick else -1)
                               for d in range(1, n + 1)]
            search.set_phases(phases)
            first_row = rng.permutation(n) + 1
            model = search.solve([self._x(n, 0, c, int(d)) for c, d in enumerate(first_row)])
            if model is None:
                raise GenerationFailed
            grid = shuffled(self._grid(n, model), rng)
            cells = [(r, c) for r in range(n) for c in range(n)]
            lits = [self._x(n, r, c, int(grid[r, c])) for r, c in cells]
            differ = search.forbid(lits)
            if knobs.param("symmetric", 0) >= 0.5:
                clues = self._reduce_symmetric(search, differ, grid, rng, knobs)
            else:
                target = knobs.max_clues if knobs.max_clues is not None else (
                    None if knobs.minimal else len(cells))
                kept = set(reduce_clues(search, differ, lits, rng.permutation(len(cells)),
                                        target=target))
                clues = {rc: int(grid[rc]) for rc, lit in zip(cells, lits) if lit in kept}
        return Instance(n, n, clues, answer=grid)

    def _reduce_symmetric(self, search, differ, grid, rng, knobs) -> dict:
        n = grid.shape[0]
        pairs, seen = [], set()
        for r in range(n):
            for c in range(n):
                if (r, c) not in seen:
                    pair = sorted({(r, c), (n - 1 - r, n - 1 - c)})
                    seen.update(pair)
                    pairs.append(pair)
        active = [True] * len(pairs)
        count = n * n
        lit = lambda rc: self._x(n, rc[0], rc[1], int(grid[rc]))  # noqa: E731
        for i in rng.permutation(len(pairs)):
            if knobs.max_clues is not None and count <= knobs.max_clues:
                break
            if not knobs.minimal and knobs.max_clues is None:
                break
            active[i] = False
            assume = [differ] + [lit(rc) for p, on in zip(pairs, active) if on for rc in p]
            if search.solve(assume) is not None:
                active[i] = True
            else:
                count -= len(pairs[i])
        return {rc: int(grid[rc]) for p, on in zip(pairs, active) if on for rc in p}

    # -- checking --------------------------------------------------------------------------
    def solve(self, inst, limit=2):
        n = inst.rows
        with Search(self._formula(n)) as search:
            givens = [self._x(n, r, c, int(d)) for (r, c), d in sorted(inst.clues.items())]
            for g in givens:
                search.add([g])
            sols = solutions(search, list(range(1, n ** 3 + 1)), limit=limit)
            return [self._grid(n, m) for m in sols], difficulty(search.stats())

    # -- text ------------------------------------------------------------------------------
    def to_pzprv3(self, inst, answer=True):
        n = inst.rows
        givens = [[str(inst.clues[(r, c)]) if (r, c) in inst.clues else "." for c in range(n)]
                  for r in range(n)]
        answers = [[str(int(inst.answer[r, c])) if answer and inst.answer is not None
                    and (r, c) not in inst.clues else "." for c in range(n)] for r in range(n)]
        return write_pzprv3("sudoku", n, n, [givens, answers], one_size_line=True)

    def read_url(self, url):
        from ptrm_codecs import formats
        u = formats.parse_url(url)
        values, _ = formats.decode_number16(u.body, u.rows * u.cols)
        clues = {(k // u.cols, k % u.cols): v for k, v in enumerate(values) if v > 0}
        return Instance(u.rows, u.cols, clues)

    def read_line(self, line: str) -> Instance:
        """An 81-character line ('.' or '0' blank), as in shared/data/sudoku."""
        n = math.isqrt(len(line))
        clues = {(k // n, k % n): int(ch) for k, ch in enumerate(line)
                 if ch.isdigit() and ch != "0"}
        return Instance(n, n, clues)
