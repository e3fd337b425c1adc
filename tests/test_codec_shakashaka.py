"""Shakashaka codec: every golden and janko puzzle through every format, tokens, rules, the
triangle-aware symmetries, and clear errors for bad input. Data is read in place from shared."""

from __future__ import annotations

import numpy as np
import pytest

from ptrm_cli import codec as registry
from ptrm_cli import dihedral
from ptrm_cli.codec import Puzzle, Solution
from ptrm_cli.errors import ParseError, PtrmError
from ptrm_codecs import formats
from ptrm_codecs.shakashaka import ShakashakaCodec

from shared_data import GOLDEN, JANKO_DIR, golden_params, janko_params

JANKO = JANKO_DIR / "shakashaka_10x10.json"

CODEC = ShakashakaCodec()

# golden shakashaka/10/10/1b..icp2bj.jd.ckehdk2dch.l..rbg.c.a (PPBENCH_FORMATS.md §4.6)
EXAMPLE_URL = "https://puzz.link/p?shakashaka/10/10/1b..icp2bj.jd.ckehdk2dch.l..rbg.c.a"
EXAMPLE_TOP = """\
B B . . B B . ◤ ◥ B
◤ ◥ . . ◤ ◥ . ◣ . ◥
◣ ◢ B B ◣ ◢ ◤ ◥ ◣ ◢
B ◤ ◥ . . B ◣ ◢ B B"""
GLYPH_CODE = {"◣": 2, "◢": 3, "◥": 4, "◤": 5}


GOLDEN_RECORDS = golden_params("shakashaka")
JANKO_ENTRIES = janko_params("shakashaka_10x10.json")


# -- golden: every size --------------------------------------------------------------------

@pytest.mark.parametrize("record", GOLDEN_RECORDS)
def test_golden_url_moves_verify_and_round_trips(record):
    puzzle, solution = CODEC.from_record(record, source="golden")
    assert (puzzle.cols, puzzle.rows) == (record["width"], record["height"])
    assert CODEC.verify(puzzle, solution) == []
    assert CODEC.to_url(puzzle).split("?", 1)[1] == record["puzzlink_url"].split("?", 1)[1]
    required = [formats.parse_moves(m) for m in formats.decode_solution(record)["moves_required"]]
    assert CODEC.apply_moves(puzzle, required) == solution
    assert len(CODEC.required_cells(puzzle, solution)) == record["number_required_moves"]
    parsed = CODEC.parse(CODEC.to_pzprv3(puzzle, solution))
    assert parsed.format == "pzprv3"
    assert (parsed.puzzle.clues == puzzle.clues).all() and parsed.solution == solution
    clue_only = CODEC.parse(CODEC.to_pzprv3(puzzle))
    assert (clue_only.puzzle.clues == puzzle.clues).all() and clue_only.solution is None


@pytest.mark.parametrize("record", GOLDEN_RECORDS)
def test_golden_tokens_and_symmetries(record):
    puzzle, solution = CODEC.from_record(record)
    for t in range(dihedral.COUNT):
        p, s = CODEC.transform(puzzle, solution, t)
        assert CODEC.verify(p, s) == [], dihedral.NAMES[t]
    if puzzle.rows > 10 or puzzle.cols > 10:
        with pytest.raises(PtrmError, match="does not fit"):
            CODEC.encode(puzzle)
        return
    _check_tokens(puzzle, solution)


@pytest.mark.parametrize("record", GOLDEN_RECORDS)
def test_golden_single_cell_changes_break_the_expected_rule(record):
    puzzle, solution = CODEC.from_record(record)
    _check_mutations(puzzle, solution, every_value=puzzle.rows * puzzle.cols <= 100)


def test_golden_counts():
    if not GOLDEN.exists():
        pytest.skip(f"golden set not found at {GOLDEN}")
    sizes = [(p.values[0]["width"], p.values[0]["height"]) for p in GOLDEN_RECORDS]
    assert len(sizes) == 15 and sizes.count((10, 10)) == 12


