"""Tapa codec: every golden puzzle through every format, every clue form through the URL and
pzprv3 codings, tokens, rules, symmetries, and clear errors for bad input. Tapa has no janko
data; the golden set is read in place from the shared folder."""

from __future__ import annotations

from itertools import product

import numpy as np
import pytest
from rich.text import Text

from ptrm_cli import codec as registry
from ptrm_cli import dihedral
from ptrm_cli.codec import Puzzle, Solution
from ptrm_cli.errors import ParseError, PtrmError
from ptrm_codecs import formats
from ptrm_codecs.families import PPBENCH, TAPA_CLUES, tapa_token
from ptrm_codecs.tapa import SHADED, UNKNOWN, UNSHADED, TapaCodec, clue_fits

from shared_data import golden_params


CODEC = TapaCodec()

# what one flipped cell of a valid solution can break (PPBENCH_FORMATS.md §4.5)
BREAKS_IF_SHADED = {"cs2x2", "ceTapaNe", "csDivide"}
BREAKS_IF_UNSHADED = {"brNoShade", "ceTapaNe", "csDivide"}

#: every clue pzpr.js accepts, in every order: the URL and pzprv3 keep the order as given
ALL_CLUES = [clue for n in range(1, 5) for clue in product((UNKNOWN, *range(9)), repeat=n)
             if clue_fits(clue)]


GOLDEN_RECORDS = golden_params("tapa")


def _body(url: str) -> str:
    return formats.parse_url(url).body


def _has_unknown(puzzle: Puzzle) -> bool:
    return any(UNKNOWN in clue for row in puzzle.clues for clue in row)


