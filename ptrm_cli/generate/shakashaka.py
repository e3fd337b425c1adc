"""Shakashaka generator.

Encoding, exact and local. Each white cell takes one of five states: empty, or a black
triangle 2..5 (pzpr.js qans: the corner holding its right angle, 2 ◣ 3 ◢ 4 ◥ 5 ◤). A cell's
white part touches an edge fully ("open" edge) for: up {empty, 2, 3}, down {empty, 4, 5},
left {empty, 3, 4}, right {empty, 2, 5}; black cells and the outside are closed.

Around each grid point there are eight 45° sectors, two per surrounding cell; the sector of
cell X that borders edge e is white exactly when e is open for X. A white area is a rectangle
(upright or tilted 45°) if and only if, at every grid point, every maximal run of white
sectors has length 2 (a right-angled corner), 4 (a straight side) or 8 (an interior point):
a 45°/135° corner is not a rectangle's, a reflex angle (5..7 sectors) is never convex, and an
area whose boundary only turns by convex right angles, with no holes (a hole's boundary
needs a reflex corner), is a rectangle. So the clauses forbid, at every grid point and
rotation, runs of 1, 3, 5, 6 and 7 white sectors. A numbered black cell n has exactly n
triangle cells among its orthogonal neighbours (behind the clue's selector), and at least one
triangle exists (pzpr.js brNoTriangle).

Making one: black cells at random (density `black`, half-turn symmetric unless
`symmetric=0`), a random solution preferring triangles (solver phases; real solutions put
triangles in ~55% of cells), every black cell numbered. While a second solution exists, an
empty cell of ours where the other solution has a triangle becomes a (numbered) black cell,
when ours stays valid (checked at the cell's four corners); up to `repairs` times, else the
draw is dropped. This lands at janko's black density (0.13) from `black=0.09`. Then numbers
are removed in random order while the puzzle stays unique, down to `numbered` (a fraction of
the black cells; janko keeps 0.63 numbered) or to a minimal set with `numbered=0`.

Answer convention: [rows, cols] int, 0 = no triangle (and black cells), 2..5 = triangle.
Fixed structure: the set of black cells; clues: {black cell: number}.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from .base import GenerationFailed, Generator, Instance, Knobs, write_pzprv3
from .lightup import random_walls
from .sat import Formula, Search, difficulty, neighbours, reduce_clues, solutions

STATES = (0, 2, 3, 4, 5)
OPEN = {"up": (0, 2, 3), "down": (0, 4, 5), "left": (0, 3, 4), "right": (0, 2, 5)}
# the eight sectors around grid point (i, j), clockwise from north: (cell offset, edge)
SECTORS = (((-1, 0), "left"), ((-1, 0), "down"), ((0, 0), "up"), ((0, 0), "left"),
           ((0, -1), "right"), ((0, -1), "up"), ((-1, -1), "down"), ((-1, -1), "right"))
BAD_RUNS = (1, 3, 5, 6, 7)


@lru_cache(maxsize=None)
def _vertex_clauses(present: tuple[bool, ...]) -> list[list[tuple[int, bool]]]:
    """Clauses over the 8 sectors of a grid point (as (sector, positive?) pairs) that forbid
    every maximal run of 1, 3, 5, 6 or 7 white sectors; `present[k]` is False for a sector that
    is always closed (black cell, outside)."""
    out = []
    if not any(present):
        return out
    for start in range(8):
        for run in BAD_RUNS:
            inner = [(start + k) % 8 for k in range(1, run + 1)]
            if not all(present[k] for k in inner):
                continue  # a closed sector inside the run: the pattern cannot occur
            ends = {start % 8, (start + run + 1) % 8}
            out.append([(k, True) for k in sorted(ends) if present[k]]
                       + [(k, False) for k in inner])
    return out


def vertex_ok(rows: int, cols: int, black, grid, i: int, j: int) -> bool:
    """The rectangle rule at grid point (i, j) for a filled grid (Python check of the clauses)."""
    w = []
    for (dr, dc), edge in SECTORS:
        r, c = i + dr, j + dc
        w.append(0 <= r < rows and 0 <= c < cols and (r, c) not in black
                 and int(grid[r, c]) in OPEN[edge])
    if all(w):
        return True
    k0 = w.index(False)
    run = 0
    for k in range(1, 9):
        if w[(k0 + k) % 8]:
            run += 1
        else:
            if run not in (0, 2, 4):
                return False
            run = 0
    return True


class Board:
    """The rules on an empty rows x cols board, built once per size and process. Every cell
    takes one of six states (black, empty, triangle 2..5); black cells are then fixed by
    assumptions, and a number n on black cell b is the selector `number[(b, n)]` (b black and
    exactly n triangles around it). So one clause set serves every attempt and every repair,
    and a fresh solver per puzzle only loads it."""

    def __init__(self, rows: int, cols: int):
        self.rows, self.cols = rows, cols
        f = self.f = Formula()
        self.cells = [(r, c) for r in range(rows) for c in range(cols)]
        self.state = {rc: {s: f.var() for s in ("black",) + STATES} for rc in self.cells}
        self.black = {rc: sv["black"] for rc, sv in self.state.items()}
        self.tri = {}
        opens = {}
        for rc, sv in self.state.items():
            f.exactly(list(sv.values()), 1)
            for edge, states in OPEN.items():
                o = opens[(rc, edge)] = f.var()
                f.add([-o] + [sv[s] for s in states])
                for s in states:
                    f.add([o, -sv[s]])
            t = self.tri[rc] = f.var()
            f.add([-t] + [sv[s] for s in (2, 3, 4, 5)])
            for s in (2, 3, 4, 5):
                f.add([t, -sv[s]])
        for i in range(rows + 1):
            for j in range(cols + 1):
                w = [opens.get(((i + dr, j + dc), edge)) for (dr, dc), edge in SECTORS]
                for template in _vertex_clauses(tuple(x is not None for x in w)):
                    f.add([w[k] if sign else -w[k] for k, sign in template])
        f.add(list(self.tri.values()))  # at least one triangle
        self.number = {}
        for rc in self.cells:
            around = [self.tri[x] for x in neighbours(rows, cols, *rc)]
            for n in range(len(around) + 1):
                q = self.number[(rc, n)] = f.var()
                f.add([-q, self.black[rc]])
                f.exactly(around, n, guard=q)

    def search(self) -> Search:
        f = Formula()
        f.clauses, f.top = self.f.clauses, self.f.top  # shared, never appended to
        return Search(f)

    def fix_black(self, black) -> list[int]:
        return [v if rc in black else -v for rc, v in self.black.items()]

    def answer(self, model) -> np.ndarray:
        grid = np.zeros((self.rows, self.cols), dtype=np.int16)
        for rc, sv in self.state.items():
            for s in (2, 3, 4, 5):
                if sv[s] in model:
                    grid[rc] = s
        return grid

    def answer_lits(self, black, grid) -> list[int]:
        return [sv["black"] if rc in black else sv[int(grid[rc])] for rc, sv in self.state.items()]

    def answer_vars(self) -> list[int]:
        return [v for sv in self.state.values() for v in sv.values()]


@lru_cache(maxsize=8)
def board(rows: int, cols: int) -> Board:
    return Board(rows, cols)


class ShakashakaGenerator(Generator):
    name = "shakashaka"
    params = {"black": (0.09, "fraction of cells made black before repairs add more"),
              "symmetric": (1.0, "1 = the initial black cells are symmetric under a half turn"),
              "triangles": (0.9, "solver's preference for a triangle in a white cell"),
              "repairs": (12.0, "black cells that may be added to make the puzzle unique"),
              "numbered": (0.6, "stop removing numbers at this fraction of black cells "
                                "(janko: 0.68); 0 = minimal")}
    fractions = frozenset({"black", "symmetric", "triangles", "numbered"})
    switches = frozenset({"symmetric"})
    counts = frozenset({"repairs"})

    # -- making ----------------------------------------------------------------------------
    def attempt(self, rng, rows, cols, knobs: Knobs) -> Instance:
        bd = board(rows, cols)
        black = set(random_walls(rng, rows, cols, knobs.param("black", 0.09),
                                 knobs.param("symmetric", 1) >= 0.5))
        p_tri = knobs.param("triangles", 0.9)
        with bd.search() as search:
            phases = []
            for rc, sv in bd.state.items():
                pick = int(rng.integers(2, 6)) if rng.random() < p_tri else 0
                phases += [v if s == pick else -v for s, v in sv.items()]
            search.set_phases(phases)
            model = search.solve(bd.fix_black(black))
            if model is None:
                raise GenerationFailed
            grid = bd.answer(model)
            # every black cell numbered; while a second solution exists, an empty cell of ours
            # where it has a triangle becomes a black cell (if our solution stays valid)
            for _ in range(int(knobs.param("repairs", 12)) + 1):
                clues = {b: sum(1 for x in neighbours(rows, cols, *b)
                                if x not in black and grid[x]) for b in sorted(black)}
                sel = [bd.number[(b, n)] for b, n in clues.items()]
                differ = search.forbid(bd.answer_lits(black, grid))
                other = search.solve(bd.fix_black(black) + sel + [differ])
                if other is None:
                    break
                alt = bd.answer(other)
                spots = [rc for rc in bd.cells if rc not in black and not grid[rc] and alt[rc]
                         and self._can_blacken(rows, cols, black, grid, rc)]
                if not spots:
                    raise GenerationFailed
                black.add(spots[int(rng.integers(len(spots)))])
            else:
                raise GenerationFailed
            target = knobs.max_clues
            if target is None and knobs.minimal:
                frac = knobs.param("numbered", 0.6)
                target = round(frac * len(black)) if frac > 0 else None
            elif target is None:
                target = len(sel)
            kept = set(reduce_clues(search, differ, sel, rng.permutation(len(sel)),
                                    fixed=bd.fix_black(black), target=target))
        clues = {b: n for b, n in clues.items() if bd.number[(b, n)] in kept}
        return Instance(rows, cols, clues, fixed=frozenset(black), answer=grid)

    @staticmethod
    def _can_blacken(rows, cols, black, grid, rc) -> bool:
        r, c = rc
        more = black | {rc}
        return all(vertex_ok(rows, cols, more, grid, i, j) for i in (r, r + 1) for j in (c, c + 1))

    # -- checking --------------------------------------------------------------------------
    def solve(self, inst, limit=2):
        bd = board(inst.rows, inst.cols)
        with bd.search() as search:
            for lit in bd.fix_black(inst.fixed):
                search.add([lit])
            for b, n in sorted(inst.clues.items()):
                search.add([bd.number[(b, n)]])
            sols = solutions(search, bd.answer_vars(), limit=limit)
            return [bd.answer(m) for m in sols], difficulty(search.stats())

    # -- text ------------------------------------------------------------------------------
    def to_pzprv3(self, inst, answer=True):
        clue_grid, ans_grid = [], []
        for r in range(inst.rows):
            crow, arow = [], []
            for c in range(inst.cols):
                if (r, c) in inst.clues:
                    crow.append(str(inst.clues[(r, c)]))
                elif (r, c) in inst.fixed:
                    crow.append("5")
                else:
                    crow.append(".")
                v = int(inst.answer[r, c]) if answer and inst.answer is not None else 0
                arow.append(str(v) if v and (r, c) not in inst.fixed else ".")
            clue_grid.append(crow)
            ans_grid.append(arow)
        return write_pzprv3("shakashaka", inst.rows, inst.cols, [clue_grid, ans_grid])

    def read_url(self, url):
        from .lightup import LightupGenerator
        return LightupGenerator().read_url(url)

    def read_janko(self, problem):
        from .lightup import LightupGenerator
        return LightupGenerator().read_janko(problem)

    def clue_stats(self, inst):
        out = super().clue_stats(inst)
        out["black"] = len(inst.fixed) / (inst.rows * inst.cols)
        out["numbered_black"] = len(inst.clues) / max(1, len(inst.fixed))
        return out
