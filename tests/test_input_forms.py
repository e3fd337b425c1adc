"""Input forms a QA pass found unread or misread: box-drawn sudoku grids, the blank
characters detection accepts, the message for a URL of another type than `--codec`, and a
JSON record that holds a puzzle but not its answer."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ptrm_cli import codec as registry
from ptrm_cli import solver, sources
from ptrm_cli.errors import ParseError

from test_solve import ckpt, ptrm, solve_json  # noqa: F401 (fixture)

LIGHTUP_URL = (Path(__file__).resolve().parents[1] / "examples" / "puzzles" /
               "lightup.url").read_text().strip()

#: the forum layout: bars between boxes in a row, rule lines between bands
FORUM = """\
5 3 . | . 7 . | . . .
6 . . | 1 9 5 | . . .
. 9 8 | . . . | . 6 .
------+-------+------
8 . . | . 6 . | . . 3
4 . . | 8 . 3 | . . 1
7 . . | . 2 . | . . 6
------+-------+------
. 6 . | . . . | 2 8 .
. . . | 4 1 9 | . . 5
. . . | . 8 . | . 7 9
"""
PLAIN = [row.replace("|", "").replace(" ", "") for row in FORUM.splitlines() if "+" not in row]


@pytest.fixture(scope="module")
def sudoku(installed_codec):
    return installed_codec("sudoku")


def clues(text: str, codec: str | None = None) -> list[str]:
    """The givens as read, one string a row ('.' blank), and the type detected."""
    c, parsed = solver.parse_puzzle(text, codec=codec, source="in.txt")
    assert c.name == "sudoku" and parsed.format == "grid"
    return ["".join(str(v) if v else "." for v in row) for row in parsed.puzzle.clues]


# -- 1. box-drawn sudoku ------------------------------------------------------------------------

def test_a_forum_box_drawn_sudoku_reads_with_or_without_its_type_line(sudoku):
    """It said "cannot tell the puzzle type", and with a `sudoku` first line "expected 4, 6 or
    9 grid lines, found 11"."""
    assert clues(FORUM) == PLAIN
    assert clues("sudoku\n" + FORUM) == PLAIN
    assert clues(FORUM, codec="sudoku") == PLAIN


def test_a_framed_grid_with_equals_rules_reads(sudoku):
    rows = [ln for ln in FORUM.splitlines() if "+" not in ln]
    frame = "+-------+-------+-------+"
    text = "\n".join([frame] + [f"| {r} |" for r in rows[:3]] + ["+=======+=======+=======+"]
                     + [f"| {r} |" for r in rows[3:6]] + [frame]
                     + [f"| {r} |" for r in rows[6:]] + [frame])
    assert clues(text) == PLAIN


def test_small_box_drawn_sudoku_read_where_their_rules_fit_the_boxes(sudoku):
    assert clues("1 . | 3 .\n. . | 1 .\n----+----\n. 1 | . .\n4 . | . .\n") == \
        ["1.3.", "..1.", ".1..", "4..."]
    six = "1 2 3 | . . .\n. . . | 1 2 3\n------+------\n" * 3
    assert clues(six.rsplit("------+------\n", 1)[0]) == ["123...", "...123"] * 3


@pytest.mark.parametrize("text, match", [
    # a 6x6 drawn with 3-row boxes is another puzzle than ptrm's 2-row boxes: not read as one
    ("1 2 | 3 . | . .\n" * 3 + "----+-----+----\n" + ". . | . . | . .\n" * 3,
     r"in.txt:4: a box rule after row 3: the boxes of a 6x6 sudoku are 2 rows tall"),
    # a bar after the 4th cell: a cell lost or doubled before it
    ("5 3 . . | 7 . | . . .\n" + "5 3 . | . 7 . | . . .\n" * 8,
     r"in.txt:1: a '\|' after cell 4: the boxes of a 9x9 sudoku are 3 cells wide"),
    ("sudoku\n------+------\n", r"in.txt:2: expected a sudoku grid, found only box rules"),
])
def test_box_rules_that_do_not_fit_the_boxes_name_their_line(sudoku, text, match):
    with pytest.raises(ParseError, match=match):
        solver.parse_puzzle(text, codec="sudoku", source="in.txt")


