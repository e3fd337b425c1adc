"""HRM's Maze-Hard CSV (`source,question,answer,rating`, 900-character rows of `# SGo`) and the
same rows as JSON lines: build-data and eval read them as they read Sudoku-Extreme's CSV.
Before, the sudoku reader took the file by its header and called every row malformed."""

from __future__ import annotations

import json

import pytest

from ptrm_cli import build as B
from ptrm_cli import sources as src
from ptrm_cli.build_options import BuildError
from ptrm_cli.engine.data import load_dataset
from ptrm_cli.generate.base import Knobs
from ptrm_cli.generate.maze import make_record
from ptrm_cli.generate.runner import Job

from fixtures_models import installed_codecs

HEADER = "source,question,answer,rating"


@pytest.fixture(scope="module")
def maze():
    if "maze" not in installed_codecs():
        pytest.skip("codec 'maze' is not installed")
    return installed_codecs()["maze"]


@pytest.fixture(scope="module")
def lines(maze) -> list[tuple[str, str]]:
    """(question, answer) of four generated 30x30 mazes, in HRM's one-line form."""
    out = []
    for i in range(4):
        p, s = maze.from_record(make_record(Job("maze", 30, 30, 0, Knobs()), i))
        out.append((maze.to_line(p), maze.to_line(p, s)))
    return out


def read(path):
    reader = src.reader_for(path)
    bad: list = []
    items = list(reader.read(path, lambda loc, msg, type_name=None: bad.append((loc, msg))))
    return reader, items, bad


def test_maze_csv_is_read_as_mazes_and_bad_rows_are_named(tmp_path, lines, maze):
    (q, a), *_ = lines
    f = tmp_path / "train.csv"
    f.write_text("\n".join([HEADER, *(f"train,{q},{a},0" for q, a in lines),
                            f"train,{q[:-1]},{a[:-1]},0",     # 899 characters: no square
                            f"train,{q},{a}",                 # a field short
                            f"train,{q},{a},hard"]) + "\n")
    reader, items, bad = read(f)
    assert reader.kind == "maze-csv"
    assert [(it.type, it.rows, it.cols, it.loc) for it in items] == [
        ("maze", 30, 30, n) for n in (2, 3, 4, 5)]
    assert [loc for loc, _ in bad] == [6, 7, 8]
    assert "found 899 and 899" in bad[0][1] and "found 3" in bad[1][1]
    assert "rating" in bad[2][1]
    p, s = reader.decode(items[0], maze)
    assert maze.to_line(p, s) == a and maze.verify(p, s) == []
    # a Sudoku-Extreme file keeps its reader: the header alone does not decide
    sud = tmp_path / "sudoku.csv"
    sud.write_text(HEADER + "\n" + "s," + "." * 81 + "," + "1" * 81 + ",0\n")
    assert src.reader_for(sud).kind == "sudoku-csv"


def test_build_data_from_maze_csv_and_json_rows_gives_the_same_puzzles(tmp_path, lines, maze):
    csv_file = tmp_path / "maze.csv"
    csv_file.write_text("\n".join([HEADER, *(f"train,{q},{a},0" for q, a in lines)]) + "\n")
    json_file = tmp_path / "maze.jsonl"
    json_file.write_text("".join(json.dumps({"question": q, "answer": a}) + "\n"
                                 for q, a in lines))
    assert [it.form for it in read(json_file)[1]] == ["hrm"] * 4
    keys = []
    for name, f in (("c", csv_file), ("j", json_file)):
        r = B.build([f], tmp_path / name, B.BuildOptions(types=None, family="maze",
                                                         val_per_type=1, augment=1, workers=1))
        assert r.puzzles["train"]["maze"] + r.puzzles["val"]["maze"] == 4, r.dropped
        assert not r.dropped
        ds = load_dataset(tmp_path / name)
        keys.append(sorted(p["key"] for s in ("train", "val") for p in ds.split(s).puzzles))
    assert keys[0] == keys[1] and len(set(keys[0])) == 4
    # a wrong answer is the codec's to refuse, as for any maze record
    (q, a), *_ = lines
    wrong = a.replace("o", " ", 1)
    bad = tmp_path / "bad.csv"
    bad.write_text(f"{HEADER}\ntrain,{q},{wrong},0\n")
    with pytest.raises(BuildError) as e:
        B.build([bad], tmp_path / "b", B.BuildOptions(types=None, family="maze",
                                                      val_per_type=0, augment=1, workers=1))
    assert e.value.result.dropped == {"invalid solution": {"maze": 1}}
    assert e.value.result.messages["invalid solution"][0].startswith("bad.csv:2:")


def test_broken_quoting_is_reported_once_and_ends_the_file(tmp_path, lines):
    """An unclosed quote swallows the rest of the file into one field: csv raises past its
    field limit. Both HRM readers say so once, at the row, and keep the rows before it."""
    (q, a), *_ = lines
    f = tmp_path / "cut.csv"
    f.write_text(f"{HEADER}\ntrain,{q},{a},0\ntrain,\"{q}" + "#" * 140_000 + f"\ntrain,{q},{a},0\n")
    reader, items, bad = read(f)
    assert reader.kind == "maze-csv" and len(items) == 1
    [(loc, msg)] = bad
    assert loc >= 3 and msg.startswith("CSV error:") and "rest of the file is skipped" in msg
