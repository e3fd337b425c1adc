"""The ARC codec on every ARC-AGI-1 training task (read in place from shared/data/arc): TRM's
canvas and crop, augmentation and its exact inverse, TRM's naming, the Kaggle layout."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from ptrm_cli import dihedral
from ptrm_cli.codec import Codec, Solution, cells_named
from ptrm_cli.conformance import check_codec
from ptrm_cli.errors import ParseError, PtrmError
from ptrm_codecs import arc as A

ARC_DIR = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "arc"
TRAINING = ARC_DIR / "arc-agi_training_challenges.json"


@pytest.fixture(scope="module")
def codec(installed_codec):
    return installed_codec("arc")


@pytest.fixture(scope="module")
def tasks():
    if not TRAINING.exists():
        pytest.skip(f"ARC data not found at {ARC_DIR} (the shared/ folder next to the repository)")
    return A.load_tasks(TRAINING)


def all_grids(task: dict):
    for split in ("train", "test"):
        for ex in task[split]:
            yield ex["input"]
            if "output" in ex:
                yield ex["output"]


def trm_crop(tokens: np.ndarray) -> np.ndarray:
    """TRM's evaluators/arc.py `_crop`, loop for loop, as the reference for ours."""
    grid = tokens.reshape(30, 30)
    max_area, max_size, num_c = 0, (0, 0), 30
    for num_r in range(1, 31):
        for c in range(1, num_c + 1):
            x = grid[num_r - 1, c - 1]
            if x < 2 or x > 11:
                num_c = c - 1
                break
        if num_r * num_c > max_area:
            max_area, max_size = num_r * num_c, (num_r, num_c)
    return (grid[:max_size[0], :max_size[1]] - 2).astype(np.uint8)


def trm_canvas(grid: np.ndarray, pad_r: int, pad_c: int) -> np.ndarray:
    """TRM's build_arc_dataset canvas (np.pad, then the eos row and column), as reference."""
    nrow, ncol = grid.shape
    out = np.pad(grid + 2, ((pad_r, 30 - pad_r - nrow), (pad_c, 30 - pad_c - ncol)),
                 constant_values=0)
    if pad_r + nrow < 30:
        out[pad_r + nrow, pad_c:pad_c + ncol] = 1
    if pad_c + ncol < 30:
        out[pad_r:pad_r + nrow, pad_c + ncol] = 1
    return out.reshape(-1)


# -- the Kaggle files --------------------------------------------------------------------------

def test_training_set_loads_with_solutions(tasks):
    assert len(tasks) == 400
    sols = json.loads(A.solutions_path(TRAINING).read_text())
    for tid, task in tasks.items():
        assert [ex["output"] for ex in task["test"]] == sols[tid]
        assert all("output" in ex for ex in task["train"])


def test_a_challenges_file_of_another_name_has_no_solutions(tmp_path):
    """Only `..._challenges.json` has a `_solutions.json` sibling; any other name once found
    itself as its "sibling" and read its tasks as solutions."""
    task = {"train": [{"input": [[1]], "output": [[2]]}], "test": [{"input": [[1, 1]]}]}
    path = tmp_path / "mytasks.json"
    path.write_text(json.dumps({"aaaa0001": task}))
    assert A.solutions_path(path) is None
    assert A.load_tasks(path)["aaaa0001"]["test"] == [{"input": [[1, 1]]}]


def test_vocabulary_is_trms(codec):
    vocab = codec.family().vocab
    assert (vocab.family, len(vocab), codec.family().seq_len) == ("arc", 12, 900)
    assert vocab.id("pad") == 0 and vocab.id("arc.eos") == 1
    assert [vocab.id(f"arc.{c}") for c in range(10)] == list(range(2, 12))


# -- canvas and crop ---------------------------------------------------------------------------

def test_every_grid_round_trips_through_tokens(codec, tasks):
    """Every training grid, input and output: at (0, 0) and at a random offset our canvas is
    TRM's, and crop gives the grid back (the label's decode is the output)."""
    rng = np.random.default_rng(0)
    n = 0
    for tid, task in tasks.items():
        for p, s in codec.examples(tid, task):
            assert s is not None
            x, y = codec.encode(p), codec.encode_label(p, s)
            assert np.array_equal(x, trm_canvas(p.clues.astype(np.int64), 0, 0))
            assert np.array_equal(y, trm_canvas(s.grid.astype(np.int64), 0, 0))
            assert np.array_equal(A.crop(x), p.clues) and np.array_equal(trm_crop(x), p.clues)
            assert codec.decode(p, y) == s and codec.verify(p, s) == []
            off = A.random_offset(rng, [p.clues.shape, s.grid.shape])
            y2 = codec.encode_label(p, s, offset=off)
            assert np.array_equal(y2, trm_canvas(s.grid.astype(np.int64), *off))
            assert codec.decode(p, y2, offset=off) == s
            p.meta["offset"] = off  # the offset may also travel in meta
            assert np.array_equal(codec.encode(p), trm_canvas(p.clues.astype(np.int64), *off))
            n += 1
    assert n > 1600


