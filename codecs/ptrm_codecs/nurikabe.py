"""Nurikabe (PPBENCH_FORMATS.md §4.3), and the shade-or-not answers it shares with tapa.

Puzzle.clues: [rows, cols] int32, pzpr.js's qnum: -1 = no clue, -2 = a "?" clue, n >= 0 = clue n.
Solution.grid: [rows, cols] int16: 1 = shaded, 0 = unshaded (EMPTY); clue cells hold 0 and are
never read as shaded. Dots (pzpr.js qsub, "certainly unshaded") never affect checking, so they
are read and dropped: `to_pzprv3(puzzle, solution)` writes the file pzpr.js writes after
PPBench's `moves_required`.

Formats:
  puzz.link   nurikabe/<cols>/<rows>/<number16 body>   ('.' = a "?" clue)
  pzprv3      one grid: clue number | '-' ("?" clue) | '#' shaded | '+' dot | '.'
  plain grid  that pzprv3 grid without its header, cells separated by spaces, optionally after a
              line `nurikabe` (no `sniff`: a tapa grid of single clues reads the same)
  PPBench     moves: left click toggles shading, right click puts a dot; clue cells ignore both
  janko       problem: clue numbers, '-' blank, '?'; solution: 'x' shaded, '-' not
Tokens (ppbench family): nurikabe.blank, nurikabe.clue.? and nurikabe.clue.1..38 on inputs, with nurikabe.shaded
on cells a trajectory state shades; labels are nurikabe.shaded / nurikabe.unshaded on non-clue
cells and the clue's input token on clue cells. A 0 clue or one above 38 has no token; "?" has one.
Rules, in pzpr.js checklist order: cs2x2, bkNoNum, csDivide, bkNumGe2, bkSizeNe.
`puzzle_violations` is bkNumGe2 for clues that touch ("?" and 0 clues too, as pzpr.js counts
them): clue cells are never shaded, so they share an island whatever the answer, and `ptrm
solve` says so before running a model.
"""

from __future__ import annotations

import numpy as np
from rich.text import Text

from ptrm_cli import dihedral
from ptrm_cli.codec import Parsed, Puzzle, Solution, Violation, cell_name, cells_named, \
    size_name
from ptrm_cli.errors import ParseError, PtrmError

from . import formats
from .common import GridCodec, blocks_2x2, boxed, components, read_janko_grid
from .families import NURIKABE_MAX_CLUE, PPBENCH

NO_CLUE, UNKNOWN = -1, -2  # Puzzle.clues values besides the clue numbers
UNSHADED, SHADED = 0, 1  # Solution.grid values


# -- shade-or-not answers, shared with tapa ---------------------------------------------------

def replay_clicks(name: str, answer_cell: np.ndarray, moves: list[list[formats.Move]]) -> np.ndarray:
    """PPBench moves -> shaded mask as int16. pzpr.js (config `use` = 1): a left click toggles
    shading, a right click toggles a dot, which replaces shading; cells that are not answer
    cells (clues) and clicks off the board are ignored; key presses do nothing."""
    rows, cols = answer_cell.shape
    grid = np.zeros((rows, cols), dtype=np.int16)
    for move in moves:
        for action in move:
            if action.kind != "mouse":
                continue
            if action.button not in ("left", "right"):
                raise PtrmError(f"{name}: unsupported PPBench click {action.button!r} "
                                "(expected left or right)")
            r, c = action.cell
            if not (0 <= r < rows and 0 <= c < cols) or not answer_cell[r, c]:
                continue
            if action.button == "left":
                grid[r, c] = UNSHADED if grid[r, c] == SHADED else SHADED
            else:
                grid[r, c] = UNSHADED
    return grid


def answer_mark(value: int) -> str:
    """A non-clue cell in a pzprv3 grid."""
    return "#" if value == SHADED else "."


def read_answer_mark(token: str) -> int | None:
    """'#' shaded, '+' dot and '.' unshaded; None for anything else (a clue)."""
    return {"#": SHADED, "+": UNSHADED, ".": UNSHADED}.get(token)


