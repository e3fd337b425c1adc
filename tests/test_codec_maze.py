"""The maze codec (text and CSV forms, TRM tokens, the shortest-path verifier, symmetries) and
the Maze-Hard generator (the recipe, records that build-data reads, resumable runs)."""

from __future__ import annotations

import json
from collections import deque

import numpy as np
import pytest

from ptrm_cli import dihedral
from ptrm_cli.codec import Solution
from ptrm_cli.conformance import assert_conformant
from ptrm_cli.errors import ParseError, PtrmError
from ptrm_cli.generate.base import Knobs, puzzle_rng
from ptrm_cli.generate.maze import MazeGenerator, _work, main, make_record
from ptrm_cli.generate.runner import Job, run
from ptrm_codecs.maze import MazeCodec

from fixtures_models import solve_cli

#: TRM's build_maze_dataset: token = CHARSET.index(ch) + 1, 0 = pad
CHARSET = "# SGo"

# 5x5, one wall bar in rows 1 and 3: S at the top-left, G at the bottom-right, 8 steps apart.
OPEN = ["S....",
        ".###.",
        ".....",
        ".###.",
        "....G"]


@pytest.fixture(scope="module")
def maze(installed_codec):
    return installed_codec("maze")


def draw(rows: list[str], path: list[tuple[int, int]]) -> str:
    grid = [list(r) for r in rows]
    for r, c in path:
        grid[r][c] = "o"
    return "\n".join("".join(r) for r in grid)


def codes(maze, rows: list[str], path: list[tuple[int, int]]) -> list[str]:
    """Verifier codes for `path` ('o' cells, which may sit on walls) on the maze `rows`."""
    puzzle = maze.parse("\n".join(rows)).puzzle
    grid = puzzle.clues.astype(np.int16)
    for rc in path:
        grid[rc] = 5
    return [v.code for v in maze.verify(puzzle, Solution("maze", grid))]


def count_shortest(clues: np.ndarray) -> tuple[int, int]:
    """(distance, number of shortest S-G paths), written here independently of the codec."""
    rows, cols = clues.shape
    (sr,), (sc,) = np.nonzero(clues == 3)
    (gr,), (gc,) = np.nonzero(clues == 4)
    dist = {(sr, sc): 0}
    ways = {(sr, sc): 1}
    queue = deque([(sr, sc)])
    while queue:
        r, c = queue.popleft()
        for nr, nc in ((r - 1, c), (r + 1, c), (r, c - 1), (r, c + 1)):
            if 0 <= nr < rows and 0 <= nc < cols and clues[nr, nc] != 1:
                if (nr, nc) not in dist:
                    dist[(nr, nc)] = dist[(r, c)] + 1
                    ways[(nr, nc)] = 0
                    queue.append((nr, nc))
                if dist[(nr, nc)] == dist[(r, c)] + 1:
                    ways[(nr, nc)] += ways[(r, c)]
    return dist.get((gr, gc), -1), ways.get((gr, gc), 0)


# -- text forms and tokens -------------------------------------------------------------------

def test_text_round_trip_and_the_free_spellings(maze):
    shortest = [(1, 0), (2, 0), (2, 1), (2, 2), (2, 3), (2, 4), (3, 4)]
    text = draw(OPEN, shortest)
    parsed = maze.parse(text)
    assert parsed.format == "grid" and parsed.solution is not None
    assert (parsed.puzzle.rows, parsed.puzzle.cols) == (5, 5)
    assert int((parsed.solution.grid == 5).sum()) == len(shortest)
    # '.' and ' ' are both free; a "maze" header line is allowed; text written back re-reads
    spaced = maze.to_text(parsed.puzzle, parsed.solution)
    assert "." not in spaced and "o" in spaced
    again = maze.parse("maze\n" + spaced + "\n")
    assert maze.key(again.puzzle) == maze.key(parsed.puzzle)
    assert again.solution == parsed.solution
    # editors drop trailing spaces: short rows are padded with free cells
    ragged = maze.parse("S #\n   \n  G").puzzle
    trimmed = maze.parse("S #\n\n  G").puzzle
    assert np.array_equal(ragged.clues, trimmed.clues)
    assert maze.sniff(text) and not maze.sniff("123\n456")


