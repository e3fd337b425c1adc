"""TRM's native sudoku family (81 tokens, vocab 11: pad 0, blank 1, digit d -> d + 1), the
TRM sudoku augmentation and its canonical form, a sudoku-trm build with no train/val overlap
under the whole group, and a tiny TRM-MLP checkpoint (ours, and one in the official format)
evaluated end to end by `ptrm eval`."""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

import numpy as np
import pytest
import torch
from typer.testing import CliRunner

from ptrm_cli import build as B
from ptrm_cli import dihedral, sudoku_aug, sudoku_solver
from ptrm_cli.codec import Puzzle, Solution
from ptrm_cli.engine.data import load_dataset
from ptrm_cli.errors import PtrmError, VocabError
from ptrm_cli.vocab import Vocab

from fixtures_models import installed_codecs
from test_codec_contract import _plugin, _sudoku_subclass, fresh_registry  # noqa: F401

# two forum-hardest puzzles (also in tests/test_sources.py)
HARD = ["98.7..6..75..4......3..8.7.5....7.3...94.........2.1..3.......1.9...5.8...52....6",
        "........8..3...4...9..2..6.....79.......612...6.5.2.7...8...5...1.....2.4.5.....3"]


def grid(line: str) -> np.ndarray:
    return np.array([0 if ch in ".0" else int(ch) for ch in line]).reshape(9, 9)


def line_of(g) -> str:
    return "".join("." if v == 0 else str(int(v)) for v in np.asarray(g).reshape(-1))


@lru_cache(maxsize=None)
def solved(line: str) -> np.ndarray:
    (s,) = sudoku_solver.solve(grid(line))
    return s


