"""Light Up, URL id `akari` (PPBENCH_FORMATS.md §4.2), and the black-cell clue grid it shares
with shakashaka (§4.6): `BlackCellCodec`.

Puzzle.clues: [rows, cols] int16: -1 = white cell, -2 = unnumbered wall, 0..4 = numbered wall.
Solution.grid: [rows, cols] int16: 1 = light bulb, 0 = no light (EMPTY); walls hold 0.
Dots (pzpr.js qsub, "no light here") never affect checking, so they are read and dropped:
`to_pzprv3(puzzle, solution)` writes the file pzpr.js writes after PPBench's `moves_required`.

Formats:
  puzz.link   akari/<cols>/<rows>/<4Cell body>
  pzprv3      one grid: 0-4 numbered wall | '-' unnumbered wall | '#' light | '+' dot | '.'
              (pzpr.js may append a grid of clue completion marks; it is read past and ignored)
  plain grid  the pzprv3 grid without its header, optionally after a line `lightup`; cells
              separated by spaces (or tabs) or written one character each
  PPBench     moves: left click toggles a light, right click a dot; walls ignore both
  janko       problem: 0-4 | 'x' wall | '-'; solution: 'o' = light (janko solutions redraw
              walls inconsistently, so only their lights are read)
Tokens (ppbench family): lightup.white, lightup.wall, lightup.wall.0..4 on inputs, with
lightup.light on white cells holding a light in a trajectory state; labels are lightup.light /
lightup.dark on white cells and the wall's input token on walls.
Verifier codes, in pzpr.js checklist order:
  akariDup   two lights see each other
  nmAkariNe  a numbered wall does not touch exactly that many lights
  ceDark     white cells no light reaches
`puzzle_violations` is nmAkariNe at a numbered wall with fewer neighbours that can hold a light
(white, and not beside a 0 wall) than its number: no answer can meet it, so `ptrm solve` says
so before running a model.
"""

from __future__ import annotations

import operator
from collections.abc import Callable

import numpy as np
from rich.text import Text

from ptrm_cli import dihedral
from ptrm_cli.codec import Parsed, Puzzle, Solution, Violation, cell_name, cells_named, \
    size_name
from ptrm_cli.errors import ParseError

from . import formats
from .common import GridCodec, boxed, read_janko_grid
from .families import PPBENCH

WHITE, BLACK = -1, -2  # Puzzle.clues values besides the numbers 0..MAX_NUMBER
MAX_NUMBER = 4
FOURCELL_CHARS = "0123456789abcdeghijklmnopqrstuvwxyz."
#: how the board draws a white cell: with a light, or without (yellow when one lights it)
LIGHT_GLYPH, NO_LIGHT_GLYPH = "●", "·"


# -- what lightup and shakashaka share -------------------------------------------------------

