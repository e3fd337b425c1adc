"""Source readers (the registry keyed by file kind, each built-in kind) and the sudoku solver."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pytest

from ptrm_cli import build as B
from ptrm_cli import codec as registry
from ptrm_cli import sources as src
from ptrm_cli import sudoku_solver
from ptrm_cli.codec import Solution

from shared_data import GOLDEN, SHARED  # noqa: E402
JANKO = SHARED / "data" / "janko"
SUDOKU = SHARED / "data" / "sudoku"


def installed() -> set[str]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return set(registry.registered())


def read(path: Path) -> tuple[src.SourceReader | None, list[src.Item], list]:
    reader = src.reader_for(path)
    bad: list = []
    items = list(reader.read(path, lambda loc, msg, type_name=None: bad.append((loc, msg)))) if reader else []
    return reader, items, bad


# -- file kinds ---------------------------------------------------------------------------------

def test_builtin_kinds_are_registered():
    assert list(src.READERS) == ["jsonl", "janko-json", "sudoku-lines", "maze-csv", "sudoku-csv"]
    assert {".jsonl", ".json", ".txt"} <= src.suffixes()
    assert all(d["description"] for d in src.describe())


@pytest.mark.skipif(not GOLDEN.is_file(), reason="golden file absent")
def test_ppbench_jsonl_items_carry_type_size_and_identity():
    reader, items, bad = read(GOLDEN)
    assert reader.kind == "jsonl" and not bad and len(items) == 300
    it = items[0]
    assert it.form == "ppbench" and it.type == "yajilin" and (it.rows, it.cols) == (8, 8)
    assert it.ident.startswith("http://puzz.link/p?yajilin/8/8/") and it.loc == 1
    assert set(it.payload) <= {"pid", "puzzlink_url", "puzzle_url", "solution_enc"}


def test_ptrm_records_and_dataset_puzzles_read_back(tmp_path):
    if "sudoku" not in installed():
        pytest.skip("sudoku codec not installed")
    c = registry.get("sudoku")
    line = "98.7..6..75..4......3..8.7.5....7.3...94.........2.1..3.......1.9...5.8...52....6"
    p = c.parse(line).puzzle
    (sol,) = sudoku_solver.solve(p.clues)
    f = tmp_path / "gen.jsonl"
    rec = c.to_record(p, Solution("sudoku", sol), seed=3)
    as_dataset = {"type": "sudoku", "key": "k", "text": rec["url"], "answer": rec["answer"]}
    f.write_text(json.dumps(rec) + "\n" + json.dumps(as_dataset) + "\n")
    reader, items, bad = read(f)
    assert not bad and [i.form for i in items] == ["ptrm", "ptrm"]
    for it in items:
        assert (it.rows, it.cols) == (9, 9)
        q, s = reader.decode(it, c)
        assert (q.clues == p.clues).all() and (s.grid == sol).all()


@pytest.mark.skipif(not JANKO.is_dir(), reason="janko data absent")
def test_janko_json_reader():
    reader, items, bad = read(JANKO / "akari_10x10.json")
    assert reader.kind == "janko-json" and not bad and len(items) == 105
    assert items[0].type == "Akari" and src.resolve_type(items[0].type) == "lightup"
    assert (items[0].rows, items[0].cols) == (10, 10) and items[0].loc == "1_10x10"
    if "lightup" in installed():
        p, s = reader.decode(items[0], registry.get("lightup"))
        assert registry.get("lightup").verify(p, s) == []


@pytest.mark.skipif(not SUDOKU.is_dir(), reason="sudoku lists absent")
def test_sudoku_lines_reader_skips_comments():
    reader, items, bad = read(SUDOKU / "puzzles6_forum_hardest_1106.txt")
    assert reader.kind == "sudoku-lines" and not bad and len(items) == 375
    assert items[0].loc == 3 and len(items[0].payload) == 81 and items[0].type == "sudoku"


def test_unrecognised_files(tmp_path):
    arc = tmp_path / "arc.json"
    arc.write_text(json.dumps({"007bbfb7": {"train": [{"input": [[0]], "output": [[1]]}]}}))
    maze = tmp_path / "maze.txt"
    maze.write_text("#####\n#S..#\n#..E#\n#####\n")
    other = tmp_path / "x.csv"
    other.write_text("a,b\n")
    assert src.reader_for(arc) is None and src.reader_for(maze) is None
    assert src.reader_for(other) is None


def test_bad_records_are_reported_with_their_line(tmp_path):
    f = tmp_path / "bad.jsonl"
    f.write_text('{"pid": "sudoku", "solution_enc": "x"}\n\n{oops\n"text"\n{"a": 1}\n'
                 '{"type": 3, "url": "u", "answer": []}\n')
    _, items, bad = read(f)
    assert len(items) == 1 and items[0].rows is None
    assert [loc for loc, _ in bad] == [3, 4, 5, 6]
    # a line cut short (a copy that stopped mid-record) reads as cut, with its column; it was
    # "Invalid control character at (column 21)", the line end inside the open string
    cut = tmp_path / "cut.jsonl"
    cut.write_text('{"type": "sudoku", "url": "https://puzz\n')
    assert read(cut)[2] == [(1, "not valid JSON: Unterminated string starting at column 27")]
    # nesting past Python's recursion limit: a RecursionError, a traceback from `ptrm eval`
    deep = tmp_path / "deep.jsonl"
    deep.write_text('{"a":' * 5000 + "1" + "}" * 5000 + "\n")
    assert read(deep)[2] == [(1, "not valid JSON: Nested too deeply (column 1)")]
    janko = tmp_path / "j.json"
    janko.write_text(json.dumps({"name": "Akari", "data": {
        "a": {"problem": "1 1\n-"}, "b": 3, "c": {"problem": 1, "solution": "x"}}}))
    _, items, bad = read(janko)
    assert items == [] and [loc for loc, _ in bad] == ["a", "b", "c"]
    broken = tmp_path / "k.json"
    broken.write_text('{"name": "Akari", "data": {"problem": "", "solution": ""')
    _, items, bad = read(broken)
    assert items == [] and len(bad) == 1 and "not valid JSON" in bad[0][1]


def test_ppbench_fields_of_the_wrong_type_are_malformed_lines(tmp_path):
    """A number where a string belongs was a codec "decode error" (AttributeError), or "has
    no solution_enc" for a solution_enc that is there."""
    f = tmp_path / "p.jsonl"
    good = {"pid": "lightup", "width": 10, "height": 10, "solution_enc": "x",
            "puzzlink_url": "http://puzz.link/p?akari/10/10/x"}
    f.write_text("".join(json.dumps({**good, **bad}) + "\n" for bad in (
        {"solution_enc": 5}, {"puzzlink_url": 7}, {"puzzle_url": ["u"]}, {})))
    _, items, bad = read(f)
    assert [it.loc for it in items] == [4]
    assert bad == [(1, "PPBench record: solution_enc must be a string"),
                   (2, "PPBench record: puzzlink_url must be a string"),
                   (3, "PPBench record: puzzle_url must be a string")]


