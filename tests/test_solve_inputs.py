"""`ptrm solve` as a puzzle person meets it: how it reads what they paste or save, and how the
answer looks where they read it (a narrow terminal, no colour). Each test is a bug found by
trying; tests/test_solve.py has the formats, exit codes and the JSON schema."""

from __future__ import annotations

import pytest

from fixtures_models import installed_codecs
from test_solve import ckpt, ptrm  # noqa: F401 (fixture)


def need(*types):
    missing = [t for t in types if t not in installed_codecs()]
    if missing:
        pytest.skip(f"codec(s) {', '.join(missing)} not installed")


# -- the answer as drawn ------------------------------------------------------------------------

def test_a_grid_wider_than_the_terminal_keeps_its_rows_whole(ckpt, monkeypatch):
    """COLUMNS=40 and a 10-column heyawake (41 characters a row): Rich broke every row in two,
    the wall at its right edge alone on the next line."""
    need("heyawake")
    from ptrm_cli.console import console

    monkeypatch.setattr(console, "width", 40)
    grid = "heyawake\n" + "0 0 0 0 0 1 1 1 1 1\n" * 2 + "\n" + ". . . . . . . . . .\n" * 2
    r = ptrm("solve", "-", "-c", ckpt, "--K", 1, "--D", 1, input=grid)
    assert r.exit_code in (0, 1), r.output
    lines = r.stdout.splitlines()
    half = "────" * 4 + "───"
    assert lines[0] == f"┌{half}┬{half}┐" and lines[4] == f"└{half}┴{half}┘", r.stdout
    assert all(len(ln) == 41 and ln[0] == ln[-1] == "│" for ln in (lines[1], lines[3]))


# -- what --json writes reads back ------------------------------------------------------------

def test_the_json_pzprv3_reads_back_as_the_same_puzzle(ckpt):
    """A heyawake with a loose border (a wall that closes no room; PPBench golden has this
    one): --json wrote the room-id pzprv3 form, which has no place for it, so feeding the
    answer back read a puzzle with other rules."""
    need("heyawake")
    import json

    from ptrm_cli import solver

    url = "https://puzz.link/p?heyawake/8/8/022gkf3gc2007o00o01s01v07"
    r = ptrm("solve", url, "-c", ckpt, "--K", 1, "--D", 1, "--json")
    assert r.exit_code in (0, 1), r.output
    out = json.loads(r.stdout)
    _, given = solver.parse_puzzle(url)
    _, back = solver.parse_puzzle(out["solution"]["pzprv3"])
    assert back.puzzle.clues == given.puzzle.clues
    assert back.solution.grid.tolist() == out["solution"]["grid"]


# -- one clear message, naming the file and line ---------------------------------------------

def test_a_type_the_file_names_but_no_codec_reads_names_the_file(ckpt, tmp_path):
    """`pzprv3\\nslither\\n...` and `?slither/...` said only "unknown puzzle type 'slither'":
    not which file, nor which line."""
    (tmp_path / "a.pzprv3").write_text("pzprv3\nv:x\nslither\n3\n3\n. . . \n")
    (tmp_path / "b.url").write_text("\nhttps://puzz.link/p?slither/3/3/abc\n")
    (tmp_path / "c.json").write_text('{"pid": "slither", "puzzlink_url": "x"}\n')
    for name, where in (("a.pzprv3", "a.pzprv3:3:"), ("b.url", "b.url:"), ("c.json", "c.json:")):
        r = ptrm("solve", tmp_path / name, "-c", ckpt)
        assert r.exit_code == 2, r.output
        assert f"{where} unknown puzzle type 'slither'" in " ".join(r.output.split()), r.output
    # --codec naming no type is the option's mistake, not the file's
    r = ptrm("solve", tmp_path / "b.url", "-c", ckpt, "--codec", "slither")
    assert r.exit_code == 2 and "error: unknown puzzle type 'slither'" in r.output, r.output


