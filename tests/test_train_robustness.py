"""Training runs against a hostile file system: checkpoints that cannot be written, run
folders whose newest checkpoint lost files. Each is one message before or instead of a
traceback, and what was saved before stays usable."""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import signal
import sys
from pathlib import Path

import pytest

from ptrm_cli.engine.sudoku4 import write_sudoku4
from ptrm_cli.engine.train import Stop, load_config, train
from ptrm_cli.engine.train_config import check_config
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


def test_a_newest_checkpoint_that_does_not_read_names_the_older_one_that_does(
        sudoku4, reference_run, tmp_path):
    """--resume on a run whose newest checkpoint was cut short said only that its file was
    corrupt, not that step_8 was whole nor how to continue from it (--resume takes the
    newest). Now the hint names it and the move that lets --resume reach it."""
    run = tmp_path / "run"
    shutil.copytree(reference_run, run, symlinks=True)
    ckpts = run / "checkpoints"
    weights = ckpts / "step_12" / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:1000])
    longer = config(run, sudoku4, train={"max_steps": 14})
    with pytest.raises(PtrmError, match=r"step_12/model\.safetensors is corrupt") as e:
        train(None, base=longer, resume=True)
    assert e.value.hint.startswith("step_8 is the newest checkpoint that reads: move step_12 ")
    assert e.value.hint.endswith("--resume to continue from step_8")
    move = re.search(r"\((mkdir -p .*)\)", e.value.hint).group(1)
    assert os.system(move) == 0                       # what the hint says
    assert not (ckpts / "step_12").exists() and (run / "damaged_checkpoints" / "step_12").is_dir()
    assert train(None, base=longer, resume=True)["step"] == 14

    # an older checkpoint cut too: none to go back to, and none named
    shutil.rmtree(run)
    shutil.copytree(reference_run, run, symlinks=True)
    weights.write_bytes(weights.read_bytes()[:1000])
    moments = ckpts / "step_8" / "optimizer.safetensors"
    moments.write_bytes(moments.read_bytes()[:-10])
    with pytest.raises(PtrmError, match="is corrupt") as e:
        train(None, base=longer, resume=True)
    assert e.value.hint.startswith("no older checkpoint of this run reads")


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


def test_the_start_line_says_a_cpu_compiles_first():
    """ppbench-att.yaml on a CPU compiled for over two minutes after the start line, silent."""
    from ptrm_cli.engine.train_log import _start_line

    def line(device, compile):
        return _start_line({"parameters": 7, "device": device, "training_examples": 10,
                            "examples_per_epoch": 10.0, "total_steps": 5,
                            "config": {"data": {"path": "d"}, "run_dir": "r",
                                       "train": {"global_batch_size": 2, "compile": compile}}})

    assert line("cpu", True).endswith("writing r; compiling the step first (minutes on a CPU; "
                                      "--set train.compile=false skips it)")
    assert line("cpu", False).endswith("writing r") and line("cuda:0", True).endswith("writing r")


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


# -- config mistakes: each one message with a hint (QA pass on `ptrm train`) --------------------

@pytest.mark.parametrize("sets, message", [
    (["train.lr=abc"], r"train.lr: expected a number, got 'abc'"),
    (["train.compile=maybe"], r"train.compile: expected true or false"),
    (["train.max_steps=-5"], r"train.max_steps must be >= 0"),
    (["data.path="], r"data.path: must not be null"),
    (["seed=-1", "train.lr=-1"], r"2 values make no sense"),
    (["foo"], r"expected KEY=VALUE"),
    (["train=3"], r"config train: expected a mapping"),
])
def test_every_config_mistake_has_a_hint(tmp_path, sets, message):
    """A wrong type, a value out of range, a malformed --set: the error line named the key and
    the value, but no hint followed (the CLI's contract: `error:` and `hint:`)."""
    path = tmp_path / "c.yaml"
    path.write_text("data: {path: d}\nrun_dir: r\n")
    with pytest.raises(PtrmError, match=message) as e:
        check_config(load_config(path, sets))
    assert e.value.hint and "Config reference" in e.value.hint, e.value.hint


