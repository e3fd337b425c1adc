"""Nurikabe codec: every golden and janko puzzle through every format, tokens, rules, symmetries,
and clear errors for bad input. The data is read in place from the shared folder."""

from __future__ import annotations

import json

import numpy as np
import pytest
from rich.text import Text

from ptrm_cli import codec as registry
from ptrm_cli import dihedral
from ptrm_cli.codec import Puzzle, Solution
from ptrm_cli.errors import ParseError, PtrmError
from ptrm_codecs import formats
from ptrm_codecs.families import PPBENCH
from ptrm_codecs.nurikabe import NO_CLUE, SHADED, UNKNOWN, UNSHADED, NurikabeCodec

from shared_data import JANKO_DIR, golden_params, janko_params

JANKO = JANKO_DIR / "nurikabe_10x10.json"

CODEC = NurikabeCodec()

# what one flipped cell of a valid solution can break (PPBENCH_FORMATS.md §4.3): shading a cell
# can make a 2x2 block, cut or shrink an island or sit apart from the wall; unshading one can
# isolate a clueless island, cut the wall, or grow or join islands
BREAKS_IF_SHADED = {"cs2x2", "bkNoNum", "csDivide", "bkSizeNe"}
BREAKS_IF_UNSHADED = {"bkNoNum", "csDivide", "bkNumGe2", "bkSizeNe"}


GOLDEN_RECORDS = golden_params("nurikabe")
JANKO_ENTRIES = janko_params("nurikabe_10x10.json")


def _body(url: str) -> str:
    return formats.parse_url(url).body


def _has_unknown(puzzle: Puzzle) -> bool:
    return bool((puzzle.clues == UNKNOWN).any())


def _assert_tokens_round_trip(puzzle: Puzzle, solution: Solution) -> None:
    vocab = PPBENCH.vocab
    inputs, labels = CODEC.encode(puzzle), CODEC.encode_label(puzzle, solution)
    assert inputs.shape == labels.shape == (100,)
    assert CODEC.decode(puzzle, labels) == solution
    names = [vocab.tokens[t] for t in labels]
    assert all(n == "pad" or n.startswith("nurikabe.") for n in names)
    for r in range(puzzle.rows):
        for c in range(puzzle.cols):
            k = r * 10 + c
            if CODEC.is_answer_cell(puzzle, r, c):
                assert vocab.tokens[inputs[k]] == "nurikabe.blank"
            else:  # clue cells copy the input token into the label
                assert labels[k] == inputs[k]
    # a trajectory state shows the shaded cells entered so far, and nothing else
    k = len(CODEC.required_cells(puzzle, solution)) // 2
    state = CODEC.encode(puzzle, CODEC.trajectory(puzzle, solution, k))
    assert sum(vocab.tokens[t] == "nurikabe.shaded" for t in state) == k


def _assert_every_flip_rejected(puzzle: Puzzle, solution: Solution) -> int:
    flips = 0
    for r in range(puzzle.rows):
        for c in range(puzzle.cols):
            if not CODEC.is_answer_cell(puzzle, r, c):
                continue
            grid = solution.grid.copy()
            grid[r, c] = UNSHADED if grid[r, c] == SHADED else SHADED
            violations = CODEC.verify(puzzle, Solution("nurikabe", grid))
            allowed = BREAKS_IF_SHADED if grid[r, c] == SHADED else BREAKS_IF_UNSHADED
            assert violations and violations[0].code in allowed, (r, c, violations[:1])
            flips += 1
    return flips


# -- golden: every size --------------------------------------------------------------------

@pytest.mark.parametrize("record", GOLDEN_RECORDS)
def test_golden_url_moves_verify_and_round_trips(record):
    puzzle, solution = CODEC.from_record(record, source="golden")
    assert (puzzle.cols, puzzle.rows) == (record["width"], record["height"])
    assert CODEC.verify(puzzle, solution) == []
    assert _body(CODEC.to_url(puzzle)) == _body(record["puzzlink_url"])
    # moves_required alone gives the same grid, and its moves are the cells a solver shades
    required = [formats.parse_moves(m) for m in formats.decode_solution(record)["moves_required"]]
    assert CODEC.apply_moves(puzzle, required) == solution
    assert len(CODEC.required_cells(puzzle, solution)) == record["number_required_moves"]
    # pzprv3 both ways, with and without the answer
    parsed = CODEC.parse(CODEC.to_pzprv3(puzzle, solution))
    assert parsed.format == "pzprv3"
    assert (parsed.puzzle.clues == puzzle.clues).all() and parsed.solution == solution
    clue_only = CODEC.parse(CODEC.to_pzprv3(puzzle))
    assert (clue_only.puzzle.clues == puzzle.clues).all() and clue_only.solution is None
    # the plain grid is the pzprv3 body
    body = CODEC.to_pzprv3(puzzle, solution).split("\n", 4)[4]
    plain = CODEC.parse("nurikabe\n" + body)
    assert plain.format == "grid" and (plain.puzzle.clues == puzzle.clues).all()
    assert plain.solution == solution