def test_csv_line_is_trm_tokens(maze):
    """The HRM/TRM CSV form: 900 characters, and our tokens are TRM's (CHARSET index + 1)."""
    rng = np.random.default_rng(0)
    chars = rng.choice(list("# "), size=900, p=[0.4, 0.6])
    chars[0], chars[899] = "S", "G"
    chars[1:30] = "o"
    line = "".join(chars)
    parsed = maze.parse(line)
    assert parsed.format == "csv" and (parsed.puzzle.rows, parsed.puzzle.cols) == (30, 30)
    want = np.array([CHARSET.index(ch) + 1 for ch in line])
    assert np.array_equal(maze.encode_label(parsed.puzzle, parsed.solution), want)
    question = line.replace("o", " ")
    assert np.array_equal(maze.encode(parsed.puzzle),
                          np.array([CHARSET.index(ch) + 1 for ch in question]))
    assert maze.to_line(parsed.puzzle, parsed.solution) == line
    assert maze.to_line(parsed.puzzle) == question
    vocab = maze.family().vocab
    assert vocab.family == "maze" and len(vocab) == 6
    assert [vocab.id(t) for t in ("pad", "maze.wall", "maze.free", "maze.start", "maze.goal",
                                  "maze.path")] == [0, 1, 2, 3, 4, 5]
    # an HRM CSV row (question, answer) is a record too
    p, s = maze.from_record({"question": question, "answer": line})
    assert s == parsed.solution and maze.key(p) == maze.key(parsed.puzzle)


def test_tokens_round_trip_pad_and_garbage(maze):
    parsed = maze.parse(draw(OPEN, [(1, 0), (2, 0), (2, 1), (2, 2), (2, 3), (2, 4), (3, 4)]))
    p, s = parsed.puzzle, parsed.solution
    x, y = maze.encode(p), maze.encode_label(p, s)
    assert x.shape == y.shape == (900,)
    assert (x.reshape(30, 30)[5:] == 0).all() and (x.reshape(30, 30)[:, 5:] == 0).all()
    assert np.array_equal(y.reshape(30, 30)[:5, :5], s.grid)
    assert maze.decode(p, y) == s
    noise = np.random.default_rng(1).integers(-3, 9, size=900)
    got = maze.decode(p, noise)
    assert got.grid.shape == (5, 5) and set(np.unique(got.grid)) <= {0, 1, 2, 3, 4, 5}
    # a trajectory state (a path prefix) shows as 'o' on the input
    state = maze.trajectory(p, s, 3)
    assert int((maze.encode(p, state) == 5).sum()) == 3
    assert maze.required_cells(p, s)[:3] == [(1, 0), (2, 0), (2, 1)]


def test_parse_errors(maze):
    with pytest.raises(ParseError, match="exactly one start"):
        maze.parse("S.S\n..G")
    with pytest.raises(ParseError, match="exactly one goal"):
        maze.parse("S..\n...")
    with pytest.raises(ParseError, match="m.txt:2: maze cell 'x' in column 2"):
        maze.parse("S..\n.x.\n..G", source="m.txt")
    with pytest.raises(ParseError, match="n\\*n"):
        maze.parse("S" + " " * 10 + "G")
    with pytest.raises(ParseError, match="without a path"):
        maze.from_record({"text": "\n".join(OPEN)})
    wide = maze.parse("\n".join(["S" + "." * 30] + ["." * 31] * 29 + ["." * 30 + "G"]))
    with pytest.raises(PtrmError, match="does not fit"):
        maze.encode(wide.puzzle)


# -- the verifier ----------------------------------------------------------------------------

