"""Lightup codec: every golden and janko puzzle through every format, tokens, rules, symmetries,
and clear errors for bad input. The data is read in place from the shared folder."""

from __future__ import annotations

import numpy as np
import pytest

from ptrm_cli import codec as registry
from ptrm_cli import dihedral
from ptrm_cli.codec import Puzzle, Solution
from ptrm_cli.errors import ParseError, PtrmError
from ptrm_codecs import formats
from ptrm_codecs.lightup import LightupCodec

from shared_data import GOLDEN, JANKO_DIR, golden_params, janko_params

JANKO = JANKO_DIR / "akari_10x10.json"

CODEC = LightupCodec()

# golden akari/10/10/i.uc5.ich.b.uah.i.i.jd.h9bl.ibh.h (PPBENCH_FORMATS.md §4.2)
EXAMPLE_URL = "https://puzz.link/p?akari/10/10/i.uc5.ich.b.uah.i.i.jd.h9bl.ibh.h"
EXAMPLE_SOLUTION = """\
..LB.....L
...L.....B
..B.B.L.BL
...BBL.BL.
..L.......
...B....B.
.LB.L.BL..
LBL.B.LBLB
.......LB.
.LB.L..B.L"""


GOLDEN_RECORDS = golden_params("lightup")
JANKO_ENTRIES = janko_params("akari_10x10.json")


# -- golden: every size --------------------------------------------------------------------

@pytest.mark.parametrize("record", GOLDEN_RECORDS)
def test_golden_url_moves_verify_and_round_trips(record):
    puzzle, solution = CODEC.from_record(record, source="golden")
    assert (puzzle.cols, puzzle.rows) == (record["width"], record["height"])
    assert CODEC.verify(puzzle, solution) == []
    # URL re-encoding is byte-identical to the golden body (trailing "/" included)
    assert CODEC.to_url(puzzle).split("?", 1)[1] == record["puzzlink_url"].split("?", 1)[1]
    # moves_required alone solves to the same grid, and those are the cells a solver fills
    required = [formats.parse_moves(m) for m in formats.decode_solution(record)["moves_required"]]
    assert CODEC.apply_moves(puzzle, required) == solution
    assert len(CODEC.required_cells(puzzle, solution)) == record["number_required_moves"]
    # pzprv3 both ways
    parsed = CODEC.parse(CODEC.to_pzprv3(puzzle, solution))
    assert parsed.format == "pzprv3"
    assert (parsed.puzzle.clues == puzzle.clues).all() and parsed.solution == solution
    clue_only = CODEC.parse(CODEC.to_pzprv3(puzzle))
    assert (clue_only.puzzle.clues == puzzle.clues).all() and clue_only.solution is None


@pytest.mark.parametrize("record", GOLDEN_RECORDS)
def test_golden_tokens(record):
    puzzle, solution = CODEC.from_record(record)
    if puzzle.rows > 10 or puzzle.cols > 10:
        with pytest.raises(PtrmError, match="does not fit"):
            CODEC.encode(puzzle)
        return
    _check_tokens(puzzle, solution)


@pytest.mark.parametrize("record", GOLDEN_RECORDS)
def test_golden_single_cell_changes_break_the_expected_rule(record):
    _check_mutations(*CODEC.from_record(record))


def test_golden_counts():
    if not GOLDEN.exists():
        pytest.skip(f"golden set not found at {GOLDEN}")
    sizes = [(p.values[0]["width"], p.values[0]["height"]) for p in GOLDEN_RECORDS]
    assert len(sizes) == 15 and sizes.count((10, 10)) == 8


def test_worked_example():
    """PPBENCH_FORMATS.md §4.2: the decoded clues and the solution as drawn there."""
    puzzle = CODEC.parse(EXAMPLE_URL).puzzle
    assert puzzle.clues[0, 3] == -2 and puzzle.clues[1, 9] == 2 and puzzle.clues[2, 2] == 0
    assert puzzle.clues[7, 7] == 4 and puzzle.clues[9, 2] == 1
    rows = EXAMPLE_SOLUTION.splitlines()
    lights = np.array([[ch == "L" for ch in row] for row in rows])
    walls = np.array([[ch == "B" for ch in row] for row in rows])
    assert ((puzzle.clues != -1) == walls).all()
    assert CODEC.verify(puzzle, Solution("lightup", lights.astype(np.int16))) == []


# -- janko ---------------------------------------------------------------------------------

@pytest.mark.parametrize("entry", JANKO_ENTRIES)
def test_janko_solution_verifies_under_every_symmetry(entry):
    puzzle, solution = CODEC.from_record(entry, source="janko")
    for t in range(dihedral.COUNT):
        p, s = CODEC.transform(puzzle, solution, t)
        assert CODEC.verify(p, s) == [], dihedral.NAMES[t]
        assert (CODEC.parse(CODEC.to_url(p)).puzzle.clues == p.clues).all()
    _check_tokens(puzzle, solution)
    _check_mutations(puzzle, solution)