@pytest.mark.parametrize("record", GOLDEN_RECORDS)
def test_golden_tokens_transforms_and_flips(record):
    puzzle, solution = CODEC.from_record(record, source="golden")
    if puzzle.rows <= 10 and puzzle.cols <= 10:  # smaller ones sit top-left, padded
        _assert_tokens_round_trip(puzzle, solution)
    else:
        with pytest.raises(PtrmError, match="does not fit"):
            CODEC.encode(puzzle)
    for t in range(dihedral.COUNT):
        p, s = CODEC.transform(puzzle, solution, t)
        assert (p.rows, p.cols) == dihedral.shape(puzzle.rows, puzzle.cols, t)
        assert CODEC.verify(p, s) == [], dihedral.NAMES[t]
    assert _assert_every_flip_rejected(puzzle, solution) == record["number_total_solution_moves"]


def test_golden_worked_example():
    # PPBENCH_FORMATS.md §4.3: g → 1 blank, 1, m → 7 blanks, -14 → 20, ..., e → 14 at cell 48
    puzzle_url = "https://puzz.link/p?nurikabe/10/10/g1m-14k1s1s1jem1zt1i1j"
    parsed = CODEC.parse(puzzle_url)
    clues = parsed.puzzle.clues.reshape(-1)
    assert parsed.format == "url" and parsed.solution is None
    assert (clues[1], clues[9], clues[15], clues[48]) == (1, 20, 1, 14)
    assert CODEC.to_url(parsed.puzzle) == puzzle_url


# -- janko ---------------------------------------------------------------------------------

@pytest.mark.parametrize("entry", JANKO_ENTRIES)
def test_janko_verifies_under_every_symmetry_and_encodes(entry):
    puzzle, solution = CODEC.from_record(entry, source="janko")
    for t in range(dihedral.COUNT):
        p, s = CODEC.transform(puzzle, solution, t)
        assert CODEC.verify(p, s) == [], dihedral.NAMES[t]
    _assert_tokens_round_trip(puzzle, solution)  # "?" clues (one janko puzzle) have a token
    parsed = CODEC.parse(CODEC.to_pzprv3(puzzle, solution))
    assert (parsed.puzzle.clues == puzzle.clues).all() and parsed.solution == solution


def test_janko_flips_rejected():
    if not JANKO.exists():
        pytest.skip(f"janko data not found at {JANKO}")
    data = json.loads(JANKO.read_text())["data"]
    for key in sorted(data)[::11]:  # every cell of 21 puzzles spread over the set: enough, and fast
        puzzle, solution = CODEC.from_record(data[key], source=key)
        assert _assert_every_flip_rejected(puzzle, solution) > 0


def test_janko_counts():
    if not JANKO.exists():
        pytest.skip(f"janko data not found at {JANKO}")
    puzzles = [CODEC.from_record(e)[0] for e in json.loads(JANKO.read_text())["data"].values()]
    assert len(puzzles) == 225
    assert sum(_has_unknown(p) for p in puzzles) == 1


# -- rules, by hand ------------------------------------------------------------------------

def _board(text: str) -> tuple[Puzzle, Solution]:
    """Rows of cells: a clue number, '?' clue, '#' shaded or '.' unshaded."""
    rows = [ln.split() for ln in text.strip().splitlines()]
    clues = np.full((len(rows), len(rows[0])), NO_CLUE, dtype=np.int32)
    grid = np.zeros(clues.shape, dtype=np.int16)
    for r, row in enumerate(rows):
        for c, tok in enumerate(row):
            if tok == "#":
                grid[r, c] = SHADED
            elif tok == "?":
                clues[r, c] = UNKNOWN
            elif tok != ".":
                clues[r, c] = int(tok)
    return Puzzle("nurikabe", *clues.shape, clues), Solution("nurikabe", grid)


def _codes(text: str) -> list[str]:
    return [v.code for v in CODEC.verify(*_board(text))]


