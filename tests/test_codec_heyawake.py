"""Heyawake codec: golden PPBench puzzles, janko puzzles, formats, tokens, rules, symmetries."""

from __future__ import annotations

import json
import re
from urllib.parse import quote

import numpy as np
import pytest
from rich.text import Text

from ptrm_cli import codec as registry
from ptrm_cli import dihedral
from ptrm_cli.codec import Solution
from ptrm_cli.errors import ParseError, PtrmError
from ptrm_codecs.families import PPBENCH
from ptrm_codecs.formats import Move
from ptrm_codecs.heyawake import SHADED, UNSHADED, HeyawakeCodec, top_cell

from shared_data import GOLDEN, SHARED  # noqa: E402
JANKO = SHARED / "data" / "janko" / "heyawake_10x10.json"
LOOSE = "heyawake/8/8/022gkf3gc2007o00o01s01v07"

codec = HeyawakeCodec()


def _golden() -> list[dict]:
    if not GOLDEN.exists():
        return []
    records = [json.loads(line) for line in GOLDEN.read_text().splitlines() if line.strip()]
    return [r for r in records if r["pid"] == "heyawake"]


def _janko() -> list[tuple[str, dict]]:
    if not JANKO.exists():
        return []
    return sorted(json.loads(JANKO.read_text())["data"].items())


GOLDEN_RECORDS = _golden()
JANKO_ENTRIES = _janko()
needs_golden = pytest.mark.skipif(not GOLDEN_RECORDS, reason=f"PPBench golden set not found at {GOLDEN}")
needs_janko = pytest.mark.skipif(not JANKO_ENTRIES, reason=f"janko heyawake data not found at {JANKO}")


def _body(url: str) -> str:
    return url.split("?", 1)[1].rstrip("/")


@pytest.fixture(scope="module")
def golden():
    return [(r, *codec.from_record(r, source="golden")) for r in GOLDEN_RECORDS]


@pytest.fixture(scope="module")
def janko():
    return [(k, *codec.from_record(e, source=k)) for k, e in JANKO_ENTRIES]


def _same(a, b):
    return a.rows == b.rows and a.cols == b.cols and a.clues == b.clues


# -- golden PPBench puzzles -------------------------------------------------------------------

@needs_golden
def test_golden_counts(golden):
    sizes = [(p.cols, p.rows) for _, p, _ in golden]
    assert len(golden) == 15 and sizes.count((10, 10)) == 7


@needs_golden
def test_golden_moves_solve_and_url_reencodes(golden):
    for record, puzzle, solution in golden:
        assert codec.verify(puzzle, solution) == [], record["puzzlink_url"]
        assert _body(codec.to_url(puzzle)) == _body(record["puzzlink_url"])


@needs_golden
def test_golden_pzprv3_round_trips(golden):
    for record, puzzle, solution in golden:
        upstream = codec.parse(codec.to_pzprv3(puzzle, solution, filever=1))
        assert upstream.format == "pzprv3"
        assert _same(upstream.puzzle, puzzle) and upstream.solution == solution
        vendored = codec.parse(codec.to_pzprv3(puzzle, solution))
        assert vendored.solution == solution
        if LOOSE in record["puzzlink_url"]:
            # room ids cannot hold loose borders: the vendored file drops them
            assert not vendored.puzzle.clues.vwall.any() and puzzle.clues.vwall.any()
            assert len(vendored.puzzle.clues.rooms()) == len(puzzle.clues.rooms()) == 1
        else:
            assert _same(vendored.puzzle, puzzle), record["puzzlink_url"]


@needs_golden
def test_golden_number_sits_on_pzpr_top_cell(golden):
    """Golden 9x8: room 3's clue 0 is at r7c0 (leftmost column, then topmost), not r3c3."""
    (puzzle,) = [p for _, p, _ in golden if (p.cols, p.rows) == (9, 8)]
    assert puzzle.clues.numbers[7, 0] == 0 and puzzle.clues.numbers[3, 3] == -1


@needs_golden
def test_golden_vendored_file_layout(golden):
    for _, puzzle, solution in golden:
        lines = codec.to_pzprv3(puzzle, solution).split("\n")
        rows, cols = puzzle.rows, puzzle.cols
        assert lines[:4] == ["pzprv3", "heyawake", str(rows), str(cols)]
        rooms = puzzle.clues.rooms()
        assert lines[4] == str(len(rooms))
        ids = [[int(t) for t in ln.split()] for ln in lines[5:5 + rows]]
        first_seen = list(dict.fromkeys(v for row in ids for v in row))
        assert first_seen == list(range(len(rooms)))  # rooms ordered by smallest cell index
        assert all(ln.endswith(" ") for ln in lines[5:-1]) and lines[-1] == ""
        assert len(lines) == 5 + 3 * rows + 1


