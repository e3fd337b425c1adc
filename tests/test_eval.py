"""`ptrm eval` end to end on a tiny dataset with a tiny random model: report, tables, plots,
the golden split from the ppbench wheel, and clear errors."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from typer.testing import CliRunner

from ptrm_cli import eval_sets, evaluate, solver
from ptrm_cli.app import app
from ptrm_cli.engine.data import Split, write_dataset
from ptrm_cli.engine.model import flops_per_step
from ptrm_cli.errors import PtrmError

import pzpr_oracle
from fixtures_models import golden_examples, installed_codecs, save_tiny_checkpoint, tiny_config

PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def sudoku():
    codecs = installed_codecs()
    if "sudoku" not in codecs:
        pytest.skip("codec 'sudoku' is not installed")
    found = golden_examples(["sudoku"], n=3)
    if not found:
        pytest.skip("PPBench golden set not found")
    return codecs["sudoku"], [rec for _, rec in found]


@pytest.fixture(scope="module")
def ckpt(tmp_path_factory):
    from ptrm_codecs.families import PPBENCH

    return save_tiny_checkpoint(tmp_path_factory.mktemp("model") / "tiny", PPBENCH.vocab)


@pytest.fixture(scope="module")
def dataset(tmp_path_factory, sudoku):
    """A 'val' split of 5 rows: three golden sudokus, one of them also rotated (transform 1),
    and one with every cell given (rules-valid whatever the model says, never label-correct)."""
    from ptrm_cli.codec import Puzzle

    codec, records = sudoku
    family = codec.family()
    puzzles, rows = [], []
    for rec in records:
        p, s = codec.from_record(rec)
        puzzles.append({"type": "sudoku", "key": codec.key(p), "text": codec.to_url(p)})
        rows.append((p, s, len(puzzles) - 1, 0))
    p, s = codec.from_record(records[0])
    pt, st = codec.transform(p, s, 1)
    rows.append((pt, st, 0, 1))
    full = Puzzle("sudoku", 9, 9, s.grid.copy())
    puzzles.append({"type": "sudoku", "key": codec.key(full), "text": codec.to_url(full)})
    rows.append((full, s, len(puzzles) - 1, 0))
    split = Split(
        inputs=np.stack([codec.encode(p, family=family) for p, *_ in rows]),
        labels=np.stack([codec.encode_label(p, s, family=family) for p, s, *_ in rows]),
        type=np.zeros(len(rows)), puzzle=np.array([j for *_, j, _ in rows]),
        transform=np.array([t for *_, t in rows]), puzzle_id=np.zeros(len(rows)),
        puzzles=puzzles)
    out = tmp_path_factory.mktemp("data") / "tiny"
    return write_dataset(out, vocab=family.vocab, seq_len=100, types=["sudoku"],
                         splits={"val": split})


def ptrm(*args):
    r = CliRunner().invoke(app, [str(a) for a in args])
    assert "Traceback" not in r.output, r.output
    assert r.exception is None or isinstance(r.exception, SystemExit), repr(r.exception)
    return r


# -- end to end ---------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def report(ckpt, dataset, tmp_path_factory):
    out = tmp_path_factory.mktemp("eval") / "out"
    r = ptrm("eval", "--split", "val", "--data", dataset, "-c", ckpt, "--K", 4, "--D", 2,
             "--sigma", "0,0.5", "--seeds", 2, "--out", out, "--json")
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout), out


def test_eval_writes_report_and_plots(report):
    rep, out = report
    assert json.loads((out / "report.json").read_text())["format"] == evaluate.FORMAT
    assert (out / "report.json").stat().st_mode & 0o044  # not the atomic temp file's 0600
    for name in ("width_scaling", "sigma_sweep", "q_steps"):
        path = out / f"{name}.png"
        assert path.read_bytes()[:8] == PNG and path.stat().st_size > 5000, name
        assert rep["files"][name] == str(path)


def test_eval_report_names_the_versions_that_made_it(report):
    """A report said which torch ran it but not which ptrm: two reports of one checkpoint
    could differ by the evaluator's version with nothing in them to tell (a checkpoint
    records both)."""
    import ptrm_cli

    rep, _ = report
    assert (rep["ptrm_version"], rep["torch"]) == (ptrm_cli.__version__, torch.__version__)
    assert isinstance(rep["ptrm"], list)  # the PTRM runs keep their key
    # and the CPU threads, which a CPU evaluation's bits depend on
    assert rep["cpu_threads"] == torch.get_num_threads()


def test_eval_report_contents(report, ckpt):
    rep, _ = report
    assert rep["split"]["n"] == 5 and rep["split"]["types"] == {"sudoku": 5}
    assert rep["settings"] == {**rep["settings"], "K": 4, "D": 2, "sigmas": [0.0, 0.5],
                               "seeds": [0, 1], "det_D": [2, 8]}
    assert rep["groups"] == ["sudoku", "aggregate"]
    fps = flops_per_step(tiny_config(294))
    assert rep["model"]["flops_per_step"] == fps
    det_d, det_eq = rep["deterministic"]
    # a share of 5 puzzles as the float it is (float32's 0.6000000238418579, before)
    acc = det_d["groups"]["sudoku"]["rules"]["acc"]
    assert acc * 5 == round(acc * 5) and acc == round(acc * 5) / 5
    assert (det_d["D"], det_d["equal_compute"]) == (2, False)
    assert (det_eq["D"], det_eq["equal_compute"]) == (8, True)
    assert det_eq["flops_per_puzzle"] == 8 * fps == rep["ptrm"][0]["flops_per_puzzle"]
    for run in rep["ptrm"]:
        assert run["cost_per_puzzle_usd"] is None  # timed on a CPU: no H100 cost
        assert [r["seed"] for r in run["runs"]] == [0, 1]
        for r in run["runs"]:
            for g in rep["groups"]:
                for judge in ("label", "rules"):
                    m = r["groups"][g][judge]
                    assert all(m["pass"] >= m[k] for k in evaluate.METRICS), (g, judge, m)
        agg = run["summary"]["aggregate"]
        # the fully given sudoku satisfies the rules in every rollout but never matches its label
        assert agg["rules"]["pass"]["mean"] >= 1 / 5
        assert agg["rules"]["verified"]["mean"] == agg["rules"]["pass"]["mean"]
        lo, hi = agg["label"]["best_q"]["wilson"]
        assert 0 <= lo <= agg["label"]["best_q"]["mean"] <= hi <= 1
    # sigma = 0: every rollout is the deterministic TRM at the same depth
    det_rules = det_d["groups"]["aggregate"]["rules"]["acc"]
    assert rep["ptrm"][0]["summary"]["aggregate"]["rules"]["best_q"]["mean"] == det_rules
    det_per_puzzle = [float(v) for v in det_d["per_puzzle"]["rules"]]
    assert rep["ptrm"][0]["per_puzzle"]["rules"]["best_q"] == det_per_puzzle
    w = rep["width_curve"]
    assert w["ks"] == [1, 2, 4] and w["sigma"] == 0.0
    assert set(w["metrics"]) == {"pass", "best_q", "mode", "verified"}
    # judged by the rules, as the tables lead (it was label match: the fully given sudoku,
    # valid in every rollout, never counted): at k = K the curve is the first σ's table
    assert w["judge"] == "rules"
    for m in w["metrics"]:
        assert w["metrics"][m]["mean"][-1] == pytest.approx(
            rep["ptrm"][0]["summary"]["aggregate"]["rules"][m]["mean"]), m
    assert w["metrics"]["pass"]["mean"][0] >= 1 / 5 - 1e-12  # that sudoku, from one rollout on
    q = rep["q_steps"]
    assert q["steps"] == [1, 2] and q["incorrect"]["n"] + q["correct"]["n"] == 5 * 4
    assert q["judge"] == "rules" and q["correct"]["n"] >= 4  # its 4 rollouts at least


def test_sigma_from_a_validation_sweep(report, ckpt, dataset, tmp_path):
    """--sigma-from picks the sweep's sigma with the best aggregate best-Q (ties: the smaller)
    and refuses a sweep of the golden set."""
    rep, out = report
    best = max(rep["ptrm"], key=lambda r: (r["summary"]["aggregate"]["rules"]["best_q"]["mean"],
                                           -r["sigma"]))["sigma"]
    r = ptrm("eval", "--split", "val", "--data", dataset, "-c", ckpt, "--K", 2, "--D", 1,
             "--seeds", 1, "--det-D", 1, "--sigma-from", out / "report.json", "--no-plots",
             "--out", tmp_path / "o", "--json")
    assert r.exit_code == 0, r.output
    got = json.loads(r.stdout)
    assert [p["sigma"] for p in got["ptrm"]] == [best]
    assert got["settings"]["sigma_from"]["split"] == "val"
    # the choice itself: a tie goes to the smaller sigma, a golden sweep is refused
    fake = json.loads((out / "report.json").read_text())
    for run in fake["ptrm"]:
        run["summary"]["aggregate"]["rules"]["best_q"]["mean"] = 0.5
    (tmp_path / "tie.json").write_text(json.dumps(fake))
    sigmas = sorted(run["sigma"] for run in fake["ptrm"])
    assert evaluate.sigma_from_report(tmp_path / "tie.json") == (0.0, "val", sigmas, sigmas,
                                                                 None, "z")
    r = ptrm("eval", "--split", "val", "--data", dataset, "-c", ckpt, "--K", 2, "--D", 1,
             "--seeds", 1, "--det-D", 1, "--sigma-from", tmp_path / "tie.json", "--no-plots",
             "--out", tmp_path / "t")
    assert r.exit_code == 0 and "tie on that sweep" in r.output, r.output
    fake["ptrm"][-1]["summary"]["aggregate"]["rules"]["best_q"]["mean"] = 0.7
    (tmp_path / "clear.json").write_text(json.dumps(fake))
    clear = evaluate.sigma_from_report(tmp_path / "clear.json")
    assert clear == (sigmas[-1], "val", [sigmas[-1]], sigmas, None, "z")
    assert clear.at_edge == (len(sigmas) >= 3)  # the largest won outright: look beyond it
    r = ptrm("eval", "--split", "val", "--data", dataset, "-c", ckpt, "--K", 2, "--D", 1,
             "--seeds", 1, "--det-D", 1, "--sigma-from", tmp_path / "clear.json",
             "--no-plots", "--out", tmp_path / "u")
    assert r.exit_code == 0 and "tie on that sweep" not in r.output, r.output
    assert ("may lie beyond it" in r.output) == clear.at_edge
    # three sigmas or more: an outright win at the largest (or smallest above 0) is an edge
    edge = json.loads(json.dumps(fake))
    extra = json.loads(json.dumps(edge["ptrm"][-1]))
    extra["sigma"] = max(sigmas) * 2 + 1
    extra["summary"]["aggregate"]["rules"]["best_q"]["mean"] = 0.8
    edge["ptrm"].append(extra)
    (tmp_path / "edge.json").write_text(json.dumps(edge))
    choice = evaluate.sigma_from_report(tmp_path / "edge.json")
    assert choice.sigma == extra["sigma"] and choice.at_edge
    r = ptrm("eval", "--split", "val", "--data", dataset, "-c", ckpt, "--K", 2, "--D", 1,
             "--seeds", 1, "--det-D", 1, "--sigma-from", tmp_path / "edge.json",
             "--no-plots", "--out", tmp_path / "e")
    assert r.exit_code == 0 and "is the largest of that sweep" in " ".join(r.output.split())
    for run in edge["ptrm"]:  # a clear win inside the sweep: no note
        run["summary"]["aggregate"]["rules"]["best_q"]["mean"] = 0.9 if run is edge["ptrm"][1] \
            else 0.1
    (tmp_path / "inside.json").write_text(json.dumps(edge))
    assert not evaluate.sigma_from_report(tmp_path / "inside.json").at_edge
    fake["split"]["name"] = "golden"
    (tmp_path / "golden.json").write_text(json.dumps(fake))
    r = ptrm("eval", "--sigma-from", tmp_path / "golden.json", "-c", ckpt)
    assert r.exit_code == 2 and "validation" in r.output
    r = ptrm("eval", "--sigma", "0.1", "--sigma-from", tmp_path / "tie.json", "-c", ckpt)
    assert r.exit_code == 2 and "one of them" in r.output

def test_sigma_from_is_recorded_as_the_sweep_report_file(report, ckpt, dataset, tmp_path,
                                                        monkeypatch):
    """`--sigma-from v1` was recorded as "v1": relative to wherever the command ran, and a
    folder, so a report read later did not say which file chose its σ."""
    _, out = report
    monkeypatch.chdir(out.parent)
    r = ptrm("eval", "--split", "val", "--data", dataset, "-c", ckpt, "--K", 2, "--D", 1,
             "--seeds", 1, "--det-D", 1, "--sigma-from", out.name, "--no-plots",
             "--out", tmp_path / "o", "--json")
    assert r.exit_code == 0, r.output
    recorded = json.loads(r.stdout)["settings"]["sigma_from"]["report"]
    assert recorded == str((out / "report.json").resolve())
    # a link named is kept as the link, as every path a report records (paths.report_path)
    link = tmp_path / "latest"
    link.symlink_to(out)
    monkeypatch.chdir(tmp_path)
    r = ptrm("eval", "--split", "val", "--data", dataset, "-c", ckpt, "--K", 2, "--D", 1,
             "--seeds", 1, "--det-D", 1, "--sigma-from", "latest", "--no-plots",
             "--out", tmp_path / "o2", "--json")
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["settings"]["sigma_from"]["report"] == \
        str(tmp_path / "latest" / "report.json")


def test_eval_tables(ckpt, dataset, tmp_path):
    r = ptrm("eval", "--split", "val", "--data", dataset, "-c", ckpt, "--K", 2, "--D", 1,
             "--seeds", 1, "--out", tmp_path / "o", "--no-plots")
    assert r.exit_code == 0, r.output
    text = r.stdout
    for s in ("label match", "rules verifier", "best-Q", "verified", "TRM D=1", "TRM D=2*",
              "aggregate", "95% CI", "compute per puzzle", "H100", "report.json"):
        assert s in text, s
    assert not (tmp_path / "o" / "width_scaling.png").exists()


def test_a_large_cpu_evaluation_says_how_large_and_how_to_look_first(ckpt, dataset, tmp_path,
                                                                     monkeypatch):
    """`ptrm eval --split golden` on a CPU is 391,376 supervision steps of the 7M model (13.5
    PFLOP, most of a day on two cores) and said nothing of it. Left at the protocol's size, a
    CPU evaluation over CPU_NOTE_FLOP now says so; any size option the user gives silences it."""
    from ptrm_cli.commands import eval as eval_cmd

    from ptrm_cli import evaluate

    monkeypatch.setattr(eval_cmd, "CPU_NOTE_FLOP", 0)  # the tiny model: any size is "large"
    monkeypatch.setattr(evaluate, "run_eval", lambda *a, **kw: (_ for _ in ()).throw(
        KeyboardInterrupt))  # the note comes before the work: skip the work
    r = ptrm("eval", "--split", "val", "--data", dataset, "-c", ckpt, "--out", tmp_path / "a",
             "--no-plots")
    assert r.exit_code == 130, r.output
    text = " ".join(r.output.split())
    # 5 puzzles x (baselines of D=3 and K*D=300 steps + K=100 x D=3 x 3 seeds)
    assert "on a CPU this evaluation is 6,015 supervision steps of the model" in text
    assert f"For a first look: {eval_cmd.FIRST_LOOK} (a mix of types" in text
    # it said "about a minute", which took 2-3 minutes on a busy 2-core machine
    assert f"(a mix of types: {eval_cmd.FIRST_LOOK_TIME})" in text
    assert "busy" in eval_cmd.FIRST_LOOK_TIME
    assert "--sample" in eval_cmd.FIRST_LOOK  # not --limit: the first puzzles are one type
    r = ptrm("eval", "--split", "val", "--data", dataset, "-c", ckpt, "--K", 2, "--seeds", 1,
             "--out", tmp_path / "b", "--no-plots")
    assert r.exit_code == 130, r.output
    assert "first look" not in r.output


def test_sigma_sweep_table_ranks_by_the_rules_as_sigma_from_does(report):
    """The σ-sweep table showed label match while sigma_sweep.png and --sigma-from rank σ by
    the rules: a sweep whose σ differ only by the rules read as a tie in the table, and
    --sigma-from then took a σ the table gave no reason for."""
    import copy

    from rich.console import Console

    rep = copy.deepcopy(report[0])
    assert len(rep["ptrm"]) == 2
    for entry, rules in zip(rep["ptrm"], (0.25, 0.75)):  # label: a tie; the rules: 0.5 wins
        agg = entry["summary"]["aggregate"]
        for m in evaluate.METRICS:
            agg["label"][m]["mean"], agg["rules"][m]["mean"] = 0.0, rules
    console = Console(width=200, record=True)
    for table in evaluate.tables(rep):
        console.print(table)
    text = console.export_text()
    sweep = text[text.index("σ sweep"):text.index("compute per puzzle")]
    assert "by rules verifier" in sweep.splitlines()[0]
    rows = [line.split() for line in sweep.splitlines() if line.split()[:1] in (["0"], ["0.5"])]
    assert [row[:3] for row in rows] == [["0", "25.0", "25.0"], ["0.5", "75.0", "75.0"]]


def test_eval_dataset_folder_picks_val_and_one_sigma_skips_the_sweep_plot(ckpt, dataset, tmp_path):
    r = ptrm("eval", "--split", dataset, "-c", ckpt, "--K", 2, "--D", 1, "--seeds", 1,
             "--det-D", 1, "--limit", 3, "--out", tmp_path, "--json")
    assert r.exit_code == 0, r.output
    rep = json.loads(r.stdout)
    assert rep["split"]["name"] == "val" and rep["split"]["n"] == 3
    assert "--limit" not in r.stderr  # 3 of 5: it applied
    assert [d["D"] for d in rep["deterministic"]] == [1]
    # a --limit above the split's size said nothing, as if it had applied
    r = ptrm("eval", "--split", dataset, "-c", ckpt, "--K", 2, "--D", 1, "--seeds", 1,
             "--det-D", 1, "--limit", 1000, "--out", tmp_path / "all", "--json", "--no-plots")
    assert r.exit_code == 0 and json.loads(r.stdout)["split"]["n"] == 5
    assert "note: --limit 1000 is more than the 5 puzzles there: evaluating all of them" in \
        " ".join(r.stderr.split())
    assert set(rep["files"]) == {"width_scaling", "q_steps", "report"}
    # a second evaluation in that folder: its note, and no plot of the first is left (a sweep
    # plot of two σ stayed beside a one-σ report)
    args = ("eval", "--split", dataset, "-c", ckpt, "--K", 2, "--D", 1, "--seeds", 1,
            "--det-D", 1, "--limit", 3, "--out", tmp_path)
    assert ptrm(*args, "--sigma", "0.2,0.5").exit_code == 0
    assert (tmp_path / "sigma_sweep.png").exists()
    (tmp_path / "mine.png").write_bytes(b"not ptrm's")
    r = ptrm(*args, "--no-plots")
    assert r.exit_code == 0 and "holds a finished evaluation: this one replaces it" in \
        " ".join(r.stderr.split())
    assert sorted(p.name for p in tmp_path.glob("*.png")) == ["mine.png"]


def test_eval_sigma_defaults_to_the_checkpoints_validated_one(dataset, tmp_path):
    from ptrm_codecs.families import PPBENCH
    from ptrm_cli.engine.checkpoint import save_checkpoint
    from fixtures_models import tiny_model

    tuned = save_checkpoint(tmp_path / "tuned", tiny_model(len(PPBENCH.vocab)), PPBENCH.vocab,
                            {"sigma": 0.35})
    args = ("eval", "--split", dataset, "-c", tuned, "--K", 2, "--D", 1, "--seeds", 1,
            "--det-D", 1, "--limit", 2, "--no-plots", "--json")
    r = ptrm(*args, "--out", tmp_path / "own")
    assert r.exit_code == 0, r.output
    assert [p["sigma"] for p in json.loads(r.stdout)["ptrm"]] == [0.35]
    assert "σ=0.35 (the model's)" in r.stderr
    r = ptrm(*args, "--sigma", "0.1", "--out", tmp_path / "given")
    assert [p["sigma"] for p in json.loads(r.stdout)["ptrm"]] == [0.1]
    r = ptrm(*args, "--sigma", ",", "--out", tmp_path / "none")  # names nothing: not the default
    assert r.exit_code == 2 and "names no value" in r.output


def test_eval_noise_target_follows_the_model_and_the_sweep(report, dataset, tmp_path):
    from ptrm_codecs.families import PPBENCH
    from ptrm_cli.engine.checkpoint import save_checkpoint
    from fixtures_models import tiny_model

    on_y = save_checkpoint(tmp_path / "y", tiny_model(len(PPBENCH.vocab)), PPBENCH.vocab,
                           {"sigma": 0.35, "perturb": "y"})
    args = ("eval", "--split", dataset, "-c", on_y, "--K", 2, "--D", 1, "--seeds", 1,
            "--det-D", 1, "--limit", 2, "--no-plots", "--json")
    r = ptrm(*args, "--out", tmp_path / "own")
    assert r.exit_code == 0, r.output
    rep = json.loads(r.stdout)
    assert rep["settings"]["perturb"] == "y"
    assert [(p["sigma"], p["perturb"]) for p in rep["ptrm"]] == [(0.35, "y")]
    # the report says where σ came from, as solve's --json does (it did not)
    assert rep["settings"]["sigma_source"] == "model"
    r = ptrm(*args, "--perturb", "z", "--out", tmp_path / "z")
    assert r.exit_code == 2 and "chosen for noise on y" in r.output
    r = ptrm(*args, "--perturb", "z", "--sigma", "0.35", "--out", tmp_path / "zs")
    assert r.exit_code == 0 and json.loads(r.stdout)["settings"]["perturb"] == "z"
    assert json.loads(r.stdout)["settings"]["sigma_source"] == "option"
    # --sigma-from takes σ with the target it was swept on: this sweep put the noise on z
    sweep = report[1] / "report.json"
    r = ptrm(*args, "--sigma-from", sweep, "--out", tmp_path / "from")
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["settings"]["perturb"] == "z"
    assert json.loads(r.stdout)["settings"]["sigma_source"] == "sweep"
    r = ptrm(*args, "--sigma-from", sweep, "--perturb", "y", "--out", tmp_path / "mixed")
    assert r.exit_code == 2 and "that sweep put the noise on z" in r.output
    # the hints' commands run as given: a named split needs its --data (they once lacked it)
    assert "ptrm eval --split val --data DIR --perturb y" in " ".join(r.output.split())
    r = ptrm(*args, "--perturb", "z", "--out", tmp_path / "z")
    assert "ptrm eval --split val --data DIR --perturb z" in " ".join(r.output.split())
    # σ is said with its target, which the sweep gives even where the model's is another
    text = ptrm(*args[:-1], "--sigma-from", sweep, "--out", tmp_path / "from_text").stderr
    assert " on z, chosen on val" in " ".join(text.split())
    # the tables name a target that is not z: a y run's σ is not comparable with z's (they
    # named none; the stderr line alone said perturb=y)
    text = " ".join(ptrm(*args[:-1], "--sigma", "0.2,0.35", "--out", tmp_path / "t").stdout
                    .split())
    assert "(@K: K=2 D=1 σ=0.2 on y)" in text and "σ sweep on y: aggregate" in text
    # ... the compute table's PTRM rows too (they named none)
    assert "PTRM K=2 D=1 σ=0.2 on y " in text and "PTRM K=2 D=1 σ=0.35 on y " in text
    assert " on z" not in " ".join(ptrm(*args[:-1], "--perturb", "z", "--sigma", "0.35",
                                        "--out", tmp_path / "tz").stdout.split())
    import inspect

    from ptrm_cli.commands.eval import evaluate as command
    assert "the noise target that sweep used" in \
        inspect.signature(command).parameters["sigma_from"].default.help


def test_sigma_from_a_report_whose_settings_are_not_a_mapping_is_refused(report, ckpt,
                                                                        tmp_path):
    """`"settings": null` (a hand-edited report) ended in an AttributeError traceback."""
    broken = json.loads((report[1] / "report.json").read_text())
    broken["settings"] = None
    (tmp_path / "r.json").write_text(json.dumps(broken))
    r = ptrm("eval", "--sigma-from", tmp_path / "r.json", "-c", ckpt)
    assert r.exit_code == 2 and "not a `ptrm eval` report.json" in r.output, r.output


def test_eval_golden_from_the_ppbench_wheel(ckpt, tmp_path):
    try:
        path = eval_sets.golden_path()
    except Exception as e:  # noqa: BLE001
        pytest.skip(f"ppbench wheel: {e}")
    assert path.name == "golden_300.jsonl"
    r = ptrm("eval", "--split", "golden", "-c", ckpt, "--K", 2, "--D", 1, "--seeds", 1,
             "--det-D", 1, "--limit", 2, "--no-plots", "--out", tmp_path, "--json")
    assert r.exit_code == 0, r.output
    rep = json.loads(r.stdout)
    assert rep["split"]["name"] == "golden" and rep["split"]["n"] == 2


def test_golden_filter_is_the_papers_61(ckpt):
    path, why = pzpr_oracle.find_golden()
    if path is None:
        pytest.skip(why)
    loaded = solver.load_model(ckpt, "cpu")
    ev = eval_sets.load_ppbench_jsonl(path, loaded)
    paper = {"sudoku": 15, "lightup": 8, "nurikabe": 9, "heyawake": 7, "tapa": 10, "shakashaka": 12}
    installed = {t: n for t, n in paper.items() if t in installed_codecs()}
    # puzzles the vocabulary cannot encode (a tapa '?' clue) are reported, not dropped silently
    unusable = [u["type"] for u in ev.unusable]
    assert all(u["reason"] and u["line"] for u in ev.unusable)
    assert {t: ev.types.count(t) + unusable.count(t) for t in installed} == installed
    assert set(ev.skipped) == set(paper) - set(installed)
    if len(installed) == 6:
        assert len(ev) + len(unusable) == 61
        assert "aggregate_excl_shakashaka" in evaluate.groups_of(ev)
    # --types keeps those types' puzzles in split order; --sample then draws among them
    some = [t for t in ("tapa", "nurikabe") if t in ev.types]
    if some:
        sub = eval_sets.resolve_split(str(path), None, loaded, types=some)
        assert sub.keys == [k for k, t in zip(ev.keys, ev.types) if t in some]
        assert torch.equal(sub.inputs, ev.inputs[[i for i, t in enumerate(ev.types) if t in some]])
        both = eval_sets.resolve_split(str(path), None, loaded, types=some, sample=3)
        assert set(both.types) <= set(some) and set(both.keys) < set(sub.keys)
        assert both.keys == sub.sample(3).keys
    # labels satisfy every codec's rules: decode(label) verifies
    for v, lab in zip(ev.verifiers, ev.labels):
        assert v(lab.numpy()).valid, v.codec.name


# -- pieces ----------------------------------------------------------------------------------------

def test_score_ignores_label_pad_for_mode():
    labels = torch.tensor([[1, 2, 0]])
    # rollouts 0 and 2 give the same answer with different junk in the ignored position
    preds = torch.tensor([[[1, 2, 5], [3, 3, 0], [1, 2, 7], [3, 3, 0]]])
    q = torch.tensor([[0.0, 0.1, 0.0, 0.2]])
    valid = torch.zeros(1, 4, dtype=torch.bool)
    s = evaluate.score(preds, q, labels, valid)
    assert s["label"]["pass"].tolist() == [True]
    assert s["label"]["best_q"].tolist() == [False]
    # [1,2,*] x2 vs [3,3,0] x2: tie on count; the mean Q decides ([3,3,0]) — not 3 separate answers
    assert s["label"]["mode"].tolist() == [False]
    q2 = torch.tensor([[0.5, 0.1, 0.5, 0.2]])
    assert evaluate.score(preds, q2, labels, valid)["label"]["mode"].tolist() == [True]


# -- user mistakes ---------------------------------------------------------------------------------

def bad(*args, match):
    r = ptrm(*args)
    assert r.exit_code == 2, (r.exit_code, r.output)
    assert match.lower() in " ".join(r.output.split()).lower(), r.output
    return r


def test_eval_errors(ckpt, dataset, tmp_path):
    bad("eval", "--split", "val", "-c", ckpt, match="--data")
    bad("eval", "--split", tmp_path / "missing.jsonl", "-c", ckpt, match="not golden")
    bad("eval", "--split", "val", "--data", tmp_path, "-c", ckpt, match="not a ptrm dataset")
    bad("eval", "--split", "test", "--data", dataset, "-c", ckpt, match="no split 'test'")
    bad("eval", "--split", dataset, "-c", ckpt, "--sigma", "abc", match="--sigma")
    bad("eval", "--split", dataset, "-c", ckpt, "--seeds", "100000000", match="--seeds")
    bad("eval", "--split", dataset, "-c", ckpt, "--types", ",", match="names no puzzle type")
    bad("eval", "--split", dataset, "-c", ckpt, "--sigma", "0.2,inf", match="--sigma inf")
    bad("eval", "--split", dataset, "-c", ckpt, "--det-D", "0", match="--det-D")
    bad("eval", "--split", dataset, "-c", tmp_path / "nope", match="no such file")
    junk = tmp_path / "junk.jsonl"
    junk.write_text('{"pid": "sudoku"\n')
    bad("eval", "--split", junk, "-c", ckpt, match="junk.jsonl:1")
    other = tmp_path / "other.jsonl"
    other.write_text('{"pid": "slither", "width": 10, "height": 10}\n')
    bad("eval", "--split", other, "-c", ckpt, match="no puzzles")
    bad("eval", "--split", dataset, "-c", ckpt, "--types", "sudoku,tapa",
        match="no tapa puzzles to evaluate (it holds sudoku)")
    bad("eval", "--split", dataset, "-c", ckpt, "--limit", 2, "--sample", 1,
        match="do not combine")
    if torch.cuda.device_count() < 2:  # N CPU processes only when asked for by --device cpu
        r = bad("eval", "--split", dataset, "-c", ckpt, "--gpus", 2, match="CUDA device(s)")
        assert "--device cpu --gpus 2" in " ".join(r.output.split())


def test_eval_checkpoint_of_another_vocabulary(dataset, tmp_path):
    from ptrm_cli.vocab import PAD, Vocab

    maze = save_tiny_checkpoint(tmp_path / "maze", Vocab("maze", (PAD, "wall", "open")))
    r = bad("eval", "--split", dataset, "-c", maze, match="vocabulary")
    # the hint says what would match (it was the generic "ptrm eval --help says what it takes")
    text = " ".join(r.output.split())
    assert "a checkpoint trained on 'ppbench' data (-c)" in text, text
    assert "this model on a 'maze' dataset" in text and "--help says" not in text


# -- --merge: seeds run as separate jobs, put back together ------------------------------------

def _strip_times(x):
    """The report without what differs between two runs of the same computation."""
    if isinstance(x, dict):
        return {k: _strip_times(v) for k, v in x.items()
                if "time" not in k and "cost" not in k and k not in ("created", "files")}
    if isinstance(x, list):
        return [_strip_times(v) for v in x]
    return x


def _close(a, b, path="report"):
    if isinstance(a, dict):
        assert a.keys() == b.keys(), path
        for k in a:
            _close(a[k], b[k], f"{path}.{k}")
    elif isinstance(a, list):
        assert len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b)):
            _close(x, y, f"{path}[{i}]")
    elif isinstance(a, float):
        assert a == pytest.approx(b, abs=1e-9), path
    else:
        assert a == b, path


def test_merge_of_one_seed_jobs_equals_one_job_of_every_seed(report, ckpt, dataset, tmp_path):
    whole, _ = report  # seeds 0 and 1 in one job
    parts = []
    for seed in (0, 1):
        out = tmp_path / f"seed{seed}"
        r = ptrm("eval", "--split", "val", "--data", dataset, "-c", ckpt, "--K", 4, "--D", 2,
                 "--sigma", "0,0.5", "--seed", seed, "--seeds", 1, "--out", out, "--no-plots")
        assert r.exit_code == 0, r.output
        parts.append(out)
    # the two jobs disagree somewhere, or the test could not tell a merge from a copy
    one, two = (json.loads((p / "report.json").read_text()) for p in parts)
    assert _strip_times(one["ptrm"]) != _strip_times(two["ptrm"])

    merged_dir = tmp_path / "merged"
    r = ptrm("eval", "--merge", parts[1], "--merge", parts[0] / "report.json", "-o", merged_dir)
    assert r.exit_code == 0, r.output
    assert "merged seeds [0, 1] of 2 reports" in r.output and "best-Q" in r.output
    merged = json.loads((merged_dir / "report.json").read_text())
    assert [m["seeds"] for m in merged["merged_from"]] == [[1], [0]]
    assert merged["settings"]["seeds"] == [0, 1]
    # q_steps: seed 0's, as the job of every seed records it, though seed 1's report is first
    assert merged["q_steps"]["seed"] == whole["q_steps"]["seed"] == 0
    for key in ("ptrm", "deterministic", "width_curve", "q_steps", "split", "model"):
        _close(_strip_times(merged[key]), _strip_times(whole[key]), key)
    for name in ("width_scaling", "sigma_sweep", "q_steps"):  # plots from the merged report
        assert (merged_dir / f"{name}.png").read_bytes()[:8] == PNG
    # the merged time is the mean over every seed's run
    runs = [run["time_per_puzzle_s"] for p in (one, two) for run in p["ptrm"][0]["runs"]]
    assert merged["ptrm"][0]["time_per_puzzle_s"] == pytest.approx(np.mean(runs))


def test_merge_refuses_reports_of_different_evaluations(report, ckpt, dataset, tmp_path):
    _, whole = report
    bad("eval", "--merge", whole, match="two or more reports")
    copy = tmp_path / "copy.json"  # another report of the same seeds (one given twice: below)
    copy.write_text((whole / "report.json").read_text())
    bad("eval", "--merge", whole, "--merge", copy, match="seed 0 is in both")
    bad("eval", "--merge", whole, "--merge", tmp_path / "none", match="no such report")
    junk = tmp_path / "junk.json"
    junk.write_text("{}")
    bad("eval", "--merge", whole, "--merge", junk, match="not a `ptrm eval` report")
    other = tmp_path / "other"
    for args, what in ((("--K", 2), "settings (K 2 vs 4)"), (("--limit", 3), "puzzles")):
        r = ptrm("eval", "--split", "val", "--data", dataset, "-c", ckpt, "--K", 4, "--D", 2,
                 "--sigma", "0,0.5", "--seed", 5, "--seeds", 1, *args, "--out", other,
                 "--no-plots")
        assert r.exit_code == 0, r.output
        bad("eval", "--merge", whole, "--merge", other, match=what)
    # the width curve's subsampling draws pool only between reports that drew alike
    drawn = json.loads((whole / "report.json").read_text())
    drawn["settings"]["width_draws"] = 4
    drawn["settings"]["seeds"] = [s + 10 for s in drawn["settings"]["seeds"]]
    for e in drawn["ptrm"]:
        for run in e["runs"]:
            run["seed"] += 10
    (tmp_path / "drawn.json").write_text(json.dumps(drawn))
    bad("eval", "--merge", whole, "--merge", tmp_path / "drawn.json",
        match="settings (width_draws 4 vs 8)")
    drawn["settings"]["width_draws"] = 8
    drawn["settings"]["halt"] = 0.5  # a halted run beside a plain one
    (tmp_path / "drawn.json").write_text(json.dumps(drawn))
    bad("eval", "--merge", whole, "--merge", tmp_path / "drawn.json",
        match="settings (halt 0.5 vs not set)")
    # a report from before the width curve was judged by the rules: its curve is label's
    drawn["settings"]["halt"] = None
    del drawn["width_curve"]["judge"]
    (tmp_path / "drawn.json").write_text(json.dumps(drawn))
    bad("eval", "--merge", whole, "--merge", tmp_path / "drawn.json",
        match="width-curve judgments (label vs rules)")


def test_merge_of_one_report_given_twice_says_so(report, tmp_path):
    """It said "seed 0 is in both X and X": one path named twice, as if two reports shared it."""
    _, whole = report
    out = tmp_path / "m"
    bad("eval", "--merge", whole, "--merge", whole, "-o", out,
        match=f"--merge {whole} is given twice: a report merges once")
    bad("eval", "--merge", whole, "--merge", whole / "report.json", "-o", out,
        match=f"--merge {whole} and --merge {whole / 'report.json'} are the same report")
    assert not out.exists()


def test_merge_refuses_an_out_that_is_a_file_or_in_use(report, ckpt, dataset, tmp_path):
    """A file as --out was a FileExistsError traceback; a merge wrote into a folder that an
    evaluation was writing."""
    from ptrm_cli.atomic import exclusive

    _, whole = report
    other = tmp_path / "s9"
    r = ptrm("eval", "--split", "val", "--data", dataset, "-c", ckpt, "--K", 4, "--D", 2,
             "--sigma", "0,0.5", "--seed", 9, "--seeds", 1, "--out", other, "--no-plots")
    assert r.exit_code == 0, r.output
    afile = tmp_path / "afile"
    afile.write_text("x")
    bad("eval", "--merge", whole, "--merge", other, "-o", afile, match=f"--out {afile} is a file")
    bad("eval", "--merge", whole, "--merge", other, "-o", afile / "sub",
        match="cannot write there")
    busy = tmp_path / "busy"
    with exclusive(busy, "test"):
        bad("eval", "--merge", whole, "--merge", other, "-o", busy,
            match="another ptrm job is writing it")
    assert not (busy / "report.json").exists()
    r = ptrm("eval", "--merge", whole, "--merge", other, "-o", busy, "--no-plots")
    assert r.exit_code == 0 and (busy / "report.json").exists(), r.output


@pytest.mark.parametrize("option", [("--halt", "0.5"), ("--K", "8"), ("--seeds", "2"),
                                    ("--resume",), ("-c", "somewhere"),
                                    ("--K", "100"), ("--seed", "0"),  # the defaults, given
                                    ("--device", "cpu")])
def test_merge_refuses_the_options_of_a_run(report, option):
    """--merge runs nothing: an option that only a run uses would be silently ignored."""
    _, whole = report
    bad("eval", "--merge", whole, "--merge", whole, *option,
        match=f"--merge runs nothing, so {'--checkpoint' if option[0] == '-c' else option[0]} "
              "would have no effect")


# -- --resume: an interrupted evaluation keeps its finished runs -------------------------------

def _interrupted_eval(monkeypatch, ckpt, dataset, out):
    """`ptrm eval` into `out` killed at its fourth timed run (the baselines at D=2 and 8 and
    (σ 0, seed 0) finish); returns its arguments and the list that then records (seed, σ) of
    every timed run."""
    from ptrm_cli.engine import distributed

    real, calls, kill = distributed.sample, [], [4]

    def counting(*args, **kw):  # timed runs (they report progress)
        if kw.get("on_chunk") is not None:
            calls.append((kw.get("seed"), args[2].sigma))
            if len(calls) == kill[0]:
                raise RuntimeError("killed")
        return real(*args, **kw)

    monkeypatch.setattr(distributed, "sample", counting)
    args = ["eval", "--split", "val", "--data", dataset, "-c", ckpt, "--K", 4, "--D", 2,
            "--sigma", "0,0.5", "--seeds", 2, "--out", out, "--no-plots"]
    r = CliRunner().invoke(app, [str(a) for a in args])
    assert isinstance(r.exception, RuntimeError)
    kill[0], calls[:] = None, []
    return args, calls


def test_interrupted_eval_resumes_with_only_the_missing_runs(report, ckpt, dataset, tmp_path,
                                                             monkeypatch):
    whole, _ = report
    out = tmp_path / "ev"
    args, calls = _interrupted_eval(monkeypatch, ckpt, dataset, out)
    partial = json.loads((out / "partial.json").read_text())
    assert sorted(partial["runs"]) == ["det/2", "det/8", "ptrm/0.0/0"]
    assert not (out / "report.json").exists()

    r = ptrm(*args, "--resume", "--json")
    assert r.exit_code == 0, r.output
    assert "resuming: 3 of 6 run(s) finished" in r.output
    assert calls == [(1, 0.0), (0, 0.5), (1, 0.5)]  # only the three missing runs
    assert not (out / "partial.json").exists()
    resumed = json.loads((out / "report.json").read_text())
    for key in ("ptrm", "deterministic", "width_curve", "q_steps", "split"):
        _close(_strip_times(resumed[key]), _strip_times(whole[key]), key)


def test_resumed_progress_counts_only_the_runs_computed_now(ckpt, dataset, tmp_path,
                                                           monkeypatch):
    """Restored runs were counted as done work: a resume printed "62% · 19 s elapsed · ~12 s
    left" before computing anything (19 s of warm-up), where 40 s were left. Progress now
    starts from the first computed chunk and reaches 100% at the end."""
    from contextlib import contextmanager

    from ptrm_cli.commands import eval as eval_cmd

    args, calls = _interrupted_eval(monkeypatch, ckpt, dataset, tmp_path / "ev")
    seen = []  # (timed runs started so far, fraction reported)

    @contextmanager
    def recording(label):
        yield lambda fraction: seen.append((len(calls), fraction))

    monkeypatch.setattr(eval_cmd, "fraction_progress", recording)
    r = ptrm(*args, "--resume")
    assert r.exit_code == 0, r.output
    assert len(calls) == 3 and seen, seen
    assert all(started > 0 for started, _ in seen), seen  # nothing before the first run
    fractions = [f for _, f in seen]
    assert fractions == sorted(fractions) and fractions[-1] == pytest.approx(1.0)
    # each of the three runs left is a third of the work (its chunks report as they finish)
    assert max(f for started, f in seen if started == 1) == pytest.approx(1 / 3)


def test_an_out_that_cannot_take_the_report_is_refused_before_the_puzzles_load(
        ckpt, dataset, tmp_path, monkeypatch):
    """A file as --out, or a folder another evaluation is writing, was refused only after the
    split was read and encoded: half a minute for a 49k-line sudoku list."""
    from ptrm_cli.atomic import exclusive

    def no_reading(*args, **kw):
        raise AssertionError("the split was read before --out was checked")

    monkeypatch.setattr(eval_sets, "resolve_split", no_reading)
    args = ("eval", "--split", "val", "--data", dataset, "-c", ckpt, "--K", 2, "--D", 1)
    afile = tmp_path / "afile"
    afile.write_text("x")
    bad(*args, "-o", afile, match=f"--out {afile} is a file")
    with exclusive(tmp_path / "busy", "test"):
        bad(*args, "-o", tmp_path / "busy", match="another ptrm job is writing it")


def test_merge_or_sigma_from_of_an_interrupted_job_says_to_finish_it(report, ckpt, dataset, tmp_path,
                                                     monkeypatch):
    """A seed job cut short (its partial.json, no report.json) given to --merge: the error
    named a missing report.json, or the partial file's format, not what to do."""
    _, whole = report
    out = tmp_path / "cut"
    _interrupted_eval(monkeypatch, ckpt, dataset, out)
    for given in (out, out / "partial.json", out / "report.json"):
        r = bad("eval", "--merge", whole, "--merge", given, match="an interrupted evaluation")
        assert "--resume" in r.output
        # a sweep cut short, given to --sigma-from, the same (it said "cannot read")
        r = bad("eval", "--split", "val", "--data", dataset, "-c", ckpt, "--sigma-from", given,
                "-o", tmp_path / "from", match="an interrupted evaluation")
        assert "--resume" in r.output


