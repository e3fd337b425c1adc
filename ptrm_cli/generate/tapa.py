"""Tapa generator.

Encoding: one variable per cell, "shaded". Local clauses: no 2x2 shaded block; at least one
shaded cell. A clue on cell k is a selector q_k that switches on: k unshaded, and its ring (the 8
cells around k, clockwise from the top-left, off-board cells unshaded) shows exactly the clue's
multiset of circular run lengths. The ring rule is a table constraint over the cells of the ring
that lie on the board: one variable per ring pattern that gives the clue ("pattern j" -> each of
its cells shaded or not), "q_k -> some pattern", and support clauses "q_k and cell x has value v
-> some pattern with x = v", so unit propagation alone finds every cell that all the remaining
patterns agree on. A removed clue (q_k not assumed) frees its cell, which may then be shaded:
removing clues only ever adds solutions. A "?" in a clue is one run of any length, as in
pzpr.js (whose check also lets a lone "?" match an empty ring, shown as [0]): `matches` and
so the pattern table follow that exactly.
Global rule by lazy cuts (`sat.connectivity_cuts`), exact: shaded cells are 4-connected.

Making one:
  1. a random solution built directly: from an all-shaded board, cells are unshaded one at a
     time, each breaking a 2x2 shaded block (then, after none is left, any cell) until the
     unshaded fraction reaches `white` (golden 10x10: 0.44), never disconnecting the shaded
     cells; with `shape=S`, then reshaped by swaps until S of the unshaded cells show a
     CORRIDOR clue (golden 10x10: 0.13 of their unshaded cells, random walls 0.03);
  2. every unshaded cell gets its clue. That set is always unique: another solution may shade
     only cells ours shades (every other cell holds a clue), and unshading one of them lowers
     the shaded count in the ring of a clue next to it (no 2x2 block: every shaded cell has an
     unshaded cell among its 8 neighbours);
  3. clues are removed in random order while the puzzle stays unique, single-number clues
     tried earlier by `cheap` (real puzzles keep more multi-run clues: golden 0.63 of clues),
     down to a minimal set (the default; golden puzzles are sparser than our minimal sets),
     to --max-clues, or, with `clues=F`, to F of the cells. `tries=N` runs N removal orders
     on the same solution and keeps the sparsest minimal set (fewer clues, harder puzzles).
     `corridor=W` tries CORRIDOR clues later (kept more often, as golden keeps them);
  4. with `qmarks=F`, about F of the final clues become "?" clues (each run length hidden,
     the number of runs kept: 1,3 -> ?,?), tried in random order, each kept only while the
     puzzle stays unique. Done on the final set rather than during removal: the clue count
     stays that of the minimal set (during removal a weaker clue would make later clues
     necessary, so denser puzzles), the set stays minimal, and the puzzle is the knob-off
     puzzle with some clues hidden (the same draws come first).

The golden 10x10 tapa hold 10-17 clues (one odd 3-clue puzzle), mostly multi-run clues (1,3 /
3,3 / 2,2 / 1,1,1,1); docs/GENERATORS.md compares our output with them.

Answer convention: [rows, cols] int, 1 = shaded, 0 = unshaded (clue cells 0).
Clues: {cell: sorted tuple of run lengths, UNKNOWN (-2) for "?"}, each among
families.TAPA_CLUES ("?" clues are all-"?": (-2,) to (-2, -2, -2, -2), all four in the table).
"""

from __future__ import annotations

from collections import Counter
from functools import lru_cache

import numpy as np

from .base import GenerationFailed, Generator, Instance, Knobs, write_pzprv3
from .sat import (Formula, Search, components, connectivity_cuts, difficulty, neighbours,
                  reduce_clues, solutions)

