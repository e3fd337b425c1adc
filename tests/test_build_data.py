"""`ptrm build-data`: the PPBench recipe on the golden file, split hygiene, augmented-pair
consistency, determinism, atomicity and bad-input reporting. Reads shared/data in place and
skips when it is absent; writes only under tmp_path."""

from __future__ import annotations

import base64
import json
import warnings
from pathlib import Path

import numpy as np
import pytest

from ptrm_cli import build as B
from ptrm_cli import build_augment
from ptrm_cli import codec as registry
from ptrm_cli.codec import Solution
from ptrm_cli.engine import data as data_mod
from ptrm_cli.engine.data import load_dataset

from shared_data import GOLDEN, SHARED  # noqa: E402
JANKO = SHARED / "data" / "janko"
SUDOKU = SHARED / "data" / "sudoku"

#: PPBench golden at the target sizes (PPBENCH_FORMATS.md §1; the paper's table)
GOLDEN_EXPECTED = {"sudoku": 15, "lightup": 8, "nurikabe": 9, "heyawake": 7, "tapa": 10,
                   "shakashaka": 12}

needs_golden = pytest.mark.skipif(not GOLDEN.is_file(), reason=f"{GOLDEN} is absent")


def installed() -> set[str]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return set(registry.registered())


def golden_lines() -> list[str]:
    return [ln for ln in GOLDEN.read_text().splitlines() if ln.strip()]


def opts(**kw) -> B.BuildOptions:
    return B.BuildOptions(**{"workers": 1, **kw})


def tree_bytes(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes()
            for p in sorted(root.rglob("*")) if p.is_file()}


def enc_solution(obj) -> str:
    return enc_text(json.dumps(obj))


def enc_text(text: str | bytes) -> str:
    raw = text.encode() if isinstance(text, str) else text
    return base64.b64encode(bytes(b ^ b"ppbench"[i % 7] for i, b in enumerate(raw))).decode()


@pytest.fixture(scope="module")
def golden_build(tmp_path_factory):
    if not GOLDEN.is_file():
        pytest.skip(f"{GOLDEN} is absent")
    out = tmp_path_factory.mktemp("golden") / "ds"
    return B.build([GOLDEN], out, opts()), out


@pytest.fixture(scope="module")
def pool_build(tmp_path_factory):
    """The golden records used as an ordinary pool (a link not named golden*): train and val
    then hold real PPBench puzzles of every installed type, augmented x10."""
    if not GOLDEN.is_file():
        pytest.skip(f"{GOLDEN} is absent")
    d = tmp_path_factory.mktemp("pool")
    (d / "pool.jsonl").symlink_to(GOLDEN)
    out = d / "ds"
    o = opts(val_per_type=2, val_overrides={}, val_pool="kept")
    return B.build([d / "pool.jsonl"], out, o), out


# -- the recipe on the golden file ------------------------------------------------------------

def test_golden_filtered_counts(golden_build):
    result, out = golden_build
    have = installed()
    for t, n in GOLDEN_EXPECTED.items():
        if t not in have:
            assert result.dropped["no codec"][t] == 15, t  # every record of the type
            continue
        kept = result.puzzles["golden"][t]
        unencodable = result.dropped.get("does not fit", {}).get(t, 0)
        assert kept + unencodable == n, (t, kept, unencodable)
    # what the size/type filter keeps is exactly the paper's 61 once all six codecs exist
    if have >= set(GOLDEN_EXPECTED):
        kept = sum(result.puzzles["golden"].values())
        assert kept + sum(result.dropped.get("does not fit", {}).values()) == 61
    assert sum(result.dropped["other type"].values()) == 14 * 15  # PPBench's other 14 types
    assert all(n == 0 for s in ("train", "val") for n in result.puzzles[s].values())
    counts = json.loads((out / "counts.json").read_text())
    assert counts["golden"] == result.counts["golden"] == result.puzzles["golden"]


@needs_golden
def test_sizes_for_one_type_keep_the_others_default(golden_build):
    """`--sizes sudoku=9x9` (the default, restated) let every other type in at any size that
    fits the grid: golden grew from 61 to 72, with 7x7 and 8x8 puzzles padded in."""
    result, _ = golden_build
    one = B.build([GOLDEN], None, opts(sizes={"sudoku": (9, 9)}))
    assert one.puzzles == result.puzzles and one.dropped == result.dropped
    every = B.build([GOLDEN], None, opts(sizes={"*": None}))  # `*` still names the others
    assert sum(every.puzzles["golden"].values()) > sum(result.puzzles["golden"].values())


@needs_golden
def test_golden_all_61_encode(golden_build):
    result, _ = golden_build
    if not installed() >= set(GOLDEN_EXPECTED):
        pytest.skip("not all six PPBench codecs are installed yet")
    assert sum(result.puzzles["golden"].values()) == 61


def test_dataset_format(golden_build):
    result, out = golden_build
    ds = load_dataset(out)
    meta = ds.meta
    assert meta["format"] == data_mod.FORMAT and ds.seq_len == 100
    assert meta["family"] == "ppbench" and len(ds.vocab) == 294
    assert meta["seed"] == 0 and meta["builder"]["options"]["augment"] == 10
    (src,) = meta["sources"]
    assert src["name"] == GOLDEN.name and src["role"] == "golden" and len(src["sha256"]) == 64
    g = ds.split("golden")
    assert len(g) == len(g.puzzles) == sum(result.puzzles["golden"].values())
    assert (g.transform == 0).all() and (np.asarray(g.puzzle) == np.arange(len(g))).all()
    assert g.inputs.dtype == np.uint16 and g.inputs.shape == (len(g), 100)
    rec = g.puzzles[0]
    assert {"type", "key", "text", "answer", "source", "line"} <= set(rec)
    assert rec["source"] == GOLDEN.name and rec["text"].startswith("https://puzz.link/p?")
    assert [ds.types[i] for i in np.asarray(g.type)] == [r["type"] for r in g.puzzles]
    assert (out.stat().st_mode & 0o077) != 0  # not left at mkdtemp's 0700


# -- splits -------------------------------------------------------------------------------------

def _keys(out: Path) -> dict[str, set[str]]:
    ds = load_dataset(out)
    keys = {}
    for name, s in ds.splits.items():
        ks = []
        for rec in s.puzzles:  # recompute the identity from the stored text, not the stored key
            codec = registry.get(rec["type"])
            ks.append(B.canonical_key(codec, codec.parse(rec["text"]).puzzle))
            assert ks[-1] == rec["key"]
        keys[name] = set(ks)
        assert len(ks) == len(keys[name]), f"{name} repeats a puzzle"
    return keys


