"""Puzzle generators: the framework (per-puzzle seeding, the resumable writer, the worker pool,
`ptrm generate`) and the sudoku, lightup, shakashaka and nurikabe generators (tapa and heyawake:
test_generate_tapa_heyawake.py).

Per type, a small batch made through the runner's codec hand-off: every puzzle is re-checked
unique by a fresh solver on the clues read back from the record's URL (not the generator's own
objects), its answer passes the codec's verifier, and it round-trips to_record -> from_record.
Sudoku and lightup are re-checked by an independent encoding too (a plain backtracking sudoku
solver; a lightup CNF from the codec's own puzzle, solved by Glucose); the shakashaka and
nurikabe encodings are checked against the golden puzzles (each must have exactly its PPBench
solution). Skips, with the reason, a type whose codec is not installed."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("pysat")

from ptrm_cli.errors import PtrmError  # noqa: E402
from ptrm_cli.generate import MODULES, available, get  # noqa: E402
from ptrm_cli.generate.base import Knobs, puzzle_rng  # noqa: E402
from ptrm_cli.generate.runner import Job, ResumableJsonl, make_record, run  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
from shared_data import GOLDEN  # noqa: E402
SEED = 11
#: (type, size) of the batch per type: small enough to stay fast, real-sized where cheap
SIZES = {"sudoku": (9, 9), "lightup": (10, 10), "shakashaka": (10, 10), "nurikabe": (7, 7)}
N = 3


@pytest.fixture(scope="module")
def batches(installed_codec):
    """{type: [record]} made through the runner's codec hand-off."""
    out = {}
    for name, (rows, cols) in SIZES.items():
        try:
            installed_codec(name)
        except pytest.skip.Exception:
            continue
        job = Job(name, rows, cols, SEED, Knobs())
        out[name] = [make_record(job, i) for i in range(N)]
    return out


# -- per type ----------------------------------------------------------------------------------

@pytest.mark.parametrize("name", list(SIZES))
def test_batch_unique_valid_and_round_trips(batches, installed_codec, name):
    codec = installed_codec(name)
    gen = get(name)
    rows, cols = SIZES[name]
    for i, rec in enumerate(batches[name]):
        assert rec["type"] == name and rec["source"] == "generated"
        assert rec["seed"] == SEED and rec["index"] == i
        assert rec["id"] == f"gen-{name}-{rows}x{cols}-s{SEED}-{i:06d}"
        puzzle, solution = codec.from_record(rec)
        assert (puzzle.rows, puzzle.cols) == (rows, cols)
        assert codec.verify(puzzle, solution) == []
        # re-check from what was written: the URL's clues have exactly one solution
        inst = gen.read_url(rec["url"])
        sols, stats = gen.solve(inst, limit=2)
        assert len(sols) == 1, f"{rec['id']}: {len(sols)} solutions"
        inst.answer = sols[0]
        assert codec.parse(gen.to_pzprv3(inst)).solution == solution
        assert stats["conflicts"] == rec["difficulty"]["conflicts"]
        # the record round-trips and is usable by build-data (every clue has a token)
        again = codec.to_record(puzzle, solution, **{k: v for k, v in rec.items()
                                                      if k not in ("type", "url", "answer")})
        assert again == rec
        p2, s2 = codec.from_record(json.loads(json.dumps(again)))
        assert codec.key(p2) == codec.key(puzzle) and s2 == solution
        if (rows, cols) == (10, 10) or name == "sudoku":
            codec.encode(puzzle, solution)
            codec.encode_label(puzzle, solution)


