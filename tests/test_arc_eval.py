"""ARC dataset building (TRM's recipe, ptrm_cli/arc_data.py) and the paper's ARC evaluation
(best-Q rollout per augmented view, vote across views; ptrm_cli/arc_eval.py)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from typer.testing import CliRunner

from ptrm_cli import arc_eval
from ptrm_cli.app import app
from ptrm_cli.arc_data import BLANK, build_arc
from ptrm_cli.errors import PtrmError
from ptrm_cli.engine.data import load_dataset

A = pytest.importorskip("ptrm_codecs.arc")
ARC_DIR = Path("/work/shared/data/arc")
SUBSETS = (("training2", 2), ("evaluation2", 2))


@pytest.fixture(scope="module")
def sources(tmp_path_factory):
    """Two tiny Kaggle-layout subsets (2 tasks each) cut from the shared ARC-AGI-2 files."""
    if not all((ARC_DIR / f"arc-agi_{s}_{k}.json").is_file()
               for s, _ in SUBSETS for k in ("challenges", "solutions")):
        pytest.skip(f"ARC data not found under {ARC_DIR}")
    d = tmp_path_factory.mktemp("arc_src")
    paths = []
    for sub, n in SUBSETS:
        ch = json.loads((ARC_DIR / f"arc-agi_{sub}_challenges.json").read_text())
        so = json.loads((ARC_DIR / f"arc-agi_{sub}_solutions.json").read_text())
        # small tasks keep the test fast
        ids = sorted(ch, key=lambda t: sum(np.asarray(e["input"]).size
                                           for e in ch[t]["train"] + ch[t]["test"]))[:n]
        (d / f"arc-agi_{sub}_challenges.json").write_text(json.dumps({t: ch[t] for t in ids}))
        (d / f"arc-agi_{sub}_solutions.json").write_text(json.dumps({t: so[t] for t in ids}))
        paths.append(d / f"arc-agi_{sub}_challenges.json")
    return paths


@pytest.fixture(scope="module")
def dataset(sources, tmp_path_factory):
    out = tmp_path_factory.mktemp("arc_ds") / "arc"
    summary = build_arc(sources, out, num_aug=3, seed=7)
    assert summary["test_set"] == "evaluation2" and summary["tasks"] == 4
    return out


def _rows(ds, split):
    s = ds.split(split)
    ids = ds.meta["identifiers"]
    for i in range(len(s)):
        rec = s.puzzles[int(s.puzzle[i])]
        yield i, s, rec, ids[int(s.puzzle_id[i])]


def test_identifiers(dataset):
    ds = load_dataset(dataset)
    ids = ds.meta["identifiers"]
    assert ids[0] == BLANK and len(set(ids)) == len(ids) == ds.num_puzzle_ids
    assert json.loads((dataset / "identifiers.json").read_text()) == ids
    used = set()
    for split in ("train", "test"):
        for i, s, rec, name in _rows(ds, split):
            assert s.puzzle_id[i] != 0
            base, t, _ = A.parse_aug_name(name)
            assert base == rec["task"] and int(s.transform[i]) == t
            used.add(int(s.puzzle_id[i]))
    assert used == set(range(1, len(ids)))
    # the test set's puzzle ids are shared by its train (demonstration) and test rows
    test_ids = set(np.asarray(ds.split("test").puzzle_id).tolist())
    assert test_ids <= set(np.asarray(ds.split("train").puzzle_id).tolist())
    # every test view is a test pair of the evaluation2 subset
    for _, _, rec, _ in _rows(ds, "test"):
        assert rec["subset"] == "evaluation2" and rec["split"] == "test"
    tp = json.loads((dataset / "test_puzzles.json").read_text())
    assert set(tp) == {rec["task"] for _, _, rec, _ in _rows(ds, "test")}


def _offset(tokens):
    """Top-left corner of the grid on the canvas (first colour token)."""
    g = np.asarray(tokens).reshape(30, 30)
    r, c = np.argwhere(g >= 2)[0]
    return int(r), int(c)


def test_translation_rules(dataset):
    ds = load_dataset(dataset)
    per_pid: dict[int, list] = {}
    for i, s, rec, _ in _rows(ds, "train"):
        off = _offset(s.inputs[i])
        assert _offset(s.labels[i]) == off  # input and output share the offset
        per_pid.setdefault(int(s.puzzle_id[i]), []).append(off)
    # exactly one example per puzzle version sits at (0, 0) (others: (0, 0) only by chance)
    assert all(offs.count((0, 0)) >= 1 for offs in per_pid.values())
    assert any(any(o != (0, 0) for o in offs) for offs in per_pid.values())
    for i, s, _, _ in _rows(ds, "test"):
        assert _offset(s.inputs[i]) == (0, 0) and _offset(s.labels[i]) == (0, 0)


def test_inverse_augmentation_recovers_originals(dataset):
    ds = load_dataset(dataset)
    n = 0
    for split in ("train", "test"):
        for i, s, rec, name in _rows(ds, split):
            pair = json.loads(rec["text"])
            off = _offset(s.labels[i])
            for arr, key in ((s.labels, "output"), (s.inputs, "input")):
                base, grid = A.deaugment(name, A.crop(np.asarray(arr[i]), off))
                assert base == rec["task"]
                np.testing.assert_array_equal(grid, np.asarray(pair[key]))
            n += 1
    assert n == sum(ds.meta["splits"].values())


def test_vote_picks_majority():
    a, b, c = (np.array([[1, 2]]), np.array([[3]]), np.array([[4, 4], [4, 4]]))
    # b has the highest single q, but a has more votes; c ties b on count with lower q
    entries = [(("t", 0), a, 0.2), (("t", 0), a, 0.3), (("t", 0), b, 0.99),
               (("t", 0), a, 0.1), (("t", 0), c, 0.5)]
    ranked = arc_eval.vote(entries)[("t", 0)]
    assert [r[1] for r in ranked] == [3, 1, 1]
    np.testing.assert_array_equal(ranked[0][3], a)
    np.testing.assert_array_equal(ranked[1][3], b)  # count tie broken by mean q
    truths = {("t", 0): b, ("u", 0): a, ("u", 1): c}
    ranked_all = arc_eval.vote(entries + [(("u", 0), a, 0.5), (("u", 1), b, 0.5)])
    p = arc_eval.pass_at(ranked_all, truths, ks=(1, 2, 100))
    # t: pair solved at k>=2; u: pair 0 solved at k=1, pair 1 never -> score 0.5
    assert p == {"pass@1": pytest.approx(0.25), "pass@2": pytest.approx(0.75),
                 "pass@100": pytest.approx(0.75)}


def _tiny_model(num_ids: int):
    from ptrm_cli.engine.model import TRM, TRMConfig

    torch.manual_seed(0)
    cfg = TRMConfig(vocab_size=12, seq_len=900, hidden_size=32, num_heads=2, expansion=2.0,
                    L_layers=1, H_cycles=1, L_cycles=1, puzzle_emb_ndim=32, puzzle_emb_len=1,
                    num_puzzle_identifiers=num_ids, halt_max_steps=2, forward_dtype="float32")
    model = TRM(cfg)
    with torch.no_grad():
        model.q_head.weight.normal_(0, 1.0)
    return model.eval()


def test_pipeline_pass_at_k_well_formed(dataset):
    ds = load_dataset(dataset)
    model = _tiny_model(ds.num_puzzle_ids)
    torch.set_num_threads(max(1, min(4, torch.get_num_threads())))
    r = arc_eval.evaluate_arc(model, dataset, "test", K=2, D=2, sigma=0.2, seed=0,
                              vocab=ds.vocab)
    assert r["views"] == len(ds.split("test")) and r["puzzles"] == 2
    for name in ("ptrm", "trm"):
        p = r[name]
        assert 0 <= p["pass@1"] <= p["pass@2"] <= p["pass@100"] <= 1
    assert r["trm"]["K"] == 1 and r["trm"]["sigma"] == 0
    # the model is described as in eval's other reports, bench and convert (README: "a model is
    # described the same way"); ARC reports once said nothing of the model they scored
    from ptrm_cli.engine.model import count_parameters, flops_per_step

    assert r["model"] == {"config": model.config.to_dict(),
                          "parameters": count_parameters(model),
                          "flops_per_step": flops_per_step(model.config)}
    from rich.console import Console

    console = Console(width=120, record=True)
    console.print(arc_eval.table(r))
    text = console.export_text()
    assert "PTRM" in text and "pass@100" in text and " on " not in text
    # a target other than z is named beside σ (the σ column once said nothing of it)
    r["ptrm"]["perturb"] = "y"
    console.print(arc_eval.table(r))
    assert "0.2 on y" in console.export_text()


def test_a_step_files_placeholder_table_takes_the_datasets(dataset):
    """A step file converted without --family (its generic `trm-v12` table) was refused here,
    "the model uses the 'trm-v12' vocabulary but dataset ... uses 'arc'", though `ptrm solve`,
    the other evaluations and a warm start all take the dataset's table for it."""
    from ptrm_cli.engine.checkpoint import placeholder_vocab
    from ptrm_cli.errors import VocabError

    ds = load_dataset(dataset)
    model = _tiny_model(ds.num_puzzle_ids)
    r = arc_eval.evaluate_arc(model, dataset, "test", K=1, D=1, seed=0,
                              vocab=placeholder_vocab(len(ds.vocab)))
    assert r["puzzles"] == 2
    with pytest.raises(VocabError, match="'trm-v13' vocabulary"):  # another size: not its table
        arc_eval.evaluate_arc(model, dataset, "test", K=1, D=1, seed=0,
                              vocab=placeholder_vocab(len(ds.vocab) + 1))

