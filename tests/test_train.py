"""Training: the loss head, config loading, the data order, and end-to-end runs on CPU - a tiny
TRM learning 4x4 sudoku, exact resume after a kill or Ctrl-C (bitwise equal weights), atomic
checkpoints, warm starts, two-process DDP with gloo, and the `ptrm train` command.

The 4x4 sudoku task is ptrm_cli/engine/sudoku4.py (`python -m ptrm_cli.engine.sudoku4 OUT`,
the dataset of examples/configs/tiny-cpu.yaml).
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import signal
import shlex
import shutil
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from safetensors.torch import load_file

from ptrm_cli.engine.data import Split, load_dataset, write_dataset
from ptrm_cli.engine.losses import act_loss, softmax_cross_entropy, stablemax_cross_entropy
from ptrm_cli.engine.model import Carry
from ptrm_cli.engine.sudoku4 import VOCAB, write_sudoku4
from ptrm_cli.engine.train import BatchStream, Stop, load_config, train
from ptrm_cli.engine.train_config import check_config
from ptrm_cli.engine.train_loop import Trainer, optimizer_and_ema_
from ptrm_cli.errors import PtrmError
from ptrm_cli.vocab import Vocab

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def sudoku4(tmp_path_factory) -> Path:
    return write_sudoku4(tmp_path_factory.mktemp("data") / "sudoku4")


# TRM-MLP (the reference's sudoku variant) at the smallest width model.py allows.
TINY_MLP = dict(hidden_size=32, num_heads=2, expansion=2.0, L_layers=2, H_cycles=2, L_cycles=1,
                mlp_t=True, pos_encodings="none", puzzle_emb_ndim=32, puzzle_emb_len=1,
                halt_max_steps=4, forward_dtype="float32")
# For the resume tests: attention + RoPE, a puzzle prefix, N_sup=2 (slots refill every other
# step) and lots of exploration, so every piece of state is exercised in a dozen steps.
TINY_ATT = dict(hidden_size=16, num_heads=2, expansion=1.0, L_layers=1, H_cycles=2, L_cycles=1,
                pos_encodings="rope", puzzle_emb_ndim=16, puzzle_emb_len=1, halt_max_steps=2,
                halt_exploration_prob=0.5, forward_dtype="float32")


def config(run_dir: Path, data: Path, model=TINY_ATT, **sections) -> dict:
    doc = {"run_dir": str(run_dir), "seed": 0, "device": "cpu", "data": {"path": str(data)},
           "model": dict(model),
           "train": dict(global_batch_size=16, max_steps=12, lr=3e-3, lr_warmup_steps=4,
                         puzzle_emb_lr=1e-2, ema_rate=0.9),
           "eval": {"every_steps": 6}, "checkpoint": {"every_steps": 4},
           "log": {"every": 2, "progress": "none"}}
    for k, v in sections.items():
        doc[k] = {**doc.get(k, {}), **v}
    return doc


def log_events(run_dir: Path, kind: str) -> list[dict]:
    recs = [json.loads(line) for line in (run_dir / "log.jsonl").read_text().splitlines()]
    return [r for r in recs if r["event"] == kind]


def final_state(run_dir: Path) -> dict[str, torch.Tensor]:
    """Raw weights, EMA weights + buffers, optimizer moments and carry of the last checkpoint."""
    d = (run_dir / "checkpoints" / "last").resolve()
    out = {f"ema.{k}": v for k, v in load_file(d / "model.safetensors").items()}
    for stem in ("train_state", "optimizer", "carry"):
        out.update({f"{stem}.{k}": v for k, v in load_file(d / f"{stem}.safetensors").items()})
    return out


def assert_same_state(a: dict, b: dict) -> None:
    assert a.keys() == b.keys()
    bad = [k for k in a if not torch.equal(a[k], b[k])]
    assert not bad, f"differ: {bad}"


# -- the loss head -------------------------------------------------------------------------------

def test_stablemax_cross_entropy_is_the_reference_formula():
    gen = torch.Generator().manual_seed(0)
    logits = torch.randn(3, 5, 7, generator=gen) * 4
    labels = torch.randint(1, 7, (3, 5), generator=gen)
    mask = torch.rand(3, 5, generator=gen) > 0.3
    x = logits.double()
    s = torch.where(x >= 0, x + 1, 1 / (1 - x))
    expected = -(s.gather(-1, labels[..., None]).squeeze(-1) / s.sum(-1)).log() * mask
    got = stablemax_cross_entropy(logits, labels, mask)
    assert got.dtype == torch.float64
    torch.testing.assert_close(got, expected)
    # gradients stay finite at the branch point and where the unused branch would divide by 0
    x = torch.tensor([[[0.0, 1.0, -1.0, 50.0]]], requires_grad=True)
    stablemax_cross_entropy(x, torch.tensor([[1]]), torch.tensor([[True]])).sum().backward()
    assert torch.isfinite(x.grad).all()


def test_softmax_option_is_plain_cross_entropy():
    logits = torch.randn(2, 4, 6)
    labels = torch.randint(0, 6, (2, 4))
    mask = labels != 0
    expected = F.cross_entropy(logits.reshape(-1, 6), labels.reshape(-1), reduction="none")
    torch.testing.assert_close(softmax_cross_entropy(logits, labels, mask),
                               expected.view(2, 4) * mask)


def test_act_loss_combines_per_row_means_and_q_halt_bce():
    # row 0 fully right, row 1 one cell wrong; pad (0) cells are not scored
    labels = torch.tensor([[2, 3, 0], [2, 3, 4]])
    logits = torch.full((2, 3, 5), -3.0)
    logits[0, 0, 2] = logits[0, 1, 3] = 3.0
    logits[1, 0, 2] = logits[1, 1, 1] = logits[1, 2, 4] = 3.0
    q = torch.tensor([1.5, -0.5])
    out = act_loss(logits, q, labels, loss_type="stablemax", q_weight=0.5)
    assert out.is_correct.tolist() == [True, False]
    assert out.cells.tolist() == [2, 3] and out.cells_right.tolist() == [2, 2]
    ce = stablemax_cross_entropy(logits, labels, labels != 0)
    lm = ce[0].sum() / 2 + ce[1].sum() / 3
    bce = F.binary_cross_entropy_with_logits(q, torch.tensor([1.0, 0.0]), reduction="sum")
    torch.testing.assert_close(out.lm_loss, lm)
    torch.testing.assert_close(out.total, lm + 0.5 * bce.double())


def test_the_compiled_loss_is_the_eager_loss(sudoku4, tmp_path):
    """With train.compile the trainer fuses the loss (torch.compile, Inductor): the same
    values and the same gradient as the eager loss, to float64 rounding; without it, the
    eager loss itself."""
    torch.manual_seed(0)
    logits = torch.randn(8, 16, 12, dtype=torch.bfloat16, requires_grad=True)
    q = torch.randn(8, requires_grad=True)
    labels = torch.randint(0, 12, (8, 16))
    torch._dynamo.reset()
    runs = []
    for fn in (act_loss, torch.compile(act_loss)):
        out = fn(logits, q, labels, loss_type="stablemax", q_weight=0.5)
        gl, gq = torch.autograd.grad(out.total / 8, (logits, q))
        runs.append((out, gl, gq))
    (a, gla, gqa), (b, glb, gqb) = runs
    for name in ("total", "lm_loss", "q_halt_loss", "lm_rows"):
        torch.testing.assert_close(getattr(b, name), getattr(a, name), rtol=1e-12, atol=1e-12)
    assert torch.equal(b.cells_right, a.cells_right) and torch.equal(b.is_correct, a.is_correct)
    torch.testing.assert_close(glb.float(), gla.float(), rtol=1e-2, atol=1e-6)  # bf16: an ulp
    torch.testing.assert_close(gqb, gqa, rtol=1e-6, atol=1e-7)
    eager = Trainer(load_config(None, base=config(tmp_path / "e", sudoku4, model=TINY_MLP)))
    assert eager.loss_fn is act_loss
    fused = Trainer(load_config(None, base=config(tmp_path / "f", sudoku4, model=TINY_MLP,
                                                  train={"compile": True})))
    assert getattr(fused.loss_fn, "_torchdynamo_orig_callable", None) is act_loss

def test_the_compiled_update_is_the_eager_update(sudoku4, tmp_path):
    """With train.compile the trainer runs AdamATan2 and the EMA as one compiled function:
    the eager update's numbers to float32 rounding, over updates whose learning rate and bias
    corrections all differ, and compiled once (a float baked into the code would compile it
    again at every update)."""
    from torch._dynamo.utils import counters

    def train(compiled):
        torch.manual_seed(0)
        tr = Trainer(load_config(None, base=config(tmp_path / f"u{compiled}", sudoku4,
                                                   model=TINY_MLP,
                                                   train={"compile": compiled})))
        start = [p.detach().clone() for p in tr.model.parameters()]
        for _ in range(5):
            for p in tr.model.parameters():
                p.grad = torch.randn_like(p)
            tr.update()
        return [p.detach().clone() for p in (*tr.model.parameters(),
                                               *tr.ema.model.parameters())], tr, start

    torch._dynamo.reset()
    counters.clear()
    eager, tr_eager, start = train(False)
    fused, tr_fused, _ = train(True)
    assert tr_eager.update_fn is optimizer_and_ema_
    assert getattr(tr_fused.update_fn, "_torchdynamo_orig_callable", None) is optimizer_and_ema_
    assert counters["stats"]["unique_graphs"] == 1
    assert tr_fused.step == 5 and not any(torch.equal(a, b) for a, b in zip(start, eager))
    for a, b in zip(eager, fused):
        torch.testing.assert_close(b, a, rtol=1e-5, atol=1e-6)


# -- config and data order -----------------------------------------------------------------------

def test_config_overrides_types_and_errors(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("data: {path: d}\ntrain: {lr: 1e-4, max_steps: 10}\nmodel: {hidden_size: 64}\n")
    cfg = load_config(path, ["train.lr=3e-4", "eval.every_steps=5", "data.val_split=null"])
    assert cfg.train.lr == 3e-4 and cfg.train.max_steps == 10 and cfg.eval.every_steps == 5
    assert cfg.data.val_split is None and cfg.run_dir == str(Path("runs") / "c")
    assert load_config(path).train.lr == 1e-4          # PyYAML reads "1e-4" as a string
    assert cfg.train.weight_decay == 0.1 and cfg.train.lr_warmup_steps == 2000  # reference
    with pytest.raises(PtrmError, match="unknown key.*lrr"):
        load_config(path, ["train.lrr=1"])
    with pytest.raises(PtrmError, match="train.max_steps: expected a whole number"):
        load_config(path, ["train.max_steps=many"])
    with pytest.raises(PtrmError, match="expected KEY=VALUE"):
        load_config(path, ["train.lr"])
    for key in ("model.", ".lr", "train..lr"):   # an empty part would be a key named ""
        with pytest.raises(PtrmError, match="has an empty part"):
            load_config(path, [f"{key}=3"])
    with pytest.raises(PtrmError, match=r"--set 'train.lr=1': train is not a section "
                                        r"\(--set 'train=1' made it a value\)"):
        load_config(path, ["train=1", "train.lr=1"])  # the first override is the mistake


def test_config_values_out_of_range(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("data: {path: d}\nrun_dir: r\n")
    for item, match in (("seed=-1", "seed must be >= 0"), ("train.lr=-1", "train.lr must be"),
                        ("data.val_limit=0", "data.val_limit must be >= 1")):
        with pytest.raises(PtrmError, match=match):
            check_config(load_config(path, [item]))
    check_config(load_config(path, ["seed=0", "train.lr=0", "data.val_limit=null"]))
    # each of these used to train on (a NaN lr: 300 steps to NaN weights; eval.steps=0 and
    # eval.batch_size=0 silently meant the default) or crash in the optimizer (beta1=1.5)
    for item, match in (("train.lr=.nan", "train.lr: expected a finite number"),
                        ("train.ema_rate=.inf", "train.ema_rate: expected a finite number"),
                        ("train.lr=1e400", "train.lr: expected a finite number")):
        with pytest.raises(PtrmError, match=match):
            load_config(path, [item])
    for item, match in (("train.beta1=1.5", r"train.beta1 must be in \[0, 1\)"),
                        ("train.beta2=-0.1", r"train.beta2 must be in \[0, 1\)"),
                        ("train.lr_min_ratio=-1", r"train.lr_min_ratio must be in \[0, 1\]"),
                        # a floor above 1 made the "cosine decay" a rise to it
                        ("train.lr_min_ratio=2", r"train.lr_min_ratio must be in \[0, 1\]"),
                        ("train.q_loss_weight=-1", "train.q_loss_weight must be >= 0"),
                        ("eval.steps=0", r"eval.steps must be >= 1 \(or null\)"),
                        ("eval.batch_size=0", r"eval.batch_size must be >= 1 \(or null\)"),
                        ("checkpoint.max_file_mb=0", "checkpoint.max_file_mb must be > 0"),
                        ("resume.rewarmup_steps=-5", "resume.rewarmup_steps must be >= 0")):
        with pytest.raises(PtrmError, match=match):
            check_config(load_config(path, [item]))


def test_values_out_of_range_name_their_file_line_or_set(tmp_path):
    """check_config named the key of a value out of range but not where it was written, as a
    misspelt key's error does; several such values are listed one a line."""
    path = tmp_path / "c.yaml"
    path.write_text("data: {path: d}\nrun_dir: r\ntrain:\n  lr: -1\n  beta1: 1.5\n")
    with pytest.raises(PtrmError) as e:
        check_config(load_config(path))
    assert str(e.value) == (f"config: 2 values make no sense:\n  {path}:4: train.lr must be >= 0"
                            f"\n  {path}:5: train.beta1 must be in [0, 1)")
    with pytest.raises(PtrmError, match=rf"^{re.escape(str(path))}:5: config: train.beta1 must"):
        check_config(load_config(path, ["train.lr=0.1"]))
    with pytest.raises(PtrmError, match=r"^--set 'seed=-1': config: seed must be >= 0$"):
        check_config(load_config(path, ["train.lr=0.1", "train.beta1=0.9", "seed=-1"]))
    # a value from no file (a base config, a default) has no place to name
    with pytest.raises(PtrmError, match=r"^config: train.lr must be >= 0$"):
        check_config(load_config(None, base={"run_dir": "r", "train": {"lr": -1}}))


