"""docs/DATASET_FORMAT.md as a contract for datasets written by hand (numpy + json, no
`ptrm build-data`): what it calls required is enough to train and evaluate, and each mistake
such a writer makes is one message naming the file and what was expected - never a traceback,
never a run on misread rows."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from ptrm_cli import codec as registry
from ptrm_cli.app import app
from ptrm_cli.engine.data import Split, load_dataset, write_dataset
from ptrm_cli.errors import PtrmError
from ptrm_cli.vocab import Vocab

from fixtures_models import save_tiny_checkpoint

DOC = Path(__file__).resolve().parents[1] / "docs" / "DATASET_FORMAT.md"
MINE = Vocab("parity", ("pad", "in.0", "in.1", "out.0", "out.1"))


def sudoku_pairs(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """n (puzzle, solution) 9x9 pairs, 0 = blank: a pattern grid with its digits renamed."""
    rng = np.random.default_rng(seed)
    base = np.fromfunction(lambda r, c: (r * 3 + r // 3 + c) % 9, (9, 9), dtype=int)
    solutions = np.stack([rng.permutation(9)[base] + 1 for _ in range(n)])
    puzzles = solutions.copy()
    for p in puzzles:
        p.flat[rng.choice(81, 40, replace=False)] = 0
    return puzzles, solutions


def doc_example(out: Path, sizes=(("train", 8), ("val", 4))) -> Path:
    """The dataset of the doc's own example ("Writing one yourself"), run as printed."""
    block = DOC.read_text().split("## Writing one yourself")[1].split("```python")[1]
    code = block.split("```")[0]
    ns: dict = {}
    exec(code, ns)
    ns["write_meta"](str(out), {name: ns["write_split"](str(out), name, *sudoku_pairs(n, seed=i))
                                for i, (name, n) in enumerate(sizes)})
    return out


@pytest.fixture()
def tokens_only(tmp_path) -> Path:
    """A dataset of a vocabulary of its own, with nothing but what the doc requires: the five
    meta.json keys, no counts.json, no golden split, empty puzzles.jsonl files."""
    rng = np.random.default_rng(0)
    out = tmp_path / "mine"
    splits = {}
    for name, n in (("train", 12), ("val", 4)):
        bits = rng.integers(0, 2, (n, 6))
        arrays = {"inputs": (bits + 1).astype(np.uint16),
                  "labels": (np.cumsum(bits, 1) % 2 + 3).astype(np.uint16),
                  "type": np.zeros(n, np.uint8), "puzzle": np.arange(n, dtype=np.int32),
                  "transform": np.zeros(n, np.uint8), "puzzle_id": np.zeros(n, np.int32)}
        (out / name).mkdir(parents=True)
        for key, arr in arrays.items():
            np.save(out / name / f"{key}.npy", arr)
        (out / name / "puzzles.jsonl").write_text("")
        splits[name] = n
    (out / "meta.json").write_text(json.dumps(
        {"format": "ptrm-dataset/1", "seq_len": 6, "vocab": MINE.to_json(),
         "types": ["parity"], "splits": splits}))
    return out


def test_the_docs_example_writes_what_the_sudoku_codec_encodes(tmp_path):
    """The example's rows are exactly the sudoku-native family's encode / encode_label."""
    ds = load_dataset(doc_example(tmp_path / "native"))
    codec = registry.get("sudoku")
    family = codec.family_for(ds.vocab)
    s = ds.split("val")
    for i in range(len(s)):
        puzzle = codec.parse(s.puzzles[int(s.puzzle[i])]["text"]).puzzle
        assert (s.inputs[i] == codec.encode(puzzle, family=family)).all()
        solution = codec.decode(puzzle, s.labels[i], family)
        assert codec.verify(puzzle, solution) == []
        assert (s.labels[i] == codec.encode_label(puzzle, solution, family=family)).all()


