"""`--threads N` on eval and train (solve has its own CPU default): torch gets N threads for
the work, a training run's resume hint keeps them (a CPU run repeats bit for bit only with the
same count), and torchrun's ranks get them through OMP_NUM_THREADS."""

from __future__ import annotations

import shlex

import pytest
import torch
from typer.testing import CliRunner

from ptrm_cli.app import app


@pytest.fixture
def restore_threads(monkeypatch):
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)  # set_threads writes it: put back
    before = torch.get_num_threads()
    yield
    torch.set_num_threads(before)


def test_train_runs_with_the_threads_given(restore_threads, monkeypatch, tmp_path):
    import os

    from ptrm_cli.engine import train as train_mod

    seen = {}

    def fake_run(config, sets, **kw):
        seen.update(threads=torch.get_num_threads(), omp=os.environ.get("OMP_NUM_THREADS"))
        return {"step": 0, "checkpoint": None}

    monkeypatch.setattr(train_mod, "train", fake_run)
    target = 1 if torch.get_num_threads() > 1 else 2  # a count other than the current one
    r = CliRunner().invoke(app, ["train", str(tmp_path / "c.yaml"), "--threads", str(target)])
    assert r.exit_code == 0, r.output
    assert seen == {"threads": target, "omp": str(target)}


def test_the_resume_hint_keeps_the_threads():
    from ptrm_cli.engine.train import resume_command

    hint = resume_command("c.yaml", ["run_dir=r"], None, "cpu", 1)
    assert shlex.split(hint) == ["ptrm", "train", "c.yaml", "--set", "run_dir=r", "--device",
                                 "cpu", "--threads", "1", "--resume"]


def test_eval_runs_with_the_threads_given(restore_threads, monkeypatch, tmp_path):
    from ptrm_cli.engine import distributed

    seen = set()
    real = distributed.sample
    monkeypatch.setattr(distributed, "sample", lambda *a, **kw: seen.add(
        torch.get_num_threads()) or real(*a, **kw))
    target = 1 if torch.get_num_threads() > 1 else 2
    r = CliRunner().invoke(app, ["eval", "--split", "golden", "--limit", "1", "--K", "2",
                                 "--D", "1", "--det-D", "1", "--seeds", "1", "--no-plots",
                                 "-o", str(tmp_path / "ev"), "--threads", str(target)])
    if "ppbench" in r.output and r.exit_code == 2:  # no golden set installed here
        pytest.skip("the golden set is not installed")
    assert r.exit_code == 0, r.output
    assert seen == {target}


def test_threads_must_be_positive():
    for command in (["train", "c.yaml"], ["eval"]):
        r = CliRunner().invoke(app, [*command, "--threads", "0"])
        assert r.exit_code == 2 and "--threads" in r.output


def test_bench_runs_with_the_threads_given_and_reports_them(restore_threads, tmp_path):
    import json

    target = 1 if torch.get_num_threads() > 1 else 2
    r = CliRunner().invoke(app, ["bench", "--model", "tiny", "--device", "cpu", "--K", "2",
                                 "--D", "1", "--puzzles", "2", "--split", "random", "--modes",
                                 "eager", "--threads", str(target), "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["cpu_threads"] == target
