"""Heyawake generator.

Encoding: one variable per cell, "shaded". Local clauses: no two orthogonally adjacent shaded
cells; at least one shaded cell; a maximal unshaded run crosses at most one room border: along
every row and column, for each two consecutive borders (between cells i|i+1 and j|j+1, i < j)
some cell of i..j+1 is shaded. Each room has a unary counter (outs[j] <-> at least j+1 shaded
cells), so a room number n is a selector implying outs[n-1] and not outs[n]. Implied clauses
that only spare cuts: no unshaded cell or domino has all its neighbours shaded. Global rule by
lazy cuts, exact: the unshaded cells are 4-connected (the cuts of `sat.connectivity_cuts`,
computed on cell indices because the check runs after every SAT call).

Making one:
  1. rooms: rectangles tiling the board, placed greedily at the first free cell in reading
     order with a shape drawn from weights fitted to janko's 10x10 rooms (2x3, 2x2, 1x1,
     1x2, 1x3, 2x4, 3x3, ... up to 4x4; orientation at random) among the shapes that fit.
     `big` scales the weight of rooms of 6 cells or more (>1: fewer, larger rooms);
  2. numbers chosen as the solving goes (random preferred phases, a fraction `shade` of cells
     preferring shaded, among solutions that shade at least `dense` of the cells, as janko's
     do): while two solutions exist, a room whose counts differ in them gets the larger
     count; when no room tells them apart, a room near the cells where they differ gets (or
     changes to) a count that neither has but some solution has. The numbers are always
     those of a real solution, which is unique when this stops;
  3. when that stalls (no such room, or `steps` choices), the room where the two solutions
     differ is split in two by a straight cut between differing cells, keeping the numbers
     if they still have a solution with the new walls (else starting over); up to `repairs`
     splits, else the draw is dropped;
  4. every room gets the count of that unique solution (unique too: all rooms numbered fix
     the total, so `dense` holds in any solution of them), then numbers are removed in random
     order (rooms of 1-3 cells earlier by `small`; real puzzles number them less often) while
     the puzzle stays unique: down to `numbered` (a fraction of the rooms; janko keeps 0.51,
     the default 0.5), to --max-clues, or to a minimal set with `numbered=0` (harder).

Answer convention: [rows, cols] int, 1 = shaded, 0 = unshaded. Fixed structure: the room-id
grid ([rows, cols] int, rooms numbered by their first cell in reading order, as pzpr.js does).
Clues: {room's top cell (leftmost column, then topmost): number}, numbers 0..39 (the PPBench
token range). Rooms are rectangles only (janko: 2% of rooms are not)."""

from __future__ import annotations

from collections import Counter

import numpy as np
from pysat.card import CardEnc, EncType

from .base import GenerationFailed, Generator, Instance, Knobs, write_pzprv3
from .sat import Formula, Search, difficulty, neighbours, reduce_clues, solutions

#: room shapes (h <= w) and their draw weights, fitted so that the greedy tiling below gives
#: about the rooms of janko's 10x10 heyawake per puzzle (2x3 3.6, 2x2 3.5, 1x1 2.8, 1x2 2.6,
#: 1x3 2.2, 2x4 1.6, 3x3 1.1, ...; 21 rooms); small shapes get low weights because the tiling
#: falls back on them wherever a larger one does not fit
SHAPES = {(1, 1): 8.5, (1, 2): 10.4, (1, 3): 14.1, (1, 4): 7.3, (1, 5): 8.7, (1, 6): 3.6,
          (1, 7): 3.7, (2, 2): 100, (2, 3): 81, (2, 4): 51, (2, 5): 10.6, (2, 6): 8.0,
          (3, 3): 74, (3, 4): 12.8, (3, 5): 3.2, (4, 4): 7.8}
DENSE_ENCODING = EncType.kmtotalizer  # the "dense" bound: fewer variables than a counter
MAX_NUMBER = 39  # the largest room number with a PPBench token (families.HEYAWAKE_MAX_NUMBER)


