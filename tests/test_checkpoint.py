"""Checkpoints: import of the official `step_0` fixture, our safetensors round trip, the
`ptrm convert` command, and clear errors for underspecified, corrupt or mismatched files."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch
import yaml
from safetensors.torch import load_file, save_file

from ptrm_cli.engine.checkpoint import (CheckpointError, import_official, is_official_checkpoint,
                                        load_checkpoint, save_checkpoint)
from ptrm_cli.engine.model import TRM, TRMConfig
from ptrm_cli.errors import VocabError
from ptrm_cli.vocab import Vocab

FIXTURES = Path(__file__).resolve().parents[1].parent / "shared" / "fixtures" / "trm"
# What step_0's weights do not say (TRM_REFERENCE.md §9 fixture config).
SETTINGS = dict(H_cycles=2, L_cycles=3, halt_max_steps=4, num_heads=2, pos_encodings="rope",
                puzzle_emb_len=4, seq_len=16)


def fixture_path(name: str) -> Path:
    path = FIXTURES / name
    if not path.exists():
        pytest.skip(f"golden fixtures not found at {FIXTURES} (the shared/ folder next to the "
                    "repository is absent)")
    return path


@pytest.fixture(scope="module")
def bf16_fixture():
    return torch.load(fixture_path("trm_fixture_att_bf16.pt"), weights_only=True)


@pytest.fixture(scope="module")
def step0():
    return fixture_path("step_0")


def outputs(model: TRM, batch: dict, steps: int = 4):
    with torch.no_grad():
        x = model.embed(batch["inputs"], batch["puzzle_identifiers"])
        carry, outs = model.init_carry(x.shape[0]), []
        for _ in range(steps):
            out = model.step(carry, x)
            carry = out.carry
            outs.append(out)
    return outs


# -- official import -----------------------------------------------------------------------------

def test_import_step0_reproduces_the_bf16_fixture(step0, bf16_fixture):
    model, vocab, meta = import_official(step0, **SETTINGS)
    assert model.config.forward_dtype == "bfloat16"          # read from H_init's dtype
    assert vocab == Vocab("trm-v12", ("pad",) + tuple(f"tok{i}" for i in range(1, 12)))
    assert meta["source"] == "official-trm" and meta["steps"] == 0
    assert meta["key_prefix"] == "_orig_mod.model.inner."
    for i, (out, ref) in enumerate(zip(outputs(model, bf16_fixture["batch"]),
                                       bf16_fixture["per_step"]), 1):
        err = (out.logits.float() - ref["logits"]).abs().max().item()
        assert err < (0.2 if i == 1 else 1.0), f"step {i}: |dlogits| {err}"
        assert (out.q_halt - ref["q_halt_logits"]).abs().max() < 0.25
        assert (out.preds == ref["preds"]).float().mean() >= (0.95 if i == 1 else 0.75)


def test_import_step0_equals_the_fixture_state_dict(step0, bf16_fixture):
    """step_0 holds exactly the att_bf16 fixture's weights: importing the file and building from
    the fixture's in-memory state_dict give bit-identical outputs."""
    imported, _, _ = import_official(step0, **SETTINGS)
    cfg = TRMConfig.from_dict({k: v for k, v in bf16_fixture["config"].items()
                               if k not in ("H_layers", "no_ACT_continue", "batch_size")})
    state = {k.removeprefix("_orig_mod.model.inner."): v
             for k, v in bf16_fixture["state_dict"].items()}
    direct = TRM.from_state_dict(cfg, state).eval()
    assert imported.config == direct.config
    for a, b in zip(outputs(imported, bf16_fixture["batch"]), outputs(direct, bf16_fixture["batch"])):
        assert torch.equal(a.logits, b.logits) and torch.equal(a.carry.z, b.carry.z)


def test_import_step0_in_float32(step0, bf16_fixture):
    """A bf16-trained checkpoint can run in float32: the bf16 H_init/L_init widen exactly, and
    the result is the exact computation the bf16 reference approximates, so it sits within
    bf16 noise of the fixture (the same distance as our own bf16 run)."""
    model, _, _ = import_official(step0, forward_dtype="float32", **SETTINGS)
    raw = torch.load(step0, weights_only=True)
    assert model.H_init.dtype == torch.float32
    assert torch.equal(model.H_init.bfloat16(), raw["_orig_mod.model.inner.H_init"])
    outs = outputs(model, bf16_fixture["batch"])
    assert outs[0].logits.dtype == torch.float32
    for i, (out, ref) in enumerate(zip(outs, bf16_fixture["per_step"]), 1):
        assert (out.logits - ref["logits"]).abs().max() < (0.2 if i == 1 else 1.0), f"step {i}"
        assert (out.preds == ref["preds"]).float().mean() >= 0.75, f"step {i}"


def test_import_needs_what_the_weights_do_not_say(step0):
    with pytest.raises(CheckpointError) as e:
        import_official(step0)
    for key in SETTINGS:
        assert key in str(e.value)
    assert "--config" in e.value.hint and "--set" in e.value.hint
    partial = {k: v for k, v in SETTINGS.items() if k != "L_cycles"}
    with pytest.raises(CheckpointError, match=r"do not say L_cycles$"):
        import_official(step0, **partial)