def test_a_ptrm_record_whose_answer_is_not_its_board_is_a_malformed_line(tmp_path):
    """The size came from the answer: a 9x9 answer to a 10x10 URL was dropped as "wrong size"
    (the kept size filter) with no word of the record's own contradiction."""
    f = tmp_path / "r.jsonl"
    url = "https://puzz.link/p?akari/10/10/" + "." * 100
    f.write_text("".join(json.dumps({"type": "lightup", "url": url, "answer": a}) + "\n"
                         for a in ([[0] * 9] * 9, "x", [[0] * 10] * 10)))
    _, items, bad = read(f)
    assert [it.loc for it in items] == [3] and (items[0].rows, items[0].cols) == (10, 10)
    assert bad == [(1, "ptrm record: 'answer' is 9x9 but the URL's board is 10x10"),
                   (2, "ptrm record: 'answer' must be rows of numbers")]
    # a size that is not square, rows first and spelled out: `10x12` read both ways (the URL
    # gives the columns first)
    f.write_text(json.dumps({"type": "lightup", "url": "https://puzz.link/p?akari/12/10/" +
                             "." * 120, "answer": [[0] * 10] * 10}) + "\n")
    assert read(f)[2] == [(1, "ptrm record: 'answer' is 10x10 but the URL's board is 10 rows x "
                              "12 columns")]