def test_config_key_and_set_value_mistakes_are_one_message(tmp_path):
    """A YAML key that is a number was a TypeError (joining the unknown keys), a --set value
    that is not YAML was PyYAML's traceback, and a section left empty in the file (`train:`,
    its keys commented out) was "train is not a section" to --set. A mistyped key names the
    nearest known one."""
    path = tmp_path / "c.yaml"
    path.write_text("data: {path: d}\n1: 2\n")
    with pytest.raises(PtrmError, match=r"config: unknown key\(s\) 1$"):
        load_config(path)
    path.write_text("data: {path: d}\ntrain:\n#  lr: 1.0e-3\n")
    assert load_config(path, ["train.max_steps=5"]).train.max_steps == 5
    with pytest.raises(PtrmError, match=r"--set 'train.lr=\[1': '\[1' is not a YAML value"):
        load_config(path, ["train.lr=[1"])
    # each names the --set it came from, also for a section the --set made (`trian`)
    with pytest.raises(PtrmError, match=r"^--set 'train.lrr=1': config section train: unknown "
                                        r"key\(s\) lrr \(did you mean lr\?\)"):
        load_config(path, ["train.lrr=1"])
    with pytest.raises(PtrmError, match=r"^--set 'trian.lr=1': config: unknown key\(s\) trian "
                                        r"\(did you mean train\?\)"):
        load_config(path, ["trian.lr=1"])


def test_a_wrong_key_or_value_names_its_file_and_line(tmp_path):
    """A misspelt key or a wrong value inside the YAML file named the key but not where it was
    (a YAML syntax error did); a --set override names itself."""
    path = tmp_path / "c.yaml"
    path.write_text("data: {path: d}\ntrain:\n  lr: 1.0e-3\n  ema_rat: 0.9\n"
                    "eval:\n  every_steps: often\n")
    with pytest.raises(PtrmError, match=rf"^{re.escape(str(path))}:4: config section train: "
                                        r"unknown key\(s\) ema_rat \(did you mean ema_rate\?\)"):
        load_config(path)
    path.write_text("data: {path: d}\ntrain:\n  lr: 1.0e-3\neval:\n  every_steps: often\n")
    with pytest.raises(PtrmError, match=rf"^{re.escape(str(path))}:5: config eval.every_steps: "
                                        r"expected a whole number, got 'often'"):
        load_config(path)
    with pytest.raises(PtrmError, match=r"^--set 'eval.every_steps=soon': config "
                                        r"eval.every_steps: expected a whole number"):
        load_config(path, ["eval.every_steps=soon"])
    with pytest.raises(PtrmError, match=r"^config train.lr: expected a number"):  # no file
        load_config(None, base={"train": {"lr": "x"}})
    # a --set replacing a section of the file names itself, not the file's line
    with pytest.raises(PtrmError, match=r"^--set 'train=\{lr: x\}': config train.lr"):
        load_config(path, ["train={lr: x}"])


def test_a_config_without_a_dataset_is_refused_before_any_run_dir(tmp_path, monkeypatch):
    """Without data.path, `ptrm train` took the current folder: a misleading "not a ptrm
    dataset", or, from inside a dataset folder, a run written into it."""
    cfg = tmp_path / "c.yaml"
    cfg.write_text("model:\n  hidden_size: 32\n")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(PtrmError, match="data.path is not set") as e:
        train(cfg)
    assert "--set data.path=DIR" in e.value.hint
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.yaml"]  # no run dir, no lock


