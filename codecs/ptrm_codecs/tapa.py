"""Tapa (PPBENCH_FORMATS.md §4.5).

Puzzle.clues: a rows x cols tuple of tuples; each cell holds its clue as a tuple of numbers in
the order given (pzpr.js's qnums, -2 = "?"), or () for no clue. A clue is checked as a multiset.
Solution.grid: [rows, cols] int16: 1 = shaded, 0 = unshaded (EMPTY), as in nurikabe, whose
shade-or-not helpers this codec shares; clue cells hold 0. Dots are read and dropped.

Formats:
  puzz.link   tapa/<cols>/<rows>/<body>: 0-8 single clue, 9 = 1,1,1,1, '.' = ?, g-z 1..20 blanks,
              and two-character base-36 codes for pairs (360..395), triples (396..459) and
              quads (460..475), in which a 0 component means "?"
  pzprv3      one grid: clue 'a,b,c' in stored order ('-' for ?) | '#' shaded | '+' dot | '.'
  plain grid  that pzprv3 grid without its header, cells separated by spaces, optionally after a
              line `tapa`
  PPBench     moves: left click toggles shading, right click puts a dot; clue cells ignore both
A clue must fit on the 8-cell ring (pzpr.js's rule: one number 0..8, or 2-4 numbers >= 1 or ?
with count + sum <= 8, ? counting 1); anything else is a ParseError.
Tokens (ppbench family): tapa.blank and tapa.clue.<sorted values, "?" first> (the 42 multisets
of families.TAPA_CLUES, 19 of them with "?") on inputs, with tapa.shaded on cells a trajectory
state shades; labels are tapa.shaded / tapa.unshaded on non-clue cells and the clue's input
token on clue cells.
Rules, in pzpr.js checklist order: brNoShade, cs2x2, ceTapaNe, csDivide.
"""

from __future__ import annotations

import numpy as np
from rich.text import Text

from ptrm_cli import dihedral
from ptrm_cli.codec import Parsed, Puzzle, Solution, Violation, cell_name, size_name
from ptrm_cli.errors import ParseError, PtrmError

from . import formats
from .common import GridCodec, boxed
from .families import PPBENCH, TAPA_CLUES, tapa_token
from .nurikabe import (SHADED, SHADING_LEGEND, UNSHADED, ClueShadingTokens, answer_mark,
                       grid_rows, pzprv3_rows, read_answer_mark, replay_clicks, shading_glyph,
                       shading_violations)

UNKNOWN = -2  # a "?" in a clue
#: the 8 cells around a clue, clockwise from the top-left
RING = ((-1, -1), (-1, 0), (-1, 1), (0, 1), (1, 1), (1, 0), (1, -1), (0, -1))
BASE36 = "0123456789abcdefghijklmnopqrstuvwxyz"
PAIR, TRIPLE, QUAD, END = 360, 396, 460, 476  # base-36 code ranges of the URL's multi-number clues


# -- clues ------------------------------------------------------------------------------------

def clue_fits(clue: tuple[int, ...]) -> bool:
    """pzpr.js's `isValidQnums`: what a clue may be at all."""
    if len(clue) == 1:
        return clue[0] == UNKNOWN or 0 <= clue[0] <= 8
    if not 2 <= len(clue) <= 4 or any(v != UNKNOWN and v < 1 for v in clue):
        return False
    return len(clue) + sum(1 if v == UNKNOWN else v for v in clue) <= 8


def clue_text(clue: tuple[int, ...], sep: str = ",", unknown: str = "-") -> str:
    return sep.join(unknown if v == UNKNOWN else str(v) for v in clue)