def test_crop_is_trms_on_arbitrary_tokens():
    rng = np.random.default_rng(1)
    for i in range(2000):
        tokens = rng.integers(0, 12, size=900)
        if i % 2:  # mostly colours: long runs make the width logic matter
            tokens = np.where(rng.random(900) < 0.97, rng.integers(2, 12, size=900), tokens)
        assert np.array_equal(A.crop(tokens), trm_crop(tokens)), i
    # out-of-range ids (model garbage) are non-colours; an all-pad canvas crops to 0x0
    assert A.crop(np.zeros(900, dtype=np.int64)).shape == (0, 0)
    weird = np.full(900, 5)
    weird[3] = 99
    assert A.crop(weird).shape == (30, 3)


def test_crop_semantics_by_hand():
    grid = np.array([[1, 2, 3], [4, 5, 6]])
    canvas = A.to_canvas(grid)
    assert canvas[2, :3].tolist() == [1, 1, 1] and canvas[:2, 3].tolist() == [1, 1]
    assert canvas[2, 3] == 0  # the corner stays pad
    assert np.array_equal(A.crop(canvas), grid)
    full = A.to_canvas(np.full((30, 30), 7))
    assert (full == 9).all()  # no room for eos on a 30x30 grid
    assert A.crop(full).shape == (30, 30)
    # width narrows at the first non-colour token; the largest area wins, the first on ties
    t = np.zeros((30, 30), dtype=np.int64)
    t[0, :4] = 2       # row 0: width 4
    t[1, :2] = 3       # row 1: width 2 -> 2x2 = 4 ties 1x4: the first (1x4) is kept
    assert A.crop(t).shape == (1, 4)
    t[2, :2] = 4       # 3x2 = 6 beats it
    assert A.crop(t).shape == (3, 2)
    with pytest.raises(PtrmError, match="does not fit"):
        A.to_canvas(np.zeros((3, 3)), offset=(28, 0))


# -- augmentation ------------------------------------------------------------------------------

def test_dihedral_inverse_table():
    assert dihedral.INVERSE == (0, 3, 2, 1, 4, 5, 6, 7)
    g = np.arange(12).reshape(3, 4)
    for t in range(8):
        assert np.array_equal(dihedral.apply(dihedral.apply(g, t), dihedral.INVERSE[t]), g)
    # TRM's numbering (dataset/common.py)
    refs = [g, np.rot90(g, 1), np.rot90(g, 2), np.rot90(g, 3), np.fliplr(g), np.flipud(g), g.T,
            np.fliplr(np.rot90(g, 1))]
    for t, ref in enumerate(refs):
        assert np.array_equal(dihedral.apply(g, t), ref)


def test_augmentation_then_inverse_is_exact_on_every_task(tasks):
    rng = np.random.default_rng(2)
    for tid, task in tasks.items():
        versions = A.augment_task(task, rng, 3, name=tid)
        assert 1 <= len(versions) <= 3
        hashes = {A.task_hash(task)}
        for name, version in versions:
            base, t, mapping = A.parse_aug_name(name)
            assert base == tid and name == A.aug_name(tid, t, mapping)
            assert mapping[0] == 0 and sorted(mapping.tolist()) == list(range(10))
            h = A.task_hash(version)
            assert h not in hashes  # distinct from the original and each other
            hashes.add(h)
            assert A.deaugment_task(name, version) == (tid, task)
            # a prediction of an augmented test output goes back to the true output
            for ex, ex0 in zip(version["test"], task["test"]):
                back = A.deaugment(name, A.crop(A.to_canvas(np.array(ex["output"]))))
                assert back[0] == tid and back[1].tolist() == ex0["output"]


