"""Source readers for `ptrm build-data`: one per file kind, in a small registry.

A reader recognises a file (`sniff`), streams its records as `Item`s (`read`) and turns one
item into a puzzle and its full solution with the type's codec (`decode`). Reading is cheap
and happens in the main process: it finds each record's type and, where the record says so,
its size, so that off-type and off-size records are dropped before any decoding. Decoding is
the expensive part (PPBench moves, a sudoku solver) and runs in worker processes.

Built-in kinds:

  jsonl          PPBench JSONL (`{"pid", "puzzlink_url", "solution_enc", ...}`: the golden file
                 or `full_dataset.jsonl`) and ptrm records (`{"type", "url", "answer", ...}`, as
                 `GridCodec.to_record` writes them; a dataset's own `puzzles.jsonl` also reads
                 back), and maze-csv's rows as JSON (`{"question", "answer"[, "rating"]}`).
                 They may be mixed line by line.
  janko-json     `{"name": "Akari", "data": {id: {"problem", "solution", "source"}}}`
                 (shared/data/janko/<type>_10x10.json; akari = lightup).
  sudoku-lines   one puzzle per line, n*n characters of 1-9 with '.' or '0' for blanks, '#'
                 comment lines; no solutions: the solver fills them and checks uniqueness.
  maze-csv       HRM's Maze-Hard CSV (the same header; `question` and `answer` are n*n
                 characters of `# SGo`, row-major, 900 for 30x30): decoded by the maze codec,
                 which checks that the answer's path is the question's shortest route;
                 `rating` (optional here: HRM's builder ignores it) feeds `--min-difficulty`.
  sudoku-csv     Sudoku-Extreme's CSV (`source,question,answer,rating` header; 81-character
                 strings, '.' blank): the answer is the solution (checked against the givens
                 and the rules); `rating` feeds `--min-difficulty`.
                 The two CSV kinds read every row by its own type (a maze row has '#', 'S' or
                 'G'), so a file that mixes them loses neither; the kind names the file by its
                 first row.

Adding a kind (maze text, ARC JSON, ...) is one class and one `register_reader` call; nothing
else in the pipeline changes:

    class MazeText(SourceReader):
        kind, suffixes = "maze-text", (".txt",)
        def sniff(self, path, head): ...
        def read(self, path, report): yield Item(...)
        def decode(self, item, codec): return puzzle, solution
    register_reader(MazeText())

Readers are tried in registration order; the first whose suffix matches and whose `sniff`
says yes reads the file.
"""

from __future__ import annotations

import csv
import json
import math
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from . import codec as registry
from .codec import ANSWER_FIELDS, PUZZLE_FIELDS, Codec, Puzzle, Solution, cell_name, size_name
from .errors import ParseError, json_problem, load_json

#: puzzle-type spellings that are not a codec's name (PPBench/pzpr.js url ids, janko names)
ALIASES = {"akari": "lightup"}

#: `report(loc, message[, type])`: a record the reader could not read (counted as "malformed"
#: under its type when the record says it, else under none)
Report = Callable[..., None]


class Drop(Exception):
    """A record that decodes but cannot be used; `reason` is the summary's category."""

    def __init__(self, reason: str, message: str):
        super().__init__(message)
        self.reason = reason


def label_problem(codec: Codec, puzzle: Puzzle, solution: Solution) -> tuple[str, str] | None:
    """Why a record's given solution cannot be its label, as (drop reason, message), or None:
    the one rule build-data (which drops the record) and eval (which lists it as unusable)
    apply."""
    shape = np.asarray(solution.grid).shape
    if shape != (puzzle.rows, puzzle.cols):
        return ("malformed", f"solution is {size_name(shape[0], shape[1])}, puzzle is "
                             f"{size_name(puzzle.rows, puzzle.cols)}")
    violations = registry.violations_of(codec, puzzle, solution)
    if violations:
        v = violations[0]
        more = f" (+{len(violations) - 1} more)" if len(violations) > 1 else ""
        return ("invalid solution", f"{v.code}: {v.message}{more}")
    return None


