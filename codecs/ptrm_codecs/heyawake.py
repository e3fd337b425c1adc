"""Heyawake (PPBENCH_FORMATS.md §4.4); the rules are `HeyawakeCodec.rules`.

Puzzle.clues: a `Board`. Its wall bits are the truth, exactly as the URL stores them:
  vwall [rows, cols-1] bool: wall between (r, c) and (r, c+1);
  hwall [rows-1, cols] bool: wall between (r, c) and (r+1, c).
Rooms are derived: the 4-connected areas that no wall separates, ordered by their smallest
row-major cell index. A wall may close no room at all ("loose" borders, golden
`heyawake/8/8/022gkf3gc2007o00o01s01v07`); pzpr.js still counts it in bkUnshadeConsecGt3, so
it is kept, never rebuilt from room ids.
  numbers [rows, cols] int16: -1 none, -2 "?", n >= 0; a room's number sits only on its top
  cell, which pzpr.js `getTopCell` defines as the leftmost column, then the topmost cell in
  it. Readers accept a number anywhere in its room and move it there; two numbers in one
  room are an error.
Solution.grid: [rows, cols] int16, 0 = unshaded (also "nothing entered", EMPTY), 1 = shaded.
Every cell is an answer cell (PPBench shades clue cells too).

Formats:
  * puzz.link `heyawake/<cols>/<rows>/<V bits><H bits><number16 over rooms>`.
  * pzprv3 (read both, write either with `to_pzprv3(puzzle, solution, filever=0|1)`):
      filever 0 (the vendored pzpr.js, default): room count line, room-id grid, clue grid
        (number | '-' for "?" | '.'), answer grid ('#' shaded | '+' dot | '.'). Room ids
        cannot hold loose borders, so this form drops them.
      filever 1 (upstream `pzprv3.1`): rows lines of cols-1 vertical bits and rows-1 lines of
        cols horizontal bits instead of the count and room ids; then clues and answers.
    With a solution, unshaded cells are written '+': a solved board after PPBench's
    `moves_full` has a dot on every unshaded cell, and this reproduces pzpr.js's file.
  * plain grid, sections separated by one blank line, an optional first line `heyawake`:
        0 0 1 1        room ids: any words; touching cells with different words have a
        0 2 2 1        wall between them
                       (blank line)
        2 . . .        clues: number | '?' or '-' for a "?" room | '.'
        . . 1 .
                       (blank line, then optionally)
        # + + #        answers: '#' shaded | '+' or '.' unshaded
  * PPBench records (`mouse,left` toggles shading, `mouse,right` leaves a dot) and janko
    entries (a clue grid with '-' for blank, then a room-id grid; solutions mark shaded 'x').

Tokens (ppbench family): every cell shows `heyawake.cell.<R|-><B|->.<none|0..39>`: a wall on
its right?, a wall below it? (the board's edge counts as no wall), and the room's number when
this is the room's top cell. Labels are heyawake.unshaded / heyawake.shaded on every cell.
Trajectory inputs replace a shaded cell's token by heyawake.shaded. That hides the cell's
walls and number in such augmented inputs; it is the paper's design (one token per cell,
shaded or the clue layer) and the model sees them in the unshaded inputs of the same puzzle.
Room numbers beyond 39 have no token and are a clear error; a "?" room is encoded like a
room without a number (neither constrains the shading).
Verifier codes, in pzpr.js checklist order:
  brNoShade           no cell is shaded
  csAdjacent          two shaded cells touch
  cuDivideRB          the unshaded cells fall apart
  bkShadeNe           a numbered room does not hold exactly that many shaded cells
  bkUnshadeConsecGt3  an unshaded run crosses two room borders
`puzzle_violations` is bkShadeNe for a room numbered above what it can hold with no two shaded
cells touching: half its cells, rounded up, for a rectangle; all of them for another shape (a
bound, where the exact count would take a search). No answer can meet it, so `ptrm solve` says
so before running a model.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from rich.text import Text

from ptrm_cli import dihedral
from ptrm_cli.codec import Parsed, Puzzle, Solution, Violation, cell_name, cells_named, \
    size_name
from ptrm_cli.errors import ParseError, PtrmError

from . import formats
from .common import GridCodec, components, read_janko_grid
from .families import HEYAWAKE_MAX_NUMBER, PPBENCH, heyawake_token

UNSHADED, SHADED = 0, 1
NO_NUMBER, UNKNOWN = -1, -2
#: how the board draws a shaded cell and an unshaded one; the legend quotes them
SHADED_GLYPH, UNSHADED_GLYPH = "■", "·"
#: the largest number number16 writes in three hex digits; anything above is not a room count
MAX_NUMBER = 4095
_B32 = set("0123456789abcdefghijklmnopqrstuv")


@dataclass(eq=False)
class Board:
    """Heyawake clues: the wall bits (the truth) and the room numbers on top cells."""

    vwall: np.ndarray  # [rows, cols-1] bool
    hwall: np.ndarray  # [rows-1, cols] bool
    numbers: np.ndarray  # [rows, cols] int16

    @property
    def shape(self) -> tuple[int, int]:
        return self.numbers.shape

    def wall(self, a: tuple[int, int], b: tuple[int, int]) -> bool:
        """Is there a wall between neighbouring cells a and b?"""
        (r1, c1), (r2, c2) = sorted((a, b))
        return bool(self.vwall[r1, c1] if r1 == r2 else self.hwall[r1, c1])

    def wall_right(self, r: int, c: int) -> bool:
        return c < self.shape[1] - 1 and bool(self.vwall[r, c])

    def wall_below(self, r: int, c: int) -> bool:
        return r < self.shape[0] - 1 and bool(self.hwall[r, c])

    def rooms(self) -> list[list[tuple[int, int]]]:
        """The rooms, ordered by their smallest row-major cell index (pzpr.js's order)."""
        return components(np.ones(self.shape, dtype=bool), lambda a, b: not self.wall(a, b))

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, Board) and self.shape == other.shape
                and bool((self.vwall == other.vwall).all() and (self.hwall == other.hwall).all()
                         and (self.numbers == other.numbers).all()))