def test_a_dataset_not_built_yet_is_named_as_missing(tmp_path, monkeypatch):
    """`ptrm train examples/configs/ppbench-att.yaml` before build-data said "data/ppbench is
    not a ptrm dataset (no meta.json)" of a folder that does not exist."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(PtrmError, match=r"^data.path data/ppbench: no such dataset folder$") as e:
        train(None, base=config(tmp_path / "run", Path("data/ppbench")))
    assert "--out data/ppbench" in e.value.hint and "--set data.path=DIR" in e.value.hint
    assert list(tmp_path.iterdir()) == []  # no run dir, no lock
    with pytest.raises(PtrmError, match=r"/nothing: no such dataset folder$"):
        load_dataset(tmp_path / "nothing")
    (tmp_path / "empty").mkdir()  # a folder that is there but holds no dataset
    with pytest.raises(PtrmError, match=r"empty is not a ptrm dataset \(no meta.json\)"):
        load_dataset(tmp_path / "empty")


def test_config_file_errors_name_the_file_and_line(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("data:\n  path: d\n train: [\n")
    with pytest.raises(PtrmError, match=r"bad.yaml:3:2: not valid YAML: expected <block end>"):
        load_config(bad)
    bad.write_bytes(b"data:\n  path: d\n\xff\n")
    with pytest.raises(PtrmError, match=r"bad.yaml: not UTF-8 text \(byte 16\)"):
        load_config(bad)
    with pytest.raises(PtrmError, match="is a folder, not a YAML config file"):
        load_config(tmp_path)
    bad.write_text("train:\n  lr: 1.0e-3\ndata:\n  path: d\ntrain:\n  max_steps: 5\n")
    with pytest.raises(PtrmError, match=r"bad.yaml:5:1: not valid YAML: key 'train' appears "
                                        "twice"):
        load_config(bad)


def test_atomic_files_get_the_permissions_of_an_ordinary_file(tmp_path):
    """config.resolved.yaml (and eval's report.json) were left 0600, mkstemp's mode."""
    from ptrm_cli.atomic import write_text

    umask = os.umask(0o022)
    try:
        write_text(tmp_path / "config.resolved.yaml", "seed: 0\n")
    finally:
        os.umask(umask)
    assert (tmp_path / "config.resolved.yaml").stat().st_mode & 0o777 == 0o644
    assert [p.name for p in tmp_path.iterdir()] == ["config.resolved.yaml"]


def test_atomic_dir_replaces_a_folder_whole(tmp_path, monkeypatch):
    """A rebuild swaps old and new in one step where the system can (Linux); elsewhere it
    renames twice, and a dataset left in `.NAME.old` by a kill between them is pointed at."""
    from ptrm_cli import atomic
    from ptrm_cli.engine.data import load_dataset

    def build(path, text):
        with atomic.atomic_dir(path) as tmp:
            (tmp / "f.txt").write_text(text)

    build(tmp_path / "ds", "old")
    build(tmp_path / "ds", "new")
    assert (tmp_path / "ds" / "f.txt").read_text() == "new"
    assert [p.name for p in tmp_path.iterdir()] == ["ds"]  # no .tmp or .old left behind
    monkeypatch.setattr(atomic, "_exchange", lambda a, b: False)  # a system without it
    build(tmp_path / "ds", "newer")
    assert (tmp_path / "ds" / "f.txt").read_text() == "newer"
    assert [p.name for p in tmp_path.iterdir()] == ["ds"]
    (tmp_path / "ds").rename(atomic.old_copy(tmp_path / "ds"))  # as a kill mid-swap leaves it
    with pytest.raises(PtrmError, match=r"no such dataset; a rebuild .* left the previous one"):
        load_dataset(tmp_path / "ds")


def test_a_named_validation_split_must_exist(sudoku4, tmp_path):
    with pytest.raises(PtrmError, match=r"data.val_split 'vall'.*has splits train, val "
                                        r"\(did you mean val\?\)"):
        doc = config(tmp_path / "run", sudoku4)
        doc["data"]["val_split"] = "vall"
        train(None, base=doc)


def test_the_resume_hint_repeats_the_overrides():
    from ptrm_cli.engine.train import resume_command

    hint = resume_command("c.yaml", ["data.path=my data", "run_dir=r"], 2, None)
    assert shlex.split(hint) == ["ptrm", "train", "c.yaml", "--set", "data.path=my data",
                                 "--set", "run_dir=r", "--gpus", "2", "--resume"]


def test_group_sampling_takes_one_version_of_every_puzzle_per_epoch():
    # 3 base puzzles; puzzle 0 has 2 versions of 2 examples (puzzle_id 1, 2), puzzles 1 and 2
    # have 3 and 1 one-example versions (puzzle_id 0: every row is its own version)
    puzzle = np.array([0, 0, 0, 0, 1, 1, 1, 2])
    pid = np.array([1, 1, 2, 2, 0, 0, 0, 0])
    n = len(puzzle)
    split = Split(inputs=np.zeros((n, 4), np.uint16), labels=np.zeros((n, 4), np.uint16),
                  type=np.zeros(n, np.uint8), puzzle=puzzle.astype(np.int32),
                  transform=np.zeros(n, np.uint8), puzzle_id=pid.astype(np.int32))
    stream = BatchStream(split, batch_size=3, seed=7, sampling="group")
    assert stream.examples_per_epoch == pytest.approx(3 * 8 / 6)   # groups x examples/version
    for epoch in range(20):
        order = stream.epoch_order(epoch)
        assert sorted(set(puzzle[order])) == [0, 1, 2] and len(order) == 4
        rows0 = sorted(order[puzzle[order] == 0])
        assert rows0 in ([0, 1], [2, 3])                            # one whole version
    a = BatchStream(split, 3, seed=7)
    first = [a.next() for _ in range(5)]
    b = BatchStream(split, 3, seed=7)
    [b.next() for _ in range(2)]
    c = BatchStream(split, 3, seed=7)
    c.load_state(b.state())                                         # resume mid-epoch
    assert all(np.array_equal(x, y) for x, y in zip(first[2:], [c.next() for _ in range(3)]))


@pytest.mark.parametrize("path", sorted((REPO / "examples" / "configs").glob("*.yaml")),
                         ids=lambda p: p.stem)
def test_example_configs_are_valid(path):
    from ptrm_cli.engine.model import TRMConfig, count_parameters

    cfg = load_config(path)
    model = TRMConfig.from_dict({**cfg.model, "vocab_size": 12, "seq_len": 100})
    if cfg.model.get("hidden_size") == 512:   # TRM_REFERENCE.md §1.5, 10x10 grid, V=12
        assert count_parameters(model) == (5_088_258 if model.mlp_t else 6_829_058)
    if path.stem == "ppbench-att":
        assert (model.H_cycles, model.L_cycles, model.puzzle_emb_len) == (3, 6, 16)
        assert cfg.train.global_batch_size == 768 and cfg.train.compile


# -- learning ------------------------------------------------------------------------------------

def test_tiny_trm_learns_4x4_sudoku(sudoku4, tmp_path):
    """The whole recipe (deep supervision, ACT, stablemax, AdamATan2, sign-SGD, EMA) takes a
    tiny TRM-MLP to >= 95% exact accuracy on unseen 4x4 grids, and its Q head learns to tell
    right answers from wrong ones."""
    doc = config(tmp_path / "run", sudoku4, model=TINY_MLP,
                 train=dict(global_batch_size=64, max_steps=250, lr=3e-3, lr_warmup_steps=50,
                            ema_rate=0.95),
                 eval={"every_steps": 250}, checkpoint={"every_steps": None},
                 log={"every": 50})
    t0 = time.perf_counter()
    result = train(None, base=doc)
    wall = time.perf_counter() - t0
    val = result["val"]
    print(f"\n4x4 sudoku: step {result['step']}, val exact {val['exact_accuracy']:.4f}, "
          f"cell {val['cell_accuracy']:.4f}, q-halt {val['q_halt_accuracy']:.4f}, "
          f"{wall:.1f} s")
    assert val["count"] == 256
    assert val["exact_accuracy"] >= 0.95
    assert val["q_halt_accuracy"] >= 0.9
    last_train = log_events(tmp_path / "run", "train")[-1]
    assert last_train["act_steps"] < 3   # ACT: solved puzzles halt early instead of running 4
    best = (tmp_path / "run" / "checkpoints" / "best").resolve()
    assert best.name == f"step_{result['best']['step']}"


def test_final_step_recipe(sudoku4, tmp_path):
    """train.recipe=final_step: every update takes fresh examples, runs 0..warmup_steps_max
    detached supervision steps (drawn per update, the same on a resume) and one with the loss;
    the tiny TRM-MLP learns 4x4 sudoku with it too."""
    from ptrm_cli.engine.train import load_config
    from ptrm_cli.engine.train_config import check_config

    doc = config(tmp_path / "run", sudoku4, model=TINY_MLP,
                 train=dict(global_batch_size=64, max_steps=250, lr=3e-3, lr_warmup_steps=50,
                            ema_rate=0.95, recipe="final_step"),
                 eval={"every_steps": 250}, checkpoint={"every_steps": None},
                 log={"every": 50})
    rows, depths = [], []

    def watch(trainer):
        rows.append(trainer.cur["rows"].clone())
        depths.append(trainer.warmup_steps(trainer.step))

    result = train(None, base=doc, on_step=watch)
    # fresh examples every update: consecutive batches share no slot's example
    assert all(not torch.equal(a, b) for a, b in zip(rows, rows[1:]))
    assert set(depths) == {0, 1, 2, 3}  # 0..halt_max_steps - 1
    assert result["val"]["exact_accuracy"] >= 0.9
    # the depth of update N depends on the run seed and N only: a resume draws the same
    again = Trainer(load_config(None, base={**doc, "run_dir": str(tmp_path / "other")}))
    assert [again.warmup_steps(n + 1) for n in range(len(depths))] == depths
    doc["train"]["warmup_steps_max"] = 0  # no warm-up: every update is a fresh first step
    again = Trainer(load_config(None, base={**doc, "run_dir": str(tmp_path / "zero")}))
    assert {again.warmup_steps(n) for n in range(1, 40)} == {0}
    for bad, why in (({"recipe": "rsm"}, "train.recipe must be one of"),
                     ({"warmup_steps_max": -1}, "train.warmup_steps_max must be >= 0")):
        with pytest.raises(PtrmError, match=why):
            check_config(load_config(None, base={**doc, "train": {**doc["train"], **bad}}))


def test_validation_from_another_dataset(sudoku4, tmp_path):
    """data.val_path: model selection scores the other dataset's val split (here 40 puzzles
    instead of the training dataset's 256); a dataset of other tokens or without the split is
    refused with its path."""
    other = write_sudoku4(tmp_path / "other", n_train=8, n_val=40, seed=3)
    doc = config(tmp_path / "run", sudoku4, train=dict(max_steps=2), eval={"every_steps": 2})
    doc["data"]["val_path"] = str(other)
    assert train(None, base=doc)["val"]["count"] == 40
    odd = write_dataset(tmp_path / "odd", vocab=Vocab("sudoku4-other", VOCAB.tokens), seq_len=16,
                        types=["sudoku"], splits={"val": load_dataset(other).split("val")})
    for path, split, why in ((odd, "val", "val_path .*odd"), (other, "test", "no split 'test'")):
        doc = config(tmp_path / f"run_{split}", sudoku4, train=dict(max_steps=1))
        doc["data"].update(val_path=str(path), val_split=split)
        with pytest.raises(PtrmError, match=why):
            train(None, base=doc)


# -- resume --------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def reference_run(sudoku4, tmp_path_factory):
    """12 uninterrupted steps; checkpoints at 4, 6 (eval), 8, 12."""
    run = tmp_path_factory.mktemp("ref") / "run"
    train(None, base=config(run, sudoku4))
    return run


def test_killed_run_resumes_exactly(sudoku4, reference_run, tmp_path):
    run = tmp_path / "run"

    def kill_at_10(trainer):
        if trainer.step == 10:
            raise RuntimeError("killed")  # no chance to save: like SIGKILL

    with pytest.raises(RuntimeError, match="killed"):
        train(None, base=config(run, sudoku4), on_step=kill_at_10)
    assert (run / "checkpoints" / "last").resolve().name == "step_8"
    result = train(None, base=config(run, sudoku4), resume=True)
    assert result["step"] == 12
    assert_same_state(final_state(run), final_state(reference_run))
    # the loss curve continues where it was: the same values as the uninterrupted run
    ref = {r["step"]: r["loss"] for r in log_events(reference_run, "train")}
    starts = log_events(run, "start")
    assert [s["step"] for s in starts] == [0, 8]
    after = [r for r in log_events(run, "train") if r["time"] >= starts[1]["time"]]
    assert [r["step"] for r in after] == [10, 12]
    assert all(r["loss"] == ref[r["step"]] for r in after)


def test_ctrl_c_saves_and_resumes_exactly(sudoku4, reference_run, tmp_path):
    run = tmp_path / "run"

    def ctrl_c_at_5(trainer):
        if trainer.step == 5:
            os.kill(os.getpid(), signal.SIGINT)

    with pytest.raises(Stop) as stop:
        train(None, base=config(run, sudoku4), on_step=ctrl_c_at_5)
    assert stop.value.exact  # optimizer state and carry saved: a plain --resume continues it
    assert (run / "checkpoints" / "last").resolve().name == "step_5"  # saved at that step
    assert train(None, base=config(run, sudoku4), resume=True)["step"] == 12
    assert_same_state(final_state(run), final_state(reference_run))
    # stopped between two log lines (every 2): the line at step 6 still covers updates 5 and
    # 6 (it covered only 6, so the curve differed from the uninterrupted run's there)
    ref = {r["step"]: r for r in log_events(reference_run, "train")}
    after = [r for r in log_events(run, "train")
             if r["time"] >= log_events(run, "start")[1]["time"]]
    assert [r["step"] for r in after] == [6, 8, 10, 12]
    for r in after:
        assert {k: v for k, v in r.items() if k in METRIC_KEYS} == \
            {k: v for k, v in ref[r["step"]].items() if k in METRIC_KEYS}, r["step"]


def test_ctrl_c_in_the_last_update_ends_the_run_as_finished(sudoku4, tmp_path):
    """It raised Stop (exit 130, "continue with --resume") for a run with nothing left to
    train, and log.jsonl got no `end` event."""
    run = tmp_path / "run"

    def ctrl_c_at_12(trainer):
        if trainer.step == 12:
            os.kill(os.getpid(), signal.SIGINT)

    result = train(None, base=config(run, sudoku4), on_step=ctrl_c_at_12)
    assert result["step"] == 12 and result["checkpoint"].endswith("step_12")
    assert [e["step"] for e in log_events(run, "end")] == [12]
    assert not log_events(run, "interrupted")


def test_an_ignored_sigint_stays_ignored(sudoku4, tmp_path):
    """A script's background job (`ptrm train ... &`) starts with SIGINT ignored; the trainer
    put its own handler in, so a Ctrl-C meant for the script's foreground stopped the run."""
    before = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        result = train(None, base=config(tmp_path / "run", sudoku4),
                       on_step=lambda t: t.step == 5 and os.kill(os.getpid(), signal.SIGINT))
        assert result["step"] == 12
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN  # left as it was
    finally:
        signal.signal(signal.SIGINT, before)


def test_ctrl_c_without_optimizer_state_says_to_resume_weights_only(sudoku4, tmp_path,
                                                                    monkeypatch):
    """The hint after Ctrl-C named a plain --resume, which then refused the checkpoint."""
    from typer.testing import CliRunner

    from ptrm_cli.app import app
    from ptrm_cli.engine import train as engine_train

    run = tmp_path / "run"
    lean = config(run, sudoku4, checkpoint={"optimizer": False, "carry": False})
    with pytest.raises(Stop) as stop:
        train(None, base=lean, on_step=lambda t: t.step == 3 and os.kill(os.getpid(),
                                                                         signal.SIGINT))
    assert not stop.value.exact

    def stopped(*args, **kw):
        raise stop.value

    monkeypatch.setattr(engine_train, "train", stopped)
    r = CliRunner().invoke(app, ["train", "c.yaml", "--set", "train.lr=1e-3"])
    assert r.exit_code == 130
    assert "continue with: ptrm train c.yaml --set train.lr=1e-3 --set " \
        "resume.weights_only=true --resume" in " ".join(r.output.split())


METRIC_KEYS = ("count", "loss", "lm_loss", "q_halt_loss", "exact_accuracy", "cell_accuracy",
               "q_halt_accuracy", "act_steps")


def test_train_metrics_of_a_window_where_no_slot_halted_are_null(sudoku4, tmp_path):
    """The Q head starts at zero, so with halt_max_steps 4 and no exploration no slot halts
    before its 4th step: those windows averaged over nothing and read 0.0 (as if every halted
    slot were wrong)."""
    run = tmp_path / "run"
    model = {**TINY_ATT, "halt_max_steps": 4, "halt_exploration_prob": 0.0}
    train(None, base=config(run, sudoku4, model=model, train={"max_steps": 4},
                            log={"every": 1}, eval={"every_steps": 100}))
    lines = log_events(run, "train")
    assert [r["count"] for r in lines[:3]] == [0, 0, 0] and lines[3]["count"] == 16
    assert all(r[k] is None for r in lines[:3]
               for k in ("exact_accuracy", "cell_accuracy", "q_halt_accuracy", "act_steps"))
    assert lines[3]["act_steps"] == 4.0 and lines[0]["loss"] > 0


def test_interrupted_checkpoint_write_keeps_the_previous_one(sudoku4, reference_run, tmp_path,
                                                               monkeypatch):
    import ptrm_cli.engine.train_checkpoint as engine

    run = tmp_path / "run"
    real = engine.write_train_state

    def dies_half_way(trainer, folder, *rest):
        if trainer.step == 8:
            real(trainer, folder, *rest)
            (folder / "train_state.json").write_text("{trunc")
            raise KeyboardInterrupt  # killed inside the write
        real(trainer, folder, *rest)

    monkeypatch.setattr(engine, "write_train_state", dies_half_way)
    with pytest.raises(KeyboardInterrupt):
        train(None, base=config(run, sudoku4))
    monkeypatch.setattr(engine, "write_train_state", real)
    ckpts = run / "checkpoints"
    assert (ckpts / "last").resolve().name == "step_6"
    assert not (ckpts / "step_8").exists()
    assert not list(ckpts.glob(".step_8*"))  # the temporary folder is gone too
    (ckpts / ".step_9.x.tmp").mkdir()        # what a SIGKILL mid-write would leave
    assert train(None, base=config(run, sudoku4), resume=True)["step"] == 12
    assert not (ckpts / ".step_9.x.tmp").exists()
    assert_same_state(final_state(run), final_state(reference_run))


def test_warm_start_needs_only_weights(sudoku4, reference_run, tmp_path):
    """The small state (model.safetensors + train_state.*) continues at the same step with
    fresh optimizer moments; an exact resume without the optimizer file says what to do."""
    src = reference_run / "checkpoints" / "step_8"
    run = tmp_path / "run"
    result = train(None, base=config(run, sudoku4), init_from=str(src))
    assert result["step"] == 12 and log_events(run, "start")[0]["step"] == 8
    state = final_state(run)
    ref = final_state(reference_run)
    assert not torch.equal(state["optimizer.L_level.layers.0.mlp.down_proj.weight.exp_avg"],
                           ref["optimizer.L_level.layers.0.mlp.down_proj.weight.exp_avg"])
    # a copy with only the carry-able files: exact resume refuses, weights_only works
    small = tmp_path / "small"
    (small / "checkpoints" / "step_8").mkdir(parents=True)
    for f in src.iterdir():
        if not f.name.startswith(("optimizer", "carry")):
            (small / "checkpoints" / "step_8" / f.name).write_bytes(f.read_bytes())
    with pytest.raises(PtrmError, match="cannot be resumed exactly"):
        train(None, base=config(small, sudoku4), resume=True)
    # the refusal of a changed recipe says what changed
    changed = config(small, sudoku4)
    changed["train"]["global_batch_size"] = 8
    with pytest.raises(PtrmError, match="global_batch_size was 16, now 8"):
        train(None, base=changed, resume=True)
    result = train(None, base=config(small, sudoku4, resume={"weights_only": True,
                                                             "rewarmup_steps": 2}),
                   resume=True)
    assert result["step"] == 12


def test_a_lean_copy_in_bf16_warm_starts_at_its_step(sudoku4, reference_run, tmp_path):
    """write_lean keeps what a warm start needs at half the weights' size: floating tensors in
    bf16 (integers as they were), the config and the step; --init-from it continues there."""
    from safetensors.torch import load_file

    from ptrm_cli.engine.checkpoint import load_checkpoint
    from ptrm_cli.engine.train_checkpoint import write_lean

    src = reference_run / "checkpoints" / "step_8"
    lean = write_lean(src, tmp_path / "lean")
    assert sorted(p.name for p in lean.iterdir()) == ["config.json", "model.safetensors",
                                                      "train_state.json"]
    full, small = load_file(str(src / "model.safetensors")), load_file(
        str(lean / "model.safetensors"))
    assert small.keys() == full.keys()
    for k, w in full.items():
        assert small[k].dtype == (torch.bfloat16 if w.is_floating_point() else w.dtype), k
        assert torch.equal(small[k], w.to(small[k].dtype)), k
    assert (lean / "model.safetensors").stat().st_size < 0.6 * (
        src / "model.safetensors").stat().st_size
    run = tmp_path / "run"
    assert train(None, base=config(run, sudoku4), init_from=str(lean))["step"] == 12
    assert log_events(run, "start")[0]["step"] == 8
    # a checkpoint without train state (a run's `best`): its lean copy is a model to evaluate
    best = tmp_path / "best"
    shutil.copytree(src, best, ignore=shutil.ignore_patterns("train_state*", "optimizer*",
                                                             "carry*"))
    model, _, _ = load_checkpoint(write_lean(best, tmp_path / "lean_best"))
    assert sorted(p.name for p in (tmp_path / "lean_best").iterdir()) == [
        "config.json", "model.safetensors"]
    umask = os.umask(0)
    os.umask(umask)
    for f in (tmp_path / "lean_best").iterdir():  # not safetensors' 0600: others may read it
        assert f.stat().st_mode & 0o777 == 0o666 & ~umask, f
    for k, w in model.state_dict().items():
        assert torch.equal(w, full[k].to(small[k].dtype).to(w.dtype)), k


def _cut(f: Path) -> None:
    f.write_bytes(f.read_bytes()[:100])


@pytest.mark.parametrize("damage, message, warm_too", [
    (lambda d: _cut(d / "model.safetensors"), "is corrupt or not a safetensors file", True),
    # resume skips a checkpoint without its weights as incomplete; a warm start names them
    (lambda d: (d / "model.safetensors").unlink(), "no complete checkpoint|has no model.saf", True),
    (lambda d: (d / "config.json").write_text("{}"), "format None is not", True),
    (lambda d: (d / "config.json").write_text("{cut"), "is not readable JSON", True),
    (lambda d: (d / "train_state.json").write_text("[]"), "expected a JSON object", True),
    (lambda d: _cut(d / "optimizer.safetensors"), "optimizer.safetensors is corrupt", False),
])
def test_a_damaged_checkpoint_is_one_message_on_resume_and_warm_start(
        sudoku4, reference_run, tmp_path, damage, message, warm_too):
    """A checkpoint cut short on its way between machines (they travel in parts) was a
    traceback from --resume and --init-from, where `ptrm eval` names the file. (A warm start
    does not read the optimizer's moments.)"""
    run = tmp_path / "run"
    step = run / "checkpoints" / "step_8"
    shutil.copytree(reference_run / "checkpoints" / "step_8", step)
    (run / "checkpoints" / "last").symlink_to("step_8")
    damage(step)
    with pytest.raises(PtrmError, match=message):
        train(None, base=config(run, sudoku4), resume=True)
    if warm_too:
        with pytest.raises(PtrmError, match=message):
            train(None, base=config(tmp_path / "warm", sudoku4), init_from=str(step))
    with pytest.raises(PtrmError, match="no such file or directory"):
        train(None, base=config(tmp_path / "w2", sudoku4), init_from=str(tmp_path / "nope"))
    (run / "checkpoints" / "best").symlink_to("step_4")  # its folder removed by hand
    with pytest.raises(PtrmError, match="best is a link to step_4, which no longer exists"):
        train(None, base=config(tmp_path / "w3", sudoku4),
              init_from=str(run / "checkpoints" / "best"))


def test_a_warm_start_on_other_data_forgets_the_best_so_far(sudoku4, reference_run, tmp_path,
                                                            capsys):
    """The best validation score is kept on a weights-only resume of the same data, and
    forgotten on other data: its checkpoint was chosen on another validation split. A resumed
    run with nothing left to train says so; a warm start at or past train.max_steps is refused
    before its run_dir is written (it said "continuing at step 12 of 5", exited 0 and left a
    run_dir of a config and a log)."""
    from ptrm_cli.engine.sudoku4 import write_sudoku4

    def resumed(data, steps):
        run = tmp_path / f"r{steps}{data.name}"
        (run / "checkpoints").mkdir(parents=True)
        src = reference_run / "checkpoints" / "step_12"
        shutil.copytree(src, run / "checkpoints" / "step_12")
        (run / "checkpoints" / "last").symlink_to("step_12")
        doc = config(run, data, train={"max_steps": steps}, resume={"weights_only": True})
        return train(None, base=doc, resume=True)

    best = json.loads((reference_run / "checkpoints" / "step_12" / "train_state.json")
                      .read_text())["best"]
    assert best is not None
    assert resumed(sudoku4, 14)["best"]["step"] in (best["step"], 14)
    # other data: the fingerprint is meta.json's, which counts the rows (build-data's also
    # hashes its sources)
    other = write_sudoku4(tmp_path / "other", n_train=1000, seed=3)
    assert resumed(other, 14)["best"]["step"] == 14      # measured again, on its validation
    capsys.readouterr()
    assert resumed(sudoku4, 12)["step"] == 12
    assert "nothing to train: the run is at step 12 and train.max_steps is 12" in \
        capsys.readouterr().err
    # nothing trained and nothing written: no checkpoint to name (it named step_0)
    zero = train(None, base=config(tmp_path / "zero", sudoku4, train={"max_steps": 0}))
    assert zero["checkpoint"] is None
    step_12 = str(reference_run / "checkpoints" / "step_12")
    for steps in (5, 12):
        with pytest.raises(PtrmError) as e:
            train(None, base=config(tmp_path / f"past{steps}", sudoku4,
                                    train={"max_steps": steps}), init_from=step_12)
        assert f"train.max_steps is {steps}, but --init-from {step_12} is at step 12" \
            in str(e.value)
        assert "raise train.max_steps above 12" in e.value.hint
        assert "an earlier checkpoint" in e.value.hint
        assert not (tmp_path / f"past{steps}").exists()


def test_a_damaged_dataset_is_one_message(sudoku4, tmp_path):
    """A missing or unreadable array file, arrays that disagree, or a broken puzzles.jsonl:
    `damaged dataset` naming the file, and how to rebuild, not a traceback."""
    import shutil

    def broken(name, damage):
        d = tmp_path / name
        shutil.copytree(sudoku4, d)
        damage(d / "train")
        return d

    cases = {"missing": lambda t: (t / "labels.npy").unlink(),
             "garbage": lambda t: (t / "inputs.npy").write_bytes(b"not an array"),
             "rows": lambda t: np.save(t / "labels.npy", np.zeros((3, 16), np.uint16)),
             "width": lambda t: np.save(t / "inputs.npy", np.zeros((2000, 20), np.uint16)),
             "jsonl": lambda t: (t / "puzzles.jsonl").write_text("{not json\n")}
    for name, damage in cases.items():
        with pytest.raises(PtrmError, match="damaged dataset") as e:
            load_dataset(broken(name, damage))
        assert "ptrm build-data" in e.value.hint, name


def test_warm_start_from_an_official_step_file(sudoku4, reference_run, tmp_path):
    """`--init-from run/step_N` (an official TRM file, settings in the all_config.yaml beside
    it) and `--init-from` its `ptrm convert` without a family (the placeholder token table)
    were refused ("no config.json", "uses the 'trm-v10' vocabulary"); both now take the
    dataset's table and start the same run."""
    import yaml

    from ptrm_cli.engine.checkpoint import (import_official, load_checkpoint,
                                            placeholder_vocab, save_checkpoint)

    model, vocab, _ = load_checkpoint(reference_run / "checkpoints" / "step_8")
    official = tmp_path / "official"
    official.mkdir()
    torch.save({f"_orig_mod.model.inner.{k}": v for k, v in model.state_dict().items()},
               official / "step_8")
    arch = {k: v for k, v in model.config.to_dict().items()
            if k not in ("vocab_size", "forward_dtype")}
    (official / "all_config.yaml").write_text(yaml.safe_dump({"arch": {"name": "trm", **arch}}))
    converted, _, meta = import_official(official / "step_8")
    assert len(vocab) == len(placeholder_vocab(len(vocab)))
    save_checkpoint(tmp_path / "converted", converted, placeholder_vocab(len(vocab)), meta)
    # a TRM-Att run's yaml need not say its length, nor do its weights: the dataset's is taken
    lengthless = tmp_path / "lengthless"
    lengthless.mkdir()
    (lengthless / "step_8").write_bytes((official / "step_8").read_bytes())
    (lengthless / "all_config.yaml").write_text(yaml.safe_dump(
        {"arch": {"name": "trm", **{k: v for k, v in arch.items() if k != "seq_len"}}}))
    with pytest.raises(PtrmError, match="do not say seq_len"):
        import_official(lengthless / "step_8")

    runs = []
    for name, source in (("a", official / "step_8"), ("b", tmp_path / "converted"),
                         ("c", lengthless / "step_8")):
        run = tmp_path / name
        assert train(None, base=config(run, sudoku4), init_from=str(source))["step"] == 12
        assert log_events(run, "start")[0]["step"] == 0  # no train_state: a new run
        runs.append(final_state(run))
    assert_same_state(runs[0], runs[1])
    assert_same_state(runs[0], runs[2])
    with pytest.raises(PtrmError, match="no config.json") as e:
        train(None, base=config(tmp_path / "d", sudoku4), init_from=str(tmp_path))
    assert "official TRM step_N file" in e.value.hint


def test_a_warm_start_compares_weights_not_settings_they_do_not_fix():
    """An imported TRM-MLP records num_heads as unused and its expansion as the first that
    fits the weights: neither may refuse a config that builds the same weights."""
    from ptrm_cli.engine.model import TRMConfig
    from ptrm_cli.engine.train_checkpoint import _differences

    mine = TRMConfig(vocab_size=11, seq_len=16, **{**TINY_MLP, "num_heads": 2,
                                                   "expansion": 2.0})
    same = dataclasses.replace(mine, num_heads=1, expansion=4.0, forward_dtype="bfloat16")
    assert mine.inter_size == same.inter_size and mine.inter_size_t == same.inter_size_t
    assert _differences(same, mine, warm=True) == {}
    assert set(_differences(same, mine, warm=False)) == {"num_heads", "expansion",
                                                         "forward_dtype"}
    big = dataclasses.replace(mine, hidden_size=384)  # where expansions give other widths
    wider = dataclasses.replace(big, expansion=4.0)
    assert wider.inter_size != big.inter_size
    assert set(_differences(wider, big, warm=True)) == {"expansion"}
    att = TRMConfig(vocab_size=11, seq_len=16, **TINY_ATT)
    assert set(_differences(dataclasses.replace(att, num_heads=1), att, warm=True)) == \
        {"num_heads"}  # attention heads matter where there is attention


def test_run_dir_compile_mode_and_init_from_mistakes_are_one_message(sudoku4, reference_run,
                                                                   tmp_path, capsys):
    """A run_dir that is a dataset or a checkpoint folder got the run written into it; an
    unknown train.compile_mode was torch's RuntimeError, a traceback; --init-from a run folder
    did not say which of its checkpoints to take; a train.epochs too small for one update was
    reported as "train.max_steps is 0"."""
    data = write_sudoku4(tmp_path / "data", n_train=64, n_val=16)
    ckpt = tmp_path / "step_12"
    shutil.copytree(reference_run / "checkpoints" / "step_12", ckpt)
    for folder, what in ((data, "a dataset"), (ckpt, "a checkpoint")):
        before = sorted(p.name for p in folder.iterdir())
        with pytest.raises(PtrmError, match=f"run_dir {folder} is {what} folder"):
            train(None, base=config(folder, data))
        assert sorted(p.name for p in folder.iterdir()) == before
    with pytest.raises(PtrmError, match="config train.compile_mode 'fast'"):
        train(None, base=config(tmp_path / "c", data,
                                train={"compile": True, "compile_mode": "fast"}))
    with pytest.raises(PtrmError, match="is not a ptrm checkpoint folder") as e:
        train(None, base=config(tmp_path / "w", data), init_from=str(reference_run))
    assert f"--init-from {reference_run / 'checkpoints' / 'best'}" in e.value.hint
    capsys.readouterr()
    train(None, base=config(tmp_path / "e", data, train={"max_steps": None, "epochs": 0.1}))
    assert "train.epochs 0.1 x 64 examples / global batch 16 = 0 updates" in \
        capsys.readouterr().err


def test_exact_resume_refuses_another_training_split_or_other_rows(sudoku4, reference_run,
                                                                   tmp_path):
    """Exact resume compared meta.json's fingerprint only: a run resumed on another split
    (data.train_split) or on a hand-written dataset rebuilt with other puzzles of the same
    counts (the same meta.json) went on from the saved data position as if nothing changed."""
    run = tmp_path / "run"
    shutil.copytree(reference_run / "checkpoints" / "step_8", run / "checkpoints" / "step_8")
    other = write_sudoku4(tmp_path / "other", seed=1)
    assert (other / "meta.json").read_bytes() == (sudoku4 / "meta.json").read_bytes()
    val = config(run, sudoku4)
    val["data"]["train_split"] = "val"
    for doc, what in ((val, "training split, .*: train_split was train, now val"),
                      (config(run, other), "the training split's rows differ")):
        with pytest.raises(PtrmError, match=what) as e:
            train(None, base=doc, resume=True)
        assert "resume.weights_only=true" in e.value.hint
    assert train(None, base=config(run, other, resume={"weights_only": True}),
                 resume=True)["step"] == 12


def test_an_abort_without_saving_says_where_the_run_can_go_on(sudoku4, reference_run, tmp_path,
                                                             monkeypatch):
    """A second Ctrl-C (or one before training began) said only "interrupted": not whether
    a checkpoint was left, nor the command that continues from it."""
    import yaml
    from typer.testing import CliRunner

    from ptrm_cli.app import app
    from ptrm_cli.engine import train as engine_train

    def abort(*args, **kw):
        raise KeyboardInterrupt

    monkeypatch.setattr(engine_train, "train", abort)
    cfg = tmp_path / "c.yaml"
    cfg.write_text(yaml.safe_dump(config(tmp_path / "run", sudoku4)))
    r = CliRunner().invoke(app, ["train", str(cfg)])
    assert r.exit_code == 130
    assert "aborted without saving; no checkpoint was written" in " ".join(r.output.split())
    step = tmp_path / "run" / "checkpoints" / "step_8"
    shutil.copytree(reference_run / "checkpoints" / "step_8", step)
    r = CliRunner().invoke(app, ["train", str(cfg), "--set", "train.max_steps=20"])
    assert r.exit_code == 130
    assert f"the newest checkpoint is {step}; continue with: " + shlex.join(
        ["ptrm", "train", str(cfg), "--set", "train.max_steps=20", "--resume"]) in \
        " ".join(r.output.split())


def test_new_run_refuses_a_used_run_dir(sudoku4, reference_run):
    with pytest.raises(PtrmError, match="already has checkpoints"):
        train(None, base=config(reference_run, sudoku4))


# -- several processes ---------------------------------------------------------------------------

def test_ddp_two_gloo_processes_match_one(sudoku4, tmp_path):
    """torchrun, 2 CPU processes (gloo), the global batch split in two: both ranks hold the
    same weights (checked at every save) and they match a single process's run."""
    import yaml

    single, multi = tmp_path / "single", tmp_path / "multi"
    over = dict(train={"max_steps": 6}, checkpoint={"every_steps": None},
                eval={"every_steps": 100})
    train(None, base=config(single, sudoku4, **over))
    cfg_path = tmp_path / "ddp.yaml"
    cfg_path.write_text(yaml.safe_dump(config(multi, sudoku4, **over)))
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(REPO)}
    from ptrm_cli.engine import launch

    proc = subprocess.run(  # the launch `ptrm train --gpus 2` makes (engine/launch.py)
        launch.command(2, "ptrm_cli.engine.train", [str(cfg_path)]),
        # generous: two fresh interpreters importing torch on a busy 2-core box took > 120 s
        env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert [s["world_size"] for s in log_events(multi, "start")] == [2]  # rank 0 logs, once
    a, b = final_state(single), final_state(multi)
    for k in a:
        if k.startswith(("ema.", "train_state.")):
            torch.testing.assert_close(a[k], b[k], rtol=1e-4, atol=1e-5, msg=k)
    assert torch.equal(a["carry.data.rows"], b["carry.data.rows"])  # same slots, same order


def test_ddp_reduces_every_gradient_in_one_bucket(tmp_path):
    """TRM's gradients are all final only at the end of backward (shared weights), so DDP gets
    one bucket: one all-reduce per update, even for a model larger than DDP's default 25 MB."""
    import torch.distributed as dist

    from ptrm_cli.engine.train_dist import DistInfo, wrap_ddp

    dist.init_process_group("gloo", init_method=f"file://{tmp_path / 'pg'}", rank=0,
                            world_size=1)
    try:
        module = torch.nn.Sequential(*[torch.nn.Linear(1024, 1024) for _ in range(8)])  # 34 MB
        ddp = wrap_ddp(module, DistInfo(0, 1, 0, torch.device("cpu"), None))
        for _ in range(3):  # DDP rebuilds its buckets after the first update
            ddp(torch.randn(2, 1024)).sum().backward()
        logged = ddp._get_ddp_logging_data()
        grad_bytes = sum(p.numel() * p.element_size() for p in module.parameters())
        assert logged["num_buckets_reduced"] == 1
        assert logged["rebuilt_bucket_sizes"] == str(grad_bytes)
    finally:
        dist.destroy_process_group()


def test_ddp_leaves_the_compiled_step_in_one_graph(tmp_path, monkeypatch):
    """Dynamo cuts compiled code run inside DDP into one graph per gradient bucket (its
    DDPOptimizer). TRM's gradients are final only at the end of backward, so the cuts bought
    no overlap: on 4 x H100 the step became 7 graphs and lost 1.5 ms an update. wrap_ddp
    keeps it one graph, as on one card."""
    import torch.distributed as dist

    from ptrm_cli.engine.train_dist import DistInfo, wrap_ddp

    graphs = []

    def backend(gm, example_inputs):  # counts the graphs Dynamo hands over
        graphs.append(gm)
        return gm.forward

    class Step(torch.nn.Module):  # 6 MB of weights used twice, as TRM reuses its block
        def __init__(self):
            super().__init__()
            self.layers = torch.nn.Sequential(*[torch.nn.Linear(512, 512) for _ in range(6)])
            self.step = torch.compile(self.recurse, backend=backend)

        def recurse(self, x):
            return self.layers(self.layers(x))

        def forward(self, x):
            return self.step(x)

    torch._dynamo.reset()
    # Dynamo's default, whatever an earlier wrap_ddp in this process set (it is process-wide)
    monkeypatch.setattr(torch._dynamo.config, "optimize_ddp", True)
    dist.init_process_group("gloo", init_method=f"file://{tmp_path / 'pg'}", rank=0,
                            world_size=1)
    try:
        ddp = wrap_ddp(Step(), DistInfo(0, 1, 0, torch.device("cpu"), None))
        for _ in range(2):
            ddp(torch.randn(4, 512)).sum().backward()
    finally:
        dist.destroy_process_group()
        torch._dynamo.reset()
    assert len(graphs) == 1


# -- the command ---------------------------------------------------------------------------------

def test_ptrm_train_command(sudoku4, tmp_path):
    import yaml
    from typer.testing import CliRunner

    from ptrm_cli.app import app

    cfg_path = tmp_path / "tiny.yaml"
    doc = config(tmp_path / "run", sudoku4)
    cfg_path.write_text(yaml.safe_dump(doc))
    runner = CliRunner()
    res = runner.invoke(app, ["train", str(cfg_path), "--set", "train.max_steps=3"])
    assert res.exit_code == 0, res.output
    assert "trained to step 3" in res.output
    run = tmp_path / "run"
    assert (run / "config.resolved.yaml").exists()
    resolved = yaml.safe_load((run / "config.resolved.yaml").read_text())
    assert resolved["model"]["vocab_size"] == len(VOCAB) and resolved["model"]["seq_len"] == 16
    model_dir = (run / "checkpoints" / "last").resolve()
    from ptrm_cli.engine.checkpoint import load_checkpoint

    model, vocab, meta = load_checkpoint(model_dir)   # what `ptrm solve` reads: EMA weights
    assert vocab == VOCAB and meta["steps"] == 3
    res = runner.invoke(app, ["train", str(cfg_path), "--set", "train.bogus=1"])
    assert res.exit_code == 2 and "unknown key" in res.output
    res = runner.invoke(app, ["train", str(cfg_path), "--set", f"run_dir={tmp_path / 'none'}",
                              "--resume"])
    assert res.exit_code == 2 and "nothing to resume" in res.output
    assert load_dataset(sudoku4).vocab == VOCAB


@pytest.mark.parametrize("error, message", [
    (RuntimeError("[enforce fail at alloc_cpu.cpp:127] DefaultCPUAllocator: can't allocate "
                  "memory: you tried to allocate 800000000000 bytes."), "out of memory on cpu"),
    (RuntimeError("a bug, not memory"), None),
])
def test_ptrm_train_out_of_memory_is_one_message(sudoku4, tmp_path, monkeypatch, error, message):
    """A batch too large for the machine was the allocator's traceback; other errors stay
    tracebacks (they are bugs)."""
    import yaml
    from typer.testing import CliRunner

    from ptrm_cli.app import app
    from ptrm_cli.engine import train as engine_train

    def run(*args, **kwargs):
        raise error

    monkeypatch.setattr(engine_train, "train", run)
    cfg_path = tmp_path / "tiny.yaml"
    cfg_path.write_text(yaml.safe_dump(config(tmp_path / "run", sudoku4)))
    res = CliRunner().invoke(app, ["train", str(cfg_path), "--device", "cpu"])
    if message is None:
        assert res.exception is error
    else:
        assert res.exit_code == 2 and message in res.output
        assert "train.global_batch_size" in " ".join(res.output.split())


def test_an_empty_validation_split_is_no_evaluation(tmp_path, capsys):
    """`build-data --val-per-type 0` writes an empty val split: it was 'evaluated' to 0.0000
    (n=0) and `best` chosen from that."""
    full = load_dataset(write_sudoku4(tmp_path / "full", n_train=64, n_val=16))
    empty = Split(inputs=np.zeros((0, 16), np.uint16), labels=np.zeros((0, 16), np.uint16),
                  type=np.zeros(0, np.uint8), puzzle=np.zeros(0, np.int32),
                  transform=np.zeros(0, np.uint8), puzzle_id=np.zeros(0, np.int32), puzzles=[])
    data = write_dataset(tmp_path / "noval", vocab=VOCAB, seq_len=16, types=["sudoku"],
                         splits={"train": full.split("train"), "val": empty})
    run = tmp_path / "run"
    result = train(None, base=config(run, data, train={"max_steps": 4},
                                     eval={"every_steps": 2}))
    assert result["best"] is None and not result["val"]
    assert not log_events(run, "eval") and not (run / "checkpoints" / "best").exists()
    assert "validation split 'val' is empty: no evaluation" in capsys.readouterr().err


@pytest.mark.parametrize("given, passed", [([], "cuda"), (["--device", "cuda:0"], "cuda:0"),
                                           (["--device", "cpu"], "cpu")])
def test_gpus_passes_the_device_to_every_process(tmp_path, monkeypatch, given, passed):
    """`--gpus 4` used to drop --device, so a config saying `device: cpu` trained four CPU
    processes on a GPU machine (seen on 4 x H200, session 11)."""
    import torch
    from typer.testing import CliRunner

    from ptrm_cli.app import app
    from ptrm_cli.engine import launch

    launched = []
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 0 if passed == "cpu" else 4)
    monkeypatch.setattr(launch, "supervise", lambda cmd, env: launched.append(cmd) or 0)
    res = CliRunner().invoke(app, ["train", "cfg.yaml", "--gpus", "4", *given])
    assert res.exit_code == 0, res.output
    (cmd,) = launched
    tail = cmd[cmd.index("ptrm_cli.engine.train") + 1:]
    assert tail[:3] == ["cfg.yaml", "--device", passed]