def test_a_label_of_another_size_says_both_sizes_rows_first():
    """"solution is 12x10, puzzle is 10x12" read both ways: sizes that are not square are
    spelled out (`codec.size_name`)."""
    puzzle = registry.Puzzle("lightup", 10, 12, None)
    assert src.label_problem(None, puzzle, Solution("lightup", np.zeros((12, 10)))) == (
        "malformed", "solution is 12 rows x 10 columns, puzzle is 10 rows x 12 columns")


def test_a_ptrm_record_whose_url_is_another_type_is_a_malformed_line(tmp_path):
    """`{"type": "sudoku", "url": "...?akari/10/10/..."}` was dropped as "wrong size" (the
    akari board is not sudoku's 9x9), which sent the reader to --sizes."""
    if not {"lightup", "sudoku"} <= installed():
        pytest.skip("needs the lightup and sudoku codecs")
    f = tmp_path / "r.jsonl"
    url = "https://puzz.link/p?akari/10/10/" + "." * 100
    f.write_text("".join(json.dumps({"type": t, "url": url, "answer": [[0] * 10] * 10}) + "\n"
                         for t in ("sudoku", "akari", "lightup")))
    _, items, bad = read(f)
    assert [it.loc for it in items] == [2, 3]  # akari is lightup's URL name
    assert bad == [(1, "ptrm record: 'type' is 'sudoku' but the URL is a lightup puzzle")]
    assert src.url_type("https://puzz.link/p?hitori/5/5/x") is None  # no codec: not judged


def test_url_size_and_type_aliases():
    assert src.url_size("https://puzz.link/p?akari/10/16/abc") == (16, 10)
    assert src.url_size("http://pzv.jp/p.html?heyawake/v:x/7/5/00") == (5, 7)
    assert src.url_size("nonsense") == (None, None)
    assert src.resolve_type("Akari") == "lightup" and src.resolve_type("SUDOKU") == "sudoku"
    assert src.resolve_type("notapuzzle") == "notapuzzle"


# -- the extension point ------------------------------------------------------------------------

class CsvSudoku(src.SourceReader):
    """A stand-in for a future kind (maze text, ARC JSON): `puzzle,solution` CSV lines."""

    kind, suffixes = "csv-sudoku", (".csv",)

    def sniff(self, path, head):
        return head.startswith("puzzle,solution")

    def read(self, path, report):
        for n, line in enumerate(Path(path).read_text().splitlines()[1:], 2):
            q, _, a = line.partition(",")
            yield src.Item(self.kind, "sudoku", (q, a), n, 9, 9, q, "csv")

    def decode(self, item, codec):
        q, a = item.payload
        grid = np.array([int(ch) for ch in a], dtype=np.int16).reshape(9, 9)
        return codec.parse(q).puzzle, Solution(codec.name, grid)


def test_a_registered_reader_feeds_the_same_pipeline(tmp_path, monkeypatch):
    if "sudoku" not in installed():
        pytest.skip("sudoku codec not installed")
    monkeypatch.setitem(src.READERS, "csv-sudoku", CsvSudoku())
    lines = ["puzzle,solution"]
    for q in ["98.7..6..75..4......3..8.7.5....7.3...94.........2.1..3.......1.9...5.8...52....6",
              "98.7..6..75..4......3..8.7.8....9.5..3.2..1.....4....6.7...4.3....8..4......1...2"]:
        (s,) = sudoku_solver.solve([0 if ch == "." else int(ch) for ch in q])
        lines.append(q + "," + "".join(map(str, s.reshape(-1))))
    f = tmp_path / "s.csv"
    f.write_text("\n".join(lines) + "\n")
    r = B.build([tmp_path], None, B.BuildOptions(types=("sudoku",), val_per_type=1, workers=1))
    assert r.sources[0]["kind"] == "csv-sudoku"
    assert r.puzzles["train"]["sudoku"] == 1 and r.puzzles["val"]["sudoku"] == 1


