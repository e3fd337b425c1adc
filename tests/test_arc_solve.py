"""`ptrm solve --task`: one ARC task through the paper's ARC pipeline (ptrm_cli/arc_solve.py),
identifier tables (ptrm_cli/arc_ids.py), and official TRM ARC checkpoints with their own
identifiers.json, imported, converted and solved (the right embedding row for each view)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml
from typer.testing import CliRunner

from ptrm_cli import arc_eval, arc_ids
from ptrm_cli.app import app
from ptrm_cli.arc_data import build_arc
from ptrm_cli.engine import sampler
from ptrm_cli.engine.checkpoint import load_checkpoint, save_checkpoint
from ptrm_cli.engine.data import load_dataset
from ptrm_cli.engine.model import TRM, TRMConfig

A = pytest.importorskip("ptrm_codecs.arc")
from ptrm_codecs.families import ARC  # noqa: E402

# Two tiny Kaggle-layout subsets; "cafe0001" is in neither (no identifiers anywhere).
RNG = np.random.default_rng(3)


def _task(n_train: int, n_test: int, size: int) -> dict:
    pair = lambda: {"input": RNG.integers(0, 10, (size, size)).tolist(),  # noqa: E731
                    "output": RNG.integers(0, 10, (size, size + 1)).tolist()}
    return {"train": [pair() for _ in range(n_train)], "test": [pair() for _ in range(n_test)]}


SUBSETS = {"training": {"aaaa0001": _task(2, 1, 2), "aaaa0002": _task(1, 1, 3)},
           "evaluation": {"bbbb0001": _task(2, 2, 2), "bbbb0002": _task(1, 1, 3)}}
OTHER = {"cafe0001": _task(1, 1, 2)}


def _write_kaggle(d: Path, name: str, tasks: dict) -> Path:
    ch = {t: {"train": v["train"], "test": [{"input": e["input"]} for e in v["test"]]}
          for t, v in tasks.items()}
    (d / f"arc-agi_{name}_challenges.json").write_text(json.dumps(ch))
    (d / f"arc-agi_{name}_solutions.json").write_text(
        json.dumps({t: [e["output"] for e in v["test"]] for t, v in tasks.items()}))
    return d / f"arc-agi_{name}_challenges.json"


def _model(num_ids: int, seed: int = 0) -> TRM:
    torch.manual_seed(seed)
    cfg = TRMConfig(vocab_size=12, seq_len=900, hidden_size=32, num_heads=2, expansion=2.0,
                    L_layers=1, H_cycles=1, L_cycles=1, puzzle_emb_ndim=32, puzzle_emb_len=1,
                    num_puzzle_identifiers=num_ids, halt_max_steps=2, forward_dtype="float32")
    model = TRM(cfg)
    with torch.no_grad():  # random Q head and puzzle rows, so views and rollouts differ
        model.q_head.weight.normal_(0, 1.0)
        model.puzzle_emb.weights.normal_(0, 1.0)
    return model.eval()


@pytest.fixture(scope="module")
def build(tmp_path_factory):
    """Kaggle files, an ARC dataset built from them, and a tiny model trained (not really) on
    it, saved as a ptrm checkpoint with the dataset's identifiers."""
    d = tmp_path_factory.mktemp("arc_solve")
    files = {name: _write_kaggle(d, name, tasks) for name, tasks in SUBSETS.items()}
    _write_kaggle(d, "other", OTHER)
    build_arc([files["training"], files["evaluation"]], d / "ds", num_aug=2, seed=5)
    ds = load_dataset(d / "ds")
    ids = ds.meta["identifiers"]
    ck = save_checkpoint(d / "ck", _model(len(ids)), ARC.vocab, {}, identifiers=ids)
    return {"dir": d, "files": files, "ds": d / "ds", "ids": ids, "ck": ck}


def solve(*args, input=None):
    res = CliRunner().invoke(app, ["solve", *map(str, args), "--device", "cpu", "--threads",
                                   "1"], input=input)
    res.text = " ".join(res.output.split())  # messages without Rich's line wrapping
    return res