def test_import_reads_all_config_yaml_next_to_the_step_file(step0, tmp_path, bf16_fixture):
    run = tmp_path / "run"
    run.mkdir()
    shutil.copy(step0, run / "step_1234")
    arch = {"name": "recursive_reasoning.trm@TinyRecursiveReasoningModel_ACTV1",
            "loss": {"name": "losses@ACTLossHead", "loss_type": "stablemax_cross_entropy"},
            "H_layers": 0, "no_ACT_continue": True, "hidden_size": 64, "expansion": 4,
            "L_layers": 2, "mlp_t": False, "puzzle_emb_ndim": 64, "forward_dtype": "bfloat16",
            **{k: v for k, v in SETTINGS.items() if k != "seq_len"}}
    data = tmp_path / "data"
    (data / "test").mkdir(parents=True)
    (data / "test" / "dataset.json").write_text(json.dumps({"seq_len": 16, "vocab_size": 12}))
    (run / "all_config.yaml").write_text(yaml.safe_dump({"arch": arch, "data_paths": [str(data)],
                                                         "lr": 1e-4}))
    model, _, meta = load_checkpoint(run / "step_1234")      # detected as official
    assert model.config.seq_len == 16 and model.config.L_cycles == 3
    assert meta["steps"] == 1234 and meta["given"]["seq_len"] == "dataset.json"
    assert meta["given"]["H_cycles"] == "all_config.yaml"
    assert "name" in meta["ignored_arch_keys"]
    ref = outputs(import_official(step0, **SETTINGS)[0], bf16_fixture["batch"], 1)[0]
    assert torch.equal(outputs(model, bf16_fixture["batch"], 1)[0].logits, ref.logits)

    arch["hidden_size"] = 512
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump({"arch": arch}))
    with pytest.raises(CheckpointError, match="hidden_size=512.*contradicts.*hidden_size=64"):
        import_official(run / "step_1234", config_yaml=bad)


def test_import_mlp_infers_seq_len_from_the_token_mixer(tmp_path):
    """TRM-MLP weights fix S = seq_len + P, so only one of the two is needed; num_heads and the
    position encoding do not matter without attention."""
    fx = torch.load(fixture_path("trm_fixture_mlp_fp32.pt"), weights_only=True)
    torch.save(fx["state_dict"], tmp_path / "step_7")
    model, _, _ = import_official(tmp_path / "step_7", H_cycles=2, L_cycles=3, halt_max_steps=4,
                                  puzzle_emb_len=4)
    assert model.config.mlp_t and model.config.seq_len == 16
    assert model.config.forward_dtype == "float32"
    out = outputs(model, fx["batch"], 1)[0]
    assert (out.logits - fx["per_step"][0]["logits"]).abs().max() < 1e-4
    # a seq_len longer than the mixer's whole length: said so, not "puzzle_emb_len must be a
    # non-negative integer, got -61 (from weights)"
    with pytest.raises(CheckpointError, match=r"seq_len 81 \(override\) is longer than the "
                                              r"weights allow: they were built for 20") as e:
        import_official(tmp_path / "step_7", H_cycles=2, L_cycles=3, halt_max_steps=4,
                        seq_len=81)
    assert "at most 19" in e.value.hint  # one prefix slot at least: the table has 16 dims
    with pytest.raises(CheckpointError, match="the puzzle table needs at least 1 of them"):
        import_official(tmp_path / "step_7", H_cycles=2, L_cycles=3, halt_max_steps=4,
                        seq_len=20)  # P would be 0, which TRMConfig reads as ceil(ndim / D)


# -- our format ----------------------------------------------------------------------------------

def test_round_trip_through_safetensors_is_bit_exact(step0, tmp_path, bf16_fixture):
    model, vocab, meta = import_official(step0, **SETTINGS)
    out_dir = save_checkpoint(tmp_path / "ckpt", model, vocab, {**meta, "seed": 7})
    assert sorted(p.name for p in out_dir.iterdir()) == ["config.json", "model.safetensors"]
    doc = json.loads((out_dir / "config.json").read_text())
    assert doc["format"] == "ptrm-checkpoint/1" and doc["model"] == model.config.to_dict()
    assert doc["meta"]["torch"] == torch.__version__ and doc["meta"]["seed"] == 7

    for where in (out_dir, out_dir / "model.safetensors"):
        loaded, vocab2, meta2 = load_checkpoint(where)
        assert vocab2 == vocab and meta2["steps"] == 0 and meta2["seed"] == 7
        assert loaded.config == model.config and not loaded.training
        a, b = model.state_dict(), loaded.state_dict()
        assert a.keys() == b.keys()
        assert all(a[k].dtype == b[k].dtype and torch.equal(a[k], b[k]) for k in a)
        for x, y in zip(outputs(model, bf16_fixture["batch"]),
                        outputs(loaded, bf16_fixture["batch"])):
            assert torch.equal(x.logits, y.logits) and torch.equal(x.q_halt, y.q_halt)
            assert torch.equal(x.carry.y, y.carry.y) and torch.equal(x.carry.z, y.carry.z)

    keys = load_file(str(out_dir / "model.safetensors")).keys()
    assert {"H_init", "L_init", "puzzle_emb.weights"} <= set(keys)
    assert not any("rotary" in k for k in keys)               # recomputed, never stored


def test_a_best_link_whose_folder_was_removed_names_what_is_left(tmp_path):
    """`rm -r run/checkpoints/step_8` under `best` left "best: no such file or directory"."""
    model = TRM(TRMConfig(vocab_size=3, seq_len=4, hidden_size=16, num_heads=2,
                          puzzle_emb_ndim=16, puzzle_emb_len=1))
    ckpts = tmp_path / "checkpoints"
    save_checkpoint(ckpts / "step_12", model, Vocab("tiny", ("pad", "a", "b")))
    (ckpts / "best").symlink_to("step_8")
    with pytest.raises(CheckpointError, match="best is a link to step_8, which no longer "
                                              "exists") as e:
        load_checkpoint(ckpts / "best")
    assert e.value.hint.endswith(": step_12")
    (ckpts / "last").symlink_to("step_12")
    with pytest.raises(CheckpointError, match="is not a ptrm checkpoint") as e:
        load_checkpoint(tmp_path)  # the run folder: its best is gone, its last is not
    assert e.value.hint == f"a `ptrm train` run: pass {ckpts / 'last'}"
    shutil.rmtree(ckpts / "step_12")
    with pytest.raises(CheckpointError) as e:
        load_checkpoint(ckpts / "best")
    assert e.value.hint.endswith("holds no checkpoint any more")
    (tmp_path / "mine").symlink_to("/nonexistent/model")   # not a run's link: no run hint
    with pytest.raises(CheckpointError, match="mine is a link to /nonexistent/model, which "
                                              "does not exist$") as e:
        load_checkpoint(tmp_path / "mine")
    assert e.value.hint is None