def grid_rows(lines: list[str], *, what: str, first_line: int,
              source: str | None = None) -> list[tuple[int, list[str]]]:
    """A plain grid: (file line, tokens) per line, all of one width, with no blank line
    between them (two grids one after the other are not one taller grid)."""
    rows = [(first_line + k, ln.split()) for k, ln in enumerate(lines) if ln.strip()]
    if not rows:
        raise ParseError(f"{what}: expected grid lines", source=source, line=first_line)
    gap = next((line for (line, _), (after, _) in zip(rows, rows[1:]) if after > line + 1), None)
    if gap is not None:
        raise ParseError(f"{what}: a blank line inside the grid; expected one block of lines, "
                         "one per row", source=source, line=gap + 1)
    width = len(rows[0][1])
    for line, tokens in rows:
        if len(tokens) != width:
            raise ParseError(f"{what}: expected {width} cells on this line (as on the first), "
                             f"found {len(tokens)}", source=source, line=line)
    return rows


def _clue_number(tok: str, cells: int, *, source: str | None, line: int) -> int:
    """A clue's number, checked here where its line is known: no island is larger than the
    board, and a long number did not fit the int32 clue grid (an OverflowError, reported as a
    bug in the codec)."""
    if int(tok) > cells:
        raise ParseError(f"nurikabe clue {tok} is larger than the board, which has {cells} "
                         "cells", source=source, line=line)
    return int(tok)


def pzprv3_rows(p: formats.Pzprv3, *, what: str, source: str | None = None,
                border_lines: bool = False) -> list[tuple[int, list[str]]]:
    """The pzprv3 grid as (file line, tokens) rows. With `border_lines` (tapa), pzpr.js's
    optional border section may follow; it is checked and ignored. Nothing else may."""
    grid = formats.grid_section(p, 0, p.rows, p.cols, what=what, source=source)
    end = formats.optional_border_lines(p, p.rows, source=source) if border_lines else p.rows
    formats.expect_end(p, end, source=source)
    return [(p.first_line + r, tokens) for r, tokens in enumerate(grid)]


def shading_violations(shaded: np.ndarray) -> tuple[list[Violation], list[Violation]]:
    """(cs2x2, csDivide) violations of a shaded mask."""
    blocks = [Violation("cs2x2", f"a 2x2 block of shaded cells at {cell_name(r, c)}",
                        ((r, c), (r, c + 1), (r + 1, c), (r + 1, c + 1)))
              for r, c in blocks_2x2(shaded)]
    parts = sorted(components(shaded), key=len, reverse=True)
    divided = []
    if len(parts) > 1:  # the cells cut off from the largest shaded area
        cut = tuple(rc for part in parts[1:] for rc in part)
        divided.append(Violation("csDivide", f"shaded cells fall into {len(parts)} separate "
                                 f"areas; cut off from the largest: {cells_named(cut)}", cut))
    return blocks, divided


class ClueShadingTokens:
    """Tokens of a type whose clue cells are never shaded (nurikabe, tapa): a clue cell reads,
    and is labelled, with its clue's token (`clue_token`); any other cell is <name>.blank or
    <name>.shaded on inputs and <name>.unshaded or <name>.shaded in labels."""

    def input_token(self, puzzle, r, c, value):
        if not self.is_answer_cell(puzzle, r, c):
            return self.clue_token(puzzle, r, c)
        return f"{self.name}.shaded" if value == SHADED else f"{self.name}.blank"

    def label_token(self, puzzle, r, c, value):
        if not self.is_answer_cell(puzzle, r, c):
            return self.clue_token(puzzle, r, c)
        return f"{self.name}.shaded" if value == SHADED else f"{self.name}.unshaded"

    def token_value(self, puzzle, r, c, name):
        if not self.is_answer_cell(puzzle, r, c):
            return self.EMPTY
        return SHADED if name == f"{self.name}.shaded" else UNSHADED


#: how the board draws an answer cell of nurikabe and tapa; their legend quotes it
SHADED_GLYPH, UNSHADED_GLYPH = "██", "·"
#: what their Solution.grid values mean (`Codec.legend`)
SHADING_LEGEND = {UNSHADED: f"unshaded ({UNSHADED_GLYPH}); clue cells hold 0 too",
                  SHADED: f"shaded ({SHADED_GLYPH})"}


def shading_glyph(value: int) -> Text:
    return Text(SHADED_GLYPH) if value == SHADED else Text(UNSHADED_GLYPH, style="dim")


# -- the codec --------------------------------------------------------------------------------