def test_views_from_the_dataset_table_are_its_test_rows(build):
    """Views generated from an identifier table are exactly what the dataset's test split
    holds: same identifiers, same augmented inputs at (0, 0)."""
    ds = load_dataset(build["ds"])
    s = ds.split("test")
    tests = {}
    for rec in s.puzzles:
        tests.setdefault(rec["task"], {})[rec["example"]] = json.loads(rec["text"])["input"]
    views, missing = arc_eval.build_views(arc_ids.IdTable(build["ids"], "ds"), tests)
    assert missing == []
    got = sorted((int(i), bytes(np.asarray(x, np.uint16))) for i, x in zip(views.ids,
                                                                          views.inputs))
    want = sorted((int(i), bytes(np.asarray(x, np.uint16))) for i, x in zip(s.puzzle_id,
                                                                          s.inputs))
    assert got == want


def test_solve_task_from_a_kaggle_file(build):
    res = solve(build["files"]["evaluation"], "--task", "bbbb0001", "-c", build["ck"], "--K",
                "2", "--json")
    assert res.exit_code in (0, 1), res.output
    out = json.loads(res.stdout)
    views = [n for n in build["ids"] if n.split("|||")[0] == "bbbb0001"]
    assert out["type"] == "arc" and out["task"] == "bbbb0001"
    assert out["views"] == out["views_in_checkpoint"] == len(views) == 3  # original + 2
    assert out["rollouts"] == len(views) * 2 * 2  # views x test inputs x K
    assert [t["example"] for t in out["tests"]] == [0, 1]
    for t, truth in zip(out["tests"], SUBSETS["evaluation"]["bbbb0001"]["test"]):
        assert t["output"] == truth["output"]  # from the _solutions.json sibling
        assert 1 <= len(t["answers"]) <= 2 and t["votes"] == len(views)
        assert sum(a["votes"] for a in t["answers"]) <= t["votes"]
        assert all(0 <= a["q"] <= 1 and isinstance(a["grid"], list) for a in t["answers"])
        # ranked by (votes, mean q) as TRM's evaluator
        keys = [(a["votes"], a["q"]) for a in t["answers"]]
        assert keys == sorted(keys, reverse=True)
        assert t["correct"] is (t["rank"] > 0)
    assert out["solved"] is all(t["correct"] for t in out["tests"])
    assert res.exit_code == (0 if out["solved"] else 1)
    # what the grids' values mean, as a puzzle's --json says it (a task had none)
    from ptrm_cli import codec as registry
    assert out["legend"] == registry.legend_json(registry.get("arc"))
    assert {str(v) for t in out["tests"] for a in t["answers"] for row in a["grid"]
            for v in row} <= set(out["legend"])

    res = solve(build["files"]["evaluation"], "--task", "bbbb0001", "-c", build["ck"], "--K",
                "2")
    assert "attempt 1" in res.stdout and "test 1: input" in res.stdout
    assert "3/3 views" in res.stdout and "CPU defaults" in res.stdout


def test_trained_checkpoint_keeps_the_dataset_identifiers(build, tmp_path):
    """`ptrm train` on an ARC dataset writes its identifier table into every checkpoint, so
    `ptrm solve --task` needs neither the dataset nor --identifiers afterwards."""
    from ptrm_cli.engine.train import train

    doc = {"run_dir": str(tmp_path / "run"), "seed": 0, "device": "cpu",
           "data": {"path": str(build["ds"]), "val_split": None},
           "model": dict(hidden_size=16, num_heads=2, expansion=1.0, L_layers=1, H_cycles=1,
                         L_cycles=1, puzzle_emb_ndim=16, puzzle_emb_len=1, halt_max_steps=2,
                         forward_dtype="float32"),
           "train": dict(global_batch_size=4, max_steps=2, lr_warmup_steps=1),
           "checkpoint": {"every_steps": 2}, "log": {"every": 1, "progress": "none"}}
    cfg = tmp_path / "arc.yaml"
    cfg.write_text(yaml.safe_dump(doc))
    train(cfg)
    ck = tmp_path / "run" / "checkpoints" / "last"
    assert json.loads((ck / "identifiers.json").read_text()) == build["ids"]
    moved = tmp_path / "moved"
    ck.resolve().rename(moved)  # away from its run: only the checkpoint's own table is left
    res = solve(build["files"]["evaluation"], "--task", "bbbb0002", "-c", moved, "--K", "1",
                "--json")
    assert res.exit_code in (0, 1), res.output
    assert json.loads(res.stdout)["views"] == 3


