"""Sudoku (PPBENCH_FORMATS.md §4.1).

Puzzle.clues: [n, n] int16, 0 = blank, 1..n = given (n = 4, 6 or 9; boxes √n x √n, 3x2 for 6).
Solution.grid: [n, n] int16 full digit grid, givens included; 0 = not filled (EMPTY).

Formats: puzz.link `sudoku/9/9/<number16>`; pzprv3 (one size line, givens then answers); a
one-line string of n*n characters; n lines of n digits (spaces optional), box-drawn as forums
write them or not (`5 3 . | . 7 . | . . .` rows, `------+-------+------` or `=` rules, a
`+-----+` frame: rules must fall where boxes end). Blanks: '.', '0', '_' or '-'
(`sudoku_text.BLANKS`, for reading and detection alike). PPBench records (moves
`mouse,left,X,Y;key,D`).
Tokens: the codec serves two families, and the model's vocabulary table picks one
(`Codec.family_for`); `TOKEN_NAMES` below is the only place they differ.
  ppbench        (10x10, 4x4/6x6/9x9 top-left, pad around) sudoku.blank, sudoku.given.1..9 on
                 inputs; sudoku.digit.1..9 for digits the solver enters (labels and trajectory
                 states); givens keep their token in labels.
  sudoku-native  (9x9 only, TRM's own ids: blank 1, digit d -> d + 1) sudoku.blank and
                 sudoku.1..9 for givens and entered digits alike: input = the puzzle with
                 blanks, label = the full solution grid, exactly as in TRM's Sudoku-Extreme data.
In both, a given cell decodes to its given whatever token the model wrote there (the solver
cannot change a given); label match still compares every token.
Drawn (`ptrm solve`): givens in brackets, `[5]`, digits the solver filled in bare, `·` blank;
the brackets keep them apart in a file or a pipe, where bold and colour are lost.
Verifier codes, in pzpr.js checklist order:
  bkDupNum  a digit twice in a box
  nmDupRow  a digit twice in a row, then in a column (pzpr.js has one code for both)
  ceNoNum   cells holding no digit 1..n
`puzzle_violations` checks the givens alone by the same rules (one function, `_rules`): givens
that clash (bkDupNum, nmDupRow) or a given outside 1..n (ceNoNum; the readers refuse one, a
Puzzle built in Python may hold one) can never be solved; nor can a blank whose row, column
and box hold every digit already (ceNoNum, `_no_candidate`); nor givens that allow no fill of
the blanks at all (ceNoNum, `_no_fill`: an exact search, milliseconds at these sizes). `ptrm
solve` says so before running a model. Messages name their cells ("digit 5 appears 2 times in row 1: r1c1, r1c5").
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from rich.text import Text

from ptrm_cli import dihedral
from ptrm_cli.sudoku_aug import TRANSFORM_ID
from ptrm_cli.sudoku_solver import solve as solve_sudoku
from ptrm_cli.codec import Family, Parsed, Puzzle, Solution, Violation, cell_name, cells_named, \
    size_name
from ptrm_cli.errors import ParseError, PtrmError

from . import formats
from .common import GridCodec, boxed
from .sudoku_text import BLANKS, blanks_help, check_boxes, read_rows
from .families import PPBENCH, SUDOKU_NATIVE, SUDOKU_NATIVE_BLANK, SUDOKU_NATIVE_DIGITS

SIZES = (4, 6, 9)
#: how `render` draws a given digit: marked by text, which survives where styles do not
GIVEN = "[{}]"
#: a pzprv3 answer entry (pzpr.js `encodeCellAnumsub`): a digit, or '.' or a mark (dots
#: '+', '-', '=', '%'; 'c' done), then optionally the cell's pencil marks "[a,b,c,d]"
_ANSWER = re.compile(r"(?:(\d+)|[.+\-=%c])(?:\[[\d,]*\])?", re.ASCII)  # \d: 0-9 only


@dataclass(frozen=True)
class TokenNames:
    """How one family names a sudoku cell. `given[d - 1]` / `entered[d - 1]`: the token of
    digit d as a given / as a digit the solver entered."""

    sizes: tuple[int, ...]
    blank: str
    given: tuple[str, ...]
    entered: tuple[str, ...]


#: the family-specific token naming, all of it
TOKEN_NAMES = {
    PPBENCH.name: TokenNames(SIZES, "sudoku.blank",
                             tuple(f"sudoku.given.{d}" for d in range(1, 10)),
                             tuple(f"sudoku.digit.{d}" for d in range(1, 10))),
    SUDOKU_NATIVE.name: TokenNames((9,), SUDOKU_NATIVE_BLANK, SUDOKU_NATIVE_DIGITS,
                                   SUDOKU_NATIVE_DIGITS),
}


@dataclass(frozen=True)
class _Ids:
    """TokenNames as id tables for one vocabulary, so encoding and decoding are numpy lookups:
    given[v] / entered[v] for v = 0..9 (index 0: the blank's id)."""

    given: np.ndarray
    entered: np.ndarray
    value: np.ndarray  # [V]: the digit an entered-digit token means at a free cell, else 0


@lru_cache(maxsize=None)
def _ids(family: Family) -> _Ids:
    names = TOKEN_NAMES[family.name]
    vocab = family.vocab
    blank = vocab.id(names.blank)
    given = np.array([blank] + [vocab.id(n) for n in names.given], dtype=np.int64)
    entered = np.array([blank] + [vocab.id(n) for n in names.entered], dtype=np.int64)
    value = np.zeros(len(vocab), dtype=np.int16)
    value[entered[1:]] = np.arange(1, 10)
    return _Ids(given, entered, value)


def box_shape(n: int) -> tuple[int, int]:
    """(rows, cols) of one box."""
    return (2, 3) if n == 6 else (math.isqrt(n), math.isqrt(n))


class SudokuCodec(GridCodec):
    name = "sudoku"
    description = "Sudoku 4x4, 6x6, 9x9"
    url_ids = ("sudoku",)
    families = (PPBENCH, SUDOKU_NATIVE)
    pzprv3_one_size_line = True
    EMPTY = 0
    rules = ("Fill the blanks so that every row, every column and every box holds each digit "
             "once: 1-4 with 2x2 boxes, 1-6 with boxes of 2 rows x 3 columns, 1-9 with 3x3 "
             "boxes.")
    example = "\n".join(("sudoku", ". 2 . .", "4 . . .", "2 . . 1", ". . . 4"))
    legend = {0: "blank, not filled", **{d: f"the digit {d} (drawn {GIVEN.format(d)} where "
                                            f"the puzzle gives it)"
                                         for d in range(1, max(SIZES) + 1)}}

    # -- parsing ---------------------------------------------------------------------------
    def _puzzle(self, clues: np.ndarray, *, source=None) -> Puzzle:
        n = clues.shape[0]
        if clues.shape != (n, n) or n not in SIZES:
            raise ParseError(f"sudoku must be 4x4, 6x6 or 9x9, got {size_name(*clues.shape)}",
                             source=source)
        if clues.min() < 0 or clues.max() > n:
            bad = int(clues.max()) if clues.max() > n else int(clues.min())
            raise ParseError(f"sudoku given {bad} is outside 1..{n}", source=source)
        return Puzzle(self.name, n, n, clues.astype(np.int16))

    def parse_url(self, url, *, source=None):
        if url.cols != url.rows:
            raise ParseError(f"sudoku URL size {size_name(url.rows, url.cols)} is not square",
                             source=source)
        values, _ = formats.decode_number16(url.body, url.cols * url.rows, source=source,
                                            what="sudoku URL body",
                                            board=size_name(url.rows, url.cols))
        if -2 in values:
            raise ParseError("sudoku URL has a '?' given, which ptrm cannot use", source=source)
        clues = np.array([max(v, 0) for v in values], dtype=np.int16).reshape(url.rows, url.cols)
        return Parsed(self._puzzle(clues, source=source))

    def parse_pzprv3(self, p, *, source=None):
        n = p.rows
        givens = formats.grid_section(p, 0, n, n, what="sudoku givens", source=source)
        clues = np.zeros((n, n), dtype=np.int16)
        for r, row in enumerate(givens):
            for c, tok in enumerate(row):
                if formats.is_number(tok):
                    if int(tok) > n:  # here, with its line: a long one does not fit int16
                        raise ParseError(f"sudoku given {tok} is outside 1..{n}", source=source,
                                         line=p.first_line + r)
                    clues[r, c] = int(tok)
                elif tok == "-":
                    raise ParseError("a '?' given cannot be used", source=source,
                                     line=p.first_line + r)
                elif tok != ".":
                    raise ParseError(f"sudoku given {tok!r}: expected a digit, '-' or '.'",
                                     source=source, line=p.first_line + r)
        puzzle = self._puzzle(clues, source=source)
        answers = formats.optional_section(p, n, n, n, what="sudoku answer",
                                           source=source)
        formats.expect_end(p, n if answers is None else 2 * n, source=source)
        if answers is None:
            return Parsed(puzzle)
        grid = clues.copy()
        for r, row in enumerate(answers):
            for c, tok in enumerate(row):
                m = _ANSWER.fullmatch(tok)
                digit = m and m.group(1)
                if not m or (digit and not 1 <= int(digit) <= n):
                    raise ParseError(f"sudoku answer {tok!r}: expected a digit 1..{n}, '.', or a "
                                     "mark ('+', '-', '=', '%', 'c')", source=source,
                                     line=p.first_line + n + r)
                if digit and clues[r, c] == 0:
                    grid[r, c] = int(digit)
        return Parsed(puzzle, Solution(self.name, grid))

    def parse_grid(self, lines, *, source=None, first_line=1):
        # blank lines and box rules are skipped, but they count in the file line of each row
        read, rules = read_rows(lines, first_line=first_line)
        if not read:
            if rules:
                raise ParseError("expected a sudoku grid, found only box rules",
                                 source=source, line=rules[0].line)
            raise ParseError("expected a sudoku grid, found no grid lines", source=source)
        at = [row.line for row in read]
        rows = [row.cells for row in read]
        one_line = len(rows) == 1
        if one_line:  # one line of n*n characters
            flat = rows[0]
            n = math.isqrt(len(flat))
            if n * n != len(flat) or n not in SIZES:
                raise ParseError(f"a one-line sudoku has 16, 36 or 81 characters, this one has "
                                 f"{len(flat)}", source=source, line=at[0])
            rows, at = [flat[i * n:(i + 1) * n] for i in range(n)], at * n
        n = len(rows)
        if n not in SIZES:
            # more lines than a grid, the first of them a grid's width: the extra one is the
            # mistake (a note, a second puzzle), so point at it
            size = len(rows[0])
            if size in SIZES and n > size and all(len(r) == size for r in rows[:size]):
                raise ParseError(f"text after the {size}x{size} grid (one puzzle per input)",
                                 source=source, line=at[size])
            raise ParseError(f"expected 4, 6 or 9 grid lines, found {n}"
                             + (f" (and {len(rules)} box rule lines)" if rules else ""),
                             source=source, line=first_line)
        clues = np.zeros((n, n), dtype=np.int16)
        for r, row in enumerate(rows):
            if len(row) != n:
                raise ParseError(f"expected {n} cells on this line, found {len(row)}",
                                 source=source, line=at[r])
            for c, ch in enumerate(row):
                if ch in BLANKS:
                    continue
                if not formats.is_number(ch) or not 1 <= int(ch) <= n:
                    raise ParseError(f"sudoku cell {ch!r}: expected 1..{n} or a blank "
                                     f"({blanks_help()})", source=source, line=at[r])
                clues[r, c] = int(ch)
        if not one_line:  # the one-line form's rows are cut from one line: no bars to check
            check_boxes(read, rules, n, box_shape(n), source=source)
        return Parsed(self._puzzle(clues, source=source))

    def sniff(self, text):
        # the rows parse_grid reads, with the same blanks: no grid that reads with a `sudoku`
        # first line needs one for its digits and blanks alone
        rows, _ = read_rows(text.splitlines())
        flat = "".join(row.cells for row in rows)
        return len(flat) in (16, 36, 81) and all(ch in "123456789" or ch in BLANKS
                                                  for ch in flat)

    def apply_moves(self, puzzle, moves):
        grid = puzzle.clues.copy()
        cell = None
        for move in moves:
            for action in move:
                if action.kind == "mouse":
                    cell = action.cell
                elif action.kind == "key" and cell is not None and formats.is_number(action.key):
                    grid[cell] = int(action.key)
        return Solution(self.name, grid)

    # -- writing ---------------------------------------------------------------------------
    def to_url(self, puzzle):
        values = [int(v) if v > 0 else -1 for v in puzzle.clues.reshape(-1)]
        return formats.make_url("sudoku", puzzle.cols, puzzle.rows, formats.encode_number16(values))

    def to_pzprv3(self, puzzle, solution=None):
        n = puzzle.rows
        givens = [[str(v) if v else "." for v in row] for row in puzzle.clues]
        answers = [[str(solution.grid[r, c]) if solution is not None and not puzzle.clues[r, c]
                    and solution.grid[r, c] else "." for c in range(n)] for r in range(n)]
        return formats.write_pzprv3("sudoku", n, n, [givens, answers], one_size_line=True)

    def to_line(self, puzzle) -> str:
        return "".join(str(v) if v else "." for v in puzzle.clues.reshape(-1))

    # -- tokens ----------------------------------------------------------------------------
    def _family(self, n: int, family: Family | None) -> Family:
        """The family to encode an n x n sudoku in (default: the first), or a clear error."""
        family = family or self.family()
        names = TOKEN_NAMES.get(family.name)
        if names is None:
            raise PtrmError(f"sudoku has no token naming for the {family.name!r} family")
        if n not in names.sizes or n > min(family.rows, family.cols):
            raise PtrmError(f"a {n}x{n} sudoku does not fit the {family.name!r} family's "
                            f"{family.rows}x{family.cols} grid"
                            + (" (TRM's layout: 9x9 only)" if family is SUDOKU_NATIVE else ""))
        return family

    def is_answer_cell(self, puzzle, r, c):
        return puzzle.clues[r, c] == 0

    def input_token(self, puzzle, r, c, value, family=None):
        names = TOKEN_NAMES[(family or self.family()).name]
        given = int(puzzle.clues[r, c])
        if given:
            return names.given[given - 1]
        return names.entered[value - 1] if value else names.blank

    def label_token(self, puzzle, r, c, value, family=None):
        names = TOKEN_NAMES[(family or self.family()).name]
        given = int(puzzle.clues[r, c])
        return names.given[given - 1] if given else names.entered[value - 1]

    def token_value(self, puzzle, r, c, name, family=None):
        if puzzle.clues[r, c]:
            return int(puzzle.clues[r, c])
        names = TOKEN_NAMES[(family or self.family()).name]
        if name in names.entered:
            v = names.entered.index(name) + 1
            return v if v <= puzzle.rows else self.EMPTY
        return self.EMPTY

    def encode_grids(self, clues, state=None, family: Family | None = None, *,
                     label: bool = False) -> np.ndarray:
        """Vectorised encode: clues [..., n, n] (0 blank) and a state or, with `label`, the
        full solution of the same shape -> tokens [..., seq_len] int64. `encode`,
        `encode_label` and TRM-style augmentation (one call for all copies of a puzzle) go
        through here."""
        clues = np.asarray(clues)
        n = clues.shape[-1]
        family = self._family(n, family)
        ids = _ids(family)
        state = np.zeros_like(clues) if state is None else np.asarray(state)
        if state.shape != clues.shape or state.min(initial=0) < 0 or state.max(initial=0) > n:
            what = "solution" if label else "state"
            raise PtrmError(f"sudoku {what} must be a grid of 0..{n} shaped like the puzzle")
        if label and ((clues == 0) & (state == 0)).any():
            raise PtrmError("a sudoku label needs a digit in every cell")
        x = np.where(clues > 0, ids.given[clues], ids.entered[state])
        out = np.zeros(clues.shape[:-2] + (family.rows, family.cols), dtype=np.int64)
        out[..., :n, :n] = x
        return out.reshape(clues.shape[:-2] + (family.seq_len,))

    def encode(self, puzzle, state=None, family=None):
        return self.encode_grids(puzzle.clues, None if state is None else state.grid, family)

    def encode_label(self, puzzle, solution, family=None):
        return self.encode_grids(puzzle.clues, solution.grid, family, label=True)

    def decode(self, puzzle, tokens, family=None):
        family = self._family(puzzle.rows, family)
        n = puzzle.rows
        t = np.asarray(tokens).reshape(family.rows, family.cols)[:n, :n].astype(np.int64)
        value = _ids(family).value
        inside = (t >= 0) & (t < len(value))
        v = np.where(inside, value[np.where(inside, t, 0)], self.EMPTY)
        v = np.where(v <= n, v, self.EMPTY)  # digit 7 in a 6x6 sudoku means nothing
        grid = np.where(puzzle.clues > 0, puzzle.clues, v).astype(np.int16)
        return Solution(self.name, grid)

    def token_range_help(self):
        return "digits 1..n, 9x9 for the sudoku-native family"

    # -- rules -----------------------------------------------------------------------------
    def verify(self, puzzle, solution):
        grid = np.where(puzzle.clues > 0, puzzle.clues, solution.grid)
        return _rules(grid, puzzle.rows, np.ones(grid.shape, dtype=bool))

    def puzzle_violations(self, puzzle):
        """The givens alone, by `verify`'s own rules: a digit twice in a box, row or column,
        or a given that is no digit 1..n; and a blank whose row, column and box hold every
        digit already. No answer can mend any of them (givens stay), so `ptrm solve` says so
        before running a model. Givens that pass both may still allow no fill of the blanks:
        then an exact search says so (`_no_fill`), where rollouts would all fail and the
        advice would be to try harder."""
        givens = np.where(puzzle.clues > 0, puzzle.clues, 0)  # what verify keeps of the clues
        found = _rules(givens, puzzle.rows, givens > 0) + _no_candidate(givens, puzzle.rows)
        return found or _no_fill(givens)

    # -- augmentation ----------------------------------------------------------------------
    def transform(self, puzzle, solution, t):
        if not 0 <= t < dihedral.COUNT:
            raise PtrmError(f"transform {t} is not a dihedral symmetry (0..7)"
                            + (": that row was made by the sudoku-trm augmentation, whose "
                               "random shuffles are not recorded" if t == TRANSFORM_ID else ""))
        if puzzle.rows == 6 and t in (1, 3, 6, 7):
            raise PtrmError("a 6x6 sudoku's 3x2 boxes do not survive a quarter turn or transpose")
        p = Puzzle(self.name, puzzle.rows, puzzle.cols, dihedral.apply(puzzle.clues, t),
                   dict(puzzle.meta))
        s = None if solution is None else Solution(self.name, dihedral.apply(solution.grid, t))
        return p, s

    # -- people ----------------------------------------------------------------------------
    def render(self, puzzle, solution=None):
        """Givens in brackets, `[5]`, digits the solver filled in bare, `·` for a blank: in
        a file, a pipe or under NO_COLOR the bold and the colour are lost, and a given looked
        like any filled digit (other types tell clues from answers by their glyphs)."""
        n = puzzle.rows
        br, bc = box_shape(n)
        cells = []
        for r in range(n):
            row = []
            for c in range(n):
                if puzzle.clues[r, c]:
                    row.append(Text(GIVEN.format(int(puzzle.clues[r, c])), style="bold"))
                elif solution is not None and solution.grid[r, c]:
                    row.append(Text(str(solution.grid[r, c]), style="cyan"))
                else:
                    row.append(Text("·", style="dim"))
            cells.append(row)
        # as wide as a given, so that the digits stand in columns
        return boxed(cells, width=len(GIVEN.format(0)),
                     vbars={c for c in range(bc - 1, n - 1, bc)},
                     hbars={r for r in range(br - 1, n - 1, br)})

    def solution_url(self, puzzle, solution):
        return None


def _rules(grid: np.ndarray, n: int, checked: np.ndarray) -> list[Violation]:
    """The broken rules of an n x n grid (0 = blank), in pzpr.js checklist order: bkDupNum,
    nmDupRow (rows, then columns), then ceNoNum at the `checked` cells holding no digit 1..n
    (every cell for an answer, the givens for a puzzle)."""
    out = []
    br, bc = box_shape(n)
    for r0 in range(0, n, br):
        for c0 in range(0, n, bc):
            cells = [(r, c) for r in range(r0, r0 + br) for c in range(c0, c0 + bc)]
            out += _duplicates(grid, cells, "bkDupNum", f"box at {cell_name(r0, c0)}")
    for i in range(n):
        out += _duplicates(grid, [(i, c) for c in range(n)], "nmDupRow", f"row {i + 1}")
    for i in range(n):
        out += _duplicates(grid, [(r, i) for r in range(n)], "nmDupRow", f"column {i + 1}")
    empty = [(int(r), int(c)) for r, c in zip(*np.nonzero(checked & ((grid < 1) | (grid > n))))]
    if empty:
        out.append(Violation("ceNoNum", f"{len(empty)} cell(s) have no digit 1-{n}",
                             tuple(empty)))
    return out


def _no_candidate(givens: np.ndarray, n: int) -> list[Violation]:
    """Blanks that no digit 1..n can fill: each one's row, column and box hold them all. Any
    answer leaves such a cell empty or repeats a digit there, which `verify` reports."""
    br, bc = box_shape(n)
    digits = set(range(1, n + 1))
    stuck = []
    for r, c in zip(*np.nonzero(givens == 0)):
        box = givens[r // br * br:(r // br + 1) * br, c // bc * bc:(c // bc + 1) * bc]
        seen = {*givens[r].tolist(), *givens[:, c].tolist(), *box.ravel().tolist()}
        if digits <= seen:
            stuck.append((int(r), int(c)))
    if not stuck:
        return []
    whose = "its" if len(stuck) == 1 else "each one's"
    return [Violation("ceNoNum", f"{cells_named(stuck)} can take no digit 1-{n}: {whose} row, "
                                 "column and box hold every one already", tuple(stuck))]


def _no_fill(givens: np.ndarray) -> list[Violation]:
    """The board, when no way to fill its blanks satisfies every rule: `sudoku_solver`'s exact
    search, milliseconds at these sizes (~35 ms for the forum's hardest 9x9 in pure Python,
    ~5 with python-sat). Any answer then repeats a digit or leaves a blank, which `verify`
    reports; ceNoNum is the one code every such answer is sure to earn or to trade for a
    repeat. Only the sizes sudoku has: a Puzzle built in Python may hold another."""
    n = givens.shape[0]
    if n not in SIZES or givens.shape != (n, n) or solve_sudoku(givens, limit=1):
        return []
    return [Violation("ceNoNum", "the givens allow no solution (an exact search finds none)")]


def _duplicates(grid, cells, code, where):
    seen: dict[int, list[tuple[int, int]]] = {}
    for rc in cells:
        v = int(grid[rc])
        if v > 0:
            seen.setdefault(v, []).append(rc)
    # the cells named in the message itself: a box is named by its corner, which may be one of
    # them, and `placed` then would add none ("in box at r1c1" for r1c1 and r2c2)
    return [Violation(code, f"digit {v} appears {len(rcs)} times in {where}: "
                            f"{cells_named(rcs)}", tuple(rcs))
            for v, rcs in sorted(seen.items()) if len(rcs) > 1]
