"""What the six PPBench codecs' readers refuse, and what they must keep accepting.

Every malformed input is made here from a valid one (the worked examples of
PPBENCH_FORMATS.md §4): cut a pzprv3 file short, add a line or an entry, drop or add URL
characters. Each error must be a ParseError naming the source (and the line, for files).
"""

from __future__ import annotations

import re

import pytest

from ptrm_cli.errors import ParseError

URLS = {
    "sudoku": "https://puzz.link/p?sudoku/9/9/1o6h84k76h9j64i7h4k8h8i53j5h71k14h6o2",
    "lightup": "https://puzz.link/p?akari/10/10/i.uc5.ich.b.uah.i.i.jd.h9bl.ibh.h",
    "nurikabe": "https://puzz.link/p?nurikabe/10/10/g1m-14k1s1s1jem1zt1i1j",
    "heyawake": "https://puzz.link/p?heyawake/10/10/"
                "jh78egs0k18l5aakl91fu00fvv00vv006e00g2121h22g4g2g2422g1",
    "tapa": "https://puzz.link/p?tapa/10/10/a7laev0h9tagt4t0h9va7l0",
    "shakashaka": "https://puzz.link/p?shakashaka/10/10/1b..icp2bj.jd.ckehdk2dch.l..rbg.c.a",
}
TYPES = sorted(URLS)


@pytest.fixture(params=TYPES)
def example(request, installed_codec):
    """(codec, puzzle, the puzzle's pzprv3 lines as pzpr.js writes them)."""
    codec = installed_codec(request.param)
    puzzle = codec.parse(URLS[request.param]).puzzle
    return codec, puzzle, codec.to_pzprv3(puzzle).splitlines()


def refused(codec, text: str, match: str, line: int | None = None) -> ParseError:
    with pytest.raises(ParseError, match=match) as err:
        codec.parse(text, source="in.txt")
    where = f"in.txt:{line}: " if line is not None else "in.txt"
    assert str(err.value).startswith(where), str(err.value)
    return err.value


# -- pzprv3 -------------------------------------------------------------------------------------

def test_the_examples_read_back(example):
    codec, puzzle, lines = example
    assert codec.parse("\n".join(lines) + "\n").puzzle.clues is not None


@pytest.mark.parametrize("cut", [1, 3])
def test_a_file_cut_inside_its_last_section_is_refused(example, cut):
    codec, puzzle, lines = example
    kept = lines[:-cut]
    refused(codec, "\n".join(kept) + "\n",
            rf"ends early \(expected {puzzle.rows} rows, found {puzzle.rows - cut}\)",
            line=len(kept))


def test_text_after_the_board_is_refused(example):
    codec, _, lines = example
    refused(codec, "\n".join(lines + ["garbage here"]) + "\n",
            "unexpected text after the board: 'garbage here'", line=len(lines) + 1)


def test_pzpr_extras_after_the_board_are_read_past(example):
    """Blank lines, history/info JSON and trial data are pzpr.js's, not the board's."""
    codec, puzzle, lines = example
    for tail in (["", ""], ['history:{', ' "type": "pzpr",', ' "datas": []', '}'],
                 ['info:{"metadata": {"author": "x"}}'], ["TrialData(1)", "anything"]):
        assert codec.parse("\n".join(lines + tail) + "\n").puzzle.rows == puzzle.rows


@pytest.mark.parametrize("where", ["first", "last"])
@pytest.mark.parametrize("change", ["extra", "missing"])
def test_a_row_of_the_wrong_width_is_refused(example, where, change):
    codec, puzzle, lines = example
    k = 4 if codec.name == "sudoku" else 5  # 0-based: the first body line
    if codec.name == "heyawake":
        k += 1  # past the room count line
    if where == "last":
        k = len(lines) - 1
    tokens = lines[k].split()
    tokens = tokens + [tokens[-1]] if change == "extra" else tokens[:-1]
    bad = lines[:k] + [" ".join(tokens) + " "] + lines[k + 1:]
    refused(codec, "\n".join(bad) + "\n",
            rf"expected {len(lines[k].split())} entries on this line, found {len(tokens)}",
            line=k + 1)


def test_a_variant_line_moves_the_line_numbers(example):
    codec, _, lines = example
    text = "\n".join(lines[:1] + ["v:x"] + lines[1:] + ["garbage"]) + "\n"
    refused(codec, text, "unexpected text after the board", line=len(lines) + 2)


# -- puzz.link URLs -----------------------------------------------------------------------------