def test_a_task_takes_the_noise_target_of_the_models_sigma(build, tmp_path):
    """The task path resolves σ and its target as the puzzle path does (LoadedModel
    .noise_choice): meta.perturb y is used with meta.sigma; another target needs --sigma."""
    ck = save_checkpoint(tmp_path / "y", _model(len(build["ids"])), ARC.vocab,
                         {"sigma": 0.3, "perturb": "y"}, identifiers=build["ids"])
    args = [build["files"]["training"], "--task", "aaaa0002", "-c", ck, "--K", "1"]
    out = json.loads(solve(*args, "--json").stdout)
    assert (out["sigma"], out["sigma_source"], out["perturb"]) == (0.3, "model", "y")
    res = solve(*args, "--perturb", "z")
    assert res.exit_code == 2 and "chosen for noise on y" in res.text, res.output
    out = json.loads(solve(*args, "--perturb", "z", "--sigma", "0.3", "--json").stdout)
    assert (out["sigma_source"], out["perturb"]) == ("option", "z")


def test_exit_status_follows_the_known_outputs(build, tmp_path):
    """0 when each known output is among the two attempts, 1 when not; without known outputs
    0 (answered, nothing to check)."""
    args = ["--task", "aaaa0002", "-c", build["ck"], "--K", "1", "--sigma", "0", "--json"]
    first = json.loads(solve(build["files"]["training"], *args).stdout)
    answer = first["tests"][0]["answers"][0]["grid"]
    task = {"train": SUBSETS["training"]["aaaa0002"]["train"],
            "test": [{"input": SUBSETS["training"]["aaaa0002"]["test"][0]["input"],
                      "output": answer}]}
    (tmp_path / "aaaa0002.json").write_text(json.dumps(task))  # one task, named by the file
    res = solve(tmp_path / "aaaa0002.json", *args[2:])
    out = json.loads(res.stdout)
    assert res.exit_code == 0 and out["solved"] is True and out["tests"][0]["rank"] == 1
    assert out["tests"][0]["answers"][0] == first["tests"][0]["answers"][0]  # deterministic

    task["test"][0]["output"] = [[0, 1, 2, 3]]  # not what this model answers
    (tmp_path / "aaaa0002.json").write_text(json.dumps(task))
    res = solve(tmp_path / "aaaa0002.json", *args[2:])
    assert res.exit_code == 1 and json.loads(res.stdout)["solved"] is False

    del task["test"][0]["output"]
    (tmp_path / "aaaa0002.json").write_text(json.dumps(task))
    res = solve(tmp_path / "aaaa0002.json", *args[2:])  # routed as a task without --task
    assert res.exit_code == 0 and json.loads(res.stdout)["solved"] is None
    res = solve("-", *args, input=json.dumps(task))  # stdin names no task: --task does
    assert res.exit_code == 0 and json.loads(res.stdout)["task"] == "aaaa0002"
    res = solve("-", *args[2:], input=json.dumps(task))
    assert res.exit_code == 2 and "pass --task ID" in res.text


def test_views_and_time_limit(build):
    base = [build["files"]["evaluation"], "--task", "bbbb0001", "-c", build["ck"], "--K", "1",
            "--json"]
    out = json.loads(solve(*base, "--views", "2").stdout)
    assert out["views"] == 2 and out["views_in_checkpoint"] == 3 and not out["timed_out"]
    # one row per chunk (a 1-byte budget) and no time at all: stops after the first chunk
    out = json.loads(solve(*base, "--memory", "1", "--time-limit", "0.000001").stdout)
    assert out["timed_out"] and out["views"] == 1 and out["rollouts"] == 1