def test_gpus_beyond_the_machine_is_refused(monkeypatch):
    import torch
    from typer.testing import CliRunner

    from ptrm_cli.app import app

    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    res = CliRunner().invoke(app, ["train", "cfg.yaml", "--gpus", "4"])
    assert res.exit_code != 0 and "this machine has 2 CUDA device(s)" in res.output
    # one GPU on a machine with none: the same message (it used to blame `--device cuda`)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 0)
    res = CliRunner().invoke(app, ["train", "cfg.yaml", "--gpus", "1"])
    assert res.exit_code == 2 and "--gpus 1: this machine has 0 CUDA device(s)" in res.output


def test_the_toy_task_command_writes_the_tiny_recipes_dataset(tmp_path, capsys):
    """`python -m ptrm_cli.engine.sudoku4 OUT`: what docs/TRAINING.md runs before tiny-cpu.yaml
    (the docs used to point at this test file for it)."""
    from ptrm_cli.engine import sudoku4

    assert sudoku4.main([str(tmp_path / "s4")]) == 0
    ds = load_dataset(tmp_path / "s4")
    assert ds.vocab == VOCAB and len(ds.splits["train"]) == 2000 and len(ds.splits["val"]) == 256
    train_rows = {tuple(r) for r in np.asarray(ds.splits["train"].labels)}
    assert not train_rows & {tuple(r) for r in np.asarray(ds.splits["val"].labels)}  # unseen
    assert sudoku4.main([]) == 2 and "usage" in capsys.readouterr().err
    assert "data/sudoku4" in (REPO / "examples/configs/tiny-cpu.yaml").read_text()