def top_cell(room: list[tuple[int, int]]) -> tuple[int, int]:
    """pzpr.js `getTopCell`: the leftmost column, then the topmost cell in that column."""
    return min(room, key=lambda rc: (rc[1], rc[0]))


def make_board(vwall: np.ndarray, hwall: np.ndarray, numbers: np.ndarray, *,
               source: str | None = None) -> Board:
    """A Board with each room's number moved onto the room's top cell."""
    board = Board(np.asarray(vwall, dtype=bool), np.asarray(hwall, dtype=bool),
                  np.full(numbers.shape, NO_NUMBER, dtype=np.int16))
    for room in board.rooms():
        given = [rc for rc in room if numbers[rc] != NO_NUMBER]
        if len(given) > 1:
            where = ", ".join(f"{numbers[rc]} at {cell_name(rc[0], rc[1])}" for rc in given)
            raise ParseError(f"one heyawake room holds several numbers ({where})", source=source)
        if given:
            board.numbers[top_cell(room)] = numbers[given[0]]
    return board


def walls_from_ids(ids: list[list[str]]) -> tuple[np.ndarray, np.ndarray]:
    """Walls between touching cells whose room ids differ (pzpr.js `rdata2Border`)."""
    grid = np.array(ids, dtype=str)
    return grid[:, :-1] != grid[:, 1:], grid[:-1, :] != grid[1:, :]


def _clue_value(tok: str, *, source=None, line=None) -> int:
    if tok == ".":
        return NO_NUMBER
    if tok in ("-", "?"):
        return UNKNOWN
    if not (tok.isascii() and tok.isdigit()) or int(tok) > MAX_NUMBER:
        raise ParseError(f"heyawake clue {tok!r}: expected a room number 0..{MAX_NUMBER}, "
                         f"'-' for '?', or '.'", source=source, line=line)
    return int(tok)


def _answer_value(tok: str, *, source=None, line=None) -> int:
    if tok == "#":
        return SHADED
    if tok in ("+", "."):
        return UNSHADED
    raise ParseError(f"heyawake answer {tok!r}: expected '#' (shaded), '+' (dot) or '.'",
                     source=source, line=line)


def _grid_values(rows: list[list[str]], read, *, source, line0: int) -> np.ndarray:
    """Read each token of a grid section; errors name the file line of the bad token."""
    return np.array([[read(tok, source=source, line=line0 + r) for tok in row]
                     for r, row in enumerate(rows)], dtype=np.int16)