#: the 8 cells around a clue, clockwise from the top-left (PPBENCH_FORMATS.md §4.5)
RING = ((-1, -1), (-1, 0), (-1, 1), (0, 1), (1, 1), (1, 0), (1, -1), (0, -1))
#: a "?" in a clue (the codec's and pzpr.js's -2): one run of any length
UNKNOWN = -2
#: clue shapes golden puzzles show 3-40x more often than random walls make (GENERATORS.md):
#: "corridors" (a white cell between parallel walls: 3,3 / 1,2,2 / 1,1,1,1) and 0 (a white 3x3)
CORRIDOR = frozenset({(3, 3), (1, 2, 2), (1, 1, 1, 1), (0,)})


def runs(bits) -> tuple[int, ...]:
    """Sorted lengths of the circular runs of true values in 8 ring bits; (0,) for none."""
    bits = [bool(b) for b in bits]
    if all(bits):
        return (8,)
    start = bits.index(False)  # start after an unshaded cell so that no run wraps around
    out, n = [], 0
    for b in bits[start:] + bits[:start] + [False]:
        if b:
            n += 1
        elif n:
            out.append(n)
            n = 0
    return tuple(sorted(out)) or (0,)


def ring(rows: int, cols: int, r: int, c: int) -> list[tuple[int, int] | None]:
    """The 8 ring cells of (r, c) in clockwise order; None where the ring leaves the board."""
    return [(r + dr, c + dc) if 0 <= r + dr < rows and 0 <= c + dc < cols else None
            for dr, dc in RING]


def matches(seen: tuple[int, ...], clue: tuple[int, ...]) -> bool:
    """Do the run lengths `seen` show `clue`? As multisets; a "?" (negative) is one run of
    any length, and the count must agree, as in pzpr.js (so a lone "?" also matches (0,))."""
    if len(seen) != len(clue):
        return False
    left = list(seen)
    for v in clue:
        if v >= 0:
            if v not in left:
                return False
            left.remove(v)
    return True


@lru_cache(maxsize=None)
def patterns(present: tuple[bool, ...], clue: tuple[int, ...]) -> tuple[int, ...]:
    """Every assignment of the ring (an 8-bit mask, bit k = ring position k shaded) with no
    shaded off-board position whose runs show `clue`."""
    out = []
    for mask in range(256):
        bits = [(mask >> k) & 1 for k in range(8)]
        if any(b and not p for b, p in zip(bits, present)):
            continue
        if matches(runs(bits), clue):
            out.append(mask)
    return tuple(out)


def _stays_connected(shaded: np.ndarray, x) -> bool:
    """Do the shaded cells stay 4-connected when x is unshaded? (Only x's shaded neighbours
    need to stay joined: the rest was connected through x or without it.)"""
    rows, cols = shaded.shape
    around = [n for n in neighbours(rows, cols, *x) if shaded[n]]
    if len(around) <= 1:
        return True
    seen, stack, want = {around[0], x}, [around[0]], set(around[1:])
    while stack and want:
        cell = stack.pop()
        for n in neighbours(rows, cols, *cell):
            if shaded[n] and n not in seen:
                seen.add(n)
                want.discard(n)
                stack.append(n)
    return not want


def clue_of(grid: np.ndarray, r: int, c: int) -> tuple[int, ...]:
    rows, cols = grid.shape
    return runs([x is not None and bool(grid[x]) for x in ring(rows, cols, r, c)])