def test_two_urls_a_blank_line_apart_name_the_second(ckpt, tmp_path):
    """The error named line 2, the blank one, as where the second puzzle starts."""
    need("lightup")
    url = "https://puzz.link/p?akari/2/2/j"
    (tmp_path / "two.txt").write_text(f"{url}\n\n{url}\n")
    r = ptrm("solve", tmp_path / "two.txt", "-c", ckpt)
    assert r.exit_code == 2 and "two.txt:3: expected one puzzle" in r.output, r.output


def test_dash_at_a_terminal_says_it_is_waiting_for_the_puzzle(monkeypatch, capsys):
    """`ptrm solve -` typed at a terminal, nothing piped: it waited in silence, like a hang."""
    import io
    import sys

    from ptrm_cli import solver

    class Terminal(io.TextIOWrapper):
        def isatty(self):
            return True

    url = "https://puzz.link/p?akari/2/2/j"
    monkeypatch.setattr(sys, "stdin", Terminal(io.BytesIO(url.encode() + b"\n")))
    assert solver.read_input("-") == (url + "\n", "<stdin>")
    assert "reading the puzzle from stdin" in capsys.readouterr().err
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(url.encode())))  # a pipe
    assert solver.read_input("-")[0] == url and capsys.readouterr().err == ""


def test_a_percent_encoded_url_reads_as_the_url(ckpt):
    """`?akari%2F2%2F2%2Fh` (the query as a form or a redirect link encodes it) said "cannot
    tell the puzzle type: expected a puzz.link URL", of a puzz.link URL."""
    need("lightup")
    import json

    plain = "https://puzz.link/p?akari/2/2/j"
    outs = []
    for url in (plain, plain.replace("akari/2/2/", "akari%2F2%2F2%2F"),
                plain.replace("akari/2/2/", "akari%2f2%2f2%2f")):
        r = ptrm("solve", url, "-c", ckpt, "--K", 1, "--D", 1, "--json")
        assert r.exit_code in (0, 1), r.output
        outs.append(json.loads(r.stdout))
    assert all(o["type"] == "lightup" and o["format"] == "url" for o in outs)
    assert outs[0]["solution"] == outs[1]["solution"] == outs[2]["solution"]


def test_text_given_as_the_argument_reads_as_the_same_file_would(ckpt, tmp_path):
    """`ptrm solve "$(cat puzzle.pzprv3)"` of a file saved on Windows (a BOM): "cannot tell
    the puzzle type", while the file itself was read; its line ends, too, are a file's."""
    need("shakashaka")
    import json
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "examples" / "puzzles" /
            "shakashaka.pzprv3").read_text()
    for inline in ("\ufeff" + text.replace("\n", "\r\n"), text.replace("\n", "\r")):
        r = ptrm("solve", inline, "-c", ckpt, "--K", 1, "--D", 1, "--json")
        assert r.exit_code in (0, 1), r.output
        out = json.loads(r.stdout)
        assert (out["type"], out["format"], out["source"]) == ("shakashaka", "pzprv3",
                                                                "<argument>")


def test_a_json_record_given_as_the_argument_reads_as_one(ckpt):
    """The README: a record "from a file, a pipe, - (stdin) or the argument itself". As the
    argument, a record whose text holds "\\n" escapes was taken for a file name ("no such
    file", the whole record repeated); a long name is shortened in that message now."""
    need("sudoku")
    import json
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "examples" / "puzzles" /
            "sudoku.txt").read_text()
    record = json.dumps({"type": "sudoku", "text": text})
    r = ptrm("solve", record, "-c", ckpt, "--K", 1, "--D", 1, "--json")
    assert r.exit_code in (0, 1), r.output
    out = json.loads(r.stdout)
    assert (out["type"], out["format"], out["source"]) == ("sudoku", "record", "<argument>")
    r = ptrm("solve", "nothing/" + "x" * 200, "-c", ckpt)
    assert r.exit_code == 2 and "... (208 characters): no such file" in r.output
    assert "x" * 100 not in r.output