def _puzzle_of(clues: list[tuple[int, ...]], cols: int = 10) -> Puzzle:
    rows = -(-len(clues) // cols)
    flat = clues + [()] * (rows * cols - len(clues))
    return Puzzle("tapa", rows, cols, tuple(tuple(flat[r * cols:(r + 1) * cols]) for r in range(rows)))


def _codes(text: str) -> list[str]:
    """A plain tapa grid: clues as in pzprv3 ('-' for ?), '#' shaded, '.' unshaded."""
    parsed = CODEC.parse("tapa\n" + text)
    empty = Solution("tapa", np.zeros((parsed.puzzle.rows, parsed.puzzle.cols), np.int16))
    solution = parsed.solution or empty
    return [v.code for v in CODEC.verify(parsed.puzzle, solution)]


# -- golden: every size --------------------------------------------------------------------

@pytest.mark.parametrize("record", GOLDEN_RECORDS)
def test_golden_url_moves_verify_and_round_trips(record):
    puzzle, solution = CODEC.from_record(record, source="golden")
    assert (puzzle.cols, puzzle.rows) == (record["width"], record["height"])
    assert CODEC.verify(puzzle, solution) == []
    assert _body(CODEC.to_url(puzzle)) == _body(record["puzzlink_url"])
    required = [formats.parse_moves(m) for m in formats.decode_solution(record)["moves_required"]]
    assert CODEC.apply_moves(puzzle, required) == solution
    assert len(CODEC.required_cells(puzzle, solution)) == record["number_required_moves"]
    parsed = CODEC.parse(CODEC.to_pzprv3(puzzle, solution))
    assert parsed.format == "pzprv3"
    assert parsed.puzzle.clues == puzzle.clues and parsed.solution == solution
    clue_only = CODEC.parse(CODEC.to_pzprv3(puzzle))
    assert clue_only.puzzle.clues == puzzle.clues and clue_only.solution is None
    body = CODEC.to_pzprv3(puzzle, solution).split("\n", 4)[4]
    plain = CODEC.parse("tapa\n" + body)
    assert plain.format == "grid" and plain.puzzle.clues == puzzle.clues and plain.solution == solution


@pytest.mark.parametrize("record", GOLDEN_RECORDS)
def test_golden_tokens(record):
    puzzle, solution = CODEC.from_record(record, source="golden")
    if puzzle.rows > 10 or puzzle.cols > 10:
        with pytest.raises(PtrmError, match="does not fit"):
            CODEC.encode(puzzle)
        return
    vocab = PPBENCH.vocab
    inputs, labels = CODEC.encode(puzzle), CODEC.encode_label(puzzle, solution)
    assert CODEC.decode(puzzle, labels) == solution
    for r in range(puzzle.rows):
        for c in range(puzzle.cols):
            k = r * 10 + c
            clue = puzzle.clues[r][c]
            if clue:  # clue cells copy their input token into the label
                assert vocab.tokens[inputs[k]] == tapa_token(clue) and labels[k] == inputs[k]
            else:
                assert vocab.tokens[inputs[k]] == "tapa.blank"
                assert vocab.tokens[labels[k]] == ("tapa.shaded" if solution.grid[r, c] else "tapa.unshaded")
    k = len(CODEC.required_cells(puzzle, solution)) // 2
    state = CODEC.encode(puzzle, CODEC.trajectory(puzzle, solution, k))
    assert sum(vocab.tokens[t] == "tapa.shaded" for t in state) == k


@pytest.mark.parametrize("record", GOLDEN_RECORDS)
def test_golden_transforms_and_flips(record):
    puzzle, solution = CODEC.from_record(record, source="golden")
    for t in range(dihedral.COUNT):
        p, s = CODEC.transform(puzzle, solution, t)
        assert CODEC.verify(p, s) == [], dihedral.NAMES[t]
        r, c = next((r, c) for r in range(puzzle.rows) for c in range(puzzle.cols) if puzzle.clues[r][c])
        tr, tc = dihedral.map_cell(r, c, puzzle.rows, puzzle.cols, t)
        assert p.clues[tr][tc] == puzzle.clues[r][c]
    flips = 0
    for r in range(puzzle.rows):
        for c in range(puzzle.cols):
            if not CODEC.is_answer_cell(puzzle, r, c):
                continue
            grid = solution.grid.copy()
            grid[r, c] = UNSHADED if grid[r, c] == SHADED else SHADED
            violations = CODEC.verify(puzzle, Solution("tapa", grid))
            allowed = BREAKS_IF_SHADED if grid[r, c] == SHADED else BREAKS_IF_UNSHADED
            assert violations and violations[0].code in allowed, (r, c, violations[:1])
            flips += 1
    assert flips == record["number_total_solution_moves"]


def test_golden_single_shaded_cell():
    # PPBENCH_FORMATS.md §1: tapa/10/10/g1p0n0zzzx is solved by shading r0c0 alone
    puzzle = CODEC.parse("http://puzz.link/p?tapa/10/10/g1p0n0zzzx").puzzle
    grid = np.zeros((10, 10), np.int16)
    grid[0, 0] = SHADED
    assert CODEC.verify(puzzle, Solution("tapa", grid)) == []
    assert [v.code for v in CODEC.verify(puzzle, Solution("tapa", grid * 0))] == ["brNoShade", "ceTapaNe"]


def test_golden_worked_example():
    # PPBENCH_FORMATS.md §4.5: a7 → 1,1 at cell 0; ae → 2,2 at 7; 0 at 24; 9 → 1,1,1,1 at 27;
    # ag → 2,4 at 42
    url = "https://puzz.link/p?tapa/10/10/a7laev0h9tagt4t0h9va7l0"
    parsed = CODEC.parse(url)
    flat = [clue for row in parsed.puzzle.clues for clue in row]
    assert (flat[0], flat[7], flat[24], flat[27], flat[42]) == ((1, 1), (2, 2), (0,), (1, 1, 1, 1), (2, 4))
    assert CODEC.to_url(parsed.puzzle) == url


# -- clue codings --------------------------------------------------------------------------

def test_every_clue_form_round_trips_in_order():
    numeric = {tuple(sorted(c)) for c in ALL_CLUES if UNKNOWN not in c}
    unknown = {tuple(sorted(c)) for c in ALL_CLUES if UNKNOWN in c}
    assert numeric | unknown == set(TAPA_CLUES) and len(unknown) == 19  # PPBENCH_FORMATS.md §6.1
    puzzle = _puzzle_of(ALL_CLUES)
    assert CODEC.parse(CODEC.to_url(puzzle)).puzzle.clues == puzzle.clues
    assert CODEC.parse(CODEC.to_pzprv3(puzzle)).puzzle.clues == puzzle.clues


def test_clue_codes():
    def code(*clue):
        return _body(CODEC.to_url(_puzzle_of([clue], cols=1)))

    assert code(1, 1, 1, 1) == "9" and code(UNKNOWN) == "." and code(0) == "0"
    assert code(UNKNOWN, UNKNOWN) == "a0" and code(1, 1) == "a7" and code(2, 4) == "ag"
    assert code(1, 1, 1) == "bl" and code(UNKNOWN, 1, 1, 1) == "cz"
    # the quad code of 1,1,1,1 reads too, and is written back as 9
    assert CODEC.parse("https://puzz.link/p?tapa/1/1/d7").puzzle.clues == (((1, 1, 1, 1),),)


def test_each_vocabulary_clue_has_its_token():
    puzzle = _puzzle_of([tuple(reversed(c)) for c in TAPA_CLUES])  # token names sort the clue
    names = [PPBENCH.vocab.tokens[t] for t in CODEC.encode(puzzle)][:len(TAPA_CLUES)]
    assert names == [tapa_token(c) for c in TAPA_CLUES]


# -- rules, by hand ------------------------------------------------------------------------

def test_rules_each_code_and_pzpr_order():
    assert _codes("1 .\n. .") == ["brNoShade", "ceTapaNe"]
    assert _codes("0 .\n. .") == ["brNoShade"]
    assert _codes("- .\n. .") == ["brNoShade"]  # pzpr.js: a lone ? also matches an empty ring
    assert _codes("# # .\n# # .\n. . 4") == ["cs2x2", "ceTapaNe"]
    assert _codes("# . .\n. 1,1 .\n. . #") == ["csDivide"]
    assert _codes("# # . #\n# # . .\n. . . 1") == ["cs2x2", "ceTapaNe", "csDivide"]


def test_ring_reading():
    assert _codes("# # .\n# 3 .\n. . .") == []  # a run that wraps past the top-left corner
    assert _codes("# # #\n# 8 #\n# # #") == []
    assert _codes("# # #\n# 7 #\n# # #") == ["ceTapaNe"]
    assert _codes("# # #\n# 1,- .\n. . .") == ["ceTapaNe"]  # one run of 4, not two
    assert _codes("# # #\n# 4,- .\n. . #") == ["csDivide"]  # runs 4 and 1
    assert _codes(". # #\n# 1,2 #\n# # #") == ["ceTapaNe"]  # one run of 7
    # the board's edge reads as unshaded
    assert _codes("3 #\n# #") == []
    assert _codes("2 # #\n. # .") == []
    assert _codes("- # #\n. . #") == []


def test_rule_cells():
    puzzle = CODEC.parse("tapa\n# # . #\n# # . .\n. . . 1")
    by_code = {v.code: v.cells for v in CODEC.verify(puzzle.puzzle, puzzle.solution)}
    assert by_code == {"cs2x2": ((0, 0), (0, 1), (1, 0), (1, 1)), "ceTapaNe": ((2, 3),),
                       "csDivide": ((0, 3),)}


def test_clicks_toggle_and_clues_refuse():
    puzzle = CODEC.parse("tapa\n1 . .\n. . 2").puzzle
    moves = [formats.parse_moves(m) for m in ("mouse,left,3,1", "mouse,left,5,1", "mouse,left,5,1",
                                              "mouse,left,1,3", "mouse,right,1,3", "mouse,left,1,1")]
    assert CODEC.apply_moves(puzzle, moves).grid.tolist() == [[0, 1, 0], [0, 0, 0]]


# -- formats -------------------------------------------------------------------------------

def test_pzprv3_text_is_pzpr_format():
    parsed = CODEC.parse("tapa\n1,3 # .\n- # #")
    assert parsed.puzzle.clues == (((1, 3), (), ()), ((UNKNOWN,), (), ()))
    assert CODEC.to_pzprv3(parsed.puzzle, parsed.solution) == "pzprv3\ntapa\n2\n3\n1,3 # . \n- # # \n"
    # dots read as unshaded; a crosses section after the grid is ignored
    dotted = CODEC.parse("pzprv3\ntapa\n2\n3\n1,3 # + \n- # # \n0 0 \n0 0 \n")
    assert dotted.solution == parsed.solution


def test_detection_through_the_registry():
    url = "https://puzz.link/p?tapa/3/2/a9k"
    for text in (url, CODEC.to_pzprv3(CODEC.parse(url).puzzle), "tapa\n1,3 . .\n. . ."):
        codec, parsed = registry.parse(text)
        assert codec.name == "tapa" and parsed.puzzle.clues[0][0] == (1, 3)


def test_render_shows_clues_and_shading():
    parsed = CODEC.parse("tapa\n1,3 # .\n- # #")
    text = CODEC.render(parsed.puzzle, parsed.solution)
    assert isinstance(text, Text)
    # a clue of several numbers keeps its commas: "13" read as thirteen
    assert "1,3" in text.plain and "13" not in text.plain
    assert "?" in text.plain and "██" in text.plain


# -- bad input -----------------------------------------------------------------------------

@pytest.mark.parametrize("text, match", [
    ("https://puzz.link/p?tapa/3/3/azn", "tapa clue 5,5 at r1c1 cannot occur"),
    ("https://puzz.link/p?tapa/3/3/e0", "clue code 'e0'"),
    ("https://puzz.link/p?tapa/3/3/ga", "clue code 'a'"),
    ("https://puzz.link/p?tapa/3/3/a.", "clue code 'a.'"),
    ("https://puzz.link/p?tapa/3", "no <cols>/<rows> size"),
    ("https://puzz.link/p?nurikabe/3/3/g", "'nurikabe' puzzle, not 'tapa'"),
    ("pzprv3\ntapa\n2\n2\n1 . \n", r":5: the tapa grid section ends early"),
    ("pzprv3\ntapa\n1\n2\n9 . \n", r":5: tapa clue 9 at r1c1 cannot occur"),
    ("tapa\n1,x .", r":2: tapa cell '1,x'"),
    ("tapa\n2,2,2 .", "tapa clue 2,2,2 at r1c1 cannot occur"),
    ("tapa\n1,0 .", "tapa clue 1,0 at r1c1 cannot occur"),
    ("tapa\n1 .\n.", r":3: tapa grid: expected 2 cells"),
])
def test_bad_text_is_a_parse_error(text, match):
    with pytest.raises(ParseError, match=match):
        CODEC.parse(text, source="in")


def test_janko_is_not_supported():
    with pytest.raises(ParseError, match="janko records are not supported"):
        CODEC.from_record({"problem": "1 1\n-", "solution": "1 1\n-"})


@pytest.mark.parametrize("text, name", [("tapa\n- .", "tapa.clue.?"), ("tapa\n1,- .", "tapa.clue.?,1")])
def test_question_mark_clues_have_tokens(text, name):
    puzzle = CODEC.parse(text).puzzle
    assert PPBENCH.vocab.tokens[CODEC.encode(puzzle)[0]] == name


def test_decode_never_raises_on_model_output():
    puzzle = CODEC.parse("tapa\n1,3 . .\n. . .").puzzle
    decoded = CODEC.decode(puzzle, np.arange(100) * 7 % 400 - 50)
    assert decoded.grid.shape == (2, 3) and set(np.unique(decoded.grid)) <= {UNSHADED, SHADED}
