"""What the built-in grid codecs share: input-format dispatch, dataset records, the token
layout on a family grid, connectivity, and Rich rendering helpers.

A `GridCodec` subclass supplies, per type:
  parse_url(url) / parse_pzprv3(file) / parse_grid(lines)  -> Parsed
  apply_moves(puzzle, moves)                                -> Solution   (PPBench records)
  from_janko(problem, solution)                             -> (Puzzle, Solution)   (optional)
  input_token(puzzle, r, c, value) -> token name   (value = the state's entry, EMPTY if none)
  label_token(puzzle, r, c, value) -> token name
  token_value(puzzle, r, c, name)  -> the Solution value a predicted token means (or EMPTY)
and the rules, transforms and rendering.
"""

from __future__ import annotations

import json
from collections import deque

import numpy as np
from rich.text import Text

from ptrm_cli import codec as registry
from ptrm_cli.codec import ANSWER_FIELDS, PUZZLE_FIELDS, Codec, Family, Parsed, Puzzle, Solution, \
    cell_name
from ptrm_cli.errors import OtherType, ParseError, PtrmError, VocabError, json_problem

from . import formats


class GridCodec(Codec):
    #: ("akari",) etc.; the first is what `to_url` writes
    url_ids: tuple[str, ...] = ()
    #: pzprv3 files write one size line (sudoku)
    pzprv3_one_size_line: bool = False

    # -- input dispatch --------------------------------------------------------------------
    def parse(self, text: str, *, source: str | None = None) -> Parsed:
        stripped = text.strip()
        if not stripped:
            raise ParseError("empty input: expected a puzz.link URL, pzprv3 text or a grid",
                             source=source)
        first = stripped.splitlines()[0].strip()
        first_line = 1 + text[:text.index(first)].count("\n")  # blank lines before it count
        if first.startswith("pzprv3") or "?pzprv3/" in first:
            p = formats.parse_pzprv3(text, source=source, one_size_line=self.pzprv3_one_size_line)
            pid = p.pid.lower()  # type names match as --codec does, whatever their case
            if pid != self.name and pid not in self.url_ids:  # "akari": lightup's other name
                raise self._other_type("pzprv3 text", p.pid, source=source, line=p.pid_line)
            parsed = self.parse_pzprv3(p, source=source)
            parsed.format = "pzprv3"
            return parsed
        if "?" in first and "/" in first:
            more = [k for k, ln in enumerate(stripped.splitlines()) if ln.strip()][1:]
            if more:  # e.g. two URLs in one file, maybe a blank line apart
                raise ParseError("expected one puzzle: a URL, then more text on this line "
                                 "(one puzzle per file)", source=source,
                                 line=first_line + more[0])
            url = formats.parse_url(first, source=source)
            if url.urlid.lower() not in self.url_ids:
                raise self._other_type("URL", url.urlid, source=source)
            parsed = self.parse_url(url, source=source)
            parsed.format = "url"
            return parsed
        lines = [ln.rstrip() for ln in stripped.splitlines()]
        offset = first_line
        head = lines[0].strip().lower()
        named = registry.type_named(head)
        if head == self.name or head in self.url_ids:  # an optional line naming the type
            lines, offset = lines[1:], offset + 1
        elif named is not None:
            raise ParseError(f"the first line names the type {named.name!r}, but the puzzle is "
                             f"read as {self.name!r}", source=source, line=offset,
                             hint="drop --codec, or the first line")
        parsed = self.parse_grid(lines, source=source, first_line=offset)
        parsed.format = "grid"
        return parsed

    def _other_type(self, what: str, written: str, *, source: str | None,
                    line: int | None = None) -> OtherType:
        """The input names another type than this codec's: one message for URLs and pzprv3
        text, naming the type as ptrm does ("akari" is lightup); ptrm adds the hint for
        whatever chose this codec (`--codec`, a record's type field)."""
        other = registry.type_named(written)
        name = other.name if other is not None else written
        return OtherType(f"{what} is a {name!r} puzzle, not {self.name!r}", source=source,
                         line=line, found=name)

    def parse_url(self, url: formats.Url, *, source: str | None = None) -> Parsed:
        raise ParseError(f"{self.name}: puzz.link URLs are not supported", source=source)

    def parse_pzprv3(self, p: formats.Pzprv3, *, source: str | None = None) -> Parsed:
        raise ParseError(f"{self.name}: pzprv3 text is not supported", source=source)

    def parse_grid(self, lines: list[str], *, source: str | None = None,
                   first_line: int = 1) -> Parsed:
        raise ParseError(f"{self.name}: plain grids are not supported", source=source)

    # -- dataset records -------------------------------------------------------------------
    def from_record(self, record: dict, *, source: str | None = None,
                    line: int | None = None) -> tuple[Puzzle, Solution | None]:
        """PPBench JSONL ({"pid", "puzzlink_url", "solution_enc", ...}), janko entries
        ({"problem", "solution"}) and ptrm records ({"type", "url", "answer"}); and a puzzle
        to solve, a record of these without its answer ({"type", "url"}): its solution is
        None, or what its text holds (pzprv3 answers). Only `ptrm solve` hands over the last
        kind: build-data and eval need the answer, and their readers say so."""
        if "solution_enc" in record:
            url = formats.record_url(record)
            if "puzzlink_url" not in record and "puzzle_url" not in record:
                raise ParseError("PPBench record without its puzzle: no 'puzzlink_url' (or "
                                 "'puzzle_url') field", source=source, line=line)
            _check_text(url, "PPBench record: 'puzzlink_url'", source=source, line=line)
            puzzle = self.parse(url, source=source).puzzle
            sol = formats.decode_solution(record, source=source, line=line)
            try:
                moves = [formats.parse_moves(m) for m in sol["moves_full"]]
            except (ValueError, KeyError, TypeError) as e:
                raise ParseError(f"PPBench solution moves do not decode: {e}", source=source,
                                 line=line) from None
            solution = self.apply_moves(puzzle, moves)
            puzzle.meta.update({"pid": record.get("pid"), "url": url})
            return puzzle, solution
        if "problem" in record and "solution" in record:
            for key in ("problem", "solution"):
                _check_text(record[key], f"janko entry: {key!r}", source=source, line=line)
            return self.from_janko(record["problem"], record["solution"], source=source)
        if ("url" in record or "text" in record) and "answer" in record:
            # `text`: a line of a built dataset's puzzles.jsonl (its URL, or pzprv3 text)
            field = "url" if "url" in record else "text"
            _check_text(record[field], f"ptrm record: {field!r}", source=source, line=line)
            puzzle = self.parse(record[field], source=source).puzzle
            try:
                grid = np.asarray(record["answer"], dtype=np.int16)
            except (TypeError, ValueError, OverflowError):
                grid = None
            if grid is None or grid.shape != (puzzle.rows, puzzle.cols):
                found = "x".join(map(str, grid.shape)) if grid is not None and grid.ndim == 2 \
                    else "no grid of integers"
                raise ParseError(f"ptrm record: 'answer' must be {puzzle.rows} rows of "
                                 f"{puzzle.cols} integers, like the puzzle; found {found}",
                                 source=source, line=line)
            return puzzle, Solution(self.name, grid)
        field = next((k for k in PUZZLE_FIELDS if k in record), None)
        if field is not None and not any(k in record for k in ANSWER_FIELDS):
            _check_text(record[field], f"record: {field!r}", source=source, line=line)
            parsed = self.parse(record[field], source=source)
            return parsed.puzzle, parsed.solution
        found = ", ".join(map(repr, sorted(record))) or "no fields"
        raise ParseError(f"unrecognised record: expected {RECORD_SHAPES}; this one has {found}",
                         source=source, line=line)

    def apply_moves(self, puzzle: Puzzle, moves: list[list[formats.Move]]) -> Solution:
        raise PtrmError(f"{self.name}: PPBench moves are not supported")

    def from_janko(self, problem: str, solution: str, *,
                   source: str | None = None) -> tuple[Puzzle, Solution]:
        raise ParseError(f"{self.name}: janko records are not supported", source=source)

    def to_record(self, puzzle: Puzzle, solution: Solution, **extra) -> dict:
        """A ptrm record: what generators write and `from_record` reads back."""
        return {"type": self.name, "url": self.to_url(puzzle),
                "answer": solution.grid.astype(int).tolist(), **extra}

    # -- tokens ----------------------------------------------------------------------------
    def input_token(self, puzzle: Puzzle, r: int, c: int, value: int) -> str:
        raise NotImplementedError

    def label_token(self, puzzle: Puzzle, r: int, c: int, value: int) -> str:
        raise NotImplementedError

    def token_value(self, puzzle: Puzzle, r: int, c: int, name: str) -> int:
        raise NotImplementedError

    def _fit(self, puzzle: Puzzle, family: Family | None) -> Family:
        family = family or self.family()
        if puzzle.rows > family.rows or puzzle.cols > family.cols:
            # rows and columns spelled out: URLs give the size columns first
            raise PtrmError(f"a {self.name} puzzle of {puzzle.rows} rows x {puzzle.cols} columns "
                            f"does not fit the {family.name} family's grid of {family.rows} rows "
                            f"x {family.cols} columns")
        return family

    def _tokens(self, puzzle: Puzzle, family: Family | None, name_of) -> np.ndarray:
        family = self._fit(puzzle, family)
        out = np.zeros((family.rows, family.cols), dtype=np.int64)  # 0 = pad
        for r in range(puzzle.rows):
            for c in range(puzzle.cols):
                name = name_of(r, c)
                try:
                    out[r, c] = family.vocab.id(name)
                except VocabError:
                    raise PtrmError(f"{self.name} cell {cell_name(r, c)}: {name!r} is outside the "
                                    f"{family.name} vocabulary ({self.token_range_help()})") from None
        return out.reshape(-1)

    def token_range_help(self) -> str:
        return "see `ptrm codecs`"

    def encode(self, puzzle, state=None, family=None):
        grid = state.grid if state is not None else None
        return self._tokens(puzzle, family, lambda r, c: self.input_token(
            puzzle, r, c, self.EMPTY if grid is None else int(grid[r, c])))

    def encode_label(self, puzzle, solution, family=None):
        return self._tokens(puzzle, family,
                            lambda r, c: self.label_token(puzzle, r, c, int(solution.grid[r, c])))

    def decode(self, puzzle, tokens, family=None):
        family = self._fit(puzzle, family)
        tokens = np.asarray(tokens).reshape(family.rows, family.cols)
        vocab = family.vocab
        grid = np.full((puzzle.rows, puzzle.cols), self.EMPTY, dtype=np.int16)
        for r in range(puzzle.rows):
            for c in range(puzzle.cols):
                t = int(tokens[r, c])
                if 0 <= t < len(vocab):
                    grid[r, c] = self.token_value(puzzle, r, c, vocab.tokens[t])
        return Solution(self.name, grid)


