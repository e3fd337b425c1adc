"""Nurikabe generator.

Encoding: one variable per cell, "shaded". Local clauses: no 2x2 shaded block; clue cells are
unshaded. Implied clauses that only speed the search up: a cell no clue can reach (Manhattan
distance >= the clue) is shaded, a cell touching two clues is shaded, the neighbours of a 1 are
shaded, and (when 3+ cells are shaded, which the clue sum tells) no shaded cell or domino is
walled in. Global rules by lazy cuts, each implied by the rules, so the loop is exact:
  * shaded cells connected: for a shaded component C with outer boundary B (all unshaded),
    "some cell of B shaded, or x in C unshaded, or z outside unshaded", for every x of a small
    C (`sat.connectivity_cuts`);
  * an unshaded area U with no clue: for x in U, "x shaded or some cell of U's boundary
    unshaded" (else x's island lies inside U, clueless);
  * U with two clues: some cell on a shortest path between them inside U is shaded;
  * U with one clue n and more than n cells: some cell of a connected n+1 cells of U around the
    clue (BFS order) is shaded;
  * U with one clue n and fewer than n cells: some cell of U's boundary is unshaded.
(An explicit alternative, a label per cell naming its island's clue with exact size counters,
was tried: 4x slower to generate and 100x slower on golden puzzles with islands of 14 and 20.)

Making one:
  1. a random solution built directly: islands are seeded one at a time on shaded cells that
     touch no island, each grown at random to a size drawn from janko's island sizes (capped at
     `max_island`), never touching another island nor disconnecting the shaded cells, until
     `white` of the board is unshaded (janko 10x10: 0.45); then every 2x2 shaded block left is
     broken by growing a neighbouring island, a new island of 1, or (last resort) joining two;
  2. each island gets its size as a clue on a random cell of it;
  3. while a second solution exists (searched from our solution's phases: alternatives are
     local), repair: one of our island cells that it shades becomes the island's clue cell, or
     a cell we shade and it does not joins our single neighbouring island (number + 1) or
     becomes a new island of 1; up to `repairs` times, else the draw is dropped.
Every island needs its number, so there is no clue removal: difficulty comes from the island
sizes (`max_island`, `white`) and from --min-difficulty.

Knobs that move the puzzles toward designed ones (all off by default; with them off no random
number is drawn for them, so puzzles made without them are unchanged):
  * `stuck`: a seed with no room to grow stays an island of 1 with this chance (default 1);
    0 gives it back, which removes most of the surplus 1s (and 1.5-2 clues a puzzle);
  * `big`: with this chance a puzzle's first island aims at 10..max_island cells (a second
    one follows with chance `BIG_AGAIN`); a draw that ends below 10 is dropped;
  * `theme`: with this chance a puzzle is themed, every clue the same size, 3 to
    `theme_max`: solution and clue cells designed together by the solver (`theme_puzzle`);
  * `budget`: a draw whose uniqueness check (or the re-check `make` does next) would spend
    more solver conflicts is dropped (a few with islands of 15-20 take minutes).
The theme / big choice is made once per puzzle (`make`), not per draw.

Answer convention: [rows, cols] int, 1 = shaded, 0 = unshaded. Clues: {cell: island size}.
"""

from __future__ import annotations

from collections import deque

import numpy as np

from ..errors import PtrmError
from .base import GenerationFailed, Generator, Instance, Knobs, do_not_apply, write_pzprv3
from .sat import (Formula, Search, boundary, components, connectivity_cuts, difficulty,
                  neighbours, solutions)


