"""A small exact sudoku solver: fills the solutions of one-line sudoku lists and checks that
each puzzle has exactly one (`ptrm build-data` drops the others).

Candidates are bitmasks (bit d-1 = digit d). Each search node propagates naked singles (a cell
with one candidate) and hidden singles (a digit with one place in a row, column or box) to a
fixed point, then branches on the cell with the fewest candidates. `solve(..., limit=2)` stops
at the second solution, which is all a uniqueness check needs.

Two backends give the same answers: this pure-Python search (no dependencies; ~2.5 ms for a
17-clue puzzle, ~35 ms for the forum's hardest on one core) and, when python-sat is installed
(the `sat` extra), an incremental SAT solver that keeps the sudoku rules loaded and passes the
givens as assumptions (~0.7 ms and ~5 ms). `solve` picks SAT when it can. Measured numbers
are in docs/BUILD_DATA.md.
"""

from __future__ import annotations

import math
import itertools
from functools import lru_cache

import numpy as np

from .errors import PtrmError


def box_shape(n: int) -> tuple[int, int]:
    """(rows, cols) of one box: 2x3 for 6x6, sqrt(n) x sqrt(n) otherwise."""
    return (2, 3) if n == 6 else (math.isqrt(n), math.isqrt(n))


@lru_cache(maxsize=None)
def _geometry(n: int):
    br, bc = box_shape(n)
    if br * bc != n:
        raise ValueError(f"no sudoku geometry for n={n}")
    cells = range(n * n)
    rows = [[r * n + c for c in range(n)] for r in range(n)]
    cols = [[r * n + c for r in range(n)] for c in range(n)]
    boxes = [[(r0 + dr) * n + c0 + dc for dr in range(br) for dc in range(bc)]
             for r0 in range(0, n, br) for c0 in range(0, n, bc)]
    units = rows + cols + boxes
    peers = []
    for i in cells:
        r, c = divmod(i, n)
        b = (r // br) * (n // bc) + c // bc
        peers.append(tuple(sorted((set(rows[r]) | set(cols[c]) | set(boxes[b])) - {i})))
    return tuple(tuple(u) for u in units), tuple(peers), (1 << n) - 1


def _propagate(cand: list[int], todo: list[int], units, peers, full: int) -> bool:
    """Eliminate assigned digits from peers and place hidden singles, to a fixed point.
    `todo` holds cells just reduced to one candidate. False on a contradiction."""
    while True:
        while todo:
            i = todo.pop()
            bit = cand[i]
            for p in peers[i]:
                m = cand[p]
                if m & bit:
                    m &= ~bit
                    if not m:
                        return False
                    cand[p] = m
                    if not m & (m - 1):
                        todo.append(p)
        # hidden singles: a digit that fits only one cell of a unit goes there
        for unit in units:
            once = twice = fixed = 0
            for i in unit:
                m = cand[i]
                twice |= once & m
                once |= m
                if not m & (m - 1):
                    if fixed & m:  # the same digit fixed twice in one unit
                        return False
                    fixed |= m
            if once != full:
                return False
            hidden = once & ~twice & ~fixed
            while hidden:
                bit = hidden & -hidden
                hidden ^= bit
                for i in unit:
                    if cand[i] & bit:
                        cand[i] = bit
                        todo.append(i)
                        break
        if not todo:
            return True


def solve(grid, limit: int = 2, *, backend: str = "auto") -> list[np.ndarray]:
    """Up to `limit` solutions of a sudoku given as an [n, n] array or n*n sequence (0 = blank).
    Returns a list of [n, n] int16 arrays; an empty list means no solution.
    `backend`: "auto" (SAT if python-sat is installed), "sat" or "python"."""
    g = np.asarray(grid, dtype=np.int64).reshape(-1)
    n = math.isqrt(len(g))
    if n * n != len(g):
        raise ValueError(f"a sudoku has n*n cells, got {len(g)}")
    if g.min() < 0 or g.max() > n:
        raise ValueError(f"sudoku digits must be 0..{n}")
    if backend == "sat" or (backend == "auto" and limit <= 2 and sat_available()):
        return _sat_solver(n).solve(g, limit)
    if backend not in ("auto", "python", "sat"):
        raise ValueError(f"unknown sudoku solver backend {backend!r}")
    return _solve_python(g, n, limit)


def _solve_python(g: np.ndarray, n: int, limit: int) -> list[np.ndarray]:
    units, peers, full = _geometry(n)
    cand = [full] * (n * n)
    todo = []
    for i, v in enumerate(g.tolist()):
        if v:
            bit = 1 << (v - 1)
            if not cand[i] & bit:
                return []
            cand[i] = bit
            todo.append(i)
    # givens that clash directly (two equal digits in a unit) are caught by propagation
    out: list[list[int]] = []
    if _propagate(cand, todo, units, peers, full):
        _search(cand, units, peers, full, out, limit)
    return [np.array([m.bit_length() for m in sol], dtype=np.int16).reshape(n, n) for sol in out]


def _search(cand, units, peers, full, out, limit) -> None:
    best, best_count = -1, 99
    for i, m in enumerate(cand):
        if m & (m - 1):
            k = m.bit_count()
            if k < best_count:
                best, best_count = i, k
                if k == 2:
                    break
    if best < 0:
        out.append(list(cand))
        return
    m = cand[best]
    while m and len(out) < limit:
        bit = m & -m
        m ^= bit
        trial = list(cand)
        trial[best] = bit
        if _propagate(trial, [best], units, peers, full):
            _search(trial, units, peers, full, out, limit)


def count_solutions(grid, limit: int = 2) -> int:
    return len(solve(grid, limit))


# -- SAT backend ------------------------------------------------------------------------------

def sat_available() -> bool:
    try:
        import pysat.solvers  # noqa: F401
    except ImportError:
        return False
    return True


class _Sat:
    """The sudoku rules as CNF, loaded once per process; each puzzle's givens are assumptions.
    A second solution is looked for under a blocking clause guarded by a fresh selector
    literal, which is switched off afterwards, so the solver can be reused (and is rebuilt
    every `RESET` puzzles to keep the dead clauses from piling up)."""

    RESET = 500

    def __init__(self, n: int):
        self.n = n
        units, _, _ = _geometry(n)
        v = self.var
        clauses = []
        for i in range(n * n):
            clauses.append([v(i, d) for d in range(n)])
            clauses += [[-v(i, a), -v(i, b)] for a, b in itertools.combinations(range(n), 2)]
        for unit in units:
            for d in range(n):
                clauses.append([v(i, d) for i in unit])
                clauses += [[-v(a, d), -v(b, d)] for a, b in itertools.combinations(unit, 2)]
        self.clauses = clauses
        self.solver = None
        self.used = 0

    def var(self, cell: int, d: int) -> int:  # d = digit - 1
        return cell * self.n + d + 1

    def solve(self, g: np.ndarray, limit: int) -> list[np.ndarray]:
        try:
            return self._solve(g, limit)
        except Exception as e:
            if not _interrupted(e):
                raise
            self.solver = None  # left broken: every later puzzle came back "no solution"
            _stop()

    def _solve(self, g: np.ndarray, limit: int) -> list[np.ndarray]:
        from pysat.solvers import Solver

        n, nv = self.n, self.n ** 3
        if self.solver is None or self.used >= self.RESET:
            if self.solver is not None:
                self.solver.delete()
            self.solver, self.used, self.selector = Solver(name="minisat22",
                                                           bootstrap_with=self.clauses), 0, nv
        self.used += 1
        s = self.solver
        givens = [self.var(i, int(x) - 1) for i, x in enumerate(g.tolist()) if x]
        out, block_sel = [], []
        while len(out) < limit and s.solve(assumptions=givens + block_sel):
            model = s.get_model()[:nv]
            true = [x for x in model if x > 0]
            grid = np.zeros(n * n, dtype=np.int16)
            for x in true:
                cell, d = divmod(x - 1, n)
                grid[cell] = d + 1
            out.append(grid.reshape(n, n))
            self.selector += 1
            s.add_clause([-self.selector] + [-x for x in true if not g[(x - 1) // n]])
            block_sel.append(self.selector)
        for sel in block_sel:
            s.add_clause([-sel])  # retire this puzzle's blocking clauses
        return out


class SolveInterrupted(PtrmError):
    """Ctrl-C during a solve in a pool worker: an error the pool hands back to the parent (a
    KeyboardInterrupt there killed the worker with a traceback and left the pool waiting)."""


def _interrupted(e: BaseException) -> bool:
    """Ctrl-C inside a pysat solve: pysat takes SIGINT over while it solves and raises its own
    `error` instead of KeyboardInterrupt."""
    return type(e).__module__ == "pysolvers" and "interrupt" in str(e).lower()


def _stop() -> None:
    """Stop the work Ctrl-C meant to stop: KeyboardInterrupt in the main process; in a pool
    worker, SolveInterrupted (the parent, interrupted too, stops the pool)."""
    import multiprocessing

    if multiprocessing.parent_process() is None:
        raise KeyboardInterrupt
    raise SolveInterrupted("interrupted while solving a puzzle")


_SAT: dict[int, _Sat] = {}


def _sat_solver(n: int) -> _Sat:
    if n not in _SAT:
        _geometry(n)  # raises for an impossible size
        _SAT[n] = _Sat(n)
    return _SAT[n]