def test_task_errors(build, tmp_path):
    ck = build["ck"]
    res = solve(build["files"]["evaluation"], "--task", "nope", "-c", ck)
    assert res.exit_code == 2 and "has no task 'nope'" in res.text
    assert "Traceback" not in res.output
    # a task the model never saw: which task, how many identifiers, why
    other = build["dir"] / "arc-agi_other_challenges.json"
    res = solve(other, "--task", "cafe0001", "-c", ck)
    assert res.exit_code == 2
    msg = res.text
    assert "no puzzle identifiers for ARC task 'cafe0001'" in msg
    assert f"has {len(build['ids'])} identifiers for 4 tasks" in msg
    assert "can only solve tasks that were in their training build" in msg
    # several tasks and no --task
    res = solve(build["files"]["evaluation"], "-c", ck)
    assert res.exit_code == 2 and "--task" in res.text and "holds 2 ARC tasks" in res.text
    # a checkpoint that is not an ARC model
    from fixtures_models import save_tiny_checkpoint
    from ptrm_codecs.families import PPBENCH

    pp = save_tiny_checkpoint(tmp_path / "pp", PPBENCH.vocab)
    res = solve(build["files"]["evaluation"], "--task", "bbbb0001", "-c", pp)
    assert res.exit_code == 2 and "not an ARC one" in res.text
    # an ARC model without per-task embeddings
    cfg = dict(_model(2).config.to_dict(), puzzle_emb_ndim=0, puzzle_emb_len=0,
               num_puzzle_identifiers=1)
    flat = save_checkpoint(tmp_path / "flat", TRM(TRMConfig.from_dict(cfg)), ARC.vocab, {})
    res = solve(build["files"]["evaluation"], "--task", "bbbb0001", "-c", flat)
    assert res.exit_code == 2 and "no per-task puzzle embeddings" in res.text
    # no table anywhere: say where we looked and what to pass
    bare = save_checkpoint(tmp_path / "bare", _model(len(build["ids"])), ARC.vocab, {})
    res = solve(build["files"]["evaluation"], "--task", "bbbb0001", "-c", bare)
    assert res.exit_code == 2 and "no table naming them" in res.text
    assert "--identifiers" in res.text
    # a table of the wrong size
    (tmp_path / "short.json").write_text(json.dumps(build["ids"][:-1]))
    res = solve(build["files"]["evaluation"], "--task", "bbbb0001", "-c", bare, "--identifiers",
                tmp_path / "short.json")
    assert res.exit_code == 2 and "rows" in res.output
    assert "Traceback" not in res.output


# -- official checkpoints ------------------------------------------------------------------------

@pytest.fixture(scope="module")
def official(build, tmp_path_factory):
    """An official TRM run's files: data/identifiers.json (a table ordered unlike our build, with
    a task we never built), data/test/dataset.json, and run/step_N (a bare state_dict under the
    compiled model's key names) with run/all_config.yaml naming the data folder."""
    d = tmp_path_factory.mktemp("official")
    ours = [n for n in build["ids"][1:]]
    names = ["<blank>"] + ["zzzz9999", "zzzz9999|||t1|||0123456789"] + ours[::-1]
    (d / "data" / "test").mkdir(parents=True)
    (d / "data" / "identifiers.json").write_text(json.dumps(names))
    (d / "data" / "test" / "dataset.json").write_text(json.dumps({"seq_len": 900}))
    model = _model(len(names), seed=1)
    (d / "run").mkdir()
    torch.save({f"_orig_mod.model.inner.{k}": v for k, v in model.state_dict().items()},
               d / "run" / "step_1234")
    arch = {"name": "recursive_reasoning.trm@TinyRecursiveReasoningModel_ACTV1",
            "hidden_size": 32, "num_heads": 2, "expansion": 2, "L_layers": 1, "H_cycles": 1,
            "L_cycles": 1, "halt_max_steps": 2, "pos_encodings": "rope", "puzzle_emb_len": 1,
            "puzzle_emb_ndim": 32, "forward_dtype": "float32"}
    (d / "run" / "all_config.yaml").write_text(
        yaml.safe_dump({"arch": arch, "data_paths": [str(d / "data")]}))
    return {"dir": d, "names": names, "model": model, "step": d / "run" / "step_1234"}


def _spy(monkeypatch):
    """Record the puzzle identifiers and inputs the sampler is given."""
    calls = []
    real = sampler.sample

    def spy(model, inputs, cfg, **kw):
        calls.append((inputs.clone(), kw["puzzle_ids"].clone(), model))
        return real(model, inputs, cfg, **kw)

    monkeypatch.setattr(sampler, "sample", spy)
    return calls