def _sudoku_count(grid, limit=2) -> int:
    """Solutions of a 9x9 sudoku (up to `limit`) by plain backtracking."""
    grid = [list(row) for row in grid]
    empty = [(r, c) for r in range(9) for c in range(9) if not grid[r][c]]

    def ok(r, c, d):
        if d in grid[r] or any(grid[i][c] == d for i in range(9)):
            return False
        br, bc = 3 * (r // 3), 3 * (c // 3)
        return all(grid[br + i][bc + j] != d for i in range(3) for j in range(3))

    def go(k) -> int:
        if k == len(empty):
            return 1
        r, c = empty[k]
        n = 0
        for d in range(1, 10):
            if ok(r, c, d):
                grid[r][c] = d
                n += go(k + 1)
                grid[r][c] = 0
                if n >= limit:
                    break
        return n

    return go(0)


def test_sudoku_independent_count(batches, installed_codec):
    codec = installed_codec("sudoku")
    for rec in batches["sudoku"]:
        puzzle, solution = codec.from_record(rec)
        assert _sudoku_count(puzzle.clues.tolist()) == 1
        assert 17 <= int((puzzle.clues > 0).sum()) <= 40  # minimal sets: ~22-27 givens


def test_lightup_independent_encoding(batches, installed_codec):
    from pysat.card import CardEnc
    from pysat.solvers import Solver

    codec = installed_codec("lightup")
    for rec in batches["lightup"]:
        puzzle, solution = codec.from_record(rec)
        cl = puzzle.clues  # -1 white, -2 wall, 0..4 numbered wall
        rows, cols = cl.shape
        var = lambda r, c: r * cols + c + 1  # noqa: E731
        white = {(r, c) for r in range(rows) for c in range(cols) if cl[r, c] == -1}
        clauses, top = [], rows * cols
        for r in range(rows):
            for c in range(cols):
                if (r, c) not in white:
                    clauses.append([-var(r, c)])
                    continue
                seen = {(r, c)}  # cells this one sees (walls stop the view)
                for dr, dc in ((0, 1), (0, -1), (1, 0), (-1, 0)):
                    rr, cc = r + dr, c + dc
                    while (rr, cc) in white:
                        seen.add((rr, cc))
                        rr, cc = rr + dr, cc + dc
                clauses.append([var(*x) for x in seen])
                clauses += [[-var(r, c), -var(*x)] for x in seen if x != (r, c)]
                if cl[r, c] >= 0:
                    pass
        for r in range(rows):
            for c in range(cols):
                if cl[r, c] >= 0:
                    around = [var(r + dr, c + dc) for dr, dc in ((0, 1), (0, -1), (1, 0), (-1, 0))
                              if (r + dr, c + dc) in white]
                    enc = CardEnc.equals(lits=around, bound=int(cl[r, c]), top_id=top)
                    top = max(top, enc.nv)
                    clauses += enc.clauses
        with Solver(name="glucose4", bootstrap_with=clauses) as s:
            assert s.solve()
            model = set(s.get_model())
            lights = np.array([[int(var(r, c) in model) for c in range(cols)] for r in range(rows)])
            assert (lights == solution.grid).all()
            s.add_clause([-v if v in model else v for v in range(1, rows * cols + 1)])
            assert not s.solve()


def _golden(pid: str, size=(10, 10)):
    if not GOLDEN.exists():
        pytest.skip(f"{GOLDEN} not found (shared data absent)")
    for line in GOLDEN.read_text().splitlines():
        rec = json.loads(line)
        if rec["pid"] == pid and (rec["height"], rec["width"]) == size:
            yield rec


@pytest.mark.parametrize("name", ["shakashaka", "nurikabe", "lightup"])
def test_encoding_matches_golden(installed_codec, name):
    """The generator's rules, on real puzzles: exactly one solution, PPBench's."""
    codec = installed_codec(name)
    gen = get(name)
    recs = list(_golden(name))
    assert recs
    for rec in recs:
        _, solution = codec.from_record(rec)
        inst = gen.read_url(rec["puzzlink_url"])
        sols, _ = gen.solve(inst)
        assert len(sols) == 1, rec["puzzlink_url"]
        inst.answer = sols[0]
        assert codec.parse(gen.to_pzprv3(inst)).solution == solution


# -- framework ---------------------------------------------------------------------------------

def test_registry():
    assert set(MODULES) == {"sudoku", "lightup", "shakashaka", "nurikabe", "tapa", "heyawake", "maze"}
    assert {"sudoku", "lightup", "shakashaka", "nurikabe"} <= set(available())
    assert get("akari").name == "lightup"
    with pytest.raises(PtrmError):
        get("kakuro")


def test_puzzle_depends_only_on_seed_type_index():
    gen = get("lightup")
    a = gen.make(puzzle_rng(3, "lightup", 5), 10, 10, Knobs())
    gen.make(puzzle_rng(3, "lightup", 4), 10, 10, Knobs())  # other work in between
    b = gen.make(puzzle_rng(3, "lightup", 5), 10, 10, Knobs())
    assert a.clues == b.clues and a.fixed == b.fixed and (a.answer == b.answer).all()
    c = gen.make(puzzle_rng(4, "lightup", 5), 10, 10, Knobs())
    assert c.fixed != a.fixed


def test_knobs():
    gen = get("sudoku")
    full = gen.make(puzzle_rng(0, "sudoku", 0), 9, 9, Knobs(minimal=False))
    assert len(full.clues) == 81
    capped = gen.make(puzzle_rng(0, "sudoku", 0), 9, 9, Knobs(max_clues=40))
    assert len(capped.clues) == 40
    sym = gen.make(puzzle_rng(0, "sudoku", 0), 9, 9, Knobs(params={"symmetric": 1}))
    assert all((8 - r, 8 - c) in sym.clues for r, c in sym.clues)
    hard = gen.make(puzzle_rng(0, "sudoku", 1), 9, 9, Knobs(min_difficulty=5))
    assert hard.stats["difficulty"]["conflicts"] >= 5
    with pytest.raises(PtrmError):
        gen.check_params(Knobs(params={"nonsense": 1}))
    with pytest.raises(PtrmError):
        gen.check_size(10, 10)
    assert Knobs(max_clues=30, params={"walls": 0.2}).tag() == "max_clues=30,walls=0.2"
    # other knobs, other tags (`:g` rounded both to walls=0.2, so a resume mixed them)
    assert Knobs(params={"walls": 0.2000001}).tag() == "walls=0.2000001"
    assert Knobs(params={"repairs": 6.0}).tag() == "repairs=6"


def _valid_sudoku_grid(g: np.ndarray) -> bool:
    from ptrm_cli.generate.sudoku import box_shape

    n = g.shape[0]
    br, bc = box_shape(n)
    full = set(range(1, n + 1))
    boxes = [g[r:r + br, c:c + bc] for r in range(0, n, br) for c in range(0, n, bc)]
    return all(set(u.reshape(-1).tolist()) == full for u in [*g, *g.T, *boxes])


def test_sudoku_symmetries_keep_grids_valid():
    from ptrm_cli.generate.sudoku import shuffled

    rng = np.random.default_rng(0)
    for n in (4, 6, 9):
        grid = get("sudoku").make(puzzle_rng(0, "sudoku", n), n, n, Knobs(minimal=False)).answer
        images = [shuffled(np.asarray(grid), rng) for _ in range(20)]
        assert all(_valid_sudoku_grid(g) for g in images)
        assert len({g.tobytes() for g in images}) > 1


def test_sudoku_grids_hold_no_digit_habits():
    """The solver's own grids put a 1 in the bottom-right cell 81% of the time (a 9 in the
    centre 77%) and a model learned that; the generator's symmetry draw removes it."""
    gen = get("sudoku")
    grids = np.stack([np.asarray(gen.make(puzzle_rng(0, "sudoku", i), 9, 9,
                                          Knobs(minimal=False)).answer) for i in range(120)])
    share = np.stack([(grids.reshape(len(grids), 81) == d).mean(0) for d in range(1, 10)])
    assert share.max() < 0.3  # uniform: 0.11 (+- 0.03 over 120 grids); before: 0.89


def test_a_file_of_an_older_generator_version_is_not_completed(installed_codec, tmp_path):
    installed_codec("sudoku")
    job = Job("sudoku", 9, 9, 5, Knobs())
    out = tmp_path / "s.jsonl"
    run(job, 1, out)
    rec = json.loads(_lines(out)[0])
    assert rec["version"] == get("sudoku").version >= 2
    del rec["version"]  # as the generator wrote it before versions (its grids unshuffled)
    out.write_text(json.dumps(rec) + "\n")
    with pytest.raises(PtrmError, match="another run .*: generator version 1, this run 2$"):
        run(job, 2, out)
    assert "version" not in json.loads(_lines(out)[0])  # refused untouched


def _lines(path):
    return Path(path).read_text().splitlines()


def test_resume_and_determinism_across_workers(installed_codec, tmp_path):
    installed_codec("sudoku")
    job = Job("sudoku", 9, 9, 5, Knobs())
    one = tmp_path / "one.jsonl"
    assert run(job, 4, one, workers=1)["made"] == 4
    # two workers: the same file
    two = tmp_path / "two.jsonl"
    run(job, 4, two, workers=2)
    assert _lines(two) == _lines(one)
    # an interrupted run: two whole lines and a partial third; resuming completes it
    part = tmp_path / "part.jsonl"
    lines = _lines(one)
    part.write_text(lines[0] + "\n" + lines[1] + "\n" + lines[2][:40])
    summary = run(job, 4, part, workers=1)
    assert summary == {"made": 2, "present": 2, "beyond": 0, "seconds": summary["seconds"]}
    assert _lines(part) == lines
    assert part.read_text().endswith("\n")
    # nothing left to do
    assert run(job, 4, part, workers=1)["made"] == 0
    # a missing index in the middle is made, the rest kept (order: present ones first)
    gap = tmp_path / "gap.jsonl"
    gap.write_text("\n".join([lines[0], lines[2]]) + "\n")
    run(job, 3, gap, workers=1)
    assert sorted(_lines(gap)) == sorted(lines[:3])


def test_resume_refuses_another_run(installed_codec, tmp_path):
    installed_codec("sudoku")
    out = tmp_path / "s.jsonl"
    run(Job("sudoku", 9, 9, 1, Knobs()), 1, out)
    for other in (Job("sudoku", 9, 9, 2, Knobs()), Job("sudoku", 9, 9, 1, Knobs(max_clues=30)),
                  Job("sudoku", 4, 4, 1, Knobs())):
        with pytest.raises(PtrmError, match="another run"):
            ResumableJsonl(out, other)
    bad = tmp_path / "bad.jsonl"
    bad.write_text("not json\n")
    with pytest.raises(PtrmError, match="not a JSON line"):
        ResumableJsonl(bad, Job("sudoku", 9, 9, 1, Knobs()))


def test_resume_refuses_a_file_holding_an_index_twice(installed_codec, tmp_path):
    """`cat d.jsonl d.jsonl > d2.jsonl` was read as 2 puzzles done and left 5 lines, two of
    them twice, for build-data to take."""
    installed_codec("sudoku")
    job = Job("sudoku", 4, 4, 1, Knobs())
    out = tmp_path / "s.jsonl"
    run(job, 2, out)
    doubled = tmp_path / "d.jsonl"
    doubled.write_bytes(out.read_bytes() * 2)
    with pytest.raises(PtrmError, match=r"d.jsonl:3: puzzle 0 again \(also on line 1\)"):
        ResumableJsonl(doubled, job)
    assert doubled.read_bytes() == out.read_bytes() * 2  # refused untouched


def test_cli_generate(installed_codec, tmp_path):
    from typer.testing import CliRunner

    from ptrm_cli.app import app

    installed_codec("lightup")
    out = tmp_path / "l.jsonl"
    args = ["generate", "lightup", "--n", "2", "--out", str(out), "--seed", "3", "--workers", "1",
            "-q", "-p", "walls=0.2"]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    recs = [json.loads(x) for x in _lines(out)]
    assert [r["index"] for r in recs] == [0, 1] and recs[0]["knobs"] == "walls=0.2"
    assert recs[0]["id"] == "gen-lightup-10x10-s3-000000"
    # a smaller --n on that file: nothing to make, and it says the file holds more
    res = CliRunner().invoke(app, [*args[:3], "1", *args[4:]])
    assert res.exit_code == 0 and len(_lines(out)) == 2, res.output
    assert "already holds all 1 puzzles (1 beyond --n 1, left as they are)" in res.output
    res = CliRunner().invoke(app, args[:-2])  # other knobs, same file: refused
    assert res.exit_code == 2 and "another run" in res.output
    res = CliRunner().invoke(app, [*args, "-p", "walls=0.3"])  # the last won silently
    assert res.exit_code == 2 and "--param walls is given twice" in res.output, res.output
    res = CliRunner().invoke(app, [*args, "-p", "=0.3"])  # was "unknown --param " (no name)
    assert res.exit_code == 2 and "--param '=0.3': expected KEY=NUMBER" in res.output, res.output
    res = CliRunner().invoke(app, ["generate", "lightup", "--n", "1", "--out", str(out),
                                   "--size", "ten"])
    assert res.exit_code == 2 and "ROWSxCOLS" in res.output
    res = CliRunner().invoke(app, ["generate", "kakuro", "--n", "1", "--out", str(out)])
    assert res.exit_code == 2 and "no generator" in res.output
    assert "installed codec" not in res.output
    # a type that reads and solves (a codec), but has no generator: says why (a plugin
    # author's `ptrm generate TYPE` read as if the type were unknown)
    res = CliRunner().invoke(app, ["generate", "arc", "--n", "1", "--out", str(out)])
    assert res.exit_code == 2 and "no generator for puzzle type 'arc' (an installed codec; " \
        "generators are not plugins" in " ".join(res.output.split()), res.output
    # knobs that cannot work: a sudoku with every cell given, a maze with clues to remove
    for argv, message in ((["sudoku", "--size", "4x4", "--max-clues", "16"],
                           "would keep all 16 cells given"),
                          # the same solved grid (its record went on to build-data)
                          (["sudoku", "--size", "4x4", "--no-minimal"],
                           "--no-minimal would keep all 16 cells given"),
                          (["maze", "--no-minimal", "--min-difficulty", "2"],
                           "--no-minimal, --min-difficulty do not apply to mazes")):
        res = CliRunner().invoke(app, ["generate", *argv, "--n", "1", "--out",
                                       str(tmp_path / "k.jsonl")])
        assert res.exit_code == 2 and message in res.output, res.output
    fresh = tmp_path / "negative.jsonl"  # numpy's traceback, and an empty file left behind
    res = CliRunner().invoke(app, ["generate", "lightup", "--n", "1", "--out", str(fresh),
                                   "--seed", "-1"])
    assert res.exit_code == 2 and "--seed" in res.output and not fresh.exists()


def test_build_data_reads_generated_records(batches, installed_codec, tmp_path):
    """What `ptrm build-data` reads: the codec's from_record on each JSONL line."""
    from ptrm_cli import codec as registry

    path = tmp_path / "gen.jsonl"
    with open(path, "w") as f:
        for recs in batches.values():
            for rec in recs:
                f.write(json.dumps(rec) + "\n")
    for line in _lines(path):
        rec = json.loads(line)
        puzzle, solution = registry.get(rec["type"]).from_record(rec)
        assert solution.grid.shape == (puzzle.rows, puzzle.cols)
    assert os.path.getsize(path) > 0


def test_resume_refuses_a_file_it_did_not_write_and_leaves_it_untouched(installed_codec,
                                                                      tmp_path):
    """A wrong --out is refused before anything is written: its last line without a newline
    used to be cut off as "a partial line" first, and a JSON line that is not a record, a
    non-UTF-8 file or a folder ended in a traceback."""
    installed_codec("lightup")
    job = Job("lightup", 10, 10, 1, Knobs())
    cases = {"notes.json": (b'{"a": 1,\n "b": 2}', "notes.json:1: not a JSON line"),
             "one.json": (b'{"a": 1}', "one.json:1: not a record `ptrm generate` wrote"),
             "list.jsonl": (b"[1, 2]\n", "list.jsonl:1: not a record `ptrm generate` wrote"),
             "noindex.jsonl": (b'{"type": "lightup", "seed": 1}\n',
                               "noindex.jsonl:1: not a record `ptrm generate` wrote"),
             "binary.jsonl": (b"\xff\xfe\n", "binary.jsonl:1: not a JSON line")}
    for name, (data, match) in cases.items():
        path = tmp_path / name
        path.write_bytes(data)
        with pytest.raises(PtrmError, match=match):
            ResumableJsonl(path, job)
        assert path.read_bytes() == data
    with pytest.raises(PtrmError, match="is a folder"):
        ResumableJsonl(tmp_path, job)
    # a write cut short before the first newline is still ours, and dropped
    cut = tmp_path / "cut.jsonl"
    cut.write_text('{"type":"lightup","url":"https://puz')
    assert ResumableJsonl(cut, job).done == set() and cut.read_text() == ""


def test_a_last_record_without_its_newline_is_checked_not_cut_off(installed_codec, tmp_path):
    """A whole record with no newline after it was dropped as "a partial line" unchecked: a
    file holding one record of another run (a script's "\\n".join) was emptied, and another
    run's record after ours was cut off."""
    installed_codec("lightup")
    job, other = Job("lightup", 5, 5, 1, Knobs()), Job("lightup", 5, 5, 7, Knobs())
    theirs, ours = tmp_path / "theirs.jsonl", tmp_path / "ours.jsonl"
    run(other, 1, theirs)
    run(job, 1, ours)
    their_line, our_line = _lines(theirs)[0], _lines(ours)[0]
    for data in (their_line, our_line + "\n" + their_line):
        theirs.write_text(data)
        with pytest.raises(PtrmError, match="another run"):
            ResumableJsonl(theirs, job)
        assert theirs.read_text() == data
    # ours without its newline: kept (not made again) and its line ended
    ours.write_text(our_line)
    assert run(job, 2, ours)["made"] == 1
    assert _lines(ours)[0] == our_line and len(_lines(ours)) == 2


def test_params_out_of_range_are_refused_up_front(installed_codec):
    """A NaN or out-of-range knob used to run: walls=1 crashed a worker (AssertionError),
    max_island=0 a ValueError, walls=nan or -1 spent 200 attempts before giving up."""
    from ptrm_cli.generate import get

    for name, param, match in (("lightup", {"walls": 1.0}, r"walls=1: expected a fraction"),
                               ("lightup", {"walls": -1.0}, r"walls=-1: expected a number >= 0"),
                               ("lightup", {"repairs": -1.0}, "repairs=-1: expected a number >= 0"),
                               ("shakashaka", {"black": -0.1}, r"black=-0.1: expected a number "
                                                               r">= 0 \(fraction of cells"),
                               ("nurikabe", {"budget": -5.0}, "budget=-5: expected a number >= 0"),
                               ("lightup", {"walls": float("nan")}, "walls=nan: expected a "
                                                                    "finite number"),
                               ("nurikabe", {"max_island": 0.0}, "max_island must be >= 1"),
                               # S next to G: the record's text had no path, an AssertionError
                               ("maze", {"min_path": 0.0}, "min_path=0: expected 1 or more"),
                               ("tapa", {"white": float("inf")}, "white=inf: expected a "
                                                                 "finite number"),
                               # fractions and switches above 1 ran as if 1
                               ("tapa", {"qmarks": 1.5}, r"qmarks=1.5: expected a number from "
                                                         r"0 to 1 \(fraction of the final"),
                               ("heyawake", {"numbered": 2.0}, "numbered=2: expected a number "
                                                               "from 0 to 1"),
                               ("shakashaka", {"symmetric": 2.0}, "symmetric=2: expected a "
                                                                  "number from 0 to 1"),
                               # a switch between 0 and 1 ran as on (sudoku: >= 0.5) or off,
                               # tagged apart from 1 or 0: a file resumed only with it again
                               ("sudoku", {"symmetric": 0.5}, "symmetric=0.5: expected 0 or 1"),
                               ("lightup", {"symmetric": 0.3}, "symmetric=0.3: expected 0 or 1"),
                               ("shakashaka", {"symmetric": 0.7}, "symmetric=0.7: expected "
                                                                  "0 or 1"),
                               # a count with a fraction ran as its whole part, tagged apart
                               ("tapa", {"tries": 2.5}, r"tries=2.5: expected a whole number"),
                               ("lightup", {"repairs": 0.5}, "repairs=0.5: expected a whole"),
                               ("nurikabe", {"budget": 1e3 + 0.1}, "budget=1000.1: expected a "
                                                                  "whole number")):
        with pytest.raises(PtrmError, match=match):
            get(name).check_params(Knobs(params=param))
    get("lightup").check_params(Knobs(params={"walls": 0.0, "repairs": 0.0}))
    get("tapa").check_params(Knobs(params={"tries": 3.0}))


def test_every_knob_a_generator_reads_as_a_whole_number_is_a_count():
    """The knobs read through int() are declared counts (checked to be whole), and their
    defaults are whole: one list, kept honest by reading the generators' source."""
    import inspect
    import re

    from ptrm_cli.generate import MODULES, get

    for name in MODULES:
        gen = get(name)
        source = inspect.getsource(inspect.getmodule(type(gen)))
        read_as_int = set(re.findall(r'int\(knobs\.param\("(\w+)"', source))
        assert read_as_int <= gen.counts, (name, read_as_int - gen.counts)
        assert gen.counts <= set(gen.params), name
        assert all(gen.params[k][0] == int(gen.params[k][0]) for k in gen.counts), name


def test_a_board_all_walls_is_drawn_again(installed_codec):
    """walls near 1 on a small board walled every cell: no light, so the codec read no answer
    from the text and the run ended in an AssertionError."""
    installed_codec("lightup")
    job = Job("lightup", 4, 4, 0, Knobs(params={"walls": 0.99}))
    for index in range(2):
        rec = make_record(job, index)
        assert any(1 in row for row in rec["answer"])


def test_cli_generate_refuses_negative_workers(installed_codec, tmp_path):
    from typer.testing import CliRunner

    from ptrm_cli.app import app

    installed_codec("lightup")
    res = CliRunner().invoke(app, ["generate", "lightup", "--n", "1", "--out",
                                   str(tmp_path / "l.jsonl"), "--workers", "-1", "-q"])
    assert res.exit_code == 2 and "--workers" in res.output
    assert not (tmp_path / "l.jsonl").exists()


def test_cli_generate_refuses_a_new_folder_path_as_out(installed_codec, tmp_path):
    """`--out new/` (a folder that is not there yet) made a file named `new`: Path drops the
    trailing '/'."""
    from typer.testing import CliRunner

    from ptrm_cli.app import app

    installed_codec("lightup")
    res = CliRunner().invoke(app, ["generate", "lightup", "--n", "1", "--out",
                                   f"{tmp_path / 'new'}/", "-q", "--workers", "1"])
    assert res.exit_code == 2 and "ends in '/'" in res.output and "hint:" in res.output, \
        res.output
    assert not os.path.lexists(tmp_path / "new")


def test_cli_generate_reads_knobs_and_out_as_the_user_wrote_them(installed_codec, tmp_path,
                                                                  monkeypatch):
    """`-p walls=1_0` was read as 10 (float() takes underscores), and `--out ''` was reported
    as `--out .` (Path("") is ".")."""
    from typer.testing import CliRunner

    from ptrm_cli.app import app

    installed_codec("lightup")
    monkeypatch.chdir(tmp_path)
    base = ["generate", "lightup", "--n", "1", "--size", "4x4", "--workers", "1", "-q"]
    for value in ("1_0", "0_2", "\u0660.\u0662"):  # 0.2 in Arabic-Indic digits
        res = CliRunner().invoke(app, [*base, "--out", "l.jsonl", "-p", f"walls={value}"])
        assert res.exit_code == 2 and f"--param 'walls={value}': expected KEY=NUMBER" in \
            res.output and "hint:" in res.output, res.output
    assert not (tmp_path / "l.jsonl").exists()
    res = CliRunner().invoke(app, [*base, "--out", ""])
    assert res.exit_code == 2 and "--out '': the path is empty" in res.output, res.output
    assert "--out ." not in res.output and "hint:" in res.output


def test_an_interrupted_run_keeps_its_puzzles_and_says_how_many(installed_codec, tmp_path,
                                                                monkeypatch):
    """Ctrl-C in the middle: the lines written stay, `Interrupted` counts them, and
    `generate --json` still prints its summary (it printed nothing), marked interrupted."""
    from typer.testing import CliRunner

    from ptrm_cli.app import app
    from ptrm_cli.generate import runner

    installed_codec("sudoku")
    job = Job("sudoku", 9, 9, 5, Knobs())

    def make_two(task):
        if task[1] == 2:
            raise KeyboardInterrupt
        return runner._work(task)

    out = tmp_path / "s.jsonl"
    with pytest.raises(runner.Interrupted) as stopped:
        run(job, 4, out, workers=1, make=make_two)
    assert stopped.value.summary["made"] == 2 and len(_lines(out)) == 2
    assert run(job, 4, out, workers=1)["made"] == 2  # the same command continues

    def interrupted(job, n, out, **kw):
        raise runner.Interrupted({"made": 1, "present": 0, "beyond": 0, "seconds": 0.5})

    monkeypatch.setattr(runner, "run", interrupted)
    res = CliRunner().invoke(app, ["generate", "sudoku", "--n", "3", "--out",
                                   str(tmp_path / "t.jsonl"), "-q", "--json", "--workers", "1"])
    assert res.exit_code == 130
    summary = json.loads(res.stdout.splitlines()[0])
    assert summary["interrupted"] is True and summary["made"] == 1 and summary["n"] == 3
    assert "1 more puzzle(s) kept" in res.stderr and "interrupted" in res.stderr


def test_a_puzzle_it_cannot_make_keeps_the_others_and_json_says_why(installed_codec, tmp_path,
                                                                   monkeypatch):
    """A failure mid-run ("no puzzle after 2000 attempts") kept the lines before it, but
    `generate --json` printed nothing for a script to read."""
    from typer.testing import CliRunner

    from ptrm_cli.app import app
    from ptrm_cli.generate import runner

    installed_codec("sudoku")
    job = Job("sudoku", 9, 9, 5, Knobs())

    def fail_at_two(task):
        if task[1] == 2:
            raise PtrmError("sudoku: no puzzle after 2000 attempts")
        return runner._work(task)

    out = tmp_path / "s.jsonl"
    with pytest.raises(PtrmError) as failed:
        run(job, 4, out, workers=1, make=fail_at_two)
    assert failed.value.summary["made"] == 2 and len(_lines(out)) == 2

    def failing(job, n, out, **kw):
        e = PtrmError("sudoku: no puzzle after 2000 attempts")
        e.summary = {"made": 1, "present": 0, "beyond": 0, "seconds": 0.5}
        raise e

    monkeypatch.setattr(runner, "run", failing)
    res = CliRunner().invoke(app, ["generate", "sudoku", "--n", "3", "--out",
                                   str(tmp_path / "t.jsonl"), "-q", "--json", "--workers", "1"])
    assert res.exit_code == 2
    summary = json.loads(res.stdout.splitlines()[0])
    assert summary["error"] == "sudoku: no puzzle after 2000 attempts" and summary["made"] == 1
    assert summary["interrupted"] is False and "no puzzle after" in res.stderr


def test_knobs_a_type_cannot_use_are_refused_before_the_file_is_made(installed_codec, tmp_path):
    """A maze min_path the grid has too few cells for was refused only by `make`, after --out
    was created (an empty file left behind, the error raised inside a worker); nurikabe took
    --max-clues and --no-minimal and changed nothing (every island needs its number) but the
    knobs tag."""
    from typer.testing import CliRunner

    from ptrm_cli.app import app

    for argv, message in ((["maze", "--size", "6x6"], "too few for a path longer than 110"),
                          # "does": one option ("--max-clues do not apply" before)
                          (["nurikabe", "--max-clues", "5"], "--max-clues does not apply"),
                          (["nurikabe", "--no-minimal"], "--no-minimal does not apply")):
        installed_codec(argv[0])
        out = tmp_path / f"{argv[0]}.jsonl"
        res = CliRunner().invoke(app, ["generate", *argv, "--n", "2", "--out", str(out),
                                       "--workers", "2", "-q"])
        assert res.exit_code == 2 and message in res.output, res.output
        assert not out.exists(), argv


def test_a_symlink_to_a_file_being_written_is_refused(installed_codec, tmp_path):
    """The one-writer lock is taken beside the real file: through a symlink (another name,
    another `.NAME.lock`) a second job wrote the same indices into the file again."""
    from typer.testing import CliRunner

    from ptrm_cli.app import app
    from ptrm_cli.atomic import exclusive

    installed_codec("lightup")
    real = tmp_path / "l.jsonl"
    real.touch()
    (tmp_path / "link.jsonl").symlink_to(real)
    with exclusive(real, "generate --out"):  # a first job writing the file under its own name
        res = CliRunner().invoke(app, ["generate", "lightup", "--n", "1", "--size", "6x6",
                                       "--out", str(tmp_path / "link.jsonl"), "-w", "1", "-q"])
    assert res.exit_code == 2 and "another ptrm job is writing it" in res.output, res.output
    assert real.read_text() == ""


def test_every_mistake_gets_a_hint(installed_codec, tmp_path):
    """A refused --size, -p or knob said what was wrong but gave no `hint:` line, which every
    user mistake has (README, "Commands"); the size hint names the type's own sizes."""
    from typer.testing import CliRunner

    from ptrm_cli.app import app

    for argv, hint in ((["sudoku", "--size", "9"], "sudoku takes --size 4x4, 6x6 or 9x9"),
                       (["sudoku", "--size", "5x5"], "sudoku takes --size 4x4, 6x6 or 9x9"),
                       (["lightup", "--size", "3x3"], "4 to 30 a side (default 10x10)"),
                       (["maze", "--size", "31x30"], "4 to 30 a side (default 30x30)"),
                       (["sudoku", "-p", "sym"], "sudoku's: symmetric"),
                       (["lightup", "-p", "walls=0.2", "-p", "walls=0.3"], "drop the other"),
                       (["lightup", "-p", "walls=1"], "walls defaults to 0.21"),
                       (["tapa", "-p", "qmarks=nan"], "qmarks defaults to 0"),
                       (["nurikabe", "-p", "theme_max=9"], "theme_max defaults to 4"),
                       (["maze", "-p", "unique=0.5"], "docs/MAZE_ARC.md"),
                       (["maze", "-p", "walls_min=0.6"], "walls_max to 0.5")):
        installed_codec(argv[0])
        out = tmp_path / f"{argv[0]}.jsonl"
        res = CliRunner().invoke(app, ["generate", *argv, "--n", "1", "--out", str(out), "-q"],
                                 env={"TERMINAL_WIDTH": "400"})
        assert res.exit_code == 2 and "hint: " in res.output, (argv, res.output)
        assert hint in " ".join(res.output.split()), (argv, res.output)
        assert not out.exists(), argv


def test_one_option_does_not_apply(installed_codec):
    """"--max-clues do not apply": the verb follows how many options were refused."""
    for gen, argv in ((get("maze"), Knobs(max_clues=3)), (get("nurikabe"), Knobs(minimal=False))):
        with pytest.raises(PtrmError, match="--(max-clues|no-minimal) does not apply"):
            gen.check_knobs(argv, 10, 10)
    with pytest.raises(PtrmError, match="--max-clues, --no-minimal do not apply"):
        get("nurikabe").check_knobs(Knobs(max_clues=3, minimal=False), 10, 10)


def test_type_names_are_read_as_every_command_reads_them(installed_codec):
    """`ptrm solve --codec Sudoku` and a record's "AKARI" are read in any case, but `ptrm
    generate Sudoku` was "no generator for puzzle type 'Sudoku'"; a near miss gets a guess."""
    for name in ("sudoku", "lightup", "nurikabe"):
        installed_codec(name)
    assert get("Sudoku").name == "sudoku" and get("AKARI").name == "lightup"
    assert get(" LightUp ").name == "lightup"
    with pytest.raises(PtrmError, match=r"'nurikab' \(did you mean 'nurikabe'\?\)"):
        get("nurikab")


def test_another_run_says_what_differs(installed_codec, tmp_path):
    """The refusal printed both runs' settings as dicts without the size, so a file of another
    --size read "holds a puzzle from another run ({...}); this run makes {the same dict}"."""
    installed_codec("lightup")
    out = tmp_path / "l.jsonl"
    run(Job("lightup", 6, 6, 1, Knobs()), 1, out)
    with pytest.raises(PtrmError) as refused:
        ResumableJsonl(out, Job("lightup", 7, 6, 1, Knobs()))
    assert str(refused.value).endswith("(gen-lightup-6x6-s1-000000): size 6x6, this run "
                                       "7 rows x 6 columns")
    with pytest.raises(PtrmError) as refused:
        ResumableJsonl(out, Job("lightup", 6, 6, 2, Knobs(params={"walls": 0.3})))
    assert str(refused.value).endswith(": seed 1, this run 2; knobs default, this run walls=0.3")


def test_a_size_that_is_not_square_is_said_rows_first_and_spelled_out():
    """`--size 3x40` was refused as "size 3x40" and a maze of 6 rows as "a 6x5 maze", which
    read both ways: rows first and spelled out now, as `codec.size_name` says every size that
    is not square (the option itself stays ROWSxCOLS)."""
    for name, (rows, cols), message in (
            ("lightup", (3, 40), "lightup: size 3 rows x 40 columns is out of range (4..30 a "
                                 "side)"),
            ("maze", (31, 30), "maze: size 31 rows x 30 columns is out of range (4..30 a side; "
                               "the maze family is 30x30)"),
            ("sudoku", (6, 9), "sudoku: size must be 4x4, 6x6 or 9x9, not 6 rows x 9 columns")):
        with pytest.raises(PtrmError) as refused:
            get(name).check_size(rows, cols)
        assert str(refused.value) == message
    maze = get("maze")
    with pytest.raises(PtrmError, match="a 6 rows x 5 columns maze has 30 cells, too few for a "
                                        "path longer than 30 steps"):
        maze.make(puzzle_rng(0, "maze", 0), 6, 5, Knobs(params={"min_path": 30}))
    maze.max_attempts = 3  # no 6x7 layout has a shortest path of more than 38 steps
    with pytest.raises(PtrmError, match="no 6 rows x 7 columns maze with a path longer than 38 "
                                        "steps in 3 layouts"):
        maze.make(puzzle_rng(0, "maze", 0), 6, 7, Knobs(params={"min_path": 38}))


def test_an_out_it_cannot_open_is_one_error(installed_codec, tmp_path):
    """A symlink loop (or a file it may not read or append to) was an OSError traceback."""
    from typer.testing import CliRunner

    from ptrm_cli.app import app

    installed_codec("lightup")
    (tmp_path / "a.jsonl").symlink_to(tmp_path / "b.jsonl")
    (tmp_path / "b.jsonl").symlink_to(tmp_path / "a.jsonl")
    res = CliRunner().invoke(app, ["generate", "lightup", "--n", "1", "--size", "6x6", "--out",
                                   str(tmp_path / "a.jsonl"), "-w", "1", "-q"])
    assert res.exit_code == 2 and "cannot read and append to it" in res.output, res.output
    assert "hint: " in res.output and "Traceback" not in res.output


def test_a_write_that_fails_keeps_the_lines_before(installed_codec, tmp_path, monkeypatch):
    """A full disk in the middle of a run was an OSError traceback: now a PtrmError that counts
    the puzzles kept (what --json reports), and the same command finishes the file later."""
    import errno

    from ptrm_cli.generate import runner

    installed_codec("lightup")
    job = Job("lightup", 6, 6, 1, Knobs())
    whole = tmp_path / "whole.jsonl"
    run(job, 3, whole)
    syncs = []

    def full_disk(fd):
        syncs.append(fd)
        if len(syncs) == 2:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    out = tmp_path / "l.jsonl"
    monkeypatch.setattr(runner.os, "fsync", full_disk)
    with pytest.raises(PtrmError, match="l.jsonl: cannot append a puzzle .*No space") as failed:
        run(job, 3, out)
    assert failed.value.summary["made"] == 1 and "run the same command again" in \
        failed.value.hint
    monkeypatch.undo()
    run(job, 3, out)
    assert _lines(out) == _lines(whole)


def test_a_run_that_makes_no_puzzle_leaves_no_file(installed_codec, tmp_path, monkeypatch):
    """`generate maze --size 10x20` (no puzzle can be made) or Ctrl-C before the first puzzle
    left an empty --out behind, and the stop said "0 more puzzle(s) kept in it": the file is
    now made with its first line, and the message says nothing was kept."""
    from typer.testing import CliRunner

    from ptrm_cli.app import app
    from ptrm_cli.generate import runner

    installed_codec("lightup")
    job = Job("lightup", 6, 6, 1, Knobs())

    def fail(task):
        raise PtrmError("lightup: no puzzle after 2000 attempts")

    def stop(task):
        raise KeyboardInterrupt

    out = tmp_path / "new" / "l.jsonl"
    with pytest.raises(PtrmError) as failed:
        run(job, 2, out, make=fail)
    assert failed.value.summary["made"] == 0 and not out.exists()
    with pytest.raises(runner.Interrupted):
        run(job, 2, out, make=stop)
    assert not out.exists()
    assert run(job, 1, out)["made"] == 1 and len(_lines(out)) == 1  # made with its first line
    with pytest.raises(runner.Interrupted):  # an existing file: left as it was
        run(job, 2, out, make=stop)
    assert len(_lines(out)) == 1

    def interrupted(job, n, out, **kw):
        raise runner.Interrupted({"made": 0, "present": 0, "beyond": 0, "seconds": 0.5})

    monkeypatch.setattr(runner, "run", interrupted)
    for name, said in (("none.jsonl", "nothing kept, no {} written"),
                       ("l.jsonl", "nothing added to {}")):
        res = CliRunner().invoke(app, ["generate", "lightup", "--n", "1", "--out",
                                       str(out.parent / name), "-q", "-w", "1"],
                                 env={"TERMINAL_WIDTH": "400"})
        assert res.exit_code == 130 and "0 more" not in res.stderr, res.stderr
        assert said.format(out.parent / name) in res.stderr, res.stderr


def test_a_first_puzzle_the_disk_refuses_leaves_no_file(installed_codec, tmp_path, monkeypatch):
    """The file is made with its first line; a full disk at that line left the file just made
    (empty, or one cut line) and a hint that "the puzzles written so far are kept"."""
    import errno

    from ptrm_cli.generate import runner

    installed_codec("lightup")
    job = Job("lightup", 6, 6, 1, Knobs())

    def full_disk(fd):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(runner.os, "fsync", full_disk)
    out, target = tmp_path / "l.jsonl", tmp_path / "real" / "t.jsonl"
    (tmp_path / "link.jsonl").symlink_to(target)  # a dangling link: the file is made there
    for given in (out, tmp_path / "link.jsonl"):
        with pytest.raises(PtrmError, match="first puzzle .*No space.*nothing kept") as failed:
            run(job, 2, given)
        assert failed.value.summary["made"] == 0 and "kept" not in failed.value.hint
    assert not out.exists() and not target.exists() and (tmp_path / "link.jsonl").is_symlink()


def test_a_folder_it_cannot_make_is_refused_before_the_first_puzzle(installed_codec, tmp_path):
    """With the file made at the first write, an --out whose folder cannot be made (or
    written) was found only after the first puzzle, which may take minutes; the standalone
    maze command takes no lock, which would have found it."""
    if not os.path.isdir("/proc/self"):
        pytest.skip("needs Linux's /proc (a place no one may make a folder)")
    installed_codec("lightup")

    def made(task):
        raise AssertionError("a puzzle was made before the --out was checked")

    with pytest.raises(PtrmError, match="ptrm-review/l.jsonl: cannot create it"):
        run(Job("lightup", 6, 6, 1, Knobs()), 1, "/proc/ptrm-review/l.jsonl", make=made)


def test_ctrl_c_inside_a_solve_is_an_interrupt(installed_codec, tmp_path):
    """With one worker the puzzle is made in this process, where Ctrl-C during a CaDiCaL solve
    or a cardinality encoding came out as pysat's `error: Caught keyboard interrupt` and a
    traceback."""
    import pycard
    import pysolvers

    from ptrm_cli.generate import runner

    installed_codec("lightup")
    job = Job("lightup", 6, 6, 1, Knobs())
    for error in (pysolvers.error, pycard.error):
        def solving(task):
            if task[1] == 1:
                raise error("Caught keyboard interrupt")
            return runner._work(task)

        with pytest.raises(runner.Interrupted) as stopped:
            run(job, 3, tmp_path / f"{error.__module__}.jsonl", workers=1, make=solving)
        assert stopped.value.summary["made"] == 1


def test_a_record_id_reads_back_as_it_was_built():
    """The size of a resumed file's records is read from their ids: `parse_record_id` is the
    one reader of the format `record_id` writes (a regex of its own in the resume check
    repeated the format)."""
    from ptrm_cli.generate.runner import parse_record_id, record_id

    for job, index in ((Job("lightup", 6, 7, 0, Knobs()), 0),
                       (Job("maze", 30, 30, 123, Knobs()), 42),
                       (Job("sudoku", 9, 9, 5, Knobs()), 10**7)):
        assert parse_record_id(record_id(job, index)) == {
            "type": job.type, "rows": job.rows, "cols": job.cols, "seed": job.seed,
            "index": index}
    for other in (None, 7, "", "janko-lightup-001", "gen-lightup-6x6-s1", "gen-lightup-6x6-s1-x"):
        assert parse_record_id(other) is None, other


def test_a_param_without_its_number_is_shown_with_its_default(installed_codec):
    """`-p walls_min` (no `=`) was answered "e.g. min_path=110", another knob; a KEY the type
    lacks (or none) still gets the type's first knob. Every type has knobs to show."""
    from ptrm_cli.commands.generate import _params

    for name in MODULES:
        assert get(name).params, name
    maze = get("maze")
    for item, example in (("walls_min", "walls_min=0.3"), ("walls_min=x", "walls_min=0.3"),
                          ("nope", "min_path=110"), ("=3", "min_path=110")):
        with pytest.raises(PtrmError, match=f"e.g. {example}$"):
            _params([item], maze)


def test_a_large_n_starts_at_once(installed_codec, tmp_path):
    """Every missing index was listed, and a task tuple made for each, before the first
    puzzle: --n 100000000 spent gigabytes and ended in a MemoryError traceback. Now they are
    drawn as they are made: a run of --n 10**6 stopped after 2 puzzles allocates next to
    nothing (it took over 100 MB)."""
    import tracemalloc

    from ptrm_cli.generate import runner

    installed_codec("lightup")
    job = Job("lightup", 6, 6, 1, Knobs())

    def two(task):
        if task[1] == 2:
            raise KeyboardInterrupt
        return runner._work(task)

    runner._work((job, 0))  # the codec's imports and caches, outside the measure
    tracemalloc.start()
    try:
        with pytest.raises(runner.Interrupted) as stopped:
            run(job, 10**6, tmp_path / "l.jsonl", workers=1, make=two)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert stopped.value.summary == {**stopped.value.summary, "made": 2, "present": 0}
    assert peak < 4e6, peak  # ~0.1 MB; a list of 10**6 tasks: over 100 MB


def test_stats_script_refuses_mistakes_in_one_message(installed_codec, capsys):
    """`python -m ptrm_cli.generate.stats` (docs/GENERATORS.md) tracebacked on an unknown
    type or a `-p walls` without its number, and spent 200 attempts on walls=5 before one."""
    from ptrm_cli.generate import stats

    installed_codec("lightup")
    for argv, message in ((["foo"], "no generator for puzzle type 'foo'"),
                          (["lightup", "-p", "walls"], "--param 'walls': expected KEY=NUMBER"),
                          (["lightup", "-p", "walls=5"], "walls=5: expected a fraction"),
                          (["lightup", "--size", "3x3"], "size 3x3 is out of range")):
        assert stats.main([*argv, "--n", "1", "--no-real"]) == 2, argv
        err = capsys.readouterr().err
        assert err.startswith("error: ") and message in err and "\nhint: " in err, err


def test_a_write_the_disk_refuses_is_one_error(installed_codec, tmp_path):
    """A write refused by the file system itself (a full disk; here a file-size limit) left
    the line in the file's buffer, and `close` flushed it again: an OSError traceback in
    place of the error and of --json's summary. The same command then finishes the file."""
    import resource
    import signal
    import subprocess
    import sys

    installed_codec("lightup")
    argv = [sys.executable, "-m", "ptrm_cli", "generate", "lightup", "--n", "20", "--size",
            "6x6", "-w", "1", "-q", "--json", "--out"]
    whole, out = tmp_path / "whole.jsonl", tmp_path / "l.jsonl"

    def small_files():  # writes past 1500 bytes fail with EFBIG instead of a signal
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (1500, 1500))

    res = subprocess.run(argv + [str(out)], capture_output=True, text=True,
                         preexec_fn=small_files, timeout=300)
    assert res.returncode == 2 and "Traceback" not in res.stderr, res.stderr
    assert "cannot append a puzzle (File too large)" in res.stderr, res.stderr
    summary = json.loads(res.stdout)
    assert summary["made"] >= 1 and "cannot append" in summary["error"]
    assert out.read_text().count("\n") == summary["made"]  # whole lines, then a cut one
    subprocess.run(argv + [str(whole)], check=True, capture_output=True, timeout=300)
    subprocess.run(argv + [str(out)], check=True, capture_output=True, timeout=300)
    assert _lines(out) == _lines(whole)