SHORTEST = [(1, 0), (2, 0), (2, 1), (2, 2), (2, 3), (2, 4), (3, 4)]             # 8 steps
SNAKE = [(0, 1), (0, 2), (0, 3), (0, 4), (1, 4), (2, 4), (2, 3), (2, 2), (2, 1), (2, 0),
         (3, 0), (4, 0), (4, 1), (4, 2), (4, 3)]                                # 16 steps
THROUGH_WALLS = [(0, 1), (1, 1), (2, 1), (2, 2), (2, 3), (3, 3), (4, 3)]        # 8 steps, 2 walls


def test_verifier_accepts_bfs_shortest_paths(maze):
    from ptrm_codecs.maze import solve

    assert codes(maze, OPEN, SHORTEST) == []
    assert codes(maze, OPEN, [(0, 1), (0, 2), (0, 3), (0, 4), (1, 4), (2, 4), (3, 4)]) == []
    p = maze.parse("\n".join(OPEN)).puzzle
    s = solve(p)  # BFS
    assert maze.verify(p, s) == [] and int((s.grid == 5).sum()) + 1 == 8
    # S next to G: the empty path is the answer, and a detour is not
    assert codes(maze, ["SG#", "..."], []) == []
    assert codes(maze, ["SG#", "..."], [(1, 0), (1, 1)]) == ["mzEndpoint", "mzEndpoint"]


@pytest.mark.parametrize("path, expected", [
    (SNAKE, ["mzNotShortest"]),                                     # a longer proper path
    (SHORTEST[:3] + SHORTEST[4:], ["mzDeadEnd", "mzDisconnected"]),  # broken in the middle
    (THROUGH_WALLS, ["mzPathOnWall"]),                              # as short, through walls
    (SNAKE[:-1], ["mzEndpoint", "mzDeadEnd", "mzDisconnected"]),    # ends next to G's cell
    (SHORTEST + [(3, 0)], ["mzBranch", "mzDeadEnd"]),               # a spur
    (SHORTEST + [(4, 2)], ["mzDeadEnd", "mzDisconnected"]),         # a stray cell
    ([], ["mzNoPath"]),
], ids=["longer", "broken", "through-wall", "wrong-endpoint", "spur", "stray", "empty"])
def test_verifier_rejects(maze, path, expected):
    assert codes(maze, OPEN, path) == expected


def test_verifier_changed_cells_and_no_route(maze):
    p = maze.parse("\n".join(OPEN)).puzzle
    s = maze.parse(draw(OPEN, SHORTEST)).solution
    for cell, value in (((1, 1), 2), ((0, 0), 2), ((4, 4), 5), ((2, 2), 1), ((2, 2), 0),
                        ((0, 4), 4)):
        bad = Solution("maze", s.grid.copy())
        bad.grid[cell] = value
        got = [v.code for v in maze.verify(p, bad)]
        assert got and got[0] == "mzCellChanged", (cell, value, got)
    assert codes(maze, ["S#.", "##.", "..G"], []) == ["mzNoRoute"]


NO_ROUTE = ["S#.",
            "##.",
            "..G"]


def test_a_maze_without_a_route_breaks_a_rule_before_any_answer(maze):
    """`puzzle_violations` finds what `verify` finds of every answer to such a maze, and
    nothing in a maze with a route."""
    p = maze.parse("\n".join(NO_ROUTE)).puzzle
    found = maze.puzzle_violations(p)
    assert [v.code for v in found] == ["mzNoRoute"]
    assert found == maze.verify(p, Solution("maze", p.clues.astype(np.int16)))
    assert maze.puzzle_violations(maze.parse("\n".join(OPEN)).puzzle) == []