def train_cli(data: Path, run: Path, *extra: str):
    cfg = {"run_dir": str(run), "device": "cpu", "data": {"path": str(data)},
           "model": {"hidden_size": 16, "num_heads": 2, "expansion": 2, "L_layers": 1,
                     "H_cycles": 1, "L_cycles": 1, "mlp_t": True, "pos_encodings": "none",
                     "puzzle_emb_ndim": 0, "puzzle_emb_len": 0,
                     "halt_max_steps": 2, "forward_dtype": "float32"},
           "train": {"global_batch_size": 4, "max_steps": 2, "lr_warmup_steps": 1},
           "eval": {"every_steps": 2}, "log": {"progress": "none"}}
    path = run.parent / f"{run.name}.yaml"
    path.write_text(json.dumps(cfg))   # YAML reads JSON
    return CliRunner().invoke(app, ["train", str(path), *extra])


def test_only_the_required_parts_train_resume_and_evaluate(tmp_path, tokens_only):
    """The doc's required keys and files are enough: `ptrm train`, `--resume`, and (a codec
    family with puzzle texts) `ptrm eval --split val --data`."""
    r = train_cli(tokens_only, tmp_path / "run")
    assert r.exit_code == 0, r.output
    r = train_cli(tokens_only, tmp_path / "run", "--resume", "--set", "train.max_steps=3")
    assert r.exit_code == 0, r.output
    native = doc_example(tmp_path / "native")
    assert train_cli(native, tmp_path / "run2").exit_code == 0
    r = CliRunner().invoke(app, ["eval", "--split", "val", "--data", str(native), "-c",
                                 str(tmp_path / "run2" / "checkpoints" / "best"), "--K", "1",
                                 "--D", "1", "--seeds", "1", "--device", "cpu",
                                 "-o", str(tmp_path / "ev"), "--json"])
    assert r.exit_code == 0, r.output


def _meta(ds: Path, change) -> None:
    meta = json.loads((ds / "meta.json").read_text())
    change(meta)
    (ds / "meta.json").write_text(json.dumps(meta))


def _array(ds: Path, split: str, key: str, change) -> None:
    f = ds / split / f"{key}.npy"
    np.save(f, change(np.load(f)))


def _set(a, value, at=(0,)):
    a = a.copy()
    a[at] = value
    return a