def test_a_grid_claimed_by_another_types_sniff_says_how_to_name_its_type():
    """A header-less 6x6 grid of a plugin's type was read as a sudoku and refused cell by cell
    ("sudoku cell '8'") with no word on why sudoku, or on the way out."""
    from ptrm_cli import solver
    from ptrm_cli.errors import ParseError

    if "sudoku" not in installed_codecs():
        pytest.skip("the sudoku codec is not installed")
    grid = "1 . . 8 . .\n. . . . . 3\n. 2 . . . .\n. . . . 4 .\n3 . . . . .\n. . 5 . . 1\n"
    with pytest.raises(ParseError, match="sudoku cell '8'") as e:
        solver.parse_puzzle(grid, source="mine.txt")
    assert "reads like sudoku" in e.value.hint and "--codec TYPE" in e.value.hint
    with pytest.raises(ParseError) as e:  # a grid that names its type: no such guess
        solver.parse_puzzle("sudoku\n" + grid, source="mine.txt")
    assert e.value.hint is None or "reads like" not in e.value.hint


# -- what was given in the wrong place -----------------------------------------------------------

def test_a_folder_given_as_the_task_file_is_said_to_be_one(tmp_path):
    """`ptrm solve . --task X` said ".: no such file", of a folder that is there; and without
    --task, "is a directory" said nothing of what to give instead."""
    (tmp_path / "arc-agi_evaluation_challenges.json").write_text("{}")
    r = ptrm("solve", tmp_path, "--task", "X")
    text = " ".join(r.output.split())
    assert r.exit_code == 2 and f"error: {tmp_path} is a folder, not an ARC task file" in text
    assert "pass the file itself; this one holds " \
           f"{tmp_path / 'arc-agi_evaluation_challenges.json'}" in text, text
    r = ptrm("solve", tmp_path / "nothere.json", "--task", "X")  # a path that is not there
    assert r.exit_code == 2 and "nothere.json: no such file" in r.output
    r = ptrm("solve", tmp_path)
    assert r.exit_code == 2 and "is a directory, not a puzzle file" in r.output
    assert "hint: pass a puzzle file in it" in r.output, r.output


def test_an_unknown_arc_task_is_said_before_the_progress_bar(tmp_path):
    """A task the checkpoint has no views of was found inside `solve_task`, under the progress
    bar: its error came after the blank line the bar leaves on stderr."""
    T = pytest.importorskip("test_arc_solve")  # its tiny ARC model and Kaggle files
    from ptrm_cli.arc_data import build_arc
    from ptrm_cli.engine.checkpoint import save_checkpoint
    from ptrm_cli.engine.data import load_dataset
    from ptrm_codecs.families import ARC

    known = T._write_kaggle(tmp_path, "training", {"aaaa0001": T.SUBSETS["training"]["aaaa0001"]})
    other = T._write_kaggle(tmp_path, "other", T.OTHER)
    build_arc([known], tmp_path / "ds", num_aug=0, seed=0)
    ids = load_dataset(tmp_path / "ds").meta["identifiers"]
    ck = save_checkpoint(tmp_path / "ck", T._model(len(ids)), ARC.vocab, {}, identifiers=ids)
    r = ptrm("solve", other, "--task", "cafe0001", "-c", ck, "--device", "cpu")
    assert r.exit_code == 2, r.output
    assert r.stderr.startswith("error: checkpoint ") and \
        "no puzzle identifiers for ARC task 'cafe0001'" in " ".join(r.stderr.split()), r.stderr


def test_a_json_record_cut_short_says_so(tmp_path):
    """`{"type": "sudoku", "text": "12...` (a record copied in part) said only "not valid
    JSON: Unterminated string starting (column 28)", and nothing about what was wrong."""
    from ptrm_cli import solver
    from ptrm_cli.errors import ParseError

    for cut in ('{"type": "sudoku", "text": "1234567', '{"type": "sudoku", "text": "12"',
                '{"type": "sudoku", '):
        with pytest.raises(ParseError, match="not valid JSON") as e:
            solver.parse_puzzle(cut + "\n", source="cut.json")
        assert "was it cut short?" in e.value.hint, (cut, e.value.hint)
    with pytest.raises(ParseError) as e:  # whole, but wrong inside: no word of cutting
        solver.parse_puzzle('{"type": "sudoku" "text": "1"}', source="bad.json")
    assert "correct it at that column" in e.value.hint and "cut" not in e.value.hint
    (tmp_path / "cut.json").write_text('{"type": "sudoku", "text": "1234567')
    r = ptrm("solve", tmp_path / "cut.json")
    assert r.exit_code == 2 and "hint: the text ends before its JSON does" in r.output, r.output