def test_save_replaces_a_checkpoint_but_not_other_folders(tmp_path):
    model = TRM(TRMConfig(vocab_size=3, seq_len=4, hidden_size=16, num_heads=2,
                          puzzle_emb_ndim=16, puzzle_emb_len=1))
    vocab = Vocab("tiny", ("pad", "a", "b"))
    save_checkpoint(tmp_path / "ck", model, vocab)
    save_checkpoint(tmp_path / "ck", model, vocab, {"steps": 2}, write_extra=lambda d:
                    (d / "resume.json").write_text("{}"))
    assert load_checkpoint(tmp_path / "ck")[2]["steps"] == 2
    assert (tmp_path / "ck" / "resume.json").exists()
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "keep.py").write_text("x = 1\n")
    with pytest.raises(CheckpointError, match="refusing to replace"):
        save_checkpoint(tmp_path / "src", model, vocab)
    assert (tmp_path / "src" / "keep.py").exists()


def test_config_overrides_when_loading(step0, tmp_path):
    model, vocab, meta = import_official(step0, **SETTINGS)
    save_checkpoint(tmp_path / "ck", model, vocab, meta)
    loaded, _, meta2 = load_checkpoint(tmp_path / "ck", forward_dtype="float32", L_cycles=5)
    assert loaded.config.forward_dtype == "float32" and loaded.config.L_cycles == 5
    assert meta2["overrides"] == {"forward_dtype": "float32", "L_cycles": 5}
    with pytest.raises(CheckpointError, match="unknown model setting.*hiden"):
        load_checkpoint(tmp_path / "ck", hiden_size=3)


# -- clear errors --------------------------------------------------------------------------------

class _Boom:
    """Unpickling this would create a file: proof that pickled code ran."""

    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return (Path.touch, (Path(self.path),))


def test_pickled_code_is_never_executed(tmp_path):
    marker = tmp_path / "pwned"
    torch.save({"_orig_mod.model.inner.embed_tokens.embedding_weight": torch.zeros(2, 2),
                "evil": _Boom(marker)}, tmp_path / "step_1")
    assert is_official_checkpoint(tmp_path / "step_1")
    with pytest.raises(CheckpointError, match="not a plain tensor checkpoint"):
        load_checkpoint(tmp_path / "step_1")
    assert not marker.exists()


def test_a_checkpoint_with_non_finite_weights_is_refused_by_name(step0, tmp_path):
    """safetensors stores no checksum: 0xff bytes written over a tensor loaded as NaN weights,
    and `ptrm solve` answered "confidence nan" and suggested more rollouts."""
    model, vocab, meta = import_official(step0, **SETTINGS)
    ck = save_checkpoint(tmp_path / "ck", model, vocab, meta)
    load_checkpoint(ck)  # whole: loads
    weights = load_file(ck / "model.safetensors")
    name = next(k for k, t in weights.items() if t.is_floating_point() and t.numel() > 8)
    weights[name].view(-1)[3] = float("nan")
    save_file(weights, ck / "model.safetensors")
    with pytest.raises(CheckpointError, match=f"the tensor {name} holds NaN or infinite") as e:
        load_checkpoint(ck)
    assert "copy it again" in e.value.hint

