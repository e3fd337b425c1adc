"""Official TRM step files used as they are, where import meets the commands: `ptrm bench -c
step_N` must read the file as `ptrm eval` and `ptrm solve` do (import itself is tested in
test_checkpoint.py, convert's file mistakes in test_convert.py)."""

from __future__ import annotations

import json

import pytest
import torch
from typer.testing import CliRunner

from ptrm_cli.app import app
from ptrm_cli.engine.model import TRM, TRMConfig

from fixtures_models import golden_examples, installed_codecs

PREFIX = "_orig_mod.model.inner."  # what pretrain.py's torch.compile leaves on every key
BENCH = ["bench", "--K", "1", "--D", "1", "--puzzles", "1", "--device", "cpu",
         "--modes", "eager", "--json"]


def official_run(folder, *, mlp_t: bool):
    """A tiny sudoku-native-shaped (11 tokens, 81 cells) official run: step_5 and an
    all_config.yaml whose dataset is not here, so only a layout can say seq_len for TRM-Att
    (TRM-MLP's token mixer fixes it in the weights)."""
    if "sudoku" not in installed_codecs():
        pytest.skip("the sudoku codec is not installed")
    cfg = TRMConfig(vocab_size=11, seq_len=81, hidden_size=64, num_heads=2, L_layers=1,
                    H_cycles=1, L_cycles=1, puzzle_emb_ndim=64, puzzle_emb_len=1, halt_max_steps=2,
                    mlp_t=mlp_t,
                    pos_encodings="none" if mlp_t else "rope")
    torch.manual_seed(0)
    state = TRM(cfg).state_dict()
    folder.mkdir()
    torch.save({PREFIX + k: v for k, v in state.items()}, folder / "step_5")
    (folder / "all_config.yaml").write_text(
        "arch:\n  name: recursive_reasoning.trm@TinyRecursiveReasoningModel_ACTV1\n"
        f"  hidden_size: 64\n  num_heads: 2\n  L_layers: 1\n  H_cycles: 1\n  L_cycles: 1\n"
        f"  halt_max_steps: 2\n  puzzle_emb_len: 1\n  mlp_t: {str(mlp_t).lower()}\n"
        f"  pos_encodings: {'none' if mlp_t else 'rope'}\n"
        "data_paths: [data/sudoku-extreme-1k-aug-1000]\n")
    return folder / "step_5"


def test_bench_takes_an_official_att_step_file_s_length_from_its_family(tmp_path):
    """A TRM-Att step file whose length neither its weights nor its yaml give: eval and solve
    take it from the one family of its vocabulary size (sudoku-native: 81); bench refused it
    ("the weights do not say seq_len", with a hint that no family of the data had 11 tokens)."""
    step = official_run(tmp_path / "run", mlp_t=False)
    r = CliRunner().invoke(app, [*BENCH, "-c", str(step), "--split", "random"])
    assert r.exit_code == 0, r.output
    rep = json.loads(r.stdout)
    assert rep["model"]["config"]["seq_len"] == 81


def test_bench_runs_an_official_step_file_on_the_golden_puzzles_it_reads(tmp_path):
    """An official Sudoku-MLP step file has no token table (trm-v11) until a codec gives it
    one: bench's auto split matched golden types by table name, so it timed random tokens
    where the same model converted with --family sudoku-native ran golden sudoku."""
    if not golden_examples(["sudoku"]):
        pytest.skip("needs the golden set")
    step = official_run(tmp_path / "run", mlp_t=True)
    r = CliRunner().invoke(app, [*BENCH, "-c", str(step)])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["puzzles"]["source"].startswith("golden sudoku"), r.output


def test_eval_on_golden_names_the_types_an_official_step_file_reads(tmp_path):
    """The same table-name match gave an official Sudoku-MLP a bare "give it one of those" on
    the golden set, where its converted copy was told `--types sudoku`."""
    if not golden_examples(["sudoku"]):
        pytest.skip("needs the golden set")
    step = official_run(tmp_path / "run", mlp_t=True)
    r = CliRunner().invoke(app, ["eval", "-c", str(step), "--K", "2", "--D", "2", "--limit", "2",
                                 "--seeds", "1", "--device", "cpu", "--no-plots", "-o",
                                 str(tmp_path / "ev")])
    assert r.exit_code == 2 and "--types sudoku" in " ".join(r.output.split()), r.output


def test_solve_names_the_kind_of_puzzle_a_step_file_of_another_vocabulary_is_for(tmp_path):
    """A maze-shaped TRM-Att step file (6 tokens; its length is in no weight) given a sudoku:
    the error said "the weights do not say seq_len" and advised `--set`, which only led to
    the next refusal. It says the vocabulary does not fit, and which installed family does."""
    if "maze" not in installed_codecs() or "sudoku" not in installed_codecs():
        pytest.skip("the maze and sudoku codecs are not installed")
    cfg = TRMConfig(vocab_size=6, seq_len=900, hidden_size=32, num_heads=2, L_layers=1,
                    H_cycles=1, L_cycles=1, puzzle_emb_ndim=0, puzzle_emb_len=0,
                    halt_max_steps=2)
    (tmp_path / "run").mkdir()
    torch.save({PREFIX + k: v for k, v in TRM(cfg).state_dict().items()},
               tmp_path / "run" / "step_9")
    (tmp_path / "run" / "all_config.yaml").write_text(
        "arch:\n  hidden_size: 32\n  num_heads: 2\n  H_cycles: 1\n  L_cycles: 1\n"
        "  halt_max_steps: 2\n  pos_encodings: rope\n")
    sudoku = ("53..7....6..195....98....6.8...6...34..8.3..17...2...6.6....28....419..5"
              "....8..79")
    r = CliRunner().invoke(app, ["solve", sudoku, "--codec", "sudoku", "-c",
                                 str(tmp_path / "run" / "step_9"), "--device", "cpu"])
    said = " ".join(r.output.split())
    assert r.exit_code == 2 and "vocabulary of 6 tokens" in said, r.output
    assert "families with 6 tokens: maze (30x30)" in said and "--set" not in said, r.output