def test_solve_stops_on_a_maze_without_a_route_before_the_model(maze, tmp_path, monkeypatch):
    """It loaded the model and ran every rollout (minutes on a CPU for a 30x30 maze) to say
    then that the maze has no route: now that is said at once, as an input error."""
    from ptrm_cli import solver

    def no_model(*args, **kwargs):
        raise AssertionError("a model was loaded for a maze without a route")

    monkeypatch.setattr(solver, "load_model", no_model)
    monkeypatch.setattr(solver, "solve_puzzle", no_model)
    path = tmp_path / "maze.txt"
    path.write_text("\n".join(NO_ROUTE) + "\n")
    (why,) = maze.puzzle_violations(maze.parse(path.read_text()).puzzle)
    for extra in ((), ("--json",)):
        r = solve_cli(path, "-c", tmp_path / "no-such-model", *extra)
        text = " ".join(r.output.split())
        assert r.exit_code == 2, text
        assert f"{path}: this maze cannot be solved: {why.message}" in text
        assert "no model was run" in text and r.stdout == ""


def test_solve_still_runs_a_maze_with_a_route(tmp_path):
    """The check before the model lets a maze with a route through to it, as before."""
    from ptrm_codecs.families import MAZE

    from fixtures_models import save_tiny_checkpoint

    ckpt = save_tiny_checkpoint(tmp_path / "model", MAZE.vocab, seq_len=MAZE.seq_len)
    path = tmp_path / "maze.txt"
    path.write_text("\n".join(OPEN) + "\n")
    r = solve_cli(path, "-c", ckpt, "--K", 2, "--D", 1, "--json")
    assert r.exit_code in (0, 1), r.output  # 1: no rollout verified (an untrained model)
    out = json.loads(r.stdout)
    assert out["type"] == "maze" and out["rollouts"] == 2
    assert "mzNoRoute" not in {v["code"] for v in out["violations"]}


def test_transforms_keep_valid_paths_valid(maze):
    # 4x5, so that quarter turns and transposes change the shape
    parsed = maze.parse(draw(["S....", ".###.", ".....", "..#.G"],
                             [(0, 1), (0, 2), (0, 3), (0, 4), (1, 4), (2, 4)]))
    p, s = parsed.puzzle, parsed.solution
    assert maze.verify(p, s) == []
    for t in range(dihedral.COUNT):
        pt, st = maze.transform(p, s, t)
        assert (pt.rows, pt.cols) == dihedral.shape(4, 5, t)
        assert maze.verify(pt, st) == [], t
        back_p, back_s = maze.transform(pt, st, dihedral.INVERSE[t])
        assert maze.key(back_p) == maze.key(p) and back_s == s


# -- the generator ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def hard_records():
    """Two mazes at the real recipe (30x30, shortest path > 110), one with a unique path."""
    return [make_record(Job("maze", 30, 30, 0, Knobs(params={"unique": u})), i)
            for u, i in ((0, 4), (1, 5))]


def test_generator_meets_the_maze_hard_recipe(maze, hard_records):
    for rec, unique in zip(hard_records, (False, True)):
        p, s = maze.from_record(rec)
        assert (p.rows, p.cols) == (30, 30)
        assert maze.verify(p, s) == []
        dist, ways = count_shortest(p.clues)
        assert dist > 110 and rec["path_length"] == dist == int((s.grid == 5).sum()) + 1
        walls = int((p.clues == 1).sum())
        added = rec["difficulty"]["walls_added"]
        assert 270 <= walls - added <= 450
        if unique:
            assert ways == 1 and added > 0
        assert rec["difficulty"]["shortest_paths"] >= 1
        assert rec["id"].startswith("gen-maze-30x30-s0-") and rec["source"] == "generated"


def test_conformance_on_generated_mazes(maze, hard_records):
    assert_conformant(maze, [maze.from_record(r) for r in hard_records])