class BlackCellCodec(GridCodec):
    """A codec whose clues are black cells, each unnumbered or numbered 0..4, written in
    puzz.link's 4Cell coding (lightup's walls, shakashaka's black cells). Subclasses name the
    black cell's token word and handle the answers."""

    families = (PPBENCH,)
    EMPTY = 0
    #: the token word for a black cell: "<name>.<black_word>[.<n>]"
    black_word: str = "black"

    # -- clues -----------------------------------------------------------------------------
    def make_puzzle(self, clues: np.ndarray, *, source: str | None = None) -> Puzzle:
        clues = np.asarray(clues, dtype=np.int16)
        if clues.ndim != 2 or 0 in clues.shape:
            raise ParseError(f"{self.name} grid is empty", source=source)
        bad = clues[(clues < BLACK) | (clues > MAX_NUMBER)]
        if bad.size:
            raise ParseError(f"{self.name} {self.black_word} number {int(bad[0])} is outside "
                             f"0..{MAX_NUMBER}", source=source)
        return Puzzle(self.name, clues.shape[0], clues.shape[1], clues)

    def parse_url(self, url, *, source=None):
        n = url.rows * url.cols
        bad = sorted(set(url.body) - set(FOURCELL_CHARS))
        if bad:
            raise ParseError(f"{self.name} URL body has {''.join(bad)!r}: expected 4Cell "
                             "characters 0-9, a-e, g-z and '.'", source=source)
        values, _ = formats.decode_4cell(url.body, n, source=source,
                                         what=f"{self.name} URL body",
                                         board=size_name(url.rows, url.cols))
        clues = np.array(values, dtype=np.int16).reshape(url.rows, url.cols)
        return Parsed(self.make_puzzle(clues, source=source))

    def to_url(self, puzzle):
        body = formats.encode_4cell([int(v) for v in puzzle.clues.reshape(-1)])
        return formats.make_url(self.url_ids[0], puzzle.cols, puzzle.rows, body)

    def janko_clues(self, problem: str, black: tuple[str, ...], *, source=None) -> np.ndarray:
        """Janko problem text: digits are numbered black cells, `black` lists the characters of
        unnumbered ones, '-' is white."""
        rows, cols, body = read_janko_grid(problem, source=source)
        clues = np.full((rows, cols), WHITE, dtype=np.int16)
        for r in range(rows):
            for c, tok in enumerate(body[r][:cols]):
                if tok in black:
                    clues[r, c] = BLACK
                elif formats.is_number(tok) and int(tok) <= MAX_NUMBER:  # a long one: no int16
                    clues[r, c] = int(tok)
                elif tok != "-":
                    raise ParseError(f"janko {self.name} problem cell {tok!r} at "
                                     f"{cell_name(r, c)}: expected 0-{MAX_NUMBER}, "
                                     f"{', '.join(map(repr, black))} or '-'", source=source,
                                     line=r + 2)
        return clues

    def is_answer_cell(self, puzzle, r, c):
        return puzzle.clues[r, c] == WHITE

    def clickable(self, puzzle: Puzzle, r: int, c: int) -> bool:
        """Whether a PPBench click at (r, c) can change an answer: black cells refuse them."""
        return 0 <= r < puzzle.rows and 0 <= c < puzzle.cols and puzzle.clues[r, c] == WHITE

    # -- tokens ----------------------------------------------------------------------------
    def clue_token(self, puzzle: Puzzle, r: int, c: int) -> str:
        """The input token of a cell, ignoring answers."""
        v = int(puzzle.clues[r, c])
        if v == WHITE:
            return f"{self.name}.white"
        if v == BLACK:
            return f"{self.name}.{self.black_word}"
        return f"{self.name}.{self.black_word}.{v}"

    def token_range_help(self):
        return f"{self.black_word} numbers are 0..{MAX_NUMBER}"

    # -- rules -----------------------------------------------------------------------------
    def numbers_broken(self, puzzle: Puzzle, count: np.ndarray, code: str,
                       broken: Callable[[int, int], bool], says: str) -> list[Violation]:
        """`code` at every numbered black cell whose `count` (of answers beside it, or of room
        for them) is `broken(count, number)`: "wall 2 at r3c4 touches 1 light(s)", `says`
        formatted with the count. `verify` and `puzzle_violations` both judge numbers here."""
        out = []
        for rc in cells_of(puzzle.clues >= 0):
            n, k = int(puzzle.clues[rc]), int(count[rc])
            if broken(k, n):
                out.append(Violation(code, f"{self.black_word} {n} at {cell_name(*rc)} "
                                           f"{says.format(k)}", (rc,)))
        return out

    def room_beside(self, puzzle: Puzzle) -> np.ndarray:
        """For every cell, how many of its neighbours can hold an answer (a light, a triangle)
        in any solution: white ones, less those beside a 0, which no answer may touch. A number
        above it can never be met: no search needed, and no solvable puzzle is refused."""
        free = (puzzle.clues == WHITE) & (adjacent_count(puzzle.clues == 0) == 0)
        return adjacent_count(free)

    # -- augmentation ----------------------------------------------------------------------
    def transform(self, puzzle, solution, t):
        clues = dihedral.apply(puzzle.clues, t)
        p = Puzzle(self.name, clues.shape[0], clues.shape[1], clues, dict(puzzle.meta))
        s = None if solution is None else Solution(self.name, self.transform_answers(solution.grid, t))
        return p, s

    def transform_answers(self, grid: np.ndarray, t: int) -> np.ndarray:
        """Answers that carry a direction override this."""
        return dihedral.apply(grid, t)

    # -- people ----------------------------------------------------------------------------
    def clue_text(self, v: int) -> Text:
        return Text("■" if v == BLACK else str(v), style="bold white on grey23")


def cell_rows(lines: list[str], *, first_line: int) -> list[list[tuple[int, list[str]]]]:
    """Plain-grid text -> blocks (separated by blank lines) of (line number, cell tokens).
    A line holds tokens separated by spaces or tabs, or one character per cell when it has
    neither."""
    blocks: list[list[tuple[int, list[str]]]] = [[]]
    for k, ln in enumerate(lines):
        text = ln.strip()
        if not text:
            if blocks[-1]:
                blocks.append([])
            continue
        tokens = text.split() if any(ch.isspace() for ch in text) else list(text)
        blocks[-1].append((first_line + k, tokens))
    return [b for b in blocks if b]


def check_width(block: list[tuple[int, list[str]]], cols: int, *, what: str, source=None) -> None:
    for line, tokens in block:
        if len(tokens) != cols:
            raise ParseError(f"{what}: expected {cols} cells on this line, found {len(tokens)}",
                             source=source, line=line)