def test_a_row_of_dash_blanks_is_a_row_where_the_grid_needs_it(sudoku):
    """'-' is a blank and draws rules: a line of only '-' is a row when the grid needs it to be
    square, a rule otherwise."""
    dashed = [r.replace(".", "-") for r in PLAIN]
    dashed[1] = "-" * 9
    grid = "\n".join(" ".join(r[:3]) + " | " + " ".join(r[3:6]) + " | " + " ".join(r[6:])
                     for r in dashed)
    assert clues(grid)[1] == "." * 9
    assert clues("\n".join(dashed[:3] + ["---+---+---"] + dashed[3:]))[1] == "." * 9
    # nine rows besides: the line of dashes is a rule
    assert clues("\n".join(PLAIN[:3] + ["-" * 9] + PLAIN[3:])) == PLAIN


def test_the_one_line_form_is_read_as_before(sudoku):
    assert clues("".join(PLAIN)) == PLAIN


def test_a_box_drawn_sudoku_solves_from_a_file(ckpt, tmp_path):
    path = tmp_path / "forum.txt"
    path.write_text(FORUM)
    _, out = solve_json(ckpt, path)
    assert out["type"] == "sudoku" and out["format"] == "grid"


# -- 2. blanks: one set for reading and detecting ------------------------------------------------

@pytest.mark.parametrize("blank", list(".0_-"))
def test_every_blank_the_reader_accepts_is_detected_without_a_type_line(sudoku, blank):
    """`_` blanks were detected, `-` blanks needed a `sudoku` first line."""
    from ptrm_codecs.sudoku_text import BLANKS

    assert blank in BLANKS
    text = "\n".join(r.replace(".", blank) for r in PLAIN)
    assert registry.detect(text).name == "sudoku"
    assert clues(text) == PLAIN


def test_detection_and_reading_share_one_blank_set(sudoku):
    from ptrm_codecs.sudoku_text import BLANKS

    for blank in BLANKS:
        text = "".join(PLAIN).replace(".", blank)
        assert sudoku.sniff(text) and clues(text) == PLAIN
    with pytest.raises(ParseError, match=r"sudoku cell '\*': expected 1..9 or a blank "
                                         r"\('\.', '0', '_' or '-'\)"):
        sudoku.parse("sudoku\n" + "".join(PLAIN).replace(".", "*"), source="in.txt")


# -- 3. a URL of another type than --codec -------------------------------------------------------

def test_a_url_of_another_type_names_the_ptrm_type_and_how_to_fix_it(installed_codec):
    """It said "URL is a 'akari' puzzle, not 'nurikabe'": a name `--codec` does not list."""
    installed_codec("lightup")
    installed_codec("nurikabe")
    with pytest.raises(ParseError) as url:
        solver.parse_puzzle(LIGHTUP_URL, codec="nurikabe", source="p.url")
    assert str(url.value) == "p.url: URL is a 'lightup' puzzle, not 'nurikabe'"
    assert url.value.hint == "drop --codec to read the type from the input, or pass --codec lightup"
    # the pzprv3 form says it the same way
    with pytest.raises(ParseError) as text:
        solver.parse_puzzle("pzprv3\nakari\n1\n1\n. \n", codec="nurikabe", source="p.txt")
    assert str(text.value) == "p.txt:2: pzprv3 text is a 'lightup' puzzle, not 'nurikabe'"
    assert text.value.hint == url.value.hint