def test_long_pairs_is_exact():
    """The pair finder (component bounds + bit-parallel BFS) against plain BFS from every cell."""
    from ptrm_cli.generate.maze import long_pairs

    rng = np.random.default_rng(5)
    for trial in range(40):
        rows, cols = int(rng.integers(4, 14)), int(rng.integers(4, 14))
        free = rng.random((rows, cols)) >= rng.uniform(0.2, 0.5)
        min_path = int(rng.integers(0, 20))
        want = set()
        for s in zip(*np.nonzero(free)):
            dist = {s: 0}
            queue = deque([s])
            while queue:
                r, c = queue.popleft()
                for n in ((r - 1, c), (r + 1, c), (r, c - 1), (r, c + 1)):
                    if 0 <= n[0] < rows and 0 <= n[1] < cols and free[n] and n not in dist:
                        dist[n] = dist[(r, c)] + 1
                        queue.append(n)
            want |= {(s[0] * cols + s[1], t[0] * cols + t[1]) for t, d in dist.items()
                     if d > min_path}
        src, dst = long_pairs(free, min_path)
        assert set(zip(src.tolist(), dst.tolist())) == want, trial


def test_generator_small_is_deterministic_and_unique_when_asked():
    gen = MazeGenerator()
    knobs = Knobs(params={"min_path": 30, "unique": 1})
    a = gen.make(puzzle_rng(3, "maze", 7), 12, 12, knobs)
    b = gen.make(puzzle_rng(3, "maze", 7), 12, 12, knobs)
    assert np.array_equal(a.answer, b.answer)
    sols, stats = gen.solve(a, limit=2)
    assert len(sols) == 1 and np.array_equal(sols[0], a.answer) and stats["path_length"] > 30
    gen.max_attempts = 3  # no 6x6 layout has a shortest path of more than 33 steps
    with pytest.raises(PtrmError, match="no 6x6 maze with a path longer than 33 steps"):
        gen.make(puzzle_rng(0, "maze", 0), 6, 6, Knobs(params={"min_path": 33}))
    # one that cannot exist at all (41 steps visit 42 cells, a 6x6 grid has 36) is refused
    # at once, not after max_attempts layouts
    gen.max_attempts = 10 ** 9
    with pytest.raises(PtrmError, match="a 6x6 maze has 36 cells, too few for a path longer "
                                        "than 40 steps"):
        gen.make(puzzle_rng(0, "maze", 0), 6, 6, Knobs(params={"min_path": 40}))


def test_runner_writes_records_build_data_reads(maze, tmp_path):
    from ptrm_cli import sources

    job = Job("maze", 12, 12, 1, Knobs(params={"min_path": 25}))
    out = tmp_path / "mazes.jsonl"
    assert run(job, 3, out, workers=1, make=_work)["made"] == 3
    summary = run(job, 4, out, workers=1, make=_work)  # resumes: makes only index 3
    assert (summary["made"], summary["present"]) == (1, 3)
    lines = out.read_text().splitlines()
    assert len(lines) == 4 and json.loads(lines[0]) == make_record(job, 0)
    reader = sources.reader_for(out)
    assert reader is not None and reader.kind == "jsonl"
    items = list(reader.read(out, lambda loc, msg, type_name=None: pytest.fail(f"{loc}: {msg}")))
    assert [(it.type, it.rows, it.cols, it.form) for it in items] == [("maze", 12, 12, "ptrm")] * 4
    for it in items:
        p, s = reader.decode(it, maze)
        assert maze.verify(p, s) == [] and count_shortest(p.clues)[0] > 25
    # the standalone command writes the same file
    out2 = tmp_path / "cli.jsonl"
    assert main(["--n", "4", "--out", str(out2), "--size", "12x12", "--seed", "1",
                 "--workers", "1", "-p", "min_path=25"]) == 0
    assert out2.read_text() == out.read_text()


def test_generic_runner_path_matches_once_registered(monkeypatch):
    """`ptrm generate` finds generators through `ptrm_cli.generate.MODULES`; with "maze" added
    there, the generic runner makes the same records as the standalone path."""
    import ptrm_cli.generate as generate
    from ptrm_cli.generate import runner

    monkeypatch.setattr(generate, "MODULES", generate.MODULES + ("maze",))
    job = Job("maze", 10, 10, 4, Knobs(params={"min_path": 20}))
    assert generate.get("maze").name == "maze"
    assert runner.make_record(job, 2) == make_record(job, 2)