# -- lightup ---------------------------------------------------------------------------------

class LightupCodec(BlackCellCodec):
    name = "lightup"
    description = "Light Up (Akari): place lights so every white cell is lit"
    url_ids = ("akari", "lightup")
    black_word = "wall"
    rules = ("Place lights in white cells so that every white cell is lit (a light shines along "
             "its row and column up to a wall), no light shines on another, and a numbered wall "
             "has exactly that many lights beside it (above, below, left, right).")
    example = "\n".join(("lightup", ". . . .", "1 . . .", ". . . 2", "- . . -"))
    legend = {0: f"no light ({NO_LIGHT_GLYPH}, yellow where a light reaches it); walls hold 0 "
                 "too",
              1: f"a light ({LIGHT_GLYPH})"}

    # -- parsing ---------------------------------------------------------------------------
    def parse_pzprv3(self, p, *, source=None):
        grid = formats.grid_section(p, 0, p.rows, p.cols, what="lightup grid", source=source)
        # then, only when some clue has one, a grid of completion marks ('-' set, '.' not)
        marks = formats.optional_section(p, p.rows, p.rows, p.cols,
                                         what="lightup completion-mark grid", source=source)
        for r, row in enumerate(marks or []):
            bad = next((tok for tok in row if tok not in ("-", ".")), None)
            if bad is not None:
                raise ParseError(f"lightup completion mark {bad!r}: expected '-' or '.'",
                                 source=source, line=p.first_line + p.rows + r)
        formats.expect_end(p, p.rows if marks is None else 2 * p.rows, source=source)
        return self._read_cells([(p.first_line + r, row) for r, row in enumerate(grid)],
                                source=source)

    def parse_grid(self, lines, *, source=None, first_line=1):
        blocks = cell_rows(lines, first_line=first_line)
        if not blocks:  # the type line alone: not "found 0 blocks separated by blank lines"
            raise ParseError("lightup grid: expected grid lines", source=source, line=first_line)
        if len(blocks) != 1:
            raise ParseError(f"a lightup grid is one block of lines, found {len(blocks)} blocks "
                             "separated by blank lines", source=source, line=first_line)
        check_width(blocks[0], len(blocks[0][0][1]), what="lightup grid", source=source)
        return self._read_cells(blocks[0], source=source)

    def _read_cells(self, rows: list[tuple[int, list[str]]], *, source=None) -> Parsed:
        """The combined clue-and-answer grid of pzprv3 files and plain grids."""
        clues = np.full((len(rows), len(rows[0][1])), WHITE, dtype=np.int16)
        lights = np.zeros(clues.shape, dtype=np.int16)
        answered = False
        for r, (line, tokens) in enumerate(rows):
            for c, tok in enumerate(tokens):
                if tok == "-":
                    clues[r, c] = BLACK
                elif formats.is_number(tok):
                    if int(tok) > MAX_NUMBER:
                        raise ParseError(f"lightup wall number {tok} is outside 0..{MAX_NUMBER}",
                                         source=source, line=line)
                    clues[r, c] = int(tok)
                elif tok in "#+":
                    lights[r, c] = tok == "#"
                    answered = True
                elif tok != ".":
                    raise ParseError(f"lightup cell {tok!r}: expected a wall number 0-4, '-' "
                                     "(wall), '#' (light), '+' (dot) or '.'", source=source, line=line)
        puzzle = self.make_puzzle(clues, source=source)
        return Parsed(puzzle, Solution(self.name, lights) if answered else None)

    def apply_moves(self, puzzle, moves):
        lights = np.zeros((puzzle.rows, puzzle.cols), dtype=np.int16)
        for move in moves:
            for action in move:
                if action.kind != "mouse" or not self.clickable(puzzle, *action.cell):
                    continue
                r, c = action.cell
                # left toggles the light; right puts a dot, which removes any light
                lights[r, c] = (1 - lights[r, c]) if action.button == "left" else 0
        return Solution(self.name, lights)

    def from_janko(self, problem, solution, *, source=None):
        puzzle = self.make_puzzle(self.janko_clues(problem, ("x",), source=source), source=source)
        rows, cols, body = read_janko_grid(solution, source=source)
        if (rows, cols) != (puzzle.rows, puzzle.cols):
            raise ParseError(f"janko solution is {size_name(rows, cols)}, its problem "
                             f"{size_name(puzzle.rows, puzzle.cols)}", source=source)
        lights = np.array([[tok == "o" for tok in row[:cols]] for row in body[:rows]], dtype=np.int16)
        on_wall = np.argwhere((lights == 1) & (puzzle.clues != WHITE))
        if on_wall.size:
            r, c = on_wall[0]
            raise ParseError(f"janko solution puts a light on the wall at {cell_name(r, c)}",
                             source=source)
        return puzzle, Solution(self.name, lights)

    # -- writing ---------------------------------------------------------------------------
    def to_pzprv3(self, puzzle, solution=None):
        def cell(r, c):
            v = int(puzzle.clues[r, c])
            if v == BLACK:
                return "-"
            if v >= 0:
                return str(v)
            return "#" if solution is not None and solution.grid[r, c] == 1 else "."

        grid = [[cell(r, c) for c in range(puzzle.cols)] for r in range(puzzle.rows)]
        return formats.write_pzprv3(self.name, puzzle.rows, puzzle.cols, [grid])

    # -- tokens ----------------------------------------------------------------------------
    def input_token(self, puzzle, r, c, value):
        if puzzle.clues[r, c] == WHITE and value == 1:
            return "lightup.light"
        return self.clue_token(puzzle, r, c)

    def label_token(self, puzzle, r, c, value):
        if puzzle.clues[r, c] != WHITE:
            return self.clue_token(puzzle, r, c)
        return "lightup.light" if value == 1 else "lightup.dark"

    def token_value(self, puzzle, r, c, name):
        return int(puzzle.clues[r, c] == WHITE and name == "lightup.light")

    # -- rules -----------------------------------------------------------------------------
    def verify(self, puzzle, solution):
        white = puzzle.clues == WHITE
        light = white & (solution.grid == 1)
        out = []
        for runs in _runs(white):
            per_run = np.bincount(runs[light], minlength=runs.max() + 1)
            for run in np.nonzero(per_run > 1)[0]:
                seeing = cells_of(light & (runs == run))
                out.append(Violation("akariDup", f"{per_run[run]} lights see each other: "
                                     f"{cells_named(seeing)}", seeing))
        out += self.numbers_broken(puzzle, adjacent_count(light), "nmAkariNe", operator.ne,
                                   "touches {} light(s)")
        dark = cells_of(white & ~_lit(white, light))
        if dark:
            out.append(Violation("ceDark", f"{len(dark)} white cell(s) are not lit: "
                                 f"{cells_named(dark)}", dark))
        return out

    def puzzle_violations(self, puzzle):
        """nmAkariNe at a numbered wall with less room for lights beside it than its number
        (`room_beside`): no answer can meet it, so `ptrm solve` says so before a model runs."""
        return self.numbers_broken(puzzle, self.room_beside(puzzle), "nmAkariNe", operator.lt,
                                   "has room for only {} light(s) beside it")

    # -- people ----------------------------------------------------------------------------
    def render(self, puzzle, solution=None):
        white = puzzle.clues == WHITE
        lights = white & (solution.grid == 1) if solution is not None else np.zeros_like(white)
        lit = _lit(white, lights)

        def cell(r, c):
            v = int(puzzle.clues[r, c])
            if v != WHITE:
                return self.clue_text(v)
            if lights[r, c]:
                return Text(LIGHT_GLYPH, style="bold yellow")
            return Text(NO_LIGHT_GLYPH, style="yellow" if lit[r, c] else "dim")

        return boxed([[cell(r, c) for c in range(puzzle.cols)] for r in range(puzzle.rows)], width=1)