def _check_rows(calls, names, task, test_inputs, weights):
    """Every row ran with an identifier the official table names for `task`, all of them, and
    the input augmented the way that name says; the row used is the official one."""
    inputs = torch.cat([c[0] for c in calls])
    ids = torch.cat([c[1] for c in calls]).tolist()
    want = [i for i, n in enumerate(names) if n.split("|||")[0] == task]
    assert sorted(set(ids)) == want
    for x, i in zip(inputs, ids):
        _, t, mapping = A.parse_aug_name(names[i])
        augmented = [A.to_canvas(A.augment_grid(np.asarray(g), t, mapping)).reshape(-1)
                     for g in test_inputs]
        assert any(np.array_equal(x.numpy(), a) for a in augmented)
    model = calls[0][2]
    assert torch.equal(model.puzzle_emb.weights.detach().cpu()[want], weights[want])


def test_official_checkpoint_solves_directly(build, official, monkeypatch):
    """-c step_N: settings from all_config.yaml, identifiers from its data folder."""
    calls = _spy(monkeypatch)
    res = solve(build["files"]["evaluation"], "--task", "bbbb0001", "-c", official["step"],
                "--K", "2", "--json")
    assert res.exit_code in (0, 1), res.output
    out = json.loads(res.stdout)
    assert out["identifiers"] == str(official["dir"] / "data" / "identifiers.json")
    assert out["views"] == 3
    tests = [e["input"] for e in SUBSETS["evaluation"]["bbbb0001"]["test"]]
    _check_rows(calls, official["names"], "bbbb0001", tests,
                official["model"].puzzle_emb.weights.detach())
    # the official table knows a task our build never had, and not the other way round
    res = solve(build["dir"] / "arc-agi_other_challenges.json", "--task", "cafe0001", "-c",
                official["step"])
    assert res.exit_code == 2
    assert f"{len(official['names'])} identifiers for 5 tasks" in res.text


def test_a_lone_pair_warns_that_a_task_model_never_trained_on_the_blank_row(build, official,
                                                                            tmp_path):
    """A model with one embedding per task says so for a lone pair, which runs with the blank
    identifier: the converted folder, and the step file too, which takes its ARC table only
    after loading (it was silent)."""
    pair = SUBSETS["evaluation"]["bbbb0001"]["test"][0]
    (tmp_path / "p.json").write_text(json.dumps(pair))
    for model in (official["step"], build["ck"]):
        res = solve(tmp_path / "p.json", "-c", model, "--codec", "arc", "--K", "1", "--sigma",
                    "0")
        assert res.exit_code in (0, 1), res.output
        assert "learned one embedding per task" in res.text, (model, res.text)


def test_convert_stores_the_identifiers_and_solve_uses_them(build, official, tmp_path,
                                                              monkeypatch):
    names = official["names"]
    (tmp_path / "ids.json").write_text(json.dumps(names))
    runner = CliRunner()
    res = runner.invoke(app, ["convert", str(official["step"]), "--family", "arc",
                              "--identifiers", str(tmp_path / "ids.json"),
                              "--out", str(tmp_path / "ck"), "--json"])
    assert res.exit_code == 0, res.output
    rep = json.loads(res.stdout)
    assert rep["identifiers"] == {"from": str(tmp_path / "ids.json"), "names": len(names),
                                  "tasks": 5}
    assert json.loads((tmp_path / "ck" / "identifiers.json").read_text()) == names
    _, vocab, meta = load_checkpoint(tmp_path / "ck")
    assert vocab.family == "arc" and meta["data_paths"] == [str(official["dir"] / "data")]
    (tmp_path / "ids.json").unlink()  # the converted checkpoint carries its own copy

    calls = _spy(monkeypatch)
    res = solve(build["files"]["training"], "--task", "aaaa0001", "-c", tmp_path / "ck",
                "--K", "1", "--json")
    assert res.exit_code in (0, 1), res.output
    assert json.loads(res.stdout)["identifiers"] == str(tmp_path / "ck" / "identifiers.json")
    _check_rows(calls, names, "aaaa0001", [SUBSETS["training"]["aaaa0001"]["test"][0]["input"]],
                official["model"].puzzle_emb.weights.detach())

    # given as typed, the checkpoint and the table are recorded absolute, as eval's reports do
    shutil.copyfile(tmp_path / "ck" / "identifiers.json", tmp_path / "ids.json")
    monkeypatch.chdir(tmp_path)
    res = solve(build["files"]["training"], "--task", "aaaa0001", "-c", "ck",
                "--identifiers", "ids.json", "--K", "1", "--json")
    assert res.exit_code in (0, 1), res.output
    out = json.loads(res.stdout)
    assert (out["checkpoint"], out["identifiers"]) == (
        os.path.join(os.getcwd(), "ck"), os.path.join(os.getcwd(), "ids.json"))

    # without --identifiers, convert finds the table in the run's data folder
    res = runner.invoke(app, ["convert", str(official["step"]), "--family", "arc",
                              "--out", str(tmp_path / "ck2")])
    assert res.exit_code == 0, res.output
    assert f"identifiers: {len(names)} names for 5 tasks" in " ".join(res.stdout.split())
    # a table that does not fit the model is refused
    (tmp_path / "bad.json").write_text(json.dumps(names[:3]))
    res = runner.invoke(app, ["convert", str(official["step"]), "--family", "arc",
                              "--identifiers", str(tmp_path / "bad.json"),
                              "--out", str(tmp_path / "ck3")])
    assert res.exit_code == 2 and "names 3 puzzle identifiers" in " ".join(res.output.split())
    assert not (tmp_path / "ck3").exists()
    # one found by itself that does not fit: said to be found, and how to give another
    found = official["dir"] / "data" / "identifiers.json"
    kept = found.read_text()
    try:
        found.write_text(json.dumps(names[:3]))
        res = runner.invoke(app, ["convert", str(official["step"]), "--family", "arc",
                                  "--out", str(tmp_path / "ck4")])
    finally:
        found.write_text(kept)
    said = " ".join(res.output.split())
    assert res.exit_code == 2 and "found by itself" in said and "--identifiers FILE" in said