def test_a_cuda_graphed_evaluation_copies_each_carry_out(sudoku4, tmp_path):
    """CUDA graphs (train.compile_mode reduce-overhead) write each replay's outputs into the same
    buffers; the evaluation feeds step t's carry into step t + 1, so it must copy it out first
    (on the device, torch raised "accessing tensor output of CUDAGraphs that has been
    overwritten"). A stand-in graph that poisons its output buffers at every call checks this
    on the CPU. (The trainer also copies the training carry before evaluating, a precaution
    against the two graphs sharing memory that this stand-in does not model.)"""
    trainer = Trainer(load_config(None, base=config(tmp_path / "run", sudoku4,
                                                    model=TINY_MLP)))
    for _ in range(20):
        trainer.train_step()
    plain = trainer.evaluate()
    step, buffers = trainer.eval_step, {}

    def replay(carry, x):
        for b in buffers.values():   # a replay overwrites what the last one returned...
            b.fill_(float("nan"))
        out = step(carry, x)
        for name, t in zip(Carry._fields, out.carry):   # ...and returns its outputs there
            buffers.setdefault(name, torch.empty_like(t)).copy_(t)
        return out._replace(carry=Carry(buffers["y"], buffers["z"]))

    trainer.eval_step = replay
    trainer.graphed = True
    assert trainer.evaluate() == plain
    trainer.graphed = False   # without the copies the poisoned buffers are read back
    assert trainer.evaluate() != plain