@needs_golden
def test_golden_transforms_verify(golden):
    for _, puzzle, solution in golden:
        for t in range(dihedral.COUNT):
            p, s = codec.transform(puzzle, solution, t)
            assert (p.rows, p.cols) == dihedral.shape(puzzle.rows, puzzle.cols, t)
            assert codec.verify(p, s) == [], (puzzle.meta["url"], t)
            back, s_back = codec.transform(p, s, dihedral.INVERSE[t])
            assert _same(back, puzzle) and s_back == solution


def test_transform_moves_walls_and_the_number_to_the_new_top_cell():
    puzzle = codec.parse("heyawake\nb a\na a\n\n2 .\n1 .").puzzle
    assert puzzle.clues.numbers.tolist() == [[2, -1], [1, -1]]  # room a's top cell is r1c0
    flipped, _ = codec.transform(puzzle, None, 4)  # fliplr: room a is now r0c0, r1c0, r1c1
    assert flipped.clues.numbers.tolist() == [[1, 2], [-1, -1]]
    assert flipped.clues.vwall.tolist() == [[True], [False]]
    assert flipped.clues.hwall.tolist() == [[False, True]]


# -- janko puzzles ----------------------------------------------------------------------------

@needs_janko
def test_janko_solutions_verify_under_every_symmetry(janko):
    assert len(janko) == 123
    for key, puzzle, solution in janko:
        for t in range(dihedral.COUNT):
            p, s = codec.transform(puzzle, solution, t)
            assert codec.verify(p, s) == [], (key, t)


@needs_janko
def test_janko_numbers_move_to_top_cells(janko):
    for key, puzzle, _ in janko:
        board = puzzle.clues
        for room in board.rooms():
            off_top = [rc for rc in room if rc != top_cell(room) and board.numbers[rc] != -1]
            assert not off_top, key


# -- tokens -----------------------------------------------------------------------------------

def _token_cases(golden, janko):
    return ([(p, s) for _, p, s in golden if (p.rows, p.cols) == (10, 10)]
            + [(p, s) for _, p, s in janko])


@needs_golden
@needs_janko
def test_tokens_encode_and_labels_decode_back(golden, janko):
    cases = _token_cases(golden, janko)
    assert len(cases) == 7 + 123
    heyawake_ids = set(PPBENCH.vocab.ids_with_prefix("heyawake."))
    shaded = PPBENCH.vocab.id("heyawake.shaded")
    for puzzle, solution in cases:
        tokens = codec.encode(puzzle)
        assert tokens.shape == (100,) and set(tokens.tolist()) <= heyawake_ids
        labels = codec.encode_label(puzzle, solution)
        assert codec.decode(puzzle, labels) == solution
        state = codec.trajectory(puzzle, solution, 3)
        with_state = codec.encode(puzzle, state)
        assert (with_state == shaded).sum() == 3 == (state.grid == SHADED).sum()


def test_token_shows_walls_and_number_on_top_cell():
    puzzle = codec.parse("heyawake\na a b\nc a b\n\n. 2 .\n. . 1").puzzle
    names = [PPBENCH.vocab.name(int(t)) for t in codec.encode(puzzle).reshape(10, 10)[:2, :3].ravel()]
    assert names == ["heyawake.cell.-B.2", "heyawake.cell.R-.none", "heyawake.cell.--.1",
                     "heyawake.cell.R-.none", "heyawake.cell.R-.none", "heyawake.cell.--.none"]
    # the number 2 given at r0c1 belongs to room "a", whose top cell is r0c0
    assert puzzle.clues.numbers.tolist() == [[2, -1, 1], [-1, -1, -1]]


def test_smaller_puzzle_is_padded_top_left():
    puzzle = codec.parse("heyawake\na b\n\n1 .").puzzle
    tokens = codec.encode(puzzle).reshape(10, 10)
    assert (tokens[1:, :] == 0).all() and (tokens[:, 2:] == 0).all() and (tokens[0, :2] > 0).all()


def test_decode_of_garbage_is_unshaded():
    puzzle = codec.parse("heyawake\na b\n\n1 .").puzzle
    assert codec.decode(puzzle, np.zeros(100, dtype=np.int64)).grid.tolist() == [[0, 0]]


# -- rules ------------------------------------------------------------------------------------

def _mutation_cases(golden, janko):
    return ([(p, s) for _, p, s in golden if (p.rows, p.cols) == (10, 10)]
            + [(p, s) for _, p, s in janko[:10]])