def test_cli_build_and_eval(sources, tmp_path):
    from ptrm_cli.engine.checkpoint import save_checkpoint
    from ptrm_codecs.families import ARC

    runner = CliRunner()
    out = tmp_path / "arc"
    res = runner.invoke(app, ["build-data", *map(str, sources), "--family", "arc",
                              "--augment", "1", "--out", str(out)])
    assert res.exit_code == 0, res.output
    ds = load_dataset(out)
    assert ds.meta["family"] == "arc" and "test" in ds.splits
    ck = save_checkpoint(tmp_path / "model", _tiny_model(ds.num_puzzle_ids), ARC.vocab, {})
    res = runner.invoke(app, ["eval", "--data", str(out), "--split", "test", "--K", "2",
                              "--D", "1", "--checkpoint", str(ck), "--device", "cpu",
                              "--out", str(tmp_path / "ev"), "--json"])
    assert res.exit_code == 0, res.output
    rep = json.loads((tmp_path / "ev" / "report.json").read_text())
    assert rep["kind"] == "arc" and set(rep["ptrm"]) >= {"pass@1", "pass@2", "pass@100"}
    assert rep["ptrm"]["perturb"] == "z"
    # --perturb reaches the sampler (it was once dropped on the way to ARC's pipelines)
    seen = []
    real = arc_eval.best_rollouts

    def spy(*args, **kwargs):
        seen.append((kwargs["sigma"], kwargs.get("perturb")))
        return real(*args, **kwargs)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(arc_eval, "best_rollouts", spy)
        res = runner.invoke(app, ["eval", "--data", str(out), "--split", "test", "--K", "2",
                                  "--D", "1", "--checkpoint", str(ck), "--device", "cpu",
                                  "--perturb", "y", "--sigma", "0.3",
                                  "--out", str(tmp_path / "ev_y"), "--json"])
    assert res.exit_code == 0, res.output
    assert (0.3, "y") in seen and all(p == "y" for sigma, p in seen if sigma > 0)
    assert json.loads((tmp_path / "ev_y" / "report.json").read_text())["ptrm"]["perturb"] == "y"
    assert rep["model"]["config"]["seq_len"] == 900 and rep["model"]["parameters"] > 0
    res = runner.invoke(app, ["eval", "--data", str(out), "--split", "test", "--checkpoint",
                              str(ck), "--device", "cpu", "--resume"])
    assert res.exit_code == 2 and "--resume applies to puzzle splits" in res.output