def test_resume_reruns_a_run_whose_curve_was_judged_by_label(report, ckpt, dataset, tmp_path,
                                                            monkeypatch):
    """A partial.json from before the curves were judged by the rules: its run that holds them
    is run again, so a report's width curve and Q over steps never mix judgments."""
    whole, _ = report
    out = tmp_path / "ev"
    args, calls = _interrupted_eval(monkeypatch, ckpt, dataset, out)
    partial = json.loads((out / "partial.json").read_text())
    run = partial["runs"]["ptrm/0.0/0"]
    run["curve"] = run["curve"]["points"]  # as the code before saved them: no judge
    del run["q_steps"]["judge"]
    (out / "partial.json").write_text(json.dumps(partial))

    r = ptrm(*args, "--resume", "--json")
    assert r.exit_code == 0, r.output
    assert calls == [(0, 0.0), (1, 0.0), (0, 0.5), (1, 0.5)]  # that run again, and the rest
    resumed = json.loads((out / "report.json").read_text())
    assert resumed["width_curve"]["judge"] == resumed["q_steps"]["judge"] == "rules"
    for key in ("ptrm", "width_curve", "q_steps"):
        _close(_strip_times(resumed[key]), _strip_times(whole[key]), key)


def test_resume_refuses_another_evaluations_runs_and_start_over_says_so(ckpt, dataset,
                                                                         tmp_path):
    out = tmp_path / "ev"
    base = ["eval", "--split", "val", "--data", dataset, "-c", ckpt, "--D", 2, "--sigma", "0.5",
            "--seeds", 1, "--out", out, "--no-plots"]
    (out).mkdir()
    fp = {"checkpoint": "x"}
    (out / "partial.json").write_text(json.dumps(
        {"format": "ptrm-eval-partial/1", "fingerprint": fp, "runs": {}}))
    bad(*base, "--K", 2, "--resume", match="holds runs of another evaluation (different "
        "weights; model; puzzles; K: not set in the saved runs, 2 now; D: not set in the saved "
        "runs, 2 now; perturb: not set in the saved runs, z now; width_draws: not set")
    (out / "partial.json").write_text("{")
    bad(*base, "--K", 2, "--resume", match="not the partial results of a `ptrm eval`")
    r = ptrm(*base, "--K", 2)  # without --resume: starts over, and says so
    assert r.exit_code == 0 and "starting over" in r.output, r.output
    assert not (out / "partial.json").exists() and (out / "report.json").exists()
    r = ptrm(*base, "--K", 3, "--resume")  # nothing saved: everything runs, and it says the
    # finished report.json (of another K) is replaced
    assert r.exit_code == 0 and "is a finished evaluation" in r.output, r.output
    r = ptrm(*base, "--K", 3, "--resume")  # that same evaluation: complete, nothing runs
    assert r.exit_code == 0 and "already complete, nothing run" in r.output, r.output