@needs_golden
@needs_janko
def test_single_cell_mutations_fail_the_expected_rule(golden, janko):
    checked = 0
    for puzzle, solution in _mutation_cases(golden, janko):
        board = puzzle.clues
        room_of = {rc: room for room in board.rooms() for rc in room}
        for r in range(puzzle.rows):
            for c in range(puzzle.cols):
                grid = solution.grid.copy()
                grid[r, c] = SHADED - grid[r, c]
                codes = [v.code for v in codec.verify(puzzle, Solution("heyawake", grid))]
                numbered = board.numbers[top_cell(room_of[(r, c)])] >= 0
                if grid[r, c] == UNSHADED:  # a shaded cell lost: unique solutions break a rule
                    expected = {"bkShadeNe" if numbered else "bkUnshadeConsecGt3"}
                    if not grid.any():
                        expected = {"brNoShade"}
                elif _touches_shade(grid, r, c):
                    expected = {"csAdjacent"}
                else:
                    expected = {"cuDivideRB", "bkShadeNe"} if numbered else {"cuDivideRB"}
                assert codes and codes[0] in expected, (puzzle.meta, r, c, codes)
                checked += 1
    assert checked == (7 + 10) * 100


def _touches_shade(grid, r, c):
    rows, cols = grid.shape
    return any(0 <= r + dr < rows and 0 <= c + dc < cols and grid[r + dr, c + dc] == SHADED
               for dr, dc in ((-1, 0), (1, 0), (0, -1), (0, 1)))


def test_empty_board_is_no_shade_first():
    puzzle = codec.parse("heyawake\na b\na b\n\n1 .\n. .").puzzle
    codes = [v.code for v in codec.verify(puzzle, Solution("heyawake", np.zeros((2, 2), np.int16)))]
    assert codes == ["brNoShade", "bkShadeNe"]


LOOSE_31 = """pzprv3.1
heyawake
3
4
1 0 1 
0 0 0 
0 0 0 
0 0 0 0 
0 0 0 0 
. . . . 
. . . . 
. . . . 
. . . . 
. # . . 
. . . . 
"""


def test_loose_borders_count_in_unshaded_runs():
    parsed = codec.parse(LOOSE_31)
    assert len(parsed.puzzle.clues.rooms()) == 1
    violations = codec.verify(parsed.puzzle, parsed.solution)
    assert [v.code for v in violations] == ["bkUnshadeConsecGt3"]
    assert violations[0].cells == ((0, 0), (0, 1), (0, 2), (0, 3))
    assert "from r1c1 crosses" in violations[0].message   # cells named from 1, as elsewhere
    # one loose border fewer: the run crosses one border only
    parsed.puzzle.clues.vwall[0, 2] = False
    assert codec.verify(parsed.puzzle, parsed.solution) == []


def test_run_leaving_and_reentering_a_room_crosses_two_borders():
    parsed = codec.parse("heyawake\nA B A\nA A A\n\n. . .\n. . .\n\n+ + +\n+ # +")
    assert [v.code for v in codec.verify(parsed.puzzle, parsed.solution)] == ["bkUnshadeConsecGt3"]


def test_question_room_has_no_count():
    parsed = codec.parse("heyawake\na a\nb b\n\n? .\n0 .\n\n# .\n. .")
    assert parsed.puzzle.clues.numbers[0, 0] == -2
    assert codec.verify(parsed.puzzle, parsed.solution) == []
    assert codec.to_url(parsed.puzzle).endswith("/2/2/0o.0")


# -- formats ----------------------------------------------------------------------------------

SMALL = "heyawake\n0 0 1\n0 0 1\n\n. 1 .\n. . 0\n\n. # .\n. . ."


def test_small_puzzle_all_formats_agree():
    parsed = codec.parse(SMALL)
    assert parsed.format == "grid"
    puzzle, solution = parsed.puzzle, parsed.solution
    assert codec.verify(puzzle, solution) == []
    vendored = codec.to_pzprv3(puzzle, solution)
    assert vendored == ("pzprv3\nheyawake\n2\n3\n2\n0 0 1 \n0 0 1 \n1 . 0 \n. . . \n"
                        "+ # + \n+ + + \n")
    assert codec.to_pzprv3(puzzle, solution, filever=1) == (
        "pzprv3.1\nheyawake\n2\n3\n0 1 \n0 1 \n0 0 0 \n1 . 0 \n. . . \n+ # + \n+ + + \n")
    assert codec.to_pzprv3(puzzle).endswith(". . . \n. . . \n")
    url = codec.to_url(puzzle)
    for text in (url, vendored, codec.to_pzprv3(puzzle, solution, filever=1)):
        c, again = registry.parse(text)
        assert c.name == "heyawake" and _same(again.puzzle, puzzle)
    assert registry.parse(SMALL)[0].name == "heyawake"