# -- several processes: the views are sharded over the ranks, with the same result ------------

def _arc_worker(rank: int, world: int, port: int, out: str):
    import os

    from ptrm_cli.engine import distributed

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank),
                      WORLD_SIZE=str(world), LOCAL_RANK=str(rank))
    torch.set_num_threads(1)
    with distributed.group("cpu"):
        model, inputs, ids = _sharding_case()
        preds, q = arc_eval.best_rollouts(model, inputs, ids, K=3, D=2, sigma=0.5, seed=4)
        if rank == 0:
            np.savez(out, preds=preds, q=q)


def _sharding_case():
    model = _tiny_model(6)
    g = torch.Generator().manual_seed(0)
    inputs = torch.randint(0, model.config.vocab_size, (5, model.config.seq_len), generator=g)
    return model, inputs, torch.arange(1, 6)


def test_best_rollouts_over_two_gloo_processes_equal_one(tmp_path):
    import socket

    import torch.multiprocessing as mp

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    out = str(tmp_path / "rank0.npz")
    mp.spawn(_arc_worker, args=(2, port, out), nprocs=2, join=True)
    got = np.load(out)
    model, inputs, ids = _sharding_case()
    preds, q = arc_eval.best_rollouts(model, inputs, ids, K=3, D=2, sigma=0.5, seed=4)
    assert preds.shape == (5, model.config.seq_len) and len(set(q.tolist())) > 1
    assert np.array_equal(got["preds"], preds) and np.array_equal(got["q"], q)