def test_no_overlap_and_symmetric_copies_of_golden_are_excluded(tmp_path):
    """A pool holding golden puzzles, rotated/mirrored copies of them and janko puzzles: the
    golden ones never reach train or val, and the splits share no puzzle."""
    if not GOLDEN.is_file() or not JANKO.is_dir():  # janko fills train and val
        pytest.skip(f"{GOLDEN} or {JANKO} is absent")
    have = installed()
    pool = tmp_path / "pool.jsonl"
    lines = []
    for n, ln in enumerate(golden_lines()):
        rec = json.loads(ln)
        t = rec["pid"]
        want = (9, 9) if t == "sudoku" else (10, 10)
        if t not in have or t not in GOLDEN_EXPECTED or (rec["height"], rec["width"]) != want:
            continue  # the six PPBench types (an installed plugin, such as hitori, may add more)
        codec = registry.get(t)
        p, s = codec.from_record(rec)
        try:
            codec.encode(p)
        except B.PtrmError:  # a '?' clue: dropped before identity matters
            continue
        lines.append(ln)  # the golden record itself
        pt, st = codec.transform(p, s, 1 + n % 7)
        lines.append(json.dumps(codec.to_record(pt, st)))  # a symmetric copy as a ptrm record
    pool.write_text("\n".join(lines) + "\n")
    sources = [GOLDEN, pool]
    for f in sorted(JANKO.glob("*.json")):  # a few janko puzzles, so train and val fill up
        doc = json.loads(f.read_text())
        doc["data"] = dict(list(doc["data"].items())[:8])
        (tmp_path / f.name).write_text(json.dumps(doc))
        sources.append(tmp_path / f.name)
    out = tmp_path / "ds"
    r = B.build(sources, out, opts(val_per_type=3, augment=2))
    assert sum(r.dropped["in golden"].values()) == len(lines)
    keys = _keys(out)
    assert keys["golden"] and keys["train"] and keys["val"]
    assert not keys["train"] & keys["val"]
    assert not keys["train"] & keys["golden"] and not keys["val"] & keys["golden"]


def test_a_build_records_what_its_training_split_holds(pool_build, golden_build):
    """Dataset.trained_on: each type with training puzzles and the size build-data kept (the
    paper's: 9x9 sudoku, 10x10 the rest); `ptrm train` copies it into every checkpoint and
    `ptrm solve` notes a puzzle outside it. A build without training puzzles records none."""
    result, out = pool_build
    want = {t: "9x9" if t == "sudoku" else "10x10"
            for t, n in result.puzzles["train"].items() if n}
    assert want and load_dataset(out).trained_on() == want
    assert not load_dataset(golden_build[1]).trained_on()


def test_val_per_type_and_overrides(pool_build):
    result, _ = pool_build
    for t, n in result.puzzles["val"].items():
        total = n + result.puzzles["train"][t]
        assert n == min(2, total), (t, n)
    for t, n in result.puzzles["train"].items():
        assert result.counts["train"][t] == 10 * n


def test_val_pool_all_sizes_samples_before_the_size_filter(tmp_path):
    """The paper samples 100 per type among all sizes, then filters: val may come out short."""
    if not GOLDEN.is_file():
        pytest.skip(f"{GOLDEN} is absent")
    (tmp_path / "pool.jsonl").symlink_to(GOLDEN)
    kw = dict(types=("lightup",), val_per_type=8, val_overrides={}, augment=1)
    if "lightup" not in installed():
        pytest.skip("lightup codec not installed")
    paper = B.build([tmp_path / "pool.jsonl"], None, opts(**kw))
    kept = B.build([tmp_path / "pool.jsonl"], None, opts(val_pool="kept", **kw))
    assert kept.puzzles["val"]["lightup"] == 8  # 8 of the 8 10x10 ones
    assert paper.puzzles["val"]["lightup"] < 8  # 8 drawn among 15, the off-size ones dropped
    total = paper.puzzles["val"]["lightup"] + paper.puzzles["train"]["lightup"]
    assert total == kept.puzzles["val"]["lightup"] + kept.puzzles["train"]["lightup"] == 8
    # said, not left to look like --val-per-type not working
    got = paper.puzzles["val"]["lightup"]
    short = f"validation is short of the number asked for (lightup {got} of 8)"
    assert any(n.startswith(short) and "--val-pool kept" in n for n in paper.notes), paper.notes
    assert not any("short" in n for n in kept.notes)


def test_limit_and_subsample_are_said(tmp_path):
    """The Sources table's `records` under --limit looked like the file's size."""
    if not GOLDEN.is_file():
        pytest.skip(f"{GOLDEN} is absent")
    ours = [ln for ln in golden_lines() if json.loads(ln)["pid"] in B.PPBENCH_TYPES]
    (tmp_path / "pool.jsonl").write_text("\n".join(ours[:40]) + "\n")
    limited = B.build([tmp_path / "pool.jsonl"], None, opts(limit=30, val_per_type=1))
    assert limited.sources[0]["records"] == 30
    assert any(n.startswith("--limit 30: each non-golden file was read up to its first 30 "
                            "records") for n in limited.notes), limited.notes
    sampled = B.build([tmp_path / "pool.jsonl"], None, opts(subsample=30, val_per_type=1))
    assert any(n.startswith("--subsample 30: a seeded random 30 records") for n in sampled.notes)


@pytest.mark.parametrize("option", ["limit", "subsample"])
def test_limit_or_subsample_of_zero_is_refused_up_front(tmp_path, option):
    """--limit 0 read no record and then blamed the sources ("a file with only its
    header?"): refused before reading, naming the option."""
    (tmp_path / "pool.jsonl").write_text('{"pid": "sudoku"}\n')  # refused before reading
    with pytest.raises(B.PtrmError, match=f"--{option} must be 1 or more, not 0") as e:
        B.build([tmp_path / "pool.jsonl"], None, opts(**{option: 0}))
    assert "leave it out to read them all" in e.value.hint


def test_val_from_keeps_an_earlier_validation_split(tmp_path, pool_build):
    """--val-from: the earlier build's validation puzzles, and only they, are validation
    again - whatever the seed - and none of them (nor a symmetric copy) is in train."""
    _, first = pool_build
    keys = B.read_val_keys(first, "dihedral")
    assert keys
    again = B.build([first.parent / "pool.jsonl"], tmp_path / "again",
                    opts(seed=99, val_per_type=5, val_overrides={}, val_pool="kept",
                         val_keys=keys))
    got = _keys(tmp_path / "again")
    assert got["val"] == keys
    assert not got["train"] & keys
    assert sum(again.puzzles["val"].values()) == len(keys)
    # a validation puzzle missing from the sources is an error, not a smaller split
    with pytest.raises(B.PtrmError, match="not among the sources"):
        B.build([first.parent / "pool.jsonl"], None,
                opts(val_keys=keys | {"not-a-key"}, val_pool="kept"))
    with pytest.raises(B.PtrmError, match="--val-from and --exclude share"):  # was "not
        B.build([first.parent / "pool.jsonl"], None,  # among the sources", after decoding
                opts(val_keys=keys, exclude_keys=keys))
    with pytest.raises(B.PtrmError, match="--val-from .* no readable meta.json"):
        B.read_val_keys(tmp_path, "dihedral")
    # another identity: its keys never matched, and the error blamed the sources
    with pytest.raises(B.PtrmError, match="--val-from .* built with --augmentation dihedral"):
        B.read_val_keys(first, "sudoku-trm")