class HeyawakeCodec(GridCodec):
    name = "heyawake"
    description = "Heyawake: shade cells to match room numbers, never side by side"
    url_ids = ("heyawake",)
    families = (PPBENCH,)
    EMPTY = UNSHADED
    rules = ("Shade some cells so that no two shaded cells touch, the unshaded cells stay "
             "connected, a room with a number holds exactly that many shaded cells, and no "
             "straight run of unshaded cells crosses two room borders.")
    # room ids, a blank line, the room numbers on any cell of their room
    example = "\n".join(("heyawake", "0 0 1 1", "0 0 1 1", "0 0 1 1", "0 0 2 3", "",
                         "3 . 2 .", ". . . .", ". . . .", ". . . ."))
    legend = {UNSHADED: f"unshaded ({UNSHADED_GLYPH})",
              SHADED: f"shaded ({SHADED_GLYPH}; beside its number on a numbered cell)"}

    # -- parsing ---------------------------------------------------------------------------
    def _puzzle(self, board: Board) -> Puzzle:
        rows, cols = board.shape
        return Puzzle(self.name, rows, cols, board)

    def parse_url(self, url, *, source=None):
        rows, cols = url.rows, url.cols
        nv, nh = (cols - 1) * rows, cols * (rows - 1)
        cv, ch = (nv + 4) // 5, (nh + 4) // 5
        borders = url.body[:cv + ch]
        if len(borders) < cv + ch:
            raise ParseError(f"heyawake URL body {url.body!r} is too short: a "
                             f"{size_name(rows, cols)} board needs {cv + ch} border characters "
                             "first", source=source)
        bad = next((k for k, x in enumerate(borders) if x not in _B32), None)
        if bad is not None:
            raise ParseError(f"heyawake URL border character {borders[bad]!r} at position {bad}: "
                             "expected 0-9 or a-v", source=source)
        vbits, _ = formats.decode_bits(borders, nv)
        hbits, _ = formats.decode_bits(borders[cv:], nh)
        vwall = np.array(vbits, dtype=bool).reshape(rows, cols - 1)
        hwall = np.array(hbits, dtype=bool).reshape(rows - 1, cols)
        rooms = Board(vwall, hwall, np.zeros((rows, cols), dtype=np.int16)).rooms()
        # after the borders, one number16 entry per room (pzpr.js writes trailing blank rooms)
        values, _ = formats.decode_number16(url.body[cv + ch:], len(rooms), source=source,
                                            board=size_name(rows, cols), unit="rooms",
                                            what="heyawake URL room numbers")
        numbers = np.full((rows, cols), NO_NUMBER, dtype=np.int16)
        for room, v in zip(rooms, values):
            if v > MAX_NUMBER:
                raise ParseError(f"heyawake URL room number {v} is larger than {MAX_NUMBER}",
                                 source=source)
            numbers[top_cell(room)] = v
        return Parsed(self._puzzle(Board(vwall, hwall, numbers)))

    def parse_pzprv3(self, p, *, source=None):
        rows, cols = p.rows, p.cols
        if p.version == "pzprv3.1":
            v = formats.grid_section(p, 0, rows, cols - 1, what="heyawake vertical borders",
                                     source=source)
            h = formats.grid_section(p, rows, rows - 1, cols, what="heyawake horizontal borders",
                                     source=source)
            vwall = self._bits(v, cols - 1, source=source, line0=p.first_line)
            hwall = self._bits(h, cols, source=source, line0=p.first_line + rows)
            start = 2 * rows - 1
        else:
            vwall, hwall = self._rooms(p, source=source)
            start = 1 + rows
        clues = formats.grid_section(p, start, rows, cols, what="heyawake clues", source=source)
        numbers = _grid_values(clues, _clue_value, source=source, line0=p.first_line + start)
        puzzle = self._puzzle(make_board(vwall, hwall, numbers, source=source))
        answers = formats.optional_section(p, start + rows, rows, cols,
                                           what="heyawake answer", source=source)
        end = start + rows
        solution = None
        if answers is not None:
            solution = Solution(self.name, _grid_values(answers, _answer_value, source=source,
                                                        line0=p.first_line + end))
            end = formats.optional_border_lines(p, end + rows, source=source)
        formats.expect_end(p, end, source=source)
        return Parsed(puzzle, solution)

    @staticmethod
    def _rooms(p: formats.Pzprv3, *, source) -> tuple[np.ndarray, np.ndarray]:
        """The vendored file's room count line and room-id grid (ids 0..count-1) -> walls."""
        count_line = p.lines[0] if p.lines else []
        if len(count_line) != 1 or not (count_line[0].isascii() and count_line[0].isdigit()):
            raise ParseError("heyawake pzprv3: expected the room count on this line",
                             source=source, line=p.first_line)
        count = int(count_line[0])
        ids = formats.grid_section(p, 1, p.rows, p.cols, what="heyawake room ids", source=source)
        numbers = []
        for r, row in enumerate(ids):
            bad = next((t for t in row if not (t.isascii() and t.isdigit())), None)
            if bad is not None:
                raise ParseError(f"heyawake room id {bad!r}: expected a number 0..{count - 1}",
                                 source=source, line=p.first_line + 1 + r)
            numbers.append([int(t) for t in row])  # "07" is room 7
        vwall, hwall = walls_from_ids(numbers)
        found = len(Board(vwall, hwall, np.zeros((p.rows, p.cols), dtype=np.int16)).rooms())
        if found != count:
            raise ParseError(f"heyawake room count {count} does not match the room-id grid, "
                             f"which makes {found} rooms", source=source, line=p.first_line)
        for r, row in enumerate(numbers):
            if max(row) >= count:
                raise ParseError(f"heyawake room id {max(row)}: expected a number 0..{count - 1}",
                                 source=source, line=p.first_line + 1 + r)
        return vwall, hwall

    @staticmethod
    def _bits(rows: list[list[str]], width: int, *, source, line0) -> np.ndarray:
        for r, row in enumerate(rows):
            for tok in row:
                if tok not in ("0", "1"):
                    raise ParseError(f"heyawake border {tok!r}: expected 0 or 1", source=source,
                                     line=line0 + r)
        bits = [tok == "1" for row in rows for tok in row]
        return np.array(bits, dtype=bool).reshape(len(rows), width)

    def parse_grid(self, lines, *, source=None, first_line=1):
        sections = self._sections(lines, first_line)
        if len(sections) not in (2, 3):
            raise ParseError(f"heyawake grid: expected room ids, a blank line and clues (then "
                             f"optionally a blank line and answers), found {len(sections)} "
                             "section(s)", source=source, line=first_line)
        (line0, ids), *rest = sections
        rows, cols = len(ids), len(ids[0])
        for start, grid in sections:
            for r, row in enumerate(grid):
                if len(grid) != rows or len(row) != cols:
                    raise ParseError(f"heyawake grid: every section must be {rows} lines of {cols} "
                                     f"entries, like the room ids", source=source, line=start + r)
        vwall, hwall = walls_from_ids(ids)
        numbers = _grid_values(rest[0][1], _clue_value, source=source, line0=rest[0][0])
        puzzle = self._puzzle(make_board(vwall, hwall, numbers, source=source))
        solution = None
        if len(rest) == 2:
            solution = Solution(self.name, _grid_values(rest[1][1], _answer_value, source=source,
                                                        line0=rest[1][0]))
        return Parsed(puzzle, solution)

    @staticmethod
    def _sections(lines: list[str], first_line: int) -> list[tuple[int, list[list[str]]]]:
        """Blank-line separated blocks of split lines, each with its first file line."""
        out: list[tuple[int, list[list[str]]]] = []
        block: list[list[str]] = []
        for k, line in enumerate(lines + [""]):
            if line.strip():
                if not block:
                    out.append((first_line + k, block))
                block.append(line.split())
            else:
                block = []
        return out

    def apply_moves(self, puzzle, moves):
        grid = np.full((puzzle.rows, puzzle.cols), UNSHADED, dtype=np.int16)
        for move in moves:
            for action in move:
                if action.kind != "mouse" or action.button not in ("left", "right"):
                    raise ParseError(f"heyawake: unsupported PPBench action {action}")
                r, c = action.cell
                if not (0 <= r < puzzle.rows and 0 <= c < puzzle.cols):
                    raise ParseError(f"heyawake: click at ({action.x}, {action.y}) is off the "
                                     f"{size_name(puzzle.rows, puzzle.cols)} board")
                # left toggles shading; right sets a dot, which clears shading
                grid[r, c] = SHADED - grid[r, c] if action.button == "left" else UNSHADED
        return Solution(self.name, grid)

    def from_janko(self, problem, solution, *, source=None):
        rows, cols, body = read_janko_grid(problem, source=source)
        if len(body) != 2 * rows or any(len(row) != cols for row in body):
            raise ParseError(f"janko heyawake: expected {rows} clue lines then {rows} room-id "
                             f"lines of {cols} entries", source=source)
        numbers = np.array([[NO_NUMBER if tok == "-" else _clue_value(tok, source=source)
                             for tok in row] for row in body[:rows]], dtype=np.int16)
        vwall, hwall = walls_from_ids(body[rows:])
        puzzle = self._puzzle(make_board(vwall, hwall, numbers, source=source))
        srows, scols, sbody = read_janko_grid(solution, source=source)
        if (srows, scols) != (rows, cols):
            raise ParseError(f"janko heyawake: solution is {size_name(srows, scols)}, "
                             f"puzzle is {size_name(rows, cols)}", source=source)
        marks = {"x": SHADED, "-": UNSHADED}
        bad = next((tok for row in sbody[:rows] for tok in row if tok not in marks), None)
        if bad is not None:
            raise ParseError(f"janko heyawake solution entry {bad!r}: expected 'x' or '-'",
                             source=source)
        grid = np.array([[marks[tok] for tok in row] for row in sbody[:rows]], dtype=np.int16)
        return puzzle, Solution(self.name, grid)

    # -- writing ---------------------------------------------------------------------------
    def to_url(self, puzzle):
        board = puzzle.clues
        numbers = [int(board.numbers[top_cell(room)]) for room in board.rooms()]
        body = (formats.encode_bits(board.vwall.reshape(-1).tolist())
                + formats.encode_bits(board.hwall.reshape(-1).tolist())
                + formats.encode_number16(numbers))
        return formats.make_url("heyawake", puzzle.cols, puzzle.rows, body)

    def to_pzprv3(self, puzzle, solution=None, *, filever: int = 0):
        """filever 0: the vendored pzpr.js file (room ids; loose borders are lost);
        filever 1: upstream `pzprv3.1` (border bits)."""
        board = puzzle.clues
        clues = [[{NO_NUMBER: ".", UNKNOWN: "-"}.get(int(v), str(v)) for v in row]
                 for row in board.numbers]
        if solution is None:
            answers = [["."] * puzzle.cols for _ in range(puzzle.rows)]
        else:
            answers = [["#" if v == SHADED else "+" for v in row] for row in solution.grid]
        if filever == 1:
            bits = [[str(int(b)) for b in row] for row in (*board.vwall, *board.hwall)]
            text = formats.write_pzprv3(self.name, puzzle.rows, puzzle.cols,
                                        [bits, clues, answers])
            return "pzprv3.1" + text[len("pzprv3"):]  # the header names the file version
        if filever != 0:
            raise PtrmError(f"heyawake pzprv3 filever must be 0 or 1, got {filever}")
        rooms = board.rooms()
        ids = np.zeros(board.shape, dtype=int)
        for k, room in enumerate(rooms):
            for rc in room:
                ids[rc] = k
        return formats.write_pzprv3(self.name, puzzle.rows, puzzle.cols,
                                    [[[str(v) for v in row] for row in ids], clues, answers],
                                    extra_lines=[str(len(rooms))])

    # -- tokens ----------------------------------------------------------------------------
    def token_range_help(self) -> str:
        return f"heyawake room numbers 0..{HEYAWAKE_MAX_NUMBER}"

    def input_token(self, puzzle, r, c, value):
        board = puzzle.clues
        number = int(board.numbers[r, c])
        if number > HEYAWAKE_MAX_NUMBER:
            raise PtrmError(f"heyawake room number {number} at {cell_name(r, c)} has no token: the "
                            f"ppbench vocabulary holds room numbers 0..{HEYAWAKE_MAX_NUMBER}")
        if value == SHADED:
            return "heyawake.shaded"
        # a "?" room constrains nothing, exactly like a room without a number
        return heyawake_token(board.wall_right(r, c), board.wall_below(r, c),
                              None if number in (NO_NUMBER, UNKNOWN) else number)

    def label_token(self, puzzle, r, c, value):
        return "heyawake.shaded" if value == SHADED else "heyawake.unshaded"

    def token_value(self, puzzle, r, c, name):
        return SHADED if name == "heyawake.shaded" else UNSHADED

    # -- rules -----------------------------------------------------------------------------
    def verify(self, puzzle, solution):
        shaded = solution.grid == SHADED
        board = puzzle.clues
        return (_no_shade(shaded) + _adjacent(shaded) + _divided(shaded)
                + _room_counts(board, lambda room: sum(bool(shaded[rc]) for rc in room))
                + _unshaded_runs(board, shaded))

    def puzzle_violations(self, puzzle):
        """bkShadeNe for a room whose number is more than it can hold (`_most_shaded`): no
        answer can meet it, so `ptrm solve` says so before running a model. "At most": for a
        room that is no rectangle the count is its size, a bound it may not reach."""
        return _room_counts(puzzle.clues, _most_shaded, operator.lt,
                            "can hold at most {} shaded cell(s) with none touching")

    # -- augmentation ----------------------------------------------------------------------
    def transform(self, puzzle, solution, t):
        board = puzzle.clues
        rows, cols = board.shape
        # walls on a (2rows+1) x (2cols+1) board-coordinate grid move like the cells do
        sites = np.zeros((2 * rows + 1, 2 * cols + 1), dtype=bool)
        sites[1::2, 2:-1:2] = board.vwall
        sites[2:-1:2, 1::2] = board.hwall
        moved = dihedral.apply(sites, t)
        new = make_board(moved[1::2, 2:-1:2], moved[2:-1:2, 1::2],
                         dihedral.apply(board.numbers, t))
        p = Puzzle(self.name, *new.shape, new, dict(puzzle.meta))
        s = None if solution is None else Solution(self.name, dihedral.apply(solution.grid, t))
        return p, s

    # -- people ----------------------------------------------------------------------------
    def render(self, puzzle, solution=None):
        board = puzzle.clues
        rows, cols = board.shape
        out = Text()
        # a corner no wall meets is a dot on an empty board (to count cells by), and blank
        # under an answer, whose unshaded cells are dots themselves
        blank = "·" if solution is None else " "
        out.append(self._rule(board, -1, blank), style="bold")
        for r in range(rows):
            out.append("│", style="bold")
            for c in range(cols):
                out.append(self._cell(board, solution, r, c))
                out.append("│" if c == cols - 1 or board.vwall[r, c] else " ", style="bold")
            out.append("\n")
            out.append(self._rule(board, r, blank), style="bold")
        out.rstrip()
        return out

    @staticmethod
    def _rule(board: Board, r: int, blank: str) -> str:
        """The line under row r (-1: the top edge): a wall segment where a wall is, and at
        each corner the junction its walls make (`┼`, `├`, `┐`, ...; `blank` where none
        meets)."""
        rows, cols = board.shape
        line = [_junction(board, r + 1, 0, blank)]
        for c in range(cols):
            line.append("───" if r in (-1, rows - 1) or board.hwall[r, c] else "   ")
            line.append(_junction(board, r + 1, c + 1, blank))
        return "".join(line) + "\n"

    @staticmethod
    def _cell(board: Board, solution: Solution | None, r: int, c: int) -> Text:
        number = int(board.numbers[r, c])
        shaded = solution is not None and solution.grid[r, c] == SHADED
        if number != NO_NUMBER:
            label = "?" if number == UNKNOWN else str(number)
            # a shaded clue keeps its number beside a ■: reverse video alone is lost in a
            # file, a pipe or under NO_COLOR
            return Text(f"{SHADED_GLYPH}{label:<2}", style="bold reverse") if shaded else \
                Text(f"{label:^3}", style="bold")
        if shaded:
            return Text(f" {SHADED_GLYPH} ", style="bold")
        return Text(f" {UNSHADED_GLYPH} " if solution is not None else "   ", style="dim")


