"""Maze generator: the Maze-Hard recipe (docs/MAZE_ARC.md has the details and the choices).

Maze-Hard (HRM paper) takes the maze generator of Lehnert et al. 2024 (Searchformer) and keeps
only mazes whose shortest S-G path is longer than 110 steps. That generator walls a uniformly
random set of k cells, k uniform in [30%, 50%] of the grid (270..450 of 900), and puts S and G
on two random free cells. We do the same, with one change that makes it fast enough to use:

  1. walls: k uniform in [walls_min, walls_max] * rows * cols, a uniformly random set of cells;
  2. S, G: every ordered pair of free cells whose BFS distance is more than `min_path` steps is
     found at once (a bit-parallel BFS from all sources); a layout without one is drawn again,
     otherwise S, G is a uniformly random such pair;
  3. the path: a uniformly random shortest S-G path (counted over the BFS layers);
  4. unique=1: the other shortest paths are walled off. Every cell of another shortest path
     lies on some shortest path, and where that path first leaves ours it enters a neighbour
     of ours, so walling those neighbours (and then freeing again each one whose wall is not
     needed) leaves our path the only shortest one, with the same length.

Rejection sampling of (walls, S, G) as in the original needs ~35,000 draws per kept maze at
30x30 / 110 (about one random pair in 30,000 is that far apart); step 2 needs ~200 layouts.
The one difference: the original weights a layout by how many of its pairs qualify, we weight
every layout with at least one qualifying pair alike. In a random layout more than one
shortest path is the rule (a 2x2 free block on the path is enough), so unique=1 cannot simply
reject: it changes the maze by the few walls step 4 adds (`walls_added` in the record).

Instance: `fixed` = wall mask, `clues` = {S: "S", G: "G"}, `answer` = the labelled maze
(1 wall, 2 free, 3 S, 4 G, 5 path: the maze codec's Solution values).

Standalone use (the generator registry lists the PPBench types only):

    python -m ptrm_cli.generate.maze --n 1000 --out mazes.jsonl [--seed 0] [--workers 0]
        [--size 30x30] [-p min_path=110] [-p unique=1]

writes one ptrm record per line ({"type": "maze", "text", "answer", "path_length", "id",
"source", "seed", "index", "difficulty", "knobs"}), resumable and identical for any worker
count, through the same runner as `ptrm generate`.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections import Counter, deque
from functools import lru_cache

import numpy as np

from ..codec import size_name
from ..errors import PtrmError, plain_message
from .base import GenerationFailed, Generator, Instance, Knobs, do_not_apply, puzzle_rng

WALL, FREE, START, GOAL, PATH = 1, 2, 3, 4, 5
CHARS = {WALL: "#", FREE: " ", START: "S", GOAL: "G", PATH: "o"}
STEPS = ((-1, 0), (1, 0), (0, -1), (0, 1))


# -- BFS building blocks -----------------------------------------------------------------------

def _shift_or(front: np.ndarray) -> np.ndarray:
    """Cells 4-adjacent to any set cell (first two axes are the grid; extra axes ride along)."""
    nb = np.zeros_like(front)
    nb[1:] |= front[:-1]
    nb[:-1] |= front[1:]
    nb[:, 1:] |= front[:, :-1]
    nb[:, :-1] |= front[:, 1:]
    return nb


def bfs(free: np.ndarray, source: tuple[int, int]) -> np.ndarray:
    """Steps from `source` to every cell through free cells; -1 where unreachable."""
    dist = np.full(free.shape, -1, dtype=np.int32)
    front = np.zeros(free.shape, dtype=bool)
    front[source] = True
    seen = front.copy()
    d = 0
    while front.any():
        dist[front] = d
        d += 1
        front = _shift_or(front) & free & ~seen
        seen |= front
    return dist


@lru_cache(maxsize=8)
def _neighbours(rows: int, cols: int) -> list[list[int]]:
    """4-neighbour flat indices of each flat cell index."""
    out = []
    for r in range(rows):
        for c in range(cols):
            out.append([(r + dr) * cols + c + dc for dr, dc in STEPS
                        if 0 <= r + dr < rows and 0 <= c + dc < cols])
    return out


def _sweep(free: list[bool], nbrs: list[list[int]], src: int) -> tuple[list[int], list[int]]:
    """Plain BFS on flat lists (fast for one 30x30 grid): distances, and the reached cells in
    BFS order (so the last one is a farthest cell)."""
    dist = [-1] * len(free)
    dist[src] = 0
    order = [src]
    for u in order:  # the list grows while we walk it: a queue
        du = dist[u] + 1
        for v in nbrs[u]:
            if free[v] and dist[v] < 0:
                dist[v] = du
                order.append(v)
    return dist, order


def _may_qualify(free, nbrs, first: int, min_path: int) -> tuple[list[int], bool | None]:
    """The component of cell `first`, and whether it has two cells more than `min_path` apart:
    True, False, or None when the cheap bounds (double sweep; twice the eccentricity of a
    central cell) cannot tell."""
    da, comp = _sweep(free, nbrs, first)
    if len(comp) < min_path + 2:  # a path of min_path + 1 steps visits min_path + 2 cells
        return comp, False
    b = comp[-1]
    if da[b] > min_path:
        return comp, True
    db, order = _sweep(free, nbrs, b)
    c = order[-1]
    ecc = db[c]
    if ecc > min_path:
        return comp, True
    dc, _ = _sweep(free, nbrs, c)
    mid = next(v for v in comp if db[v] == ecc // 2 and dc[v] == ecc - ecc // 2)
    dm, order = _sweep(free, nbrs, mid)
    if 2 * dm[order[-1]] <= min_path:  # diameter <= 2 * eccentricity of any cell
        return comp, False
    return comp, None


def long_pairs(free: np.ndarray, min_path: int) -> tuple[np.ndarray, np.ndarray]:
    """Every ordered pair (source, target) of free cells, as flat indices, whose distance is
    more than `min_path` steps (finite). Exact: the bounds only skip components that cannot
    have such a pair; the rest get a BFS from all their cells at once, one bit per source."""
    rows, cols = free.shape
    flat = free.reshape(-1).tolist()
    nbrs = _neighbours(rows, cols)
    seen = [False] * (rows * cols)
    keep = np.zeros(rows * cols, dtype=bool)
    for u in range(rows * cols):
        if flat[u] and not seen[u]:
            comp, verdict = _may_qualify(flat, nbrs, u, min_path)
            for v in comp:
                seen[v] = True
            if verdict is not False:
                keep[comp] = True
    keep = keep.reshape(rows, cols)
    none = (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64))
    if not keep.any():
        return none
    sources = np.flatnonzero(keep)
    words = (len(sources) + 63) // 64
    bits = np.zeros((rows * cols, words * 64), dtype=bool)
    bits[sources, np.arange(len(sources))] = True
    reach = np.packbits(bits, axis=1, bitorder="little").view("<u8").reshape(rows, cols, words)
    mask = np.where(keep, np.uint64(0xFFFFFFFFFFFFFFFF), np.uint64(0))[:, :, None]
    front, near = reach.copy(), (reach.copy() if min_path <= 0 else None)
    for step in range(1, rows * cols + 1):
        front = _shift_or(front) & mask & ~reach
        if not front.any():
            break
        reach |= front
        if step == min_path:
            near = reach.copy()  # everything within min_path steps
    if near is None:
        return none
    far = np.unpackbits((reach & ~near).reshape(rows * cols, words).view(np.uint8), axis=1,
                        bitorder="little")[:, :len(sources)]
    target, src = np.nonzero(far)
    return sources[src], target


def count_paths(free: np.ndarray, s: tuple[int, int],
                cap: int | None = None) -> tuple[np.ndarray, list]:
    """BFS distances from s and the number of shortest paths to each cell (Python ints, or
    capped at `cap`), as a flat list."""
    rows, cols = free.shape
    dist = np.full((rows, cols), -1, dtype=np.int32)
    count = [0] * (rows * cols)
    dist[s] = 0
    count[s[0] * cols + s[1]] = 1
    queue = deque([s])
    while queue:
        r, c = queue.popleft()
        here = count[r * cols + c]
        for dr, dc in STEPS:
            nr, nc = r + dr, c + dc
            if 0 <= nr < rows and 0 <= nc < cols and free[nr, nc]:
                if dist[nr, nc] < 0:
                    dist[nr, nc] = dist[r, c] + 1
                    queue.append((nr, nc))
                if dist[nr, nc] == dist[r, c] + 1:
                    total = count[nr * cols + nc] + here
                    count[nr * cols + nc] = total if cap is None else min(cap, total)
    return dist, count


def random_shortest_path(free, s, g, rng, counted=None) -> list[tuple[int, int]]:
    """A uniformly random shortest s-g path, as its cells from s to g (both included);
    `counted` = count_paths(free, s) when already at hand."""
    dist, count = counted if counted is not None else count_paths(free, s)
    rows, cols = free.shape
    path = [g]
    cur = g
    while cur != s:
        r, c = cur
        preds = [(r + dr, c + dc) for dr, dc in STEPS
                 if 0 <= r + dr < rows and 0 <= c + dc < cols and free[r + dr, c + dc]
                 and dist[r + dr, c + dc] == dist[r, c] - 1]
        weights = np.array([float(count[p[0] * cols + p[1]]) for p in preds])
        cur = preds[int(rng.choice(len(preds), p=weights / weights.sum()))]
        path.append(cur)
    return path[::-1]


def unique_count(free, s, g) -> int:
    """Number of shortest s-g paths, capped at 2 (0: no route)."""
    _, count = count_paths(free, s, cap=2)
    return count[g[0] * free.shape[1] + g[1]]


def make_unique(free: np.ndarray, path: list[tuple[int, int]], s, g,
                rng) -> tuple[np.ndarray, list[tuple[int, int]]]:
    """Wall off the other shortest paths (module docstring, step 4): the free mask after, and
    the cells walled."""
    on_path = np.zeros_like(free)
    for rc in path:
        on_path[rc] = True
    ds, dg = bfs(free, s), bfs(free, g)
    d = ds[g]
    on_some = (ds >= 0) & (dg >= 0) & (ds + dg == d)
    near = _shift_or(on_path) & on_some & ~on_path
    cells = [tuple(int(x) for x in rc) for rc in np.argwhere(near)]
    if not cells:
        return free, []
    out = free.copy()
    for rc in cells:
        out[rc] = False
    assert unique_count(out, s, g) == 1
    kept = []
    for i in rng.permutation(len(cells)):  # free again each wall the uniqueness does not need
        rc = cells[i]
        out[rc] = True
        if unique_count(out, s, g) != 1:
            out[rc] = False
            kept.append(rc)
    return out, sorted(kept)


# -- the generator ------------------------------------------------------------------------------

def _check_room(knobs: Knobs, rows: int, cols: int) -> None:
    """Refuse a min_path the grid has too few cells for: no layout could ever reach it."""
    min_path = knobs.param("min_path", 110)
    if min_path + 2 > rows * cols:  # a path of min_path + 1 steps visits min_path + 2 cells
        raise PtrmError(f"maze: a {size_name(rows, cols)} maze has {rows * cols} cells, too "
                        f"few for a path longer than {min_path:g} steps",
                        hint="lower -p min_path")


class MazeGenerator(Generator):
    name = "maze"
    default_size = (30, 30)
    docs = "docs/MAZE_ARC.md"
    #: layouts to draw before giving up (about 200 are needed at 30x30 / 110)
    max_attempts = 20000
    params = {
        "min_path": (110.0, "keep mazes whose shortest S-G path is longer than this many steps"),
        "unique": (0.0, "1 = make the shortest path unique (walls off the alternatives)"),
        "walls_min": (0.3, "least fraction of cells that are walls"),
        "walls_max": (0.5, "largest fraction of cells that are walls"),
    }
    fractions = frozenset({"unique", "walls_min", "walls_max"})
    counts = frozenset({"min_path"})

    def check_size(self, rows, cols):
        if not (4 <= rows <= 30 and 4 <= cols <= 30):
            raise PtrmError(f"maze: size {size_name(rows, cols)} is out of range (4..30 a "
                            "side; the maze family is 30x30)", hint=self.size_hint())

    def check_params(self, knobs: Knobs) -> None:
        super().check_params(knobs)
        lo, hi = knobs.param("walls_min", 0.3), knobs.param("walls_max", 0.5)
        if not lo <= hi < 1:
            raise PtrmError(f"maze: need 0 <= walls_min <= walls_max < 1, got walls_min={lo:g}, "
                            f"walls_max={hi:g}", hint="walls_min defaults to 0.3 and walls_max "
                                                      "to 0.5: give both when moving one past "
                                                      "the other's default")
        if knobs.param("min_path", 110) < 1:  # S next to G: no path cell, so the text the
            # codec reads back has no answer in it
            raise PtrmError(f"maze: --param min_path={knobs.param('min_path', 110):g}: expected "
                            "1 or more (a path with a cell between S and G)",
                            hint=self.knob_hint("min_path"))
        if knobs.param("unique", 0) not in (0, 1):
            raise PtrmError(f"maze: --param unique={knobs.param('unique', 0):g}: expected 0 or 1",
                            hint=self.knob_hint("unique"))

    def check_knobs(self, knobs: Knobs, rows, cols) -> None:
        given = [name for name, on in (("--max-clues", knobs.max_clues is not None),
                                       ("--no-minimal", not knobs.minimal),
                                       ("--min-difficulty", knobs.min_difficulty > 0)) if on]
        if given:
            raise PtrmError(f"maze: {', '.join(given)} {do_not_apply(given)} to mazes, which "
                            "have no clues to remove", hint="a maze's difficulty is -p min_path")
        # here, not only in `make`: there it came after --out was created (an empty file left
        # behind) and, with --workers, from inside a worker
        _check_room(knobs, rows, cols)

    def make(self, rng, rows, cols, knobs: Knobs) -> Instance:
        """A maze meeting the recipe; `min_difficulty`, `minimal` and `max_clues` do not apply
        (check_knobs refuses them; the recipe's difficulty is `min_path`)."""
        _check_room(knobs, rows, cols)  # callers of `make` that skip check_knobs (stats, tests)
        for attempt in range(1, self.max_attempts + 1):
            try:
                inst = self.attempt(rng, rows, cols, knobs)
            except GenerationFailed:
                continue
            inst.stats["difficulty"]["layouts"] = attempt
            inst.stats["attempts"] = attempt
            return inst
        raise PtrmError(f"maze: no {size_name(rows, cols)} maze with a path longer than "
                        f"{knobs.param('min_path', 110):g} steps in {self.max_attempts} layouts",
                        hint="lower -p min_path (a 30x30 grid gives ~1 in 200 layouts at 110)")

    def attempt(self, rng, rows, cols, knobs) -> Instance:
        min_path = int(knobs.param("min_path", 110))
        lo, hi = knobs.param("walls_min", 0.3), knobs.param("walls_max", 0.5)
        n = rows * cols
        k = int(rng.integers(int(n * lo), int(n * hi) + 1))
        free = np.ones(n, dtype=bool)
        free[rng.permutation(n)[:k]] = False
        free = free.reshape(rows, cols)
        src, dst = long_pairs(free, min_path)
        if len(src) == 0:
            raise GenerationFailed
        i = int(rng.integers(len(src)))
        s, g = divmod(int(src[i]), cols), divmod(int(dst[i]), cols)
        dist, count = count_paths(free, s)
        shortest_paths = count[g[0] * cols + g[1]]
        path = random_shortest_path(free, s, g, rng, (dist, count))
        added: list = []
        if knobs.param("unique", 0):
            free, added = make_unique(free, path, s, g, rng)
        answer = np.where(free, FREE, WALL).astype(np.int16)
        for rc in path[1:-1]:
            answer[rc] = PATH
        answer[s], answer[g] = START, GOAL
        stats = {"path_length": len(path) - 1, "walls": int((~free).sum()),
                 "walls_added": len(added),
                 "shortest_paths": min(int(shortest_paths), 2 ** 53)}
        return Instance(rows, cols, {s: "S", g: "G"}, fixed=~free, answer=answer,
                        stats={"difficulty": stats})

    def solve(self, inst: Instance, limit: int = 2) -> tuple[list[np.ndarray], dict]:
        """Up to `limit` shortest-path answers of the maze, and {path_length, shortest_paths}."""
        free = ~np.asarray(inst.fixed, dtype=bool)
        s = next(rc for rc, v in inst.clues.items() if v == "S")
        g = next(rc for rc, v in inst.clues.items() if v == "G")
        dist, count = count_paths(free, s)
        d = int(dist[g])
        total = count[g[0] * inst.cols + g[1]] if d >= 0 else 0
        found: list[np.ndarray] = []

        def walk(cell, cells):  # depth-first over the shortest-path layers, from g back to s
            if len(found) >= limit:
                return
            if cell == s:
                grid = np.where(free, FREE, WALL).astype(np.int16)
                for rc in cells[1:]:
                    grid[rc] = PATH
                grid[s], grid[g] = START, GOAL
                found.append(grid)
                return
            r, c = cell
            for dr, dc in STEPS:
                p = (r + dr, c + dc)
                if 0 <= p[0] < inst.rows and 0 <= p[1] < inst.cols and dist[p] == dist[cell] - 1:
                    walk(p, cells + [cell])

        if d > 0:
            walk(g, [])
        stats = {"path_length": d, "shortest_paths": min(int(total), 2 ** 53), "conflicts": 0}
        return found, stats

    def to_pzprv3(self, inst: Instance, answer: bool = True) -> str:
        """Mazes have no pzprv3 form: this is the maze codec's plain text (with the path when
        `answer`), which is all the generic runner needs (it hands the text to codec.parse)."""
        grid = inst.answer if answer else np.where(inst.answer == PATH, FREE, inst.answer)
        return "\n".join("".join(CHARS[int(v)] for v in row) for row in grid) + "\n"

    def clue_stats(self, inst: Instance) -> dict:
        walls = int(np.asarray(inst.fixed).sum())
        return {"clues": walls, "density": walls / (inst.rows * inst.cols),
                "values": Counter({"path": int((inst.answer == PATH).sum())})}


# -- records and the standalone command ---------------------------------------------------------

def make_record(job, index: int) -> dict:
    """Maze `index` of the job as a ptrm record, through the maze codec (as runner.make_record
    does for the registered types): parse the text, verify the path, write the record."""
    from .. import codec as registry
    from .runner import record_id

    gen = MazeGenerator()
    codec = registry.get("maze")
    inst = gen.make(puzzle_rng(job.seed, job.type, index), job.rows, job.cols, job.knobs)
    text = gen.to_pzprv3(inst)
    parsed = codec.parse(text, source=record_id(job, index))
    bad = codec.verify(parsed.puzzle, parsed.solution)
    if bad:
        raise AssertionError(f"{record_id(job, index)}: the maze codec rejects the generated "
                             f"path ({bad[0].code}: {bad[0].message})\n{text}")
    return codec.to_record(parsed.puzzle, parsed.solution, id=record_id(job, index),
                           source="generated", seed=job.seed, index=index,
                           difficulty=inst.stats["difficulty"], knobs=job.knobs.tag())


def _work(args) -> tuple[int, str]:
    job, index = args
    return index, json.dumps(make_record(job, index), separators=(",", ":"))


def main(argv: list[str] | None = None) -> int:
    from .runner import Job, run

    ap = argparse.ArgumentParser(prog="python -m ptrm_cli.generate.maze",
                                 description="Generate Maze-Hard-style mazes as ptrm records.")
    ap.add_argument("--n", type=int, required=True, help="how many mazes (indices 0..N-1)")
    ap.add_argument("--out", "-o", required=True, help="JSONL file (an existing one is resumed)")
    ap.add_argument("--size", default="30x30", help="ROWSxCOLS (default 30x30)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--workers", "-w", type=int, default=0, help="processes (0 = one per core)")
    ap.add_argument("--param", "-p", action="append", default=[],
                    help="KEY=NUMBER: " + "; ".join(f"{k} (default {v[0]:g}): {v[1]}"
                                                    for k, v in MazeGenerator.params.items()))
    args = ap.parse_args(argv)
    gen = MazeGenerator()
    try:
        rows, cols = (int(x) for x in args.size.lower().split("x"))
        params = {k.strip(): float(v) for k, v in (p.split("=", 1) for p in args.param)}
    except ValueError:
        ap.error("--size is ROWSxCOLS and --param KEY=NUMBER")
    knobs = Knobs(params=params)
    try:  # the user's to fix (a size, a knob, a min_path no layout reaches): no traceback
        gen.check_size(rows, cols)
        gen.check_params(knobs)
        summary = run(Job("maze", rows, cols, args.seed, knobs), args.n, args.out,
                      workers=args.workers or os.cpu_count() or 1, make=_work)
    except PtrmError as e:  # with its hint, or the CLI's (argparse's error() drops it)
        print(plain_message(e, ap.prog), file=sys.stderr)
        return 2
    print(f"{args.out}: made {summary['made']} maze(s), {summary['present']} already there, "
          f"{summary['seconds']:.1f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
