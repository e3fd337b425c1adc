"""`ptrm convert`: what a user's mistakes in the run's files give (official import itself is
tested in test_checkpoint.py)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ptrm_cli.app import app

STEP0 = Path(__file__).resolve().parents[1].parent / "shared" / "fixtures" / "trm" / "step_0"


def test_an_all_config_yaml_whose_data_paths_is_a_number_is_read(tmp_path):
    """`data_paths: 5` in a hand-edited all_config.yaml was a TypeError traceback (list() of
    an int); it is one path like any other, which is not readable from here."""
    if not STEP0.exists():
        pytest.skip(f"golden fixtures not found at {STEP0.parent}")
    shutil.copy(STEP0, tmp_path / "step_0")
    (tmp_path / "all_config.yaml").write_text(
        "arch:\n  hidden_size: 64\n  num_heads: 2\n  H_cycles: 2\n  L_cycles: 3\n"
        "  halt_max_steps: 4\n  pos_encodings: rope\n  puzzle_emb_len: 4\ndata_paths: 5\n")
    r = CliRunner().invoke(app, ["convert", str(tmp_path / "step_0"), "-o",
                                 str(tmp_path / "ck")])
    assert r.exit_code == 2, r.output
    assert "the weights do not say seq_len" in r.output and "data_paths, 5," in r.output
    assert "Traceback" not in r.output and not (tmp_path / "ck").exists()


def _convert(*args):
    r = CliRunner().invoke(app, ["convert", *map(str, args)])
    assert r.exit_code == 2, r.output
    assert "Traceback" not in r.output
    return r.output


def test_a_puzzle_url_given_as_the_step_file_is_named_as_one(tmp_path):
    """A puzzle person's `ptrm convert URL -o x` said "https:/puzz.link/...: no such file"
    (the path had eaten a '/'), with no hint that convert imports models, not puzzles."""
    out = _convert("https://puzz.link/p?sudoku/4/4/g2h4i2h1i4", "-o", tmp_path / "ck")
    assert "error: https://puzz.link/p?sudoku/4/4/g2h4i2h1i4: a puzzle URL, not a " \
           "checkpoint file" in out, out
    assert "hint:" in out and "does not convert puzzles" in out and "ptrm solve" in out


def test_a_puzzle_file_given_as_the_step_file_is_named_as_one(tmp_path):
    """It said "is not a file written by torch.save", with no hint."""
    puzzle = tmp_path / "p.txt"
    puzzle.write_text("pzprv3\nlightup\n4\n4\n. . . . \n1 . . . \n. . . 2 \n- . . - \n")
    out = _convert(puzzle, "-o", tmp_path / "ck")
    assert f"{puzzle} is a lightup puzzle, not an official TRM checkpoint" in out, out
    assert "hint:" in out and "does not convert puzzles" in out
    assert not (tmp_path / "ck").exists()


def test_every_step_file_mistake_has_a_hint(tmp_path):
    """A missing step file, text that is no checkpoint, `--set KEY` without a value: one
    error line and no hint, against the README's promise of one."""
    out = _convert(tmp_path / "nosuch", "-o", tmp_path / "ck")
    assert "nosuch: no such file" in out and "hint: STEP_FILE is the step_N file" in out, out
    (tmp_path / "notes.txt").write_text("hello\n")
    out = _convert(tmp_path / "notes.txt", "-o", tmp_path / "ck")
    assert "not a file written by torch.save" in out and "hint:" in out, out
    out = _convert(tmp_path / "nosuch", "-o", tmp_path / "ck", "--set", "L_cycles")
    assert "--set 'L_cycles': expected KEY=VALUE" in out and "hint:" in out, out


def test_a_type_given_as_the_family_names_its_families(tmp_path):
    """`--family sudoku` said only "no installed codec has that family": sudoku is a type,
    whose families (ppbench, sudoku-native) are what --family takes."""
    out = _convert(tmp_path / "step_0", "-o", tmp_path / "ck", "--family", "sudoku")
    assert "--family 'sudoku' is a puzzle type, not a token family" in out, out
    assert "sudoku-native" in out and "hint:" in out
    out = _convert(tmp_path / "step_0", "-o", tmp_path / "ck", "--family", "nosuch")
    assert "no installed codec has that family" in out and "hint:" in out, out


def test_a_bad_set_value_has_a_hint(tmp_path):
    if not STEP0.exists():
        pytest.skip(f"golden fixtures not found at {STEP0.parent}")
    rest = [f"--set={kv}" for kv in ("H_cycles=2", "L_cycles=3", "halt_max_steps=4",
                                      "num_heads=2", "pos_encodings=rope", "puzzle_emb_len=4")]
    out = _convert(STEP0, "-o", tmp_path / "ck", *rest, "--set", "seq_len=abc")
    assert "seq_len must be a positive integer, got 'abc' (from --set)" in out, out
    assert "hint: give each --set the value the official run used" in out
    out = _convert(STEP0, "-o", tmp_path / "ck", "--config", tmp_path / "nosuch.yaml")
    assert "nosuch.yaml: no such file" in out and "hint: --config takes" in out, out