def test_checkpoints_say_what_the_model_trained_on(sudoku4, tmp_path):
    """A dataset that records its kept sizes (`ptrm build-data` does) gives every checkpoint a
    `meta.trained_on` ({type: size}), which `ptrm solve` reads to note puzzles outside it; one
    that does not (this hand-made 4x4 set as written) gives none."""
    import shutil

    plain = train(None, base=config(tmp_path / "plain", sudoku4, model=TINY_MLP,
                                    train={"max_steps": 2}, eval={"every_steps": None}))
    meta = json.loads((Path(plain["checkpoint"]) / "config.json").read_text())["meta"]
    assert "trained_on" not in meta
    built = tmp_path / "built"
    shutil.copytree(sudoku4, built)
    m = json.loads((built / "meta.json").read_text())
    m["builder"] = {"tool": "ptrm build-data", "options": {"sizes": {"*": "4x4"}}}
    (built / "meta.json").write_text(json.dumps(m))
    run = train(None, base=config(tmp_path / "run", built, model=TINY_MLP,
                                  train={"max_steps": 2}, eval={"every_steps": None}))
    meta = json.loads((Path(run["checkpoint"]) / "config.json").read_text())["meta"]
    assert meta["trained_on"] == {"sudoku": "4x4"}
    # a warm start keeps what its starting checkpoint trained on, with its own data's
    ckpt = Path(run["checkpoint"])
    cfg = json.loads((ckpt / "config.json").read_text())
    cfg["meta"]["trained_on"]["lightup"] = "10x10"   # as if the first run had seen lightup
    (ckpt / "config.json").write_text(json.dumps(cfg))
    warm = train(None, base=config(tmp_path / "warm", sudoku4, model=TINY_MLP,
                                   train={"max_steps": 4}, eval={"every_steps": None},
                                   resume={"init_from": str(ckpt)}))
    meta = json.loads((Path(warm["checkpoint"]) / "config.json").read_text())["meta"]
    assert meta["trained_on"] == {"sudoku": "4x4", "lightup": "10x10"}