@dataclass
class Item:
    """One record of a source file, read but not decoded."""

    reader: str            # the kind of the reader that produced it (and decodes it)
    type: str              # puzzle type as the record names it (resolve with `resolve_type`)
    payload: Any           # the record: a dict, or a line of text
    loc: int | str         # 1-based line number, or the entry's id
    rows: int | None = None  # grid size when the record states it (else known after decoding)
    cols: int | None = None
    ident: str | None = None  # cheap identity before decoding (the URL as written)
    form: str = ""         # record form within the kind ("ppbench", "ptrm", ...)
    rating: int | None = None  # difficulty the source states (Sudoku-Extreme CSV), if any


class SourceReader:
    """Base class of the readers: override `sniff`, `read` and `decode`."""

    kind: str = ""
    description: str = ""
    suffixes: tuple[str, ...] = ()

    def sniff(self, path: Path, head: str) -> bool:
        """True if this reader reads the file; `head` is its first 64 KiB as text."""
        return False

    def read(self, path: Path, report: Report) -> Iterator[Item]:
        raise NotImplementedError

    def decode(self, item: Item, codec: Codec) -> tuple[Puzzle, Solution]:
        """The puzzle and its full solution. Raise `ParseError` (malformed) or `Drop`."""
        raise NotImplementedError


READERS: dict[str, SourceReader] = {}


def register_reader(reader: SourceReader) -> SourceReader:
    if not reader.kind:
        raise ValueError("a source reader needs a kind")
    READERS[reader.kind] = reader
    return reader


def suffixes() -> set[str]:
    return {s for r in READERS.values() for s in r.suffixes}


def reader_for(path: Path) -> SourceReader | None:
    """The reader that recognises `path`, or None."""
    name = path.name.lower()
    candidates = [r for r in READERS.values() if any(name.endswith(s) for s in r.suffixes)]
    if not candidates:
        return None
    with open(path, "rb") as f:
        head = f.read(65536).decode("utf-8", errors="replace")
    for r in candidates:
        if r.sniff(path, head):
            return r
    return None


def resolve_type(name: str) -> str:
    """A record's type spelling -> the codec name it means (`akari` -> `lightup`)."""
    name = str(name).strip().lower()
    if name in ALIASES:
        return ALIASES[name]
    codecs = registry.registered()
    if name in codecs:
        return name
    for reg in codecs.values():
        if name in reg.codec.url_ids:
            return reg.codec.name
    return name


_URL_SIZE = re.compile(r"\?[^/\s]+/(?:v:[^/\s]*/)?(?:[^/\s\d][^/\s]*/)?(\d+)/(\d+)")


def url_size(url: str) -> tuple[int | None, int | None]:
    """(rows, cols) from a puzz.link URL (`.../<cols>/<rows>/...`), or (None, None)."""
    m = _URL_SIZE.search(url or "")
    return (int(m.group(2)), int(m.group(1))) if m else (None, None)


_URL_TYPE = re.compile(r"^\s*[a-z]+://[^?\s]*\?([^/\s]+)/", re.IGNORECASE)


def url_type(url: str) -> str | None:
    """The installed codec a puzz.link URL's type id names (`akari` -> lightup), or None: no
    URL, or a type id no codec reads."""
    m = _URL_TYPE.match(url or "")
    if not m:
        return None
    name = resolve_type(m.group(1))
    return name if name in registry.registered() else None


# -- jsonl: PPBench records and ptrm records ----------------------------------------------------