#: a corner's glyph by the walls that meet there: (up, right, down, left); none: _junction's
#: `blank`
JUNCTIONS = {
    (1, 0, 1, 0): "│", (0, 1, 0, 1): "─",
    (0, 1, 1, 0): "┌", (0, 0, 1, 1): "┐", (1, 1, 0, 0): "└", (1, 0, 0, 1): "┘",
    (1, 1, 1, 0): "├", (1, 0, 1, 1): "┤", (0, 1, 1, 1): "┬", (1, 1, 0, 1): "┴",
    (1, 1, 1, 1): "┼", (1, 0, 0, 0): "╵", (0, 1, 0, 0): "╶", (0, 0, 1, 0): "╷",
    (0, 0, 0, 1): "╴",
}


def _junction(board: Board, i: int, j: int, blank: str) -> str:
    """The glyph of grid point (i, j), the corner above and left of cell (i, j): the board's
    edge and the room walls that end there."""
    rows, cols = board.shape
    side = j in (0, cols)   # on the left or right edge: the edge runs up and down
    top = i in (0, rows)    # on the top or bottom edge: it runs left and right
    up = i > 0 and (side or bool(board.vwall[i - 1, j - 1]))
    down = i < rows and (side or bool(board.vwall[i, j - 1]))
    left = j > 0 and (top or bool(board.hwall[i - 1, j - 1]))
    right = j < cols and (top or bool(board.hwall[i - 1, j]))
    return JUNCTIONS.get((up, right, down, left), blank)