def test_best_breaks_exact_accuracy_ties_by_cell_accuracy():
    """A tiny run's exact accuracy sat at 0.0, so its first evaluated step stayed `best` though
    a later one got 78% of cells right against 69%."""
    from ptrm_cli.engine.train_loop import new_best

    first = {"step": 100, "exact_accuracy": 0.0, "cell_accuracy": 0.693}
    assert new_best({"exact_accuracy": 0.0, "cell_accuracy": 0.783}, first)
    assert not new_best({"exact_accuracy": 0.0, "cell_accuracy": 0.693}, first)  # a full tie
    assert not new_best({"exact_accuracy": 0.0, "cell_accuracy": 0.5}, first)
    assert new_best({"exact_accuracy": 0.1, "cell_accuracy": 0.1}, first)  # exact comes first
    assert new_best({"exact_accuracy": 0.0, "cell_accuracy": 0.0}, None)
    older = {"step": 100, "exact_accuracy": 0.0}  # a run's state from before the tie-break
    assert not new_best({"exact_accuracy": 0.0, "cell_accuracy": 0.9}, older)
    assert new_best({"exact_accuracy": 0.2, "cell_accuracy": 0.9}, older)


def test_a_warm_start_names_each_difference_and_ignores_a_rope_models_length(
        sudoku4, reference_run, tmp_path):
    """"hidden_size 16 vs 32" said neither which side was which nor how to match it; and a
    RoPE model converted at another sequence length was refused, though none of its weights
    depends on the length (RoPE's tables are computed)."""
    src = reference_run / "checkpoints" / "step_8"
    with pytest.raises(PtrmError) as e:
        train(None, base=config(tmp_path / "w", sudoku4, model={**TINY_ATT, "hidden_size": 32}),
              init_from=str(src))
    assert "hidden_size 16 in the checkpoint, 32 in the config" in str(e.value)
    assert e.value.hint == "take the checkpoint's: --set model.hidden_size=16"
    longer = tmp_path / "longer"
    shutil.copytree(src, longer)
    doc = json.loads((longer / "config.json").read_text())
    doc["model"]["seq_len"] += 884  # as converted for ARC's 900 tokens
    (longer / "config.json").write_text(json.dumps(doc))
    result = train(None, base=config(tmp_path / "w2", sudoku4), init_from=str(longer))
    assert result["step"] == 12