class JsonlRecords(SourceReader):
    kind = "jsonl"
    description = "PPBench JSONL (solution_enc moves) and ptrm records (type, url, answer)"
    suffixes = (".jsonl",)

    #: the PPBench fields decoding needs; the rest (metadata, sort keys) stays behind
    _PPBENCH_KEEP = ("pid", "puzzlink_url", "puzzle_url", "solution_enc")

    def sniff(self, path, head):
        return True  # any .jsonl: bad lines are reported one by one

    def read(self, path, report):
        with open(path, encoding="utf-8", errors="replace") as f:
            for n, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:  # without its line end, a cut line reads as cut, not as a control char
                    rec = load_json(line.rstrip("\r\n"))
                except json.JSONDecodeError as e:
                    report(n, json_problem(e))
                    continue
                if not isinstance(rec, dict):
                    report(n, f"expected a JSON object, found {type(rec).__name__}")
                    continue
                if "solution_enc" in rec:
                    pid = rec.get("pid")
                    url = rec.get("puzzlink_url") or rec.get("puzzle_url") or ""
                    if not isinstance(pid, str) or not pid:
                        report(n, "PPBench record without a pid")
                        continue
                    wrong = [k for k in ("solution_enc", "puzzlink_url", "puzzle_url")
                             if k in rec and not isinstance(rec[k], str)]
                    if wrong:  # the codec would fail on them as a "decode error" (a codec bug)
                        report(n, f"PPBench record: {', '.join(wrong)} must be a string",
                               resolve_type(pid))
                        continue
                    rows, cols = _int(rec.get("height")), _int(rec.get("width"))
                    if rows is None or cols is None:
                        rows, cols = url_size(url)
                    yield Item(self.kind, pid, {k: rec[k] for k in self._PPBENCH_KEEP if k in rec},
                               n, rows, cols, url, "ppbench")
                elif "type" in rec and "answer" in rec and ("url" in rec or "text" in rec):
                    url = rec.get("url") or rec.get("text")
                    kind = resolve_type(rec["type"]) if isinstance(rec["type"], str) else None
                    if kind is None or not isinstance(url, str):
                        report(n, "ptrm record: 'type' and 'url' must be strings", kind)
                        continue
                    named = url_type(url)
                    if named is not None and named != kind:  # read as "wrong size" (the other
                        # type's board), or as the codec's "not a sudoku URL" with --sizes any
                        report(n, f"ptrm record: 'type' is {rec['type']!r} but the URL is a "
                                  f"{named} puzzle", kind)
                        continue
                    rows, cols = url_size(url)  # the puzzle's size, as for PPBench records
                    got = _grid_size(rec["answer"])
                    if rows is None:  # a grid text: the answer's size stands for it
                        rows, cols = got
                    elif got != (rows, cols):
                        report(n, f"ptrm record: 'answer' is {size_name(*got)} but the URL's "
                                  f"board is {size_name(rows, cols)}" if got[0] is not None else
                                  "ptrm record: 'answer' must be rows of numbers", kind)
                        continue
                    yield Item(self.kind, rec["type"], {"url": url, "answer": rec["answer"]},
                               n, rows, cols, url, "ptrm")
                elif _is_maze_row(rec.get("question")) and "answer" in rec:
                    side = _square_side(rec["question"])
                    rating = _rating(rec.get("rating"))  # the CSV's columns, as JSON
                    if isinstance(rating, str):
                        report(n, rating, "maze")
                        continue
                    yield Item(self.kind, "maze", {"question": rec["question"],
                                                   "answer": rec["answer"]},
                               n, side, side, rec["question"], "hrm", rating)
                else:
                    report(n, *_not_a_source_record(rec))

    def decode(self, item, codec):
        if item.form == "hrm":
            return decode_maze_row(item.payload["question"], item.payload["answer"], codec)
        return codec.from_record(item.payload)


def _not_a_source_record(rec: dict) -> tuple[str, str | None]:
    """Why a JSON object is not a record this reader yields, and the type it names if any. A
    puzzle without its answer is what `ptrm solve` reads, but a dataset needs the answer: say
    that, not "unrecognised"."""
    named = rec.get("type", rec.get("pid"))
    kind = resolve_type(named) if isinstance(named, str) else None
    if (kind is not None and any(k in rec for k in PUZZLE_FIELDS)
            and not any(k in rec for k in ANSWER_FIELDS)):
        return ("a puzzle without its answer: a dataset record needs 'answer' (ptrm record) "
                "or 'solution_enc' (PPBench); `ptrm solve` reads this one as a puzzle", kind)
    found = ", ".join(map(repr, sorted(rec))) or "no fields"
    return ("unrecognised record: expected a PPBench record (pid, puzzlink_url, solution_enc) or "
            f"a ptrm record (type, url or text, answer); this one has {found}", None)


def _int(v) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _grid_size(answer) -> tuple[int | None, int | None]:
    if isinstance(answer, list) and answer and isinstance(answer[0], list):
        return len(answer), len(answer[0])
    return None, None


# -- janko-json ---------------------------------------------------------------------------------

