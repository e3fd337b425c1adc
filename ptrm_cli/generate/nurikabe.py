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

Answer convention: [rows, cols] int, 1 = shaded, 0 = unshaded. Clues: {cell: island size}.
"""

from __future__ import annotations

from collections import deque

import numpy as np

from .base import GenerationFailed, Generator, Instance, Knobs, write_pzprv3
from .sat import (Formula, Search, boundary, components, connectivity_cuts, difficulty,
                  neighbours, solutions)


#: island sizes 1..12 in janko's 10x10 nurikabe (relative counts), what islands grow towards
ISLAND_SIZES = [348.0, 675, 687, 498, 282, 146, 102, 53, 44, 16, 7, 3]


class NurikabeGenerator(Generator):
    name = "nurikabe"
    params = {"white": (0.45, "fraction of unshaded cells to aim for"),
              "max_island": (9.0, "largest island"),
              "repairs": (12.0, "changes allowed to make the puzzle unique")}

    # -- a random solution ------------------------------------------------------------------
    def random_solution(self, rng, rows, cols, knobs: Knobs) -> np.ndarray:
        """An island-id grid (-1 = shaded) of a valid solution without clues. Islands are
        seeded and grown one at a time to a size drawn from janko's island sizes, until
        `white` of the board is unshaded; then every 2x2 shaded block left is broken by
        growing a neighbouring island (up to `max_island`) or by a new island of 1."""
        white_target = knobs.param("white", 0.45) * rows * cols
        max_island = int(knobs.param("max_island", 9))
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
    def attempt(self, rng, rows, cols, knobs: Knobs) -> Instance:
        island = self.random_solution(rng, rows, cols, knobs)
        if (island < 0).all() or (island >= 0).all():
            raise GenerationFailed
        max_island = int(knobs.param("max_island", 9))
        ids = np.unique(island[island >= 0])
        island = np.where(island >= 0, np.searchsorted(ids, island), -1)  # ids 0..k-1
        sizes = np.bincount(island[island >= 0]).tolist()
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
                other = search.solve([differ])
            if other is None:
                return Instance(rows, cols, clues, answer=grid)
            self._repair(rng, island, sizes, where, {rc for rc in s if s[rc] in other},
                         max_island)
        raise GenerationFailed

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