def test_augmentation_pieces():
    rng = np.random.default_rng(3)
    g = rng.integers(0, 10, size=(4, 7))
    for _ in range(50):
        t, m = int(rng.integers(0, 8)), A.random_colour_map(rng)
        a = A.augment_grid(g, t, m)
        assert np.array_equal(a, dihedral.apply(m[g], t))   # TRM: dihedral(mapping[grid])
        assert np.array_equal(A.deaugment_grid(a, t, m), g)
        assert np.array_equal(A.inverse_colour_map(m)[m], np.arange(10))
    base, t, m = A.parse_aug_name("007bbfb7")  # a plain name: the identity
    assert (base, t, m.tolist()) == ("007bbfb7", 0, list(range(10)))
    name = "a|||b|||t6|||0913572468"  # '|||' inside the base name survives
    base, t, m = A.parse_aug_name(name)
    assert (base, t, m.tolist()) == ("a|||b", 6, [0, 9, 1, 3, 5, 7, 2, 4, 6, 8])
    for bad in ("x|||t8|||0123456789", "x|||t1|||1023456789", "x|||t1|||012345678",
                "x|||q1|||0123456789"):
        with pytest.raises(ValueError):
            A.parse_aug_name(bad)
    # a task whose only grid is one colour everywhere has few distinct versions
    tiny = {"train": [{"input": [[0]], "output": [[0]]}], "test": [{"input": [[0]]}]}
    assert A.augment_task(tiny, rng, 5, name="tiny") == []
    assert A.grid_hash(np.array([[1, 2]])) == A.grid_hash([[1, 2]])
    assert A.grid_hash(np.array([[1, 2]])) != A.grid_hash(np.array([[1], [2]]))


def test_transform_moves_the_known_output(codec, tasks):
    task = tasks["007bbfb7"]
    p, s = codec.examples("007bbfb7", task)[0]
    for t in range(8):
        pt, st = codec.transform(p, s, t)
        assert codec.verify(pt, st) == []
        assert np.array_equal(st.grid, dihedral.apply(s.grid, t))
        back_p, back_s = codec.transform(pt, st, dihedral.INVERSE[t])
        assert codec.key(back_p) == codec.key(p) and back_s == s


# -- parsing, records, verification ------------------------------------------------------------

def test_parse_forms_and_records(codec, tasks):
    from ptrm_cli import codec as registry

    tid = "007bbfb7"
    task = tasks[tid]
    parsed = codec.parse(json.dumps({tid: task}))
    assert parsed.format == "task" and parsed.puzzle.meta["task"] == tid
    assert parsed.solution.grid.tolist() == task["test"][0]["output"]
    pair = codec.parse(json.dumps(task["train"][1]))
    assert pair.format == "pair" and pair.solution.grid.tolist() == task["train"][1]["output"]
    grid = codec.parse(json.dumps(task["train"][1]["input"]))
    assert grid.format == "grid" and grid.solution is None
    assert registry.detect(json.dumps(task)).name == "arc"
    assert registry.detect(json.dumps(task["train"][0]["input"])).name == "arc"
    with pytest.raises(ParseError, match="holds 2 ARC tasks") as many:
        codec.parse(json.dumps({"a": task, "b": task}))
    assert "--task ID (e.g. --task a)" in many.value.hint  # the command, not a Python name
    with pytest.raises(ParseError, match="colours are 0..9"):
        codec.parse("[[1, 10]]")
    with pytest.raises(ParseError, match="at most 30x30"):
        codec.parse(json.dumps([[0] * 31]))
    # ptrm records, also as build-data's JSONL reader hands them over (text as "url")
    p, s = codec.examples(tid, task)[2]
    rec = codec.to_record(p, s, id="x")
    assert rec["type"] == "arc" and rec["task"] == tid and rec["split"] == "train"
    for r in (rec, {"url": rec["text"], "answer": rec["answer"]}):
        p2, s2 = codec.from_record(r)
        assert s2 == s and np.array_equal(p2.clues, p.clues)
    with pytest.raises(ParseError, match="without an output"):
        codec.from_record({"input": [[1]]})


def test_verify_compares_with_the_known_output_only(codec, tasks):
    p, s = codec.examples("007bbfb7", tasks["007bbfb7"])[0]
    wrong = Solution("arc", s.grid.copy())
    wrong.grid[0, 0] = (wrong.grid[0, 0] + 1) % 10
    assert [v.code for v in codec.verify(p, wrong)] == ["mismatch"]
    assert codec.verify(p, wrong)[0].cells == ((0, 0),)
    assert "9x9" in codec.verify(p, Solution("arc", s.grid[:3]))[0].message
    assert codec.verify(p, Solution("arc", np.zeros((0, 0), dtype=np.int16)))  # empty crop
    unknown = codec.puzzle(p.clues)  # no known output: nothing to check
    assert codec.verify(unknown, wrong) == []