def test_worked_example():
    """PPBENCH_FORMATS.md §4.6: clues and the first four solution rows as drawn there."""
    puzzle = CODEC.parse(EXAMPLE_URL).puzzle
    assert puzzle.clues[0, :2].tolist() == [1, 1] and puzzle.clues[0, 4:6].tolist() == [-2, -2]
    assert puzzle.clues[0, 9] == 2 and puzzle.clues[2, 2:4].tolist() == [2, 1]
    assert puzzle.clues[9, 9] == 0  # the final `a`: 0 in the last cell
    if not GOLDEN.exists():
        pytest.skip(f"golden set not found at {GOLDEN}")
    record = next(p.values[0] for p in GOLDEN_RECORDS if p.values[0]["puzzlink_url"].endswith(
        EXAMPLE_URL.rsplit("/", 1)[1]))
    solution = CODEC.from_record(record)[1]
    for r, line in enumerate(EXAMPLE_TOP.splitlines()):
        for c, ch in enumerate(line.split()):
            assert (puzzle.clues[r, c] != -1) == (ch == "B")
            assert solution.grid[r, c] == GLYPH_CODE.get(ch, 0), (r, c)


# -- janko ---------------------------------------------------------------------------------

@pytest.mark.parametrize("entry", JANKO_ENTRIES)
def test_janko_solution_verifies_under_every_symmetry(entry):
    puzzle, solution = CODEC.from_record(entry, source="janko")
    for t in range(dihedral.COUNT):
        p, s = CODEC.transform(puzzle, solution, t)
        assert CODEC.verify(p, s) == [], dihedral.NAMES[t]
        assert (CODEC.parse(CODEC.to_url(p)).puzzle.clues == p.clues).all()
    _check_tokens(puzzle, solution)
    _check_mutations(puzzle, solution, every_value=False)


def test_janko_count():
    if not JANKO.exists():
        pytest.skip(f"janko data not found at {JANKO}")
    assert len(JANKO_ENTRIES) == 62


def test_janko_corners():
    """nw/ne/sw/se name the corner the black triangle fills: a 2x2 diamond in a 2x2 board."""
    puzzle, solution = CODEC.from_janko("2 2\n- -\n- -", "2 2\nnw ne\nsw se")
    assert solution.grid.tolist() == [[5, 4], [2, 3]]
    assert CODEC.verify(puzzle, solution) == []


def _check_tokens(puzzle, solution):
    family = CODEC.family()
    labels = CODEC.encode_label(puzzle, solution)
    inputs = CODEC.encode(puzzle)
    assert labels.shape == inputs.shape == (family.seq_len,)
    padded = np.ones((family.rows, family.cols), dtype=bool)
    padded[:puzzle.rows, :puzzle.cols] = False
    assert ((labels == 0) == padded.reshape(-1)).all() and ((inputs == 0) == padded.reshape(-1)).all()
    assert CODEC.decode(puzzle, labels) == solution
    names = {family.vocab.tokens[t] for t in inputs if t}
    assert names <= {"shakashaka.white", "shakashaka.black"} | {f"shakashaka.black.{n}" for n in range(5)}
    full = CODEC.trajectory(puzzle, solution, len(CODEC.required_cells(puzzle, solution)))
    assert full == solution
    state = CODEC.encode(puzzle, full)
    white = np.zeros((family.rows, family.cols), dtype=bool)
    white[:puzzle.rows, :puzzle.cols] = puzzle.clues == -1
    # with every triangle entered, the input side equals the labels except on empty white cells
    empty = white.reshape(-1) & (labels == family.vocab.id("shakashaka.empty"))
    assert (state[~empty] == labels[~empty]).all()
    assert (state[empty] == family.vocab.id("shakashaka.white")).all()


VALUES = (0, 2, 3, 4, 5)


def _check_mutations(puzzle, solution, every_value=True):
    """Every other value (or, to save time, the next one in VALUES) in every white cell is
    rejected: a triangle added next to a number first overfills it, anything else first breaks
    a white rectangle."""
    for r, c in zip(*np.nonzero(puzzle.clues == -1)):
        now = VALUES.index(solution.grid[r, c])
        others = VALUES[now + 1:] + VALUES[:now]
        for q in others if every_value else others[:1]:
            grid = solution.grid.copy()
            grid[r, c] = q
            broken = CODEC.verify(puzzle, Solution("shakashaka", grid))
            added = solution.grid[r, c] == 0
            expected = "nmTriangleGt" if added and _touches_number(puzzle, r, c) else "cuNotRectx"
            assert broken and broken[0].code == expected, (r, c, q, broken[:1])


