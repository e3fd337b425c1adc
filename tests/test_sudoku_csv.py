"""The Sudoku-Extreme CSV source (`source,question,answer,rating`): recognised by its header,
malformed rows reported with file and line, skipped and counted; answers checked; and
`--min-difficulty` / `--subsample` as in TRM's builder (filter by rating, then subsample)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from ptrm_cli import build as B
from ptrm_cli import sources as src
from ptrm_cli import sudoku_solver
from ptrm_cli.engine.data import load_dataset

from fixtures_models import installed_codecs

QUESTIONS = [
    "98.7..6..75..4......3..8.7.5....7.3...94.........2.1..3.......1.9...5.8...52....6",
    "........8..3...4...9..2..6.....79.......612...6.5.2.7...8...5...1.....2.4.5.....3",
    ".................1.....2.3......3.2...1.4......5....6..3......4.7..8...962...7...",
]
HEADER = "source,question,answer,rating"


def answer(q: str) -> str:
    (s,) = sudoku_solver.solve([0 if ch == "." else int(ch) for ch in q])
    return "".join(str(v) for v in s.reshape(-1))


@pytest.fixture(scope="module")
def rows() -> list[str]:
    """Three good rows with ratings 0, 5, 40."""
    return [f"puzzles_test,{q},{answer(q)},{r}" for q, r in zip(QUESTIONS, (0, 5, 40))]


@pytest.fixture(scope="module")
def sudoku():
    if "sudoku" not in installed_codecs():
        pytest.skip("codec 'sudoku' is not installed")
    return installed_codecs()["sudoku"]


def read(path: Path):
    reader = src.reader_for(path)
    bad: list = []
    items = list(reader.read(path, lambda loc, msg, type_name=None: bad.append((loc, msg)))) if reader else []
    return reader, items, bad


def test_recognised_by_its_header(tmp_path, rows):
    f = tmp_path / "train.csv"
    f.write_text("\n".join([HEADER, *rows]) + "\n")
    assert src.reader_for(f).kind == "sudoku-csv"
    bom = tmp_path / "bom.csv"
    bom.write_text("\ufeff" + HEADER.upper().replace(",", ", ") + "\n" + rows[0] + "\n")
    assert src.reader_for(bom).kind == "sudoku-csv"
    for other in ("puzzle,solution\n", "a,b\n", "source,question,answer\n", ""):
        (tmp_path / "x.csv").write_text(other)
        assert src.reader_for(tmp_path / "x.csv") is None, other
    (tmp_path / "list.txt").write_text(HEADER + "\n" + rows[0] + "\n")  # the suffix matters too
    assert src.reader_for(tmp_path / "list.txt") is None


def test_items_carry_rating_line_and_identity(tmp_path, rows, sudoku):
    f = tmp_path / "test.csv"
    f.write_text("\r\n".join([HEADER, *rows]) + "\r\n")
    reader, items, bad = read(f)
    assert not bad and [i.loc for i in items] == [2, 3, 4]
    assert [i.rating for i in items] == [0, 5, 40]
    it = items[1]
    assert (it.type, it.rows, it.cols, it.ident, it.form) == ("sudoku", 9, 9, QUESTIONS[1], "csv")
    puzzle, solution = reader.decode(it, sudoku)
    assert sudoku.verify(puzzle, solution) == []
    assert "".join(str(v) for v in solution.grid.reshape(-1)) == answer(QUESTIONS[1])


def test_malformed_rows_are_reported_with_their_line_and_skipped(tmp_path, rows):
    q, a = QUESTIONS[0], answer(QUESTIONS[0])
    lines = [HEADER,
             rows[0],                       # 2 good
             "",                            # 3 blank: ignored
             f"s,{q},{a}",                  # 4 three fields
             f"s,{q[:80]},{a},1",           # 5 short question
             f"s,{q},{a[:-1]}x,1",          # 6 a letter in the answer
             f"s,{q},{a},hard",             # 7 rating not a number
             f"s,x{q[1:]},{a},1",           # 8 a letter in the question, of the right length
             f"s,{q.replace('.', '0')},{a},7",  # 9 good: '0' blanks are read as '.'
             f'"s,quoted",{QUESTIONS[2]},{answer(QUESTIONS[2])},3',  # 10 good, quoted source
             f"s,{QUESTIONS[1]},{answer(QUESTIONS[1])},"]  # 11 good: an empty rating is none
    f = tmp_path / "bad.csv"
    f.write_text("\n".join(lines) + "\n")
    _, items, bad = read(f)
    assert [i.loc for i in items] == [2, 9, 10, 11]
    assert items[3].rating is None  # it was malformed; HRM reads the column only to filter
    assert items[1].payload[0] == q and items[2].payload[2] == "s,quoted"
    assert [loc for loc, _ in bad] == [4, 5, 6, 7, 8]
    msgs = dict(bad)
    assert "expected 4 fields" in msgs[4] and "question" in msgs[5] and "found 80" in msgs[5]
    assert "answer" in msgs[6] and "found 'x' at character 81" in msgs[6]
    assert "rating" in msgs[7]
    assert "found 'x' at character 1" in msgs[8]  # not "found 81" of 81 expected


def test_build_counts_malformed_and_checks_answers(tmp_path, rows, sudoku):
    q = QUESTIONS[0]
    a = answer(q)
    clash = ("1" if a[0] != "1" else "2") + a[1:]   # contradicts the given at r0c0
    broken = list(answer(QUESTIONS[1]))
    free = QUESTIONS[1].index(".")
    broken[free] = str(int(broken[free]) % 9 + 1)    # breaks the rules at a free cell
    lines = [HEADER, *rows, f"s,{q},{clash},9", f"s,{QUESTIONS[1]},{''.join(broken)},9",
             f"s,{q},{a}", "s,x,y,z"]
    f = tmp_path / "extreme.csv"
    f.write_text("\n".join(lines) + "\n")
    r = B.build([f], tmp_path / "ds", B.BuildOptions(types=None, family="sudoku-native",
                                                      val_per_type=1, augment=2, workers=1))
    assert r.sources[0]["kind"] == "sudoku-csv" and r.sources[0]["records"] == 7
    assert r.dropped["malformed"] == {"?": 2}
    assert r.messages["malformed"][0].startswith("extreme.csv:7: expected 4 fields")
    assert r.messages["malformed"][1].startswith("extreme.csv:8: question")
    assert r.dropped["invalid solution"] == {"sudoku": 2}
    inv = r.messages["invalid solution"]
    assert inv[0].startswith("extreme.csv:5: the answer has")
    assert inv[1].startswith("extreme.csv:6:")
    assert r.puzzles["train"]["sudoku"] + r.puzzles["val"]["sudoku"] == 3
    ds = load_dataset(tmp_path / "ds")
    assert ds.seq_len == 81 and {p["source"] for p in ds.split("val").puzzles} == {"extreme.csv"}
    assert {p["line"] for s in ("train", "val") for p in ds.split(s).puzzles} == {2, 3, 4}


def test_min_difficulty_then_subsample(tmp_path, rows, sudoku):
    f = tmp_path / "extreme.csv"
    f.write_text("\n".join([HEADER, *rows]) + "\n")
    opts = dict(types=None, family="sudoku-native", val_per_type=0, augment=1, workers=1)
    r = B.build([f], None, B.BuildOptions(min_difficulty=5, **opts))
    assert r.dropped["below min difficulty"] == {"sudoku": 1}
    assert r.puzzles["train"]["sudoku"] == 2 and r.sources[0]["records"] == 3
    r = B.build([f], None, B.BuildOptions(min_difficulty=5, subsample=1, **opts))
    assert r.puzzles["train"]["sudoku"] == 1 and r.sources[0]["records"] == 2
    # records without a rating cannot pass a difficulty threshold: dropped, and said so
    lst = tmp_path / "list.txt"
    lst.write_text(QUESTIONS[0] + "\n")
    r = B.build([f, lst], None, B.BuildOptions(min_difficulty=5, **opts))
    assert r.dropped["no rating"] == {"sudoku": 1} and r.puzzles["train"]["sudoku"] == 2


def test_cli_csv_with_min_difficulty(tmp_path, rows, sudoku):
    from ptrm_cli.app import app

    f = tmp_path / "extreme.csv"
    f.write_text("\n".join([HEADER, *rows]) + "\n")
    r = CliRunner().invoke(app, ["build-data", str(f), "--family", "sudoku-native",
                                 "--min-difficulty", "1", "--val-per-type", "1", "--augment",
                                 "4", "--augmentation", "sudoku-trm", "--workers", "1",
                                 "--out", str(tmp_path / "ds"), "--json"])
    assert r.exit_code == 0, r.output
    got = json.loads(r.stdout)
    assert got["dropped"]["below min difficulty"] == {"sudoku": 1}
    assert got["counts"] == {"train": {"sudoku": 4}, "val": {"sudoku": 1}, "golden": {"sudoku": 0}}
    meta = json.loads((tmp_path / "ds" / "meta.json").read_text())
    assert meta["builder"]["options"]["min_difficulty"] == 1
    tr = load_dataset(tmp_path / "ds").split("train")
    labels = np.asarray(tr.labels, dtype=np.int64) - 1
    assert labels.min() == 1 and labels.max() == 9  # full solution grids, TRM's ids


def test_a_test_csv_becomes_an_eval_split(tmp_path, rows, sudoku):
    """Sudoku-Extreme's test.csv as an evaluation set: every row to `val`, unaugmented, in the
    native layout (`ptrm eval --split val --data DIR` reads it)."""
    f = tmp_path / "test.csv"
    f.write_text("\n".join([HEADER, *rows]) + "\n")
    B.build([f], tmp_path / "ds", B.BuildOptions(types=None, family="sudoku-native",
                                                 val_per_type=10**9, workers=1))
    ds = load_dataset(tmp_path / "ds")
    assert ds.meta["splits"] == {"train": 0, "val": 3, "golden": 0}
    val = ds.split("val")
    for i, rec in enumerate(val.puzzles):
        q = QUESTIONS[rec["line"] - 2]
        assert np.asarray(val.inputs[i]).tolist() == [1 if ch == "." else int(ch) + 1 for ch in q]