def test_resume_of_a_finished_evaluation_leaves_it(report, ckpt, dataset, tmp_path,
                                                  monkeypatch):
    """--resume on a folder whose report is this very evaluation, complete, ran everything
    again and replaced it. Now it says so and shows the report as the run did (--json: its
    JSON); other settings still run again, the note saying what differs."""
    import shutil

    from ptrm_cli.engine import distributed

    _, whole = report
    out = tmp_path / "done"
    shutil.copytree(whole, out)
    before = {f.name: f.read_bytes() for f in out.iterdir()}

    def nothing_runs(*args, **kw):
        raise KeyboardInterrupt  # a run started: the test stops there (exit 130)

    monkeypatch.setattr(distributed, "sample", nothing_runs)

    def resume(*extra, K=4, seeds=2):  # the report fixture's evaluation by default
        return ptrm("eval", "--split", "val", "--data", dataset, "-c", ckpt, "--K", K, "--D", 2,
                    "--sigma", "0,0.5", "--seeds", seeds, "--out", out, "--resume", *extra)

    r = resume("--json")
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout) == json.loads(before["report.json"])
    assert "holds this evaluation, complete: nothing left to run" in " ".join(r.stderr.split())
    r = resume()
    assert r.exit_code == 0 and "already complete, nothing run" in r.stdout, r.output
    assert {f.name: f.read_bytes() for f in out.iterdir()} == before  # left as it was
    # another evaluation (K), or more of this one (a seed): run again, as before, saying why
    r = resume(K=3)
    assert r.exit_code == 130 and "is a finished evaluation of other settings (different K: " \
        "4 in the report, 3 now)" in " ".join(r.output.split()), r.output
    r = resume(seeds=3)
    assert r.exit_code == 130 and "is a finished evaluation of other σ, seeds or TRM depths" \
        in " ".join(r.output.split()), r.output