def test_a_step_file_without_its_first_layer_is_named_incomplete(tmp_path):
    """A state_dict whose L_level.layers.0 tensors are missing (cut down, or filtered by hand)
    was a KeyError traceback: the first layer's SwiGLU width is read to infer `expansion`."""
    import torch

    if not STEP0.exists():
        pytest.skip(f"golden fixtures not found at {STEP0.parent}")
    state = torch.load(STEP0, weights_only=True)
    torch.save({k: v for k, v in state.items() if ".layers.0." not in k}, tmp_path / "step_0")
    out = _convert(tmp_path / "step_0", "-o", tmp_path / "ck", "--set", "seq_len=16")
    assert "is not a whole TRM checkpoint" in out and "L_level.layers.0.mlp" in out, out
    assert "hint:" in out and not (tmp_path / "ck").exists()


def test_a_step_file_with_nan_weights_is_refused(tmp_path):
    """A diverged run's step_N (NaN weights) was converted into a checkpoint that every later
    command refused, and `ptrm solve -c step_N` answered from it with a confidence: the
    finite check ran only on ptrm checkpoints."""
    import torch

    if not STEP0.exists():
        pytest.skip(f"golden fixtures not found at {STEP0.parent}")
    state = torch.load(STEP0, weights_only=True)
    key = next(k for k in state if k.endswith("lm_head.weight"))
    state[key] = torch.full_like(state[key], float("nan"))
    torch.save(state, tmp_path / "step_0")
    sets = [f"--set={kv}" for kv in ("seq_len=16", "H_cycles=2", "L_cycles=3", "num_heads=2",
                                     "halt_max_steps=4", "pos_encodings=rope",
                                     "puzzle_emb_len=4")]
    out = _convert(tmp_path / "step_0", "-o", tmp_path / "ck", *sets)
    assert "lm_head.weight holds NaN or infinite values" in out and "hint:" in out, out
    assert not (tmp_path / "ck").exists()


def test_converting_into_the_folder_one_stands_in_is_refused_by_name(tmp_path, monkeypatch):
    """`cd ckpt && ptrm convert step_N --out .` was a ValueError traceback ("PosixPath('.')
    has an empty name") after the import: the atomic swap cannot replace the folder one is
    in. Refused before the work, as build-data refuses it."""
    (tmp_path / "ck").mkdir()
    (tmp_path / "ck" / "config.json").write_text("{}")
    monkeypatch.chdir(tmp_path / "ck")
    for out in (".", "..", "/"):
        said = " ".join(_convert(STEP0, "-o", out, "--set", "seq_len=16").split())
        assert f"--out {out}: name the checkpoint folder" in said and "hint:" in said, said
    assert [p.name for p in (tmp_path / "ck").iterdir()] == ["config.json"]


def test_a_setting_given_with_set_is_said_to_come_from_set(tmp_path):
    """The length clash with --family said "(override says 16)" and the table's "from" column
    "override", for a value the user gave as `--set seq_len=16`."""
    if not STEP0.exists():
        pytest.skip(f"golden fixtures not found at {STEP0.parent}")
    sets = [f"--set={kv}" for kv in ("seq_len=16", "H_cycles=2", "L_cycles=3", "num_heads=2",
                                     "halt_max_steps=4", "pos_encodings=rope",
                                     "puzzle_emb_len=4")]
    said = " ".join(_convert(STEP0, "-o", tmp_path / "ck", *sets, "--family", "arc").split())
    assert "(--set says 16)" in said and "override" not in said, said
    r = CliRunner().invoke(app, ["convert", str(STEP0), "-o", str(tmp_path / "ck"), *sets])
    assert r.exit_code == 0 and "override" not in r.output and "--set" in r.output, r.output


def test_a_config_that_is_no_run_config_gets_the_config_hint(tmp_path):
    """`--config list.yaml` (a YAML list) said "list.yaml is not a TRM run config" with the
    hint about STEP_FILE, as if the step file were wrong."""
    if not STEP0.exists():
        pytest.skip(f"golden fixtures not found at {STEP0.parent}")
    (tmp_path / "list.yaml").write_text("- 1\n- 2\n")
    said = " ".join(_convert(STEP0, "--config", tmp_path / "list.yaml", "-o",
                             tmp_path / "ck").split())
    assert "is not a TRM run config" in said and "hint: --config takes the run's " \
           "all_config.yaml" in said, said
