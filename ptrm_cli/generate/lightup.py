"""Light Up (akari) generator.

Encoding: one variable per white cell, "a light here". Every maximal row or column run of white
cells (a segment) holds at most one light; every white cell has a light in its row segment or
its column segment (itself included); a numbered wall n has exactly n lights among its
orthogonal white neighbours, behind the clue's selector literal. All rules are local, so no
cuts are needed.

Making one:
  1. walls at random, density `walls` (0.21; with the repairs of step 3 this lands at janko's
     0.234 of cells), half-turn symmetric unless `symmetric=0`, as published puzzles are;
  2. a random light placement (random solver phases);
  3. every wall numbered with its count. If that is not unique, a cell where a second solution
     differs becomes an extra numbered wall (when the first solution stays valid), up to
     `repairs` times, else the attempt is dropped;
  4. numbers removed in random order while the puzzle stays unique (walls stay).

Answer convention: [rows, cols] int, 1 = light, 0 = none (walls 0). Fixed structure: the set
of wall cells; clues: {wall cell: number}.
"""

from __future__ import annotations

import numpy as np

from ..errors import PtrmError
from .base import GenerationFailed, Generator, Instance, Knobs, shuffled, write_pzprv3
from .sat import Formula, Search, difficulty, neighbours, reduce_clues, solutions


def segments(rows: int, cols: int, walls: set) -> list[list[tuple[int, int]]]:
    """Maximal horizontal and vertical runs of white cells."""
    out = []
    for r in range(rows):
        run = []
        for c in range(cols + 1):
            if c < cols and (r, c) not in walls:
                run.append((r, c))
            elif run:
                out.append(run)
                run = []
    for c in range(cols):
        run = []
        for r in range(rows + 1):
            if r < rows and (r, c) not in walls:
                run.append((r, c))
            elif run:
                out.append(run)
                run = []
    return out


def random_walls(rng, rows: int, cols: int, density: float, symmetric: bool) -> set:
    walls = set()
    for r in range(rows):
        for c in range(cols):
            if symmetric and (r, c) > (rows - 1 - r, cols - 1 - c):
                continue
            if rng.random() < density:
                walls.add((r, c))
                if symmetric:
                    walls.add((rows - 1 - r, cols - 1 - c))
    return walls