def test_maze_family_end_to_end_generate_build_eval_solve(tmp_path):
    """ptrm generate maze -> build-data (the maze family keeps its own 30x30 grid without
    --sizes; a 12x12 maze is dropped as the wrong size) -> eval and solve with a maze model."""
    from typer.testing import CliRunner

    from ptrm_cli.app import app
    from ptrm_codecs.families import MAZE

    from fixtures_models import save_tiny_checkpoint

    def ptrm(*args):
        r = CliRunner().invoke(app, [str(a) for a in args])
        assert "Traceback" not in r.output, r.output
        return r

    mazes = tmp_path / "mazes.jsonl"
    assert ptrm("generate", "maze", "--n", 5, "-o", mazes, "--workers", 1).exit_code == 0
    small = tmp_path / "small.jsonl"
    assert main(["--n", "1", "--out", str(small), "--size", "12x12", "--workers", "1",
                 "-p", "min_path=25"]) == 0
    data = tmp_path / "ds"
    r = ptrm("build-data", mazes, small, "--family", "maze", "--val-per-type", 2, "--augment", 1,
             "--out", data, "--json")
    assert r.exit_code == 0, r.output
    built = json.loads(r.stdout)
    assert built["puzzles"]["train"]["maze"] + built["puzzles"]["val"]["maze"] == 5
    assert built["dropped"] == {"wrong size": {"maze": 1}}

    ckpt = save_tiny_checkpoint(tmp_path / "model", MAZE.vocab, seq_len=MAZE.seq_len)
    r = ptrm("eval", "--data", data, "--split", "val", "-c", ckpt, "--K", 2, "--D", 1,
             "--seeds", 1, "--det-D", 1, "--no-plots", "-o", tmp_path / "ev", "--json")
    assert r.exit_code == 0, r.output
    report = json.loads(r.stdout)
    assert report["split"]["types"] == {"maze": 2} and report["groups"][0] == "maze"
    assert 0 <= report["ptrm"][0]["summary"]["maze"]["rules"]["pass"]["mean"] <= 1

    text = tmp_path / "maze.txt"
    text.write_text(json.loads(mazes.read_text().splitlines()[0])["text"])
    r = ptrm("solve", text, "-c", ckpt, "--K", 2, "--D", 1, "--json")
    assert r.exit_code in (0, 1), r.output  # 1: no rollout verified (an untrained model)
    out = json.loads(r.stdout)
    assert out["type"] == "maze" and len(out["solution"]["grid"]) == 30


def test_blank_lines_after_the_header_are_not_rows(maze):
    """`maze`, a blank line, then the grid: the blank line once became a row of free cells."""
    text = "\n".join(OPEN)
    plain = maze.parse(text).puzzle
    for lead in ("maze\n\n", "\nmaze\n\n\n"):
        p = maze.parse(lead + text + "\n\n").puzzle
        assert (p.rows, p.cols) == (5, 5) and np.array_equal(p.clues, plain.clues)
    with pytest.raises(ParseError, match=r"^m.txt:4: maze cell 'x' in column 1"):
        maze.parse("maze\n\nS....\nx###.\n....G", source="m.txt")


