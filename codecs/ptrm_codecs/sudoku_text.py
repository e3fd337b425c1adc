"""Plain-text sudoku grids, as text: which characters are blank cells, and the box-drawn
layouts forums use (`5 3 . | . 7 . | . . .` rows, `------+-------+------` rules, a `+---+`
frame, `=` rules) read into rows of one character a cell. `SudokuCodec.parse_grid` turns the
rows into a puzzle and `SudokuCodec.sniff` recognises a grid with the same rows and blanks, so
that no grid needs a `sudoku` first line for the way its rules or blanks are written.
"""

from __future__ import annotations

from dataclasses import dataclass

from ptrm_cli.errors import ParseError

#: what a blank cell may be written as: the one set both reading and detection use
BLANKS = ".0_-"
#: what box rules are drawn with; `|` inside a row is a rule between two cells
RULE_CHARS = frozenset("-+=|")
BAR = "|"


@dataclass(frozen=True)
class Row:
    """A grid row: its file line, its cells (one character each, bars and spaces gone) and
    where its bars stood, as the number of cells before each."""

    line: int
    cells: str
    bars: tuple[int, ...] = ()


@dataclass(frozen=True)
class Rule:
    """A line of box rules: its file line and the number of grid rows above it."""

    line: int
    after: int


def blanks_help() -> str:
    """The blank characters as an error message lists them: "'.', '0', '_' or '-'"."""
    quoted = [repr(ch) for ch in BLANKS]
    return ", ".join(quoted[:-1]) + " or " + quoted[-1]


def read_rows(lines: list[str], *, first_line: int = 1) -> tuple[list[Row], list[Rule]]:
    """The rows and the rule lines of a grid's text lines (blank lines skipped, but counted in
    the file line numbers; `first_line` is the file line of `lines[0]`)."""
    kinds = [(first_line + k, ln, _kind(ln)) for k, ln in enumerate(lines) if ln.strip()]
    rows = [(at, ln) for at, ln, kind in kinds if kind == "row"]
    either = [(at, ln) for at, ln, kind in kinds if kind == "either"]
    # a line of only '-' is a rule or a row of '-' blanks: a row when the grid needs it to be
    # square (as many rows as the other rows have cells), else a rule
    width = len(_cells(rows[0][1])) if rows else None
    as_rows = width is None or (all(len(_cells(ln)) == width for _, ln in either)
                                and len(rows) + len(either) == width)
    out_rows: list[Row] = []
    out_rules: list[Rule] = []
    for at, ln, kind in kinds:
        if kind == "row" or (kind == "either" and as_rows):
            out_rows.append(Row(at, _cells(ln), _bars(ln)))
        else:
            out_rules.append(Rule(at, len(out_rows)))
    return out_rows, out_rules


def _kind(line: str) -> str:
    """"row" (a character that draws no rule: a cell), "rule" (rule characters with a '+' or
    '=' among them, or bars alone), or "either" (only '-', '|' and spaces: a rule, or a row
    whose cells are all '-' blanks)."""
    drawn = set(line) - set(" \t")
    if not drawn <= RULE_CHARS:
        return "row"
    return "either" if "-" in drawn and drawn <= {"-", BAR} else "rule"


def _cells(line: str) -> str:
    return "".join(line.replace(BAR, " ").split())


def _bars(line: str) -> tuple[int, ...]:
    """The number of cells before each bar of a row."""
    out, cells = [], 0
    for ch in line:
        if ch == BAR:
            out.append(cells)
        elif not ch.isspace():
            cells += 1
    return tuple(out)


def check_boxes(rows: list[Row], rules: list[Rule], n: int, box: tuple[int, int], *,
                source: str | None = None) -> None:
    """Box rules drawn where the boxes do not end mean another puzzle than the one read (a 6x6
    drawn with 3x2 boxes, a cell lost or doubled in a row): an error naming the line. A frame
    (a rule before the first row or after the last, a bar at a row's ends) is always fine, and
    so are rules left out."""
    br, bc = box
    for rule in rules:
        if 0 < rule.after < n and rule.after % br:
            raise ParseError(f"a box rule after row {rule.after}: the boxes of a {n}x{n} sudoku "
                             f"are {br} rows tall", source=source, line=rule.line)
    for row in rows:
        bad = [b for b in row.bars if 0 < b < n and b % bc]
        if bad:
            raise ParseError(f"a '|' after cell {bad[0]}: the boxes of a {n}x{n} sudoku are "
                             f"{bc} cells wide", source=source, line=row.line)