MISTAKES = {  # name: (damage, the file named, what the message says)
    "int64 inputs": (lambda d: _array(d, "train", "inputs", lambda a: a.astype(np.int64)),
                     "train/inputs.npy", "dtype int64, expected uint16"),
    "float labels": (lambda d: _array(d, "train", "labels", lambda a: a + 0.5),
                     "train/labels.npy", "dtype float64, expected uint16"),
    "-100 labels": (lambda d: _array(d, "train", "labels",
                                     lambda a: _set(a.astype(np.int64), -100, (0, 0))),
                    "train/labels.npy", "0 = pad, not a negative one like -100"),
    "int64 type": (lambda d: _array(d, "val", "type", lambda a: a.astype(np.int64)),
                   "val/type.npy", "dtype int64, expected uint8"),
    "labels narrower": (lambda d: _array(d, "train", "labels", lambda a: a[:, :-1]),
                        "train/labels.npy", "expected [12, 6]"),
    "grids not rows": (lambda d: _array(d, "train", "inputs", lambda a: a.reshape(12, 2, 3)),
                       "train/inputs.npy", "expected [12, 6]: rows of seq_len 6"),
    "a short array": (lambda d: _array(d, "train", "puzzle_id", lambda a: a[:5]),
                      "train/puzzle_id.npy", "expected [12]: one per row of inputs.npy"),
    "missing split folder": (lambda d: shutil.rmtree(d / "val"),
                             "val", "meta.json lists split 'val' (4 rows) but there is no"),
    "rows not as listed": (lambda d: _meta(d, lambda m: m["splits"].update(train=20)),
                           "train/inputs.npy", "12 rows, but meta.json says split 'train' has 20"),
    "input id past the table": (lambda d: _array(d, "train", "inputs", lambda a: _set(a, 5)),
                                "train/inputs.npy", "token id 5 is outside the vocabulary"),
    "label id past the table": (lambda d: _array(d, "val", "labels", lambda a: _set(a, 9)),
                                "val/labels.npy", "token id 9 is outside the vocabulary"),
    "type past types": (lambda d: _array(d, "val", "type", lambda a: _set(a, 1)),
                        "val/type.npy", "type index 1, but meta.json lists 1 type"),
    "transform 8": (lambda d: _array(d, "train", "transform", lambda a: _set(a, 8)),
                    "train/transform.npy", "transform 8: expected 0..7"),
    "negative puzzle id": (lambda d: _array(d, "val", "puzzle_id", lambda a: _set(a, -1)),
                           "val/puzzle_id.npy", "puzzle ids -1..0, expected 0..0"),
    "negative puzzle line": (lambda d: _array(d, "train", "puzzle", lambda a: _set(a, -1)),
                             "train/puzzle.npy", "puzzle lines -1..11"),
    "puzzles.jsonl short": (lambda d: (d / "train" / "puzzles.jsonl").write_text('{"a": 1}\n'),
                            "train/puzzle.npy", "but puzzles.jsonl has 1"),
    "puzzles.jsonl missing": (lambda d: (d / "val" / "puzzles.jsonl").unlink(),
                              "val/puzzles.jsonl", "No such file"),
    "puzzles.jsonl not objects": (lambda d: (d / "val" / "puzzles.jsonl").write_text("[1]\n"),
                                  "val/puzzles.jsonl", "every line must be a JSON object"),
    **{f"meta.json without {k}": ((lambda k: lambda d: _meta(d, lambda m: m.pop(k)))(k),
                                  "meta.json", f"missing key(s) '{k}'")
       for k in ("format", "seq_len", "vocab", "types", "splits")},
    "seq_len a string": (lambda d: _meta(d, lambda m: m.update(seq_len="6")),
                         "meta.json", "seq_len '6': expected a positive integer"),
    "seq_len wrong": (lambda d: _meta(d, lambda m: m.update(seq_len=7)),
                      "train/inputs.npy", "expected [12, 7]: rows of seq_len 7"),
    "types a string": (lambda d: _meta(d, lambda m: m.update(types="parity")),
                       "meta.json", "expected a non-empty list of type names"),
    "splits a list": (lambda d: _meta(d, lambda m: m.update(splits=["train", "val"])),
                      "meta.json", "expected {split name: number of rows}"),
    "vocab without pad first": (lambda d: _meta(d, lambda m: m["vocab"]["tokens"].reverse()),
                                "meta.json", "must start with 'pad'"),
    "vocab a list": (lambda d: _meta(d, lambda m: m.update(vocab=list(MINE.tokens))),
                     "meta.json", "malformed vocabulary table"),
    "family not the vocab's": (lambda d: _meta(d, lambda m: m.update(family="ppbench")),
                               "meta.json", "family 'ppbench', but the vocab table's is"),
    "num_puzzle_ids 0": (lambda d: _meta(d, lambda m: m.update(num_puzzle_ids=0)),
                         "meta.json", "num_puzzle_ids 0: expected a positive integer"),
    "meta.json a list": (lambda d: (d / "meta.json").write_text("[]"),
                         "meta.json", "expected a JSON object"),
    # these three said what was wrong without a hint, or (bytes that are not text) in a
    # traceback
    "meta.json cut short": (lambda d: (d / "meta.json").write_text(
                                (d / "meta.json").read_text()[:40]),
                            "meta.json:1: not valid JSON", "(column "),
    "meta.json not text": (lambda d: (d / "meta.json").write_bytes(b"\xff\xfe{\x00"),
                           "meta.json", "not UTF-8 text"),
    "another format": (lambda d: _meta(d, lambda m: m.update(format="hf-dataset")),
                       "", "dataset format 'hf-dataset', this ptrm reads 'ptrm-dataset/1'"),
}


@pytest.mark.parametrize("name", MISTAKES)
def test_a_writers_mistake_is_one_message_naming_the_file(tokens_only, name):
    damage, where, message = MISTAKES[name]
    damage(tokens_only)
    with pytest.raises(PtrmError) as e:
        load_dataset(tokens_only)
    text = str(e.value)
    assert text.startswith(str(tokens_only / where)), text
    assert message in text, text
    assert "DATASET_FORMAT.md" in e.value.hint, e.value.hint


def test_a_later_format_of_ours_says_which_ptrm_reads_it(tokens_only):
    _meta(tokens_only, lambda m: m.update(format="ptrm-dataset/2"))
    with pytest.raises(PtrmError, match="dataset format 'ptrm-dataset/2'") as e:
        load_dataset(tokens_only)
    assert "another version of ptrm wrote it" in e.value.hint, e.value.hint