# -- rules, in pzpr.js checklist order ----------------------------------------------------------

def _no_shade(shaded: np.ndarray) -> list[Violation]:
    return [] if shaded.any() else [Violation("brNoShade", "no cell is shaded")]


def _adjacent(shaded: np.ndarray) -> list[Violation]:
    out = []
    for dr, dc in ((0, 1), (1, 0)):
        rows, cols = shaded.shape[0] - dr, shaded.shape[1] - dc
        both = shaded[:rows, :cols] & shaded[dr:, dc:]
        for r, c in zip(*np.nonzero(both)):
            a, b = (int(r), int(c)), (int(r) + dr, int(c) + dc)
            out.append(Violation("csAdjacent", f"shaded cells {cell_name(*a)} and "
                                 f"{cell_name(*b)} touch", (a, b)))
    return out


def _divided(shaded: np.ndarray) -> list[Violation]:
    areas = components(~shaded)
    if len(areas) <= 1:
        return []
    largest = max(areas, key=len)
    cut_off = tuple(rc for area in areas if area is not largest for rc in area)
    return [Violation("cuDivideRB", f"the unshaded cells fall apart into {len(areas)} areas; "
                      f"cut off from the largest: {cells_named(cut_off)}", cut_off)]


def _room_counts(board: Board, count: Callable[[list[tuple[int, int]]], int],
                 broken: Callable[[int, int], bool] = operator.ne,
                 says: str = "has {} shaded cells") -> list[Violation]:
    """bkShadeNe for each numbered room whose `count` (of shaded cells, or of room for them)
    is `broken(count, number)`; `says` formatted with the count. `verify` and
    `puzzle_violations` both judge room numbers here."""
    out = []
    for room in board.rooms():
        r, c = top_cell(room)
        n = int(board.numbers[r, c])
        if n < 0:
            continue
        k = count(room)
        if broken(k, n):
            out.append(Violation("bkShadeNe", f"the room numbered {n} at {cell_name(r, c)} "
                                 f"{says.format(k)}", tuple(room)))
    return out