def _small_val_eval(ckpt, dataset, tmp_path):
    """A K=2, D=2 evaluation of the validation split into an --out made for it: the folder,
    the command's words, the loaded model and the split (for a partial.json's fingerprint)."""
    out = tmp_path / "ev"
    out.mkdir()
    base = ["eval", "--split", "val", "--data", dataset, "-c", ckpt, "--K", 2, "--D", 2,
            "--sigma", "0.5", "--seeds", 1, "--det-D", 2, "--out", out, "--no-plots"]
    loaded = solver.load_model(str(ckpt), "cpu")
    return out, base, loaded, eval_sets.resolve_split("val", str(dataset), loaded)


def test_resume_refuses_runs_saved_with_another_cpu_thread_count(ckpt, dataset, tmp_path):
    """A CPU sums in another order with another thread count: --resume with other --threads
    mixed runs that do not repeat bit for bit into one report. Refused, naming both counts; a
    partial.json from a GPU (or before the count was kept) has none, and resumes."""
    from ptrm_cli.eval_resume import fingerprint

    out, base, loaded, ev = _small_val_eval(ckpt, dataset, tmp_path)

    def saved(threads):
        fp = fingerprint(str(ckpt), loaded.config.to_dict(), ev.keys, 2, 2, "z", 8,
                         exact=True, threads=threads)
        (out / "partial.json").write_text(json.dumps(
            {"format": "ptrm-eval-partial/1", "fingerprint": fp, "runs": {}}))

    saved(torch.get_num_threads() + 1)  # the tests run on one thread (conftest)
    r = bad(*base, "--resume", match=f"(different cpu_threads: {torch.get_num_threads() + 1} "
            f"in the saved runs, {torch.get_num_threads()} now)")
    assert f"--threads {torch.get_num_threads() + 1} resumes them" in r.output
    saved(None)  # a GPU's runs: the thread count is not theirs to differ in
    r = ptrm(*base, "--resume")
    assert r.exit_code == 0 and "another evaluation" not in r.output, r.output