@pytest.mark.parametrize("split, hint", [
    ("vla", "did you mean val?"),
    ("test", "only ARC builds (`ptrm build-data --family arc`) have a test split; the "
             "others hold puzzles out in val (--val-per-type) and golden"),
    ("holdout", "name one of the splits it has"),
])
def test_a_split_the_dataset_lacks_says_which_it_has_and_why(tokens_only, split, hint):
    """`ptrm eval --split test` of a dataset without one said "no split 'test' (it has: train,
    val)" and nothing on where a test split comes from."""
    for load in (lambda: load_dataset(tokens_only, splits=[split]),
                 lambda: load_dataset(tokens_only).split(split)):
        with pytest.raises(PtrmError, match=f"has no split '{split}' "
                                            r"\(it has: train, val\)") as e:
            load()
        assert hint in e.value.hint, e.value.hint


def test_an_arc_build_without_a_test_set_says_how_to_get_one(tmp_path):
    """An ARC build of a training file alone (no evaluation* subset, no --test-set) has only
    a train split: `ptrm eval --split test` said "(it has: train)" and no more."""
    pytest.importorskip("ptrm_codecs.arc")
    from ptrm_cli.arc_data import build_arc

    task = {"train": [{"input": [[1]], "output": [[2]]}], "test": [{"input": [[1]]}]}
    (tmp_path / "arc-agi_training_challenges.json").write_text(json.dumps({"aaaa0001": task}))
    (tmp_path / "arc-agi_training_solutions.json").write_text(json.dumps({"aaaa0001":
                                                                              [[[2]]]}))
    build_arc([tmp_path / "arc-agi_training_challenges.json"], tmp_path / "ds", num_aug=0)
    with pytest.raises(PtrmError, match=r"has no split 'test' \(it has: train\)") as e:
        load_dataset(tmp_path / "ds", splits=["test"])
    assert "this ARC build had no test set (its subsets: training)" in e.value.hint
    assert "--test-set SUBSET" in e.value.hint


def test_the_commands_say_it_with_a_non_zero_exit_and_no_traceback(tmp_path, tokens_only):
    """Through `ptrm train` and `ptrm eval`: exit 2, the file named, nothing trained."""
    _array(tokens_only, "val", "inputs", lambda a: a.astype(np.float32))
    r = train_cli(tokens_only, tmp_path / "run")
    assert r.exit_code == 2 and "Traceback" not in r.output, r.output
    assert "val/inputs.npy" in r.output and "expected uint16" in r.output, r.output
    assert not (tmp_path / "run" / "checkpoints").exists()
    ckpt = save_tiny_checkpoint(tmp_path / "ckpt", MINE, seq_len=6)
    r = CliRunner().invoke(app, ["eval", "--split", "val", "--data", str(tokens_only),
                                 "-c", str(ckpt), "--device", "cpu", "-o", str(tmp_path / "ev")])
    assert r.exit_code == 2 and "Traceback" not in r.output, r.output
    assert "val/inputs.npy" in re.sub(r"\s+", "", r.output), r.output


def test_what_the_doc_calls_optional_is(tokens_only):
    """family and num_puzzle_ids when they are right, counts.json, a zero-row split, extra
    keys: all read."""
    _meta(tokens_only, lambda m: m.update(family="parity", num_puzzle_ids=1, mine={"x": 1},
                                          splits={**m["splits"], "golden": 0}))
    (tokens_only / "golden").mkdir()
    for key, arr in {"inputs": np.zeros((0, 6), np.uint16), "labels": np.zeros((0, 6), np.uint16),
                     "type": np.zeros(0, np.uint8), "puzzle": np.zeros(0, np.int32),
                     "transform": np.zeros(0, np.uint8),
                     "puzzle_id": np.zeros(0, np.int32)}.items():
        np.save(tokens_only / "golden" / f"{key}.npy", arr)
    (tokens_only / "golden" / "puzzles.jsonl").write_text("")
    (tokens_only / "counts.json").write_text("{}")
    ds = load_dataset(tokens_only)
    assert {k: len(s) for k, s in ds.splits.items()} == {"train": 12, "val": 4, "golden": 0}
    assert ds.num_puzzle_ids == 1 and ds.types == ["parity"]