def test_generator_params_are_checked_before_any_work(tmp_path, capsys):
    """walls_min > walls_max and unique=0.5 were taken (the first failing inside a worker, the
    second read as 1); an impossible min_path drew 20,000 layouts, and the standalone command
    ended any such PtrmError in a traceback."""
    gen = MazeGenerator()
    for params, msg in (({"walls_min": 0.6, "walls_max": 0.4}, "walls_min <= walls_max"),
                        ({"walls_max": 1.0}, "walls_max < 1"),
                        ({"unique": 0.5}, "unique=0.5: expected 0 or 1")):
        with pytest.raises(PtrmError, match=msg):
            gen.check_params(Knobs(params=params))
    gen.check_params(Knobs(params={"unique": 1, "walls_min": 0.4, "walls_max": 0.4}))
    out = tmp_path / "m.jsonl"
    assert main(["--n", "1", "--out", str(out), "--size", "8x8", "-w", "1"]) == 2
    err = capsys.readouterr().err
    assert "error: maze: a 8x8 maze has 64 cells, too few for a path longer than 110 steps" \
        in err and "hint: lower -p min_path" in err and "Traceback" not in err
    # a knob refused before any work: the same two lines (argparse's error() dropped the hint)
    assert main(["--n", "1", "--out", str(out), "-p", "walls_min=0.6", "-p",
                 "walls_max=0.4"]) == 2
    err = capsys.readouterr().err
    assert "error: maze: need 0 <= walls_min <= walls_max" in err and "\nhint: walls_min " in err


def test_maze_main_gives_every_error_a_hint(tmp_path, capsys, monkeypatch):
    """An error raised without a hint got no `hint:` line from `python -m
    ptrm_cli.generate.maze`, where the CLI points at --help."""
    import ptrm_cli.generate.runner as runner

    def refused(*a, **k):
        raise PtrmError("maze: refused")

    monkeypatch.setattr(runner, "run", refused)
    assert main(["--n", "1", "--out", str(tmp_path / "m.jsonl"), "--size", "12x12"]) == 2
    assert capsys.readouterr().err == ("error: maze: refused\nhint: python -m "
                                       "ptrm_cli.generate.maze --help says what it takes\n")


# -- records whose `answer` grid is not one of small integers ---------------------------------

RECORD_TEXT = "S.o\n#.o\n..G"  # a 3x3 maze, its path drawn in


@pytest.mark.parametrize("answer, message", [
    # int16 of 10**10: an OverflowError, reported by the registry as a bug in the codec
    ([[3, 2, 10**10], [1, 2, 5], [2, 2, 4]], "answer values must be 1..5"),
    # 5.9 became 5 without a word
    ([[3.0, 2.0, 5.9], [1.0, 2.0, 5.0], [2.0, 2.0, 4.0]], "expected the solved maze as text or "
                                                           "as an integer grid"),
])
def test_an_answer_grid_out_of_range_or_not_integer_is_a_parse_error(answer, message):
    with pytest.raises(ParseError, match=message) as e:
        MazeCodec().from_record({"type": "maze", "text": RECORD_TEXT.replace("o", "."),
                                 "answer": answer}, source="m.jsonl", line=7)
    assert str(e.value).startswith("m.jsonl:7:")


def test_an_integer_answer_grid_is_read():
    puzzle, solution = MazeCodec().from_record(
        {"type": "maze", "text": RECORD_TEXT, "answer": [[3, 2, 5], [1, 2, 5], [2, 2, 4]]})
    assert solution.grid.dtype.name == "int16" and int((solution.grid == 5).sum()) == 2


def test_render_marks_changed_cells_without_colour(maze):
    """A path through a wall and a wall put on a free cell were drawn as walls in another
    colour: under NO_COLOR, in a file or a pipe they looked like the maze's own walls."""
    p = maze.parse("\n".join(OPEN)).puzzle
    s = maze.parse(draw(OPEN, SHORTEST)).solution
    assert maze.render(p, s).plain.count("??") == 0
    bad = Solution("maze", s.grid.copy())
    bad.grid[1, 1] = 5  # a path cell on a wall
    bad.grid[2, 2] = 1  # a wall on a free cell
    bad.grid[0, 0] = 2  # S gone
    rows = maze.render(p, bad).plain.split("\n")
    marked = {(r, c) for r, row in enumerate(rows) for c in range(5)
              if row[2 * c:2 * c + 2] == "??"}
    assert marked == {(1, 1), (2, 2), (0, 0)}, rows