def test_a_wrong_value_hints_at_its_default(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("data: {path: d}\nrun_dir: r\n")
    with pytest.raises(PtrmError) as e:
        load_config(path, ["train.lr=abc"])
    assert e.value.hint.startswith("leave train.lr out for its default (0.0001)")
    with pytest.raises(PtrmError) as e:   # no default to fall back on: say what it is
        load_config(path, ["data.path="])
    assert "made by `ptrm build-data`" in e.value.hint


@pytest.mark.parametrize("text, message", [(None, "no such config file"),
                                           ("", "is empty: expected a mapping"),
                                           ("- a\n", "holds a list: expected a mapping"),
                                           ("a: [\n", "not valid YAML")])
def test_a_config_file_that_is_no_config_says_where_to_start(tmp_path, text, message):
    path = tmp_path / "c.yaml"
    if text is not None:
        path.write_text(text)
    with pytest.raises(PtrmError, match=message) as e:
        load_config(path)
    assert "examples/configs/" in e.value.hint


def test_a_model_key_mistake_names_its_line_before_the_dataset_loads(tmp_path):
    """A misspelt model key was found by TRMConfig after the dataset had loaded, with neither
    the file's line nor a suggestion; a wrong model value did not say where it was written."""
    from ptrm_cli.engine.train_config import model_config

    path = tmp_path / "c.yaml"
    path.write_text("data: {path: nowhere}\nrun_dir: r\nmodel:\n  hidden_sise: 32\n")
    with pytest.raises(PtrmError, match=rf"^{re.escape(str(path))}:4: config section model: "
                                        r"unknown key\(s\) hidden_sise \(did you mean "
                                        r"hidden_size\?\)") as e:
        load_config(path)
    assert "hidden_size" in e.value.hint
    path.write_text("data: {path: d}\nrun_dir: r\nmodel:\n  hidden_size: 32\n  num_heads: 5\n")

    class Data:  # what model_config reads of a dataset
        vocab, seq_len, num_puzzle_ids = [0] * 10, 16, 1

    with pytest.raises(PtrmError, match=rf"^{re.escape(str(path))}:4: model config: "
                                        r"hidden_size 32 is not divisible") as e:
        model_config(load_config(path), Data())
    assert e.value.hint


class _Data:  # what model_config reads of a dataset
    vocab, seq_len, num_puzzle_ids = [0] * 10, 16, 1


def test_the_model_key_hint_leaves_out_the_sizes_the_dataset_gives(tmp_path):
    """The known keys a misspelt model key's hint listed included vocab_size, seq_len and
    num_puzzle_identifiers, which come from the dataset and which a config leaves out. They
    are still accepted where they match the dataset."""
    from ptrm_cli.engine.train_config import FROM_DATASET, model_config

    path = tmp_path / "c.yaml"
    path.write_text("data: {path: d}\nrun_dir: r\nmodel:\n  hidden_sise: 32\n")
    with pytest.raises(PtrmError) as e:
        load_config(path)
    assert "hidden_size" in e.value.hint and "num_heads" in e.value.hint
    assert not [k for k in FROM_DATASET if k in e.value.hint], e.value.hint
    path.write_text("data: {path: d}\nrun_dir: r\nmodel:\n  seq_len: 16\n  vocab_size: 10\n"
                    "  num_puzzle_identifiers: 1\n  hidden_size: 32\n")
    assert model_config(load_config(path), _Data()).seq_len == 16


def test_a_wrong_model_value_names_the_set_that_gave_it(tmp_path):
    """TRMConfig's "hidden_size 32 is not divisible by num_heads 3" names two keys; the error
    pointed at the first, hidden_size's line in the file, when the --set of num_heads broke
    it. A key the --set gave is named first; without one, the file's first as before."""
    from ptrm_cli.engine.train_config import model_config

    path = tmp_path / "c.yaml"
    path.write_text("data: {path: d}\nrun_dir: r\nmodel:\n  hidden_size: 32\n  num_heads: 2\n")
    for sets, where in ((["model.num_heads=3"], "--set 'model.num_heads=3': "),
                        (["model.hidden_size=33"], "--set 'model.hidden_size=33': "),
                        (["model.num_heads=3", "model.hidden_size=31"],
                         "--set 'model.hidden_size=31': ")):
        with pytest.raises(PtrmError, match=r"not divisible by num_heads") as e:
            model_config(load_config(path, sets), _Data())
        assert str(e.value).startswith(where), (sets, str(e.value))
    path.write_text("data: {path: d}\nrun_dir: r\nmodel:\n  num_heads: 3\n  hidden_size: 32\n")
    with pytest.raises(PtrmError) as e:  # both in the file: the first the message names
        model_config(load_config(path), _Data())
    assert str(e.value).startswith(f"{path}:5: ")


def test_a_batch_larger_than_an_epoch_is_said(tmp_path, capsys):
    """A global_batch_size above an epoch trained without a word: 64 on 40 examples, so every
    batch holds some examples twice. Now a warning, suggesting 32; the tests' batch of 16 fits
    and says nothing."""
    data = write_sudoku4(tmp_path / "data", n_train=40, n_val=4)
    doc = config(tmp_path / "run", data, train={"max_steps": 1, "global_batch_size": 64})
    train(None, base=doc)
    err = capsys.readouterr().err
    assert "warning: train.global_batch_size 64 is more than the 40 examples an epoch " \
           "draws" in err and "--set train.global_batch_size=32" in err
    train(None, base=config(tmp_path / "fits", data, train={"max_steps": 1}))
    assert "warning" not in capsys.readouterr().err


def test_the_batch_a_warning_suggests_splits_over_the_ranks(capsys):
    """The batch-above-an-epoch warning suggested the power of two below the epoch, which need
    not divide by the ranks: 1024 of 2,000 examples on 3 ranks, refused by the next check.
    Now a multiple of the ranks (a power of two per rank), still within the epoch."""
    from ptrm_cli.engine.train_loop import _warn_batch_above_epoch

    for ranks, epoch, want in ((1, 2000, 1024), (3, 2000, 1536), (4, 2000, 1024),
                               (6, 40, 24), (8, 5, 8)):
        _warn_batch_above_epoch(epoch + 1, epoch, ranks)
        got = int(re.search(r"global_batch_size=(\d+)", capsys.readouterr().err).group(1))
        assert got == want and got % ranks == 0, (ranks, epoch, got)
        assert got <= max(epoch, ranks)  # (8 ranks on 5 examples: no batch splits smaller)


def test_evaluation_runs_no_more_rows_than_the_validation_split(sudoku4, tmp_path):
    """Each evaluation batch was padded to the training batch: 5 validation examples ran as
    16 rows (256 as 768 at the recipe's batch)."""
    from ptrm_cli.engine.train_loop import Trainer

    doc = config(tmp_path / "run", sudoku4)
    doc["data"]["val_limit"] = 5
    tr = Trainer(load_config(None, base=doc))
    rows, step = [], tr.eval_step
    tr.eval_step = lambda carry, x: (rows.append(x.shape[0]), step(carry, x))[1]
    assert tr.evaluate()["count"] == 5 and set(rows) == {5}


def test_a_warm_start_from_another_vocabulary_hints_at_the_data(sudoku4, reference_run,
                                                                tmp_path):
    from ptrm_cli.engine.sudoku4 import write_sudoku4 as write

    other = write(tmp_path / "other", n_train=40, n_val=4)
    meta = json.loads((other / "meta.json").read_text())
    meta["vocab"]["family"] = meta["family"] = "sudoku4-other"
    (other / "meta.json").write_text(json.dumps(meta))
    with pytest.raises(PtrmError, match="uses the 'sudoku4' vocabulary") as e:
        train(None, base=config(tmp_path / "run", other),
              init_from=str(reference_run / "checkpoints" / "step_12"))
    assert "--init-from needs a dataset of the checkpoint's tokens" in e.value.hint


def test_the_start_line_says_one_update_not_1_updates():
    from ptrm_cli.engine.train_log import _start_line

    fields = {"parameters": 7, "device": "cpu", "training_examples": 40,
              "examples_per_epoch": 40.0, "total_steps": 1,
              "config": {"data": {"path": "d"}, "train": {"global_batch_size": 16},
                         "run_dir": "r"}}
    assert "), 1 update of 16; writing r" in _start_line(fields)


def test_a_device_the_config_wrote_is_named_where_it_was_written(sudoku4, tmp_path):
    """`device: gpu` in the file was reported as "--device 'gpu'", a flag never given."""
    path = tmp_path / "c.yaml"
    path.write_text(f"data: {{path: {sudoku4}}}\nrun_dir: {tmp_path / 'run'}\ndevice: gpu\n")
    with pytest.raises(PtrmError, match=rf"^{re.escape(str(path))}:3: config device 'gpu': "
                                        r"expected auto, cpu") as e:
        train(path)
    with pytest.raises(PtrmError, match=r"^--device 'gpu'") as flag:  # the flag's own: as it was
        train(path, device="gpu")
    # the flag's hint (if any) whole, then the config's own clause: "(it overrides the
    # config's)" tacked onto the flag's hint read as said of its last clause ("auto ... takes
    # one when there is one (it overrides the config's)")
    said = flag.value.hint or "device: auto (the default) takes a GPU where there is one"
    assert e.value.hint == (f"{said}; the config's device takes what --device takes, and "
                            "--device cpu (or another) overrides it")


def test_a_training_split_the_dataset_lacks_has_a_hint(sudoku4, tmp_path):
    """A misspelt split is answered as a misspelt key is (it had no "did you mean"); a name
    near none of the splits gets none."""
    doc = config(tmp_path / "run", sudoku4)
    doc["data"]["train_split"] = "trian"
    with pytest.raises(PtrmError, match=r"^data.train_split 'trian': dataset .* has splits "
                                        r"train, val \(did you mean train\?\)$") as e:
        train(None, base=doc)
    assert "--set data.train_split=" in e.value.hint
    doc["data"]["train_split"] = "xyz"
    with pytest.raises(PtrmError, match=r"has splits train, val$"):
        train(None, base=doc)


class _ReaderGone(io.TextIOBase):
    """stderr once the pipe's reader went away."""

    def write(self, text):
        raise BrokenPipeError(32, "Broken pipe")


@pytest.mark.parametrize("ctrl_c", [True, False], ids=["ctrl-c", "reader-gone"])
def test_a_console_whose_reader_went_away_stops_with_a_checkpoint(
        sudoku4, reference_run, tmp_path, monkeypatch, ctrl_c):
    """`ptrm train c.yaml 2>&1 | tee log`, then Ctrl-C: tee died of it, and the trainer's
    "stopping after this step" message (or, with `| head`, its next log line) found no reader:
    the run ended at once (exit 141) with nothing saved since the last checkpoint. Now it
    stops as on Ctrl-C, with a checkpoint, and resumes exactly."""
    from ptrm_cli import console

    monkeypatch.setattr(console, "silence_stdout", lambda: None)  # pytest's own stdout
    monkeypatch.setattr(console.err_console, "quiet", False)      # put back by undo()
    run = tmp_path / "run"

    def gone_at_5(trainer):
        if trainer.step == 5:
            monkeypatch.setattr(sys, "stderr", _ReaderGone())
            if ctrl_c:
                os.kill(os.getpid(), signal.SIGINT)

    with pytest.raises(Stop):
        train(None, base=config(run, sudoku4, log={"progress": "lines"}), on_step=gone_at_5)
    monkeypatch.undo()
    # Ctrl-C: at the end of that step; a reader gone alone: at the end of the step whose log
    # line found it gone (every 2)
    assert (run / "checkpoints" / "last").resolve().name == ("step_5" if ctrl_c else "step_6")
    assert train(None, base=config(run, sudoku4), resume=True)["step"] == 12
    assert_same_state(final_state(run), final_state(reference_run))


def test_a_diverged_run_is_said_once_and_its_log_stays_json(sudoku4, tmp_path, capsys):
    """lr 1e9: the loss went NaN by step 2 and the run trained on without a word, its log.jsonl
    lines holding `NaN`, which is not JSON (jq, JSON.parse and Python's strict mode refuse)."""
    run = tmp_path / "run"
    doc = config(run, sudoku4, train={"lr": 1e9, "lr_warmup_steps": 1},
                 log={"progress": "lines"})
    train(None, base=doc)
    said = capsys.readouterr().err
    assert said.count("the training loss is nan") == 1 and "lower train.lr" in said

    def strict(token):
        raise ValueError(f"not JSON: {token}")

    lines = [json.loads(line, parse_constant=strict)
             for line in (run / "log.jsonl").read_text().splitlines()]
    assert any(r["event"] == "train" and r["loss"] is None for r in lines)