def test_halt_takes_the_answer_at_the_first_confident_step(ckpt, dataset, tmp_path):
    """--halt Q: every rollout (TRM's too) answers at its first step with sigmoid(Q) > Q. Below
    every step's confidence that is step 1, so a 3-step run scores as a 1-step one; above
    all of them it is the last step, so it scores as the plain run."""
    def ev(*extra):
        r = ptrm("eval", "--split", "val", "--data", dataset, "-c", ckpt, "--K", 3,
                 "--sigma", "0.5", "--seeds", 1, "--no-plots", "--json", *extra,
                 "--out", tmp_path / f"e{len(list(tmp_path.iterdir()))}")
        assert r.exit_code == 0, r.output
        return json.loads(r.stdout)

    def scores(rep):
        return ([d["per_puzzle"] for d in rep["deterministic"]],
                rep["ptrm"][0]["per_puzzle"])

    first = ev("--D", 3, "--det-D", 3, "--halt", 1e-9)
    assert first["settings"]["halt"] == 1e-9
    assert first["deterministic"][0]["halt_steps"] == 1.0 == first["ptrm"][0]["halt_steps"]
    assert scores(first) == scores(ev("--D", 1, "--det-D", 1))
    last = ev("--D", 3, "--det-D", 3, "--halt", 1 - 1e-9)
    assert last["deterministic"][0]["halt_steps"] == 3.0 == last["ptrm"][0]["halt_steps"]
    plain = ev("--D", 3, "--det-D", 3)
    assert scores(last) == scores(plain)
    assert plain["settings"]["halt"] is None and "halt_steps" not in plain["ptrm"][0]
    r = ptrm("eval", "--split", "val", "--data", dataset, "-c", ckpt, "--K", 2, "--D", 2,
             "--sigma", "0.5", "--seeds", 1, "--no-plots", "--halt", 0.5,
             "--out", tmp_path / "shown")
    assert r.exit_code == 0 and "halted at sigmoid(Q) > 0.5" in " ".join(r.output.split())