def test_eval_maps_the_dataset_tasks_through_the_checkpoint_table(build, official, tmp_path,
                                                                   monkeypatch):
    """ptrm eval -c step_N on our ARC build: the views are the official table's versions of the
    build's test tasks, with the official identifiers (not the dataset's)."""
    calls = _spy(monkeypatch)
    res = CliRunner().invoke(app, ["eval", "--data", str(build["ds"]), "--split", "test", "--K",
                                   "1", "-c", str(official["step"]), "--device", "cpu",
                                   "--out", str(tmp_path / "ev"), "--json"])
    assert res.exit_code == 0, res.output
    rep = json.loads((tmp_path / "ev" / "report.json").read_text())
    assert rep["identifiers"] == str(official["dir"] / "data" / "identifiers.json")
    assert rep["tasks_without_views"] == [] and rep["puzzles"] == 2
    names = official["names"]
    ids = set(torch.cat([c[1] for c in calls]).tolist())
    assert ids == {i for i, n in enumerate(names) if n.split("|||")[0] in ("bbbb0001",
                                                                          "bbbb0002")}


def test_a_lone_grid_is_answered_not_judged(build, tmp_path):
    """Without a known output nothing checks an ARC answer: it was reported "solved: the
    answer satisfies every arc rule" (and JSON solved: true). Now solved is null, exit 0; a
    pair with its output is judged against it."""
    grid = SUBSETS["training"]["aaaa0002"]["test"][0]["input"]
    args = ["-c", build["ck"], "--codec", "arc", "--K", "1", "--sigma", "0"]
    (tmp_path / "g.json").write_text(json.dumps(grid))
    res = solve(tmp_path / "g.json", *args, "--json")
    out = json.loads(res.stdout)
    assert res.exit_code == 0 and out["solved"] is None and out["valid"] is None
    res = solve(tmp_path / "g.json", *args)
    assert res.exit_code == 0 and "not judged" in res.text and "solved:" not in res.text
    answer = out["solution"]["grid"]
    for output, judged in ((answer, True), ([[9]], False)):
        (tmp_path / "p.json").write_text(json.dumps({"input": grid, "output": output}))
        res = solve(tmp_path / "p.json", *args, "--json")
        assert json.loads(res.stdout)["solved"] is judged
        assert res.exit_code == (0 if judged else 1)


def test_an_unknown_task_on_a_table_of_one_counts_in_the_singular():
    from types import SimpleNamespace

    from ptrm_cli import arc_solve

    table = type("Table", (), {"source": "ids.json", "tasks": lambda self: ["a:t1"],
                               "__len__": lambda self: 1})()
    msg = str(arc_solve.no_views_error(SimpleNamespace(path="ck"), table, "zz"))
    assert "has 1 identifier for 1 task" in msg