def test_rules_each_code_and_pzpr_order():
    assert _codes("2 . #\n# # #\n1 # 1") == []
    assert _codes("2 . #\n# # #\n1 # .") == ["bkNoNum"]
    assert _codes("3 . #\n# # #\n1 # 1") == ["bkSizeNe"]
    assert _codes("1 # #\n# # #\n. # 1") == ["cs2x2", "bkNoNum"]
    assert _codes("1 # 1\n# . #\n1 # 1") == ["bkNoNum", "csDivide"]
    assert _codes("# # . 2\n# # # #\n1 . # #") == ["cs2x2", "cs2x2", "bkSizeNe"]
    # all five at once come in pzpr.js's checklist order
    codes = _codes("# # . 1 1\n# # # # #\n. # 3 . #\n. . # # .")
    assert list(dict.fromkeys(codes)) == ["cs2x2", "bkNoNum", "csDivide", "bkNumGe2", "bkSizeNe"]


def test_rules_question_mark_and_zero_clues():
    # a "?" clue counts as a clue but takes any size
    assert _codes("? . #\n# # #\n1 # 1") == []
    assert _codes("? . #\n# # #\n1 # .") == ["bkNoNum"]
    assert _codes("? . #\n# # #\n1 # #") == ["cs2x2"]
    assert _codes("? ? #\n# # #") == ["bkNumGe2"]
    # PPBench's pzpr.js skips the size test for a 0 clue too (checked against the oracle)
    assert _codes("0 #\n# #") == []
    assert _codes("0 .\n# #") == []
    # no shaded cell at all is fine when every island is right
    assert _codes("4 .\n. .") == []


def test_rule_cells():
    puzzle, solution = _board("1 # 2\n# . .\n. # .")
    by_code = {v.code: v.cells for v in CODEC.verify(puzzle, solution)}
    assert list(by_code) == ["bkNoNum", "csDivide", "bkSizeNe"]
    assert by_code["bkNoNum"] == ((2, 0),)
    assert by_code["csDivide"] == ((1, 0), (2, 1))  # all but one of three lone shaded cells
    assert set(by_code["bkSizeNe"]) == {(0, 2), (1, 1), (1, 2), (2, 2)}


# -- moves ---------------------------------------------------------------------------------

def test_clicks_toggle_and_clues_refuse():
    puzzle = CODEC.parse("nurikabe\n1 . .\n. . 2").puzzle
    moves = [formats.parse_moves(m) for m in (
        "mouse,left,3,1",                     # shade r0c1
        "mouse,left,5,1", "mouse,left,5,1",   # shade and unshade r0c2
        "mouse,left,1,3", "mouse,right,1,3",  # a dot replaces the shading of r1c0
        "mouse,left,1,1", "mouse,right,5,3",  # clue cells refuse both buttons
        "mouse,left,21,1", "key,1")]          # off the board; keys do nothing
    assert CODEC.apply_moves(puzzle, moves).grid.tolist() == [[0, 1, 0], [0, 0, 0]]


# -- formats -------------------------------------------------------------------------------

def test_pzprv3_text_is_pzpr_format():
    puzzle, solution = _board("2 . #\n# # #\n? # .")
    text = CODEC.to_pzprv3(puzzle, solution)
    assert text == "pzprv3\nnurikabe\n3\n3\n2 . # \n# # # \n- # . \n"
    parsed = CODEC.parse(text)
    assert (parsed.puzzle.clues == puzzle.clues).all() and parsed.solution == solution
    # dots read as unshaded; the URL carries the "?" as '.'
    dotted = CODEC.parse("pzprv3\nnurikabe\n3\n3\n2 + # \n# # # \n- # + \n")
    assert dotted.solution == solution
    assert CODEC.to_url(puzzle) == "https://puzz.link/p?nurikabe/3/3/2k.h"
    assert (CODEC.parse(CODEC.to_url(puzzle)).puzzle.clues == puzzle.clues).all()


def test_detection_through_the_registry():
    url = "https://puzz.link/p?nurikabe/3/3/2m."
    for text in (url, CODEC.to_pzprv3(CODEC.parse(url).puzzle), "nurikabe\n2 . .\n. . .\n- . ."):
        codec, parsed = registry.parse(text)
        assert codec.name == "nurikabe" and parsed.puzzle.rows == 3


def test_render_shows_clues_and_shading():
    puzzle, solution = _board("2 . #\n# # #\n? # 12")
    text = CODEC.render(puzzle, solution)
    assert isinstance(text, Text)
    assert "12" in text.plain and "?" in text.plain and "██" in text.plain


# -- bad input -----------------------------------------------------------------------------