def random_rooms(rng, rows: int, cols: int, big: float = 1.0) -> np.ndarray:
    """A tiling of the board by rectangles (room ids in reading order of their first cell)."""
    ids = -np.ones((rows, cols), dtype=np.int32)
    shapes = []
    for (h, w), wt in SHAPES.items():
        wt = wt * (big if h * w >= 6 else 1.0)
        shapes.append((h, w, wt))
        if h != w:
            shapes.append((w, h, wt))
    k = 0
    for r in range(rows):
        for c in range(cols):
            if ids[r, c] >= 0:
                continue
            free = 0
            while c + free < cols and ids[r, c + free] < 0:
                free += 1
            fits = [(h, w, wt) for h, w, wt in shapes
                    if w <= free and r + h <= rows and (ids[r:r + h, c:c + w] < 0).all()]
            if not fits:  # cannot happen: 1x1 always fits
                raise GenerationFailed
            p = np.array([wt for _, _, wt in fits], dtype=float)
            h, w, _ = fits[int(rng.choice(len(fits), p=p / p.sum()))]
            ids[r:r + h, c:c + w] = k
            k += 1
    return ids


def rooms_of(ids: np.ndarray) -> list[list[tuple[int, int]]]:
    """Cells of each room by id; ids are dense 0..n-1."""
    out: list[list[tuple[int, int]]] = [[] for _ in range(int(ids.max()) + 1)]
    for (r, c), k in np.ndenumerate(ids):
        out[int(k)].append((r, c))
    return out


def top_cell(room) -> tuple[int, int]:
    """pzpr.js `getTopCell`: the leftmost column, then the topmost cell in it."""
    return min(room, key=lambda rc: (rc[1], rc[0]))


def renumber(ids: np.ndarray) -> np.ndarray:
    """Room ids by each room's first cell in reading order (pzpr.js's room order)."""
    order: dict[int, int] = {}
    for k in ids.reshape(-1):
        order.setdefault(int(k), len(order))
    return np.vectorize(order.__getitem__)(ids).astype(np.int32)


def lines(rows: int, cols: int) -> list[list[tuple[int, int]]]:
    return ([[(r, c) for c in range(cols)] for r in range(rows)]
            + [[(r, c) for r in range(rows)] for c in range(cols)])


def valid(ids: np.ndarray, grid: np.ndarray) -> bool:
    """Our solution still obeys the rules that depend on rooms (the run rule)."""
    rows, cols = ids.shape
    for line in lines(rows, cols):
        walls = 0
        for a, b in zip(line, line[1:]):
            if grid[a] or grid[b]:
                walls = 0
            elif ids[a] != ids[b]:
                walls += 1
                if walls > 1:
                    return False
    return True


def unary_counter(f: Formula, lits: list[int]) -> list[int]:
    """outs[j] <-> at least j+1 of `lits` are true (a sequential counter, both directions),
    so that "exactly n" is two literals and "not n" one clause."""
    prev: list[int] = []  # prev[j] <-> at least j+1 of the lits so far
    for i, x in enumerate(lits):
        cur = f.vars(i + 1)
        for j, o in enumerate(cur):
            below = prev[j] if j < len(prev) else None  # at least j+1 without x
            carry = prev[j - 1] if j >= 1 else None  # at least j without x (None: true if j=0)
            # o <-> below or (x and carry)
            if below is not None:
                f.add([-below, o])
            f.add([-x, o] + ([-carry] if carry is not None else []))
            f.add([-o, x] + ([below] if below is not None else []))
            if carry is not None:
                f.add([-o, carry] + ([below] if below is not None else []))
        prev = cur
    return prev


