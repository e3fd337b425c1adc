"""Shakashaka (PPBENCH_FORMATS.md §4.6).

Puzzle.clues: [rows, cols] int16: -1 = white cell, -2 = unnumbered black, 0..4 = numbered black
(the clue grid of lightup.BlackCellCodec, which this codec shares with lightup).
Solution.grid: [rows, cols] int16: 0 = no triangle (EMPTY), 2..5 = a black triangle, named by
pzpr.js's qans, the corner holding its right angle: 2 ◣ bottom-left, 3 ◢ bottom-right,
4 ◥ top-right, 5 ◤ top-left. Black cells hold 0. Dots (qsub) and clue completion marks (qcmp)
never affect checking and are read and dropped.

Formats:
  puzz.link   shakashaka/<cols>/<rows>/<4Cell body>, exactly as lightup
  pzprv3      clue grid (0-4 numbered black | '5' unnumbered black | '.'), then answer grid
              ('2'-'5' triangle | '+' dot | '-' completion mark | '.')
  plain grid  the clue grid, optionally followed by a blank line and the answer grid, as in the
              pzprv3 body; optionally after a line `shakashaka`
  PPBench     left click: the triangle of the quadrant clicked (dx = x - bx, dy = y - by:
              dx <= 0 < dy ◣, dx, dy > 0 ◢, dy <= 0 < dx ◥, dx, dy <= 0 ◤); the same click again
              leaves a dot, a left click on a dot clears it; right click toggles a dot
  janko       problem 0-4 | 'x' or '5' unnumbered black | '-'; solution nw/ne/sw/se = the
              corner the black triangle fills (nw ◤ 5, ne ◥ 4, sw ◣ 2, se ◢ 3) | '-'
Tokens (ppbench family): shakashaka.white, shakashaka.black, shakashaka.black.0..4 on inputs,
with shakashaka.tri.2..5 on white cells holding a triangle in a trajectory state; labels are
shakashaka.empty / shakashaka.tri.2..5 on white cells and the black cell's input token on black
cells.
Verifier codes, in pzpr.js checklist order:
  brNoTriangle  there is no triangle
  nmTriangleGt  a numbered black cell touches more triangles than its number
  cuNotRectx    a white area is not a rectangle (upright, or tilted by 45 degrees)
  nmTriangleLt  a numbered black cell touches fewer triangles than its number
`puzzle_violations` is nmTriangleLt at a numbered black cell with fewer neighbours that can
hold a triangle (white, and not beside a 0) than its number: no answer can meet it, so `ptrm
solve` says so before running a model.
"""

from __future__ import annotations

import operator

import numpy as np
from rich.text import Text

from ptrm_cli import dihedral
from ptrm_cli.codec import Parsed, Solution, Violation, cell_name, size_name
from ptrm_cli.errors import ParseError

from . import formats
from .common import boxed, read_janko_grid
from .lightup import (BLACK, MAX_NUMBER, WHITE, BlackCellCodec, adjacent_count,
                      cell_rows, cells_of, check_width)

TRIANGLES = (2, 3, 4, 5)
GLYPHS = {2: "◣", 3: "◢", 4: "◥", 5: "◤"}
NO_TRIANGLE = "·"  # how the board draws a white cell without one
JANKO = {"sw": 2, "se": 3, "ne": 4, "nw": 5}

# A triangle by the corner of its right angle, laid out as the corners of a cell: applying a
# grid symmetry to this 2x2 array shows where each corner goes.
CORNERS = np.array([[5, 4], [2, 3]])

# The sides along which a cell's white part is a full edge, so that a white area continues
# through it: (up, down, left, right), indexed by the cell's answer (0 empty, 2..5 triangles).
OPEN_SIDES = np.array([(1, 1, 1, 1), (0, 0, 0, 0), (1, 0, 0, 1), (1, 0, 1, 0), (0, 1, 1, 0),
                       (0, 1, 0, 1)], dtype=bool)