def _touches_number(puzzle, r, c):
    return any(0 <= r + dr < puzzle.rows and 0 <= c + dc < puzzle.cols and puzzle.clues[r + dr, c + dc] >= 0
               for dr, dc in ((-1, 0), (1, 0), (0, -1), (0, 1)))


# -- moves, symmetries, plain grids ----------------------------------------------------------

@pytest.mark.parametrize("x, y, q", [(14.5, 0.5, 5), (17.5, 0.5, 4), (1.5, 3.5, 3), (0.5, 3.5, 2),
                                     (1, 3, 5)])
def test_click_quadrants(x, y, q):
    puzzle = CODEC.parse(EXAMPLE_URL).puzzle
    move = formats.parse_moves(f"mouse,left,{x},{y}")
    r, c = move[0].cell
    assert CODEC.apply_moves(puzzle, [move]).grid[r, c] == q


def test_clicks_toggle_and_black_cells_refuse_them():
    puzzle = CODEC.parse(EXAMPLE_URL).puzzle
    click = formats.parse_moves("mouse,left,6.5,0.5")  # r0c3, ◤
    dot = formats.parse_moves("mouse,right,7,1")
    assert CODEC.apply_moves(puzzle, [click, click]).grid[0, 3] == 0  # the same click again: a dot
    assert CODEC.apply_moves(puzzle, [click, click, click]).grid[0, 3] == 0  # which the next clears
    assert CODEC.apply_moves(puzzle, [click, click, click, click]).grid[0, 3] == 5
    assert CODEC.apply_moves(puzzle, [click, dot]).grid[0, 3] == 0
    black = formats.parse_moves("mouse,left,8.5,0.5")  # r0c4 is black
    assert not CODEC.apply_moves(puzzle, [black]).grid.any()


@pytest.mark.parametrize("t, mapping", [
    (1, {5: 2, 2: 3, 3: 4, 4: 5}),  # rot90 counter-clockwise: top-left goes to bottom-left
    (2, {5: 3, 3: 5, 2: 4, 4: 2}),
    (4, {5: 4, 4: 5, 2: 3, 3: 2}),  # flip left-right
    (5, {5: 2, 2: 5, 3: 4, 4: 3}),  # flip up-down
    (6, {5: 5, 3: 3, 4: 2, 2: 4}),  # transpose keeps the main diagonal's corners
    (7, {4: 4, 2: 2, 5: 3, 3: 5}),
])
def test_triangles_turn_with_the_grid(t, mapping):
    for old, new in mapping.items():
        assert CODEC.transform_answers(np.array([[old]], dtype=np.int16), t)[0, 0] == new


def test_transform_round_trips():
    puzzle = CODEC.parse(EXAMPLE_URL).puzzle
    grid = np.resize(np.array([0, 2, 3, 4, 5], dtype=np.int16), (10, 10)) * (puzzle.clues == -1)
    solution = Solution("shakashaka", grid)
    for t in range(dihedral.COUNT):
        p, s = CODEC.transform(puzzle, solution, t)
        back_p, back_s = CODEC.transform(p, s, dihedral.INVERSE[t])
        assert (back_p.clues == puzzle.clues).all() and back_s == solution


GRID = """\
shakashaka
. . 1
. . 5
5 . .

5 4 .
2 3 .
. + .
"""


def test_plain_grid_with_answers_is_detected():
    codec, parsed = registry.parse(GRID)
    assert codec.name == "shakashaka" and parsed.format == "grid"
    assert parsed.puzzle.clues.tolist() == [[-1, -1, 1], [-1, -1, -2], [-2, -1, -1]]
    assert parsed.solution.grid.tolist() == [[5, 4, 0], [2, 3, 0], [0, 0, 0]]
    assert CODEC.verify(parsed.puzzle, parsed.solution) == []
    assert CODEC.parse("..1\n...\n5..").solution is None


def test_pzprv3_format_is_exact():
    parsed = CODEC.parse(GRID)
    assert CODEC.to_pzprv3(parsed.puzzle, parsed.solution) == (
        "pzprv3\nshakashaka\n3\n3\n. . 1 \n. . 5 \n5 . . \n5 4 . \n2 3 . \n. . . \n")


def test_render_shows_triangles():
    parsed = CODEC.parse(GRID)
    text = CODEC.render(parsed.puzzle, parsed.solution).plain
    assert all(g in text for g in "◣◢◥◤■1")