#: island sizes 1..12 in janko's 10x10 nurikabe (relative counts), what islands grow towards
ISLAND_SIZES = [348.0, 675, 687, 498, 282, 146, 102, 53, 44, 16, 7, 3]
#: chance that a big island (knob `big`) is followed by another (golden: 1 puzzle of 3 with one)
BIG_AGAIN = 0.25
#: islands of a themed 10x10 puzzle by size (janko's themed puzzles: 42-50% white); other
#: board sizes scale it. 16 islands of 3 or 9 of 5 were rarely found by the design search,
#: 8 of 6 not at all (4 draws, 40-60 s each), so themes stop at 5
THEME_ISLANDS = {3: 15, 4: 12, 5: 10}
#: second solutions (counterexamples) a themed draw may refute before it is dropped
THEME_ROUNDS = 600
#: conflicts allowed for one call of the design solver (a few calls would take minutes)
THEME_CONFLICTS = 200000


class NurikabeGenerator(Generator):
    name = "nurikabe"
    params = {"white": (0.45, "fraction of unshaded cells to aim for"),
              "max_island": (9.0, "largest island"),
              "repairs": (12.0, "changes allowed to make the puzzle unique"),
              "stuck": (1.0, "chance that a seed with no room to grow stays an island of 1"),
              "big": (0.0, "chance that a puzzle has an island of 10..max_island cells"),
              "theme": (0.0, "chance that a puzzle is themed: every clue the same, 3..theme_max"),
              "theme_max": (4.0, "largest themed island, 3..5 (5: ~50 s a puzzle)"),
              "budget": (0.0, "solver conflicts one uniqueness check may spend, else the draw "
                              "is dropped (0 = no limit)")}
    fractions = frozenset({"white", "stuck", "big", "theme"})
    counts = frozenset({"max_island", "repairs", "theme_max", "budget"})

    def check_params(self, knobs: Knobs) -> None:
        super().check_params(knobs)
        for key in ("stuck", "big", "theme"):
            if not 0 <= knobs.param(key, 0) <= 1:
                raise PtrmError(f"nurikabe: {key}={knobs.param(key, 0):g} is not a chance (0..1)",
                                hint=self.knob_hint(key))
        if knobs.param("max_island", 9) < 1:
            raise PtrmError("nurikabe: max_island must be >= 1 (an island has a cell)",
                            hint=self.knob_hint("max_island"))
        if knobs.param("big", 0) and knobs.param("max_island", 9) < 10:
            raise PtrmError("nurikabe: big islands need max_island >= 10",
                            hint="e.g. -p big=0.25 -p max_island=20")
        if knobs.param("theme_max", 4) not in THEME_ISLANDS:
            raise PtrmError(f"nurikabe: theme_max={knobs.param('theme_max', 4):g}: "
                            f"expected 3..5", hint=self.knob_hint("theme_max"))

    def check_knobs(self, knobs: Knobs, rows: int, cols: int) -> None:
        """Every island needs its number, so there is no clue to remove: --max-clues and
        --no-minimal changed nothing but the knobs tag (a file that resumes only with them)."""
        given = [name for name, on in (("--max-clues", knobs.max_clues is not None),
                                       ("--no-minimal", not knobs.minimal)) if on]
        if given:
            raise PtrmError(f"nurikabe: {', '.join(given)} {do_not_apply(given)}: every island "
                            "needs its number, so no clue is ever removed",
                            hint="nurikabe's difficulty: -p max_island, -p white, "
                                 "--min-difficulty")

    # -- a random solution ------------------------------------------------------------------
    def random_solution(self, rng, rows, cols, knobs: Knobs, big: bool = False) -> np.ndarray:
        """An island-id grid (-1 = shaded) of a valid solution without clues. Islands are
        seeded and grown one at a time to a size drawn from janko's island sizes, until
        `white` of the board is unshaded; then every 2x2 shaded block left is broken by
        growing a neighbouring island (up to `max_island`) or by a new island of 1.
        `big`: the first island aims at 10..max_island cells, and the next one too with
        chance `BIG_AGAIN` (while 10 cells of the white budget are left). A seed that cannot
        grow at all (every neighbour touches another island or would cut the shaded cells)
        stays an island of 1 with chance `stuck`, else it is shaded again: those seeds are
        where the surplus of 1s over janko's came from."""
        white_target = knobs.param("white", 0.45) * rows * cols
        max_island = int(knobs.param("max_island", 9))
        stuck = knobs.param("stuck", 1)
        sizes_p = np.array(ISLAND_SIZES[:max_island])
        sizes_p /= sizes_p.sum()
        island = -np.ones((rows, cols), dtype=np.int32)  # island id, -1 = shaded
        sizes: list[int] = []

        def can_take(x, k) -> bool:  # may shaded cell x join island k (k = new: a seed)?
            touching = self._touching(island, x)
            if touching - {k} or (k < len(sizes) and sizes[k] >= max_island):
                return False
            return self._stays_connected(island, x)

        def take(x, k) -> None:
            if k == len(sizes):
                sizes.append(0)
            sizes[k] += 1
            island[x] = k

        misses = 0
        while (island >= 0).sum() < white_target and misses < 20:
            free = [(r, c) for r in range(rows) for c in range(cols)
                    if island[r, c] < 0 and not self._touching(island, (r, c))]
            if not free:
                break
            seed = free[int(rng.integers(len(free)))]
            k = len(sizes)
            if not can_take(seed, k):
                misses += 1
                continue
            take(seed, k)
            if big and white_target - (island >= 0).sum() >= 9:
                goal = int(rng.integers(10, max_island + 1))
                big = rng.random() < BIG_AGAIN
            else:
                goal = 1 + int(rng.choice(len(sizes_p), p=sizes_p))
            while sizes[k] < goal:
                front = sorted({n for x in zip(*np.nonzero(island == k))
                                for n in neighbours(rows, cols, int(x[0]), int(x[1]))
                                if island[n] < 0})
                front = [front[i] for i in rng.permutation(len(front))]
                grown = next((x for x in front if can_take(x, k)), None)
                if grown is None:
                    break
                take(grown, k)
            if sizes[k] == 1 < goal and stuck < 1 and (not stuck or rng.random() >= stuck):
                island[seed] = -1  # no room to grow: shaded again
                sizes.pop()
                misses += 1
        while True:
            blocks = [(r, c) for r in range(rows - 1) for c in range(cols - 1)
                      if (island[r:r + 2, c:c + 2] < 0).all()]
            if not blocks:
                return island
            r, c = blocks[int(rng.integers(len(blocks)))]
            cand = [(r, c), (r + 1, c), (r, c + 1), (r + 1, c + 1)]
            cand = [cand[i] for i in rng.permutation(4)]
            # grow a neighbouring island first (smallest first), a new island of 1 last
            options = sorted(((sizes[k], i, x, k) for i, x in enumerate(cand)
                              for k in self._touching(island, x)), key=lambda t: t[:2])
            options += [(0, i, x, len(sizes)) for i, x in enumerate(cand)
                        if not self._touching(island, x)]
            for _, _, x, k in options:
                if can_take(x, k):
                    take(x, k)
                    break
            else:  # last resort: a cell that joins islands into one of at most max_island
                for x in cand:
                    ks = sorted(self._touching(island, x))
                    if len(ks) < 2 or sum(sizes[k] for k in ks) >= max_island \
                            or not self._stays_connected(island, x):
                        continue
                    for k in ks[1:]:
                        island[island == k] = ks[0]
                        sizes[ks[0]] += sizes[k]
                        sizes[k] = 0
                    take(x, ks[0])
                    break
                else:
                    raise GenerationFailed

    def theme_puzzle(self, rng, rows, cols, size: int, budget: int = 0) -> Instance:
        """A unique puzzle whose clues all equal `size`, its solution and clue cells designed
        together by the solver. (The clue cells of a random themed solution can rarely be
        chosen to make it unique: an exact search over them found no way for any of 15
        solutions with islands of 4-6 on 10x10.)
        Outer problem, over shading s and clue cells q: `THEME_ISLANDS` clues; a clue cell
        unshaded, no two clues adjacent, a cell between two clues shaded, every unshaded cell
        within reach of a clue, no 2x2 shaded block, no walled-in shaded cell; by cuts:
        shaded cells connected, every unshaded area has exactly `size` cells and one clue.
        Inner problem: a second solution B of the outer model's clues (`_search`, the check
        every puzzle gets). B solves every clue set of this count whose clues it leaves
        unshaded (it has that many islands, each would get one), so the outer problem learns
        "some clue on a cell B shades" and is solved again, until no B exists (unique) or
        `THEME_ROUNDS` counterexamples are used up (the draw is dropped)."""
        f = Formula()
        sv = {(r, c): f.var() for r in range(rows) for c in range(cols)}
        qv = {(r, c): f.var() for r in range(rows) for c in range(cols)}
        for r in range(rows - 1):
            for c in range(cols - 1):
                f.add([-sv[(r, c)], -sv[(r + 1, c)], -sv[(r, c + 1)], -sv[(r + 1, c + 1)]])
        for x in sv:
            near = list(neighbours(rows, cols, *x))
            f.add([-sv[x]] + [sv[n] for n in near])
            f.add([-qv[x], -sv[x]])
            for i, n in enumerate(near):
                if n > x:
                    f.add([-qv[x], -qv[n]])
                for m in near[i + 1:]:
                    f.add([sv[x], -qv[n], -qv[m]])
            f.add([sv[x]] + [qv[c] for c in qv if abs(c[0] - x[0]) + abs(c[1] - x[1]) < size])
        f.exactly(list(qv.values()), max(1, round(THEME_ISLANDS[size] * rows * cols / 100)))

        def check(model: set[int]) -> list[list[int]]:
            cuts = connectivity_cuts(rows, cols, lambda r, c: sv[(r, c)], model, every=12)
            for comp in components(rows, cols, lambda r, c: sv[(r, c)] not in model):
                wall = boundary(rows, cols, comp)
                inside = [x for x in comp if qv[x] in model]
                if len(comp) > size:
                    start = inside[0] if inside else comp[int(rng.integers(len(comp)))]
                    cuts.append([sv[x] for x in _bfs(comp, start)[:size + 1]])
                elif len(comp) < size:
                    cuts.append([sv[x] for x in comp] + [-sv[y] for y in wall])
                if not inside:
                    cuts.append([qv[x] for x in comp] + [sv[x] for x in comp]
                                + [-sv[y] for y in wall])
                elif len(inside) >= 2:
                    a, b = inside[:2]
                    cuts.append([sv[x] for x in _path(comp, a, b) if x not in (a, b)]
                                + [-qv[a], -qv[b]])
            return cuts

        outer = Search(f, check)
        with outer:
            outer.set_phases([v if rng.random() < 0.55 else -v for v in sv.values()]
                             + [-v for v in qv.values()])
            rounds = 0
            while rounds < THEME_ROUNDS:
                outer.solver.conf_budget(THEME_CONFLICTS)
                if not outer.solver.solve_limited():  # None: over budget; False: no design
                    raise GenerationFailed
                model = set(outer.solver.get_model())
                cuts = check(model)
                for cut in cuts:
                    outer.add(cut)
                if cuts:
                    continue
                clues = {x: size for x in qv if qv[x] in model}
                grid = np.array([[int(sv[(r, c)] in model) for c in range(cols)]
                                 for r in range(rows)], dtype=np.int16)
                search, s = self._search(rows, cols, clues)
                with search:
                    ours = [s[x] if grid[x] else -s[x] for x in s]
                    search.set_phases(ours)
                    other = search.solve([search.forbid(ours)], budget)
                if other is None:
                    inst = Instance(rows, cols, clues, answer=grid)
                    self._fresh_check(inst, budget)
                    return inst
                outer.add([qv[x] for x in qv if s[x] in other])
                rounds += 1
        raise GenerationFailed

    @staticmethod
    def _touching(island, x) -> set[int]:
        rows, cols = island.shape
        return {int(island[n]) for n in neighbours(rows, cols, *x) if island[n] >= 0}

    @staticmethod
    def _stays_connected(island, x) -> bool:
        """Do the shaded cells stay connected when x is unshaded?"""
        rows, cols = island.shape
        shaded = island < 0
        shaded[x] = False
        around = [n for n in neighbours(rows, cols, *x) if shaded[n]]
        if len(around) <= 1:
            return True
        seen = {around[0]}
        queue = deque([around[0]])
        want = set(around[1:])
        while queue and want:
            cell = queue.popleft()
            for n in neighbours(rows, cols, *cell):
                if shaded[n] and n not in seen:
                    seen.add(n)
                    want.discard(n)
                    queue.append(n)
        return not want

    # -- encoding --------------------------------------------------------------------------
    def _search(self, rows, cols, clues) -> tuple[Search, dict]:
        clues = dict(sorted(clues.items()))  # the same clauses however the clues were made
        f = Formula()
        s = {(r, c): f.var() for r in range(rows) for c in range(cols)}
        for r in range(rows - 1):
            for c in range(cols - 1):
                f.add([-s[(r, c)], -s[(r + 1, c)], -s[(r, c + 1)], -s[(r + 1, c + 1)]])
        for rc in clues:
            f.add([-s[rc]])
        numbered = {rc: n for rc, n in clues.items() if n > 0}
        for rc in s:
            if rc in clues:
                continue
            near = [k for k in neighbours(rows, cols, *rc) if k in clues]
            reach = any(k not in numbered or abs(k[0] - rc[0]) + abs(k[1] - rc[1]) < numbered[k]
                        for k in clues)
            if not reach or len(near) >= 2 or any(numbered.get(k) == 1 for k in near):
                f.add([s[rc]])
        if all(n > 0 for n in clues.values()) and rows * cols - sum(clues.values()) >= 3:
            for rc in s:
                f.add([-s[rc]] + [s[nb] for nb in neighbours(rows, cols, *rc)])
                for nb in neighbours(rows, cols, *rc):
                    if nb > rc:
                        around = set(neighbours(rows, cols, *rc)) | set(neighbours(rows, cols, *nb))
                        f.add([-s[rc], -s[nb]] + [s[x] for x in sorted(around - {rc, nb})])

        def check(model: set[int]) -> list[list[int]]:
            shaded = lambda r, c: s[(r, c)] in model  # noqa: E731
            cuts = connectivity_cuts(rows, cols, lambda r, c: s[(r, c)], model, every=12)
            for comp in components(rows, cols, lambda r, c: not shaded(r, c)):
                inside = [rc for rc in comp if rc in clues]
                wall = boundary(rows, cols, comp)
                if not inside:
                    for x in comp:
                        cuts.append([s[x]] + [-s[y] for y in wall])
                elif len(inside) >= 2:
                    path = _path(comp, inside[0], inside[1])
                    cuts.append([s[x] for x in path if x not in clues])
                else:
                    n = clues[inside[0]]
                    if n <= 0:
                        continue  # "?" / 0: any size
                    if len(comp) > n:
                        part = _bfs(comp, inside[0])[:n + 1]
                        cuts.append([s[x] for x in part if x not in clues])
                    elif len(comp) < n:
                        cuts.append([-s[y] for y in wall])
            return cuts

        return Search(f, check), s

    # -- making ----------------------------------------------------------------------------
    _planned: tuple[int, bool] | None = None  # this puzzle's plan, while `make` runs

    def make(self, rng, rows, cols, knobs: Knobs) -> Instance:
        """The shared loop, with the theme / big plan drawn once per puzzle: big and themed
        draws are dropped more often than others, so a chance per draw would give far fewer
        such puzzles than asked (big=0.2 per draw: about 6%)."""
        self._planned = self._plan(rng, knobs)
        try:
            return super().make(rng, rows, cols, knobs)
        finally:
            self._planned = None

    def attempt(self, rng, rows, cols, knobs: Knobs) -> Instance:
        theme, big = self._planned if self._planned else self._plan(rng, knobs)
        budget = int(knobs.param("budget", 0))
        if theme:
            return self.theme_puzzle(rng, rows, cols, theme, budget)
        island = self.random_solution(rng, rows, cols, knobs, big)
        if (island < 0).all() or (island >= 0).all():
            raise GenerationFailed
        max_island = int(knobs.param("max_island", 9))
        ids = np.unique(island[island >= 0])
        island = np.where(island >= 0, np.searchsorted(ids, island), -1)  # ids 0..k-1
        sizes = np.bincount(island[island >= 0]).tolist()
        if big and max(sizes) < 10:
            raise GenerationFailed
        cells = {k: [] for k in range(len(sizes))}
        for r in range(rows):
            for c in range(cols):
                if island[r, c] >= 0:
                    cells[int(island[r, c])].append((r, c))
        where = [cells[k][int(rng.integers(len(cells[k])))] for k in range(len(sizes))]
        for _ in range(int(knobs.param("repairs", 12)) + 1):
            clues = {w: sizes[k] for k, w in enumerate(where)}
            grid = (island < 0).astype(np.int16)
            search, s = self._search(rows, cols, clues)
            with search:
                ours = [s[rc] if grid[rc] else -s[rc] for rc in s]
                search.set_phases(ours)  # look next to our solution: alternatives are local
                differ = search.forbid(ours)
                other = search.solve([differ], budget)
            if other is None:
                inst = Instance(rows, cols, clues, answer=grid)
                self._fresh_check(inst, budget)
                return inst
            self._repair(rng, island, sizes, where, {rc for rc in s if s[rc] in other},
                         max_island)
        raise GenerationFailed

    def _fresh_check(self, inst: Instance, budget: int) -> None:
        """With a budget: what `make` re-checks next (a fresh solver, up to two solutions,
        the same calls in the same order), under the budget, so that a puzzle whose re-check
        would run for minutes is dropped here (islands of 15-20 make a few such puzzles)."""
        if not budget:
            return
        search, s = self._search(inst.rows, inst.cols, inst.clues)
        with search:
            selectors: list[int] = []
            for _ in range(2):
                model = search.solve(selectors, budget)
                if model is None:
                    return
                selectors.append(search.forbid([v if v in model else -v for v in s.values()]))

    @staticmethod
    def _plan(rng, knobs: Knobs) -> tuple[int, bool]:
        """(theme size or 0, big first island?) of a puzzle. A knob that is off draws no
        random number, so puzzles made without these knobs are the same as before them."""
        theme = 0
        if knobs.param("theme", 0) and rng.random() < knobs.param("theme", 0):
            theme = int(rng.integers(3, int(knobs.param("theme_max", 4)) + 1))
        big = bool(not theme and knobs.param("big", 0) and rng.random() < knobs.param("big", 0))
        return theme, big

    def _repair(self, rng, island, sizes, where, other_shaded, max_island) -> None:
        """Change the puzzle so that the other solution (its shaded cells given) is ruled out
        and ours stays valid. First choice: one of our island cells that it shades becomes
        the island's clue cell (clue cells are never shaded). Else a cell we shade and it does
        not: joined to our single neighbouring island (its number grows by one), or, touching
        none, made a new island of 1, which the other solution cannot host (that cell lies in
        one of its numbered islands, which would then hold two numbers)."""
        rows, cols = island.shape
        ours = [rc for rc in zip(*np.nonzero(island >= 0)) if rc in other_shaded]
        ours = [(int(r), int(c)) for r, c in ours if (int(r), int(c)) not in where]
        if ours and rng.random() < 0.5:
            x = ours[int(rng.integers(len(ours)))]
            where[int(island[x])] = x
            return
        theirs = [(int(r), int(c)) for r, c in zip(*np.nonzero(island < 0))
                  if (int(r), int(c)) not in other_shaded]
        for y in [theirs[i] for i in rng.permutation(len(theirs))]:
            touching = self._touching(island, y)
            if len(touching) > 1 or not self._stays_connected(island, y):
                continue
            if touching:
                k = next(iter(touching))
                if sizes[k] >= max_island:
                    continue
                sizes[k] += 1
            else:
                k = len(sizes)
                sizes.append(1)
                where.append(y)
            island[y] = k
            return
        if ours:
            x = ours[int(rng.integers(len(ours)))]
            where[int(island[x])] = x
            return
        raise GenerationFailed

    # -- checking --------------------------------------------------------------------------
    def solve(self, inst, limit=2):
        search, s = self._search(inst.rows, inst.cols, inst.clues)
        with search:
            sols = solutions(search, list(s.values()), limit=limit)
            grids = []
            for m in sols:
                g = np.zeros((inst.rows, inst.cols), dtype=np.int16)
                for rc, v in s.items():
                    g[rc] = v in m
                grids.append(g)
            return grids, difficulty(search.stats())

    # -- statistics ------------------------------------------------------------------------
    def clue_stats(self, inst):
        """Plus the unshaded fraction the clues imply, whether an island has 10+ cells, and
        whether all clues are equal (a theme)."""
        out = super().clue_stats(inst)
        values = [v for v in inst.clues.values() if v > 0]
        out["white"] = sum(values) / (inst.rows * inst.cols)
        out["island 10+"] = float(max(values, default=0) >= 10)
        out["one size"] = float(len(set(values)) == 1 and len(values) == len(inst.clues))
        return out

    # -- text ------------------------------------------------------------------------------
    def to_pzprv3(self, inst, answer=True):
        rows = []
        for r in range(inst.rows):
            row = []
            for c in range(inst.cols):
                if (r, c) in inst.clues:
                    n = inst.clues[(r, c)]
                    row.append("-" if n < 0 else str(n))
                elif answer and inst.answer is not None and inst.answer[r, c]:
                    row.append("#")
                else:
                    row.append(".")
            rows.append(row)
        return write_pzprv3("nurikabe", inst.rows, inst.cols, [rows])

    def read_url(self, url):
        from ptrm_codecs import formats
        u = formats.parse_url(url)
        values, _ = formats.decode_number16(u.body, u.rows * u.cols)
        clues = {(k // u.cols, k % u.cols): v for k, v in enumerate(values) if v != -1}
        return Instance(u.rows, u.cols, clues)

    def read_janko(self, problem):
        lines = [ln.split() for ln in problem.strip().splitlines()]
        rows, cols = int(lines[0][0]), int(lines[0][1])
        clues = {}
        for r, row in enumerate(lines[1:rows + 1]):
            for c, tok in enumerate(row[:cols]):
                if tok.isdigit():
                    clues[(r, c)] = int(tok)
                elif tok == "?":
                    clues[(r, c)] = -2
        return Instance(rows, cols, clues)


def _bfs(comp, start) -> list:
    inside = set(comp)
    order, seen, queue = [], {start}, deque([start])
    while queue:
        cell = queue.popleft()
        order.append(cell)
        r, c = cell
        for n in ((r - 1, c), (r + 1, c), (r, c - 1), (r, c + 1)):
            if n in inside and n not in seen:
                seen.add(n)
                queue.append(n)
    return order


def _path(comp, a, b) -> list:
    """A shortest path from a to b inside comp (both ends included)."""
    inside = set(comp)
    prev, queue = {a: None}, deque([a])
    while queue:
        cell = queue.popleft()
        if cell == b:
            break
        r, c = cell
        for n in ((r - 1, c), (r + 1, c), (r, c - 1), (r, c + 1)):
            if n in inside and n not in prev:
                prev[n] = cell
                queue.append(n)
    path, cell = [], b
    while cell is not None:
        path.append(cell)
        cell = prev[cell]
    return path