class ShakashakaCodec(BlackCellCodec):
    name = "shakashaka"
    description = "Shakashaka: black triangles make every white area a rectangle"
    url_ids = ("shakashaka",)
    black_word = "black"
    rules = ("Put black triangles (half a cell, cut corner to corner) in white cells so that "
             "every white area left is a rectangle, upright or tilted 45 degrees, and a numbered "
             "black cell has exactly that many triangles beside it (above, below, left, right).")
    # '5' is a black cell without a number (pzprv3's own code for it)
    example = "\n".join(("shakashaka", ". . . 5", ". . . .", ". . . .", "2 . . ."))
    legend = {0: f"no triangle ({NO_TRIANGLE}); black cells hold 0 too",
              **{q: f"a black triangle {GLYPHS[q]}, its right angle {corner}"
                 for q, corner in zip(TRIANGLES, ("bottom-left", "bottom-right", "top-right",
                                                  "top-left"))}}

    # -- parsing ---------------------------------------------------------------------------
    def parse_pzprv3(self, p, *, source=None):
        clue_rows = formats.grid_section(p, 0, p.rows, p.cols, what="shakashaka clue grid",
                                         source=source)
        puzzle = self._read_clues([(p.first_line + r, row) for r, row in enumerate(clue_rows)],
                                  source=source)
        answer_rows = formats.optional_section(p, p.rows, p.rows, p.cols,
                                               what="shakashaka answer", source=source)
        formats.expect_end(p, p.rows if answer_rows is None else 2 * p.rows, source=source)
        if answer_rows is None:
            return Parsed(puzzle)
        first = p.first_line + p.rows
        return Parsed(puzzle, self._read_answers(
            puzzle, [(first + r, row) for r, row in enumerate(answer_rows)], source=source))

    def parse_grid(self, lines, *, source=None, first_line=1):
        blocks = cell_rows(lines, first_line=first_line)
        if not blocks:  # the type line alone: said, not an IndexError on blocks[0]
            raise ParseError("shakashaka grid: expected grid lines", source=source,
                             line=first_line)
        if len(blocks) > 2:
            raise ParseError(f"a shakashaka grid is a clue grid and an optional answer grid, found "
                             f"{len(blocks)} blocks separated by blank lines", source=source,
                             line=blocks[2][0][0])
        cols = len(blocks[0][0][1])
        check_width(blocks[0], cols, what="shakashaka clue grid", source=source)
        puzzle = self._read_clues(blocks[0], source=source)
        if len(blocks) == 1:
            return Parsed(puzzle)
        answers = blocks[1]
        if len(answers) != puzzle.rows:
            raise ParseError(f"the answer grid has {len(answers)} lines, the clue grid "
                             f"{puzzle.rows}", source=source, line=answers[0][0])
        check_width(answers, cols, what="shakashaka answer grid", source=source)
        return Parsed(puzzle, self._read_answers(puzzle, answers, source=source))

    def _read_clues(self, rows, *, source=None):
        clues = np.full((len(rows), len(rows[0][1])), WHITE, dtype=np.int16)
        for r, (line, tokens) in enumerate(rows):
            for c, tok in enumerate(tokens):
                if tok == "5":  # pzpr.js writes the unnumbered black cell as 5
                    clues[r, c] = BLACK
                elif formats.is_number(tok) and int(tok) <= MAX_NUMBER:
                    clues[r, c] = int(tok)
                elif tok != ".":
                    raise ParseError(f"shakashaka clue {tok!r}: expected 0-4 (numbered black), "
                                     "'5' (black) or '.'", source=source, line=line)
        return self.make_puzzle(clues, source=source)

    def _read_answers(self, puzzle, rows, *, source=None) -> Solution | None:
        grid = np.zeros((puzzle.rows, puzzle.cols), dtype=np.int16)
        answered = False
        for r, (line, tokens) in enumerate(rows):
            for c, tok in enumerate(tokens):
                if tok in ("2", "3", "4", "5"):
                    if puzzle.clues[r, c] != WHITE:
                        raise ParseError(f"a triangle on the black cell {cell_name(r, c)}",
                                         source=source, line=line)
                    grid[r, c] = int(tok)
                    answered = True
                elif tok == "+":
                    answered = True
                elif tok not in ("-", "."):
                    raise ParseError(f"shakashaka answer {tok!r}: expected a triangle 2-5, '+' "
                                     "(dot), '-' (completion mark) or '.'", source=source, line=line)
        return Solution(self.name, grid) if answered else None

    def apply_moves(self, puzzle, moves):
        grid = np.zeros((puzzle.rows, puzzle.cols), dtype=np.int16)
        dots = np.zeros(grid.shape, dtype=bool)
        for move in moves:
            for action in move:
                if action.kind != "mouse" or not self.clickable(puzzle, *action.cell):
                    continue
                r, c = action.cell
                if action.button == "right":
                    dots[r, c], grid[r, c] = not dots[r, c], 0
                    continue
                tri = _quadrant(action.x - (2 * c + 1), action.y - (2 * r + 1))
                if dots[r, c]:
                    dots[r, c] = False
                elif grid[r, c] == tri:
                    dots[r, c], grid[r, c] = True, 0
                else:
                    grid[r, c] = tri
        return Solution(self.name, grid)

    def from_janko(self, problem, solution, *, source=None):
        puzzle = self.make_puzzle(self.janko_clues(problem, ("x", "5"), source=source), source=source)
        rows, cols, body = read_janko_grid(solution, source=source)
        if (rows, cols) != (puzzle.rows, puzzle.cols):
            raise ParseError(f"janko solution is {size_name(rows, cols)}, its problem "
                             f"{size_name(puzzle.rows, puzzle.cols)}", source=source)
        grid = np.zeros((rows, cols), dtype=np.int16)
        for r in range(rows):
            for c, tok in enumerate(body[r][:cols]):
                if tok in JANKO and puzzle.clues[r, c] == WHITE:
                    grid[r, c] = JANKO[tok]
                elif tok != "-":
                    raise ParseError(f"janko shakashaka solution cell {tok!r} at "
                                     f"{cell_name(r, c)}: expected nw, ne, sw or se on a white "
                                     "cell, or '-'", source=source,
                                     line=r + 2)
        return puzzle, Solution(self.name, grid)

    # -- writing ---------------------------------------------------------------------------
    def to_pzprv3(self, puzzle, solution=None):
        def clue(v):
            return "5" if v == BLACK else "." if v == WHITE else str(v)

        def answer(r, c):
            v = 0 if solution is None else int(solution.grid[r, c])
            return str(v) if v in TRIANGLES and puzzle.clues[r, c] == WHITE else "."

        clues = [[clue(int(v)) for v in row] for row in puzzle.clues]
        answers = [[answer(r, c) for c in range(puzzle.cols)] for r in range(puzzle.rows)]
        return formats.write_pzprv3(self.name, puzzle.rows, puzzle.cols, [clues, answers])

    # -- tokens ----------------------------------------------------------------------------
    def input_token(self, puzzle, r, c, value):
        if puzzle.clues[r, c] == WHITE and value in TRIANGLES:
            return f"shakashaka.tri.{value}"
        return self.clue_token(puzzle, r, c)

    def label_token(self, puzzle, r, c, value):
        if puzzle.clues[r, c] != WHITE:
            return self.clue_token(puzzle, r, c)
        return f"shakashaka.tri.{value}" if value in TRIANGLES else "shakashaka.empty"

    def token_value(self, puzzle, r, c, name):
        if puzzle.clues[r, c] != WHITE or not name.startswith("shakashaka.tri."):
            return self.EMPTY
        return int(name.rsplit(".", 1)[1])

    # -- rules -----------------------------------------------------------------------------
    def verify(self, puzzle, solution):
        white = puzzle.clues == WHITE
        grid = solution.grid
        tri = np.where(white & (grid >= min(TRIANGLES)) & (grid <= max(TRIANGLES)), grid, 0)
        if not tri.any():
            return [Violation("brNoTriangle", "there is no triangle")]
        touching = adjacent_count(tri > 0)
        out = self.numbers_broken(puzzle, touching, "nmTriangleGt", operator.gt,
                                  "touches {} triangles")
        out += [Violation("cuNotRectx", f"the white area at {cell_name(*area[0])} is not a "
                          "rectangle", area) for area in _bad_areas(white, tri)]
        out += self.numbers_broken(puzzle, touching, "nmTriangleLt", operator.lt,
                                   "touches {} triangle(s)")
        return out

    def puzzle_violations(self, puzzle):
        """nmTriangleLt at a numbered black cell with less room for triangles beside it than
        its number (`room_beside`): no answer can meet it, so `ptrm solve` says so before a
        model runs."""
        return self.numbers_broken(puzzle, self.room_beside(puzzle), "nmTriangleLt",
                                   operator.lt, "has room for only {} triangle(s) beside it")

    # -- augmentation ----------------------------------------------------------------------
    def transform_answers(self, grid, t):
        # the corner at each position of the transformed layout came from the original one
        moved = dihedral.apply(CORNERS, t)
        out = dihedral.apply(grid, t)
        turned = out.copy()
        for old, new in zip(moved.flat, CORNERS.flat):
            turned[out == old] = new
        return turned

    # -- people ----------------------------------------------------------------------------
    def render(self, puzzle, solution=None):
        def cell(r, c):
            v = int(puzzle.clues[r, c])
            if v != WHITE:
                return self.clue_text(v)
            q = 0 if solution is None else int(solution.grid[r, c])
            return Text(GLYPHS[q], style="bold cyan") if q in GLYPHS else \
                Text(NO_TRIANGLE, style="dim")

        return boxed([[cell(r, c) for c in range(puzzle.cols)] for r in range(puzzle.rows)], width=1)