def test_corrupt_and_foreign_files(step0, tmp_path):
    (tmp_path / "notes.txt").write_text("hello")
    with pytest.raises(CheckpointError, match="is not a checkpoint"):
        load_checkpoint(tmp_path / "notes.txt")
    with pytest.raises(CheckpointError, match="no such file"):
        load_checkpoint(tmp_path / "missing")
    with pytest.raises(CheckpointError, match="no config.json"):
        load_checkpoint(tmp_path)

    truncated = tmp_path / "step_5"
    truncated.write_bytes(step0.read_bytes()[: step0.stat().st_size // 2])
    with pytest.raises(CheckpointError, match="corrupt"):
        load_checkpoint(truncated, **SETTINGS)

    torch.save({"encoder.weight": torch.zeros(3)}, tmp_path / "step_6")
    with pytest.raises(CheckpointError, match="not a TRM checkpoint"):
        load_checkpoint(tmp_path / "step_6")

    model, vocab, meta = import_official(step0, **SETTINGS)
    ck = save_checkpoint(tmp_path / "ck", model, vocab, meta)
    (ck / "model.safetensors").write_bytes(b"\x00" * 64)
    with pytest.raises(CheckpointError, match="corrupt or not a safetensors"):
        load_checkpoint(ck)
    (ck / "config.json").write_text("{not json")
    with pytest.raises(CheckpointError, match="not readable JSON"):
        load_checkpoint(ck)
    (ck / "config.json").write_text(json.dumps({"format": "something-else/9"}))
    with pytest.raises(CheckpointError, match="format 'something-else/9'"):
        load_checkpoint(ck)


def test_weights_that_do_not_fit_the_config(step0, tmp_path):
    model, vocab, meta = import_official(step0, **SETTINGS)
    ck = save_checkpoint(tmp_path / "ck", model, vocab, meta)
    state = load_file(str(ck / "model.safetensors"))
    del state["lm_head.weight"]
    save_file(state, str(ck / "model.safetensors"))
    with pytest.raises(CheckpointError, match="missing: lm_head.weight"):
        load_checkpoint(ck)
    with pytest.raises(CheckpointError, match=r"pos_encodings='learned' \(--set\) contradicts "
                                              r"the weights, which have no learned position"):
        import_official(step0, **{**SETTINGS, "pos_encodings": "learned"})

    save_checkpoint(ck, model, vocab, meta)
    doc = json.loads((ck / "config.json").read_text())
    doc["model"]["hidden_size"] = 32
    (ck / "config.json").write_text(json.dumps(doc))
    with pytest.raises(CheckpointError, match=r"shape mismatch: .*embed_tokens.embedding_weight: "
                                              r"file \(12, 64\), model \(12, 32\)"):
        load_checkpoint(ck)


def test_vocab_mismatches_are_errors(step0, tmp_path):
    wrong_size = Vocab("ppbench", ("pad",) + tuple(f"t{i}" for i in range(1, 9)))
    with pytest.raises(VocabError, match="9 tokens.*vocab_size 12"):
        import_official(step0, vocab=wrong_size, **SETTINGS)
    model, vocab, meta = import_official(step0, **SETTINGS)
    with pytest.raises(VocabError, match="9 tokens.*vocab_size is 12"):
        save_checkpoint(tmp_path / "x", model, wrong_size)

    ck = save_checkpoint(tmp_path / "ck", model, vocab, meta)
    other = Vocab("trm-v12", ("pad",) + tuple(f"tok{i}" for i in range(1, 11)) + ("eos",))
    with pytest.raises(VocabError, match="disagree on token id 11: 'eos' vs 'tok11'"):
        load_checkpoint(ck, vocab=other)
    assert load_checkpoint(ck, vocab=vocab)[1] == vocab

    doc = json.loads((ck / "config.json").read_text())
    doc["vocab"]["tokens"] = doc["vocab"]["tokens"][:10]
    (ck / "config.json").write_text(json.dumps(doc))
    with pytest.raises(VocabError, match="10 tokens but the model's vocab_size is 12"):
        load_checkpoint(ck)


# -- the command ---------------------------------------------------------------------------------

def test_convert_command(step0, tmp_path):
    from typer.testing import CliRunner

    from ptrm_cli.app import app

    runner = CliRunner()
    sets = [arg for k, v in SETTINGS.items() for arg in ("--set", f"{k}={v}")]
    res = runner.invoke(app, ["convert", str(step0), "--out", str(tmp_path / "ck"), *sets])
    assert res.exit_code == 0, res.output
    model, vocab, meta = load_checkpoint(tmp_path / "ck")
    assert model.config.H_cycles == 2 and model.config.pos_encodings == "rope"
    assert meta["given"]["H_cycles"] == "override"

    res = runner.invoke(app, ["convert", str(step0), "--out", str(tmp_path / "ck2")])
    assert res.exit_code == 2 and "H_cycles" in res.output
    assert not (tmp_path / "ck2").exists()
    res = runner.invoke(app, ["convert", str(step0), "--out", str(tmp_path / "ck3"),
                              "--set", "L_cycles"])
    assert res.exit_code == 2 and "KEY=VALUE" in res.output


def test_convert_out_that_cannot_be_a_folder(step0, tmp_path):
    """A file as --out, or a path under a file, was a FileExistsError traceback."""
    from typer.testing import CliRunner

    from ptrm_cli.app import app

    sets = [arg for k, v in SETTINGS.items() for arg in ("--set", f"{k}={v}")]
    (tmp_path / "f").write_text("keep")
    for out, message in ((tmp_path / "f", "is a file"),
                         (tmp_path / "f" / "ck", "cannot write there")):
        res = CliRunner().invoke(app, ["convert", str(step0), "--out", str(out), *sets])
        assert res.exit_code == 2 and message in res.output, res.output
        assert "Traceback" not in res.output
    assert (tmp_path / "f").read_text() == "keep"


def test_convert_refuses_a_training_checkpoint_and_says_it_replaced_one(step0, tmp_path):
    """`ptrm convert ... -o runs/x/checkpoints/step_6` replaced a training checkpoint whole,
    silently: its train_state, optimizer and carry were gone and --resume broken. It is
    refused now; a converted checkpoint replaced is said."""
    from typer.testing import CliRunner

    from ptrm_cli.app import app

    sets = [arg for k, v in SETTINGS.items() for arg in ("--set", f"{k}={v}")]
    step = tmp_path / "run" / "checkpoints" / "step_6"
    step.mkdir(parents=True)
    (step / "train_state.json").write_text("{}")
    res = CliRunner().invoke(app, ["convert", str(step0), "--out", str(step), *sets])
    assert res.exit_code == 2 and "is a training checkpoint" in res.output, res.output
    assert (step / "train_state.json").read_text() == "{}"
    ck = tmp_path / "ck"
    for said in (False, True):
        res = CliRunner().invoke(app, ["convert", str(step0), "--out", str(ck), *sets])
        assert res.exit_code == 0, res.output
        assert ("replaced the checkpoint that was in" in res.output) is said

def test_a_converted_step_file_that_fits_no_family_says_so_without_contradiction(step0,
                                                                                tmp_path):
    """A folder converted without --family was called "an official TRM checkpoint", and "no
    arc family has that layout (its families: arc)" read as a contradiction: the message now
    says it was converted, gives each family's layout, and the hint names --family."""
    from typer.testing import CliRunner

    from ptrm_cli import codec as registry
    from ptrm_cli.app import app

    model, vocab, meta = import_official(step0, **SETTINGS)  # 12 tokens, 16 positions
    ck = save_checkpoint(tmp_path / "ck", model, vocab, meta)
    arc = registry.get("arc").families[0]
    pair = {"train": [{"input": [[1, 2], [3, 4]], "output": [[4, 3], [2, 1]]}],
            "test": [{"input": [[1, 1], [2, 2]]}]}
    (tmp_path / "pair.json").write_text(json.dumps(pair))
    res = CliRunner().invoke(app, ["solve", str(tmp_path / "pair.json"), "-c", str(ck),
                                   "--device", "cpu"])
    out = " ".join(res.output.split())
    assert res.exit_code == 2, out
    assert (f"is an official TRM checkpoint converted without --family (12 tokens, 16 "
            f"positions) with no token table, and none of arc's token families has that layout "
            f"(arc: {len(arc.vocab)} tokens, {arc.seq_len} positions)") in out
    assert "convert it again with --family NAME, which sets the length" in out

def test_convert_attaches_a_codec_family(step0, tmp_path):
    """The fixture has 12 tokens, like TRM's ARC set: --family arc makes the arc codec accept it."""
    from typer.testing import CliRunner

    from ptrm_cli import codec as registry
    from ptrm_cli.app import app

    if "arc" not in registry.registered():
        pytest.skip("the arc codec is not installed")
    runner = CliRunner()
    sets = [arg for k, v in SETTINGS.items() if k != "seq_len" for arg in ("--set", f"{k}={v}")]
    res = runner.invoke(app, ["convert", str(step0), "--out", str(tmp_path / "ck"),
                              "--family", "arc", *sets])
    assert res.exit_code == 0, res.output
    model, vocab, meta = load_checkpoint(tmp_path / "ck")
    assert registry.get("arc").family_for(vocab).name == "arc"
    arc = registry.get("arc").family_for(vocab)
    # the family's length is the last resort, recorded as such (it was once an "override")
    assert model.config.seq_len == arc.seq_len and meta["given"]["seq_len"] == "family arc"

    # a length given elsewhere wins, and one that is not the family's is refused here, not
    # at the first solve (it once was silently replaced by the family's)
    res = runner.invoke(app, ["convert", str(step0), "--out", str(tmp_path / "ck1"),
                              "--family", "arc", *sets, "--set", "seq_len=16"])
    assert res.exit_code == 2 and not (tmp_path / "ck1").exists()
    assert f"reads 16 tokens but the 'arc' family lays out {arc.seq_len}" in res.output
    assert "(--set says 16)" in res.output  # the flag the user typed

    res = runner.invoke(app, ["convert", str(step0), "--out", str(tmp_path / "ck2"),
                              "--family", "ppbench", *sets])  # 294 tokens vs the weights' 12
    assert res.exit_code == 2 and "294" in res.output
    res = runner.invoke(app, ["convert", str(step0), "--out", str(tmp_path / "ck3"),
                              "--family", "nope", *sets])
    assert res.exit_code == 2 and "no installed codec has that family" in res.output


def test_files_that_are_not_step_files_get_plain_messages(step0, tmp_path):
    """A text file once got PyTorch's advice to load it with weights_only=False, a missing file
    or a folder "is corrupt"; a YAML error named "<unicode string>" instead of the file."""
    text = tmp_path / "step_5"
    text.write_text("not a checkpoint\n")
    with pytest.raises(CheckpointError, match=r"step_5 is not a file written by torch.save") as e:
        import_official(text, **SETTINGS)
    assert "weights_only` set to `False`" not in str(e.value)
    with pytest.raises(CheckpointError, match=r"is a directory, not an official TRM"):
        import_official(tmp_path, **SETTINGS)
    with pytest.raises(CheckpointError, match=r"step_9: no such file$"):
        import_official(tmp_path / "step_9", **SETTINGS)
    pickled = tmp_path / "step_6"
    torch.save({"x": torch.zeros(1), "y": Path("a")}, pickled)  # a pickled object
    with pytest.raises(CheckpointError, match=r"step_6 is corrupt or not a plain tensor "
                                              r"checkpoint: it holds objects other than tensors$"):
        import_official(pickled, **SETTINGS)
    bad = tmp_path / "bad.yaml"
    bad.write_text("arch:\n  hidden_size: 64\n  H_cycles: [2\n")
    with pytest.raises(CheckpointError, match=r"bad.yaml:4: not valid YAML: expected ',' or"):
        import_official(step0, config_yaml=bad)


def test_missing_settings_with_all_config_yaml_read_say_what_it_lacks(step0, tmp_path):
    """With all_config.yaml next to the step file, the hint once said to put it there."""
    run = tmp_path / "run"
    run.mkdir()
    shutil.copy(step0, run / "step_1")
    arch = {"name": "trm", "hidden_size": 64,
            **{k: v for k, v in SETTINGS.items() if k != "seq_len"}}
    (run / "all_config.yaml").write_text(yaml.safe_dump({"arch": arch,
                                                         "data_paths": ["data/gone"]}))
    with pytest.raises(CheckpointError, match=r"do not say seq_len$") as e:
        import_official(run / "step_1")
    hint = e.value.hint
    assert "next to the step file" not in hint
    assert f"{run / 'all_config.yaml'} does not give them either" in hint
    assert "data_paths, data/gone" in hint and "--family" in hint and "--set" in hint


# -- a researcher's own files: mistakes named by file and setting (QA 2026-11-27) ---------------

def _run_with_yaml(step0, tmp_path, **arch_changes):
    """step0 copied into a run folder with an official-style all_config.yaml beside it."""
    run = tmp_path / "run"
    run.mkdir(exist_ok=True)
    shutil.copy(step0, run / "step_7")
    arch = {"name": "recursive_reasoning.trm@TinyRecursiveReasoningModel_ACTV1",
            "hidden_size": 64, **{k: v for k, v in SETTINGS.items() if k != "seq_len"},
            **arch_changes}
    (run / "all_config.yaml").write_text(yaml.safe_dump({"arch": arch}))
    return run / "step_7"


def test_a_bad_setting_names_the_file_or_option_it_came_from(step0, tmp_path):
    """A bad value from a --config yaml was blamed on "all_config.yaml" (another file's name)
    or on the step file alone; one from --set did not say so."""
    step = _run_with_yaml(step0, tmp_path, L_cycles="three")
    with pytest.raises(CheckpointError, match="L_cycles must be a positive integer, got 'three'"
                                              ) as e:
        import_official(step, seq_len=16)
    assert f"(from {step.parent / 'all_config.yaml'})" in str(e.value)
    other = tmp_path / "other.yaml"
    other.write_text(yaml.safe_dump({"arch": {"name": "trm", "hidden_size": 512}}))
    with pytest.raises(CheckpointError, match="hidden_size=512") as e:
        import_official(step0, config_yaml=other, **SETTINGS)
    assert f"({other})" in str(e.value) and "(all_config.yaml)" not in str(e.value)
    # the weights confirm hidden_size 64: the culprit is the given num_heads
    with pytest.raises(CheckpointError, match=r"divisible by num_heads 3 \(from --set\)$"):
        import_official(step0, **{**SETTINGS, "num_heads": 3})



def test_a_bad_forward_dtype_names_where_it_came_from(step0, tmp_path):
    """forward_dtype is read from the weights (H_init's dtype) and may be replaced: a bad
    given one was not blamed on --set or the yaml, as every other bad setting is."""
    with pytest.raises(CheckpointError, match=r"got 'float16' \(from --set\)$"):
        import_official(step0, **{**SETTINGS, "forward_dtype": "float16"})
    step = _run_with_yaml(step0, tmp_path, forward_dtype="fp32")
    with pytest.raises(CheckpointError, match="got 'fp32'") as e:
        import_official(step, seq_len=16)
    assert f"(from {step.parent / 'all_config.yaml'})" in str(e.value)


def test_a_state_dict_wrapped_in_a_dict_names_the_entry_to_save(step0, tmp_path):
    """{"model": state_dict, "step": N}, as many training scripts save, was "holds a dict, not
    a TRM state_dict": true of the file, but it did not say what the file holds instead."""
    state = torch.load(step0, weights_only=True)
    torch.save({"model": state, "step": 5}, tmp_path / "step_5")
    with pytest.raises(CheckpointError, match=r"entries are not all tensors \(model, step\)"
                       ) as e:
        import_official(tmp_path / "step_5", **SETTINGS)
    assert "its entry 'model' looks like the state_dict" in e.value.hint
    torch.save([state], tmp_path / "step_6")
    with pytest.raises(CheckpointError, match="step_6 holds a list, not a TRM state_dict"):
        import_official(tmp_path / "step_6", **SETTINGS)

def test_cut_short_and_empty_step_files_say_so(step0, tmp_path):
    """A partial copy got PyTorch's paragraph about miniz and a hint about pickled objects."""
    cut = tmp_path / "step_3"
    cut.write_bytes(step0.read_bytes()[:200_000])
    with pytest.raises(CheckpointError, match=r"step_3 is cut short or corrupt") as e:
        import_official(cut, **SETTINGS)
    assert "miniz" not in str(e.value) and "copy the step_N file again" in e.value.hint
    empty = tmp_path / "step_4"
    empty.write_bytes(b"")
    with pytest.raises(CheckpointError, match=r"step_4 is empty \(0 bytes\)"):
        import_official(empty, **SETTINGS)


def test_another_models_yaml_is_refused_by_name_before_missing_settings(step0, tmp_path):
    """An HRM (or trm_singlez) run's arch: has no hidden_size: it was refused as "its arch:
    section has no hidden_size", not by the model's name as docs/ENGINE.md promises."""
    for name, said in [("hrm.hrm_act_v1@HierarchicalReasoningModel_ACTV1", "is not a TRM"),
                       ("recursive_reasoning.trm_singlez@TinyRecursiveReasoningModel_ACTV1",
                        "'trm_singlez' model, not TRM")]:
        step = _run_with_yaml(step0, tmp_path, name=name)
        doc = yaml.safe_load((step.parent / "all_config.yaml").read_text())
        del doc["arch"]["hidden_size"]
        (step.parent / "all_config.yaml").write_text(yaml.safe_dump(doc))
        with pytest.raises(CheckpointError, match=said) as e:
            import_official(step, seq_len=16)
        assert "hidden_size" not in str(e.value) and "TRM runs only" in e.value.hint


def test_the_official_repositorys_other_models_are_refused_by_name(step0, tmp_path):
    """trm_singlez / trm_hier6 runs (same class name, other states) were accepted by their yaml
    and failed, if at all, on "missing: H_init"."""
    step = _run_with_yaml(step0, tmp_path,
                          name="recursive_reasoning.trm_singlez@TinyRecursiveReasoningModel_ACTV1")
    with pytest.raises(CheckpointError, match=r"'trm_singlez' model, not TRM"):
        import_official(step, seq_len=16)
    sd = torch.load(step0, weights_only=True)
    prefix = "_orig_mod.model.inner."
    single = {k: v for k, v in sd.items() if k != prefix + "H_init"}
    torch.save(single, tmp_path / "step_8")
    with pytest.raises(CheckpointError, match=r"step_8 looks like .* trm_singlez"):
        import_official(tmp_path / "step_8", **SETTINGS)
    hier = {k: v for k, v in sd.items() if k != prefix + "L_init"}
    hier.update({f"{prefix}L{i}_init": sd[prefix + "L_init"] for i in range(1, 7)})
    torch.save(hier, tmp_path / "step_9")
    with pytest.raises(CheckpointError, match=r"step_9 looks like .* trm_hier6"):
        import_official(tmp_path / "step_9", **SETTINGS)


def test_a_ptrm_checkpoint_or_a_folder_as_config_get_plain_messages(step0, tmp_path):
    """Converting a converted checkpoint said "not a file written by torch.save" (of its
    safetensors) or "pass the step_N file inside"; --config DIR said "[Errno 21]"."""
    model, vocab, meta = import_official(step0, **SETTINGS)
    ck = save_checkpoint(tmp_path / "ck", model, vocab, meta)
    for given in (ck, ck / "model.safetensors"):
        with pytest.raises(CheckpointError, match="is a ptrm checkpoint already") as e:
            import_official(given, **SETTINGS)
        assert e.value.hint == f"use it as it is: -c {ck}"
    with pytest.raises(CheckpointError, match=r"is a directory, not the run's all_config.yaml"):
        import_official(step0, config_yaml=tmp_path, **SETTINGS)


@pytest.mark.parametrize("text, what", [
    ("lr: 1e-4\nepochs: 10\n", r"it has no arch: section \(keys here: lr, epochs\)"),
    ("arch:\n  name: trm\n  num_heads: 8\n", "its arch: section has no hidden_size"),
    ("{}\n", "it is empty"),
])
def test_a_config_yaml_without_the_model_settings_says_what_it_holds(step0, tmp_path, text,
                                                                     what):
    """Another program's yaml as --config said only "has no arch section with hidden_size"."""
    cfg = tmp_path / "other.yaml"
    cfg.write_text(text)
    with pytest.raises(CheckpointError, match=rf"{cfg} is not an official TRM run config: "
                                              rf"{what}") as e:
        import_official(step0, config_yaml=cfg)
    assert "under arch:" in e.value.hint and "--config" in e.value.hint


def test_learned_positions_the_weights_lack_are_named_with_their_source(step0, tmp_path):
    """A yaml's `pos_encodings: learned` on rope weights failed with only "missing:
    embed_pos.embedding_weight"; it names the setting and the file now."""
    step = _run_with_yaml(step0, tmp_path, pos_encodings="learned")
    with pytest.raises(CheckpointError, match=rf"pos_encodings='learned' "
                                              rf"\({step.parent / 'all_config.yaml'}\) "
                                              r"contradicts the weights") as e:
        import_official(step, seq_len=16)
    assert "--set pos_encodings=rope" in e.value.hint
    model, _, meta = import_official(step, seq_len=16, pos_encodings="rope")  # --set wins
    assert model.config.pos_encodings == "rope" and meta["given"]["pos_encodings"] == "override"


def test_a_length_the_data_cannot_settle_says_so(step0):
    """A maze model given a sudoku (`-c step_N`): the data's families have no 6-token layout,
    and the error only said that the weights do not give seq_len. It leads with the
    vocabulary now, and names the installed families of that size (step0 has 12 tokens)."""
    from ptrm_cli import codec as registry

    settings = {k: v for k, v in SETTINGS.items() if k != "seq_len"}
    with pytest.raises(CheckpointError, match=r"vocabulary of 12 tokens, and no single token "
                                              r"family of the data given here") as e:
        import_official(step0, layout=lambda V: None, **settings)
    if "arc" in registry.registered():
        assert e.value.hint.startswith("the installed families with 12 tokens: arc (30x30)")
    with pytest.raises(CheckpointError, match=r"do not say seq_len$") as e:
        import_official(step0, **settings)          # no data to ask: no such sentence
    assert "token family of the data" not in e.value.hint


def test_convert_names_the_families_that_fit_and_checks_out_first(step0, tmp_path):
    """A wrong --family said only that the sizes differ; an --out that is a file was reported
    after reading (and failing on) the step file."""
    from typer.testing import CliRunner

    from ptrm_cli import codec as registry
    from ptrm_cli.app import app

    if not {"arc", "sudoku"} <= set(registry.registered()):
        pytest.skip("the arc and sudoku codecs are not installed")
    runner = CliRunner()
    sets = [arg for k, v in SETTINGS.items() for arg in ("--set", f"{k}={v}")]
    res = runner.invoke(app, ["convert", str(step0), "--out", str(tmp_path / "ck"),
                              "--family", "sudoku-native", *sets])
    assert res.exit_code == 2 and not (tmp_path / "ck").exists()
    assert "--family sudoku-native: its vocabulary has 11 tokens" in res.output
    assert "families with 12 tokens: arc" in res.output and "Traceback" not in res.output
    cut = tmp_path / "step_1"
    cut.write_bytes(step0.read_bytes()[:1000])
    (tmp_path / "f").write_text("keep")
    res = runner.invoke(app, ["convert", str(cut), "--out", str(tmp_path / "f"), *sets])
    assert res.exit_code == 2 and "--out" in res.output and "is a file" in res.output
    assert (tmp_path / "f").read_text() == "keep"


def test_a_folder_that_holds_checkpoints_names_the_one_to_pass(tmp_path):
    """`-c runs/X` (a ptrm train run folder) said only "no config.json"; `-c runs/X/checkpoints`
    called its step_N folders an official run's step files."""
    vocab = Vocab("t", ("pad", "a", "b"))
    model = TRM(TRMConfig(vocab_size=3, seq_len=4, hidden_size=8, num_heads=2, L_layers=1,
                          H_cycles=1, L_cycles=1, puzzle_emb_ndim=0, puzzle_emb_len=0,
                          halt_max_steps=2))
    ckpts = tmp_path / "run" / "checkpoints"
    save_checkpoint(ckpts / "step_20", model, vocab, {})
    (ckpts / "best").symlink_to("step_20")
    for given in (tmp_path / "run", ckpts):
        with pytest.raises(CheckpointError) as e:
            load_checkpoint(given)
        assert e.value.hint == f"a `ptrm train` run: pass {ckpts / 'best'} (or {ckpts / 'last'})"
    official = tmp_path / "official"
    official.mkdir()
    (official / "step_7").write_bytes(b"")
    with pytest.raises(CheckpointError) as e:
        load_checkpoint(official)
    assert e.value.hint.endswith(str(official / "step_7"))
    with pytest.raises(CheckpointError) as e:  # nothing inside to point at
        load_checkpoint(tmp_path)
    assert e.value.hint is None


# -- what --init-from reads ------------------------------------------------------------------------

TINY_WARM = dict(hidden_size=16, num_heads=2, expansion=1.0, L_layers=1, H_cycles=1, L_cycles=1,
                 pos_encodings="rope", puzzle_emb_ndim=16, puzzle_emb_len=1, halt_max_steps=2,
                 forward_dtype="float32")


def _warm_config(run_dir: Path, data: Path) -> dict:
    return {"run_dir": str(run_dir), "seed": 0, "device": "cpu", "data": {"path": str(data)},
            "model": dict(TINY_WARM),
            "train": dict(global_batch_size=8, max_steps=2, lr=1e-3, lr_warmup_steps=1),
            "eval": {"every_steps": 2}, "checkpoint": {"every_steps": 2},
            "log": {"every": 1, "progress": "none"}}


def test_init_from_takes_the_weights_file_of_a_checkpoint_folder(tmp_path):
    """`--init-from CKPT/model.safetensors` (solve and eval take it for the folder) was "not
    a ptrm checkpoint folder (no config.json)", with the config.json right beside it."""
    from ptrm_cli.engine.data import load_dataset
    from ptrm_cli.engine.sudoku4 import write_sudoku4
    from ptrm_cli.engine.train import train

    data = write_sudoku4(tmp_path / "sudoku4", n_train=16, n_val=8)
    ds = load_dataset(data)
    cfg = TRMConfig(vocab_size=len(ds.vocab), seq_len=ds.seq_len, **TINY_WARM)
    save_checkpoint(tmp_path / "ck", TRM(cfg), ds.vocab)
    result = train(None, base=_warm_config(tmp_path / "run", data),
                   init_from=str(tmp_path / "ck" / "model.safetensors"))
    assert result["step"] == 2


def test_init_from_an_official_run_folder_names_a_step_file(step0, tmp_path):
    """`--init-from RUN` where RUN holds official step_N files was told only what --init-from
    takes; it names a step file there, as solve and eval do for the same folder."""
    from ptrm_cli.engine.sudoku4 import write_sudoku4
    from ptrm_cli.engine.train import train
    from ptrm_cli.errors import PtrmError

    data = write_sudoku4(tmp_path / "sudoku4", n_train=16, n_val=8)
    run = tmp_path / "official"
    run.mkdir()
    shutil.copy(step0, run / "step_0")
    with pytest.raises(PtrmError, match="no config.json") as e:
        train(None, base=_warm_config(tmp_path / "w", data), init_from=str(run))
    assert e.value.hint == f"for an official TRM run, pass one of its step files, e.g. " \
                           f"{run / 'step_0'}"


def test_other_formats_say_what_to_do_with_them(step0, tmp_path):
    """A safetensors file without its config.json was told what it is not and nothing more;
    a whole model saved with torch.save(model), and a legacy (non-zip) step file cut short,
    both got the hint about pickled objects, which says nothing of what to do with either."""
    model, vocab, meta = import_official(step0, **SETTINGS)
    weights = tmp_path / "weights.safetensors"
    save_file({k: v.contiguous() for k, v in model.state_dict().items()}, str(weights))
    for load in (import_official, load_checkpoint):
        with pytest.raises(CheckpointError) as e:
            load(weights, **SETTINGS)
        assert e.value.hint.startswith("a safetensors file is read only as the "
                                       "model.safetensors of a ptrm checkpoint folder"), load
    torch.save(model, tmp_path / "whole.pt")
    with pytest.raises(CheckpointError, match="it holds objects other than tensors") as e:
        import_official(tmp_path / "whole.pt", **SETTINGS)
    assert "torch.save(model.state_dict(), 'step_N')" in e.value.hint
    legacy = tmp_path / "step_3"
    torch.save(torch.load(step0, weights_only=True), legacy, _use_new_zipfile_serialization=False)
    legacy.write_bytes(legacy.read_bytes()[: legacy.stat().st_size // 2])
    with pytest.raises(CheckpointError, match="corrupt") as e:
        import_official(legacy, **SETTINGS)
    assert e.value.hint == "a damaged or incomplete copy: copy the step_N file again"


@pytest.mark.parametrize("from_end, n", [(1509, 8), (165, 16), (33, 8)])
def test_a_step_file_damaged_near_its_end_is_refused_not_a_traceback(step0, tmp_path, from_end,
                                                                     n):
    """Bytes overwritten in the zip directory (the file's last ~1.2 KB) raised zipfile's own
    UnicodeDecodeError, NotImplementedError or BadZipFile: a traceback from `ptrm convert`
    and `ptrm train --init-from`. A sweep over the last 1,300 bytes, 8 at a time every 3,
    now ends in CheckpointError at every offset; these are three that did not."""
    data = bytearray(step0.read_bytes())
    at = len(data) - from_end
    data[at:at + n] = b"\x9a" * n
    damaged = tmp_path / "step_0"
    damaged.write_bytes(bytes(data))
    with pytest.raises(CheckpointError, match="step_0 is (cut short or )?corrupt") as e:
        import_official(damaged, **SETTINGS)
    assert "copy the step_N file again" in e.value.hint


def test_a_step_file_damaged_in_the_middle_is_refused(step0, tmp_path):
    """torch.load does not check the zip's CRC-32s: a copy with a few bytes overwritten in
    a tensor loaded without a word, as a model with wrong weights."""
    data = bytearray(step0.read_bytes())
    data[len(data) // 2: len(data) // 2 + 64] = b"\xff" * 64
    damaged = tmp_path / "step_0"
    damaged.write_bytes(bytes(data))
    with pytest.raises(CheckpointError, match=r"step_0 is corrupt: its entry .* does not match "
                                              r"the checksum stored with it") as e:
        import_official(damaged, **SETTINGS)
    assert "copy the step_N file again" in e.value.hint


def test_the_parity_script_has_help_and_names_a_folder_without_fixtures(tmp_path, capsys):
    """`python -m ptrm_cli.engine.parity --help` said "no TRM fixtures in --help"."""
    from ptrm_cli.engine import parity

    with pytest.raises(SystemExit) as e:
        parity.main(["--help"])
    assert e.value.code == 0 and "usage: python -m ptrm_cli.engine.parity" in \
        capsys.readouterr().out
    assert parity.main([str(tmp_path)]) == 2
    assert f"no TRM fixtures in {tmp_path}" in capsys.readouterr().err