class TapaGenerator(Generator):
    name = "tapa"
    params = {"white": (0.44, "fraction of unshaded cells in the solution (golden 10x10: 0.44)"),
              "clues": (0.0, "stop removing clues once only this fraction of cells holds "
                             "one (denser, easier puzzles; 0 = minimal)"),
              "cheap": (0.3, "how much earlier clue removal tries single-number clues than "
                             "multi-run ones (0 = uniform random order)"),
              "tries": (1.0, "removal orders tried on one solution; the sparsest minimal "
                             "clue set is kept (harder puzzles, costs time)"),
              "corridor": (0.0, "how much later clue removal tries the clue shapes golden "
                                "puzzles keep more (3,3 / 1,2,2 / 1,1,1,1 / 0); "
                                "2 = last (0 = off)"),
              "shape": (0.0, "reshape the random solution by swaps until this fraction of "
                             "its unshaded cells shows a corridor-type clue (3,3 / 1,2,2 / "
                             "1,1,1,1 / 0; golden 10x10: 0.13, random walls: 0.03; 0 = off)"),
              "qmarks": (0.0, "fraction of the final clues turned into '?' clues (run "
                              "lengths hidden, run count kept), each while still unique")}
    fractions = frozenset({"white", "clues", "shape", "qmarks"})
    counts = frozenset({"tries"})

    # -- a random solution ------------------------------------------------------------------
    def random_solution(self, rng, rows, cols, knobs: Knobs) -> np.ndarray:
        white_target = round(knobs.param("white", 0.44) * rows * cols)
        shaded = np.ones((rows, cols), dtype=bool)
        n_white = 0
        while True:
            blocks = [(r, c) for r in range(rows - 1) for c in range(cols - 1)
                      if shaded[r:r + 2, c:c + 2].all()]
            if blocks:
                r, c = blocks[int(rng.integers(len(blocks)))]
                cand = [(r, c), (r + 1, c), (r, c + 1), (r + 1, c + 1)]
            elif n_white < white_target:
                cand = [(r, c) for r in range(rows) for c in range(cols) if shaded[r, c]]
            else:
                break
            for i in rng.permutation(len(cand)):
                x = cand[int(i)]
                if shaded.sum() > 1 and _stays_connected(shaded, x):
                    shaded[x] = False
                    n_white += 1
                    break
            else:
                if blocks:
                    raise GenerationFailed
                break
        if not shaded.any():
            raise GenerationFailed
        return shaded.astype(np.int16)

    def reshape(self, rng, grid: np.ndarray, share: float) -> np.ndarray:
        """Local search towards more CORRIDOR cells: random swaps (shade an unshaded cell,
        unshade a shaded one, so the shaded count stays) that keep the rules (no 2x2 block,
        shaded cells connected) and do not lower the number of unshaded cells whose clue is
        in CORRIDOR, until `share` of the unshaded cells have one (golden 10x10: 0.13; random
        walls: 0.03) or 4 swaps per cell were tried. A local count suffices: a swap changes
        the clues of the cells around the two swapped cells only."""
        rows, cols = grid.shape
        g = grid.astype(bool)
        cells = [(r, c) for r in range(rows) for c in range(cols)]

        def count(where):
            return sum(1 for x in where if 0 <= x[0] < rows and 0 <= x[1] < cols
                       and not g[x] and clue_of(g, *x) in CORRIDOR)

        def near(x):
            return [(x[0] + dr, x[1] + dc) for dr in (-1, 0, 1) for dc in (-1, 0, 1)]

        def no_block(x):
            return not any(g[r:r + 2, c:c + 2].all() for r in (x[0] - 1, x[0])
                           for c in (x[1] - 1, x[1])
                           if 0 <= r < rows - 1 and 0 <= c < cols - 1)

        target = round(share * int((~g).sum()))
        now = count(cells)
        for _ in range(4 * rows * cols):
            if now >= target:
                break
            white = [x for x in cells if not g[x]]
            black = [x for x in cells if g[x]]
            a = white[int(rng.integers(len(white)))]
            d = black[int(rng.integers(len(black)))]
            local = set(near(a)) | set(near(d))
            before = count(local)
            g[a], g[d] = True, False
            if no_block(a) and len(components(rows, cols, lambda r, c: bool(g[r, c]))) == 1:
                after = count(local)
                if after >= before:
                    now += after - before
                    continue
            g[a], g[d] = False, True
        return g.astype(np.int16)

    # -- encoding --------------------------------------------------------------------------
    def _search(self, rows, cols, clues: dict) -> tuple[Search, dict, dict]:
        """The rules, with each clue behind its selector (assume it to switch the clue on)."""
        f = Formula()
        s = {(r, c): f.var() for r in range(rows) for c in range(cols)}
        for r in range(rows - 1):
            for c in range(cols - 1):
                f.add([-s[(r, c)], -s[(r + 1, c)], -s[(r, c + 1)], -s[(r + 1, c + 1)]])
        f.add(list(s.values()))  # at least one shaded cell
        selector = {}
        for rc, clue in clues.items():
            selector[rc] = self._clue(f, s, rows, cols, rc, clue)

        def check(model: set[int]) -> list[list[int]]:
            return connectivity_cuts(rows, cols, lambda r, c: s[(r, c)], model)

        return Search(f, check), s, selector

    @staticmethod
    def _clue(f: Formula, s: dict, rows, cols, rc, clue) -> int:
        """Add one clue behind a new selector (returned): its cell unshaded, its ring one of
        the patterns that show the clue (the table constraint of the module docstring)."""
        q = f.var()
        f.add([-s[rc]], guard=q)
        cells = ring(rows, cols, *rc)
        pats = patterns(tuple(x is not None for x in cells), tuple(clue))
        if not pats:
            f.add([], guard=q)
            return q
        pv = f.vars(len(pats))
        f.add(pv, guard=q)
        for p, mask in zip(pv, pats):
            for k, x in enumerate(cells):
                if x is not None:
                    f.add([-p, s[x] if (mask >> k) & 1 else -s[x]])
        for k, x in enumerate(cells):
            if x is None:
                continue
            on = [p for p, mask in zip(pv, pats) if (mask >> k) & 1]
            off = [p for p, mask in zip(pv, pats) if not (mask >> k) & 1]
            f.add([-s[x]] + on, guard=q)
            f.add([s[x]] + off, guard=q)
        return q

    @staticmethod
    def _grid(rows, cols, s, model) -> np.ndarray:
        g = np.zeros((rows, cols), dtype=np.int16)
        for rc, v in s.items():
            g[rc] = v in model
        return g

    # -- making ----------------------------------------------------------------------------
    def attempt(self, rng, rows, cols, knobs: Knobs) -> Instance:
        grid = self.random_solution(rng, rows, cols, knobs)
        if knobs.param("shape", 0.0) > 0:
            grid = self.reshape(rng, grid, knobs.param("shape", 0.0))
        full = {(r, c): clue_of(grid, r, c) for r in range(rows) for c in range(cols)
                if not grid[r, c]}
        cells = list(full)
        search, s, selector = self._search(rows, cols, full)
        with search:
            differ = search.forbid([v if grid[rc] else -v for rc, v in s.items()])
            sel = [selector[rc] for rc in cells]
            if search.solve(sel + [differ]) is not None:  # cannot happen (see the docstring)
                raise GenerationFailed
            target = knobs.max_clues
            if target is None and knobs.minimal:
                frac = knobs.param("clues", 0.0)
                target = round(frac * rows * cols) if frac > 0 else None
            elif target is None:
                target = len(sel)
            kept = None
            corridor = knobs.param("corridor", 0.0)
            for _ in range(max(1, int(knobs.param("tries", 1)))):
                order = self._removal_order(rng, cells, full, knobs.param("cheap", 0.3),
                                            corridor)
                now = reduce_clues(search, differ, sel, order, target=target)
                if kept is None or len(now) < len(kept):
                    kept = now
            kept = set(kept)
            clues = {rc: full[rc] for rc in cells if selector[rc] in kept}
            if knobs.param("qmarks", 0.0) > 0:
                clues = self._hide(rng, search, differ, s, selector, clues,
                                   knobs.param("qmarks", 0.0), rows, cols)
        return Instance(rows, cols, clues, answer=grid)

    @staticmethod
    def _removal_order(rng, cells, full, cheap: float, corridor: float = 0.0) -> list[int]:
        """A random order in which single-number clues come earlier by `cheap` (each clue's
        key is uniform in [0, 1), plus `cheap` for a single number; highest key first), so
        that more multi-run clues stay, as in real puzzles; `CORRIDOR` clues come later by
        `corridor` (with corridor > 1 + cheap they are tried last, when most are needed)."""
        keys = rng.random(len(cells)) + cheap * np.array([len(full[rc]) == 1 for rc in cells])
        if corridor:
            keys = keys - corridor * np.array([full[rc] in CORRIDOR for rc in cells])
        return sorted(range(len(cells)), key=lambda k: -keys[k])

    def _hide(self, rng, search: Search, differ: int, s: dict, selector: dict, clues: dict,
              frac: float, rows: int, cols: int) -> dict:
        """Turn about `frac` of the clues into "?" clues (every run length hidden, the number
        of runs kept), tried in random order, each kept only while the puzzle stays unique.
        The set stays minimal: a weaker clue only adds solutions, so no clue became removable.
        A 0 clue shows no run and stays a 0. Each "?" version is added to the live solver
        behind its own selector, so learned clauses and cuts carry over."""
        aim = int(frac * len(clues) + rng.random())  # stochastic rounding: frac on average
        cells = sorted(clues)
        on = {rc: selector[rc] for rc in cells}  # each clue's selector as it stands now
        out = dict(clues)
        for i in rng.permutation(len(cells)):
            rc = cells[int(i)]
            if aim <= 0:
                break
            if clues[rc] == (0,):
                continue
            weak = (UNKNOWN,) * len(clues[rc])
            start = len(search.formula.clauses)
            q = self._clue(search.formula, s, rows, cols, rc, weak)
            for clause in search.formula.clauses[start:]:
                search.add(clause)
            if search.solve([differ] + [q if x == rc else on[x] for x in cells]) is None:
                on[rc], out[rc] = q, weak
                aim -= 1
        return out

    # -- checking --------------------------------------------------------------------------
    def solve(self, inst, limit=2):
        search, s, selector = self._search(inst.rows, inst.cols, inst.clues)
        with search:
            for q in selector.values():
                search.add([q])
            sols = solutions(search, list(s.values()), limit=limit)
            grids = [self._grid(inst.rows, inst.cols, s, m) for m in sols]
            return grids, difficulty(search.stats())

    # -- text ------------------------------------------------------------------------------
    def to_pzprv3(self, inst, answer=True):
        grid = []
        for r in range(inst.rows):
            row = []
            for c in range(inst.cols):
                if (r, c) in inst.clues:
                    row.append(",".join("-" if v < 0 else str(v) for v in inst.clues[(r, c)]))
                elif answer and inst.answer is not None and inst.answer[r, c]:
                    row.append("#")
                else:
                    row.append("+" if answer and inst.answer is not None else ".")
            grid.append(row)
        return write_pzprv3("tapa", inst.rows, inst.cols, [grid])

    def read_url(self, url):
        """Through the tapa codec: its Puzzle.clues is a grid of clue tuples (() = none)."""
        from .. import codec as registry
        p = registry.get("tapa").parse(url).puzzle
        clues = {(r, c): tuple(sorted(v)) for r, row in enumerate(p.clues)
                 for c, v in enumerate(row) if v}
        return Instance(p.rows, p.cols, clues)

    def clue_stats(self, inst):
        out = super().clue_stats(inst)
        out["values"] = Counter(",".join("?" if v < 0 else str(v) for v in clue)
                                for clue in inst.clues.values())
        n = max(1, len(inst.clues))
        out["multi"] = sum(len(c) > 1 for c in inst.clues.values()) / n
        out["corridor"] = sum(tuple(c) in CORRIDOR for c in inst.clues.values()) / n
        out["qmarks"] = sum(any(v < 0 for v in c) for c in inst.clues.values()) / n
        if inst.answer is not None:
            out["shaded"] = float(inst.answer.sum()) / (inst.rows * inst.cols)
        return out
