"""Every rule violation says where it is: its message names its cells (`r3c5`, a list cut at
three with `+N more`), so the text output of `ptrm solve` is as useful as --json's `cells`.
QA found `ceDark` ("1 white cell(s) are not lit") and `bkNoNum` naming no cell."""

from __future__ import annotations

import re

import numpy as np
import pytest
from typer.testing import CliRunner

import pzpr_oracle
from fixtures_models import GOLDEN_SIZES, golden_examples, installed_codecs, save_tiny_checkpoint
from ptrm_cli import solver
from ptrm_cli.app import app
from ptrm_cli.codec import Solution, Violation, cell_name, cells_named, placed

#: the rules that are about the whole grid, not a place on it ("no cell is shaded")
WHOLE_GRID = {"brNoShade", "brNoTriangle", "mzNoPath"}
#: the codecs whose messages name their cells themselves (sudoku's are named by `placed`)
NAMING = ("lightup", "nurikabe", "heyawake", "tapa", "shakashaka")
CELL = re.compile(r"\br(\d+)c(\d+)\b")


def names_a_cell_of(text: str, v: Violation) -> bool:
    named = {(int(r) - 1, int(c) - 1) for r, c in CELL.findall(text)}
    return bool(named & set(map(tuple, v.cells)))


def test_cells_named_lists_a_few_in_reading_order():
    assert cells_named([(2, 4)]) == "r3c5"
    assert cells_named([(5, 1), (2, 4)]) == "r3c5, r6c2"
    four = [(3, 0), (0, 9), (0, 0), (1, 1)]
    assert cells_named(four) == "r1c1, r1c10, r2c2, r4c1"  # "+1 more" would save nothing
    assert cells_named(four + [(9, 9), (0, 0)]) == "r1c1, r1c10, r2c2 +2 more"  # distinct cells


def test_placed_adds_the_cells_only_where_the_message_names_none():
    v = Violation("ceNoNum", "2 cell(s) have no digit", ((0, 1), (2, 3)))
    assert placed(v) == "2 cell(s) have no digit: r1c2, r3c4"
    named = Violation("nmAkariNe", "wall 1 at r1c10 touches 0 light(s)", ((0, 9),))
    assert placed(named) == named.message
    # r1c1 is not r1c10's prefix, and a box named by its corner is not the duplicated cells
    other = Violation("bkDupNum", "digit 5 appears 2 times in box at r1c1", ((1, 1), (2, 2)))
    assert placed(other).endswith(": r2c2, r3c3")
    assert placed(Violation("brNoShade", "no cell is shaded")) == "no cell is shaded"


def _wrong_answers(codec, solution, rng, n: int = 25):
    """The empty answer, then the right one with a growing share of cells changed."""
    values = list(np.unique(solution.grid)) + [codec.EMPTY]
    yield np.full_like(solution.grid, codec.EMPTY)
    for share in np.linspace(0.02, 0.5, n):
        g = solution.grid.copy()
        mask = rng.random(g.shape) < share
        g[mask] = rng.choice(values, size=int(mask.sum()))
        yield g


def _violations(pid: str) -> list[Violation]:
    codec = installed_codecs()[pid]
    rng = np.random.default_rng(7)
    out = []
    for record in pzpr_oracle.golden_by_type(pid)[:4]:
        puzzle, solution = codec.from_record(record)
        for grid in _wrong_answers(codec, solution, rng):
            out += codec.verify(puzzle, Solution(pid, grid))
    return out


@pytest.mark.parametrize("pid", NAMING)
def test_ppbench_messages_name_their_cells(pid):
    found = _violations(pid)
    for v in found:
        assert v.code in WHOLE_GRID or names_a_cell_of(v.message, v), (v.code, v.message)
    codes = {v.code for v in found}
    # the ones that named no cell before: make sure this test reached them
    reached = {"lightup": {"ceDark", "akariDup"}, "nurikabe": {"bkNoNum", "bkNumGe2", "csDivide"},
               "heyawake": {"cuDivideRB"}, "tapa": {"csDivide"}}.get(pid, set())
    assert reached <= codes, reached - codes


def test_sudoku_lines_name_their_cells():
    """sudoku's messages name a row, column or box, or nothing (ceNoNum): `placed`, which the
    text output prints, adds the cells."""
    found = _violations("sudoku")
    assert {"ceNoNum", "bkDupNum", "nmDupRow"} <= {v.code for v in found}
    for v in found:
        assert names_a_cell_of(placed(v), v), (v.code, placed(v))


# a 5x5 maze, S top-left, G bottom-right (tests/test_codec_maze.py has the rules themselves)
OPEN = ["S....", ".###.", ".....", ".###.", "....G"]
SHORTEST = [(1, 0), (2, 0), (2, 1), (2, 2), (2, 3), (2, 4), (3, 4)]             # 8 steps
SNAKE = [(0, 1), (0, 2), (0, 3), (0, 4), (1, 4), (2, 4), (2, 3), (2, 2), (2, 1), (2, 0),
         (3, 0), (4, 0), (4, 1), (4, 2), (4, 3)]                                # 16 steps
THROUGH_WALLS = [(0, 1), (1, 1), (2, 1), (2, 2), (2, 3), (3, 3), (4, 3)]