@pytest.mark.parametrize("text, match", [
    ("https://puzz.link/p?nurikabe/10/10/ab-", "malformed number"),
    ("https://puzz.link/p?nurikabe/10/10/1-zz", "malformed number"),
    ("https://puzz.link/p?nurikabe/abc", "no <cols>/<rows> size"),
    ("https://puzz.link/p?nurikabe/0/10/g", "out of range"),
    ("https://puzz.link/p?tapa/10/10/g", "'tapa' puzzle, not 'nurikabe'"),
    ("pzprv3\nnurikabe\n3\n3\n2 . # \n# # \n", r":6: nurikabe grid: expected 3 entries"),
    ("pzprv3\nnurikabe\n3\n", "expected the grid size"),
    ("pzprv3\nnurikabe\n0\n3\n", r"in:3: pzprv3 text: expected the grid size .* found '0'"),
    ("pzprv3\nlightup\n1\n1\n. \n", r"in:2: pzprv3 text is a 'lightup' puzzle, not 'nurikabe'"),
    # the type's own line, after a `v:` line and blank lines too
    ("\npzprv3\nv:3.4\nlightup\n1\n1\n. \n", r"in:4: pzprv3 text is a 'lightup' puzzle"),
    ("nurikabe\n1 . .\n. .", r":3: nurikabe grid: expected 3 cells"),
    ("nurikabe\n1 . x", r":2: nurikabe cell 'x'"),
    # a long number overflowed the int32 clue grid: an OverflowError, "a bug in the codec"
    ("nurikabe\n. .\n. 99999999999", r"in:3: nurikabe clue 99999999999 is larger than the "
                                         "board, which has 4 cells"),
    ("pzprv3\nnurikabe\n1\n2\n3 . \n", r"in:5: nurikabe clue 3 is larger than the board"),
])
def test_bad_text_is_a_parse_error(text, match):
    with pytest.raises(ParseError, match=match):
        CODEC.parse(text, source="in")


def test_bad_janko_is_a_parse_error():
    problem = "2 2\n1 -\n- -"
    with pytest.raises(ParseError, match="solution is 3 rows x 2 columns, its problem 2x2"):
        CODEC.from_janko(problem, "3 2\nx x\nx x\n- x")
    with pytest.raises(ParseError, match="shades the clue"):
        CODEC.from_janko(problem, "2 2\nx x\nx x")
    with pytest.raises(ParseError, match="problem cell 'x'"):
        CODEC.from_janko("2 2\nx -\n- -", "2 2\n- x\nx x")
    with pytest.raises(ParseError, match="expected 2 lines of 2 entries"):
        CODEC.from_janko("2 2\n1 -", "2 2\n- x\nx x")
    with pytest.raises(ParseError, match="clue 99999999999 is larger than the board"):
        CODEC.from_janko("2 2\n99999999999 -\n- -", "2 2\n- x\nx x")
    # 0 0 was an empty puzzle that reached the model (and broke render after the rollouts)
    for size in ("0 0", "-1 2"):
        with pytest.raises(ParseError, match=f"size {size}: expected rows and cols >= 1"):
            CODEC.from_janko(size, size)


@pytest.mark.parametrize("clue", [39, 0])
def test_clue_outside_the_vocabulary(clue):
    puzzle, _ = _board(". . .\n. 1 .")
    puzzle.clues[0, 1] = clue
    expected = rf"nurikabe clue {clue} at r1c2 cannot be encoded.*1\.\.38 and '\?'"
    with pytest.raises(PtrmError, match=expected):
        CODEC.encode(puzzle)
    puzzle.clues[0, 1] = 38  # the largest that has a token
    assert PPBENCH.vocab.tokens[CODEC.encode(puzzle)[1]] == "nurikabe.clue.38"
    puzzle.clues[0, 1] = UNKNOWN
    assert PPBENCH.vocab.tokens[CODEC.encode(puzzle)[1]] == "nurikabe.clue.?"


def test_decode_never_raises_on_model_output():
    puzzle, solution = _board("2 . #\n# # #\n? # .")
    garbage = np.arange(100) * 7 % 400 - 50  # out-of-range ids and other types' tokens
    decoded = CODEC.decode(puzzle, garbage)
    assert decoded.grid.shape == (3, 3) and set(np.unique(decoded.grid)) <= {UNSHADED, SHADED}


def test_puzzle_too_large_for_the_family():
    puzzle = CODEC.parse("https://puzz.link/p?nurikabe/11/10/1zzzzzo").puzzle
    with pytest.raises(PtrmError, match="10 rows x 11 columns"):
        CODEC.encode(puzzle)