def _most_shaded(room: list[tuple[int, int]]) -> int:
    """The most cells of `room` that can be shaded with none touching another: half of a
    rectangle, rounded up (dominoes tile it but for one cell, and each holds one shaded cell at
    most); every cell of any other shape (a bound: the exact count would take a matching)."""
    rows = {r for r, _ in room}
    cols = {c for _, c in room}
    if len(room) == (max(rows) - min(rows) + 1) * (max(cols) - min(cols) + 1):
        return (len(room) + 1) // 2
    return len(room)


def _unshaded_runs(board: Board, shaded: np.ndarray) -> list[Violation]:
    """Maximal unshaded runs, rows then columns, that cross more than one wall segment
    (loose walls count: pzpr.js counts borders, not rooms)."""
    rows, cols = shaded.shape
    lines = [[(r, c) for c in range(cols)] for r in range(rows)]
    lines += [[(r, c) for r in range(rows)] for c in range(cols)]
    out = []
    for line in lines:
        run: list[tuple[int, int]] = []
        for rc in line + [None]:
            if rc is not None and not shaded[rc]:
                run.append(rc)
                continue
            walls = sum(board.wall(a, b) for a, b in zip(run, run[1:]))
            if walls > 1:
                out.append(Violation("bkUnshadeConsecGt3", f"an unshaded run from "
                                     f"{cell_name(*run[0])} crosses {walls} room borders",
                                     tuple(run)))
            run = []
    return out
