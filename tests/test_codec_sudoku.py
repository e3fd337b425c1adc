"""The sudoku codec on PPBench's 15 golden sudoku puzzles, plus small hand-made boards."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from ptrm_cli import codec as registry
from ptrm_cli import dihedral
from ptrm_cli.codec import Puzzle, Solution, cells_named
from ptrm_cli.errors import ParseError, PtrmError
from ptrm_codecs import formats

import pzpr_oracle
from fixtures_models import solve_cli

RECORDS = pzpr_oracle.golden_params(["sudoku"])


@pytest.fixture(scope="module")
def sudoku(installed_codec):
    return installed_codec("sudoku")


def moves_grid(record) -> np.ndarray:
    """The board PPBench's moves produce, replayed here independently of the codec: each move
    is `mouse,left,X,Y;key,D`, a click on cell (Y//2, X//2) and the digit D."""
    url = formats.parse_url(formats.record_url(record))
    values, _ = formats.decode_number16(url.body, url.rows * url.cols)
    grid = np.array([max(v, 0) for v in values]).reshape(url.rows, url.cols)
    for move in formats.decode_solution(record)["moves_full"]:
        click, key = move.split(";")
        _, button, x, y = click.split(",")
        assert button == "left" and key.startswith("key,")
        grid[int(float(y)) // 2, int(float(x)) // 2] = int(key.split(",")[1])
    return grid


def test_golden_has_15_sudoku():
    if not pzpr_oracle.find_golden()[0]:
        pytest.skip(pzpr_oracle.find_golden()[1])
    assert len(pzpr_oracle.golden_by_type("sudoku")) == 15


@pytest.mark.parametrize("record", RECORDS)
def test_url_tokens_decode_is_the_moves_solution(record, sudoku):
    expected = moves_grid(record)
    assert sorted(set(expected.reshape(-1).tolist())) == list(range(1, 10))
    url = formats.record_url(record)
    parsed = sudoku.parse(url)
    assert parsed.format == "url" and parsed.solution is None
    puzzle = parsed.puzzle
    givens = puzzle.clues > 0
    assert (puzzle.clues[givens] == expected[givens]).all()

    _, solution = sudoku.from_record(record)
    assert (solution.grid == expected).all()
    x = sudoku.encode(puzzle)
    y = sudoku.encode_label(puzzle, solution)
    vocab = sudoku.family().vocab
    assert x.shape == y.shape == (100,)
    # 9x9 sits top-left of the 10x10 family grid; row 9 and column 9 are pad
    assert (x.reshape(10, 10)[9] == 0).all() and (x.reshape(10, 10)[:, 9] == 0).all()
    assert {vocab.name(int(t)) for t in x[x > 0]} <= {"sudoku.blank"} | {
        f"sudoku.given.{d}" for d in range(1, 10)}
    assert sudoku.decode(puzzle, y) == Solution("sudoku", expected)
    assert sudoku.verify(puzzle, solution) == []


@pytest.mark.parametrize("record", RECORDS)
def test_single_cell_changes_break_the_right_rule(record, sudoku):
    puzzle, solution = sudoku.from_record(record)
    rng = np.random.default_rng(int(record["solution_enc"][:8].encode().hex(), 16) % 2**32)
    free = [tuple(rc) for rc in np.argwhere(puzzle.clues == 0)]
    for i in rng.choice(len(free), size=8, replace=False):
        r, c = free[i]
        grid = solution.grid.copy()
        grid[r, c] = rng.choice([d for d in range(1, 10) if d != grid[r, c]])
        found = sudoku.verify(puzzle, Solution("sudoku", grid))
        # the new digit is already in its box, its row and its column
        assert [v.code for v in found] == ["bkDupNum", "nmDupRow", "nmDupRow"]
        assert all((r, c) in v.cells for v in found)
        # messages count from 1 (r1c1 is the top-left cell), the cells stay indices
        box = f"box at r{r // 3 * 3 + 1}c{c // 3 * 3 + 1}"
        assert [v.message.split(" in ")[1].split(": ")[0] for v in found] == \
            [box, f"row {r + 1}", f"column {c + 1}"]
        # ... and name the cells themselves: a box's corner may be one of them
        assert all(v.message.endswith(": " + cells_named(v.cells)) for v in found)

        grid = solution.grid.copy()
        grid[r, c] = 0
        found = sudoku.verify(puzzle, Solution("sudoku", grid))
        assert [v.code for v in found] == ["ceNoNum"] and found[0].cells == ((r, c),)

    # swapping two free cells of one box in different rows and columns keeps every box whole,
    # so the first broken rule is a row's
    for r0 in range(0, 9, 3):
        for c0 in range(0, 9, 3):
            box = [(r, c) for r in range(r0, r0 + 3) for c in range(c0, c0 + 3) if not puzzle.clues[r, c]]
            pair = next(((a, b) for a in box for b in box if a[0] != b[0] and a[1] != b[1]), None)
            if pair is None:
                continue
            a, b = pair
            grid = solution.grid.copy()
            grid[a], grid[b] = grid[b], grid[a]
            found = sudoku.verify(puzzle, Solution("sudoku", grid))
            assert found and found[0].code == "nmDupRow"
            assert {v.code for v in found} == {"nmDupRow"}


@pytest.mark.parametrize("record", RECORDS)
def test_every_format_round_trips(record, sudoku):
    puzzle, solution = sudoku.from_record(record)
    key = sudoku.key(puzzle)

    url = sudoku.to_url(puzzle)
    assert url.startswith("https://puzz.link/p?sudoku/9/9/")
    assert url.split("?", 1)[1] == formats.record_url(record).split("?", 1)[1].rstrip("/")
    again = sudoku.parse(url)
    assert again.format == "url" and (again.puzzle.clues == puzzle.clues).all()

    text = sudoku.to_pzprv3(puzzle, solution)
    again = sudoku.parse(text)
    assert again.format == "pzprv3" and sudoku.key(again.puzzle) == key
    assert again.solution == solution
    blank = sudoku.parse(sudoku.to_pzprv3(puzzle))
    assert sudoku.key(blank.puzzle) == key

    line = sudoku.to_line(puzzle)
    assert len(line) == 81
    again = sudoku.parse(line)
    assert again.format == "grid" and sudoku.key(again.puzzle) == key
    assert registry.detect(line) is sudoku
    assert sudoku.parse(line.replace(".", "0")).puzzle.clues.tolist() == puzzle.clues.tolist()

    nine = "\n".join(line[9 * r:9 * r + 9] for r in range(9))
    assert sudoku.key(sudoku.parse(nine).puzzle) == key
    spaced = "sudoku\n" + "\n".join(" ".join(line[9 * r:9 * r + 9]) for r in range(9))
    assert sudoku.key(sudoku.parse(spaced).puzzle) == key

    pzv = "http://pzv.jp/p.html?" + url.split("?", 1)[1]
    assert sudoku.key(sudoku.parse(pzv).puzzle) == key


@pytest.mark.parametrize("record", RECORDS)
def test_transforms_verify_and_invert(record, sudoku):
    puzzle, solution = sudoku.from_record(record)
    for t in range(dihedral.COUNT):
        p2, s2 = sudoku.transform(puzzle, solution, t)
        assert sudoku.verify(p2, s2) == [], dihedral.NAMES[t]
        given = p2.clues > 0
        assert (s2.grid[given] == p2.clues[given]).all()
        p3, s3 = sudoku.transform(p2, s2, dihedral.INVERSE[t])
        assert (p3.clues == puzzle.clues).all() and s3 == solution


def test_trajectory_fills_the_blank_cells_in_reading_order(sudoku):
    line = "53..7....6..195....98....6.8...6...34..8.3..17...2...6.6....28....419..5....8..79"
    puzzle = sudoku.parse(line).puzzle
    grid = np.zeros((9, 9), dtype=np.int16)
    solution = Solution("sudoku", grid)
    solved = [int(ch) for ch in
              "534678912672195348198342567859761423426853791713924856961537284287419635345286179"]
    solution.grid[:] = np.array(solved).reshape(9, 9)
    assert sudoku.verify(puzzle, solution) == []
    cells = sudoku.required_cells(puzzle, solution)
    assert len(cells) == int((puzzle.clues == 0).sum()) and cells == sorted(cells)
    state = sudoku.trajectory(puzzle, solution, 5)
    assert [tuple(rc) for rc in np.argwhere(state.grid > 0)] == cells[:5]


def test_small_sizes(sudoku):
    puzzle = sudoku.parse("1.3.\n..1.\n.1..\n4...").puzzle
    assert (puzzle.rows, puzzle.cols) == (4, 4)
    solution = Solution("sudoku", np.array([[1, 2, 3, 4], [3, 4, 1, 2], [2, 1, 4, 3], [4, 3, 2, 1]]))
    assert sudoku.verify(puzzle, solution) == []
    assert sudoku.parse(sudoku.to_url(puzzle)).puzzle.clues.tolist() == puzzle.clues.tolist()
    six = sudoku.parse("." * 36).puzzle
    assert (six.rows, six.cols) == (6, 6)
    with pytest.raises(PtrmError, match="3x2 boxes"):
        sudoku.transform(six, None, 1)


#: a cell of the drawn board: a given `[5]`, a filled digit `5`, or `·` (`.` where drawn in ASCII)
BOARD_CELL = re.compile(r"\[(\d)\]|(\d)|[·.]")


def read_board(text: str) -> tuple[np.ndarray, np.ndarray]:
    """(given mask, digits, 0 for a blank) of the board in `render`'s text without styles, as
    a file or a pipe gets it; read here independently of the codec."""
    rows = [ln for ln in text.splitlines() if ln[:1] in "│|"]
    givens, digits = [], []
    for ln in rows:
        cells = [m.groups() for m in BOARD_CELL.finditer(ln)]
        givens.append([g is not None for g, _ in cells])
        digits.append([int(g or d or 0) for g, d in cells])
    return np.array(givens, dtype=bool), np.array(digits)


def plain(renderable) -> str:
    """What a file gets: Rich without a terminal drops every style."""
    import io

    from rich.console import Console

    out = io.StringIO()
    Console(file=out, width=200).print(renderable)
    return out.getvalue()


@pytest.mark.parametrize("line", [
    "53..7....6..195....98....6.8...6...34..8.3..17...2...6.6....28....419..5....8..79",
    "1.3...1..1..4...",
])
def test_givens_stay_marked_in_plain_text(sudoku, line):
    """Givens were bold and filled digits cyan, and nothing else: in a file or a pipe the two
    looked the same. A given is drawn `[5]`; a filled digit bare; a blank cell stays `·`."""
    from ptrm_cli import sudoku_solver

    puzzle = sudoku.parse(line).puzzle
    (full,) = sudoku_solver.solve(puzzle.clues, limit=1)
    partial = full.astype(np.int16)
    blank = tuple(np.argwhere(puzzle.clues == 0)[0])
    partial[blank] = 0  # a cell the solver left empty
    solution = Solution("sudoku", partial)
    givens, digits = read_board(plain(sudoku.render(puzzle, solution)))
    assert givens.shape == puzzle.clues.shape
    assert (givens == (puzzle.clues > 0)).all()
    assert (digits == solution.grid).all()
    givens, digits = read_board(plain(sudoku.render(puzzle)))  # the puzzle alone
    assert (givens == (puzzle.clues > 0)).all() and (digits == puzzle.clues).all()


@pytest.mark.parametrize("text, match", [
    ("1234", "16, 36 or 81"),
    ("." * 80, "16, 36 or 81"),
    ("\n".join(["123456789"] * 8 + ["12345678"]), "expected 9 cells"),
    ("." * 80 + "x", "expected 1..9"),
    ("https://puzz.link/p?sudoku/9/8/g", "not square"),
    ("https://puzz.link/p?sudoku/9/9/.zzzz", "'?' given"),
    ("pzprv3\nsudoku\n9\n" + ". " * 9 + "\n", "expected 9 entries|sudoku givens"),
    # on its line; a long one overflowed int16 and was reported as a bug in the codec
    ("pzprv3\nsudoku\n4\n" + "99999 . . . \n" + ". . . . \n" * 3,
     r"bad.txt:4: sudoku given 99999 is outside 1\.\.4"),
    ("pzprv3\nsudoku\n4\n" + ". . . . \n" + ". 5 . . \n" + ". . . . \n" * 2,
     r"bad.txt:5: sudoku given 5 is outside 1\.\.4"),
])
def test_bad_sudoku_text_is_a_clear_parse_error(sudoku, text, match):
    with pytest.raises(ParseError, match=match):
        sudoku.parse(text, source="bad.txt")


def test_text_after_a_grid_is_pointed_at(sudoku):
    """It said "expected 4, 6 or 9 grid lines, found 10" at the grid's first line."""
    grid = "\n".join([".4...5..."] * 9)
    with pytest.raises(ParseError, match=r"bad.txt:12: text after the 9x9 grid"):
        sudoku.parse("sudoku\n" + grid + "\n\ngarbage", source="bad.txt")
    with pytest.raises(ParseError, match="expected 4, 6 or 9 grid lines, found 5"):
        sudoku.parse("\n".join(["123456789"] * 5), source="bad.txt")


def test_pzprv3_answers_are_checked(sudoku):
    """The answer section holds digits 1..n or '.'/marks, each optionally with pencil marks;
    anything else is an error naming its line, as for the givens."""
    puzzle = sudoku.parse("https://puzz.link/p?sudoku/9/9/1o6h84k76h9j64i7h4k8h8i53j5h71k14h6o2"
                          ).puzzle
    lines = sudoku.to_pzprv3(puzzle).splitlines()
    first = 3 + 9  # pzprv3, sudoku, size, 9 givens: then the answers (0-based)
    blank = next(c for c in range(9) if puzzle.clues[0, c] == 0)

    def with_answer(tok: str) -> str:
        row = lines[first].split()
        row[blank] = tok
        return "\n".join(lines[:first] + [" ".join(row) + " "] + lines[first + 1:]) + "\n"

    assert sudoku.parse(with_answer("7")).solution.grid[0, blank] == 7
    for ok in ("+", "c", ".[1,,3,]", "+[,,,9]"):  # dots, done marks, pencil marks: no digit
        assert sudoku.parse(with_answer(ok)).solution.grid[0, blank] == 0
    for bad in ("X", "0", "10", "7[", "#"):
        with pytest.raises(ParseError, match=rf"sudoku answer '{re.escape(bad)}'") as err:
            sudoku.parse(with_answer(bad), source="f.txt")
        assert str(err.value).startswith(f"f.txt:{first + 1}:")


# -- givens that can never be solved (`puzzle_violations`) -------------------------------------

def _valid_puzzles(sudoku) -> list:
    """Every sudoku at hand that is known to solve: the golden set, the codec's example and the
    one in examples/."""
    from pathlib import Path

    puzzles = [sudoku.from_record(rec)[0] for rec in pzpr_oracle.golden_by_type("sudoku")]
    puzzles.append(sudoku.parse(sudoku.example).puzzle)
    bundled = Path(__file__).resolve().parents[1] / "examples" / "puzzles" / "sudoku.txt"
    if bundled.exists():
        puzzles.append(sudoku.parse(bundled.read_text(), source=str(bundled)).puzzle)
    return puzzles


def _clashing(puzzle, unit: str):
    """The puzzle with one more given: at a blank cell, the digit a given of the same `unit`
    ("row", "column", "box") already holds; (the new puzzle, the new cell, the given's cell)."""
    from ptrm_codecs.sudoku import box_shape

    n = puzzle.rows
    br, bc = box_shape(n)
    for r, c in np.argwhere(puzzle.clues == 0).tolist():
        if unit == "row":
            others = [(r, k) for k in range(n)]
        elif unit == "column":
            others = [(k, c) for k in range(n)]
        else:
            r0, c0 = r // br * br, c // bc * bc
            others = [(a, b) for a in range(r0, r0 + br) for b in range(c0, c0 + bc)
                      if a != r and b != c]  # neither its row nor its column: the box alone
        given = next((rc for rc in others if puzzle.clues[rc]), None)
        if given is not None:
            clues = puzzle.clues.copy()
            clues[r, c] = clues[given]
            return Puzzle("sudoku", n, n, clues), (r, c), given
    raise AssertionError(f"no blank cell shares a {unit} with a given")


def test_valid_sudokus_break_no_rule_by_their_givens(sudoku):
    """`ptrm solve` checks puzzle_violations before it loads a model: no puzzle that solves may
    be refused there (the exact solver says each one solves)."""
    from ptrm_cli.sudoku_solver import solve

    for puzzle in _valid_puzzles(sudoku):
        assert solve(puzzle.clues, limit=1), "a test puzzle that does not solve"
        assert sudoku.puzzle_violations(puzzle) == []


@pytest.mark.parametrize("unit", ["row", "column", "box"])
def test_clashing_givens_are_found_by_the_verifiers_own_rules(sudoku, unit):
    """A digit given twice in a row, column or box can never be solved: puzzle_violations says
    so with exactly what `verify` says of the givens (its codes, its words, the cells)."""
    from ptrm_cli.sudoku_solver import solve

    for puzzle in _valid_puzzles(sudoku):
        clash, cell, given = _clashing(puzzle, unit)
        found = sudoku.puzzle_violations(clash)
        assert found, (unit, cell, given)
        assert not solve(clash.clues, limit=1)  # the exact solver agrees: no solution
        # verify with nothing entered: the same clashes, plus ceNoNum for every blank
        said = sudoku.verify(clash, Solution("sudoku", np.zeros_like(clash.clues)))
        assert found == [v for v in said if v.code != "ceNoNum"]
        code = "bkDupNum" if unit == "box" else "nmDupRow"
        assert any(v.code == code and {cell, given} <= set(v.cells)
                   and cells_named([cell, given]) in v.message for v in found), found


def test_a_given_outside_the_digits_is_found(sudoku):
    """The readers refuse a given above n; a Puzzle built in Python may hold one, and no answer
    can change it: ceNoNum at that cell, as `verify` says of any answer."""
    from ptrm_cli.sudoku_solver import solve

    puzzle = sudoku.parse(sudoku.example).puzzle
    answer = Solution("sudoku", solve(puzzle.clues, limit=1)[0])
    r, c = np.argwhere(puzzle.clues == 0)[0].tolist()
    clues = puzzle.clues.copy()
    clues[r, c] = puzzle.rows + 1
    odd = Puzzle("sudoku", puzzle.rows, puzzle.cols, clues)
    found = sudoku.puzzle_violations(odd)
    assert found == sudoku.verify(odd, answer)  # the one cell the answer cannot mend
    assert [v.cells for v in found] == [((r, c),)]
    # it holds a number, just not a digit of this size: "have no digit" alone said it was blank
    assert found[0].message == f"1 cell(s) have no digit 1-{puzzle.rows}"


def test_solve_stops_on_clashing_givens_before_the_model(sudoku, tmp_path, monkeypatch):
    """It loaded the model and ran every rollout to report then that no answer verifies: now
    the clash is said at once, as an input error naming the cells."""
    from ptrm_cli import solver
    from ptrm_cli.codec import placed

    def no_model(*args, **kwargs):
        raise AssertionError("a model was loaded for a sudoku whose givens clash")

    monkeypatch.setattr(solver, "load_model", no_model)
    monkeypatch.setattr(solver, "solve_puzzle", no_model)
    clash, cell, given = _clashing(sudoku.parse(sudoku.example).puzzle, "row")
    path = tmp_path / "sudoku.txt"
    path.write_text("\n".join(" ".join(str(v) if v else "." for v in row)
                              for row in clash.clues) + "\n")
    found = sudoku.puzzle_violations(sudoku.parse(path.read_text()).puzzle)
    assert found
    for extra in ((), ("--json",)):
        r = solve_cli(path, "-c", tmp_path / "no-such-model", *extra)
        text = " ".join(r.output.split())
        assert r.exit_code == 2, text
        said = "; ".join(placed(v) for v in found)
        assert f"{path}: this sudoku cannot be solved: {said}" in text
        assert cells_named([cell, given]) in text
        assert "no model was run" in text and r.stdout == ""


def test_solve_still_runs_a_valid_sudoku(sudoku, tmp_path):
    """The check before the model lets a sudoku whose givens agree through to it, as before."""
    from ptrm_codecs.families import PPBENCH

    from fixtures_models import save_tiny_checkpoint

    ckpt = save_tiny_checkpoint(tmp_path / "model", PPBENCH.vocab, seq_len=PPBENCH.seq_len)
    path = tmp_path / "sudoku.txt"
    path.write_text(sudoku.example + "\n")
    r = solve_cli(path, "-c", ckpt, "--K", 2, "--D", 1, "--json")
    assert r.exit_code in (0, 1), r.output  # 1: no rollout verified (an untrained model)
    out = json.loads(r.stdout)
    assert out["type"] == "sudoku" and out["rollouts"] == 2