class JankoJson(SourceReader):
    kind = "janko-json"
    description = "janko-style JSON: {name, data: {id: {problem, solution}}} (akari = lightup)"
    suffixes = (".json",)

    def sniff(self, path, head):
        return '"problem"' in head and '"solution"' in head and '"data"' in head

    def read(self, path, report):
        try:
            doc = load_json(Path(path).read_text(encoding="utf-8", errors="replace"))
        except json.JSONDecodeError as e:
            report(e.lineno, f"not valid JSON: {e.msg} (the whole file is skipped)")
            return
        if not isinstance(doc, dict) or not isinstance(doc.get("data"), (dict, list)):
            report(None, "janko file: expected an object with a 'data' table")
            return
        type_name = doc.get("name") or Path(path).name.split("_")[0]
        data = doc["data"]
        entries = data.items() if isinstance(data, dict) else enumerate(data)
        for key, entry in entries:
            if not (isinstance(entry, dict) and isinstance(entry.get("problem"), str)
                    and isinstance(entry.get("solution"), str)):
                report(key, "janko entry: expected {'problem': text, 'solution': text}")
                continue
            rows = cols = None
            first = entry["problem"].strip().split("\n", 1)[0].split()
            if len(first) >= 2 and first[0].isdigit() and first[1].isdigit():
                rows, cols = int(first[0]), int(first[1])
            yield Item(self.kind, str(type_name), {"problem": entry["problem"],
                                                   "solution": entry["solution"]},
                       str(key), rows, cols, None, "janko")

    def decode(self, item, codec):
        return codec.from_record(item.payload)


# -- sudoku-lines -------------------------------------------------------------------------------

_SUDOKU_LINE = re.compile(r"^[0-9.]+$")


class SudokuLines(SourceReader):
    kind = "sudoku-lines"
    description = "one-line sudoku lists (81 chars, '.'/'0' blank); solved and checked unique"
    suffixes = (".txt",)

    def sniff(self, path, head):
        for line in head.splitlines():
            s = line.strip()
            if not s or s.startswith("#"):
                continue
            tok = re.split(r"[\s,]+", s)[0]
            return len(tok) in (16, 36, 81) and bool(_SUDOKU_LINE.match(tok))
        return False

    def read(self, path, report):
        with open(path, encoding="utf-8", errors="replace") as f:
            for n, line in enumerate(f, 1):
                s = line.strip()
                if not s or s.startswith("#"):
                    continue
                tok = re.split(r"[\s,]+", s)[0]
                size = {16: 4, 36: 6, 81: 9}.get(len(tok))
                if size is None or not _SUDOKU_LINE.match(tok):
                    report(n, f"expected 81 characters of 1-9 with '.' or '0' for blanks, "
                              f"found {tok[:40]!r}")
                    continue
                yield Item(self.kind, "sudoku", tok, n, size, size, tok, "line")

    def decode(self, item, codec):
        from .sudoku_solver import solve

        puzzle = codec.parse(item.payload).puzzle
        try:
            sols = solve(puzzle.clues, limit=2)
        except ValueError as e:
            raise ParseError(str(e)) from None
        if not sols:
            raise Drop("no solution", "the puzzle has no solution")
        if len(sols) > 1:
            raise Drop("not unique", "the puzzle has more than one solution")
        return puzzle, Solution(codec.name, sols[0])


# -- maze-csv and sudoku-csv: HRM's CSVs -------------------------------------------------------

#: the header of HRM's CSVs, Sudoku-Extreme's and Maze-Hard's alike
SUDOKU_CSV_HEADER = ("source", "question", "answer", "rating")


def _is_maze_row(question) -> bool:
    """A maze as HRM writes it: walls '#', start 'S', goal 'G' (a maze without walls still has
    S and G); a Sudoku-Extreme question is digits and '.' only."""
    return isinstance(question, str) and any(ch in question for ch in "#SG")


def _square_side(line: str) -> int | None:
    side = math.isqrt(len(line))
    return side if side * side == len(line) else None


def _csv_fields(line: str) -> list[str]:
    """One CSV line's fields, lower-case and stripped ('"source","question",...' too)."""
    try:
        return [f.strip().lower() for f in next(csv.reader([line]), [])]
    except csv.Error:
        return []


def _hrm_header(head: str) -> bool:
    first = head.lstrip("\ufeff").split("\n", 1)[0].rstrip("\r")
    return tuple(_csv_fields(first)) == SUDOKU_CSV_HEADER


def _hrm_rows(path: Path, report: Report) -> Iterator[tuple[int, list[str]]]:
    """(line, fields) of each non-empty row after the header of an HRM CSV (the reader's
    sniff checked the header). Broken quoting is reported once: nothing after it can be
    trusted."""
    with open(path, encoding="utf-8-sig", errors="replace", newline="") as f:
        rows = csv.reader(f)
        try:
            next(rows, None)
            for row in rows:
                if row and (len(row) > 1 or row[0].strip()):
                    yield rows.line_num, row
        except csv.Error as e:
            report(rows.line_num, f"CSV error: {e} (the rest of the file is skipped)")