def test_arc_pipelines_time_no_compilation(dataset, monkeypatch):
    """The warm-up covers both pipelines' shapes: no compilation inside a timed pipeline
    (a counting torch.compile backend, the fast engine forced on; warm-up runs are D=1)."""
    from ptrm_cli.engine import sampler

    compiled, phase = [], ["warm-up"]

    def backend(gm, example_inputs):
        compiled.append(phase[0])
        return gm.forward

    real = sampler.sample

    def compiling(model, inputs, cfg, **kw):
        phase[0] = "warm-up" if cfg.D == 1 else "timed"
        return real(model, inputs, cfg, fast=True, compile=True, backend=backend, **kw)

    monkeypatch.setattr(sampler, "sample", compiling)
    ds = load_dataset(dataset)
    arc_eval.evaluate_arc(_tiny_model(ds.num_puzzle_ids), dataset, "test", K=3, D=2, sigma=0.3)
    assert "warm-up" in compiled and "timed" not in compiled, compiled


def test_a_folder_builds_and_a_test_task_never_trains_under_another_name(sources, tmp_path):
    """`build-data DIR --family arc` read nothing ("Is a directory"); and a task of another
    subset with a test-set task's test input (ARC-AGI-2 training holds ARC-AGI-1 evaluation
    tasks) trained on the test output."""
    folder = tmp_path / "arc"
    folder.mkdir()
    for p in sources:
        for kind in ("challenges", "solutions"):
            name = p.name.replace("challenges", kind)
            (folder / name).write_text((p.parent / name).read_text())
    test_file = next(p for p in sources if "evaluation" in p.name)
    test_tasks = json.loads(test_file.read_text())
    tid, task = next(iter(test_tasks.items()))
    train_file = next(folder.glob("*training*_challenges.json"))
    train_tasks = json.loads(train_file.read_text())
    train_tasks["copy-under-another-id"] = task  # the test task again, renamed
    train_file.write_text(json.dumps(train_tasks))
    sols = train_file.with_name(train_file.name.replace("challenges", "solutions"))
    sol = json.loads(sols.read_text())
    sol["copy-under-another-id"] = json.loads(
        test_file.with_name(test_file.name.replace("challenges", "solutions")).read_text())[tid]
    sols.write_text(json.dumps(sol))

    summary = build_arc([folder], None)
    assert summary["tasks"] == 4 and summary["test_tasks_elsewhere"] == 1
    assert summary["test_tasks_elsewhere_first"][0].endswith(":copy-under-another-id")
    # a second evaluation subset: which one is the test set must be said
    (folder / "arc-agi_evaluation9_challenges.json").write_text(json.dumps({}))
    with pytest.raises(PtrmError, match="several evaluation subsets"):
        build_arc([folder], None)
    assert build_arc([folder], None, test_set_name=summary["test_set"])["tasks"] == 4
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(PtrmError, match="no ARC challenge files"):
        build_arc([empty], None)