def decode_multi(code: int) -> tuple[int, ...] | None:
    """A two-character URL code -> pair, triple or quad (0 components become "?")."""
    if PAIR <= code < TRIPLE:
        n = code - PAIR
        values = (n // 6, n % 6)
    elif TRIPLE <= code < QUAD:
        n = code - TRIPLE
        values = (n // 16, n // 4 % 4, n % 4)
    elif QUAD <= code < END:
        n = code - QUAD
        values = tuple((n >> k) & 1 for k in (3, 2, 1, 0))
    else:
        return None
    return tuple(v if v else UNKNOWN for v in values)


def encode_clue(clue: tuple[int, ...]) -> str:
    """One clue as the URL writes it; "?" components become 0."""
    known = [max(v, 0) for v in clue]
    if len(clue) == 1:
        return "." if clue[0] == UNKNOWN else str(clue[0])
    if len(clue) == 2:
        code = PAIR + known[0] * 6 + known[1]
    elif len(clue) == 3:
        code = TRIPLE + known[0] * 16 + known[1] * 4 + known[2]
    elif clue == (1, 1, 1, 1):
        return "9"
    else:
        code = QUAD + sum(8 >> k for k, v in enumerate(known) if v)
    return np.base_repr(code, 36).lower()


def decode_body(body: str, n: int, *, source: str | None = None, board: str | None = None,
                what: str = "URL body") -> list[tuple[int, ...]]:
    """The URL body's clues, one per cell (() blank). With `board` (its size, "10x10"), the
    body must describe exactly those n cells (`formats.check_fills`)."""
    out: list[tuple[int, ...]] = [()] * n
    c = i = 0
    while i < len(body) and c < n:
        ch = body[i]
        if "0" <= ch <= "8":
            out[c] = (int(ch),)
        elif ch == "9":
            out[c] = (1, 1, 1, 1)
        elif ch == ".":
            out[c] = (UNKNOWN,)
        elif "a" <= ch <= "f":
            pair = body[i:i + 2]
            clue = decode_multi(int(pair, 36)) if len(pair) == 2 and pair[1] in BASE36 else None
            if clue is None:
                raise ParseError(f"tapa URL clue code {pair!r} at body position {i}: expected "
                                 "a0..d3 (a pair, triple or quad)", source=source)
            out[c] = clue
            i += 1
        elif "g" <= ch <= "z":
            c += int(ch, 36) - 16
        # like pzpr.js, any other character takes one cell and leaves it blank
        c += 1
        i += 1
    if board is not None:
        formats.check_fills(body, i, c, n, board=board, what=what, source=source)
    return out


def encode_body(clues: list[tuple[int, ...]]) -> str:
    out, blanks = [], 0
    for clue in clues:
        if not clue:
            blanks += 1
            if blanks == 20:
                out.append("z")
                blanks = 0
            continue
        if blanks:
            out.append(np.base_repr(15 + blanks, 36).lower())
            blanks = 0
        out.append(encode_clue(clue))
    if blanks:
        out.append(np.base_repr(15 + blanks, 36).lower())
    return "".join(out)


def ring_runs(shaded: np.ndarray, r: int, c: int) -> list[int]:
    """Lengths of the shaded runs around (r, c), read circularly; [0] when none is shaded."""
    rows, cols = shaded.shape
    return runs_of([0 <= r + dr < rows and 0 <= c + dc < cols and bool(shaded[r + dr, c + dc])
                    for dr, dc in RING])


def runs_of(ring: list[bool]) -> list[int]:
    """Lengths of the shaded runs of a ring of 8 cells in RING order, read circularly."""
    if all(ring):
        return [8]
    start = ring.index(False)  # read from an unshaded cell so that no run wraps around
    runs, n = [], 0
    for s in ring[start:] + ring[:start] + [False]:
        if s:
            n += 1
        elif n:
            runs.append(n)
            n = 0
    return runs or [0]


def clue_met(clue: tuple[int, ...], runs: list[int]) -> bool:
    """As multisets; each "?" stands for one run of any length."""
    if len(clue) != len(runs):
        return False
    left = list(runs)
    for v in clue:
        if v == UNKNOWN:
            continue
        if v not in left:
            return False
        left.remove(v)
    return True


def ring_can_meet(clue: tuple[int, ...], free: list[bool]) -> bool:
    """Whether some shading of the ring's free cells (in RING order; off the board and clue
    cells are not free) meets the clue: all 2^k shadings of its k <= 8 free cells, tried."""
    at = [k for k, f in enumerate(free) if f]
    for mask in range(1 << len(at)):
        ring = [False] * len(RING)
        for bit, k in enumerate(at):
            ring[k] = bool(mask >> bit & 1)
        if clue_met(clue, runs_of(ring)):
            return True
    return False


def _why_unmet(clue: tuple[int, ...], free: int) -> str:
    """Why a clue's ring cannot meet it, given its `free` cells (those that can be shaded):
    too few of them, or too few in a row for those runs."""
    need = sum(1 if v == UNKNOWN else v for v in clue)
    if free < need:
        return (f"it needs {need} shaded cells around it and only {free} can be (the others "
                "are off the board or clues)")
    return (f"the {free} cells around it that can be shaded cannot form those runs (the "
            "others, off the board or clues, break the ring)")


# -- the codec --------------------------------------------------------------------------------

class TapaCodec(ClueShadingTokens, GridCodec):
    name = "tapa"
    description = "Tapa: shade one connected wall whose runs around each clue match it"
    url_ids = ("tapa",)
    families = (PPBENCH,)
    EMPTY = UNSHADED
    rules = ("Shade cells into one connected wall with no 2x2 block all shaded; clue cells stay "
             "unshaded, and a clue's numbers are the lengths of the runs of shaded cells among "
             "its eight neighbours, in any order.")
    example = "\n".join(("tapa", "2 . . .", ". . 2,3 .", "4 . . .", "2 . . ."))
    legend = SHADING_LEGEND

    # -- parsing ---------------------------------------------------------------------------
    def _puzzle(self, rows: int, cols: int, clues: list[tuple[int, ...]], *, source=None,
                lines: list[int] | None = None) -> Puzzle:
        for k, clue in enumerate(clues):
            if clue and not clue_fits(clue):
                raise ParseError(f"tapa clue {clue_text(clue, unknown='?')} at "
                                 f"{cell_name(*divmod(k, cols))} cannot occur on an 8-cell ring "
                                 "(one number 0..8, or 2-4 numbers with count + sum <= 8)",
                                 source=source,
                                 line=lines[k // cols] if lines else None)
        grid = tuple(tuple(clues[r * cols:(r + 1) * cols]) for r in range(rows))
        return Puzzle(self.name, rows, cols, grid)

    def parse_url(self, url, *, source=None):
        clues = decode_body(url.body, url.rows * url.cols, source=source,
                            what="tapa URL body", board=size_name(url.rows, url.cols))
        return Parsed(self._puzzle(url.rows, url.cols, clues, source=source))

    def parse_pzprv3(self, p, *, source=None):
        return self._read_cells(pzprv3_rows(p, what="tapa grid", source=source, border_lines=True),
                                source=source)

    def parse_grid(self, lines, *, source=None, first_line=1):
        return self._read_cells(grid_rows(lines, what="tapa grid", first_line=first_line,
                                          source=source), source=source)

    def _read_cells(self, rows: list[tuple[int, list[str]]], *, source=None) -> Parsed:
        nrows, ncols = len(rows), len(rows[0][1])
        clues: list[tuple[int, ...]] = []
        grid = np.zeros((nrows, ncols), dtype=np.int16)
        answered = False
        for r, (line, tokens) in enumerate(rows):
            for c, tok in enumerate(tokens):
                mark = read_answer_mark(tok)
                if mark is not None:
                    grid[r, c] = mark
                    answered |= tok != "."
                    clues.append(())
                else:
                    clues.append(_read_clue(tok, source=source, line=line))
        puzzle = self._puzzle(nrows, ncols, clues, source=source, lines=[ln for ln, _ in rows])
        return Parsed(puzzle, Solution(self.name, grid) if answered else None)

    def apply_moves(self, puzzle, moves):
        return Solution(self.name, replay_clicks(self.name, self._answer_cells(puzzle), moves))

    # -- writing ---------------------------------------------------------------------------
    def to_url(self, puzzle):
        body = encode_body([clue for row in puzzle.clues for clue in row])
        return formats.make_url("tapa", puzzle.cols, puzzle.rows, body)

    def to_pzprv3(self, puzzle, solution=None):
        def cell(r, c):
            clue = puzzle.clues[r][c]
            if clue:
                return clue_text(clue)
            return answer_mark(int(solution.grid[r, c])) if solution is not None else "."

        grid = [[cell(r, c) for c in range(puzzle.cols)] for r in range(puzzle.rows)]
        return formats.write_pzprv3(self.name, puzzle.rows, puzzle.cols, [grid])

    # -- tokens ----------------------------------------------------------------------------
    def _answer_cells(self, puzzle: Puzzle) -> np.ndarray:
        return np.array([[not clue for clue in row] for row in puzzle.clues], dtype=bool)

    def is_answer_cell(self, puzzle, r, c):
        return not puzzle.clues[r][c]

    def clue_token(self, puzzle: Puzzle, r: int, c: int) -> str:
        clue = puzzle.clues[r][c]
        if tuple(sorted(clue)) not in TAPA_CLUES:
            raise PtrmError(f"tapa clue {clue_text(clue, unknown='?')} at {cell_name(r, c)} "
                            f"cannot be encoded: no run lengths on an 8-cell ring give it (the "
                            f"{PPBENCH.name} vocabulary has {self.token_range_help()})")
        return tapa_token(clue)

    def token_range_help(self):
        return f"the {len(TAPA_CLUES)} multisets " + " ".join(clue_text(c) for c in TAPA_CLUES)

    # -- rules -----------------------------------------------------------------------------
    def verify(self, puzzle, solution):
        shaded = (solution.grid == SHADED) & self._answer_cells(puzzle)
        blocks, divided = shading_violations(shaded)
        none = [] if shaded.any() else [Violation("brNoShade", "no cell is shaded")]
        return none + blocks + self._clues_unmet(puzzle, shaded) + divided

    def _clues_unmet(self, puzzle: Puzzle, shaded: np.ndarray) -> list[Violation]:
        out = []
        for r, row in enumerate(puzzle.clues):
            for c, clue in enumerate(row):
                if not clue:
                    continue
                runs = ring_runs(shaded, r, c)
                if not clue_met(clue, runs):
                    out.append(Violation("ceTapaNe", f"the clue {clue_text(clue, ' ', '?')} at "
                                         f"{cell_name(r, c)} sees shaded runs "
                                         f"{' '.join(map(str, runs))}",
                                         ((r, c),)))
        return out

    def puzzle_violations(self, puzzle):
        """Clues that no shading of their own ring can meet: a ring's cells off the board or
        holding clues stay unshaded, so a 4 in a corner (three neighbours) or 3 beside another
        clue in a corner cannot be met, whatever the rest of the grid does. Exact for each
        clue alone (every shading of its ring is tried); clues together are not checked."""
        free = self._answer_cells(puzzle)
        out = []
        for r, row in enumerate(puzzle.clues):
            for c, clue in enumerate(row):
                ring = [0 <= r + dr < puzzle.rows and 0 <= c + dc < puzzle.cols
                        and bool(free[r + dr, c + dc]) for dr, dc in RING]
                if clue and not ring_can_meet(clue, ring):
                    out.append(Violation(
                        "ceTapaNe", f"the clue {clue_text(clue, ' ', '?')} at {cell_name(r, c)} "
                        f"cannot be met: {_why_unmet(clue, sum(ring))}", ((r, c),)))
        return out

    # -- augmentation ----------------------------------------------------------------------
    def transform(self, puzzle, solution, t):
        # a symmetry maps the ring onto itself keeping its cyclic order (or reversing it), so
        # the run lengths, and with them every clue, stay as they are
        where = dihedral.apply(np.arange(puzzle.rows * puzzle.cols).reshape(puzzle.rows, puzzle.cols), t)
        flat = [clue for row in puzzle.clues for clue in row]
        clues = tuple(tuple(flat[k] for k in row) for row in where.tolist())
        p = Puzzle(self.name, where.shape[0], where.shape[1], clues, dict(puzzle.meta))
        s = None if solution is None else Solution(self.name, dihedral.apply(solution.grid, t))
        return p, s

    # -- people ----------------------------------------------------------------------------
    def render(self, puzzle, solution=None):
        def cell(r, c):
            clue = puzzle.clues[r][c]
            if clue:  # "1,3" as a grid is typed: "13" read as thirteen
                return Text(clue_text(clue, ",", "?"), style="bold cyan")
            return shading_glyph(int(solution.grid[r, c]) if solution is not None else UNSHADED)

        width = max([2] + [2 * len(clue) - 1 for row in puzzle.clues for clue in row])
        return boxed([[cell(r, c) for c in range(puzzle.cols)] for r in range(puzzle.rows)],
                     width=width)


def _read_clue(token: str, *, source=None, line=None) -> tuple[int, ...]:
    parts = token.split(",")
    if not all(p == "-" or formats.is_number(p) for p in parts):
        raise ParseError(f"tapa cell {token!r}: expected a clue like '1,3' ('-' for ?), '#' "
                         "(shaded), '+' (dot) or '.'", source=source, line=line)
    return tuple(UNKNOWN if p == "-" else int(p) for p in parts)
