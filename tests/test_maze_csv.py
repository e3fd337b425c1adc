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


def test_hrm_csv_as_csv_writers_write_it(tmp_path, lines):
    """Python's csv writer (HRM's builder reads with csv.reader) with every field quoted, a
    BOM and \\r\\n line ends: the quoted header was not recognised (the file was refused)."""
    import csv

    f = tmp_path / "train.csv"
    with open(f, "w", encoding="utf-8-sig", newline="") as out:
        w = csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\r\n")
        w.writerow(HEADER.split(","))
        w.writerows(["train", q, a, 111] for q, a in lines)
    reader, items, bad = read(f)
    assert reader.kind == "maze-csv" and not bad
    assert [(it.loc, it.rating, it.payload["question"]) for it in items] == [
        (n, 111, q) for n, (q, _) in zip((2, 3, 4, 5), lines)]


def test_rating_is_optional_and_never_a_traceback(tmp_path, lines):
    """HRM's maze builder ignores `rating`: an empty one is no rating (not a malformed row);
    'inf' and '1e400' raised OverflowError out of the reader; fractions round down, so
    --min-difficulty N keeps exactly the rows rated N or more."""
    (q, a), *_ = lines
    ratings = ["", " ", "inf", "1e400", "nan", "111.5", "-0.5", "hard", "113"]
    f = tmp_path / "rated.csv"
    f.write_text("\n".join([HEADER, *(f"t,{q},{a},{r}" for r in ratings)]) + "\n")
    _, items, bad = read(f)
    assert [(it.loc, it.rating) for it in items] == [(2, None), (3, None), (7, 111), (8, -1),
                                                     (10, 113)]
    assert [loc for loc, _ in bad] == [4, 5, 6, 9]
    assert all(msg.startswith("rating: expected a") for _, msg in bad)
    assert "finite" in dict(bad)[4] and "'hard'" in dict(bad)[9]
    # the same rows as JSON lines keep their rating (it was dropped: "no rating")
    j = tmp_path / "rated.jsonl"
    j.write_text("".join(json.dumps({"question": q, "answer": a, "rating": r}) + "\n"
                         for r in (113, "", "inf")))
    _, items, bad = read(j)
    assert [(it.loc, it.rating) for it in items] == [(1, 113), (2, None)]
    assert [loc for loc, _ in bad] == [3]


def test_a_file_mixing_mazes_and_sudokus_loses_neither(tmp_path, lines):
    """Each row is read as what it is, whichever comes first: the first row chose one reader
    for the whole file, which called every row of the other kind malformed (or read a sudoku
    as a 9x9 maze). A blank line after the header no longer hides the mazes either."""
    sudoku_q = ("98.7..6..75..4......3..8.7.5....7.3...94.........2.1..3.......1.9...5.8...52"
                "....6")
    from ptrm_cli import sudoku_solver
    (grid,) = sudoku_solver.solve([0 if ch == "." else int(ch) for ch in sudoku_q])
    sudoku = f"s,{sudoku_q},{''.join(str(v) for v in grid.reshape(-1))},5"
    mazes = [f"m,{q},{a},111" for q, a in lines[:2]]
    for name, rows, kind in (("maze_first.csv", [mazes[0], sudoku, mazes[1]], "maze-csv"),
                             ("sudoku_first.csv", [sudoku, *mazes], "sudoku-csv"),
                             ("blank.csv", ["", *mazes], "maze-csv")):
        f = tmp_path / name
        f.write_text("\n".join([HEADER, *rows]) + "\n")
        reader, items, bad = read(f)
        assert reader.kind == kind and not bad, (name, bad)
        want = [("maze" if r.startswith("m,") else "sudoku", n) for n, r in enumerate(rows, 2)
                if r]
        assert [(it.type, it.loc) for it in items] == want, name
        assert all(it.reader == ("maze-csv" if it.type == "maze" else "sudoku-csv")
                   for it in items)
    r = B.build([tmp_path / "sudoku_first.csv"], None,
                B.BuildOptions(types=None, family="maze", val_per_type=0, augment=1, workers=1))
    assert r.puzzles["train"]["maze"] == 2 and r.dropped == {"other type": {"sudoku": 1}}


def test_maze_row_mistakes_are_named_by_field_and_cell(tmp_path, lines, maze):
    """What the codec found in a one-line field came as "line 1: maze cell 'X' in column 16"
    (which row? the CSV's line is 3); a question with the path drawn in (columns swapped) was
    read as a solved maze; a header again inside the file (files joined) as a malformed
    sudoku."""
    (q, a), (q2, a2), *_ = lines
    i = q.index("#", 40)
    rows = [f"t,{q[:i]}X{q[i + 1:]},{a},1",     # 2
            f"t,{q},{a[:5]}*{a[6:]},1",         # 3
            f"t,{a},{q},1",                     # 4 swapped
            HEADER,                             # 5 joined files
            f"t,{q},{a2},1",                    # 6 the answer of another maze
            f"t,{q.replace('S', ' ')},{a.replace('S', ' ')},1"]   # 7 no start
    f = tmp_path / "bad.csv"
    f.write_text("\n".join([HEADER, *rows]) + "\n")
    reader, items, bad = read(f)
    assert [loc for loc, _ in bad] == [5] and "header row again" in bad[0][1]
    msgs = {}
    for it in items:
        with pytest.raises(src.ParseError) as e:
            reader.decode(it, maze)
        msgs[it.loc] = str(e.value)
    r, c = divmod(i, 30)
    assert msgs[2] == (f"question: maze cell 'X' at character {i + 1} (row {r + 1}, column "
                       f"{c + 1}): expected '#', ' ', '.', 'S', 'G' or 'o'")
    assert msgs[3].startswith("answer: maze cell '*' at character 6 (row 1, column 6)")
    assert msgs[4].startswith("question: holds path cells 'o'") and "swapped" in msgs[4]
    assert msgs[6] == "answer: the answer is drawn on another maze"
    assert msgs[7] == "question: a maze has exactly one start 'S', this one has 0"
    assert not any("line 1" in m for m in msgs.values())


def test_a_maze_without_walls_is_still_a_maze(tmp_path, maze):
    """S and G mark a maze row as well as '#' does: a wall-less maze was read as a sudoku."""
    q = "S" + " " * 28 + "G" + " " * 870
    a = "S" + "o" * 28 + "G" + " " * 870
    f = tmp_path / "open.csv"
    f.write_text(f"{HEADER}\nt,{q},{a},29\n")
    reader, items, bad = read(f)
    assert reader.kind == "maze-csv" and not bad and [it.type for it in items] == ["maze"]
    p, s = reader.decode(items[0], maze)
    assert maze.verify(p, s) == []


def test_a_csv_with_only_its_header_says_so(tmp_path):
    """The build said "see the dropped table: every record was filtered out" of a file with
    no records, whose table is empty."""
    f = tmp_path / "empty.csv"
    f.write_text(HEADER + "\n")
    with pytest.raises(BuildError) as e:
        B.build([f], tmp_path / "ds", B.BuildOptions(types=None, family="maze", workers=1))
    assert "the sources hold no records" in e.value.hint and not e.value.result.dropped