# -- sudoku solver ------------------------------------------------------------------------------

HARD = ["98.7..6..75..4......3..8.7.5....7.3...94.........2.1..3.......1.9...5.8...52....6",
        "........8..3...4...9..2..6.....79.......612...6.5.2.7...8...5...1.....2.4.5.....3",
        ".................1.....2.3......3.2...1.4......5....6..3......4.7..8...962...7..."]


def _valid(sol: np.ndarray, givens: str) -> bool:
    g = np.array([0 if ch in ".0" else int(ch) for ch in givens]).reshape(9, 9)
    full = set(range(1, 10))
    boxes = [sol[r:r + 3, c:c + 3].reshape(-1) for r in (0, 3, 6) for c in (0, 3, 6)]
    return (all(set(row) == full for row in sol) and all(set(col) == full for col in sol.T)
            and all(set(b) == full for b in boxes) and ((g == 0) | (g == sol)).all())


@pytest.mark.parametrize("backend", ["python", "sat"])
def test_solver_unique_none_many(backend):
    if backend == "sat" and not sudoku_solver.sat_available():
        pytest.skip("python-sat is not installed")
    for line in HARD:
        sols = sudoku_solver.solve([0 if ch == "." else int(ch) for ch in line], backend=backend)
        assert len(sols) == 1 and _valid(sols[0], line)
    assert len(sudoku_solver.solve([0] * 81, backend=backend)) == 2
    clash = [1, 1] + [0] * 79
    assert sudoku_solver.solve(clash, backend=backend) == []
    assert len(sudoku_solver.solve([0] * 16, limit=5, backend="python")) == 5
    six = sudoku_solver.solve([0] * 36, limit=1, backend=backend)[0]
    assert all(sorted(row) == list(range(1, 7)) for row in six.tolist())


def test_solver_backends_agree_on_a_sample():
    if not (SUDOKU.is_dir() and sudoku_solver.sat_available()):
        pytest.skip("needs the sudoku lists and python-sat")
    lines = [ln for ln in (SUDOKU / "puzzles2_17_clue.txt").read_text().splitlines()
             if ln and not ln.startswith("#")][:20]
    for line in lines:
        g = [0 if ch == "." else int(ch) for ch in line]
        a = sudoku_solver.solve(g, backend="python")
        b = sudoku_solver.solve(g, backend="sat")
        assert len(a) == len(b) == 1 and (a[0] == b[0]).all()


def test_a_malformed_record_that_names_its_type_is_counted_under_it(tmp_path, installed_codec):
    """Every malformed line was counted under type '?', even one whose type was readable."""
    installed_codec("sudoku")
    path = tmp_path / "l.jsonl"
    path.write_text('{not json\n'
                    '{"type": "sudoku", "url": "https://puzz.link/p?sudoku/9/9/zz", '
                    '"answer": [[0]]}\n'
                    '{"type": "akari", "url": 5, "answer": [[0]]}\n')
    reported = []
    list(src.READERS["jsonl"].read(path, lambda loc, why, t=None: reported.append((loc, t))))
    assert reported == [(1, None), (2, "sudoku"), (3, "lightup")]


def test_a_json_fault_reads_as_a_sentence():
    """json's own msg ends in "at" where its str() gives the place: the column follows it;
    other messages get the column in brackets ("Unterminated string starting (column 7)")."""
    import json

    from ptrm_cli.errors import json_problem

    def fault(text):
        try:
            json.loads(text)
        except json.JSONDecodeError as e:
            return json_problem(e)

    assert fault('{"a": "b') == "not valid JSON: Unterminated string starting at column 7"
    assert fault("[1,") == "not valid JSON: Expecting value (column 4)"