def test_janko_count():
    if not JANKO.exists():
        pytest.skip(f"janko data not found at {JANKO}")
    assert len(JANKO_ENTRIES) == 105


def _check_tokens(puzzle, solution):
    family = CODEC.family()
    labels = CODEC.encode_label(puzzle, solution)
    inputs = CODEC.encode(puzzle)
    assert labels.shape == inputs.shape == (family.seq_len,)
    assert labels.max() < len(family.vocab)
    padded = np.ones((family.rows, family.cols), dtype=bool)  # a smaller board sits top-left
    padded[:puzzle.rows, :puzzle.cols] = False
    assert ((labels == 0) == padded.reshape(-1)).all() and ((inputs == 0) == padded.reshape(-1)).all()
    assert CODEC.decode(puzzle, labels) == solution
    names = [family.vocab.tokens[t] for t in inputs if t]
    assert set(names) <= {"lightup.white", "lightup.wall"} | {f"lightup.wall.{n}" for n in range(5)}
    # a trajectory state shows its lights on the input side; labels keep the wall tokens
    half = CODEC.trajectory(puzzle, solution, len(CODEC.required_cells(puzzle, solution)) // 2)
    state = CODEC.encode(puzzle, half)
    assert int((state == family.vocab.id("lightup.light")).sum()) == int(half.grid.sum())
    walls = np.zeros((family.rows, family.cols), dtype=bool)
    walls[:puzzle.rows, :puzzle.cols] = puzzle.clues != -1
    assert (labels[walls.reshape(-1)] == inputs[walls.reshape(-1)]).all()


def _check_mutations(puzzle, solution):
    """Flipping any white cell is rejected, first by the rule the flip must break."""
    for r, c in zip(*np.nonzero(puzzle.clues == -1)):
        grid = solution.grid.copy()
        grid[r, c] = 1 - grid[r, c]
        broken = CODEC.verify(puzzle, Solution("lightup", grid))
        if grid[r, c] == 1:  # a new light always sees the light that lit its cell
            expected = "akariDup"
        else:  # a removed light leaves its numbered walls short, else its own cell dark
            expected = "nmAkariNe" if _touches_number(puzzle, r, c) else "ceDark"
        assert broken and broken[0].code == expected, (r, c, broken[:1])


def _touches_number(puzzle, r, c):
    return any(0 <= r + dr < puzzle.rows and 0 <= c + dc < puzzle.cols and puzzle.clues[r + dr, c + dc] >= 0
               for dr, dc in ((-1, 0), (1, 0), (0, -1), (0, 1)))


# -- plain grids, detection, rendering -----------------------------------------------------

GRID = """\
lightup
. 1 . -
# . . .
. . 0 .
"""


def test_plain_grid_with_header_is_detected():
    codec, parsed = registry.parse(GRID)
    assert codec.name == "lightup" and parsed.format == "grid"
    assert parsed.puzzle.clues.tolist() == [[-1, 1, -1, -2], [-1, -1, -1, -1], [-1, -1, 0, -1]]
    assert parsed.solution.grid[1, 0] == 1 and parsed.solution.grid.sum() == 1


def test_plain_grid_without_spaces_and_without_answers():
    parsed = CODEC.parse(".1.-\n....\n..0.")
    assert parsed.puzzle.clues[0, 3] == -2 and parsed.solution is None


def test_pzprv3_format_is_exact():
    puzzle = CODEC.parse(".1.-\n#...\n..0.").puzzle
    solution = Solution("lightup", np.array([[0, 0, 0, 0], [1, 0, 0, 0], [0, 0, 0, 0]], dtype=np.int16))
    assert CODEC.to_pzprv3(puzzle, solution) == "pzprv3\nlightup\n3\n4\n. 1 . - \n# . . . \n. . 0 . \n"


def test_pzprv3_reads_dots_and_a_completion_grid():
    text = "pzprv3\nlightup\n2\n2\n1 # \n+ . \n- . \n. . \n"
    parsed = CODEC.parse(text)
    assert parsed.puzzle.clues.tolist() == [[1, -1], [-1, -1]]
    assert parsed.solution.grid.tolist() == [[0, 1], [0, 0]]


def test_pzprv3_under_the_url_name_akari_reads_as_lightup():
    """Detected as lightup by its type line, then refused as "an 'akari' puzzle, not 'lightup'"."""
    text = "pzprv3\nakari\n2\n2\n1 # \n+ . \n- . \n. . \n"
    assert registry.detect(text).name == "lightup"
    parsed = CODEC.parse(text)
    assert parsed.puzzle.clues.tolist() == [[1, -1], [-1, -1]]
    assert parsed.solution.grid.tolist() == [[0, 1], [0, 0]]


def test_url_aliases_and_pzv_form():
    a = CODEC.parse(EXAMPLE_URL).puzzle
    b = CODEC.parse("http://pzv.jp/p.html?akari/10/10/i.uc5.ich.b.uah.i.i.jd.h9bl.ibh.h").puzzle
    assert (a.clues == b.clues).all() and CODEC.key(a) == EXAMPLE_URL


def test_render_shows_walls_and_lights():
    parsed = CODEC.parse(GRID)
    text = CODEC.render(parsed.puzzle, parsed.solution).plain
    assert "●" in text and "■" in text and "1" in text


def test_rules_each_fire():
    puzzle = CODEC.parse(".1.\n...\n...").puzzle
    two = Solution("lightup", np.array([[0, 0, 0], [1, 0, 1], [0, 0, 0]], dtype=np.int16))
    assert [v.code for v in CODEC.verify(puzzle, two)] == ["akariDup", "nmAkariNe", "ceDark"]
    split = Solution("lightup", np.array([[1, 0, 1], [0, 0, 0], [0, 0, 0]], dtype=np.int16))
    assert [v.code for v in CODEC.verify(puzzle, split)] == ["nmAkariNe", "ceDark"]  # the wall splits row 0
    none = Solution("lightup", np.zeros((3, 3), dtype=np.int16))
    assert [v.code for v in CODEC.verify(puzzle, none)] == ["nmAkariNe", "ceDark"]


# -- bad input -----------------------------------------------------------------------------

@pytest.mark.parametrize("text, match", [
    ("https://puzz.link/p?akari/10/10/i.uc5.ich.b.uah.i.i.jd.h9bl.ibh.hzzz", "after the 10x10 board"),
    ("https://puzz.link/p?akari/10/10/i.uc5.ich.b.uah", "lightup URL body: it covers 58 cells, but its 10x10 board has 100"),
    ("https://puzz.link/p?akari/10/10/i.uc5.ich.b.uah.i.i.jd.h9bl.ibh.H", "'H'"),
    ("https://puzz.link/p?akari/10/10/i.uc5.ich.b.uah.i.i.jd.h9bl.ibh.f", "'f'"),
    ("https://puzz.link/p?akari/i.uc5", "size"),
    ("https://puzz.link/p?nurikabe/2/2/g", "not 'lightup'"),
    ("pzprv3\nlightup\n2\n2\n1 . \n. \n", "expected 2 entries"),
    ("pzprv3\nlightup\n1\n2\n7 . \n", "wall number 7 is outside 0..4"),
    ("pzprv3\nlightup\n1\n2\nx . \n", "expected a wall number"),
    ("lightup\n. . .\n. .\n", "expected 3 cells"),
    ("lightup\n. .\n\n. .\n", "one block"),
    ("lightup\n", "input.txt:2: lightup grid: expected grid lines"),  # not "found 0 blocks"
])
def test_bad_input_is_a_parse_error(text, match):
    with pytest.raises(ParseError, match=match) as err:
        CODEC.parse(text, source="input.txt")
    assert "input.txt" in str(err.value)


def test_errors_name_the_line():
    with pytest.raises(ParseError, match=r"input.txt:6: lightup cell 'x'"):
        CODEC.parse("pzprv3\nlightup\n2\n2\n. . \n. x \n", source="input.txt")


def test_clue_outside_the_token_range():
    puzzle = Puzzle("lightup", 2, 2, np.array([[5, -1], [-1, -1]], dtype=np.int16))
    with pytest.raises(PtrmError, match=r"'lightup.wall.5'.*0..4"):
        CODEC.encode(puzzle)


def test_janko_light_on_a_wall_is_an_error():
    with pytest.raises(ParseError, match="light on the wall at r1c1"):
        CODEC.from_janko("1 1\nx", "1 1\no")


def test_janko_wall_number_past_4_is_a_parse_error():
    """A long one overflowed int16: an OverflowError, reported as a bug in the codec."""
    for number in ("7", "99999999999"):
        with pytest.raises(ParseError, match=f"problem cell '{number}' at r1c1: expected 0-4"):
            CODEC.from_janko(f"1 2\n{number} -", "1 2\n- -")


def test_too_large_for_the_family():
    puzzle = CODEC.parse("https://puzz.link/p?akari/11/10/zzzzzp").puzzle
    with pytest.raises(PtrmError, match=r"lightup puzzle of 10 rows x 11 columns does not fit"):
        CODEC.encode_label(puzzle, Solution("lightup", np.zeros((10, 11), dtype=np.int16)))


def test_decode_never_raises_on_nonsense():
    puzzle = CODEC.parse(EXAMPLE_URL).puzzle
    tokens = np.arange(100) * 37 % 400  # includes ids outside the vocabulary
    solution = CODEC.decode(puzzle, tokens)
    assert set(np.unique(solution.grid)) <= {0, 1}
    assert (solution.grid[puzzle.clues != -1] == 0).all()
