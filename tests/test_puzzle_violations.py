"""`puzzle_violations` beyond maze and sudoku's clashes: the cheap checks (a sudoku blank whose
row, column and box hold every digit, and sudoku givens that allow no fill at all, by an exact
search of milliseconds at its sizes; lightup and shakashaka: a number with
less room beside it than it asks for; nurikabe: clues that touch; heyawake: a room numbered
above what it can hold; tapa: a clue its own ring cannot meet). Each claim is tested against
the codec's own verifier on boards small enough to try every answer: a board it refuses has no
answer, and a board at the limit (the number just fits) is solvable and not refused."""

from __future__ import annotations

import itertools
import re

import numpy as np
import pytest

from ptrm_cli import codec as registry
from ptrm_cli.codec import Solution, cell_name, placed

import pzpr_oracle

#: (type, board): boards that no answer solves, by a rule puzzle_violations sees in the clues
UNSOLVABLE = [
    ("lightup", ". 3 .\n. - .\n. . ."),          # a 3 with two white neighbours
    ("lightup", "0 . 1\n. . -\n. . ."),          # the 1's only white neighbour touches the 0
    ("shakashaka", ". 3 .\n5 5 5"),              # a 3 with two white neighbours
    ("shakashaka", "0 . 1 5 .\n5 5 5 5 ."),      # the 1's only white neighbour touches the 0
    ("shakashaka", "2 . . 5\n5 . . 5\n5 5 5 5"),
    ("nurikabe", "2 1\n. ."),                    # clues that touch share an island
    ("nurikabe", "- 3 .\n. . .\n. . ."),         # a "?" clue counts
    ("heyawake", "0 0 1\n0 0 1\n2 2 1\n\n3 . .\n. . .\n. . ."),  # 3 in a 2x2 room
    ("heyawake", "0 1 1\n0 1 1\n0 1 1\n\n3 . .\n. . .\n. . ."),  # 3 in a 3x1 room
    ("sudoku", "1 2 3 .\n3 . 1 4\n2 1 4 3\n4 3 2 ."),  # r2c2 sees 3 1 4, 2 1 3, 1 2 3
    ("tapa", "4 . .\n. . .\n. . ."),                # a 4 in a corner: three neighbours
    ("tapa", "1,1,1 . .\n. . .\n. . ."),            # three runs in three cells in a row
    ("tapa", ". 6 .\n. . .\n. . ."),                # a 6 on an edge: five neighbours
    ("tapa", "3 3 .\n. . .\n. . ."),                # the corner 3 loses a neighbour to a clue
    ("tapa", "-,-,- . .\n. . .\n. . ."),            # three runs of any length in three cells
    ("tapa", ". 2 ."),                              # one row: the 2's neighbours are apart
]

#: boards at the limit: each number just fits (or clues just miss each other), and they solve
AT_THE_LIMIT = [
    ("lightup", ". 2 .\n. - .\n. . ."),
    ("shakashaka", ". . 1\n. . 5\n5 5 5"),
    ("shakashaka", "5 1 1 5\n1 . . 1\n1 . . 1\n5 1 1 5"),
    ("nurikabe", "3 . .\n. . .\n. . 2"),
    ("heyawake", "0 0 1\n0 0 1\n2 2 1\n\n2 . .\n. . .\n. . ."),
    ("heyawake", "0 1 1\n0 1 1\n0 1 1\n\n2 . .\n. . .\n. . ."),
    ("sudoku", "1 2 3 .\n3 . 1 2\n2 1 4 3\n4 3 2 ."),  # r2c2: 4 alone
    ("tapa", "3 . .\n. . .\n. . ."),
    ("tapa", "1,1 . .\n. . .\n. . ."),
    ("tapa", ". 5 .\n. . .\n. . ."),
    ("tapa", "2 2 .\n. . .\n. . ."),
    ("tapa", "-,- . .\n. . .\n. . ."),
    ("tapa", "1 . -"),                              # one row, and a lone ? met by one cell
]


def _read(name: str, board: str):
    codec, parsed = registry.parse(f"{name}\n{board}")
    assert codec.name == name
    return codec, parsed.puzzle