def cells_of(mask: np.ndarray) -> tuple[tuple[int, int], ...]:
    """The True cells of a mask as (r, c) pairs in reading order."""
    return tuple(map(tuple, np.argwhere(mask).tolist()))


def adjacent_count(mask: np.ndarray) -> np.ndarray:
    """For every cell, how many of its 4 orthogonal neighbours are True."""
    p = np.zeros((mask.shape[0] + 2, mask.shape[1] + 2), dtype=np.int16)
    p[1:-1, 1:-1] = mask
    return p[:-2, 1:-1] + p[2:, 1:-1] + p[1:-1, :-2] + p[1:-1, 2:]


def _runs(white: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Maximal runs of white cells, what one light illuminates, numbered per cell (0 on walls):
    row runs in reading order, then column runs column by column."""
    def row_runs(w):
        starts = w & ~np.pad(w, ((0, 0), (1, 0)))[:, :-1]  # white, and the cell to the left is not
        return np.where(w, np.cumsum(starts).reshape(w.shape), 0)

    return row_runs(white), row_runs(white.T).T


def _lit(white: np.ndarray, lights: np.ndarray) -> np.ndarray:
    """Cells lit by a light: the whole row and column run of every light, its own cell included."""
    lit = np.zeros_like(white)
    for runs in _runs(white):
        lit |= white & (np.bincount(runs[lights], minlength=runs.max() + 1)[runs] > 0)
    return lit
