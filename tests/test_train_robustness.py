"""Training runs against a hostile file system: checkpoints that cannot be written, run
folders whose newest checkpoint lost files. Each is one message before or instead of a
traceback, and what was saved before stays usable."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from ptrm_cli.engine.sudoku4 import write_sudoku4
from ptrm_cli.engine.train import train
from ptrm_cli.errors import PtrmError

from test_train import assert_same_state, config, final_state


@pytest.fixture(scope="module")
def sudoku4(tmp_path_factory) -> Path:
    return write_sudoku4(tmp_path_factory.mktemp("data") / "sudoku4")


@pytest.fixture(scope="module")
def reference_run(sudoku4, tmp_path_factory):
    """12 uninterrupted steps; checkpoints at 4, 6 (eval), 8, 12."""
    run = tmp_path_factory.mktemp("ref") / "run"
    train(None, base=config(run, sudoku4))
    return run


def test_a_full_disk_at_a_checkpoint_is_one_message_and_the_run_resumes(
        sudoku4, reference_run, tmp_path, monkeypatch):
    """safetensors reports a failed write as a SafetensorError (not an OSError): a full disk
    ended training in a traceback. Now one message, saying which checkpoint is whole."""
    import safetensors.torch
    from safetensors import SafetensorError

    run = tmp_path / "run"
    real = safetensors.torch.save_file

    def full_at_step_8(tensors, filename, metadata=None):
        if ".step_8." in filename:
            raise SafetensorError("Error while serializing: I/O error: No space left on "
                                  "device (os error 28)")
        return real(tensors, filename, metadata=metadata)

    monkeypatch.setattr(safetensors.torch, "save_file", full_at_step_8)
    with pytest.raises(PtrmError, match=r"step_8: cannot write the checkpoint \(.*No space") as e:
        train(None, base=config(run, sudoku4))
    assert "step_6, is whole" in e.value.hint and "--resume" in e.value.hint
    ckpts = run / "checkpoints"
    assert not (ckpts / "step_8").exists() and not list(ckpts.glob(".step_8*"))
    monkeypatch.setattr(safetensors.torch, "save_file", real)
    assert train(None, base=config(run, sudoku4), resume=True)["step"] == 12
    assert_same_state(final_state(run), final_state(reference_run))


def _log_lines(run: Path) -> int:
    return len((run / "log.jsonl").read_text().splitlines())


def test_a_newest_checkpoint_that_lost_a_file_is_refused_before_any_update(
        sudoku4, reference_run, tmp_path):
    """--resume fell back to the newest complete checkpoint (step_8), trained to step 12 and
    then failed to replace the damaged step_12: the work was lost. Now it is refused at once,
    naming the file missing and what to remove."""
    run = tmp_path / "run"
    shutil.copytree(reference_run, run, symlinks=True)
    (run / "checkpoints" / "step_12" / "config.json").unlink()
    lines = _log_lines(run)
    longer = config(run, sudoku4, train={"max_steps": 14})
    with pytest.raises(PtrmError, match=r"step_12 has no config\.json: an incomplete") as e:
        train(None, base=longer, resume=True)
    assert e.value.hint.endswith("step_12 to continue from step_8")
    assert _log_lines(run) == lines                   # refused before the run began
    shutil.rmtree(run / "checkpoints" / "step_12")    # what the hint says
    assert train(None, base=longer, resume=True)["step"] == 14


def test_a_run_folder_with_only_incomplete_checkpoints(sudoku4, reference_run, tmp_path):
    """Neither a resume (nothing complete) nor a new run (it would reach the old step_<N>
    folders and fail there) goes on in it."""
    run = tmp_path / "run"
    shutil.copytree(reference_run, run, symlinks=True)
    for d in (run / "checkpoints").glob("step_*"):
        (d / "train_state.json").unlink()
    with pytest.raises(PtrmError, match=r"nothing to resume: .* \(.*has no train_state\.json\)"):
        train(None, base=config(run, sudoku4), resume=True)
    with pytest.raises(PtrmError, match="already has checkpoints"):
        train(None, base=config(run, sudoku4))
    assert json.loads((run / "log.jsonl").read_text().splitlines()[-1])["event"] == "end"


def test_a_resume_names_the_settings_that_changed(sudoku4, reference_run, tmp_path, capsys):
    """An exact resume may change the lr or the length; it did so without a word."""
    run = tmp_path / "run"
    shutil.copytree(reference_run, run, symlinks=True)
    capsys.readouterr()
    doc = config(run, sudoku4, train={"max_steps": 13, "lr": 1e-3})
    assert train(None, base=doc, resume=True)["step"] == 13
    note = next(line for line in capsys.readouterr().err.splitlines() if "note:" in line)
    assert "since step_12: " in note and "train.lr 0.003 -> 0.001" in note
    assert "train.max_steps 12 -> 13" in note and "seed" not in note


def test_a_run_says_what_it_trains_on_before_the_first_step(sudoku4, tmp_path, capsys):
    """Nothing was printed until the first train line (`log.every` updates in: a minute or
    more behind a compile or a slow CPU): not the data, the run folder or the size."""
    run = tmp_path / "run[lr=3e-4][/]"  # a path is text, not markup (a MarkupError crashed it)
    train(None, base=config(run, sudoku4, train={"max_steps": 2}, log={"progress": "lines"}))
    first = capsys.readouterr().err.splitlines()[0]
    assert first.startswith("training ") and " parameters on cpu: " in first
    assert str(sudoku4) in first and f"writing {run}" in first
    assert re.search(r" \([\d,]+ training examples\), 2 updates of 16;", first), first


def test_the_start_line_says_an_epoch_draws_one_version_of_each_puzzle():
    """With group sampling (augmented puzzles) it said "142 training examples per epoch" of
    a dataset build-data had just reported as 1,420 training examples."""
    from ptrm_cli.engine.train_log import _start_line

    fields = {"parameters": 7, "device": "cpu", "training_examples": 1420,
              "examples_per_epoch": 142.0, "total_steps": 5,
              "config": {"data": {"path": "d"}, "train": {"global_batch_size": 16},
                         "run_dir": "r"}}
    assert "d (1,420 training examples, 142 drawn an epoch (one version of each puzzle)), " \
           "5 updates of 16; writing r" in _start_line(fields)


def test_the_summary_names_the_best_checkpoint(sudoku4, reference_run, capsys, monkeypatch,
                                                tmp_path):
    """The summary named only the last step_N, while what comes next (`ptrm eval -c`, `ptrm
    solve -c`) takes checkpoints/best, a different step."""
    from ptrm_cli.commands import train as command

    monkeypatch.setattr(command.console, "width", 300)  # a long tmp path: one line
    ckpts = reference_run / "checkpoints"
    command._summary({"step": 12, "val": {}, "best": {"step": 6, "exact_accuracy": 0.5},
              "checkpoint": str(ckpts / "step_12")})
    out = " ".join(capsys.readouterr().out.split())
    assert f"best checkpoint │ {ckpts / 'best'}" in out
    marked = tmp_path / "exp[bs=768]"   # printed as written, not read as markup
    shutil.copytree(reference_run, marked, symlinks=True)
    command._summary({"step": 12, "val": {}, "best": {"step": 6, "exact_accuracy": 0.5},
                      "checkpoint": str(marked / "checkpoints" / "step_12")})
    out = " ".join(capsys.readouterr().out.split())
    assert f"checkpoint │ {marked / 'checkpoints' / 'step_12'}" in out
    assert f"best checkpoint │ {marked / 'checkpoints' / 'best'}" in out


def test_pruning_removes_a_damaged_step_folder_as_it_would_a_whole_one(
        sudoku4, reference_run, tmp_path):
    """Pruning looked at complete checkpoints only: a step folder that lost a file stayed in
    the run folder forever. It goes once it is older than every checkpoint kept; one inside
    the kept range stays (it may be repaired)."""
    run = tmp_path / "run"
    shutil.copytree(reference_run, run, symlinks=True)
    ckpts = run / "checkpoints"
    for n in (2, 10):
        shutil.copytree(ckpts / "step_8", ckpts / f"step_{n}")
        (ckpts / f"step_{n}" / "train_state.json").unlink()
    doc = config(run, sudoku4, train={"max_steps": 16}, checkpoint={"every_steps": 4, "keep": 3})
    assert train(None, base=doc, resume=True)["step"] == 16
    left = sorted(d.name for d in ckpts.iterdir() if not d.is_symlink())
    best = (ckpts / "best").resolve().name  # kept whatever its age
    assert left == sorted({"step_10", "step_12", "step_16", "step_8", best})