def test_pzprv3_packed_into_a_url():
    parsed = codec.parse(SMALL)
    text = codec.to_pzprv3(parsed.puzzle, parsed.solution)
    url = "https://puzz.link/p?" + "/".join(quote(ln, safe="") for ln in text.rstrip("\n").split("\n"))
    c, again = registry.parse(url)
    assert c.name == "heyawake" and again.format == "pzprv3"
    assert _same(again.puzzle, parsed.puzzle) and again.solution == parsed.solution


def test_render_shows_numbers_and_shading():
    parsed = codec.parse(SMALL)
    assert isinstance(codec.render(parsed.puzzle), Text)
    plain = codec.render(parsed.puzzle, parsed.solution).plain
    assert "1" in plain and "0" in plain and "■" in plain
    numbered = Solution("heyawake", np.array([[1, 0, 0], [0, 0, 0]], dtype=np.int16))
    # a shaded clue: its number beside a ■ in plain text (reverse video alone was lost in a
    # file or a pipe), reversed on a terminal
    drawn = codec.render(parsed.puzzle, numbered)
    assert drawn.plain.splitlines()[1].startswith("│■1 ")
    assert any("reverse" in str(span.style) for span in drawn.spans)


def test_render_joins_the_walls_at_their_corners():
    """Every corner was a `·`, walls or not, and under an answer those dots stood among the
    unshaded cells' own: rooms now close with the junction their walls make, and a corner no
    wall meets is a dot only on an empty board."""
    # an L-shaped room 0 around a 2x2 room 1
    _, parsed = registry.parse("heyawake\n0 0 0\n1 1 0\n1 1 0\n\n. . .\n. . .\n. . .")
    assert codec.render(parsed.puzzle).plain.splitlines() == [
        "┌───────────┐",
        "│           │",
        "├───────┐   │",
        "│       │   │",
        "│   ·   │   │",
        "│       │   │",
        "└───────┴───┘"]
    answer = Solution("heyawake", np.zeros((3, 3), dtype=np.int16))
    drawn = codec.render(parsed.puzzle, answer).plain.splitlines()
    assert drawn[4] == "│       │   │"  # no corner dot among the answer's
    assert drawn[1] == "│ ·   ·   · │"


def test_a_loose_wall_ends_in_a_half_line():
    """A border that closes no room (PPBench golden has one) stops inside a room: `╶`, `╷`."""
    _, parsed = registry.parse("https://puzz.link/p?heyawake/8/8/022gkf3gc2007o00o01s01v07")
    plain = codec.render(parsed.puzzle).plain
    assert "╶───────┐" in plain and "╷" in plain


# -- bad input --------------------------------------------------------------------------------

@pytest.mark.parametrize("text, match", [
    ("https://puzz.link/p?heyawake/10/10/jh78", "too short"),
    ("https://puzz.link/p?heyawake/2/2/w000", "border character 'w'"),
    ("https://puzz.link/p?heyawake/2/2/00-zz", "do not decode"),
    ("https://puzz.link/p?heyawake/2", "no <cols>/<rows>"),
    ("pzprv3\nheyawake\n2\n2\n2\n0 1 \n0 \n. . \n. . \n", "expected 2 entries"),
    ("pzprv3\nheyawake\n2\n2\nx\n0 1 \n0 1 \n. . \n. . \n", "room count"),
    ("pzprv3\nheyawake\n2\n2\n2\n0 1 \n0 1 \nx . \n. . \n", "clue 'x'"),
    ("pzprv3.1\nheyawake\n2\n2\n2 \n0 \n0 0 \n. . \n. . \n", "border '2'"),
    ("heyawake\na a\n\n1 2", "several numbers"),
    ("heyawake\na a\nb b", "found 1 section"),
    ("heyawake\na a\n\n1 . .", "every section"),
    ("heyawake\na a\n\n1 .\n\n# x", "answer 'x'"),
])
def test_bad_input_is_a_parse_error(text, match):
    with pytest.raises(ParseError, match=match):
        codec.parse(text, source="t")


def test_bad_input_names_its_line():
    with pytest.raises(ParseError) as err:
        codec.parse("pzprv3\nheyawake\n2\n2\n2\n0 1 \n0 1 \n. x \n. . \n", source="f.txt")
    assert str(err.value).startswith("f.txt:8:")


