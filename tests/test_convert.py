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