def _quadrant(dx: float, dy: float) -> int:
    """The triangle a left click places: its right angle in the quadrant clicked."""
    if dy > 0:
        return 3 if dx > 0 else 2
    return 4 if dx > 0 else 5


def _bad_areas(white: np.ndarray, tri: np.ndarray) -> list[tuple[tuple[int, int], ...]]:
    """White areas, in reading order of their first cell, that are neither an axis-aligned
    rectangle without triangles nor a rectangle tilted by 45 degrees."""
    area = _areas(white, tri)
    # tilted: every cell's white part is closed on exactly the sides where the area ends
    around = np.full((area.shape[0] + 2, area.shape[1] + 2), -1)
    around[1:-1, 1:-1] = area
    ends = np.stack([around[:-2, 1:-1] != area, around[2:, 1:-1] != area,  # up, down,
                     around[1:-1, :-2] != area, around[1:-1, 2:] != area], axis=-1)  # left, right
    askew = white & (ends == OPEN_SIDES[tri]).any(axis=-1)
    # per-area sums over the white cells, areas numbered 0.. in reading order
    ids, k = np.unique(area[white], return_inverse=True)
    rs, cs = np.nonzero(white)
    size = np.bincount(k)
    rmin, rmax, cmin, cmax = (np.full(len(ids), v) for v in (rs.max(), 0, cs.max(), 0))
    np.minimum.at(rmin, k, rs)
    np.maximum.at(rmax, k, rs)
    np.minimum.at(cmin, k, cs)
    np.maximum.at(cmax, k, cs)
    upright = (size == (rmax - rmin + 1) * (cmax - cmin + 1)) & (np.bincount(k, tri[white] > 0) == 0)
    tilted = np.bincount(k, askew[white]) == 0
    return [cells_of(area == ids[j]) for j in np.nonzero(~(upright | tilted))[0]]


def _areas(white: np.ndarray, tri: np.ndarray) -> np.ndarray:
    """White area id per cell (-1 on black cells): the smallest cell index of the area. Areas
    join across an edge only where both cells' white parts cover that edge fully."""
    rows, cols = white.shape
    sides = OPEN_SIDES[tri]  # [rows, cols, (up, down, left, right)]
    down = white[:-1] & white[1:] & sides[:-1, :, 1] & sides[1:, :, 0]
    right = white[:, :-1] & white[:, 1:] & sides[:, :-1, 3] & sides[:, 1:, 2]
    parent = list(range(rows * cols))  # union-find over cell indices; a root is its set's minimum

    def root(i):
        while parent[i] != i:
            parent[i] = i = parent[parent[i]]
        return i

    rr, cc = np.nonzero(right)
    edges = [(i, i + cols) for i in np.flatnonzero(down).tolist()]
    edges += [(i, i + 1) for i in (rr * cols + cc).tolist()]
    for a, b in edges:
        a, b = root(a), root(b)
        parent[max(a, b)] = min(a, b)
    ids = np.array([root(i) for i in range(rows * cols)]).reshape(rows, cols)
    return np.where(white, ids, -1)