def _state(pid: int) -> tuple[str, int] | None:
    """(state, parent pid) of a live process, from Linux /proc; None once it is gone or a
    zombie (an orphan's reaper, in a container, may never reap it)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return None if fields[0] in "ZX" else (fields[0], int(fields[1]))


def _children(pid: int) -> list[int]:
    """The live processes whose parent is `pid`."""
    return [int(p.name) for p in Path("/proc").glob("[0-9]*")
            if (_state(int(p.name)) or ("", 0))[1] == pid]


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc (Linux)")
def test_workers_of_a_killed_generate_exit_quietly(installed_codec, tmp_path):
    """`kill -9` of a `generate --workers 2`: its workers ran on and each printed a
    BrokenPipeError traceback sending its next puzzle, and the resource tracker warned of
    "leaked semaphore objects"."""
    import signal
    import subprocess
    import sys
    import time

    installed_codec("lightup")
    out, err = tmp_path / "l.jsonl", tmp_path / "stderr.txt"
    argv = [sys.executable, "-m", "ptrm_cli", "generate", "lightup", "--n", "100000",
            "--size", "6x6", "-w", "2", "-q", "--out", str(out)]
    with open(err, "w") as stderr:
        parent = subprocess.Popen(argv, stderr=stderr, stdout=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while not (out.exists() and out.stat().st_size > 2000):  # the workers are at work
            assert parent.poll() is None and time.monotonic() < deadline, err.read_text()
            time.sleep(0.1)
        kids = _children(parent.pid)  # the two workers and the resource tracker
        assert kids, "no worker processes found"
    finally:
        parent.send_signal(signal.SIGKILL)
        parent.wait()
    deadline = time.monotonic() + 30
    while any(_state(k) for k in kids) and time.monotonic() < deadline:
        time.sleep(0.1)
    left = [k for k in kids if _state(k)]
    for k in left:  # ours to end, so that a failure leaves nothing running
        os.kill(k, signal.SIGKILL)
    said = err.read_text()
    assert not left, f"workers still running: {left}"
    assert "Traceback" not in said and "BrokenPipeError" not in said, said
    assert "resource_tracker" not in said, said
