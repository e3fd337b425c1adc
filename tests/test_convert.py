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