def _answers(codec, puzzle):
    """Every answer: each answer cell holding each value the codec's legend names."""
    cells = [(r, c) for r in range(puzzle.rows) for c in range(puzzle.cols)
             if codec.is_answer_cell(puzzle, r, c)]
    values = sorted(registry.legend_of(codec))
    for combo in itertools.product(values, repeat=len(cells)):
        grid = np.full((puzzle.rows, puzzle.cols), codec.EMPTY, dtype=np.int16)
        for rc, v in zip(cells, combo):
            grid[rc] = v
        yield Solution(codec.name, grid)


def _verdicts(codec, puzzle) -> list[list]:
    """`verify` of every answer."""
    return [codec.verify(puzzle, answer) for answer in _answers(codec, puzzle)]


@pytest.mark.parametrize("name, board", UNSOLVABLE)
def test_refused_boards_have_no_answer_and_say_where(installed_codec, name, board):
    codec, puzzle = _read(name, board)
    found = codec.puzzle_violations(puzzle)
    assert found
    verdicts = _verdicts(codec, puzzle)
    assert all(verdicts), "an answer verifies"
    said = [v for verdict in verdicts for v in verdict]
    for v in found:  # the verifier's own code, which it says of those cells for some answer
        assert any(e.code == v.code and set(v.cells) <= set(e.cells) for e in said), v
        # the place, where the finding has one (a search's "no fill" is of the whole board)
        assert not v.cells or any(cell_name(*rc) in v.message for rc in v.cells), v.message


def test_sudoku_givens_that_allow_no_fill_are_found_by_the_search(installed_codec):
    """Every blank can take a digit (the checks without a search pass), but no fill takes them
    all: each of the 4^6 digit fills breaks a row, column or box, counted here without the
    solver (`verify` of every answer, as above, took 90 s on 6 blanks)."""
    codec, puzzle = _read("sudoku", "1 4 . .\n. . 1 2\n2 1 4 .\n4 . 2 1")
    blanks = tuple(np.nonzero(puzzle.clues == 0))

    def valid(g):
        boxes = [g[r:r + 2, c:c + 2] for r in (0, 2) for c in (0, 2)]
        return all(sorted(u.ravel().tolist()) == [1, 2, 3, 4]
                   for u in [*g, *g.T, *boxes])

    assert valid(np.array([[1, 2, 3, 4], [3, 4, 1, 2], [2, 1, 4, 3], [4, 3, 2, 1]]))
    for digits in itertools.product(range(1, 5), repeat=len(blanks[0])):
        grid = puzzle.clues.copy()
        grid[blanks] = digits
        assert not valid(grid), grid
    (v,) = codec.puzzle_violations(puzzle)
    assert v.code == "ceNoNum" and "the givens allow no solution" in v.message
    assert v.code in {e.code for e in codec.verify(puzzle, Solution("sudoku", puzzle.clues))}


@pytest.mark.parametrize("name, board", AT_THE_LIMIT)
def test_boards_at_the_limit_solve_and_are_not_refused(installed_codec, name, board):
    codec, puzzle = _read(name, board)
    assert not all(_verdicts(codec, puzzle)), "no answer verifies"
    assert codec.puzzle_violations(puzzle) == []


def test_a_room_of_another_shape_is_held_to_its_size_only(installed_codec):
    """A plus-shaped room of 5 cells holds 4 shaded cells that do not touch (its arms), more
    than half: only a rectangle's half is certain, so 4 is not refused (5 would need 5)."""
    codec, puzzle = _read("heyawake", "0 1 2\n1 1 1\n3 1 4\n\n. 4 .\n. . .\n. . .")
    room = next(room for room in puzzle.clues.rooms() if len(room) == 5)
    arms = np.zeros((3, 3), dtype=np.int16)
    for r, c in room:
        arms[r, c] = (r, c) != (1, 1)
    assert not [v for v in codec.verify(puzzle, Solution("heyawake", arms))
                if v.code in ("bkShadeNe", "csAdjacent")]
    assert codec.puzzle_violations(puzzle) == []
    codec, puzzle = _read("heyawake", "0 1 2\n1 1 1\n3 1 4\n\n. 6 .\n. . .\n. . .")
    assert [v.code for v in codec.puzzle_violations(puzzle)] == ["bkShadeNe"]


@pytest.mark.parametrize("board", [b for name, b in UNSOLVABLE if name == "heyawake"]
                         + ["0 1 2\n1 1 1\n3 1 4\n\n. 6 .\n. . .\n. . ."])