@pytest.mark.parametrize("rows, path, cells, code", [
    (OPEN, SHORTEST + [(3, 0)], [(3, 0)], "mzDeadEnd"),             # a spur
    (OPEN, SHORTEST + [(3, 0)], [(2, 0)], "mzBranch"),
    (OPEN, SHORTEST[:3] + SHORTEST[4:], [(2, 1), (2, 3)], "mzDeadEnd"),  # broken
    (OPEN, SHORTEST + [(4, 2)], [(4, 2)], "mzDisconnected"),         # a stray cell
    (OPEN, THROUGH_WALLS, [(1, 1), (3, 3)], "mzPathOnWall"),
    (OPEN, SNAKE[:-1], [(4, 4)], "mzEndpoint"),                      # ends short of G
    (["S#.", "##.", "..G"], [], [(0, 0), (2, 2)], "mzNoRoute"),
], ids=["spur", "branch", "broken", "stray", "on-wall", "endpoint", "no-route"])
def test_maze_messages_name_their_cells(installed_codec, rows, path, cells, code):
    maze = installed_codec("maze")
    puzzle = maze.parse("\n".join(rows)).puzzle
    grid = puzzle.clues.astype(np.int16)
    for rc in path:
        grid[rc] = 5
    (v,) = [v for v in maze.verify(puzzle, Solution("maze", grid)) if v.code == code]
    assert all(cell_name(*rc) in v.message for rc in cells), v.message


def test_maze_changed_cells_and_longer_paths_are_named(installed_codec):
    maze = installed_codec("maze")
    puzzle = maze.parse("\n".join(OPEN)).puzzle
    grid = puzzle.clues.astype(np.int16)
    grid[1, 2] = 2  # a wall made free
    (v,) = maze.verify(puzzle, Solution("maze", grid))[:1]
    assert v.code == "mzCellChanged" and "r2c3" in v.message
    grid = puzzle.clues.astype(np.int16)
    for rc in SNAKE:
        grid[rc] = 5
    (v,) = maze.verify(puzzle, Solution("maze", grid))
    assert v.code == "mzNotShortest" and v.message.endswith("r1c2, r1c3, r1c4 +12 more")


def test_arc_mismatch_names_the_cells(installed_codec):
    arc = installed_codec("arc")
    puzzle = arc.puzzle([[1, 2], [3, 4]], output=[[1, 2], [3, 4]])
    (v,) = arc.verify(puzzle, Solution("arc", np.array([[1, 0], [3, 0]])))
    assert v.message == "differs from the expected output in 2 of 4 cells: r1c2, r2c2"


# -- ptrm solve's text output ---------------------------------------------------------------------

@pytest.fixture(scope="module")
def ckpt(tmp_path_factory):
    from ptrm_codecs.families import PPBENCH

    return save_tiny_checkpoint(tmp_path_factory.mktemp("model") / "tiny", PPBENCH.vocab)


def _solve_text(ckpt, puzzle_text: str) -> str:
    res = CliRunner().invoke(app, ["solve", puzzle_text, "-c", str(ckpt), "--K", "2", "--D", "1",
                                   "--device", "cpu", "--threads", "1"])
    assert res.exit_code == 1, res.output  # the tiny model solves nothing
    return res.stdout


@pytest.mark.parametrize("pid", GOLDEN_SIZES)
def test_solve_lines_say_where(ckpt, pid, monkeypatch):
    """Each violation line of the text output names a cell of that violation, as its --json
    `cells` list does."""
    codec = installed_codecs()[pid]
    ((_, record),) = golden_examples([pid])  # at the size the family holds
    puzzle, _ = codec.from_record(record)
    shown = []
    real = solver.solve_puzzle

    def keep(*args, **kwargs):  # the violations the output is made from
        res = real(*args, **kwargs)
        shown.extend(res.violations[:5])
        return res

    monkeypatch.setattr(solver, "solve_puzzle", keep)
    lines = [" ".join(ln.split()) for ln in _solve_text(ckpt, codec.to_url(puzzle)).splitlines()]
    printed = [ln for ln in lines if ln.split(" ")[0] in {v.code for v in shown}]
    assert shown and len(printed) == len(shown), lines
    for v, line in zip(shown, printed):  # in the same order
        assert line.startswith(v.code + " ")
        assert v.code in WHOLE_GRID or names_a_cell_of(line, v), line


def test_solve_lines_name_the_cells_of_any_codec(ckpt, monkeypatch):
    """A message that names no cell (a plugin's, sudoku's ceNoNum) gets its cells listed."""
    codec = installed_codecs()["sudoku"]
    puzzle, _ = codec.from_record(pzpr_oracle.golden_by_type("sudoku")[0])
    real = solver.solve_puzzle

    def unnamed(*args, **kwargs):
        res = real(*args, **kwargs)
        res.violations = [Violation("ceNoNum", "3 cell(s) have no digit",
                                    ((8, 8), (0, 1), (4, 2)))]
        return res

    monkeypatch.setattr(solver, "solve_puzzle", unnamed)
    out = " ".join(_solve_text(ckpt, codec.to_url(puzzle)).split())
    assert "ceNoNum 3 cell(s) have no digit: r1c2, r5c3, r9c9" in out