def _rating(value) -> int | None | str:
    """An HRM row's rating, maze or sudoku: None when empty (HRM's builders read the column
    only to filter, the maze one never), the number rounded down (`--min-difficulty N` keeps
    rating >= N either way), or why not."""
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, float):
        x, shown = value, repr(value)
    elif isinstance(value, str):
        shown = value.strip()
        if not shown:
            return None
        try:
            x = float(shown)
        except ValueError:
            return f"rating: expected a number, found {shown[:24]!r}"
        shown = repr(shown[:24])
    else:
        return f"rating: expected a number, found {type(value).__name__}"
    if not math.isfinite(x):
        return f"rating: expected a finite number, found {shown}"
    return math.floor(x)


def _hrm_items(path: Path, report: Report) -> Iterator[Item]:
    """The rows of an HRM CSV, each typed by itself: a row whose question has a maze's '#',
    'S' or 'G' is a maze (decoded by maze-csv), any other a sudoku (sudoku-csv). A file that
    mixes them loses neither kind; the type filter (--types, --family) says what is left out."""
    for n, row in _hrm_rows(path, report):
        if tuple(f.strip().lower() for f in row) == SUDOKU_CSV_HEADER:
            report(n, "the header row again, inside the file (files joined with their "
                      "headers?): skipped")
            continue
        maze = any(_is_maze_row(f) for f in row[1:3])
        if len(row) != 4:
            report(n, f"expected 4 fields (source,question,answer,rating), found "
                      f"{len(row)}", "maze" if maze else None)
            continue
        if maze:
            item = _maze_csv_item(n, row)
            if isinstance(item, str):
                report(n, item, "maze")
                continue
            yield item
            continue
        parsed = parse_sudoku_csv_row(row)
        if isinstance(parsed, str):
            report(n, parsed)
            continue
        source, q, a, rating = parsed
        yield Item(SudokuCsv.kind, "sudoku", (q, a, source), n, 9, 9, q, "csv", rating)


def _maze_csv_item(n: int, row: list[str]) -> Item | str:
    """One Maze-Hard row as an item, or why it is malformed (what reading can tell: the
    sizes and the rating; the maze codec checks the cells when decoding)."""
    _, q, a, rating = row  # not stripped: ' ' is a free cell
    side = _square_side(q)
    if side is None or len(a) != len(q):
        return (f"question and answer: expected n*n characters each (900 for 30x30), found "
                f"{len(q)} and {len(a)}")
    r = _rating(rating)
    if isinstance(r, str):
        return r
    return Item(MazeCsv.kind, "maze", {"question": q, "answer": a}, n, side, side, q, "csv", r)


def decode_maze_row(question, answer, codec: Codec) -> tuple[Puzzle, Solution]:
    """A Maze-Hard row ({"question", "answer"}, from the CSV or JSON lines) through the maze
    codec, with the field at fault named: a path already in the question (the columns
    swapped?), then the codec's own checks (a foreign character by its row and column)."""
    if isinstance(question, str) and isinstance(answer, str):
        if _square_side(question) is None or len(answer) != len(question):
            raise ParseError(f"question and answer: expected n*n characters each (900 for "
                             f"30x30), found {len(question)} and {len(answer)}")
        if "o" in question:
            swapped = " (are question and answer swapped?)" if "o" not in answer else ""
            raise ParseError(f"question: holds path cells 'o'; the question is the maze "
                             f"without its path, the answer draws it{swapped}")
    try:
        codec.parse(question)
    except ParseError as e:
        raise ParseError(f"question: {_unplaced(e)}") from None
    except (TypeError, AttributeError):  # not text: the codec's record check says so
        pass
    try:
        return codec.from_record({"question": question, "answer": answer})
    except ParseError as e:
        raise ParseError(f"answer: {_unplaced(e)}" if isinstance(question, str) else str(e)
                         ) from None


def _unplaced(e: ParseError) -> str:
    """A codec message without its "line 1: " (the row's line is the reader's to give)."""
    msg = str(e)
    return re.sub(r"^line \d+: ", "", msg) if e.source is None and e.line is not None else msg