def test_halt_errors_and_resume_keep_halted_runs_apart(ckpt, dataset, tmp_path):
    for q in ("0", "1", "1.5"):  # sigmoid(Q) > 0 always, > 1 never: no halting rule
        bad("eval", "--split", dataset, "-c", ckpt, "--halt", q,
            match=f"--halt {q}: expected a probability strictly between 0 and 1")
    out = tmp_path / "ev"
    base = ["eval", "--split", "val", "--data", dataset, "-c", ckpt, "--K", 2, "--D", 2,
            "--sigma", "0.5", "--seeds", 1, "--out", out, "--no-plots"]
    out.mkdir()
    from ptrm_cli.eval_resume import fingerprint

    loaded = solver.load_model(str(ckpt), "cpu")
    ev = eval_sets.resolve_split("val", str(dataset), loaded)
    plain = fingerprint(str(ckpt), loaded.config.to_dict(), ev.keys, 2, 2, "z", 8,
                        exact=True)  # no --halt
    (out / "partial.json").write_text(json.dumps(
        {"format": "ptrm-eval-partial/1", "fingerprint": plain, "runs": {}}))
    bad(*base, "--halt", 0.5, "--resume",
        match="(different halt: not set in the saved runs, 0.5 now)")
    r = ptrm(*base, "--resume")  # the same evaluation without --halt: accepted
    assert r.exit_code == 0 and "another evaluation" not in r.output, r.output