def test_a_warm_start_takes_puzzle_embedding_rows_by_name(tmp_path):
    """Between two named tables (ARC's identifiers) a warm start copied rows by position: a
    task trained on the row another task had learnt, without a word. Rows now follow their
    names; a name the checkpoint does not have gets the mean row, as the reference gives a
    new puzzle set."""
    from ptrm_cli.engine.train_checkpoint import _row_names, _rows_by_name

    w = torch.tensor([[0.0, 0.0], [1.0, 1.0], [2.0, 2.0], [3.0, 5.0]])
    out, kept = _rows_by_name(w, ["<blank>", "a", "b", "c"], ["<blank>", "c", "new", "a"])
    assert kept == 3
    assert out.tolist() == [[0, 0], [3, 5], [1.5, 2.0], [1, 1]]
    ck = tmp_path / "ck"
    ck.mkdir()
    (ck / "identifiers.json").write_text(json.dumps(["<blank>", "a", "b"]))
    assert _row_names(ck, ["<blank>", "b", "a"], 3) == (["<blank>", "a", "b"],
                                                      ["<blank>", "b", "a"])
    assert _row_names(ck, ["<blank>", "a", "b"], 3) is None  # the same table: copied as is
    assert _row_names(ck, None, 3) is None                   # a dataset without names
    assert _row_names(tmp_path, ["<blank>"], 1) is None      # a checkpoint without names


@pytest.mark.parametrize("kind", [dict(mlp_t=True, pos_encodings="none"),
                                  dict(pos_encodings="learned")])
def test_a_warm_start_still_refuses_another_length_where_weights_depend_on_it(kind):
    """Only a RoPE model's length is free in a warm start: TRM-MLP's token mixer and learned
    positions are weights of that length."""
    from ptrm_cli.engine.model import TRMConfig
    from ptrm_cli.engine.train_checkpoint import _differences, _yaml_value

    a = TRMConfig(vocab_size=12, seq_len=16, hidden_size=16, num_heads=2, puzzle_emb_ndim=16,
                  **kind)
    b = dataclasses.replace(a, seq_len=20)
    assert "seq_len" in _differences(a, b, warm=True)
    rope = dataclasses.replace(a, mlp_t=False, pos_encodings="rope")
    assert "seq_len" not in _differences(rope, dataclasses.replace(rope, seq_len=20), warm=True)
    # the hint's values read back as --set reads them (YAML): 1e-06 alone is a string there
    assert [_yaml_value(v) for v in (1e-06, 0.5, 512, True, "rope")] == \
        ["1.0e-06", "0.5", "512", "True", "'rope'"]


def test_a_warm_start_refuses_an_identifiers_file_of_another_table(tmp_path):
    from ptrm_cli.engine.train_checkpoint import _row_names

    (tmp_path / "identifiers.json").write_text(json.dumps(["<blank>", "a"]))
    with pytest.raises(PtrmError, match="names 2 rows, but the checkpoint's puzzle-embedding "
                                        "table has 3"):
        _row_names(tmp_path, ["<blank>", "b", "c"], 3)