def test_eval_of_an_arc_dataset_names_what_does_not_fit_the_checkpoint(dataset, tmp_path):
    """The evaluated dataset's table is taken only when it fits the model (MAZE_ARC.md, step
    5). A maze model, or an ARC one with another table size, was told the dataset's
    identifiers.json "names N puzzle identifiers, but the model's puzzle-embedding table has
    1 rows" with the hint to use its training dataset's table: for the maze model the
    vocabulary is what does not fit, and a table of the wrong size is not the model's."""
    from ptrm_cli.engine.checkpoint import save_checkpoint
    from ptrm_cli.engine.model import TRM, TRMConfig
    from ptrm_codecs.families import ARC, MAZE

    def ck(name, vocab, rows):
        cfg = TRMConfig(vocab_size=len(vocab), seq_len=900, hidden_size=32, num_heads=2,
                        L_layers=1, H_cycles=1, L_cycles=1, puzzle_emb_ndim=32,
                        puzzle_emb_len=1, num_puzzle_identifiers=rows, halt_max_steps=2,
                        forward_dtype="float32")
        return save_checkpoint(tmp_path / name, TRM(cfg), vocab, {})

    n = load_dataset(dataset).num_puzzle_ids

    def said(path):
        res = CliRunner().invoke(app, ["eval", "--data", str(dataset), "--split", "test",
                                       "--K", "1", "--D", "1", "-c", str(path), "--device",
                                       "cpu", "-o", str(tmp_path / "ev")])
        assert res.exit_code == 2 and "Traceback" not in res.output, res.output
        return " ".join(res.output.split())

    out = said(ck("maze", MAZE.vocab, 1))
    assert "is a 'maze' model, not an ARC one" in out and "names" not in out, out
    out = said(ck("blank", ARC.vocab, 1))
    assert "has no per-task puzzle embeddings (1 identifier, the blank)" in out, out
    out = said(ck("other", ARC.vocab, n + 2))
    assert f"has {n + 2} puzzle identifiers but no table naming them" in out, out
    assert f"{dataset / 'identifiers.json'}, which names {n})" in out, out