def test_finished_runs_of_the_same_evaluation_are_not_thrown_away(ckpt, dataset, tmp_path):
    """Rerunning an interrupted evaluation without --resume overwrote its partial.json."""
    from ptrm_cli.eval_resume import fingerprint

    out, base, loaded, ev = _small_val_eval(ckpt, dataset, tmp_path)
    fp = fingerprint(str(ckpt), loaded.config.to_dict(), ev.keys, 2, 2, "z", 8, exact=True)
    kept = json.dumps({"format": "ptrm-eval-partial/1", "fingerprint": fp,
                       "runs": {"det_D2": {"D": 2}}})
    (out / "partial.json").write_text(kept)
    bad(*base, match="holds 1 finished run(s) of this evaluation")
    assert (out / "partial.json").read_text() == kept  # untouched
    r = ptrm(*base, "--K", 3)  # another evaluation's runs: those may go, said so
    assert r.exit_code == 0, r.output
    assert "1 finished run(s) of another evaluation (different K: 2 in the saved runs, 3 now)" \
        in " ".join(r.output.split())


def test_finished_runs_saved_before_exact_existed_are_this_evaluations(tmp_path):
    """A partial.json written before --exact has no "exact" in its fingerprint: --resume took
    its runs, but a rerun without --resume found none of "this evaluation" and overwrote them."""
    from ptrm_cli.eval_resume import finished_runs, fingerprint

    weights = tmp_path / "w.safetensors"
    weights.write_bytes(b"w")
    fp = fingerprint(str(weights), {"h": 1}, ["a"], 2, 2, "z", 8)
    older = {k: v for k, v in fp.items() if k != "exact"}
    path = tmp_path / "partial.json"
    path.write_text(json.dumps({"format": "ptrm-eval-partial/1", "fingerprint": older,
                                "runs": {"det_D2": {"D": 2}}}))
    assert finished_runs(path, fp) == 1
    assert finished_runs(path, {**fp, "K": 3}) == 0  # another evaluation's runs still are not


def test_resume_on_other_puzzles_says_how_many(ckpt, dataset, tmp_path):
    """The refusal said "(different puzzles)" alone; it now gives both counts, from the count
    a partial.json keeps beside its fingerprint (written here by the class eval uses)."""
    from ptrm_cli.eval_resume import NAME, SavedRuns, fingerprint

    out = tmp_path / "ev"
    base = ["eval", "--split", "val", "--data", dataset, "-c", ckpt, "--K", 2, "--D", 2,
            "--sigma", "0.5", "--seeds", 1, "--det-D", 2, "--out", out, "--no-plots"]
    loaded = solver.load_model(str(ckpt), "cpu")
    n = len(eval_sets.resolve_split("val", str(dataset), loaded).keys)
    assert n > 1
    fp = fingerprint(str(ckpt), loaded.config.to_dict(), ["a"], 2, 2, "z", 8, exact=True)
    SavedRuns(out / NAME, fp, resume=False, write=True, n_puzzles=1).put("det_D2", {"D": 2})
    bad(*base, "--resume", match=f"(different puzzles: 1 in the saved runs, {n} now)")
    saved = json.loads((out / NAME).read_text())
    saved.pop("n_puzzles")  # a file written before the count was kept: the name alone
    (out / NAME).write_text(json.dumps(saved))
    bad(*base, "--resume", match="(different puzzles)")


@pytest.mark.parametrize("halt", [None, 0.5])
def test_timed_runs_compile_nothing(ckpt, dataset, monkeypatch, halt):
    """The warm-up covers every shape and sigma of the timed runs, so none of them is charged
    for a compilation (seen with a counting torch.compile backend, the engine forced on)."""
    from ptrm_cli.engine import sampler

    phase, compiled = ["warm-up"], []

    def backend(gm, example_inputs):
        compiled.append(phase[0])
        return gm.forward

    real = sampler.sample

    def compiling(model, inputs, cfg, *, on_chunk=None, **kw):  # timed runs report progress
        phase[0] = "timed" if on_chunk is not None else "warm-up"
        return real(model, inputs, cfg, on_chunk=on_chunk, fast=True, compile=True,
                    backend=backend, **kw)

    monkeypatch.setattr(sampler, "sample", compiling)
    loaded = solver.load_model(str(ckpt), "cpu")
    ev = eval_sets.resolve_split("val", str(dataset), loaded, limit=None, sample=None,
                                 types=None, min_difficulty=None)
    evaluate.run_eval(loaded, ev, evaluate.EvalSettings(K=4, D=2, sigmas=[0.3, 0.5, 0.7],
                                                        seeds=[0, 1], halt=halt))
    assert "warm-up" in compiled and "timed" not in compiled, compiled


def test_the_settings_say_how_the_model_sums_its_norm(ckpt, dataset, monkeypatch):
    """From Python: a model switched by hand (or loaded by load_checkpoint, which leaves the
    reduction) ran the other order than the report's settings.exact said."""
    from ptrm_cli.engine import distributed

    seen = set()
    real = distributed.sample
    monkeypatch.setattr(distributed, "sample", lambda model, *a, **kw: seen.update(
        b.pairwise_norm for b in model.L_level.layers) or real(model, *a, **kw))
    loaded = solver.load_model(str(ckpt), "cpu")
    ev = eval_sets.resolve_split("val", str(dataset), loaded)
    for exact in (True, False):
        loaded.model.fixed_order_norm(not exact)
        seen.clear()
        report = evaluate.run_eval(loaded, ev, evaluate.EvalSettings(
            K=2, D=1, sigmas=[0.5], seeds=[0], det_D=[1], exact=exact))
        assert seen == {exact} and report["settings"].get("exact", False) is exact


def test_a_reader_that_stops_early_leaves_a_finished_folder(ckpt, dataset, tmp_path,
                                                           monkeypatch):
    """`ptrm eval ... | head -1`: the pipe closed while the tables were shown, after
    report.json was written, and partial.json stayed beside it; the same command was then
    refused ("holds 3 finished run(s) of this evaluation")."""
    from ptrm_cli import console as console_mod

    out = tmp_path / "piped"
    args = ("eval", "--split", "val", "--data", dataset, "-c", ckpt, "--K", 2, "--D", 1,
            "--seeds", 1, "--no-plots", "--out", out)

    def closed(*a, **k):
        raise BrokenPipeError

    with monkeypatch.context() as m:
        m.setattr(console_mod.console, "print", closed)
        r = ptrm(*args)
    assert r.exit_code == 141, r.output
    assert (out / "report.json").is_file() and not (out / "partial.json").exists()
    again = ptrm(*args)
    assert again.exit_code == 0, again.output


def test_starting_over_on_another_evaluations_runs_says_what_differs(ckpt, dataset, tmp_path,
                                                                    monkeypatch):
    """An interrupted K=4 evaluation, then a K=2 one into the same folder: its saved runs
    were replaced with "no finished run of this evaluation (another's, or none)", not a word
    of what they were."""
    out = tmp_path / "ev"
    args, _ = _interrupted_eval(monkeypatch, ckpt, dataset, out)
    k = args.index("--K")
    args[k + 1] = 2
    r = ptrm(*args)
    text = " ".join(r.output.split())
    assert r.exit_code == 0, r.output
    assert (f"{out / 'partial.json'} holds 3 finished run(s) of another evaluation (different "
            "K: 4 in the saved runs, 2 now): starting over, they are replaced") in text


def test_starting_over_on_runs_saved_without_the_fixed_order_says_how_to_keep_them(
        ckpt, dataset, tmp_path):
    """Runs saved before the fixed order became the default (or with --no-exact) differ from a
    default evaluation's only in `exact`: replacing them did not say that --no-exact --resume
    takes them. Runs that differ in more than that get no such word."""
    from ptrm_cli.eval_resume import fingerprint

    loaded = solver.load_model(str(ckpt), "cpu")
    ev = eval_sets.resolve_split("val", str(dataset), loaded)
    out = tmp_path / "ev"
    out.mkdir()
    for K, kept in ((2, True), (4, False)):
        plain = fingerprint(str(ckpt), loaded.config.to_dict(), ev.keys, K, 2, "z", 8)
        (out / "partial.json").write_text(json.dumps(
            {"format": "ptrm-eval-partial/1", "fingerprint": plain, "n_puzzles": len(ev.keys),
             "runs": {"det/2": {}}}))
        r = ptrm("eval", "--split", "val", "--data", dataset, "-c", ckpt, "--K", 2, "--D", 2,
                 "--sigma", "0.5", "--seeds", 1, "--no-plots", "--out", out)
        assert r.exit_code == 0, r.output
        text = " ".join(r.output.split())
        assert "they are replaced" in text, text
        assert ("they are replaced (--no-exact --resume would have kept them)" in text) is kept