#: the record shapes `from_record` reads, as its error lists them
RECORD_SHAPES = ("a PPBench record (pid, puzzlink_url, solution_enc), a janko entry (problem, "
                 "solution), a ptrm record (type, url or text, answer: a dataset's "
                 "puzzles.jsonl line is one) or a puzzle to solve (type, url or text; no answer)")


def _check_text(value, what: str, *, source: str | None, line: int | None) -> None:
    """A record field that holds puzzle text (a URL, a janko grid) must be a non-empty string."""
    if not isinstance(value, str) or not value.strip():
        raise ParseError(f"{what} must be puzzle text (a string), found {json.dumps(value)[:40]}",
                         source=source, line=line)


# -- grid helpers ----------------------------------------------------------------------------

NEIGHBOURS4 = ((-1, 0), (1, 0), (0, -1), (0, 1))


def components(mask: np.ndarray, connected=None) -> list[list[tuple[int, int]]]:
    """4-connected components of the True cells, each as a list of (r, c) in BFS order from its
    first cell in reading order. `connected(a, b)` may veto an edge between neighbours."""
    rows, cols = mask.shape
    seen = np.zeros_like(mask, dtype=bool)
    out = []
    for r0 in range(rows):
        for c0 in range(cols):
            if not mask[r0, c0] or seen[r0, c0]:
                continue
            comp, queue = [], deque([(r0, c0)])
            seen[r0, c0] = True
            while queue:
                r, c = queue.popleft()
                comp.append((r, c))
                for dr, dc in NEIGHBOURS4:
                    nr, nc = r + dr, c + dc
                    if (0 <= nr < rows and 0 <= nc < cols and mask[nr, nc] and not seen[nr, nc]
                            and (connected is None or connected((r, c), (nr, nc)))):
                        seen[nr, nc] = True
                        queue.append((nr, nc))
            out.append(comp)
    return out