@pytest.mark.parametrize("record, field", [
    ({"type": "nurikabe", "url": LIGHTUP_URL}, "type"),
    ({"pid": "nurikabe", "puzzlink_url": LIGHTUP_URL, "solution_enc": "x"}, "pid"),
])
def test_a_record_of_another_type_than_its_url_says_which_field_to_fix(installed_codec, record,
                                                                        field):
    """No --codec was given, so "drop --codec" was no help: the record's own field chose."""
    installed_codec("lightup")
    installed_codec("nurikabe")
    with pytest.raises(ParseError) as err:
        solver.parse_puzzle(json.dumps(record), source="rec.json")
    assert str(err.value) == "rec.json: URL is a 'lightup' puzzle, not 'nurikabe'"
    assert err.value.hint == (f"the record's {field!r} says 'nurikabe': correct it, or pass "
                              "--codec lightup to read it as what it is")
    with pytest.raises(ParseError) as chosen:  # --codec chose: its own hint stands
        solver.parse_puzzle(json.dumps(record), codec="nurikabe", source="rec.json")
    assert chosen.value.hint.startswith("drop --codec")


def test_the_wrong_type_url_message_reaches_the_cli(ckpt, installed_codec):
    installed_codec("nurikabe")
    r = ptrm("solve", LIGHTUP_URL, "--codec", "nurikabe", "-c", ckpt)
    assert r.exit_code == 2
    assert "URL is a 'lightup' puzzle, not 'nurikabe'" in r.output
    assert "--codec lightup" in r.output


# -- 4. a record without its answer --------------------------------------------------------------

@pytest.mark.parametrize("record", [
    {"type": "lightup", "url": LIGHTUP_URL},
    {"type": "akari", "text": LIGHTUP_URL},
    {"pid": "lightup", "puzzlink_url": LIGHTUP_URL},
])
def test_a_record_without_an_answer_is_a_puzzle_to_solve(installed_codec, record):
    """It was "unrecognised record"."""
    installed_codec("lightup")
    c, parsed = solver.parse_puzzle(json.dumps(record), source="rec.json")
    assert c.name == "lightup" and parsed.format == "record" and parsed.solution is None
    assert (parsed.puzzle.rows, parsed.puzzle.cols) == (10, 10)


def test_a_pzprv3_record_without_an_answer_keeps_the_answer_its_text_holds(sudoku):
    puzzle = sudoku.parse("".join(PLAIN)).puzzle
    text = sudoku.to_pzprv3(puzzle)
    _, parsed = solver.parse_puzzle(json.dumps({"type": "sudoku", "text": text}))
    assert parsed.puzzle.clues.tolist() == puzzle.clues.tolist()
    assert parsed.solution is not None and (parsed.solution.grid == puzzle.clues).all()


def test_a_record_without_an_answer_solves_from_a_file(ckpt, tmp_path, installed_codec):
    installed_codec("lightup")
    path = tmp_path / "rec.json"
    path.write_text(json.dumps({"type": "lightup", "url": LIGHTUP_URL}) + "\n")
    _, out = solve_json(ckpt, path)
    assert out["type"] == "lightup" and out["format"] == "record"


def test_a_truly_unrecognised_record_lists_the_shapes_read(installed_codec):
    installed_codec("lightup")
    with pytest.raises(ParseError) as err:
        solver.parse_puzzle(json.dumps({"type": "lightup", "grid": "x"}), source="rec.json")
    message = str(err.value)
    assert message.startswith("rec.json: unrecognised record: expected a PPBench record")
    for shape in ("(problem, solution)", "(type, url or text, answer",
                  "puzzle to solve (type, url or text; no answer)", "this one has 'grid', 'type'"):
        assert shape in message


def test_a_dataset_source_says_a_record_lacks_its_answer(tmp_path):
    """build-data and eval need the answer: such a line is reported as lacking it, under its
    type, not as "unrecognised"."""
    path = tmp_path / "r.jsonl"
    path.write_text(json.dumps({"type": "akari", "url": LIGHTUP_URL}) + "\n"
                    + json.dumps({"x": 1}) + "\n")
    bad = []
    items = list(sources.READERS["jsonl"].read(path, lambda loc, why, t=None:
                                                bad.append((loc, why, t))))
    assert items == []
    assert bad[0][0] == 1 and bad[0][2] == "lightup"
    assert bad[0][1].startswith("a puzzle without its answer: a dataset record needs 'answer'")
    assert bad[1][:2] == (2, "unrecognised record: expected a PPBench record (pid, puzzlink_url, "
                             "solution_enc) or a ptrm record (type, url or text, answer); this "
                             "one has 'x'")