def test_exclude_drops_every_puzzle_of_an_earlier_build(tmp_path, pool_build):
    """--exclude: no puzzle of the earlier build (any split, any symmetric copy) is read
    again, the drops are counted as "excluded", and the rest splits as usual."""
    _, first = pool_build
    pool = first.parent / "pool.jsonl"
    B.build([pool], tmp_path / "small", opts(limit=150, val_per_type=1, val_overrides={}))
    keys = B.read_dataset_keys(tmp_path / "small", "dihedral")
    small, full = _keys(tmp_path / "small"), _keys(first)
    assert keys == small["val"] | small["train"] and small["val"] and small["train"]
    again = B.build([pool], tmp_path / "again",
                    opts(seed=7, val_per_type=3, val_overrides={}, exclude_keys=keys))
    got = _keys(tmp_path / "again")
    assert not (got["train"] | got["val"]) & keys
    assert got["train"] | got["val"] == (full["train"] | full["val"]) - keys
    assert sum(again.dropped["excluded"].values()) == len(keys)
    with pytest.raises(B.PtrmError, match="--augmentation dihedral"):
        B.read_dataset_keys(first, "sudoku-trm")
    with pytest.raises(B.PtrmError, match="no readable meta.json"):
        B.read_dataset_keys(tmp_path, "dihedral")


# -- augmentation -------------------------------------------------------------------------------

def check_consistent(out: Path, split: str) -> int:
    """Every row: the label decodes to a solution the verifier accepts for the transformed
    puzzle, and is the transformed stored answer; every filled input cell agrees with it."""
    ds = load_dataset(out)
    s = ds.split(split)
    n_traj = 0
    prev = -1
    for i in range(len(s)):
        rec = s.puzzles[int(s.puzzle[i])]
        codec = registry.get(rec["type"])
        fam = codec.family_for(ds.vocab)
        p = codec.parse(rec["text"]).puzzle
        t = int(s.transform[i])
        answer = Solution(codec.name, np.asarray(rec["answer"], dtype=np.int16))
        pt, st = codec.transform(p, answer, t)
        x, y = np.asarray(s.inputs[i]).astype(np.int64), np.asarray(s.labels[i]).astype(np.int64)
        assert codec.verify(pt, codec.decode(pt, y, fam)) == [], (rec["key"], t)
        assert (codec.encode_label(pt, st, fam) == y).all()
        empty = codec.encode(pt, None, fam)
        filled = x != empty
        assert (x[filled] == y[filled]).all(), (rec["key"], t)
        first = int(s.puzzle[i]) != prev
        prev = int(s.puzzle[i])
        if first:  # the original: untransformed, empty grid
            assert t == 0 and not filled.any()
        else:
            required = len(codec.required_cells(p, answer))
            assert filled.sum() <= max(required - 1, 0)
            assert filled.any() or required < 2
            n_traj += int(filled.any())
    return n_traj


def test_augmented_pairs_are_consistent(pool_build):
    result, out = pool_build
    assert check_consistent(out, "train") > 0
    check_consistent(out, "val")
    ds = load_dataset(out)
    tr = ds.split("train")
    assert len(tr) == 10 * len(tr.puzzles)
    assert len(set(np.asarray(tr.transform).tolist())) == 8  # every symmetry is drawn