class NurikabeCodec(ClueShadingTokens, GridCodec):
    name = "nurikabe"
    description = "Nurikabe: shade a wall so that each clue sits in an island of its size"
    url_ids = ("nurikabe",)
    families = (PPBENCH,)
    EMPTY = UNSHADED
    rules = ("Shade cells so that each number sits in an island of unshaded cells of exactly "
             "that size, every island holds one number, all shaded cells are connected, and no "
             "2x2 block is all shaded.")
    example = "\n".join(("nurikabe", ". . . 4", "2 . . .", ". . . .", "4 . . ."))
    legend = SHADING_LEGEND

    # -- parsing ---------------------------------------------------------------------------
    def _puzzle(self, clues: np.ndarray) -> Puzzle:
        return Puzzle(self.name, clues.shape[0], clues.shape[1], clues.astype(np.int32))

    def parse_url(self, url, *, source=None):
        values, _ = formats.decode_number16(url.body, url.rows * url.cols, source=source,
                                            what="nurikabe URL body",
                                            board=size_name(url.rows, url.cols))
        return Parsed(self._puzzle(np.array(values).reshape(url.rows, url.cols)))

    def parse_pzprv3(self, p, *, source=None):
        return self._read_cells(pzprv3_rows(p, what="nurikabe grid", source=source), source=source)

    def parse_grid(self, lines, *, source=None, first_line=1):
        return self._read_cells(grid_rows(lines, what="nurikabe grid", first_line=first_line,
                                          source=source), source=source)

    def _read_cells(self, rows: list[tuple[int, list[str]]], *, source=None) -> Parsed:
        clues = np.full((len(rows), len(rows[0][1])), NO_CLUE, dtype=np.int32)
        grid = np.zeros(clues.shape, dtype=np.int16)
        answered = False
        for r, (line, tokens) in enumerate(rows):
            for c, tok in enumerate(tokens):
                mark = read_answer_mark(tok)
                if mark is not None:
                    grid[r, c] = mark
                    answered |= tok != "."
                elif tok == "-":
                    clues[r, c] = UNKNOWN
                elif formats.is_number(tok):
                    clues[r, c] = _clue_number(tok, clues.size, source=source, line=line)
                else:
                    raise ParseError(f"nurikabe cell {tok!r}: expected a clue number, '-' (a '?' "
                                     "clue), '#' (shaded), '+' (dot) or '.'", source=source, line=line)
        puzzle = self._puzzle(clues)
        return Parsed(puzzle, Solution(self.name, grid) if answered else None)

    def apply_moves(self, puzzle, moves):
        return Solution(self.name, replay_clicks(self.name, puzzle.clues == NO_CLUE, moves))

    def from_janko(self, problem, solution, *, source=None):
        rows, cols, body = read_janko_grid(problem, source=source)
        clues = np.full((rows, cols), NO_CLUE, dtype=np.int32)
        for r in range(rows):
            for c, tok in enumerate(body[r]):
                if tok == "?":
                    clues[r, c] = UNKNOWN
                elif formats.is_number(tok):
                    clues[r, c] = _clue_number(tok, clues.size, source=source, line=r + 2)
                elif tok != "-":
                    raise ParseError(f"janko nurikabe problem cell {tok!r}: expected a number, "
                                     "'-' or '?'", source=source, line=r + 2)
        srows, scols, sbody = read_janko_grid(solution, source=source)
        if (srows, scols) != (rows, cols):
            raise ParseError(f"janko nurikabe solution is {size_name(srows, scols)}, its "
                             f"problem {size_name(rows, cols)}", source=source)
        grid = np.zeros((rows, cols), dtype=np.int16)
        for r in range(rows):
            for c, tok in enumerate(sbody[r]):
                if tok == "x" and clues[r, c] != NO_CLUE:
                    raise ParseError("janko nurikabe solution shades the clue at "
                                     f"{cell_name(r, c)}",
                                     source=source, line=r + 2)
                if tok not in ("x", "-") and not formats.is_number(tok):
                    raise ParseError(f"janko nurikabe solution cell {tok!r}: expected 'x' "
                                     "(shaded) or '-'", source=source, line=r + 2)
                grid[r, c] = SHADED if tok == "x" else UNSHADED
        return self._puzzle(clues), Solution(self.name, grid)

    # -- writing ---------------------------------------------------------------------------
    def to_url(self, puzzle):
        try:
            body = formats.encode_number16([int(v) for v in puzzle.clues.reshape(-1)])
        except ValueError:
            raise PtrmError(f"a nurikabe clue of {int(puzzle.clues.max())} is too large for a "
                            "puzz.link URL (at most 4095)") from None
        return formats.make_url("nurikabe", puzzle.cols, puzzle.rows, body)

    def to_pzprv3(self, puzzle, solution=None):
        def cell(r, c):
            clue = int(puzzle.clues[r, c])
            if clue != NO_CLUE:
                return "-" if clue == UNKNOWN else str(clue)
            return answer_mark(int(solution.grid[r, c])) if solution is not None else "."

        grid = [[cell(r, c) for c in range(puzzle.cols)] for r in range(puzzle.rows)]
        return formats.write_pzprv3(self.name, puzzle.rows, puzzle.cols, [grid])

    # -- tokens ----------------------------------------------------------------------------
    def is_answer_cell(self, puzzle, r, c):
        return bool(puzzle.clues[r, c] == NO_CLUE)

    def clue_token(self, puzzle: Puzzle, r: int, c: int) -> str:
        clue = int(puzzle.clues[r, c])
        if clue == UNKNOWN:
            return "nurikabe.clue.?"
        if not 1 <= clue <= NURIKABE_MAX_CLUE:
            raise PtrmError(f"nurikabe clue {clue} at {cell_name(r, c)} cannot be encoded: the "
                            f"{PPBENCH.name} vocabulary has nurikabe clues 1..{NURIKABE_MAX_CLUE} "
                            f"and '?'")
        return f"nurikabe.clue.{clue}"

    def token_range_help(self):
        return f"nurikabe clues 1..{NURIKABE_MAX_CLUE} and '?'"

    # -- rules -----------------------------------------------------------------------------
    def verify(self, puzzle, solution):
        clued = puzzle.clues != NO_CLUE
        shaded = (solution.grid == SHADED) & ~clued
        islands = components(~shaded)
        blocks, divided = shading_violations(shaded)
        return (blocks + _islands_without_clue(islands, clued) + divided
                + _islands_with_clues(islands, clued) + _islands_of_wrong_size(islands, puzzle.clues))

    def puzzle_violations(self, puzzle):
        """bkNumGe2 for clues that touch: clue cells are never shaded, so touching ones share
        an island whatever the answer, and `ptrm solve` says so before running a model."""
        clued = puzzle.clues != NO_CLUE
        return _islands_with_clues(components(clued), clued)

    # -- augmentation ----------------------------------------------------------------------
    def transform(self, puzzle, solution, t):
        clues = dihedral.apply(puzzle.clues, t)
        p = Puzzle(self.name, clues.shape[0], clues.shape[1], clues, dict(puzzle.meta))
        s = None if solution is None else Solution(self.name, dihedral.apply(solution.grid, t))
        return p, s

    # -- people ----------------------------------------------------------------------------
    def render(self, puzzle, solution=None):
        def cell(r, c):
            clue = int(puzzle.clues[r, c])
            if clue != NO_CLUE:
                return Text("?" if clue == UNKNOWN else str(clue), style="bold cyan")
            return shading_glyph(int(solution.grid[r, c]) if solution is not None else UNSHADED)

        width = max([2] + [len(str(v)) for v in puzzle.clues.reshape(-1)])
        return boxed([[cell(r, c) for c in range(puzzle.cols)] for r in range(puzzle.rows)],
                     width=width)


# pzpr.js counts "?" and 0 clues as clues everywhere except the size test.

def _islands_without_clue(islands, clued) -> list[Violation]:
    return [Violation("bkNoNum", f"an unshaded area of {len(isle)} cell(s) has no clue: "
                      f"{cells_named(isle)}", tuple(isle))
            for isle in islands if not any(clued[rc] for rc in isle)]


def _islands_with_clues(islands, clued) -> list[Violation]:
    out = []
    for isle in islands:
        clues = [rc for rc in isle if clued[rc]]
        if len(clues) >= 2:  # the clues name the area best: they are what must not share it
            out.append(Violation("bkNumGe2", f"an unshaded area holds {len(clues)} clues, at "
                                 f"{cells_named(clues)}", tuple(isle)))
    return out


def _islands_of_wrong_size(islands, clues) -> list[Violation]:
    """Every clue n >= 1 against the size of its island; PPBench's pzpr.js skips "?" and 0."""
    out = []
    for isle in islands:
        for rc in isle:
            n = int(clues[rc])
            if n > 0 and n != len(isle):
                out.append(Violation("bkSizeNe", f"the clue {n} at {cell_name(*rc)} sits in an "
                                     f"unshaded area of {len(isle)} cell(s)", tuple(isle)))
    return out