def test_an_arc_dataset_given_as_split_runs_arcs_method(dataset, tmp_path):
    """`--split DIR` of an ARC dataset ran the per-row method (label and "rules" tables, TRM
    baselines) while `--data DIR --split test` ran ARC's (views, votes, pass@k): one dataset,
    two evaluations, and nothing said which. Both are ARC's now."""
    from ptrm_cli.engine.checkpoint import save_checkpoint
    from ptrm_cli.engine.model import TRM, TRMConfig
    from ptrm_codecs.families import ARC

    n = load_dataset(dataset).num_puzzle_ids
    cfg = TRMConfig(vocab_size=len(ARC.vocab), seq_len=900, hidden_size=32, num_heads=2,
                    L_layers=1, H_cycles=1, L_cycles=1, puzzle_emb_ndim=32, puzzle_emb_len=1,
                    num_puzzle_identifiers=n, halt_max_steps=2, forward_dtype="float32")
    ck = save_checkpoint(tmp_path / "ck", TRM(cfg), ARC.vocab, {})
    reports = []
    for args in (["--split", str(dataset)], ["--data", str(dataset), "--split", "test"]):
        out = tmp_path / f"ev{len(reports)}"
        res = CliRunner().invoke(app, ["eval", *args, "--K", "1", "--D", "1", "-c", str(ck),
                                       "--device", "cpu", "-o", str(out)])
        assert res.exit_code == 0, res.output
        assert "pass@1" in res.output and "label match" not in res.output
        reports.append(json.loads((out / "report.json").read_text()))
    scores = [{k: v for k, v in r["ptrm"].items() if k.startswith("pass@")} for r in reports]
    assert scores[0] == scores[1] and scores[0]
    # what made the report, as the other evaluations' say (ARC's said nothing of it)
    from ptrm_cli.eval_resume import weights_sha256

    assert {"created", "checkpoint", "device", "ptrm_version", "torch"} <= set(reports[0])
    assert reports[0]["model"]["weights_sha256"] == weights_sha256(str(ck))

def test_an_arc_report_names_its_checkpoint_dataset_and_table_by_absolute_paths(
        dataset, tmp_path, monkeypatch):
    """`-c ck --data ds` were recorded as typed (`checkpoint`, `dataset`, and `identifiers`: the
    table beside the checkpoint, `ck/identifiers.json`): read from elsewhere, they named
    nothing. --identifiers given as typed as well, and the evaluated dataset's table taken for
    a checkpoint without one (arc_ids.read_table records each absolute)."""
    import os
    import shutil

    from ptrm_cli.engine.checkpoint import save_checkpoint
    from ptrm_codecs.families import ARC

    ds = load_dataset(dataset)
    save_checkpoint(tmp_path / "ck", _tiny_model(ds.num_puzzle_ids), ARC.vocab, {},
                    identifiers=ds.meta["identifiers"])  # its own table, beside it
    save_checkpoint(tmp_path / "bare", _tiny_model(ds.num_puzzle_ids), ARC.vocab, {})
    shutil.copytree(dataset, tmp_path / "ds")
    shutil.copyfile(tmp_path / "ck" / "identifiers.json", tmp_path / "ids.json")
    monkeypatch.chdir(tmp_path)
    here = os.getcwd()
    for ck, extra, table in (
            ("ck", (), os.path.join(here, "ck", "identifiers.json")),
            ("ck", ("--identifiers", "ids.json"), os.path.join(here, "ids.json")),
            ("bare", (), os.path.join(here, "ds", "identifiers.json")
             + " (the evaluated dataset's; the checkpoint names no table)")):
        res = CliRunner().invoke(app, ["eval", "--data", "ds", "--split", "test", "--K", "1",
                                       "--D", "1", "-c", ck, "--device", "cpu", *extra,
                                       "-o", "ev"])
        assert res.exit_code == 0, res.output
        rep = json.loads((tmp_path / "ev" / "report.json").read_text())
        assert rep["checkpoint"] == os.path.join(here, ck)
        assert rep["dataset"] == os.path.join(here, "ds")
        assert rep["identifiers"] == table


def test_a_build_without_an_evaluation_subset_says_it_has_no_test_set(sources):
    """Training challenges alone printed "test set None"."""
    training = next(p for p in sources if "training" in p.name)
    r = CliRunner().invoke(app, ["build-data", str(training), "--family", "arc", "--dry-run"])
    assert r.exit_code == 0, r.output
    out = " ".join(r.stdout.split())
    assert "no test set: no evaluation* subset, --test-set NAME names one" in out
    assert "None" not in out