@pytest.mark.parametrize("name", TYPES)
def test_url_body_must_cover_the_board(name, installed_codec):
    codec = installed_codec(name)
    url = URLS[name]
    board = re.search(r"/(\d+)/(\d+)/", url).group(0).strip("/").replace("/", "x")
    refused(codec, url[:-1], rf"covers \d+ (cells|rooms), but its {board} board has \d+")
    refused(codec, url + "zzzz", rf"4 character\(s\) left over after the {board} board is full")
    refused(codec, url[:url.rindex("/") + 1], "covers 0|too short")


@pytest.mark.parametrize("name", TYPES)
def test_url_round_trip_is_exact(name, installed_codec):
    """What the encoders write (trailing blanks included) passes the coverage check."""
    codec = installed_codec(name)
    assert codec.to_url(codec.parse(URLS[name]).puzzle).split("?")[1] == URLS[name].split("?")[1]


@pytest.mark.parametrize("name, url, match", [
    # the 10x10 tapa of PPBENCH_FORMATS.md §1 with its rows typed as 9: the last run of blanks
    # covers the missing row, so the size was taken for the board's; the board was "10x9",
    # columns first as the URL gives them, where ptrm's sizes (--sizes) are rows first
    ("tapa", "tapa/10/9/g1p0n0zzzx",
     "covers 100 cells, but its 9 rows x 10 columns board has 90"),
    ("lightup", "akari/3/3/z", "covers 20 cells, but its 3x3 board has 9"),
    ("shakashaka", "shakashaka/3/3/z", "covers 20 cells, but its 3x3 board has 9"),
    ("sudoku", "sudoku/4/4/z", "covers 20 cells, but its 4x4 board has 16"),
    ("nurikabe", "nurikabe/3/3/-ffo", "covers 10 cells, but its 3x3 board has 9"),
    ("heyawake", "heyawake/2/2/00z", "covers 20 rooms, but its 2x2 board has 1"),
    ("lightup", "akari/3/3/zz", "covers at least 20 cells, but its 3x3 board has 9"),
])
def test_a_run_of_blanks_past_the_board_is_refused(name, url, match, installed_codec):
    refused(installed_codec(name), "https://puzz.link/p?" + url, match)


def test_a_4cell_numbers_own_blanks_may_run_past_the_board(installed_codec):
    """pzpr.js writes a number with two blanks ('a': 0) even where only one cell is left."""
    clues = installed_codec("lightup").parse("https://puzz.link/p?akari/2/2/ha").puzzle.clues
    assert clues[1].tolist() == [0, -1]


# -- headers, blank lines, separators -----------------------------------------------------------

@pytest.mark.parametrize("size", ["0", "-3", "ten"])
def test_a_pzprv3_size_that_is_not_a_positive_number_is_refused(example, size):
    """pzpr.js opens no file of size <= 0; neither does ptrm, and it says which line."""
    codec, _, lines = example
    bad = lines[:2] + [size] + lines[3:]
    refused(codec, "\n".join(bad) + "\n", "expected the (grid )?size .* whole numbers >= 1",
            line=3)


def test_blank_lines_before_the_text_count_in_line_numbers(example):
    codec, _, lines = example
    refused(codec, "\n \n" + "\n".join(lines + ["garbage"]) + "\n",
            "unexpected text after the board", line=len(lines) + 3)
    if codec.name in ("lightup", "nurikabe", "tapa", "shakashaka"):  # a grid like the file's
        grid = lines[4:4 + int(lines[2])]
        refused(codec, f"\n\n{codec.name}\n" + "\n".join(grid[:-1] + [grid[-1] + " . ."]),
                "expected .* on this line", line=len(grid) + 3)


def test_sudoku_grid_lines_are_the_files_after_blank_lines(installed_codec):
    codec = installed_codec("sudoku")
    rows = codec.to_pzprv3(codec.parse(URLS["sudoku"]).puzzle).splitlines()[3:12]
    bad = rows[:5] + ["x" + rows[5][1:]] + rows[6:]  # grid row 6
    refused(codec, "\n".join(bad[:3] + [""] + bad[3:]), "sudoku cell 'x'", line=7)
    refused(codec, "\nsudoku\n" + "\n".join(rows[:3] + ["", rows[3] + " 5"] + rows[4:]),
            "expected 9 cells on this line, found 10", line=7)