class _HrmCsv(SourceReader):
    """HRM's CSVs (`source,question,answer,rating`): both readers read every row by its own
    type (`_hrm_items`), so the kind only names the file."""

    suffixes = (".csv",)

    def read(self, path, report):
        yield from _hrm_items(path, report)

    def decode(self, item, codec):
        if item.type == "maze":
            return decode_maze_row(item.payload["question"], item.payload["answer"], codec)
        q, a, _ = item.payload
        puzzle = codec.parse(q).puzzle
        grid = np.array([int(ch) for ch in a], dtype=np.int16).reshape(9, 9)
        clash = np.argwhere((puzzle.clues > 0) & (puzzle.clues != grid))
        if len(clash):
            r, c = clash[0]
            raise Drop("invalid solution", f"the answer has {grid[r, c]} where the question "
                       f"gives {puzzle.clues[r, c]} ({cell_name(r, c)}; {len(clash)} cell(s))")
        return puzzle, Solution(codec.name, grid)


class MazeCsv(_HrmCsv):
    """Maze-Hard (`sapientinc/maze-30x30-hard-1k` train.csv / test.csv): Sudoku-Extreme's
    header, one maze a row. The maze codec reads `question` and `answer` (it checks the
    characters and the path); reading finds the rows, their size and rating. HRM's builder
    reads the file with Python's csv module and ignores `rating`; so does this reader, but
    for --min-difficulty: an empty rating is no rating, not a malformed row."""

    kind = "maze-csv"
    description = "HRM Maze-Hard CSV (source,question,answer,rating; '# SGo' rows)"

    def sniff(self, path, head):
        """The header, then a first row (the first one with fields) that is a maze."""
        if not _hrm_header(head):
            return False
        rows = csv.reader(head.lstrip("\ufeff").splitlines()[1:])
        try:
            row = next((r for r in rows if len(r) > 1), [])
        except csv.Error:
            return False
        return _is_maze_row(row[1]) if row else False


# -- sudoku-csv ---------------------------------------------------------------------------------

_QUESTION = re.compile(r"^[1-9.0]{81}$")
_ANSWER = re.compile(r"^[1-9]{81}$")


class SudokuCsv(_HrmCsv):
    """Sudoku-Extreme (`sapientinc/sudoku-extreme` train.csv / test.csv) and anything with its
    header. TRM's builder reads the same fields: `question` with '.' for blanks, `answer` the
    solution, `rating` the difficulty (`--min-difficulty` keeps rating >= N)."""

    kind = "sudoku-csv"
    description = "Sudoku-Extreme CSV (source,question,answer,rating); answers checked, rating kept"

    def sniff(self, path, head):
        return _hrm_header(head)  # after maze-csv, which takes the files of mazes


def parse_sudoku_csv_row(row: list[str]) -> tuple[str, str, str, int | None] | str:
    """(source, question, answer, rating) of one Sudoku-Extreme CSV row, or why it is
    malformed. The question may use '0' for blanks too; it is returned with '.'. An empty
    rating is none, as for a maze row (`_rating`)."""
    if len(row) != 4:
        return f"expected 4 fields (source,question,answer,rating), found {len(row)}"
    source, q, a, rating = (f.strip() for f in row)
    if not _QUESTION.match(q):
        return f"question: expected 81 characters of 1-9 or '.', {_found(q, '123456789.0')}"
    if not _ANSWER.match(a):
        return f"answer: expected 81 digits 1-9, {_found(a, '123456789')}"
    r = _rating(rating)
    return r if isinstance(r, str) else (source, q.replace("0", "."), a, r)


def _found(field: str, allowed: str) -> str:
    """What is wrong with a CSV grid field: its length, else its first foreign character."""
    if len(field) != 81:
        return f"found {len(field)}: {field[:24]!r}"
    i = next(i for i, ch in enumerate(field) if ch not in allowed)
    return f"found {field[i]!r} at character {i + 1}"


for _r in (JsonlRecords(), JankoJson(), SudokuLines(), MazeCsv(), SudokuCsv()):
    register_reader(_r)


def describe() -> list[dict]:
    return [{"kind": r.kind, "suffixes": list(r.suffixes), "description": r.description}
            for r in READERS.values()]


__all__ = ["ALIASES", "Drop", "Item", "READERS", "SUDOKU_CSV_HEADER", "SourceReader", "describe",
           "parse_sudoku_csv_row", "reader_for", "register_reader", "resolve_type", "url_size",
           "url_type"]