def test_fast_path_equals_codec_api(pool_build):
    """The numpy trajectory path gives the same tokens as codec.trajectory/transform/encode."""
    ds = load_dataset(pool_build[1])
    tr = ds.split("train")
    for rec in tr.puzzles[::3]:
        codec = registry.get(rec["type"])
        fam = codec.family_for(ds.vocab)
        p = codec.parse(rec["text"]).puzzle
        sol = Solution(codec.name, np.asarray(rec["answer"], dtype=np.int16))
        req = codec.required_cells(p, sol)
        fast = build_augment._Views(codec, fam, p, sol, req, True)
        slow = build_augment._Views(codec, fam, p, sol, req, False)
        for t in range(8):
            for k in sorted({0, 1, len(req) // 2, max(len(req) - 1, 0)}):
                fx, fy = fast.example(t, k)
                sx, sy = slow.example(t, k)
                assert (fx == sx).all() and (fy == sy).all(), (rec["type"], t, k)


# -- determinism and atomicity ------------------------------------------------------------------

@needs_golden
def test_same_seed_same_bytes_any_workers(tmp_path, pool_build):
    (tmp_path / "pool.jsonl").symlink_to(GOLDEN)
    kw = dict(val_per_type=2, val_overrides={}, val_pool="kept")
    B.build([tmp_path / "pool.jsonl"], tmp_path / "a", opts(workers=2, **kw))
    assert tree_bytes(tmp_path / "a") == tree_bytes(pool_build[1])  # built with workers=1
    B.build([tmp_path / "pool.jsonl"], tmp_path / "b", opts(seed=1, **kw))
    a, b = tree_bytes(tmp_path / "a"), tree_bytes(tmp_path / "b")
    assert a.keys() == b.keys() and a["train/inputs.npy"] != b["train/inputs.npy"]


@needs_golden
def test_interrupted_build_leaves_no_dataset(tmp_path, monkeypatch):
    calls = {"n": 0}
    real_save = np.save

    def failing_save(*a, **k):
        calls["n"] += 1
        if calls["n"] == 4:
            raise OSError("disk full (simulated)")
        return real_save(*a, **k)

    out = tmp_path / "ds"
    monkeypatch.setattr(data_mod.np, "save", failing_save)
    with pytest.raises(B.PtrmError, match="cannot write the dataset .disk full .simulated"):
        B.build([GOLDEN], out, opts())
    assert not out.exists()
    assert not any(tmp_path.iterdir())  # the temporary folder is gone too
    # an earlier complete dataset survives a failed rebuild untouched
    monkeypatch.setattr(data_mod.np, "save", real_save)
    B.build([GOLDEN], out, opts())
    before = tree_bytes(out)
    calls["n"] = 0
    monkeypatch.setattr(data_mod.np, "save", failing_save)
    with pytest.raises(B.PtrmError, match="cannot write the dataset"):
        B.build([GOLDEN], out, opts(seed=5))
    assert tree_bytes(out) == before


def test_interrupt_during_augmentation_writes_nothing(tmp_path, monkeypatch):
    if not GOLDEN.is_file():
        pytest.skip(f"{GOLDEN} is absent")
    (tmp_path / "pool.jsonl").symlink_to(GOLDEN)

    def interrupted(task):
        raise KeyboardInterrupt

    monkeypatch.setattr(build_augment, "augment_task", interrupted)
    with pytest.raises(KeyboardInterrupt):
        B.build([tmp_path / "pool.jsonl"], tmp_path / "ds", opts())
    assert not (tmp_path / "ds").exists()


def test_ctrl_c_inside_the_sat_solver_stops_the_build(tmp_path, monkeypatch):
    """pysat turns a Ctrl-C during a solve into its own error: with one worker that was one
    `decode error`, then every later puzzle `no solution` (the solver left broken), and the
    build went on to replace the dataset."""
    pysolvers = pytest.importorskip("pysolvers")
    from ptrm_cli import sudoku_solver

    if not (SUDOKU / "puzzles6_forum_hardest_1106.txt").is_file() or "sudoku" not in installed():
        pytest.skip("shared sudoku lists or the sudoku codec are absent")
    src = [ln for ln in (SUDOKU / "puzzles6_forum_hardest_1106.txt").read_text().splitlines()
           if ln.strip() and not ln.startswith("#")][:6]
    f = tmp_path / "list.txt"
    f.write_text("\n".join(src) + "\n")
    out = tmp_path / "ds"
    B.build([f], out, opts(types=("sudoku",), val_per_type=2, augment=1))
    before = tree_bytes(out)
    from pysat.solvers import Solver

    real, calls = Solver.solve, {"n": 0}

    def interrupted_third(self, *a, **k):  # what pysat does on Ctrl-C during a solve
        calls["n"] += 1
        if calls["n"] == 3:
            raise pysolvers.error("Caught keyboard interrupt")
        return real(self, *a, **k)

    monkeypatch.setattr(Solver, "solve", interrupted_third)
    with pytest.raises(KeyboardInterrupt):
        B.build([f], out, opts(types=("sudoku",), val_per_type=2, augment=1, seed=3))
    assert tree_bytes(out) == before
    monkeypatch.setattr(Solver, "solve", real)  # and the next solve works
    assert len(sudoku_solver.solve(np.array([[int(c) for c in src[0][9 * r:9 * r + 9]
                                               .replace(".", "0")] for r in range(9)]))) == 1


def _stop_in_a_worker(_):
    from ptrm_cli import sudoku_solver

    try:
        sudoku_solver._stop()
    except sudoku_solver.SolveInterrupted as e:   # what the pool hands back to the parent
        return str(e)
    return "went on"


def test_an_interrupted_solve_in_a_pool_worker_is_an_error_for_the_parent():
    """In a worker a KeyboardInterrupt killed it with a traceback and left the pool waiting;
    the worker raises an error the pool passes back instead, the main process stops."""
    import multiprocessing

    from ptrm_cli import sudoku_solver

    with pytest.raises(KeyboardInterrupt):
        sudoku_solver._stop()
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        assert pool.map(_stop_in_a_worker, [0]) == ["interrupted while solving a puzzle"]


def test_refuses_to_replace_a_folder_that_is_not_a_dataset(tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(B.PtrmError, match="not a ptrm dataset"):
        B.build([tmp_path / "notes.txt"], tmp_path, opts())


# -- bad input ----------------------------------------------------------------------------------

def test_a_solution_nested_too_deep_is_a_malformed_record_not_a_crash():
    """json.loads raises RecursionError on JSON nested deeper than Python's stack, which no
    `except ValueError` caught: a record's solution_enc could end build-data with a traceback."""
    from ptrm_codecs import formats
    from ptrm_cli.errors import ParseError

    for text in ("[" * 100_000, b"\xff\xfe"):  # too deep; and bytes that are no UTF-8
        with pytest.raises(ParseError, match="solution_enc does not decode") as e:
            formats.decode_solution({"solution_enc": enc_text(text)}, source="x.jsonl", line=3)
        assert str(e.value).startswith("x.jsonl:3")

def test_malformed_input_is_reported_and_counted(tmp_path):
    if not GOLDEN.is_file():
        pytest.skip(f"{GOLDEN} is absent")
    recs = [json.loads(ln) for ln in golden_lines()]
    sudoku = [r for r in recs if r["pid"] == "sudoku"]
    good = sudoku[0]
    unknown = dict(sudoku[1], pid="notapuzzle")
    bad_moves = dict(sudoku[2], solution_enc=enc_solution(
        {"moves_full": ["mouse,left,1,1;bogus"], "moves_required": [], "moves_hint": []}))
    bad_enc = dict(sudoku[3], solution_enc="!!not base64!!")
    wrong = dict(sudoku[4])  # a solution that breaks the rules: every cell entered as 1
    wrong["solution_enc"] = enc_solution(
        {"moves_full": [f"mouse,left,{2 * c + 1},{2 * r + 1};key,1"
                        for r in range(9) for c in range(9)],
         "moves_required": [], "moves_hint": []})
    lines = [json.dumps(good), "{not json", json.dumps(unknown), json.dumps(bad_moves), "",
             "[1, 2, 3]", json.dumps(bad_enc), json.dumps(wrong),
             json.dumps({"type": "sudoku", "url": "https://puzz.link/p?sudoku/9/9/zz",
                         "answer": "x"}),
             json.dumps({"something": "else"})]
    f = tmp_path / "mixed.jsonl"
    f.write_text("\n".join(lines) + "\n")
    r = B.build([f], None, opts(types=("sudoku",)))
    assert r.puzzles["val"]["sudoku"] + r.puzzles["train"]["sudoku"] == 1
    assert r.dropped["other type"] == {"notapuzzle": 1}
    malformed = r.messages["malformed"]
    where = sorted(int(m.split(":")[1]) for m in malformed)
    assert where == [2, 4, 6, 7, 9, 10], malformed  # line numbers of the file, blank line counted
    assert all(m.startswith("mixed.jsonl:") for m in malformed)
    assert any("not valid JSON" in m for m in malformed)
    assert any("moves do not decode" in m for m in malformed if m.startswith("mixed.jsonl:4:"))
    assert r.dropped["invalid solution"] == {"sudoku": 1}
    assert r.messages["invalid solution"][0].startswith("mixed.jsonl:8:")
    (s,) = r.sources
    assert s["records"] == 9 and sum(s["dropped"].values()) == 8
    # two folders with a file of the same name: each is named by its path, so a message says
    # which one (a file name alone stays the name where it is unique: meta.json, and so the
    # dataset's fingerprint, do not depend on where the sources lie)
    other = tmp_path / "other"
    other.mkdir()
    (other / "mixed.jsonl").write_text(json.dumps(good) + "\n")
    r2 = B.build([f, other], None, opts(types=("sudoku",)))
    assert [x["name"] for x in r2.sources] == [str(f), str(other / "mixed.jsonl")]
    assert all(m.startswith(f"{f}:") for m in r2.messages["malformed"])


def test_a_golden_file_that_gives_no_puzzle_is_said_not_silent(tmp_path):
    """A malformed golden file built a dataset with nothing kept out of train/val, and said it
    only as a "malformed" row; a folder given as --golden was "no such file"."""
    from typer.testing import CliRunner

    from ptrm_cli.app import app
    from ptrm_cli.errors import PtrmError

    if "sudoku" not in installed():
        pytest.skip("sudoku codec not installed")
    src = tmp_path / "s.jsonl"
    made = CliRunner().invoke(app, ["generate", "sudoku", "--n", "3", "--out", str(src), "-q",
                                    "--workers", "1"])
    assert made.exit_code == 0, made.output
    wrong = tmp_path / "wrong.jsonl"
    wrong.write_text('{"bad": 1}\n')
    r = B.build([src], None, opts(types=("sudoku",), golden=(str(wrong),)))
    assert any("wrong.jsonl gave no golden puzzle" in n for n in r.notes), r.notes
    r = B.build([src], None, opts(types=("sudoku",)))  # no golden file: nothing to say
    assert not any("gave no golden puzzle" in n for n in r.notes), r.notes
    with pytest.raises(PtrmError, match="is a folder: name the golden file"):
        B.build([src], None, opts(types=("sudoku",), golden=(str(tmp_path),)))


def test_a_golden_file_named_but_unreadable_is_an_error(tmp_path):
    """`--golden golden.yaml` (a file no reader takes) was a note and exit 0: its puzzles were
    free to land in train and val. Named with --golden, it is an error naming the file; a
    golden* file found in a source folder stays a dropped row and a note."""
    from typer.testing import CliRunner

    from ptrm_cli.app import app
    from ptrm_cli.errors import PtrmError

    if "sudoku" not in installed():
        pytest.skip("sudoku codec not installed")
    folder = tmp_path / "src"
    made = CliRunner().invoke(app, ["generate", "sudoku", "--n", "3", "--out",
                                    str(folder / "s.jsonl"), "-q", "--workers", "1"])
    assert made.exit_code == 0, made.output
    yaml = tmp_path / "golden.yaml"
    yaml.write_text("puzzles: []\n")
    with pytest.raises(PtrmError, match=r"--golden .*golden\.yaml: no reader recognises") as e:
        B.build([folder], None, opts(types=("sudoku",), golden=(str(yaml),)))
    assert ".jsonl" in e.value.hint
    foreign = folder / "golden_extra.json"  # a .json, but not janko's
    foreign.write_text('{"puzzles": []}\n')
    with pytest.raises(PtrmError, match="golden_extra.json: no reader") as e:
        B.build([folder], None, opts(types=("sudoku",), golden=(str(foreign),)))
    assert e.value.hint.startswith("a .json file is read as janko-style JSON")
    out = CliRunner().invoke(app, ["build-data", str(folder), "--golden", str(yaml),
                                   "--types", "sudoku", "--dry-run", "-j", "1"])
    assert out.exit_code == 2 and "error: --golden" in out.output, out.output
    r = B.build([folder], None, opts(types=("sudoku",), val_per_type=1))  # found, not named
    assert any("golden_extra.json gave no golden puzzle" in n for n in r.notes), r.notes


def test_a_built_dataset_as_a_source_points_at_its_puzzle_files(pool_build, tmp_path):
    """It was "unrecognised file counts.json / meta.json", then "nothing to write"."""
    from ptrm_cli.errors import PtrmError

    _, built = pool_build
    with pytest.raises(PtrmError, match="is a built dataset, not puzzle sources") as e:
        B.build([built], None, opts())
    assert "<split>/puzzles.jsonl" in e.value.hint
    r = B.build([built / "val" / "puzzles.jsonl"], None, opts(val_per_type=1))  # those read
    assert sum(sum(c.values()) for c in r.puzzles.values()) > 0


def test_val_tapa_defaults_to_half_rounded_up(tmp_path):
    """--val-per-type 1 held no tapa out (half of 1 rounded down)."""
    from typer.testing import CliRunner

    from ptrm_cli.app import app

    if not GOLDEN.is_file() or "tapa" not in installed():
        pytest.skip(f"{GOLDEN} or the tapa codec is absent")
    (tmp_path / "pool.jsonl").symlink_to(GOLDEN)  # not named golden*: an ordinary pool
    for per_type, tapa in ((1, 1), (3, 2), (4, 2)):
        r = CliRunner().invoke(app, ["build-data", str(tmp_path / "pool.jsonl"), "--types",
                                     "tapa", "--val-per-type", str(per_type), "--val-pool",
                                     "kept", "--dry-run", "--json"])
        assert r.exit_code == 0, r.output
        assert json.loads(r.stdout)["puzzles"]["val"]["tapa"] == tapa, per_type


def test_sudoku_lines_bad_lines_uniqueness_and_no_leak(tmp_path):
    if not (SUDOKU / "puzzles6_forum_hardest_1106.txt").is_file():
        pytest.skip("shared sudoku lists are absent")
    if "sudoku" not in installed():
        pytest.skip("sudoku codec not installed")
    src = [ln for ln in (SUDOKU / "puzzles6_forum_hardest_1106.txt").read_text().splitlines()
           if ln.strip() and not ln.startswith("#")][:12]
    first = src[0]
    relabel = str.maketrans("123456789", "912345678")
    grid = np.array([list(first)]).reshape(9, 9)
    rotated = "".join(np.rot90(grid).reshape(-1))
    transposed_relabelled = "".join(grid.T.reshape(-1)).translate(relabel)
    many = "." * 81  # every grid solves it
    clash = "11" + first[2:]  # two 1s in a row: no solution
    lines = ["# a comment", *src, rotated, transposed_relabelled, many, clash, "12345", ""]
    f = tmp_path / "list.txt"
    f.write_text("\n".join(lines) + "\n")
    out = tmp_path / "ds"
    r = B.build([f], out, opts(types=("sudoku",), val_per_type=4, augment=3))
    assert r.dropped["duplicate"] == {"sudoku": 2}  # the rotated and the relabelled copies
    assert r.dropped["not unique"] == {"sudoku": 1}
    assert r.dropped["no solution"] == {"sudoku": 1}
    assert r.messages["malformed"] == [f"list.txt:{len(lines) - 1}: expected 81 characters of "
                                       "1-9 with '.' or '0' for blanks, found '12345'"]
    assert r.puzzles["val"]["sudoku"] == 4 and r.puzzles["train"]["sudoku"] == 8
    keys = _keys(out)
    assert not keys["train"] & keys["val"]
    check_consistent(out, "train")


def test_janko_sources_and_per_source_counts(tmp_path):
    if not JANKO.is_dir():
        pytest.skip(f"{JANKO} is absent")
    r = B.build([JANKO], None, opts(limit=6, val_per_type=2, augment=1))
    have = installed()
    names = {s["name"]: s for s in r.sources}
    assert set(names) == {"akari_10x10.json", "heyawake_10x10.json", "nurikabe_10x10.json",
                          "shakashaka_10x10.json"}
    for s in r.sources:
        assert s["kind"] == "janko-json" and s["records"] == 6
        t = {"akari": "lightup"}.get(s["name"].split("_")[0], s["name"].split("_")[0])
        kept = sum(n for split in s["puzzles"].values() for n in split.values())
        assert kept + sum(s["dropped"].values()) == 6
        if t not in have:
            assert s["dropped"] == {"no codec": 6}
        else:
            assert set(k for split in s["puzzles"].values() for k in split) <= {t}


def test_unrecognised_files_are_reported_not_fatal(tmp_path):
    if not GOLDEN.is_file():
        pytest.skip(f"{GOLDEN} is absent")
    (tmp_path / "tasks.json").write_text(json.dumps({"007bbfb7": {"train": [], "test": []}}))
    (tmp_path / "notes.txt").write_text("hello\n")
    r = B.build([tmp_path, GOLDEN], None, opts())
    assert r.dropped["unrecognised file"] == {"?": 2}
    assert sum(r.puzzles["golden"].values()) > 0


def test_nothing_left_is_a_clear_error(tmp_path):
    if not GOLDEN.is_file():
        pytest.skip(f"{GOLDEN} is absent")
    with pytest.raises(B.BuildError, match="no puzzle survived") as e:
        B.build([GOLDEN], tmp_path / "ds", opts(types=("yajilin",)))
    assert e.value.result.dropped["no codec"]["yajilin"] == 15
    assert not (tmp_path / "ds").exists()


# -- identity -----------------------------------------------------------------------------------

def test_canonical_key_sudoku_forgets_symmetry_and_digit_names():
    if "sudoku" not in installed():
        pytest.skip("sudoku codec not installed")
    c = registry.get("sudoku")
    line = "98.7..6..75..4......3..8.7.5....7.3...94.........2.1..3.......1.9...5.8...52....6"
    p = c.parse(line).puzzle
    keys = {B.canonical_key(c, c.transform(p, None, t)[0]) for t in range(8)}
    relabelled = c.parse(line.translate(str.maketrans("123456789", "345678912"))).puzzle
    keys.add(B.canonical_key(c, relabelled))
    assert len(keys) == 1
    other = c.parse(line.replace("98.7", "89.7", 1)).puzzle
    assert B.canonical_key(c, other) not in keys


def test_canonical_key_grid_types_forget_symmetry(golden_build):
    ds = load_dataset(golden_build[1])
    for rec in ds.split("golden").puzzles:
        codec = registry.get(rec["type"])
        p = codec.parse(rec["text"]).puzzle
        keys = {B.canonical_key(codec, codec.transform(p, None, t)[0]) for t in range(8)}
        assert keys == {rec["key"]}


# -- the command --------------------------------------------------------------------------------

def test_cli_json_and_table(tmp_path):
    if not GOLDEN.is_file():
        pytest.skip(f"{GOLDEN} is absent")
    import typer
    from typer.testing import CliRunner

    from ptrm_cli.commands.build_data import build_data

    app = typer.Typer()
    app.command()(build_data)
    runner = CliRunner()
    res = runner.invoke(app, [str(GOLDEN.parent), "--out", str(tmp_path / "ds"), "--json",
                              "--workers", "1"])
    assert res.exit_code == 0, res.output
    got = json.loads(res.output)
    assert got["counts"] == json.loads((tmp_path / "ds" / "counts.json").read_text())
    assert "other type" in got["dropped"]
    res = runner.invoke(app, [str(GOLDEN), "--dry-run", "--workers", "1", "--sizes", "*=10x10"])
    assert res.exit_code == 0, res.output
    assert "puzzles per type" in res.output and "wrong size" in res.output
    for bad in ("sudoku=9", "sudoku=0x9", "*=10x0"):   # a 0-row grid matches nothing
        res = runner.invoke(app, [str(GOLDEN), "--dry-run", "--sizes", bad])
        assert "is not TYPE=ROWSxCOLS" in str(res.exception), bad


def test_a_rebuild_says_it_replaced_the_earlier_build(tmp_path):
    """Building twice into one folder said `wrote DIR` both times: nothing told the user the
    first dataset was gone."""
    if not GOLDEN.is_file():
        pytest.skip(f"{GOLDEN} is absent")
    from typer.testing import CliRunner

    from ptrm_cli.app import app

    args = ["build-data", str(GOLDEN), "--out", str(tmp_path / "ds"), "--workers", "1"]
    first, second = (CliRunner().invoke(app, args) for _ in range(2))
    assert first.exit_code == second.exit_code == 0, first.output + second.output
    assert "replaced" not in first.stdout
    assert "(it replaced the earlier build there)" in " ".join(second.stdout.split())


def _sigint_ignored(_task) -> bool:
    import signal

    return signal.getsignal(signal.SIGINT) == signal.SIG_IGN


def test_ctrl_c_is_the_parents_alone():
    """Ctrl-C reaches the whole process group: each pool worker printed a KeyboardInterrupt
    traceback. Workers ignore it; the parent stops the pool (and writes nothing)."""
    from ptrm_cli.build_pool import pmap

    assert all(pmap(_sigint_ignored, list(range(32)), 2, lambda n: None, chunksize=4))


def test_negative_workers_are_refused(tmp_path):
    import typer
    from typer.testing import CliRunner

    from ptrm_cli.commands.build_data import build_data

    app = typer.Typer()
    app.command()(build_data)
    res = CliRunner().invoke(app, [str(tmp_path), "--out", str(tmp_path / "ds"),
                                   "--workers", "-2"])
    assert res.exit_code != 0 and "--workers must be 0 or more, not -2" in str(res.exception)
    assert not (tmp_path / "ds").exists()


def test_unknown_types_are_refused_before_reading(tmp_path, monkeypatch):
    import typer
    from typer.testing import CliRunner

    from ptrm_cli import build as B
    from ptrm_cli.commands.build_data import build_data

    app = typer.Typer()
    app.command()(build_data)
    monkeypatch.setattr(B, "build", lambda *a, **k: pytest.fail("read the sources"))
    res = CliRunner().invoke(app, [str(tmp_path), "--out", str(tmp_path / "ds"),
                                   "--types", "sudoku,sudokku"])
    assert res.exit_code != 0
    assert "no installed codec for 'sudokku'" in str(res.exception)
    assert "sudoku" in str(res.exception.hint) and not (tmp_path / "ds").exists()


@pytest.mark.parametrize("args, message", [
    (["--sizes", "sudoku=9x9,nurikabee=10x10"], "--sizes: no installed codec for 'nurikabee'"),
    (["--test-set", "evaluation"], "--test-set names an ARC subset"),
    # every ARC file read as "unrecognised", then "no puzzle survived"
    (["--types", "arc"], "--types arc: ARC tasks build with --family arc"),
    (["--family", "arc", "--types", "sudoku", "--val-per-type", "5"],
     "--family arc builds TRM's ARC recipe, which --val-per-type, --types do not apply to"),
    (["--family", "arc", "--types", "sudoku"],  # said "--types do not apply"
     "--family arc builds TRM's ARC recipe, which --types does not apply to"),
])
def test_options_that_would_do_nothing_are_refused(tmp_path, monkeypatch, args, message):
    """A misspelt --sizes type used to keep its puzzles at the default size, and --test-set
    without --family arc was ignored: both silently."""
    import typer
    from typer.testing import CliRunner

    from ptrm_cli import build as B
    from ptrm_cli.commands.build_data import build_data

    app = typer.Typer()
    app.command()(build_data)
    monkeypatch.setattr(B, "build", lambda *a, **k: pytest.fail("read the sources"))
    res = CliRunner().invoke(app, [str(tmp_path), "--out", str(tmp_path / "ds"), *args])
    assert res.exit_code != 0 and message in str(res.exception)
    assert not (tmp_path / "ds").exists()


def test_an_arc_summary_of_one_task_says_it_in_the_singular(tmp_path):
    """A one-task ARC build said "ARC: 1 tasks"; counts of one read as one now."""
    pytest.importorskip("ptrm_codecs.arc")
    import typer
    from typer.testing import CliRunner

    from ptrm_cli.commands.build_data import _count, build_data

    task = {"train": [{"input": [[1]], "output": [[2]]}], "test": [{"input": [[1]]}]}
    (tmp_path / "arc-agi_evaluation_challenges.json").write_text(json.dumps({"aaaa0001": task}))
    (tmp_path / "arc-agi_evaluation_solutions.json").write_text(json.dumps({"aaaa0001":
                                                                                [[[2]]]}))
    app = typer.Typer()
    app.command()(build_data)
    res = CliRunner().invoke(app, [str(tmp_path), "--family", "arc", "--augment", "0",
                                   "--dry-run"])
    assert res.exit_code == 0, res.output
    assert "ARC: 1 task (evaluation; test set evaluation), 2 puzzle ids," in res.output
    assert (_count(1, "puzzle id"), _count(2400, "task")) == ("1 puzzle id", "2,400 tasks")


def test_a_build_that_writes_nothing_does_not_say_it_wrote(tmp_path):
    """A failed rebuild of an earlier dataset printed "wrote DIR" before its error (the check
    was that DIR held a meta.json: the earlier build's), and --json said "out": DIR."""
    if not GOLDEN.is_file():
        pytest.skip(f"{GOLDEN} is absent")
    import typer
    from typer.testing import CliRunner

    from ptrm_cli.commands.build_data import build_data

    app = typer.Typer()
    app.command()(build_data)
    out = tmp_path / "ds"
    args = [str(GOLDEN), "--out", str(out), "--types", "sudoku", "--workers", "1"]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0 and "wrote" in res.output, res.output
    before = tree_bytes(out)
    nothing = [*args, "--sizes", "sudoku=4x4"]  # golden sudoku are 9x9: every one dropped
    res = CliRunner().invoke(app, nothing)
    assert "no puzzle survived" in str(res.exception) and "wrote" not in res.output
    res = CliRunner().invoke(app, [*nothing, "--json"])
    assert json.loads(res.output)["out"] is None
    assert tree_bytes(out) == before


@pytest.mark.parametrize("out", [".", ".."])
def test_out_dot_is_refused_before_anything(tmp_path, monkeypatch, out):
    """`--out .` inside a dataset (a rebuild where one stands) ended in a ValueError from the
    swap after the whole build, and left a `..lock` file there."""
    if not GOLDEN.is_file():
        pytest.skip(f"{GOLDEN} is absent")
    import typer
    from typer.testing import CliRunner

    from ptrm_cli.commands.build_data import build_data

    app = typer.Typer()
    app.command()(build_data)
    here = tmp_path / "ds" / "inner"
    here.mkdir(parents=True)
    for d in (here, here.parent):  # each looks like a dataset
        (d / "meta.json").write_text("{}")
    monkeypatch.chdir(here)
    res = CliRunner().invoke(app, [str(GOLDEN), "--types", "sudoku", "--out", out,
                                   "--workers", "1"])
    assert f"--out {out}: name the dataset folder" in str(res.exception), res.output
    assert sorted(p.name for p in here.iterdir()) == ["meta.json"]


@pytest.mark.parametrize("rows", [10 ** 15, 10 ** 20])
def test_a_split_too_large_for_memory_is_a_clear_error(rows):
    """`--augment 1000000000` (a few zeros too many) ended in numpy's MemoryError traceback,
    and a larger one in "Maximum allowed dimension exceeded"."""
    with pytest.raises(B.PtrmError, match="does not fit in memory") as e:
        build_augment.SplitBuilder(rows, 100)
    assert "--augment" in e.value.hint


def test_types_and_sizes_take_the_names_records_use(tmp_path, monkeypatch):
    """`--types akari` (janko's and puzz.link's name for lightup, which the records' types
    resolve from and `ptrm generate akari` takes) was "no installed codec for 'akari'"."""
    if "lightup" not in installed():
        pytest.skip("lightup codec not installed")
    import typer
    from typer.testing import CliRunner

    from ptrm_cli.commands.build_data import build_data

    app = typer.Typer()
    app.command()(build_data)
    seen = {}
    monkeypatch.setattr(B, "build", lambda sources, out, o: seen.setdefault("opts", o))
    monkeypatch.setattr("ptrm_cli.commands.build_data._report", lambda *a: None)
    res = CliRunner().invoke(app, [str(tmp_path), "--dry-run", "--types", "Akari",
                                   "--sizes", "akari=8x8,*=any"])
    assert res.exit_code == 0, res.output
    assert seen["opts"].types == ("lightup",)
    assert seen["opts"].sizes == {"lightup": (8, 8), "*": None}


def test_a_pipe_as_a_source_is_named_as_one(tmp_path):
    """`ptrm build-data <(zcat full_dataset.jsonl.gz)` said "no such file or folder" of the
    pipe it was given."""
    import os

    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)
    with pytest.raises(B.PtrmError, match="source .*pipe.jsonl: not a regular file"):
        B.collect_sources([fifo])
    with pytest.raises(B.PtrmError, match="--golden .*pipe.jsonl: not a regular file"):
        B.collect_sources([], golden=[fifo])
    with pytest.raises(B.PtrmError, match="no such file or folder"):
        B.collect_sources([tmp_path / "missing.jsonl"])


def test_records_of_an_installed_type_left_out_by_default_types_are_named(tmp_path):
    """A plugin's records in a file built without --types were dropped as "other type
    (PPBench's other types; unknown pids)", which reads as the plugin not working. Maze (not
    one of the six default types) stands in for the plugin."""
    if not {"maze", "sudoku"} <= installed():
        pytest.skip("needs the maze and sudoku codecs")
    maze = {"type": "maze", "text": registry.get("maze").example,
            "answer": [[0] * 7 for _ in range(7)]}
    f = tmp_path / "mazes.jsonl"
    f.write_text(json.dumps(maze) + "\n")
    with pytest.raises(B.BuildError) as err:  # nothing kept: the hint says why
        B.build([f], None, opts(types=None))  # as the command passes no --types
    # maze has its own token family: adding it to the PPBench --types is refused ("types do
    # not share a token family"), as the advice once said to do; --family maze builds it
    assert err.value.hint == ("--types left out maze, whose codec's token family is maze: "
                              "--family maze builds it (a dataset holds one family)")
    assert err.value.result.notes[-1] == (
        f"1 maze record(s) were left out: the default --types is {','.join(B.PPBENCH_TYPES)}, "
        "and an installed codec reads maze (its codec's token family is maze, and a dataset "
        "holds one family: --family maze builds them on their own)")
    with pytest.raises(B.BuildError) as chosen:  # --types chose: no note, the same hint
        B.build([f], None, opts(types=("sudoku",)))
    assert not any("maze" in n for n in chosen.value.result.notes)
    assert chosen.value.hint == err.value.hint
    try:  # what the advice says reads the record (this one's all-zero answer is no path)
        res = B.build([f], None, opts(types=None, family="maze"))
    except B.BuildError as e:
        res = e.result
    assert "other type" not in res.dropped and res.family == "maze"


def test_a_left_out_type_of_the_same_family_is_advised_into_types(tmp_path):
    """A type that shares the build's family is one --types away (a sudoku list built with
    --types lightup: sudoku is a PPBench type too)."""
    if not {"lightup", "sudoku"} <= installed():
        pytest.skip("needs the lightup and sudoku codecs")
    f = tmp_path / "sudoku.txt"
    f.write_text("4" + "." * 80 + "\n")  # dropped as "other type" before any solving
    with pytest.raises(B.BuildError) as err:
        B.build([f], None, opts(types=("lightup",)))
    assert err.value.hint == "--types left out sudoku, which an installed codec reads: add it " \
                             "to --types"


def _sudoku4_lines(n: int) -> list[str]:
    """`n` uniquely solvable 4x4 sudoku lines: one full grid with a few cells blanked (one
    blank per row, column and box at most leaves one way to fill each)."""
    grid = "1234341221434321"
    blanks = [(0, 5), (0, 15), (5, 10), (10, 15), (0, 10), (5, 15), (1, 14), (2, 13)]
    return ["".join("." if i in b else ch for i, ch in enumerate(grid)) for b in blanks[:n]]


def test_a_datasets_golden_puzzles_file_is_golden_when_read_back(tmp_path):
    """DATASET_FORMAT.md: a dataset's puzzles.jsonl files are sources, to rebuild with another
    seed; a rebuild from all three read golden/puzzles.jsonl as pool, so every golden puzzle
    went into train or val."""
    if "sudoku" not in installed():
        pytest.skip("sudoku codec not installed")
    lines = _sudoku4_lines(8)
    (tmp_path / "golden_s.txt").write_text("\n".join(lines[:2]) + "\n")
    (tmp_path / "pool.txt").write_text("\n".join(lines[2:]) + "\n")
    o = opts(types=("sudoku",), sizes={"sudoku": (4, 4)}, val_per_type=1, augment=2)
    first = B.build([tmp_path / "golden_s.txt", tmp_path / "pool.txt"], tmp_path / "ds", o)
    assert sum(first.puzzles["golden"].values()) > 0
    back = [tmp_path / "ds" / s / "puzzles.jsonl" for s in B.SPLITS]
    again = B.build(back, tmp_path / "ds2", o)
    assert again.puzzles["golden"] == first.puzzles["golden"]
    keys = _keys(tmp_path / "ds2")
    assert not keys["golden"] & (keys["train"] | keys["val"])
    folder = B.collect_sources([tmp_path / "ds" / "golden"])  # the split's folder too
    assert [f.role for f in folder] == ["golden"]
    # a file merely named so, beside a meta.json that no build wrote (no counts.json): pool
    lookalike = tmp_path / "x" / "golden" / "puzzles.jsonl"
    lookalike.parent.mkdir(parents=True)
    lookalike.write_text((tmp_path / "ds" / "golden" / "puzzles.jsonl").read_text())
    (tmp_path / "x" / "meta.json").write_text("{}")
    assert [f.role for f in B.collect_sources([lookalike])] == ["pool"]


def test_every_record_off_size_names_sizes_in_the_hint(tmp_path):
    """4x4 sudoku lines built at the default 9x9 were all dropped as "wrong size", and the
    hint said "see the dropped table" rather than naming the option that keeps them."""
    if "sudoku" not in installed():
        pytest.skip("sudoku codec not installed")
    f = tmp_path / "pool.txt"
    f.write_text("\n".join(_sudoku4_lines(2)) + "\n")
    with pytest.raises(B.BuildError) as err:
        B.build([f], None, opts(types=("sudoku",)))
    assert "--sizes sudoku=any" in err.value.hint and "ROWSxCOLS" in err.value.hint
    assert "dropped table" not in err.value.hint


def test_sources_no_reader_knows_are_named_in_the_hint(tmp_path):
    """An ARC folder given without --family arc, or a JSON file of no known kind, ended in
    "the sources hold no records (a file with only its header?)"."""
    arc = tmp_path / "arc-agi_training_challenges.json"
    arc.write_text(json.dumps({"007bbfb7": {"train": [], "test": []}}))
    with pytest.raises(B.BuildError) as e:
        B.build([arc], None, opts())
    assert "--family arc" in e.value.hint
    other = tmp_path / "notes.json"
    other.write_text('{"a": 1}')
    with pytest.raises(B.BuildError) as e:
        B.build([other], None, opts())
    assert e.value.hint.startswith("no reader recognises notes.json")
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    with pytest.raises(B.BuildError) as e:
        B.build([empty, other], None, opts())
    assert "no records" in e.value.hint


@pytest.mark.parametrize("args", [
    ["missing.jsonl"], ["SRC", "--golden", "missing.jsonl"], ["SRC", "--limit", "1",
    "--subsample", "1"], ["SRC", "--val-per-type", "-1"], ["SRC", "--workers", "-1"],
    ["SRC", "--augment", "0"], ["SRC", "--val-pool", "some"], ["SRC", "--augmentation", "x"],
    ["SRC", "--train-puzzles", "-1"], ["SRC", "--test-set", "evaluation"], ["EMPTY"],
    ["SRC", "--out", "SRC/a.jsonl"], ["SRC", "--val-from", "EMPTY"],
])
def test_every_mistake_says_what_to_do(tmp_path, args):
    """Each of these was an `error:` line alone, with no `hint:` (README: every user mistake
    gives both)."""
    import typer
    from typer.testing import CliRunner

    from ptrm_cli.commands.build_data import build_data

    (tmp_path / "src").mkdir()
    (tmp_path / "empty").mkdir()
    (tmp_path / "src" / "a.jsonl").write_text("")
    names = {"SRC": str(tmp_path / "src"), "EMPTY": str(tmp_path / "empty")}
    args = [names.get(a, a.replace("SRC", names["SRC"])) for a in args]
    if "--out" not in args:
        args += ["--out", str(tmp_path / "ds")]
    app = typer.Typer()
    app.command()(build_data)
    res = CliRunner().invoke(app, args)
    assert isinstance(res.exception, B.PtrmError), res.output
    assert res.exception.hint, str(res.exception)
    assert not (tmp_path / "ds").exists()


def test_a_missing_source_under_a_file_is_not_told_the_file_is_missing(tmp_path):
    """`a.jsonl/x` was told "the folder a.jsonl does not exist either": it does, as a file."""
    f = tmp_path / "a.jsonl"
    f.write_text("")
    with pytest.raises(B.PtrmError) as e:
        B.collect_sources([f / "x.jsonl"])
    assert e.value.hint == f"{f} is a file, not a folder: check the path"


def test_a_missing_source_in_a_folder_it_may_not_list_is_still_one_message(
        tmp_path, monkeypatch):
    """The near names a missing source's hint offers are read from its folder: one it may not
    list raised PermissionError from inside the hint."""
    def refused(self):
        raise PermissionError(13, "Permission denied", str(self))

    monkeypatch.setattr(Path, "iterdir", refused)
    with pytest.raises(B.PtrmError, match="no such file") as e:
        B.collect_sources([tmp_path / "b.jsonl"])
    assert "holds no 'b.jsonl'" in e.value.hint


def test_a_bare_any_in_sizes_says_how_to_write_it():
    """`--sizes any` (docs/PLUGINS.md once read "`any` keeps every size") was refused as "not
    TYPE=ROWSxCOLS", a form with no place for `any` (QA 2026-11-28)."""
    from ptrm_cli.commands.build_data import parse_sizes
    from ptrm_cli.errors import PtrmError

    with pytest.raises(PtrmError, match=r"'any' is not TYPE=ROWSxCOLS .* or TYPE=any") as e:
        parse_sizes("any")
    assert "*=any" in e.value.hint
    assert parse_sizes("*=any") == {"*": None}