def blocks_2x2(mask: np.ndarray) -> list[tuple[int, int]]:
    """Top-left corners of 2x2 blocks whose four cells are all True."""
    m = mask[:-1, :-1] & mask[1:, :-1] & mask[:-1, 1:] & mask[1:, 1:]
    return [(int(r), int(c)) for r, c in zip(*np.nonzero(m))]


def read_janko_grid(text: str, *, source: str | None = None) -> tuple[int, int, list[list[str]]]:
    """Janko-style text: a "rows cols" line, then rows of space-separated tokens."""
    lines = [ln.split() for ln in text.strip().splitlines()]
    try:
        rows, cols = int(lines[0][0]), int(lines[0][1])
    except (IndexError, ValueError):
        raise ParseError("janko grid: expected 'rows cols' on the first line", source=source, line=1) from None
    if rows < 1 or cols < 1:  # 0 0 was an empty puzzle that reached the model; -1 numpy's error
        raise ParseError(f"janko grid: size {rows} {cols}: expected rows and cols >= 1",
                         source=source, line=1)
    body = lines[1:]
    if len(body) < rows or any(len(body[r]) != cols for r in range(rows)):
        raise ParseError(f"janko grid: expected {rows} lines of {cols} entries", source=source)
    return rows, cols, body


def boxed(cells: list[list[Text | str]], *, title: str | None = None, width: int = 2,
          vbars: set[int] = frozenset(), hbars: set[int] = frozenset()) -> Text:
    """A grid in box-drawing characters with heavier rules after the given column/row indices
    (sudoku boxes); each cell is padded to `width` columns."""
    rows, cols = len(cells), len(cells[0])

    def rule(left: str, mid: str, bar: str, right: str) -> str:
        s = left
        for c in range(cols):
            s += "─" * (width + 1)
            if c < cols - 1:
                s += bar if c in vbars else "─"
        return s + right + "\n"

    out = Text()
    if title:
        out.append(title + "\n", style="bold")
    out.append(rule("┌", "─", "┬", "┐"), style="dim")
    for r in range(rows):
        out.append("│", style="dim")
        for c in range(cols):
            cell = cells[r][c]
            cell = cell if isinstance(cell, Text) else Text(str(cell))
            pad = max(0, width - cell.cell_len)
            out.append(" " * (pad // 2 + 1))
            out.append(cell)
            out.append(" " * (pad - pad // 2))
            if c < cols - 1:
                out.append("│" if c in vbars else " ", style="dim")
        out.append("│\n", style="dim")
        if r in hbars and r < rows - 1:
            out.append(rule("├", "─", "┼", "┤"), style="dim")
    out.append(rule("└", "─", "┴", "┘").rstrip("\n"), style="dim")
    return out


def load_jsonl(path, *, on_error=None):
    """Yield (line number, record) from a JSONL file; malformed lines go to `on_error(line, msg)`
    (or raise ParseError when no handler is given)."""
    with open(path) as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:  # without its line end, a cut line reads as cut, not as a control char
                yield n, json.loads(line.rstrip("\r\n"))
            except json.JSONDecodeError as e:
                if on_error is None:
                    raise ParseError(json_problem(e), source=str(path), line=n) from None
                on_error(n, json_problem(e))