def test_a_wrong_answer_is_said_against_the_expected_output(codec):
    """The verdict read "mismatch: 2 cell(s) differ from the known output" and "the answer is
    3x3, the output is 5x5" under "rule violation(s)": ARC has no rules, only the output."""
    want = np.arange(15).reshape(3, 5) % 10
    puzzle = codec.puzzle(want, output=want)
    wrong = want.copy()
    cells = [(0, 4), (2, 1)]
    for rc in cells:
        wrong[rc] = (wrong[rc] + 1) % 10
    (v,) = codec.verify(puzzle, Solution("arc", wrong))
    assert v.message == (f"differs from the expected output in {len(cells)} of {want.size} "
                         f"cells: {cells_named(cells)}")
    (v,) = codec.verify(puzzle, Solution("arc", want[:2, :4]))
    assert v.message == "wrong size: 2 rows x 4 columns, expected 3 rows x 5 columns"
    assert v.code == "mismatch"  # --json keeps its code: scripts read it
    assert codec.has_rules is False and Codec.has_rules is True


def test_contract_except_the_documented_departure(codec, tasks):
    """The conformance checks on same-size pairs: everything holds but "decode returns a grid
    of the puzzle's size" (an ARC answer has its own size)."""
    samples = [(p, s) for tid in list(tasks)[:10] for p, s in codec.examples(tid, tasks[tid])
               if s.grid.shape == (p.rows, p.cols)][:12]
    problems = check_codec(codec, samples)
    assert problems and all("decode of arbitrary tokens returned" in p for p in problems), \
        problems[:5]


def test_colours_must_be_whole_numbers_and_the_bad_cell_is_named():
    """numpy's int cast once made 1.5 -> 1, "3" -> 3 and true -> 1 without a word."""
    assert A.as_grid([[0, 9]]).tolist() == [[0, 9]]
    for cell, shown in ((1.5, "1.5"), (2.0, "2.0"), ("3", "'3'"), (True, "True"), (12, "12")):
        with pytest.raises(ParseError, match=rf"^f.json: ARC input: colours are 0..9 \(whole "
                                             rf"numbers\), found {shown} at row 2, column 1$"):
            A.as_grid([[1, 2], [cell, 4]], what="input", source="f.json")


def test_load_tasks_checks_pairs_grids_and_solutions(tmp_path):
    """A malformed challenges or solutions file is a ParseError naming the file (and line, for
    JSON) and the task, pair and grid; not a TypeError, JSONDecodeError or IndexError (which a
    colour >= 10 raised in augmentation) from deep inside build-data or solve."""
    def write(name, obj):
        (tmp_path / name).write_text(obj if isinstance(obj, str) else json.dumps(obj))
        return tmp_path / name

    good = {"train": [{"input": [[1]], "output": [[2]]}], "test": [{"input": [[1, 1]]}]}
    ch = write("arc-agi_x_challenges.json", {"aaaa0001": good})
    write("arc-agi_x_solutions.json", {"aaaa0001": [[[3, 3]]]})
    assert A.load_tasks(ch)["aaaa0001"]["test"] == [{"input": [[1, 1]], "output": [[3, 3]]}]

    write("arc-agi_x_solutions.json", '{"aaaa0001": [[[3,\n 3]]')
    with pytest.raises(ParseError, match=r"arc-agi_x_solutions.json:2: ARC solutions file is "
                                         r"not valid JSON"):
        A.load_tasks(ch)
    write("arc-agi_x_solutions.json", {"aaaa0001": [[[3, 10]]]})
    with pytest.raises(ParseError, match=r"arc-agi_x_solutions.json: ARC task aaaa0001 test "
                                         r"pair 0 output: colours are 0..9"):
        A.load_tasks(ch)
    write("arc-agi_x_solutions.json", {"aaaa0001": [[3, 3]]})
    with pytest.raises(ParseError, match=r"task aaaa0001 test pair 0 output: expected a "
                                         r"non-empty rectangular grid"):
        A.load_tasks(ch)
    write("arc-agi_x_solutions.json", {"aaaa0001": {"0": [[3]]}})
    with pytest.raises(ParseError, match=r"task 'aaaa0001': expected a list of output grids"):
        A.load_tasks(ch)

    bad = {"a": {"train": [], "test": [[1, 2]]},
           "b": {"train": [{"input": [[1]]}], "test": [{"input": [[1]]}]},
           "c": {"train": [{"input": [[1, 12]], "output": [[1]]}], "test": [{"input": [[1]]}]},
           "d": {"train": [], "test": [{"input": [[0] * 31]}]},
           "e": {"train": {}, "test": []}}
    want = {"a": r"ARC task 'a' test pair 0: expected \{'input': grid\}",
            "b": r"ARC task 'b' train pair 0: expected \{'input': grid, 'output': grid\}",
            "c": r"ARC task c train pair 0 input: colours are 0..9 \(whole numbers\), found 12 at "
                 r"row 1, column 2",
            "d": r"ARC task d test pair 0 input is 1 row x 31 columns; ARC grids are at most "
                 r"30x30",
            "e": r"ARC task 'e': expected \{'train': \[...\], 'test': \[...\]\}"}
    for tid, task in bad.items():
        path = write("bad.json", {tid: task})
        with pytest.raises(ParseError, match=rf"^{tmp_path / 'bad.json'}: {want[tid]}"):
            A.load_tasks(path)