def test_write_dataset_refuses_what_it_would_change_or_load_would_refuse(tmp_path):
    """A 2.5 was written as 2 and a -1 puzzle id as is, then trained on or refused on load."""
    x = np.array([[1, 2, 1, 2, 1, 2]])

    def split(**bad):
        return Split(**{"inputs": x, "labels": x, "type": np.zeros(1), "puzzle": np.zeros(1),
                        "transform": np.zeros(1), "puzzle_id": np.zeros(1), **bad})

    for bad, message in ((dict(type=np.array([0.5])), "train/type: value 0.5 is not a uint8"),
                         (dict(puzzle_id=np.array([-1])), "puzzle ids -1..-1, expected 0..0"),
                         (dict(transform=np.array([300])), "value 300 is not a uint8")):
        with pytest.raises(PtrmError, match=re.escape(message)) as e:
            write_dataset(tmp_path / "ds", vocab=MINE, seq_len=6, types=["parity"],
                          splits={"train": split(**bad)})
        assert e.value.hint == "nothing was written"
        assert not (tmp_path / "ds").exists()
    write_dataset(tmp_path / "ds", vocab=MINE, seq_len=6, types=["parity"],
                  splits={"train": split()})
    assert len(load_dataset(tmp_path / "ds").split("train")) == 1


def test_eval_of_a_type_no_codec_reads_says_so(tmp_path, tokens_only):
    """A dataset of a type without an installed codec trains, but eval judges each answer by
    the type's rules: it said only "nothing to evaluate (skipped: parity)"."""
    assert train_cli(tokens_only, tmp_path / "run").exit_code == 0
    r = CliRunner().invoke(app, ["eval", "--split", "val", "--data", str(tokens_only), "-c",
                                 str(tmp_path / "run" / "checkpoints" / "best"), "--K", "1",
                                 "--D", "1", "--seeds", "1", "--device", "cpu",
                                 "-o", str(tmp_path / "ev")])
    said = " ".join(r.output.split())
    assert r.exit_code == 2 and "Traceback" not in r.output, r.output
    assert "no installed codec reads its type(s) parity" in said and "`ptrm codecs`" in said


def test_a_training_split_with_nothing_to_learn_is_said(tmp_path, tokens_only):
    """An empty training split was "the training split is empty", naming no dataset; one whose
    labels are all pad trained on nothing, silently."""
    _array(tokens_only, "train", "labels", lambda a: np.zeros_like(a))
    r = train_cli(tokens_only, tmp_path / "run")
    assert r.exit_code == 0, r.output
    assert f"warning: dataset {tokens_only}: every label of the training split 'train' is " \
        "pad" in " ".join(r.output.split())
    for key in ("inputs", "labels", "type", "puzzle", "transform", "puzzle_id"):
        _array(tokens_only, "train", key, lambda a: a[:0])
    _meta(tokens_only, lambda m: m["splits"].update(train=0))
    r = train_cli(tokens_only, tmp_path / "run2")
    assert r.exit_code == 2 and "Traceback" not in r.output, r.output
    assert f"dataset {tokens_only}: the training split 'train' has no rows" in \
        " ".join(r.output.split())


def test_a_write_cut_short_by_a_full_disk_is_one_message(tmp_path, monkeypatch):
    """numpy says a full disk as an OSError without an errno ("N requested and M written"):
    `ptrm build-data` ended in a traceback. Now one message naming the folder, and an
    earlier build there is left as it was."""
    x = np.array([[1, 2, 1, 2, 1, 2]])
    split = Split(inputs=x, labels=x, type=np.zeros(1), puzzle=np.zeros(1),
                  transform=np.zeros(1), puzzle_id=np.zeros(1))
    out = tmp_path / "ds"
    write_dataset(out, vocab=MINE, seq_len=6, types=["parity"], splits={"train": split})
    before = (out / "meta.json").read_bytes()

    def full(*a, **k):
        raise OSError("96 requested and 40 written")

    monkeypatch.setattr(np, "save", full)
    with pytest.raises(PtrmError, match=r"ds: cannot write the dataset \(96 requested.*disk"):
        write_dataset(out, vocab=MINE, seq_len=6, types=["parity"], splits={"val": split})
    assert (out / "meta.json").read_bytes() == before
    assert [p.name for p in tmp_path.iterdir() if p.name != "ds"] == []  # no temporary left