def test_rules_each_fire():
    puzzle = CODEC.parse("...\n.2.\n...").puzzle
    nothing = Solution("shakashaka", np.zeros((3, 3), dtype=np.int16))
    assert [v.code for v in CODEC.verify(puzzle, nothing)] == ["brNoTriangle"]
    three = Solution("shakashaka", np.array([[0, 5, 0], [5, 0, 4], [0, 2, 0]], dtype=np.int16))
    assert [v.code for v in CODEC.verify(puzzle, three)][0] == "nmTriangleGt"
    one = Solution("shakashaka", np.array([[0, 0, 0], [0, 0, 0], [0, 2, 0]], dtype=np.int16))
    assert [v.code for v in CODEC.verify(puzzle, one)] == ["cuNotRectx", "nmTriangleLt"]
    # every area a rectangle (a diamond, a single cell), but the 2 touches one triangle
    puzzle = CODEC.parse("..2\n...").puzzle
    short = Solution("shakashaka", np.array([[5, 4, 0], [2, 3, 0]], dtype=np.int16))
    assert [v.code for v in CODEC.verify(puzzle, short)] == ["nmTriangleLt"]


# -- bad input -----------------------------------------------------------------------------

@pytest.mark.parametrize("text, match", [
    ("https://puzz.link/p?shakashaka/10/10/1b..icp2bj.jd.ckehdk2dch.l..rbg.c.ag", "after the 10x10 board"),
    ("https://puzz.link/p?shakashaka/10/10/1b..icp2bj", "covers"),
    ("https://puzz.link/p?shakashaka/10/10/1b..icp2bj.jd.ckehdk2dch.l..rbg.c.A", "'A'"),
    ("https://puzz.link/p?shakashaka/10/x/1b", "size"),
    ("pzprv3\nshakashaka\n1\n2\n1 - \n", "expected 0-4"),
    ("pzprv3\nshakashaka\n1\n2\n1 . \n. 6 \n", "expected a triangle"),
    ("pzprv3\nshakashaka\n1\n2\n1 . \n3 . \n", "triangle on the black cell r1c1"),
    ("pzprv3\nshakashaka\n2\n2\n1 . \n", "the shakashaka clue grid section ends early \\(expected 2 rows, found 1\\)"),
    ("shakashaka\n. .\n. .\n\n2 3\n", "answer grid has 1 lines"),
    ("shakashaka\n. .\n\n. .\n\n. .\n", "found 3 blocks"),
    ("shakashaka\n. .\n. 1\n\n2 3\n4\n", "expected 2 cells"),
    ("shakashaka\n", "input.txt:2: shakashaka grid: expected grid lines"),
])
def test_bad_input_is_a_parse_error(text, match):
    with pytest.raises(ParseError, match=match) as err:
        CODEC.parse(text, source="input.txt")
    assert "input.txt" in str(err.value)


def test_pzprv3_reads_dots_and_completion_marks():
    parsed = CODEC.parse("pzprv3\nshakashaka\n1\n3\n1 . . \n- + 2 \n")
    assert parsed.puzzle.clues.tolist() == [[1, -1, -1]]
    assert parsed.solution.grid.tolist() == [[0, 0, 2]]


def test_errors_name_the_line():
    with pytest.raises(ParseError, match=r"input.txt:8: shakashaka answer '7'"):
        CODEC.parse("pzprv3\nshakashaka\n2\n1\n. \n. \n. \n7 \n", source="input.txt")


def test_janko_bad_cells():
    with pytest.raises(ParseError, match="expected nw, ne, sw or se on a white cell"):
        CODEC.from_janko("1 2\nx -", "1 2\nnw -")
    with pytest.raises(ParseError, match="expected 0-4"):
        CODEC.from_janko("1 2\n? -", "1 2\n- -")


def test_clue_outside_the_token_range():
    puzzle = Puzzle("shakashaka", 1, 2, np.array([[6, -1]], dtype=np.int16))
    with pytest.raises(PtrmError, match=r"'shakashaka.black.6'.*0..4"):
        CODEC.encode(puzzle)


def test_decode_never_raises_on_nonsense():
    puzzle = CODEC.parse(EXAMPLE_URL).puzzle
    solution = CODEC.decode(puzzle, np.arange(100) * 37 % 400)
    assert set(np.unique(solution.grid)) <= {0, 2, 3, 4, 5}
    assert (solution.grid[puzzle.clues != -1] == 0).all()