def test_render_keeps_a_wide_output_grid_whole_in_a_narrow_terminal(codec):
    """A 30x30 output is 60 columns wide: a Rich table squeezed it into a 40-column terminal
    and folded every row in two. Rows stay whole lines; the terminal folds them for display."""
    import io

    from rich.console import Console

    wide = [[(r + c) % 10 for c in range(30)] for r in range(30)]
    parsed = codec.parse(json.dumps({"input": [[1, 2], [3, 4]], "output": wide}))
    out = io.StringIO()
    Console(file=out, width=40, color_system=None).print(
        codec.render(parsed.puzzle, parsed.solution), soft_wrap=True)
    lines = out.getvalue().splitlines()
    assert lines[0].split() == ["input", "2x2", "output", "(correct)", "30x30"]
    assert lines[1].split() == ["1", "2", "→"] + [str(v) for v in wide[0]]
    assert [ln.split()[-30:] for ln in lines[3:31]] == [[str(v) for v in row]
                                                      for row in wide[2:]]
    assert len(lines) == 31


def test_render_shows_the_expected_output_beside_a_wrong_answer(codec):
    """A pair's wrong answer was drawn as "output (wrong)" alone: the user saw the verdict but
    not what the output should have been (the --task pipeline shows it as "expected")."""
    import io

    from rich.console import Console

    parsed = codec.parse(json.dumps({"input": [[1, 2]], "output": [[3, 4], [5, 6]]}))
    wrong = Solution("arc", np.array([[7, 7]], dtype=np.int16))
    out = io.StringIO()
    Console(file=out, width=120, color_system=None).print(codec.render(parsed.puzzle, wrong))
    lines = out.getvalue().splitlines()
    assert lines[0].split() == ["input", "1x2", "output", "(wrong)", "1x2", "expected", "2x2"]
    assert lines[1].split() == ["1", "2", "→", "7", "7", "3", "4"]
    assert lines[2].split() == ["5", "6"]
    out = io.StringIO()  # a right answer needs no second copy
    Console(file=out, width=120, color_system=None).print(
        codec.render(parsed.puzzle, parsed.solution))
    assert "expected" not in out.getvalue()


def test_load_tasks_says_a_one_task_file_is_not_a_challenges_file(tmp_path):
    """`ptrm build-data 00576224.json --family arc` on a downloaded one-task file read its keys
    as task ids and said "ARC task 'test': expected {'train': [...], 'test': [...]}" of a
    file that is exactly that."""
    task = {"train": [{"input": [[1]], "output": [[2]]}], "test": [{"input": [[1]]}]}
    path = tmp_path / "00576224.json"
    path.write_text(json.dumps(task))
    with pytest.raises(ParseError, match=rf"^{path}: this file holds one ARC task \{{train, "
                                         r"test\}, not a Kaggle challenges file") as e:
        A.load_tasks(path)
    assert '{"00576224": <the task>}' in e.value.hint
    path.write_text(json.dumps(task["train"][0]))
    with pytest.raises(ParseError, match=r"this file holds one ARC pair \{input, output\}"):
        A.load_tasks(path)
    path.write_text(json.dumps({"00576224": task}))  # the same task, wrapped, reads
    assert list(A.load_tasks(path)) == ["00576224"]