class LightupGenerator(Generator):
    name = "lightup"
    params = {"walls": (0.21, "fraction of cells made walls (repairs add a few more)"),
              "symmetric": (1.0, "1 = walls symmetric under a half turn"),
              "repairs": (6.0, "extra walls allowed to make the full clue set unique")}
    fractions = frozenset({"symmetric"})
    switches = frozenset({"symmetric"})
    counts = frozenset({"repairs"})

    def check_params(self, knobs: Knobs) -> None:
        super().check_params(knobs)
        if not 0 <= knobs.param("walls", 0.21) < 1:  # 1: every cell a wall, nothing to solve
            raise PtrmError(f"lightup: walls={knobs.param('walls', 0.21):g}: expected a "
                            f"fraction of the cells in [0, 1)", hint=self.knob_hint("walls"))

    # -- encoding --------------------------------------------------------------------------
    class _Enc:
        def __init__(self, rows, cols, walls, clues):
            self.rows, self.cols, self.walls = rows, cols, walls
            f = self.f = Formula()
            self.light = {}
            for r in range(rows):
                for c in range(cols):
                    if (r, c) not in walls:
                        self.light[(r, c)] = f.var()
            seen_by = {rc: set() for rc in self.light}
            for seg in segments(rows, cols, walls):
                f.at_most([self.light[rc] for rc in seg], 1)
                for rc in seg:
                    seen_by[rc].update(seg)
            for rc, cells in seen_by.items():
                f.add(sorted(self.light[x] for x in cells))
            self.selector = {}
            for w, n in sorted(clues.items()):  # sorted: the same clauses however made
                q = self.selector[w] = f.var()
                around = [self.light[x] for x in neighbours(rows, cols, *w) if x in self.light]
                f.exactly(around, n, guard=q)

        def answer(self, model) -> np.ndarray:
            grid = np.zeros((self.rows, self.cols), dtype=np.int16)
            for (r, c), v in self.light.items():
                grid[r, c] = v in model
            return grid

        def answer_lits(self, grid) -> list[int]:
            return [v if grid[rc] else -v for rc, v in self.light.items()]

    @staticmethod
    def _counts(rows, cols, walls, grid) -> dict:
        return {w: sum(int(grid[x]) for x in neighbours(rows, cols, *w) if x not in walls)
                for w in walls}

    @staticmethod
    def _valid(rows, cols, walls, grid) -> bool:
        lit = np.zeros((rows, cols), dtype=bool)
        for seg in segments(rows, cols, walls):
            n = sum(int(grid[rc]) for rc in seg)
            if n > 1:
                return False
            if n:
                for rc in seg:
                    lit[rc] = True
        return all(lit[r, c] for r in range(rows) for c in range(cols) if (r, c) not in walls)

    # -- making ----------------------------------------------------------------------------
    def attempt(self, rng, rows, cols, knobs: Knobs) -> Instance:
        walls = random_walls(rng, rows, cols, knobs.param("walls", 0.21),
                             knobs.param("symmetric", 1) >= 0.5)
        if len(walls) == rows * cols:  # no cell to light: its text holds no answer (walls
            raise GenerationFailed     # near 1 on a small board)
        enc = self._Enc(rows, cols, walls, {})
        with Search(enc.f) as search:
            search.set_phases([v if rng.random() < 0.3 else -v for v in enc.light.values()])
            model = search.solve()
            if model is None:
                raise GenerationFailed
            grid = enc.answer(model)
        # the full clue set, made unique by a few extra walls if needed
        for _ in range(int(knobs.param("repairs", 6)) + 1):
            clues = self._counts(rows, cols, walls, grid)
            enc = self._Enc(rows, cols, walls, clues)
            search = Search(enc.f)
            differ = search.forbid(enc.answer_lits(grid))
            sel = list(enc.selector.values())
            other = search.solve(sel + [differ])
            if other is None:
                break
            alt = enc.answer(other)
            spots = [rc for rc in shuffled(rng, enc.light) if alt[rc] != grid[rc] and not grid[rc]]
            for rc in spots:
                if self._valid(rows, cols, walls | {rc}, grid):
                    walls = walls | {rc}
                    break
            else:
                search.close()
                raise GenerationFailed
            search.close()
        else:
            raise GenerationFailed
        with search:
            order = rng.permutation(len(sel))
            target = knobs.max_clues if knobs.max_clues is not None else (
                None if knobs.minimal else len(sel))
            kept = set(reduce_clues(search, differ, sel, order, target=target))
        clues = {w: n for w, n in clues.items() if enc.selector[w] in kept}
        return Instance(rows, cols, clues, fixed=frozenset(walls), answer=grid)

    # -- checking --------------------------------------------------------------------------
    def solve(self, inst, limit=2):
        enc = self._Enc(inst.rows, inst.cols, set(inst.fixed), inst.clues)
        for q in enc.selector.values():
            enc.f.add([q])
        with Search(enc.f) as search:
            sols = solutions(search, list(enc.light.values()), limit=limit)
            return [enc.answer(m) for m in sols], difficulty(search.stats())

    # -- text ------------------------------------------------------------------------------
    def to_pzprv3(self, inst, answer=True):
        grid = []
        for r in range(inst.rows):
            row = []
            for c in range(inst.cols):
                if (r, c) in inst.clues:
                    row.append(str(inst.clues[(r, c)]))
                elif (r, c) in inst.fixed:
                    row.append("-")
                elif answer and inst.answer is not None and inst.answer[r, c]:
                    row.append("#")
                else:
                    row.append(".")
            grid.append(row)
        return write_pzprv3("lightup", inst.rows, inst.cols, [grid])

    def read_url(self, url):
        from ptrm_codecs import formats
        u = formats.parse_url(url)
        values, _ = formats.decode_4cell(u.body, u.rows * u.cols)
        return self._from_values(u.rows, u.cols, values)

    def read_janko(self, problem):
        lines = [ln.split() for ln in problem.strip().splitlines()]
        rows, cols = int(lines[0][0]), int(lines[0][1])
        values = []
        for row in lines[1:rows + 1]:
            for tok in row[:cols]:
                values.append(int(tok) if tok in ("0", "1", "2", "3", "4")
                              else -2 if tok in ("x", "X", "5") else -1)
        return self._from_values(rows, cols, values)

    @staticmethod
    def _from_values(rows, cols, values) -> Instance:
        walls, clues = set(), {}
        for k, v in enumerate(values):
            rc = (k // cols, k % cols)
            if v != -1:
                walls.add(rc)
            if v >= 0:
                clues[rc] = v
        return Instance(rows, cols, clues, fixed=frozenset(walls))

    def clue_stats(self, inst):
        out = super().clue_stats(inst)
        out["walls"] = len(inst.fixed) / (inst.rows * inst.cols)
        out["numbered_walls"] = len(inst.clues) / max(1, len(inst.fixed))
        return out