def test_exact_runs_the_model_with_a_fixed_order_norm_and_keeps_its_runs_apart(
        ckpt, dataset, tmp_path, monkeypatch):
    """--exact (the default): every run sees the model with RMSNorm summed pairwise; the report
    says so; --no-exact runs by a reduction, as evaluations before it did, and runs saved so
    are not resumed by a default evaluation (their rollouts may differ on a GPU): the hint
    says how to resume them."""
    from ptrm_cli.engine import distributed

    seen = set()
    real = distributed.sample
    monkeypatch.setattr(distributed, "sample", lambda model, *a, **kw: seen.update(
        b.pairwise_norm for b in model.L_level.layers) or real(model, *a, **kw))
    out = tmp_path / "ev"
    base = ["eval", "--split", "val", "--data", dataset, "-c", ckpt, "--K", 2, "--D", 2,
            "--sigma", "0.5", "--seeds", 1, "--no-plots"]
    r = ptrm(*base, "--out", out, "--json")
    assert r.exit_code == 0, r.output
    assert seen == {True} and json.loads(r.stdout)["settings"]["exact"] is True
    seen.clear()
    r = ptrm(*base, "--out", tmp_path / "plain", "--json", "--no-exact")
    assert r.exit_code == 0, r.output
    assert seen == {False} and "exact" not in json.loads(r.stdout)["settings"]
    # runs saved by an evaluation without the fixed order are another evaluation's
    from ptrm_cli.eval_resume import fingerprint

    loaded = solver.load_model(str(ckpt), "cpu")
    ev = eval_sets.resolve_split("val", str(dataset), loaded)
    plain = fingerprint(str(ckpt), loaded.config.to_dict(), ev.keys, 2, 2, "z", 8)
    again = tmp_path / "again"
    again.mkdir()
    (again / "partial.json").write_text(json.dumps(
        {"format": "ptrm-eval-partial/1", "fingerprint": plain, "runs": {}}))
    r = bad(*base, "--out", again, "--resume",
            match="(different exact: not set in the saved runs, True now)")
    assert "add --no-exact to resume them" in " ".join(r.output.split())
    r = ptrm(*base, "--out", again, "--resume", "--no-exact")
    assert r.exit_code == 0 and "another evaluation" not in r.output, r.output
    # and merging a report of the fixed order with a plain one is refused, with how to merge
    # them: the plain one's sum, the other's seeds run again with --no-exact
    for a, b in ((out, tmp_path / "plain"), (tmp_path / "plain", out)):
        r = bad("eval", "--merge", a, "--merge", b, "-o", tmp_path / "merged", match="exact")
        assert (f"{tmp_path / 'plain' / 'report.json'} summed RMSNorm by a reduction"
                in " ".join(r.output.split())), r.output
        assert "seeds again with --no-exact to merge them with it" in " ".join(r.output.split())


def test_an_empty_split_says_where_puzzles_are(ckpt, dataset, tmp_path):
    """A val split built with --val-per-type 0 said only "nothing to evaluate"."""
    from ptrm_cli.engine.data import load_dataset

    ds = load_dataset(dataset)
    val = ds.split("val")
    empty = Split(*(a[:0] for a in (val.inputs, val.labels, val.type, val.puzzle,
                                    val.transform, val.puzzle_id)))
    out = write_dataset(tmp_path / "ds", vocab=ds.vocab, seq_len=ds.seq_len, types=ds.types,
                        splits={"train": val, "val": empty})
    r = bad("eval", "--split", "val", "--data", out, "-c", ckpt, "--K", 2, "--D", 1,
            match="nothing to evaluate (the split holds no puzzles)")
    assert "evaluate another split (train)" in r.output and "--val-per-type" in r.output


def test_types_pick_rows_before_limit_counts_them(ckpt, sudoku, tmp_path):
    """`--limit 1 --types lightup` on a split whose first rows are sudokus read one sudoku,
    then found no lightup in it."""
    codecs = installed_codecs()
    found = golden_examples(["lightup"], n=1)
    if "lightup" not in codecs or not found:
        pytest.skip("lightup codec or golden lightup not available")
    puzzles, rows = [], []
    for codec, rec in [(sudoku[0], r) for r in sudoku[1]] + [(codecs["lightup"], found[0][1])]:
        p, s = codec.from_record(rec)
        puzzles.append({"type": p.type, "key": codec.key(p), "text": codec.to_url(p)})
        fam = codec.family()
        rows.append((codec.encode(p, family=fam), codec.encode_label(p, s, family=fam), p.type))
    types = ["sudoku", "lightup"]
    split = Split(inputs=np.stack([r[0] for r in rows]), labels=np.stack([r[1] for r in rows]),
                  type=np.array([types.index(r[2]) for r in rows]),
                  puzzle=np.arange(len(rows)), transform=np.zeros(len(rows)),
                  puzzle_id=np.zeros(len(rows)), puzzles=puzzles)
    out = write_dataset(tmp_path / "two", vocab=sudoku[0].family().vocab, seq_len=100,
                        types=types, splits={"val": split})
    loaded = solver.load_model(str(ckpt), "cpu")
    ev = eval_sets.resolve_split("val", str(out), loaded, limit=1, types=["lightup"])
    assert ev.types == ["lightup"]
    with pytest.raises(PtrmError, match=r"no nurikabe puzzles to evaluate \(it holds lightup, "
                                        r"sudoku\)"):
        eval_sets.resolve_split("val", str(out), loaded, limit=1, types=["nurikabe"])


def test_types_whose_codec_is_missing_say_so_not_that_the_split_lacks_them(ckpt, tmp_path):
    """`--types qa-two` on a split that holds qa-two rows, which no installed codec reads,
    said "no qa-two puzzles to evaluate (it holds qa-one, qa-two)": a contradiction."""
    from ptrm_codecs.families import PPBENCH

    n = 4
    tokens = (np.arange(n * 100).reshape(n, 100) % 50 + 1).astype(np.uint16)
    out = write_dataset(tmp_path / "ds", vocab=PPBENCH.vocab, seq_len=100,
                        types=["qa-one", "qa-two"],
                        splits={"val": Split(inputs=tokens, labels=tokens,
                                             type=np.array([0, 0, 1, 1]), puzzle=np.arange(n),
                                             transform=np.zeros(n), puzzle_id=np.zeros(n))})
    loaded = solver.load_model(str(ckpt), "cpu")
    with pytest.raises(PtrmError, match=r"no installed codec reads its type\(s\) qa-two"):
        eval_sets.resolve_split("val", str(out), loaded, types=["qa-two"])
    with pytest.raises(PtrmError, match=r"no qa-three puzzles to evaluate \(it holds qa-one, "
                                        r"qa-two\)"):
        eval_sets.resolve_split("val", str(out), loaded, types=["qa-three"])


def test_eval_parity_script_compares_the_engine_with_the_eager_loop(ckpt, dataset, tmp_path,
                                                                     monkeypatch):
    """scripts/eval_parity.py (run on a GPU to hold `ptrm eval --exact` to the eager loop): the
    eager pass really samples with fast=False, the calls line up, and a difference shows."""
    import importlib.util

    from ptrm_cli.engine import sampler

    path = Path(__file__).resolve().parents[1] / "scripts" / "eval_parity.py"
    spec = importlib.util.spec_from_file_location("eval_parity", path)
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    asked, real = [], sampler.sample
    monkeypatch.setattr(sampler, "sample", lambda *a, **kw: asked.append(kw.get("fast"))
                        or real(*a, **kw))
    args = ["eval", "--split", "val", "--data", str(dataset), "-c", str(ckpt), "--K", "3",
            "--D", "2", "--det-D", "2", "--seeds", "1", "--device", "cpu", "--exact"]
    fast = script.evaluate(args, tmp_path / "fast", eager=False)
    n = len(asked)
    eager = script.evaluate(args, tmp_path / "eager", eager=True)
    assert n and asked[:n] == [None] * n and asked[n:] == [False] * n
    assert sampler.sample is not real and sampler.sample.__name__ == "<lambda>"  # put back
    rows = script.compare(fast, eager)
    assert len(rows) == n and all(r["answers_identical"] == 1.0 and r["q_identical"] == 1.0
                                  for r in rows)
    preds, q = eager[-1]
    changed = preds.clone()
    changed[0, 0, 0] += 1
    row = script.compare(fast[-1:], [(changed, q + 0.5)])[0]
    assert row["answers_identical"] == pytest.approx(1 - 1 / row["rollouts"])
    assert row["q_identical"] == 0.0 and row["max_abs_dq"] == 0.5
    reports = [json.loads((tmp_path / k / "report.json").read_text()) for k in ("fast", "eager")]
    assert reports[0]["settings"]["exact"] is True
    assert script.verdicts(reports[0]) == script.verdicts(reports[1])