@lru_cache(maxsize=None)
def made_puzzles(n: int, seed: int = 0) -> tuple[str, ...]:
    """n uniquely solvable puzzles, each from a shuffled base grid with cells removed in a random
    order while the solution stays unique (different clue patterns: different puzzles)."""
    rng = np.random.default_rng(seed)
    base = np.array([[(3 * (r % 3) + r // 3 + c) % 9 + 1 for c in range(9)] for r in range(9)])
    out = []
    for _ in range(n):
        sol = sudoku_aug.apply(base, sudoku_aug.draw(rng, 1))[0]
        g = sol.copy()
        for cell in rng.permutation(81):
            keep = g.flat[cell]
            g.flat[cell] = 0
            if len(sudoku_solver.solve(g, limit=2)) != 1:
                g.flat[cell] = keep
        out.append(line_of(g))
    return tuple(out)


@pytest.fixture(scope="module")
def sudoku():
    codecs = installed_codecs()
    if "sudoku" not in codecs:
        pytest.skip("codec 'sudoku' is not installed")
    return codecs["sudoku"]


@pytest.fixture(scope="module")
def native():
    from ptrm_codecs.families import SUDOKU_NATIVE

    return SUDOKU_NATIVE


# -- the family and the codec ---------------------------------------------------------------------

def test_native_vocabulary_is_trms(native):
    assert native.name == "sudoku-native"
    assert (native.rows, native.cols, native.seq_len) == (9, 9, 81)
    digits = tuple(f"sudoku.{d}" for d in range(1, 10))
    assert native.vocab.tokens == ("pad", "sudoku.blank") + digits
    assert [native.vocab.id(f"sudoku.{d}") for d in range(1, 10)] == list(range(2, 11))


def test_official_layout_round_trip(sudoku, native):
    for line in HARD:
        p = sudoku.parse(line).puzzle
        s = Solution("sudoku", solved(line))
        x = sudoku.encode(p, family=native)
        y = sudoku.encode_label(p, s, family=native)
        # TRM's builder: cell value v (0 blank) -> token v + 1; label = the whole solution
        assert x.tolist() == [1 if ch == "." else int(ch) + 1 for ch in line]
        assert y.tolist() == (s.grid.reshape(-1) + 1).tolist()
        assert x.dtype == y.dtype == np.int64
        assert sudoku.decode(p, y, native) == s
        assert sudoku.verify(p, sudoku.decode(p, y, native)) == []
        # decoding reads digits at free cells; a given cell keeps its given (as in ppbench)
        wrong = y.copy()
        given = int(np.flatnonzero(x > 1)[0])
        wrong[given] = 2 + (y[given] - 1) % 9  # another digit on a given cell
        assert wrong[given] != y[given] and sudoku.decode(p, wrong, native) == s
        blankish = y.copy()
        free = int(np.flatnonzero(x == 1)[0])
        blankish[free] = 1
        assert sudoku.decode(p, blankish, native).grid.reshape(-1)[free] == 0
        # a trajectory state puts entered digits in with the same digit tokens
        state = sudoku.trajectory(p, s, 5)
        xs = sudoku.encode(p, state, native)
        filled = state.grid.reshape(-1) > 0
        assert (xs[filled] == y[filled]).all() and (xs[~filled] == x[~filled]).all()


def test_ppbench_family_unchanged(sudoku):
    from ptrm_codecs.families import PPBENCH

    p = sudoku.parse(HARD[0]).puzzle
    s = Solution("sudoku", solved(HARD[0]))
    assert sudoku.family() is PPBENCH  # still the default
    x, y = sudoku.encode(p), sudoku.encode_label(p, s)
    names_x = [PPBENCH.vocab.name(int(t)) for t in x.reshape(10, 10)[:9, :9].reshape(-1)]
    names_y = [PPBENCH.vocab.name(int(t)) for t in y.reshape(10, 10)[:9, :9].reshape(-1)]
    for ch, nx, ny, d in zip(HARD[0], names_x, names_y, s.grid.reshape(-1)):
        assert nx == ("sudoku.blank" if ch == "." else f"sudoku.given.{ch}")
        assert ny == (f"sudoku.digit.{d}" if ch == "." else f"sudoku.given.{ch}")
    assert x.reshape(10, 10)[9].sum() == 0 and sudoku.decode(p, y) == s
    # the per-cell API agrees with the vectorised encoder in both families
    for fam in sudoku.families:
        ids = [fam.vocab.id(sudoku.input_token(p, r, c, 0, fam))
               for r in range(9) for c in range(9)]
        x = sudoku.encode(p, family=fam).reshape(fam.rows, fam.cols)
        assert ids == x[:9, :9].reshape(-1).tolist()


def test_family_for_picks_by_vocabulary(sudoku, native):
    from ptrm_codecs.families import PPBENCH

    assert sudoku.families == (PPBENCH, native)
    assert sudoku.family_for(Vocab.from_json(native.vocab.to_json())) is native
    assert sudoku.family_for(PPBENCH.vocab) is PPBENCH
    assert sudoku.family("sudoku-native") is native
    tokens = native.vocab.tokens
    renamed = Vocab("sudoku-native", tokens[:2] + ("sudoku.one",) + tokens[3:])
    with pytest.raises(VocabError, match="token id 2"):
        sudoku.family_for(renamed)
    generic = Vocab("trm-v11", ("pad",) + tuple(f"tok{i}" for i in range(1, 11)))
    with pytest.raises(PtrmError, match="cannot encode for a model of the 'trm-v11' family"):
        sudoku.family_for(generic)


def test_native_family_is_9x9_only_and_decode_never_raises(sudoku, native):
    small = sudoku.parse("1..." "..2." ".3.." "...4").puzzle
    with pytest.raises(PtrmError, match="9x9 only"):
        sudoku.encode(small, family=native)
    p = sudoku.parse(HARD[1]).puzzle
    rng = np.random.default_rng(0)
    for tokens in (rng.integers(-5, 40, 81), np.zeros(81, int), np.full(81, 10)):
        sol = sudoku.decode(p, tokens, native)
        assert sol.grid.shape == (9, 9) and sol.grid.min() >= 0 and sol.grid.max() <= 9


def test_conformance_in_both_families(sudoku):
    from ptrm_cli.conformance import check_codec

    samples = [(sudoku.parse(line).puzzle, Solution("sudoku", solved(line))) for line in HARD]
    assert check_codec(sudoku, samples, max_mutations=20) == []


# -- augmentation and canonical form --------------------------------------------------------------

def test_augmentation_keeps_every_pair_a_valid_sudoku_and_solution():
    rng = np.random.default_rng(0)
    for line in HARD:
        q, a = grid(line), solved(line)
        tf = sudoku_aug.draw(rng, 64)
        qs, as_ = sudoku_aug.apply(q, tf), sudoku_aug.apply(a, tf)
        assert set(tf.transpose.tolist()) == {False, True}
        for qi, ai in zip(qs, as_):
            assert sudoku_aug.is_valid_solution(ai)
            assert ((qi == 0) | (qi == ai)).all() and (qi > 0).sum() == (q > 0).sum()
        for qi, ai in list(zip(qs, as_))[:4]:  # still uniquely solvable, by that solution
            sols = sudoku_solver.solve(qi, limit=2)
            assert len(sols) == 1 and (sols[0] == ai).all()
        b, s = sudoku_aug.shuffle_sudoku(q, a, rng)  # the reference's one-pair form
        assert sudoku_aug.is_valid_solution(s) and ((b == 0) | (b == s)).all()
    ident = sudoku_aug.apply(grid(HARD[0]), sudoku_aug.identity(2))
    assert (ident == grid(HARD[0])).all()


def test_group_matches_the_reference_description():
    """New cell (i, j) takes old cell (rows[i], cols[j]) of the maybe transposed grid, then the
    digit map; rows/cols keep bands/stacks together."""
    rng = np.random.default_rng(1)
    q = grid(HARD[0])
    tf = sudoku_aug.draw(rng, 20)
    out = sudoku_aug.apply(q, tf)
    for k in range(20):
        x = q.T if tf.transpose[k] else q
        assert (out[k] == tf.digits[k][x[tf.rows[k]][:, tf.cols[k]]]).all()
        for perm in (tf.rows[k], tf.cols[k]):
            bands = perm.reshape(3, 3) // 3
            assert (bands == bands[:, :1]).all() and sorted(bands[:, 0]) == [0, 1, 2]
        assert sorted(tf.digits[k][1:]) == list(range(1, 10)) and tf.digits[k][0] == 0


def test_canonical_form_is_invariant_and_separates():
    rng = np.random.default_rng(2)
    puzzles = list(HARD) + list(made_puzzles(4))
    keys = [sudoku_aug.canonical(grid(line)) for line in puzzles]
    assert len(set(keys)) == len(keys)
    for line, key in zip(puzzles, keys):
        g = grid(line)
        assert len(key) == 81 and key.count(".") == (g == 0).sum()
        for img in sudoku_aug.apply(g, sudoku_aug.draw(rng, 12)):
            assert sudoku_aug.canonical(img) == key
        for t in range(dihedral.COUNT):  # the dihedral symmetries are group members
            assert sudoku_aug.canonical(dihedral.apply(g, t)) == key
        assert sudoku_aug.canonical(grid(key)) == key  # the form is itself in the orbit
    # swapping two cells' digits in one row (not a whole column swap) is another puzzle
    other = HARD[0].replace("98.7", "89.7", 1)
    assert sudoku_aug.canonical(grid(other)) != keys[0]
    with pytest.raises(ValueError, match="too few givens"):
        sudoku_aug.canonical(np.zeros((9, 9), int))


def test_dihedral_key_misses_band_shuffles_the_group_key_does_not(sudoku):
    p = sudoku.parse(HARD[0]).puzzle
    tf = sudoku_aug.Transforms(np.arange(10)[None], np.array([False]),
                               np.array([[3, 4, 5, 0, 1, 2, 6, 7, 8]]), np.arange(9)[None])
    swapped = Puzzle("sudoku", 9, 9, sudoku_aug.apply(p.clues, tf)[0].astype(np.int16))
    assert B.canonical_key(sudoku, p) != B.canonical_key(sudoku, swapped)
    assert (B.canonical_key(sudoku, p, "sudoku-trm")
            == B.canonical_key(sudoku, swapped, "sudoku-trm"))


# -- a sudoku-trm build ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def trm_build(sudoku, tmp_path_factory):
    """14 made puzzles + shuffled copies of two of them (relabelled, transposed, bands and
    columns moved: invisible to the dihedral key) -> 3 val, 4 train x 6 rows."""
    root = tmp_path_factory.mktemp("trm")
    lines = list(made_puzzles(14))
    rng = np.random.default_rng(5)
    copies = [line_of(sudoku_aug.apply(grid(lines[i]), sudoku_aug.draw(rng, 1))[0]) for i in (0, 7)]
    (root / "list.txt").write_text("\n".join(["# made here", *lines, *copies]) + "\n")
    opts = B.BuildOptions(types=None, family="sudoku-native", augmentation="sudoku-trm",
                          augment=6, val_per_type=3, train_puzzles=4, workers=1)
    result = B.build([root / "list.txt"], root / "ds", opts)
    return result, root / "ds"


def test_trm_build_counts_and_meta(trm_build):
    r, out = trm_build
    assert r.family == "sudoku-native" and r.types == ["sudoku"]
    assert r.dropped["duplicate"] == {"sudoku": 2}       # both shuffled copies
    assert r.dropped["train cap"] == {"sudoku": 14 - 3 - 4}
    assert r.puzzles == {"train": {"sudoku": 4}, "val": {"sudoku": 3}, "golden": {"sudoku": 0}}
    ds = load_dataset(out)
    assert ds.meta["family"] == "sudoku-native" and ds.seq_len == 81 and len(ds.vocab) == 11
    assert ds.meta["splits"] == {"train": 24, "val": 3, "golden": 0}
    assert ds.meta["builder"]["options"]["augmentation"] == "sudoku-trm"
    assert ds.meta["augmentation"]["kind"] == "sudoku-trm"
    assert "whole sudoku group" in ds.meta["identity"]


def test_a_validation_only_build_says_train_will_refuse_it(sudoku, tmp_path):
    """--train-puzzles 0 (how tdoku-tune is built) asks for no training puzzles: the note that
    "validation took every puzzle" (meant for a --val-per-type too large) was false there.
    The empty train split was written without a word, and `ptrm train` refused it later:
    now the build says so."""
    (tmp_path / "list.txt").write_text("\n".join(made_puzzles(6)) + "\n")
    kw = dict(types=None, family="sudoku-native", augment=1, val_per_type=3, workers=1)
    only_val = B.build([tmp_path / "list.txt"], tmp_path / "v",
                       B.BuildOptions(train_puzzles=0, **kw))
    assert only_val.puzzles["val"] == {"sudoku": 3}
    assert only_val.notes == [
        "--train-puzzles 0: the train split is empty, so `ptrm train` refuses this dataset as "
        "its training data; `ptrm eval` reads its other splits, and a run can select on its "
        "val split (data.val_path)"]
    too_many = B.build([tmp_path / "list.txt"], tmp_path / "w",
                       B.BuildOptions(**{**kw, "val_per_type": 6}))
    assert any("validation took every sudoku puzzle" in n for n in too_many.notes)
    assert any(n.startswith("the train split is empty, so `ptrm train` refuses")
               for n in too_many.notes)
    some = B.build([tmp_path / "list.txt"], None, B.BuildOptions(train_puzzles=1, **kw))
    assert not any("train split is empty" in n for n in some.notes)


def test_trm_build_rows_are_valid_images_of_their_puzzle(trm_build):
    ds = load_dataset(trm_build[1])
    for name in ("train", "val"):
        s = ds.split(name)
        X, Y = np.asarray(s.inputs, dtype=np.int64), np.asarray(s.labels, dtype=np.int64)
        assert X.min() >= 1 and Y.min() >= 2 and X.max() <= 10  # no pad anywhere
        for i in range(len(s)):
            q, a = (X[i] - 1).reshape(9, 9), (Y[i] - 1).reshape(9, 9)
            rec = s.puzzles[int(s.puzzle[i])]
            base = np.asarray(rec["answer"])
            assert sudoku_aug.is_valid_solution(a) and ((q == 0) | (q == a)).all()
            assert rec["key"] == "sudoku/9/group/" + sudoku_aug.canonical(q)
            first = i == 0 or s.puzzle[i] != s.puzzle[i - 1]
            assert int(s.transform[i]) == (0 if first else sudoku_aug.TRANSFORM_ID)
            if first:  # row 0 of each puzzle is the original
                assert (a == base).all()
    tr = ds.split("train")
    assert len({bytes(np.asarray(tr.inputs[i])) for i in range(len(tr))}) == len(tr)


def test_no_train_val_overlap_under_the_group(trm_build):
    """Recompute every row's canonical form from its tokens: no val puzzle, nor any shuffled
    copy of it, is in train."""
    ds = load_dataset(trm_build[1])

    def forms(name):
        s = ds.split(name)
        return {sudoku_aug.canonical(np.asarray(s.inputs[i], dtype=np.int64) - 1)
                for i in range(len(s))}

    train, val = forms("train"), forms("val")
    assert len(train) == 4 and len(val) == 3 and not train & val


def test_trm_build_is_deterministic_and_rejects_other_types(trm_build, tmp_path):
    lines = list(made_puzzles(14))[:6]
    (tmp_path / "l.txt").write_text("\n".join(lines) + "\n")
    opts = dict(types=None, family="sudoku-native", augmentation="sudoku-trm", augment=4,
                val_per_type=2, workers=1)
    B.build([tmp_path / "l.txt"], tmp_path / "a", B.BuildOptions(**opts))
    B.build([tmp_path / "l.txt"], tmp_path / "b", B.BuildOptions(**{**opts, "workers": 2}))
    for f in ("train/inputs.npy", "train/labels.npy", "val/inputs.npy", "meta.json"):
        assert (tmp_path / "a" / f).read_bytes() == (tmp_path / "b" / f).read_bytes(), f
    with pytest.raises(PtrmError, match="9x9 sudoku shuffle"):
        B.build([tmp_path / "l.txt"], None, B.BuildOptions(augmentation="sudoku-trm"))
    with pytest.raises(PtrmError, match="--augmentation must be"):
        B.build([tmp_path / "l.txt"], None, B.BuildOptions(augmentation="d8"))


def test_dihedral_augmentation_in_the_native_family(tmp_path):
    lines = list(made_puzzles(14))[:5]
    (tmp_path / "l.txt").write_text("\n".join(lines) + "\n")
    r = B.build([tmp_path / "l.txt"], tmp_path / "ds",
                B.BuildOptions(types=("sudoku",), family="sudoku-native", augment=4,
                               val_per_type=1, workers=1))
    ds = load_dataset(tmp_path / "ds")
    tr = ds.split("train")
    assert r.puzzles["train"]["sudoku"] == 4 and len(tr) == 16 and ds.seq_len == 81
    assert int(np.asarray(tr.inputs).min()) >= 1  # trajectory states: digits, no pad


def test_cli_build_data_sudoku_native(tmp_path):
    from ptrm_cli.app import app

    (tmp_path / "l.txt").write_text("\n".join(made_puzzles(14)[:6]) + "\n")
    r = CliRunner().invoke(app, ["build-data", str(tmp_path / "l.txt"), "--family",
                                 "sudoku-native", "--augmentation", "sudoku-trm", "--augment",
                                 "3", "--train-puzzles", "2", "--val-per-type", "2", "--workers",
                                 "1", "--out", str(tmp_path / "ds"), "--json"])
    assert r.exit_code == 0, r.output
    got = json.loads(r.stdout)
    assert got["family"] == "sudoku-native" and got["counts"]["train"] == {"sudoku": 6}
    assert got["puzzles"]["val"] == {"sudoku": 2} and got["dropped"]["train cap"] == {"sudoku": 2}


# -- a tiny TRM-MLP end to end through `ptrm eval` -----------------------------------------------

def tiny_mlp(seed: int = 0):
    from ptrm_cli.engine.model import TRM, TRMConfig

    torch.manual_seed(seed)
    cfg = TRMConfig(vocab_size=11, seq_len=81, hidden_size=32, num_heads=1, expansion=2.0,
                    L_layers=1, H_cycles=2, L_cycles=2, mlp_t=True, pos_encodings="none",
                    puzzle_emb_ndim=0, puzzle_emb_len=0, halt_max_steps=3)
    model = TRM(cfg)
    with torch.no_grad():  # the reference zero-inits the Q head: every Q would tie
        model.q_head.weight.normal_(0, 1.0)
    return model.eval()


def run_eval(ckpt, data, out, *extra):
    return eval_cli("--split", "val", "--data", str(data), "-c", str(ckpt), "--K", "3", "--D",
                    "2", "--sigma", "0.2", "--out", str(out), *extra)


def test_tiny_trm_mlp_checkpoint_through_ptrm_eval(trm_build, native, tmp_path):
    from ptrm_cli import eval_sets, solver
    from ptrm_cli.engine.checkpoint import save_checkpoint

    ckpt = save_checkpoint(tmp_path / "mlp", tiny_mlp(), native.vocab, {"note": "test"})
    rep = run_eval(ckpt, trm_build[1], tmp_path / "eval")
    assert rep["split"]["n"] == 3 and rep["split"]["types"] == {"sudoku": 3}
    agg = rep["ptrm"][0]["summary"]["aggregate"]
    assert 0 <= agg["label"]["best_q"]["mean"] <= agg["label"]["pass"]["mean"] <= 1
    # what eval feeds the model is TRM's layout: ids 1..10, labels = solution + 1
    loaded = solver.load_model(ckpt, "cpu")
    ev = eval_sets.resolve_split("val", str(trm_build[1]), loaded)
    assert ev.inputs.shape == (3, 81) and int(ev.inputs.min()) >= 1
    ds = load_dataset(trm_build[1])
    for i, rec in enumerate(ds.split("val").puzzles):
        assert ev.labels[i].tolist() == (np.asarray(rec["answer"]).reshape(-1) + 1).tolist()
        assert ev.verifiers[i](ev.labels[i].numpy()).valid


def test_eval_sample_is_a_seeded_subset_the_report_records(trm_build, native, tmp_path):
    from ptrm_cli import eval_sets, solver
    from ptrm_cli.engine.checkpoint import save_checkpoint

    ckpt = save_checkpoint(tmp_path / "mlp", tiny_mlp(), native.vocab, {"note": "test"})
    full = eval_sets.resolve_split("val", str(trm_build[1]), solver.load_model(ckpt, "cpu"))
    a = run_eval(ckpt, trm_build[1], tmp_path / "a", "--sample", "2")
    b = run_eval(ckpt, trm_build[1], tmp_path / "b", "--sample", "2", "--seed", "5")
    assert a["split"]["n"] == 2 and a["split"]["sample"] == {"n": 2, "of": 3, "seed": 0}
    assert a["split"]["keys"] == b["split"]["keys"]  # rollout seeds do not move the sample
    assert set(a["split"]["keys"]) < set(full.keys)
    kept = [full.keys.index(k) for k in a["split"]["keys"]]
    assert kept == sorted(kept)  # split order is kept
    sub = full.sample(2)
    assert torch.equal(sub.inputs, full.inputs[torch.as_tensor(kept)])
    assert [v.puzzle for v in sub.verifiers] == [full.verifiers[i].puzzle for i in kept]
    assert full.sample(3) is full and full.sampled is None
    # a sample as big as the split is all of it, and says so
    said = []
    c = eval_cli("--split", "val", "--data", str(trm_build[1]), "-c", str(ckpt), "--K", "3",
                 "--D", "2", "--sigma", "0.2", "--out", str(tmp_path / "c"), "--sample", "5",
                 result=said)
    assert c["split"]["n"] == 3 and c["split"]["sample"] is None
    assert "--sample 5 is not fewer than the 3 puzzles there" in said[0].stderr


def extreme_csv(path, n: int, bad: bool = False) -> list[str]:
    """A Sudoku-Extreme style CSV of n made puzzles; returns their answers. With `bad`, a
    malformed row on line 3 and an answer that breaks the rules on the last line."""
    from ptrm_cli import sudoku_solver

    qs = [q.replace("0", ".") for q in made_puzzles(n)]
    sols = ["".join(map(str, sudoku_solver.solve([0 if c == "." else int(c) for c in q])[0]
                        .reshape(-1))) for q in qs]
    rows = [f"made,{q},{a},{i}" for i, (q, a) in enumerate(zip(qs, sols))]
    if bad:
        wrong = sols[0][:-1] + ("1" if sols[0][-1] != "1" else "2")
        rows.insert(1, "made,not-a-question,123,0")
        rows.append(f"made,{qs[0]},{wrong},0")
    path.write_text("source,question,answer,rating\n" + "\n".join(rows) + "\n")
    return sols


def eval_cli(*args, result: list | None = None):
    """`ptrm eval ARGS --json`'s report; the click Result is appended to `result` if given."""
    from ptrm_cli.app import app

    n = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        r = CliRunner().invoke(app, ["eval", *args, "--seeds", "1", "--no-plots", "--json"])
    finally:
        torch.set_num_threads(n)
    assert "Traceback" not in r.output, r.output
    assert r.exit_code == 0, r.output
    if result is not None:
        result.append(r)
    return json.loads(r.stdout)


def test_eval_reads_a_sudoku_extreme_csv_directly(native, tmp_path):
    """`ptrm eval --split test.csv`: every good row evaluated in TRM's layout, a malformed row
    and a wrong answer listed as unusable with their lines, not a traceback."""
    from ptrm_cli import eval_sets, solver
    from ptrm_cli.engine.checkpoint import save_checkpoint

    f = tmp_path / "test.csv"
    sols = extreme_csv(f, 3, bad=True)
    ckpt = save_checkpoint(tmp_path / "mlp", tiny_mlp(), native.vocab, {"note": "test"})
    ev = eval_sets.resolve_split(str(f), None, solver.load_model(ckpt, "cpu"))
    assert len(ev) == 3 and ev.inputs.shape == (3, 81) and ev.name == "test"
    assert [u["line"] for u in ev.unusable] == [3, 6]
    for i, a in enumerate(sols):  # TRM's ids: digit d -> d + 1
        assert ev.labels[i].tolist() == [int(c) + 1 for c in a]
        assert ev.verifiers[i](ev.labels[i].numpy()).valid
    rep = eval_cli("--split", str(f), "-c", str(ckpt), "--K", "2", "--D", "2", "--out",
                   str(tmp_path / "ev"))
    assert rep["split"]["n"] == 3 and len(rep["split"]["unusable"]) == 2
    # --sample draws among the file's 4 readable records before decoding them: the same draw
    # as sampling the loaded puzzles when every record is usable
    good = tmp_path / "good.csv"
    extreme_csv(good, 5)
    loaded = solver.load_model(ckpt, "cpu")
    early = eval_sets.resolve_split(str(good), None, loaded, sample=3)
    late = eval_sets.resolve_split(str(good), None, loaded).sample(3)
    assert early.keys == late.keys and early.sampled == late.sampled == {"n": 3, "of": 5,
                                                                        "seed": 0}
    assert torch.equal(early.inputs, late.inputs)
    # --types on a source file: the file's own type keeps everything, another one is an error
    typed = eval_sets.resolve_split(str(good), None, loaded, types=["sudoku"], sample=3)
    assert typed.keys == early.keys
    with pytest.raises(PtrmError, match=r"no tapa puzzles to evaluate \(it holds sudoku\)"):
        eval_sets.resolve_split(str(good), None, loaded, types=["tapa"])
    # --min-difficulty: records rated N or more (the made rows are rated 0..4), before --sample
    hard = eval_sets.resolve_split(str(good), None, loaded, min_difficulty=2)
    assert hard.keys == eval_sets.resolve_split(str(good), None, loaded).keys[2:]
    assert hard.source.endswith("(rating >= 2)")
    assert len(eval_sets.resolve_split(str(good), None, loaded, min_difficulty=2,
                                       sample=2)) == 2
    with pytest.raises(PtrmError, match="no record rated 99 or more .5 read, 0 without"):
        eval_sets.resolve_split(str(good), None, loaded, min_difficulty=99)
    with pytest.raises(PtrmError, match="--min-difficulty applies to a rated source file"):
        eval_sets.resolve_split("golden", None, loaded, min_difficulty=1)


def test_official_checkpoint_to_sudoku_extreme_eval_on_the_command_line(native, tmp_path):
    """The paper's headline, as a user runs it: an official TRM-MLP step file -> `ptrm convert
    --family sudoku-native` (seq_len from the family) -> `ptrm eval --split test.csv`, and
    the converted model computes what the original does."""
    from ptrm_cli.app import app
    from ptrm_cli.engine.checkpoint import load_checkpoint

    model = tiny_mlp(1)
    torch.save({f"_orig_mod.model.inner.{k}": v for k, v in model.state_dict().items()},
               tmp_path / "step_100")
    r = CliRunner().invoke(app, ["convert", str(tmp_path / "step_100"), "--family",
                                 "sudoku-native", "--set", "puzzle_emb_len=0", "--set",
                                 "H_cycles=2", "--set", "L_cycles=2", "--set",
                                 "halt_max_steps=3", "--set", "expansion=2.0", "-o",
                                 str(tmp_path / "conv"), "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["model"]["config"]["seq_len"] == 81
    conv = load_checkpoint(tmp_path / "conv")[0]
    x = torch.randint(1, 11, (2, 81), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        a = model.step(model.init_carry(2), model.embed(x, None))
        b = conv.step(conv.init_carry(2), conv.embed(x, None))
    assert torch.equal(a.logits, b.logits) and torch.equal(a.q_halt, b.q_halt)
    extreme_csv(tmp_path / "test.csv", 4)
    rep = eval_cli("--split", str(tmp_path / "test.csv"), "-c", str(tmp_path / "conv"),
                   "--K", "3", "--D", "3", "--sigma", "0.3", "--out", str(tmp_path / "ev"))
    assert rep["split"]["n"] == 4 and rep["model"]["config"]["mlp_t"]
    assert rep["ptrm"][0]["sigma"] == 0.3


def test_an_official_step_file_is_used_directly(native, tmp_path):
    """No convert step: `-c run/step_N` (the run's all_config.yaml beside it) in `ptrm eval`
    and `ptrm solve` reads the sudoku-native layout, the one sudoku family with its 11 tokens
    and 81 positions, and computes what the converted model computes."""
    import yaml

    from ptrm_cli.app import app

    run = tmp_path / "run"
    run.mkdir()
    model = tiny_mlp(1)
    torch.save({f"_orig_mod.model.inner.{k}": v for k, v in model.state_dict().items()},
               run / "step_100")
    arch = {"hidden_size": 32, "H_cycles": 2, "L_cycles": 2, "halt_max_steps": 3,
            "puzzle_emb_len": 0, "expansion": 2.0, "pos_encodings": "none", "mlp_t": True}
    (run / "all_config.yaml").write_text(yaml.safe_dump({"arch": arch}))
    extreme_csv(tmp_path / "test.csv", 3)
    args = ("--split", str(tmp_path / "test.csv"), "--K", "2", "--D", "3", "--sigma", "0.3")
    direct = eval_cli(*args, "-c", str(run / "step_100"), "--out", str(tmp_path / "a"))
    r = CliRunner().invoke(app, ["convert", str(run / "step_100"), "--family", "sudoku-native",
                                 "-o", str(tmp_path / "conv")])
    assert r.exit_code == 0, r.output
    conv = eval_cli(*args, "-c", str(tmp_path / "conv"), "--out", str(tmp_path / "b"))
    assert direct["split"]["n"] == 3
    assert direct["ptrm"][0]["per_puzzle"] == conv["ptrm"][0]["per_puzzle"]
    assert direct["deterministic"][0]["groups"] == conv["deterministic"][0]["groups"]
    grid = made_puzzles(1)[0].replace("0", ".")
    r = CliRunner().invoke(app, ["solve", "-", "-c", str(run / "step_100"), "--K", "2",
                                 "--device", "cpu", "--json"], input=grid + "\n")
    assert r.exit_code in (0, 1) and json.loads(r.stdout)["type"] == "sudoku", r.output
    # a type with no family of that layout: says so, and which puzzles the model is for (a
    # token table attached by `ptrm convert --family` cannot make it read lightup)
    example = Path(__file__).parents[1] / "examples" / "puzzles" / "lightup.url"
    r = CliRunner().invoke(app, ["solve", str(example), "-c", str(run / "step_100"),
                                 "--device", "cpu"])
    said = " ".join(r.output.split())
    assert r.exit_code == 2 and "no token table" in said, r.output
    assert "a model for sudoku puzzles" in said and "ptrm convert" not in said, r.output
    # the same from a folder converted without --family
    r = CliRunner().invoke(app, ["convert", str(run / "step_100"), "-o", str(tmp_path / "bare")])
    assert r.exit_code == 0, r.output
    r = CliRunner().invoke(app, ["solve", str(example), "-c", str(tmp_path / "bare"),
                                 "--device", "cpu"])
    assert r.exit_code == 2 and "a model for sudoku puzzles" in " ".join(r.output.split()), \
        r.output


def official_attention_run(run: Path, **yaml_extra) -> Path:
    """An official TRM-Att (RoPE) run of the sudoku-native layout, as the reference writes it:
    run/step_100 and an all_config.yaml that, like the weights, does not say seq_len."""
    import yaml

    from ptrm_cli.engine.model import TRM, TRMConfig

    torch.manual_seed(0)
    model = TRM(TRMConfig(vocab_size=11, seq_len=81, hidden_size=32, num_heads=2,
                          expansion=2.0, L_layers=1, H_cycles=2, L_cycles=2,
                          pos_encodings="rope", puzzle_emb_ndim=0, puzzle_emb_len=0,
                          halt_max_steps=3)).eval()
    run.mkdir()
    torch.save({f"_orig_mod.model.inner.{k}": v for k, v in model.state_dict().items()},
               run / "step_100")
    arch = {"name": "trm", "hidden_size": 32, "num_heads": 2, "H_cycles": 2, "L_cycles": 2,
            "halt_max_steps": 3, "puzzle_emb_len": 0, "expansion": 2.0,
            "pos_encodings": "rope"}
    (run / "all_config.yaml").write_text(yaml.safe_dump({"arch": arch, **yaml_extra}))
    return run


def test_an_official_attention_step_file_takes_its_familys_length(native, tmp_path):
    """A TRM-Att (RoPE) run's weights do not say its sequence length and its all_config.yaml
    names a dataset relative to where the run started: `-c step_N` was refused ("the weights
    do not say seq_len") although one sudoku family has its 11 tokens; now that family's 81
    positions are taken, and the run's own settings still come from its yaml."""
    from ptrm_cli.app import app

    run = official_attention_run(tmp_path / "run",
                                 data_paths=["data/sudoku-extreme-1k-aug-1000"])
    grid = made_puzzles(1)[0].replace("0", ".")
    r = CliRunner().invoke(app, ["solve", "-", "-c", str(run / "step_100"), "--K", "2",
                                 "--device", "cpu", "--json"], input=grid + "\n")
    assert r.exit_code in (0, 1), r.output
    out = json.loads(r.stdout)
    assert out["type"] == "sudoku" and len(out["solution"]["grid"]) == 9
    # eval: the same, from the installed families
    extreme_csv(tmp_path / "test.csv", 2)
    rep = eval_cli("--split", str(tmp_path / "test.csv"), "--K", "2", "--D", "2", "-c",
                   str(run / "step_100"), "--out", str(tmp_path / "ev"))
    assert rep["split"]["n"] == 2 and rep["model"]["config"]["seq_len"] == 81


def test_an_official_step_files_length_comes_from_the_split_not_every_family(
        native, monkeypatch, fresh_registry, installed_codec, tmp_path):
    """`eval -c step_N --data DS` looked for the length among every installed family: a plugin
    with another family of 11 tokens made it ambiguous ("the weights do not say seq_len")
    although the dataset says its family. Now the dataset's family decides."""
    from ptrm_cli.codec import Family

    run = official_attention_run(tmp_path / "run")
    (tmp_path / "l.txt").write_text("\n".join(made_puzzles(4)) + "\n")
    from ptrm_cli.app import app

    r = CliRunner().invoke(app, ["build-data", str(tmp_path / "l.txt"), "--family",
                                 "sudoku-native", "--val-per-type", "2", "--workers", "1",
                                 "--out", str(tmp_path / "ds")])
    assert r.exit_code == 0, r.output
    # a plugin whose own family also has 11 tokens, on a 4x4 board
    other = Family("qa11", 4, 4, Vocab("qa11", native.vocab.tokens))
    _plugin(monkeypatch, Other=_sudoku_subclass(installed_codec, "qa11", families=(other,)))
    rep = eval_cli("--split", "val", "--data", str(tmp_path / "ds"), "--K", "2", "--D", "2",
                   "-c", str(run / "step_100"), "--out", str(tmp_path / "ev"))
    assert rep["split"]["n"] == 2 and rep["model"]["config"]["seq_len"] == 81


def test_official_format_checkpoint_runs_unchanged(trm_build, sudoku, native, tmp_path):
    """A TRM-MLP saved the way the official pretrain.py does (torch.compile'd state_dict), read
    with the native table: same weights, same outputs, and `ptrm eval` runs it."""
    from ptrm_cli.engine.checkpoint import import_official, save_checkpoint

    model = tiny_mlp(1)
    torch.save({f"_orig_mod.model.inner.{k}": v for k, v in model.state_dict().items()},
               tmp_path / "step_100")
    imported, vocab, meta = import_official(
        tmp_path / "step_100", vocab=native.vocab, seq_len=81, puzzle_emb_len=0, H_cycles=2,
        L_cycles=2, halt_max_steps=3, expansion=2.0)
    assert vocab is native.vocab and imported.config == model.config
    assert sudoku.family_for(vocab) is native
    x = torch.as_tensor(np.stack([sudoku.encode(sudoku.parse(line).puzzle, family=native)
                                  for line in HARD]))
    with torch.no_grad():
        a = model.step(model.init_carry(2), model.embed(x, None))
        b = imported.step(imported.init_carry(2), imported.embed(x, None))
    assert torch.equal(a.logits, b.logits)
    ckpt = save_checkpoint(tmp_path / "converted", imported, vocab, meta)
    rep = run_eval(ckpt, trm_build[1], tmp_path / "eval")
    assert rep["split"]["n"] == 3