@pytest.mark.parametrize("digit", ["²", "٣"])  # isdigit() is True for both; int() reads '٣' as 3
@pytest.mark.parametrize("form", ["pzprv3", "grid"])
def test_a_digit_that_is_not_ascii_is_refused(example, form, digit):
    codec, puzzle, lines = example
    start = {"sudoku": 3, "heyawake": 5}.get(codec.name, 4)  # the grid's first line
    if form == "grid":
        if codec.name == "heyawake":
            pytest.skip("heyawake reads no plain grids")
        lines = [codec.name] + lines[start:start + puzzle.rows]
        start = 1
    k = next(k for k in range(start, len(lines)) if re.search("[0-9]", lines[k]))
    bad = lines[:k] + [re.sub("[0-9]", digit, lines[k], count=1)] + lines[k + 1:]
    err = refused(codec, "\n".join(bad) + "\n", digit, line=k + 1)
    assert "Error" not in str(err)  # a reader's message, not Python's (ValueError: ...)


def test_a_sudoku_answer_that_is_not_an_ascii_digit_is_refused(installed_codec):
    codec = installed_codec("sudoku")
    lines = codec.to_pzprv3(codec.parse(URLS["sudoku"]).puzzle).splitlines()
    lines[12] = "٢" + lines[12][1:]  # the first answer, given as the Arabic-Indic digit 2
    refused(codec, "\n".join(lines) + "\n", "sudoku answer '٢'", line=13)


@pytest.mark.parametrize("name", ["lightup", "shakashaka", "nurikabe", "tapa"])
def test_a_plain_grid_may_separate_cells_by_tabs(name, installed_codec):
    codec = installed_codec(name)
    puzzle = codec.parse(URLS[name]).puzzle
    grid = codec.to_pzprv3(puzzle).splitlines()[4:4 + puzzle.rows]
    tabbed = codec.parse(f"{name}\n" + "\n".join("\t".join(ln.split()) for ln in grid)).puzzle
    assert codec.key(tabbed) == codec.key(puzzle)


@pytest.mark.parametrize("name", ["nurikabe", "tapa"])
def test_two_grids_are_not_one_taller_grid(name, installed_codec):
    codec = installed_codec(name)
    puzzle = codec.parse(URLS[name]).puzzle
    grid = codec.to_pzprv3(puzzle).splitlines()[4:4 + puzzle.rows]
    refused(codec, f"{name}\n" + "\n".join(grid) + "\n\n" + "\n".join(grid),
            "a blank line inside the grid", line=puzzle.rows + 2)


@pytest.mark.parametrize("record, match", [
    ({"url": 5, "answer": [[0]]}, "'url' must be puzzle text"),
    ({"url": None, "answer": [[0]]}, "'url' must be puzzle text"),
    ({"puzzlink_url": 7, "solution_enc": ""}, "'puzzlink_url' must be puzzle text"),
    ({"solution_enc": ""}, "no 'puzzlink_url' \\(or 'puzzle_url'\\) field"),  # said 'found ""'
    ({"problem": ["1"], "solution": ""}, "'problem' must be puzzle text"),
    ({"url": "URL", "answer": "x"}, "'answer' must be {rows} rows of {cols} integers"),
    ({"url": "URL", "answer": [[0, None]]}, "'answer' must be {rows} rows of {cols} integers"),
    ({"url": "URL", "answer": [[0, 1]]}, "found 1x2"),
])
def test_a_record_field_of_the_wrong_kind_is_refused(example, record, match):
    codec, puzzle, _ = example
    record = {k: codec.to_url(puzzle) if v == "URL" else v for k, v in record.items()}
    match = match.format(rows=puzzle.rows, cols=puzzle.cols)
    with pytest.raises(ParseError, match=match) as err:
        codec.from_record(record, source="in.jsonl", line=4)
    assert str(err.value).startswith("in.jsonl:4: "), str(err.value)


def test_reading_a_grid_for_its_type_survives_a_plugin_that_exits(monkeypatch):
    """`read_by` tries every installed reader on a grid no sniff claims: one that called
    sys.exit ended `ptrm solve` silently with its status; now it is a reader that said no."""
    from types import SimpleNamespace

    from ptrm_cli import codec as registry

    def exits(text, source=None):
        raise SystemExit(3)

    def reads(text, source=None):
        return "read"

    fakes = {name: SimpleNamespace(codec=SimpleNamespace(name=name, parse=fn))
             for name, fn in (("exiting", exits), ("reading", reads))}
    monkeypatch.setattr(registry, "_load", lambda: fakes)
    assert registry.read_by(". 1\n2 .\n") == ["reading"]