class HeyawakeGenerator(Generator):
    name = "heyawake"
    params = {"big": (1.2, "weight of rooms of 6 cells or more (>1: fewer, larger rooms)"),
              "shade": (0.5, "fraction of cells whose preferred solver phase is shaded"),
              "steps": (30.0, "number choices allowed before a room is split"),
              "repairs": (4.0, "room splits allowed to make the puzzle unique"),
              "dense": (0.28, "choose numbers among solutions that shade at least this "
                             "fraction of cells (janko: 0.29; 0 = any)"),
              "small": (0.3, "how much earlier number removal tries rooms of 1-3 cells "
                             "(real puzzles number them less often; 0 = uniform order)"),
              "numbered": (0.5, "stop removing numbers at this fraction of rooms "
                                "(0 = minimal; janko: 0.51)")}
    fractions = frozenset({"shade", "dense", "numbered"})
    counts = frozenset({"steps", "repairs"})

    # -- encoding --------------------------------------------------------------------------
    class _Enc:
        """The rules on a room layout; room k's count is `count[k]` (unary outputs). A number
        is switched on by `number(k, n)`, a selector literal made on first use."""

        def __init__(self, ids: np.ndarray, min_shaded: int = 0):
            self.ids, self.min_shaded = ids, min_shaded
            rows, cols = self.shape = ids.shape
            f = self.f = Formula()
            s = self.s = {(r, c): f.var() for r in range(rows) for c in range(cols)}
            for (r, c), v in s.items():
                if r + 1 < rows:
                    f.add([-v, -s[(r + 1, c)]])
                if c + 1 < cols:
                    f.add([-v, -s[(r, c + 1)]])
            f.add(list(s.values()))
            # implied by connectivity, to spare cuts: no unshaded cell or domino is walled in
            for x in s:
                around = list(neighbours(rows, cols, *x))
                f.add([s[x]] + [-s[n] for n in around])
                for y in around:
                    if y > x:
                        wall = {n for n in (*neighbours(rows, cols, *x),
                                            *neighbours(rows, cols, *y))} - {x, y}
                        f.add([s[x], s[y]] + [-s[n] for n in sorted(wall)])
            for line in lines(rows, cols):
                walls = [i for i in range(len(line) - 1) if ids[line[i]] != ids[line[i + 1]]]
                for i, j in zip(walls, walls[1:]):
                    f.add([s[x] for x in line[i:j + 2]])
            self.rooms = rooms_of(ids)
            self.count = [unary_counter(f, [s[x] for x in room]) for room in self.rooms]
            # "at least min_shaded shaded cells", assumed only while numbers are chosen
            self.dense = f.var()
            if min_shaded > 0:
                cnf = CardEnc.atleast(lits=list(s.values()), bound=min_shaded, top_id=f.top,
                                      encoding=DENSE_ENCODING)
                f.top = max(f.top, cnf.nv)
                for cl in cnf.clauses:
                    f.add(cl, guard=self.dense)
            self.search = Search(f, self._cuts)
            self._cells = list(s)
            self._adj = [[self._cells.index(n) for n in neighbours(rows, cols, *x)]
                         for x in self._cells]
            self._number: dict[tuple[int, int], int] = {}

        def _cuts(self, model: set[int]) -> list[list[int]]:
            """`sat.connectivity_cuts` for the unshaded cells (the same cuts, in the same
            order), on integer cell indices: this check runs after every SAT call."""
            sv = [self.s[x] for x in self._cells]
            free = [-v in model for v in sv]
            comp_of = [-1] * len(sv)
            comps: list[list[int]] = []
            for i0, ok in enumerate(free):
                if not ok or comp_of[i0] >= 0:
                    continue
                comp_of[i0] = len(comps)
                comp, head = [i0], 0
                while head < len(comp):
                    for j in self._adj[comp[head]]:
                        if free[j] and comp_of[j] < 0:
                            comp_of[j] = len(comps)
                            comp.append(j)
                    head += 1
                comps.append(comp)
            if len(comps) < 2:
                return []
            cuts = []
            for k, comp in enumerate(comps):
                other = comps[k - 1] if k else comps[1]
                wall = sorted({j for i in comp for j in self._adj[i] if comp_of[j] != k})
                cuts.append([-sv[j] for j in wall] + [sv[comp[0]], sv[other[0]]])
            return cuts

        def number(self, k: int, n: int) -> int:
            """Selector of "room k holds exactly n shaded cells"."""
            if (k, n) not in self._number:
                q = self._number[(k, n)] = self.search.new_var()
                outs = self.count[k]
                if n < 0 or n > len(outs):
                    self.search.add([-q])
                if 0 < n <= len(outs):
                    self.search.add([-q, outs[n - 1]])
                if 0 <= n < len(outs):
                    self.search.add([-q, -outs[n]])
            return self._number[(k, n)]

        def not_number(self, k: int, n: int) -> int:
            """A fresh selector of "room k does not hold exactly n shaded cells"."""
            d = self.search.new_var()
            outs = self.count[k]
            self.search.add([-d] + ([-outs[n - 1]] if n > 0 else []) +
                            ([outs[n]] if n < len(outs) else []))
            return d

        def grid(self, model) -> np.ndarray:
            g = np.zeros(self.shape, dtype=np.int16)
            for rc, v in self.s.items():
                g[rc] = v in model
            return g

        def counts(self, grid) -> list[int]:
            return [sum(int(grid[x]) for x in room) for room in self.rooms]

        def answer_lits(self, grid) -> list[int]:
            return [v if grid[rc] else -v for rc, v in self.s.items()]

    # -- making ----------------------------------------------------------------------------
    def attempt(self, rng, rows, cols, knobs: Knobs) -> Instance:
        ids = random_rooms(rng, rows, cols, knobs.param("big", 1.2))
        prefer = rng.random((rows, cols)) < knobs.param("shade", 0.5)
        steps = int(knobs.param("steps", 30))
        chosen: dict[tuple[int, int], int] = {}  # room top cell -> number
        min_shaded = round(knobs.param("dense", 0.28) * rows * cols)
        enc = self._Enc(ids, min_shaded)
        if enc.search.solve([enc.dense]) is None:
            raise GenerationFailed
        for split in range(int(knobs.param("repairs", 4)) + 1):
            search = enc.search
            search.set_phases([v if prefer[rc] else -v for rc, v in enc.s.items()])
            stuck = self._choose_numbers(rng, enc, chosen, steps)
            if stuck is None:
                break
            search.close()
            if split == int(knobs.param("repairs", 4)):
                raise GenerationFailed
            enc = self._split(rng, ids, chosen, min_shaded, *stuck)
            ids = enc.ids
        with search:
            room_at = {top_cell(room): k for k, room in enumerate(enc.rooms)}
            grid = enc.grid(search.solve([enc.dense] + [enc.number(room_at[rc], n)
                                                        for rc, n in chosen.items()]))
            # every room numbered (unique, as the chosen numbers are), then numbers removed
            counts = enc.counts(grid)
            # removal order: random, rooms of 1-3 cells earlier by `small`
            key = rng.random(len(enc.rooms)) + knobs.param("small", 0.3) * np.array(
                [len(room) <= 3 for room in enc.rooms])
            order = [int(k) for k in np.argsort(-key, kind="stable") if counts[k] <= MAX_NUMBER]
            sel = [enc.number(k, counts[k]) for k in order]
            differ = search.forbid(enc.answer_lits(grid))
            if search.solve(sel + [differ]) is not None:  # only if a room count were > 39
                raise GenerationFailed
            target = knobs.max_clues
            if target is None and knobs.minimal:
                frac = knobs.param("numbered", 0.5)
                target = round(frac * len(enc.rooms)) if frac > 0 else None
            elif target is None:
                target = len(sel)
            kept = set(reduce_clues(search, differ, sel, range(len(sel)), target=target))
        clues = {top_cell(enc.rooms[k]): counts[k] for k, q in zip(order, sel) if q in kept}
        return Instance(rows, cols, clues, fixed=ids, answer=grid)

    @staticmethod
    def _choose_numbers(rng, enc, chosen: dict, steps: int):
        """Add room numbers to `chosen` ({top cell: n}, updated in place) until the puzzle is
        unique; None then. While two solutions exist: a room whose counts differ in them gets
        one of the two counts; when no room tells them apart, a room near the cells where
        they differ (within 2 steps; unnumbered rooms first) gets, or changes to, a count that
        neither has but some solution has. Every step keeps the numbers those of a real
        solution. Returns the two solutions (grids) when no such room exists or after
        `steps`: the caller splits a room there."""
        search = enc.search
        room_at = {top_cell(room): k for k, room in enumerate(enc.rooms)}
        for step in range(steps + 1):
            assume = [enc.dense] + [enc.number(room_at[rc], n) for rc, n in chosen.items()]
            sols = solutions(search, list(enc.s.values()), assume, limit=2)
            if len(sols) == 1:
                return None
            if not sols:
                raise AssertionError("heyawake: chosen room numbers left no solution")
            g1, g2 = (enc.grid(m) for m in sols)
            if step == steps:
                break
            a, b = enc.counts(g1), enc.counts(g2)
            differ = [k for k in range(len(enc.rooms)) if a[k] != b[k]]
            if differ:  # never a numbered room: both solutions have its number
                k = differ[int(rng.integers(len(differ)))]
                chosen[top_cell(enc.rooms[k])] = max(a[k], b[k])
                continue
            spots = np.argwhere(g1 != g2)
            noise = rng.random(len(enc.rooms))
            near = {}
            for k, room in enumerate(enc.rooms):
                d = min(abs(r - sr) + abs(c - sc) for r, c in room for sr, sc in spots)
                if d <= 2:
                    near[k] = (top_cell(room) in chosen, d, noise[k])
            for k in sorted(near, key=near.get):
                top = top_cell(enc.rooms[k])
                others = [enc.dense] + [enc.number(room_at[rc], n) for rc, n in chosen.items()
                                        if rc != top]
                other = search.solve(others + [enc.not_number(k, a[k])])
                if other is not None:
                    chosen[top] = enc.counts(enc.grid(other))[k]
                    break
            else:
                return g1, g2
        return g1, g2

    def _split(self, rng, ids, chosen: dict, min_shaded: int, g1, g2) -> "_Enc":
        """Split a room where the two solutions differ by a straight cut that separates two
        of those cells, such that the numbers chosen so far (less the split room's) still
        have a solution with the new walls (the run rule is the only rule walls change), or
        else with no numbers (the choosing starts over). Updates `chosen` and returns the
        new encoding; GenerationFailed when no cut leaves a solution at all."""
        cuts = []
        for k in np.unique(ids[g1 != g2]):
            room = np.argwhere(ids == k)
            diff = [tuple(x) for x in room if g1[tuple(x)] != g2[tuple(x)]]
            (r0, c0), (r1, c1) = room.min(axis=0), room.max(axis=0)
            for cut in range(r0 + 1, r1 + 1):  # a wall above row `cut`
                if len({r < cut for r, _ in diff}) == 2:
                    cuts.append((int(k), 0, cut))
            for cut in range(c0 + 1, c1 + 1):  # a wall left of column `cut`
                if len({c < cut for _, c in diff}) == 2:
                    cuts.append((int(k), 1, cut))
        order = [cuts[int(i)] for i in rng.permutation(len(cuts))]
        for keep in (True, False):  # keep the other numbers if possible, else start over
            for k, axis, cut in order:
                part = ids == k
                top = top_cell([tuple(x) for x in np.argwhere(part)])
                if axis == 0:
                    part[:cut, :] = False
                else:
                    part[:, :cut] = False
                new = ids.copy()
                new[part] = ids.max() + 1
                enc = self._Enc(renumber(new), min_shaded)
                rest = {rc: n for rc, n in chosen.items() if rc != top and keep}
                room_at = {top_cell(room): j for j, room in enumerate(enc.rooms)}
                if enc.search.solve([enc.dense] + [enc.number(room_at[rc], n)
                                                   for rc, n in rest.items()]):
                    chosen.clear()
                    chosen.update(rest)
                    return enc
                enc.search.close()
        raise GenerationFailed

    # -- checking --------------------------------------------------------------------------
    def solve(self, inst, limit=2):
        ids = np.asarray(inst.fixed)
        enc = self._Enc(ids)
        room_at = {top_cell(room): k for k, room in enumerate(enc.rooms)}
        with enc.search as search:
            for rc, n in inst.clues.items():
                if n >= 0:  # "?" (-2, real puzzles only): no constraint
                    search.add([enc.number(room_at[rc], n)])
            sols = solutions(search, list(enc.s.values()), limit=limit)
            return [enc.grid(m) for m in sols], difficulty(search.stats())

    # -- text ------------------------------------------------------------------------------
    def to_pzprv3(self, inst, answer=True):
        ids = renumber(np.asarray(inst.fixed))
        room_ids = [[str(int(v)) for v in row] for row in ids]
        clues = [[str(inst.clues[(r, c)]) if (r, c) in inst.clues else "."
                  for c in range(inst.cols)] for r in range(inst.rows)]
        if answer and inst.answer is not None:
            marks = [["#" if inst.answer[r, c] else "+" for c in range(inst.cols)]
                     for r in range(inst.rows)]
        else:
            marks = [["."] * inst.cols for _ in range(inst.rows)]
        return write_pzprv3("heyawake", inst.rows, inst.cols, [room_ids, clues, marks],
                            head=[str(int(ids.max()) + 1)])

    def read_url(self, url):
        """Through the heyawake codec: Puzzle.clues is a Board (wall bits, numbers on top
        cells, -1 none, -2 "?"). Loose borders are lost: rooms are what this module knows."""
        from .. import codec as registry
        board = registry.get("heyawake").parse(url).puzzle.clues
        ids = np.zeros(board.shape, dtype=np.int32)
        for k, room in enumerate(board.rooms()):
            for rc in room:
                ids[rc] = k
        clues = {(int(r), int(c)): int(v) for (r, c), v in np.ndenumerate(board.numbers)
                 if v != -1}
        return Instance(*board.shape, clues, fixed=ids)

    def read_janko(self, problem):
        """janko text: "rows cols", a clue grid ('-' blank), then a room-id grid."""
        lines_ = [ln.split() for ln in problem.strip().splitlines()]
        rows, cols = int(lines_[0][0]), int(lines_[0][1])
        numbers = lines_[1:rows + 1]
        raw = np.array(lines_[rows + 1:2 * rows + 1])
        ids = np.zeros((rows, cols), dtype=np.int32)
        # a room is a 4-connected area of one name (a name may repeat in separate areas)
        seen = np.zeros((rows, cols), dtype=bool)
        k = 0
        for r in range(rows):
            for c in range(cols):
                if seen[r, c]:
                    continue
                stack, seen[r, c] = [(r, c)], True
                while stack:
                    x = stack.pop()
                    ids[x] = k
                    for n in neighbours(rows, cols, *x):
                        if not seen[n] and raw[n] == raw[x]:
                            seen[n] = True
                            stack.append(n)
                k += 1
        clues = {}
        for room in rooms_of(ids):
            given = [x for x in room if numbers[x[0]][x[1]] not in ("-", ".")]
            if given:
                tok = numbers[given[0][0]][given[0][1]]
                clues[top_cell(room)] = -2 if tok == "?" else int(tok)
        return Instance(rows, cols, clues, fixed=ids)

    # -- statistics ------------------------------------------------------------------------
    def clue_stats(self, inst):
        out = super().clue_stats(inst)
        rooms = rooms_of(np.asarray(inst.fixed))
        out["rooms"] = len(rooms)
        out["numbered"] = len(inst.clues) / len(rooms)
        out["room_sizes"] = Counter(len(room) for room in rooms)
        if inst.answer is not None:
            out["shaded"] = float(inst.answer.sum()) / (inst.rows * inst.cols)
        return out