def test_a_refused_room_is_said_to_hold_at_most_its_bound(installed_codec, board):
    """For a room that is no rectangle the count is a bound (its size), not what the room
    holds: the plus-shaped room numbered 6 was said to have "room for only 5 shaded cell(s),
    none touching", and no 5 of its cells are apart (4 are, its arms). The message says "at
    most" the count, which is true of every room: checked against every shading of it."""
    codec, puzzle = _read("heyawake", board)
    (v,) = codec.puzzle_violations(puzzle)
    room = v.cells
    apart = [k for k in range(len(room) + 1) for cells in itertools.combinations(room, k)
             if not any(abs(a[0] - b[0]) + abs(a[1] - b[1]) == 1
                        for a, b in itertools.combinations(cells, 2))]
    said = re.search(r" can hold at most (\d+) shaded cell\(s\) with none touching$", v.message)
    assert said, v.message
    assert max(apart) <= int(said.group(1)) < int(re.search(r"numbered (\d+)", v.message)[1])


@pytest.mark.parametrize("name", ["lightup", "shakashaka", "nurikabe", "heyawake", "tapa",
                                  "sudoku"])
def test_golden_puzzles_and_the_example_are_not_refused(installed_codec, name):
    codec = installed_codec(name)
    puzzles = [codec.from_record(rec)[0] for rec in pzpr_oracle.golden_by_type(name)]
    puzzles.append(codec.parse(codec.example).puzzle)
    assert [codec.puzzle_violations(p) for p in puzzles] == [[]] * len(puzzles)


@pytest.mark.parametrize("name, board", UNSOLVABLE)
def test_solve_stops_before_the_model(installed_codec, name, board, tmp_path, monkeypatch):
    """As for a maze without a route: said at once, exit 2, naming the place; no model."""
    from typer.testing import CliRunner

    from ptrm_cli import solver
    from ptrm_cli.app import app

    def no_model(*args, **kwargs):
        raise AssertionError(f"a model was loaded for an unsolvable {name}")

    monkeypatch.setattr(solver, "load_model", no_model)
    monkeypatch.setattr(solver, "solve_puzzle", no_model)
    codec, puzzle = _read(name, board)
    path = tmp_path / f"{name}.txt"
    path.write_text(f"{name}\n{board}\n")
    said = "; ".join(placed(v) for v in codec.puzzle_violations(puzzle))
    r = CliRunner().invoke(app, ["solve", str(path), "-c", str(tmp_path / "no-such-model"),
                                 "--device", "cpu"])
    text = " ".join(r.output.split())
    assert r.exit_code == 2, text
    assert f"{path}: this {name} cannot be solved: {said}" in text
    assert "no model was run" in text and r.stdout == ""
    assert "names no type" not in text  # the file's first line named it


def test_a_grid_that_names_no_type_is_told_how_to_name_it(installed_codec, tmp_path):
    """A binairo grid of 0s and 1s without its type line reads as a sudoku, which its
    repeated digits break: the refusal now says the type was a guess, and how to name it."""
    from typer.testing import CliRunner

    from ptrm_cli.app import app

    installed_codec("sudoku")
    path = tmp_path / "grid.txt"
    path.write_text("1 1 0 0\n0 0 1 1\n1 0 . .\n. . . .\n")
    r = CliRunner().invoke(app, ["solve", str(path), "--device", "cpu"])
    text = " ".join(r.output.split())
    assert r.exit_code == 2 and "this sudoku cannot be solved" in text
    assert ("the text names no type and reads like sudoku; if it is another type, start it "
            "with a line naming the type, or pass --codec TYPE") in text


@pytest.mark.parametrize("board, why", [
    ("4 . .\n. . .\n. . .", "it needs 4 shaded cells around it and only 3 can be"),
    (". 2 .", "the 2 cells around it that can be shaded cannot form those runs"),
    ("-,-,- . .\n. . .\n. . .", "the 3 cells around it that can be shaded cannot form"),
])
def test_a_refused_tapa_clue_says_why_its_ring_fails(installed_codec, board, why):
    """It said "only 2 of the cells around it can be shaded" of a 2 with two free neighbours:
    the count is the reason only when it is short."""
    codec, puzzle = _read("tapa", board)
    (v,) = codec.puzzle_violations(puzzle)
    assert why in v.message
