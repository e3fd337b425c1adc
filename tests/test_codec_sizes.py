"""Every size a message prints says which number is the rows: `9x9`, or `8 rows x 9 columns`.

A bare `8x9` read both ways: `--sizes` and meta.trained_on write ROWSxCOLS, a puzz.link URL
gives the columns first, and the URL readers printed their sizes in the URL's order while the
rest printed rows first (`ptrm_cli.codec.size_name`)."""

from __future__ import annotations

import numpy as np
import pytest

from ptrm_cli import codec as registry
from ptrm_cli.codec import Family, Solution, Violation, size_name
from ptrm_cli.errors import ParseError, PtrmError
from ptrm_codecs import arc
from ptrm_codecs.formats import Move


@pytest.mark.parametrize("rows, cols, said", [
    (9, 9, "9x9"), (8, 9, "8 rows x 9 columns"), (9, 8, "9 rows x 8 columns"),
    (1, 31, "1 row x 31 columns"), (2, 1, "2 rows x 1 column"),
])
def test_size_name(rows, cols, said):
    assert size_name(rows, cols) == said
    # a plugin's sizes may be numpy integers: `'s' * (np.int64(3) != 1)` raised
    assert size_name(np.int64(rows), np.int32(cols)) == said


@pytest.mark.parametrize("name, url, said", [
    # <cols>/<rows> in the URL: "9x8" and "10x9" were said in that order
    ("sudoku", "sudoku/9/8/g", "sudoku URL size 8 rows x 9 columns is not square"),
    ("lightup", "akari/0/9/g", "puzz.link URL size 9 rows x 0 columns is out of range"),
    ("heyawake", "heyawake/5/4/0", "a 4 rows x 5 columns board needs 7 border characters"),
    ("heyawake", "heyawake/3/2/00z", "covers 20 rooms, but its 2 rows x 3 columns board has 1"),
    ("lightup", "akari/3/2/z", "covers 20 cells, but its 2 rows x 3 columns board has 6"),
    ("shakashaka", "shakashaka/3/2/z", "but its 2 rows x 3 columns board has 6"),
    ("nurikabe", "nurikabe/4/3/z", "covers 20 cells, but its 3 rows x 4 columns board has 12"),
    ("tapa", "tapa/3/2/zz", "but its 2 rows x 3 columns board has 6"),
])
def test_url_sizes_are_said_rows_first(name, url, said, installed_codec):
    with pytest.raises(ParseError, match=said):
        installed_codec(name).parse("https://puzz.link/p?" + url)


@pytest.mark.parametrize("name, problem, said", [
    ("lightup", "2 3\n- - -\n- - -",
     "janko solution is 3 rows x 2 columns, its problem 2 rows x 3 columns"),
    ("shakashaka", "2 3\n- - -\n- - -",
     "janko solution is 3 rows x 2 columns, its problem 2 rows x 3 columns"),
    ("heyawake", "2 3\n- - -\n- - -\n0 0 1\n0 0 1",
     "janko heyawake: solution is 3 rows x 2 columns, puzzle is 2 rows x 3 columns"),
])
def test_janko_sizes(name, problem, said, installed_codec):
    with pytest.raises(ParseError, match=said):
        installed_codec(name).from_janko(problem, "3 2\n- -\n- -\n- -")


def test_codec_messages_of_a_grid_of_other_rows_and_columns(installed_codec):
    heyawake = installed_codec("heyawake")
    with pytest.raises(ParseError, match="off the 1 row x 2 columns board"):
        heyawake.apply_moves(heyawake.parse("heyawake\na a\n\n. .").puzzle,
                             [[Move("mouse", "left", 5, 1)]])
    with pytest.raises(ParseError, match="got 2 rows x 3 columns"):
        installed_codec("sudoku")._puzzle(np.zeros((2, 3), dtype=int))
    maze = installed_codec("maze")
    puzzle = maze.parse("#####\n#S G#\n#####").puzzle
    (v,) = maze.verify(puzzle, Solution("maze", np.ones((3, 4), dtype=np.int16)))
    assert v.message == "the answer is 3 rows x 4 columns, the maze 3 rows x 5 columns"
    with pytest.raises(ParseError, match="answer grid is 3 rows x 2 columns, the maze is "
                                         "3 rows x 5 columns"):
        maze.from_record({"text": "#####\n#S G#\n#####", "answer": [[1, 1]] * 3})
    with pytest.raises(ParseError, match=r"answer grid is of shape \(3,\)"):  # not a grid
        maze.from_record({"text": "#####\n#S G#\n#####", "answer": [1, 1, 1]})


def test_arc_sizes():
    assert arc._size_problem(1, 31) == " is 1 row x 31 columns; ARC grids are at most 30x30"
    with pytest.raises(PtrmError, match="a 2 rows x 31 columns ARC grid at offset"):
        arc.to_canvas(np.zeros((2, 31), dtype=int))
    with pytest.raises(PtrmError, match="a 2 rows x 31 columns ARC grid does not fit"):
        arc.random_offset(np.random.default_rng(0), [(2, 31)])


def test_contract_messages(installed_codec):
    """What ptrm says of a codec that breaks its contract names the board's rows too."""
    lightup = installed_codec("lightup")
    fam = Family("ppbench", 0, 10, lightup.families[0].vocab)
    assert "family 'ppbench' has a 0 rows x 10 columns grid" in registry.family_problems(fam)
    puzzle = lightup.parse("lightup\n. . .\n. . .").puzzle

    class Raises(type(lightup)):
        def verify(self, puzzle, solution):
            raise ValueError("shapes")

        def puzzle_violations(self, puzzle):
            return [Violation("far", "far away", ((5, 5),))]

    odd = Raises()
    with pytest.raises(registry.CodecBug, match=r"on a 3 rows x 2 columns solution of a "
                                                r"2 rows x 3 columns puzzle"):
        registry.violations_of(odd, puzzle, Solution("lightup", np.zeros((3, 2), np.int16)))
    with pytest.raises(registry.CodecBug, match="not on the 2 rows x 3 columns board"):
        registry.puzzle_violations_of(odd, puzzle)