def test_out_of_range_numbers_are_clear_errors():
    with pytest.raises(PtrmError, match=r"room number 40 at r1c1 .*0\.\.39"):
        codec.encode(codec.parse("heyawake\na b\n\n40 .").puzzle)
    # a "?" room constrains nothing, like a room without a number: same token
    assert (codec.encode(codec.parse("heyawake\na b\n\n. ?").puzzle)
            == codec.encode(codec.parse("heyawake\na b\n\n. .").puzzle)).all()
    big = "\n".join([" ".join("ab"[c % 2] for c in range(11))] * 11)
    with pytest.raises(PtrmError, match="does not fit"):
        codec.encode(codec.parse(f"heyawake\n{big}\n\n" + "\n".join([" ".join("." * 11)] * 11)).puzzle)
    with pytest.raises(PtrmError, match="filever"):
        codec.to_pzprv3(codec.parse("heyawake\na\n\n.").puzzle, filever=2)


def test_bad_records_are_parse_errors():
    with pytest.raises(ParseError, match="expected 'x' or '-'"):
        codec.from_record({"problem": "1 2\n1 -\n0 1", "solution": "1 2\nx o"})
    with pytest.raises(ParseError, match="room-id"):
        codec.from_record({"problem": "1 2\n1 -", "solution": "1 2\nx -"})
    with pytest.raises(ParseError, match="off the"):
        codec.apply_moves(codec.parse("heyawake\na\n\n.").puzzle,
                          [[Move("mouse", "left", 3, 1)]])


# -- the vendored pzprv3 file's room count and room ids -------------------------------------------

WORKED = "https://puzz.link/p?heyawake/10/10/jh78egs0k18l5aakl91fu00fvv00vv006e00g2121h22g4g2g2422g1"


def _solved_lines() -> list[str]:
    puzzle = codec.parse(WORKED).puzzle
    solution = Solution("heyawake", np.zeros((10, 10), dtype=np.int16))
    return codec.to_pzprv3(puzzle, solution).splitlines()


def test_room_count_must_match_the_room_ids():
    lines = _solved_lines()
    count = int(lines[4])  # pzprv3, heyawake, rows, cols, then the count
    for wrong in (count - 1, count + 1):
        text = "\n".join(lines[:4] + [str(wrong)] + lines[5:]) + "\n"
        with pytest.raises(ParseError, match=rf"room count {wrong} does not match the room-id "
                                             rf"grid, which makes {count} rooms") as err:
            codec.parse(text, source="f.txt")
        assert str(err.value).startswith("f.txt:5:")


@pytest.mark.parametrize("bad", ["X", "-1", "1.5"])
def test_room_ids_must_be_numbers(bad):
    lines = _solved_lines()
    row = lines[7].split()
    row[3] = bad
    text = "\n".join(lines[:7] + [" ".join(row) + " "] + lines[8:]) + "\n"
    with pytest.raises(ParseError, match=rf"room id '{re.escape(bad)}': expected a number "
                                         rf"0\.\.{int(lines[4]) - 1}") as err:
        codec.parse(text, source="f.txt")
    assert str(err.value).startswith("f.txt:8:")


def test_room_ids_must_be_below_the_count():
    """The same rooms under another name: the last room renamed to the count itself."""
    lines = _solved_lines()
    count, last_id = lines[4], str(int(lines[4]) - 1)
    first = next(k for k in range(5, 15) if last_id in lines[k].split())  # 0-based file line
    renamed = [" ".join(count if t == last_id else t for t in ln.split()) + " "
               for ln in lines[5:15]]
    text = "\n".join(lines[:5] + renamed + lines[15:]) + "\n"
    with pytest.raises(ParseError, match=rf"room id {count}: expected a number "
                                         rf"0\.\.{int(count) - 1}") as err:
        codec.parse(text, source="f.txt")
    assert str(err.value).startswith(f"f.txt:{first + 1}:")


def test_pzpr_border_section_after_the_answers_is_read_past():
    """pzpr.js appends rows lines of cols-1 and rows-1 lines of cols values when a border
    carries a cross (-1) or a line; ptrm ignores it, but only entries of that form."""
    lines = _solved_lines()
    crosses = ["0 " * 9] * 10 + ["0 " * 10] * 9
    crosses[0] = "-1 " + "0 " * 8
    read = codec.parse("\n".join(lines + crosses) + "\n")
    assert read.puzzle.clues == codec.parse(WORKED).puzzle.clues
    crosses[12] = "0 " * 9 + "x "
    with pytest.raises(ParseError, match="border section entry 'x'") as err:
        codec.parse("\n".join(lines + crosses) + "\n", source="f.txt")
    assert str(err.value).startswith(f"f.txt:{len(lines) + 13}:")