@pytest.mark.parametrize("text", ["[" * 5000 + "]" * 5000,
                                  '{"a":' * 5000 + "1" + "}" * 5000,
                                  '{"type": "sudoku", "text": ' + "[" * 5000 + "]" * 5000 + "}"],
                         ids=["list", "object", "record"])
@pytest.mark.parametrize("task", [[], ["--task", "t"]], ids=["solve", "task"])
def test_json_nested_too_deeply_is_a_parse_error(tmp_path, text, task):
    """10 KB of nested brackets: json.loads raised RecursionError, which the readers'
    `except ValueError` let through as a traceback (the ARC sniff warned of a broken plugin)."""
    (tmp_path / "deep.json").write_text(text)
    r = ptrm("solve", tmp_path / "deep.json", *task)
    assert r.exit_code == 2, r.output
    assert "not valid JSON: Nested too deeply" in r.stderr and "warning" not in r.stderr, \
        r.stderr


@pytest.mark.parametrize("device, hint", [
    ("gpu", "a GPU is cuda: --device cuda for the first, cuda:N"),
    ("cuda:x", "cuda:N (N = 0, 1, ...)"),
    ("CPU", "--device cpu: device names are lower case"),
    ("tpu", "leave --device out: auto (the default)"),
])
def test_a_device_name_torch_does_not_use_says_which_it_does(device, hint):
    """`--device gpu` and `--device cuda:x` said what it expects, but nothing about the name
    that was meant."""
    from ptrm_cli.devices import resolve_device
    from ptrm_cli.errors import PtrmError

    with pytest.raises(PtrmError, match="expected auto, cpu, cuda, cuda:N or mps") as e:
        resolve_device(device)
    assert hint in e.value.hint, e.value.hint
    r = ptrm("solve", "x", "--device", device)
    said = " ".join(r.output.split())
    assert r.exit_code == 2 and "hint: " in said and hint in said.split("hint: ")[1], r.output


def test_a_codecs_own_reading_error_points_at_its_page():
    """A codec's reader says what is wrong (a URL body too short, a grid row too short) but
    gave no hint, though every mistake has one: its `ptrm codecs TYPE` page shows each form."""
    from ptrm_cli import solver
    from ptrm_cli.errors import ParseError

    if "lightup" not in installed_codecs():
        pytest.skip("lightup codec not installed")
    for text in ("https://puzz.link/p?akari/10/10/...", "lightup\n. . .\n. .\n"):
        with pytest.raises(ParseError) as e:
            solver.parse_puzzle(text, source="p")
        assert e.value.hint == "`ptrm codecs lightup` shows each form it reads, with an example"


def test_a_url_inside_a_pair_of_quotes_is_read():
    """`ptrm solve "'https://...'"` (quoted twice, or a file holding "https://...") blamed
    the URL body for the closing quote."""
    from ptrm_cli import solver

    if "lightup" not in installed_codecs():
        pytest.skip("lightup codec not installed")
    url = "https://puzz.link/p?akari/4/4/jbj2.h./"
    c, parsed = solver.parse_puzzle(url)
    plain = c.to_url(parsed.puzzle)
    for text in (f"'{url}'", f'"{url}"\n', f" ' {url} ' "):
        c, parsed = solver.parse_puzzle(text)
        assert c.name == "lightup" and c.to_url(parsed.puzzle) == plain, text


def test_a_checkpoint_that_does_not_exist_says_what_c_takes(tmp_path):
    """solve, eval and bench load through solver.load_model: "-c X: no such file or
    directory" came without a hint in solve and eval."""
    from ptrm_cli import solver
    from ptrm_cli.errors import PtrmError

    with pytest.raises(PtrmError, match="no such file or directory") as e:
        solver.load_model(str(tmp_path / "nope"), "cpu")
    assert e.value.hint == solver.CHECKPOINT_HINT
