"""`ptrm eval` given what a user may get wrong: reports cut short or edited by hand (--merge,
--sigma-from), the golden file by its path, a K too large for memory, and the markdown tables of
a sweep (scripts/report_tables.py). Tiny random models, as test_eval.py."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
import torch

from ptrm_cli import eval_sets, evaluate, solver
from ptrm_cli.errors import PtrmError

from fixtures_models import golden_examples
from fixtures_scripts import load_script
from test_eval import bad, ckpt, dataset, ptrm, report, sudoku  # noqa: F401 (fixtures)

ROOT = Path(__file__).resolve().parents[1]


def _edited(tmp_path: Path, name: str, report: dict, edit) -> Path:
    r = copy.deepcopy(report)
    edit(r)
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(r))
    return path


# -- --merge -------------------------------------------------------------------------------------

@pytest.mark.parametrize("name, edit, what", [
    ("no-settings", lambda r: r.pop("settings"), "no settings.seeds"),
    ("seeds-text", lambda r: r["settings"].update(seeds="7"), "settings.seeds is not a list"),
    ("no-model", lambda r: r.pop("model"), "(no model)"),
    ("no-config", lambda r: r["model"].pop("config"), "no model.config"),
    ("groups-text", lambda r: r.update(groups="sudoku"), "no list groups"),
    ("deterministic-D", lambda r: r["deterministic"][0].pop("D"), "no deterministic[0].D"),
    ("curve-list", lambda r: r["width_curve"].update(metrics=[]),
     "no mapping width_curve.metrics"),
    ("seed-text", lambda r: r["ptrm"][0]["runs"][0].update(seed="0"),
     "the runs of ptrm[0] are not the seeds"),
    ("sigmas-number", lambda r: r["settings"].update(sigmas=0.1), "not one ptrm entry per sigma"),
    ("runs-of-other-seeds", lambda r: r["settings"].update(seeds=[7, 8]),
     "the runs of ptrm[0] are not the seeds [7, 8]"),
    ("a-sigma-short", lambda r: r["ptrm"].pop(), "not one ptrm entry per sigma"),
    ("no-width-curve", lambda r: r.update(width_curve=None), "no width_curve.metrics"),
    ("runs-text", lambda r: r["ptrm"][0].update(runs="0"), "no list ptrm[0].runs"),
    ("no-metric", lambda r: r["ptrm"][1]["runs"][0]["groups"]["aggregate"]["rules"].pop("mode"),
     "no ptrm[1].runs[0].groups.aggregate.rules.mode"),
])
def test_merge_refuses_an_incomplete_report_by_name(report, tmp_path, name, edit, what):
    """A report.json cut short or edited by hand: one message naming the file and what it
    lacks, exit 2, never a traceback (it was KeyError/TypeError tracebacks, or a silent merge
    of seeds that had no runs)."""
    whole, out = report
    broken = _edited(tmp_path, name, whole, edit)
    r = bad("eval", "--merge", out, "--merge", broken, "-o", tmp_path / "m",
            match="not a complete `ptrm eval` report")
    assert what.lower() in " ".join(r.output.split()).lower(), r.output
    assert not (tmp_path / "m").exists()


# -- --sigma-from --------------------------------------------------------------------------------

def test_sigma_from_takes_the_report_folder_as_merge_does(report, tmp_path):
    _, out = report
    assert evaluate.sigma_from_report(out) == evaluate.sigma_from_report(out / "report.json")
    # a folder without one: the message names the file it looked for
    (tmp_path / "empty").mkdir()
    with pytest.raises(PtrmError, match=r"cannot read .*empty.report\.json"):
        evaluate.sigma_from_report(tmp_path / "empty")


def test_sigma_from_given_twice_is_refused_not_narrowed_to_the_last(report, ckpt, dataset,
                                                                   tmp_path):
    """A z sweep and a y sweep, both given: the last one was used without a word."""
    _, out = report
    r = bad("eval", "--split", "val", "--data", dataset, "-c", ckpt, "--K", 2, "--D", 1,
            "--seeds", 1, "--sigma-from", out, "--sigma-from", out / "report.json",
            "--no-plots", "-o", tmp_path / "o", match="--sigma-from given 2 times")
    assert "compare the sweeps" in " ".join(r.output.split())
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("sigma, mean", [(-1.0, 0.5), (True, 0.5), ("0.3", 0.5), (0.3, None),
                                         (float("nan"), 0.5)])
def test_sigma_from_refuses_a_sweep_with_values_no_eval_writes(report, tmp_path, sigma, mean):
    """A hand-edited sweep: a negative, boolean, text or NaN sigma would have been run as is
    (sigma = -1 ran), a null score was a TypeError traceback."""
    whole, _ = report

    def edit(r):
        r["ptrm"][0]["sigma"] = sigma
        r["ptrm"][0]["summary"]["aggregate"]["rules"]["best_q"]["mean"] = mean

    path = _edited(tmp_path, "sweep", whole, edit)
    with pytest.raises(PtrmError, match="not a `ptrm eval` report.json"):
        evaluate.sigma_from_report(path)


def test_sigma_from_an_arc_report_says_what_it_is(tmp_path):
    """An ARC evaluation's report.json was "not a `ptrm eval` report.json", though eval wrote
    it: it holds one σ and pass@K, not a sweep."""
    arc = {"kind": "arc", "split": "evaluation", "ptrm": {"K": 2, "sigma": 0.2, "pass@1": 0.5},
           "trm": {"K": 1, "sigma": 0.0, "pass@1": 0.4}}
    (tmp_path / "report.json").write_text(json.dumps(arc))
    with pytest.raises(PtrmError, match="an ARC evaluation .one σ") as e:
        evaluate.sigma_from_report(tmp_path)
    assert "--sigma S" in e.value.hint


def test_sigma_from_refuses_an_out_that_holds_that_sweep(report, ckpt, dataset, tmp_path):
    """--out naming the sweep's own folder replaced the sweep with a report whose
    settings.sigma_from named itself: the sweep that chose σ was lost. Refused before any
    work, whether the sweep is given as its folder or its report.json."""
    sweep = tmp_path / "sweep"
    sweep.mkdir()
    (sweep / "report.json").write_text((report[1] / "report.json").read_text())
    before = (sweep / "report.json").read_bytes()
    args = ("eval", "--split", "val", "--data", dataset, "-c", ckpt, "--K", 2, "--D", 1,
            "--seeds", 1, "--no-plots")
    for given, out in ((sweep, sweep), (sweep / "report.json", tmp_path / "." / "sweep")):
        bad(*args, "--sigma-from", given, "-o", out,
            match=f"--out {out} holds the --sigma-from sweep")
    assert (sweep / "report.json").read_bytes() == before
    assert not (sweep / "partial.json").exists()


@pytest.mark.parametrize("options, match", [
    (("--sigma", "0.1,0.3"), "--sigma 0.1,0.3: an ARC evaluation runs one σ"),
    (("--seeds", 3), "--seeds 3: an ARC evaluation runs one seed"),
    (("--halt", 0.5, "--det-D", 4), "--halt, --det-D: not for ARC tasks"),
    (("--types", "sudoku"), "--types: not for ARC tasks"),
    (("--min-difficulty", 3), "--min-difficulty: not for ARC tasks"),
    (("--sample", 2), "--sample applies to puzzle splits"),
])
def test_an_arc_evaluation_refuses_what_it_cannot_run(tmp_path, options, match):
    """An ARC dataset runs one σ and one seed, answers at the last step and runs its TRM at
    --D: a σ sweep ran its first σ only, --seeds 3 ran one seed, --halt, --det-D, --types and
    --min-difficulty were dropped, all without a word. Refused before the model loads (the
    checkpoint here does not exist)."""
    arc = tmp_path / "arc"
    arc.mkdir()
    (arc / "meta.json").write_text(json.dumps({"family": "arc"}))
    args = ("eval", "--data", arc, "--split", "test", "-c", tmp_path / "none", "--no-plots")
    bad(*args, *options, match=match)
    # the defaults (--seeds 3 among them) are a puzzle evaluation's: not refused
    bad(*args, "--seed", 1, match="no such file")
    bad(*args, "--seeds", 1, "--sigma", "0.2", match="no such file")


def test_the_golden_file_by_its_path_is_the_golden_set(report, ckpt, tmp_path):  # noqa: F811
    """--split PATH/golden_300.jsonl (the hint when the ppbench wheel is missing) is the golden
    set: named golden, so a sigma sweep on it is refused like one on --split golden."""
    records = [rec for _, rec in golden_examples(["sudoku"], n=2)]
    if not records:
        pytest.skip("PPBench golden set not found")
    golden = tmp_path / "golden_300.jsonl"
    golden.write_text("".join(json.dumps(rec) + "\n" for rec in records))
    loaded = solver.load_model(ckpt, "cpu")
    assert eval_sets.resolve_split(str(golden), None, loaded).name == "golden"
    other = tmp_path / "mine.jsonl"
    other.write_text(golden.read_text())
    assert eval_sets.resolve_split(str(other), None, loaded).name == "mine"

    r = ptrm("eval", "--split", golden, "-c", ckpt, "--K", 2, "--D", 1, "--det-D", 1,
             "--seeds", 1, "--sigma", "0.1,0.2", "--no-plots", "-o", tmp_path / "sweep")
    assert r.exit_code == 0, r.output
    with pytest.raises(PtrmError, match="ran on the golden set"):
        evaluate.sigma_from_report(tmp_path / "sweep")


# -- memory ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("error", [
    RuntimeError("[enforce fail at alloc_cpu.cpp:127] err == 0. DefaultCPUAllocator: can't "
                 "allocate memory: you tried to allocate 800000000000 bytes."),
    torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 80.00 GiB"),
])
def test_a_k_too_large_for_memory_is_one_message(ckpt, dataset, tmp_path, monkeypatch, error):
    """--K 1000000000: the allocator's error was a traceback; now what did not fit and what to
    lower. Other runtime errors still propagate."""
    def run_eval(*args, **kwargs):
        raise error

    monkeypatch.setattr(evaluate, "run_eval", run_eval)
    args = ("eval", "--split", "val", "--data", dataset, "-c", ckpt, "--K", 1000, "--D", 1,
            "--seeds", 1, "--no-plots", "-o", tmp_path / "e")
    r = bad(*args, match="out of memory on cpu")  # chunks of several puzzles: smaller ones
    assert "(whole puzzles of K=1000 rollouts)" in r.output and "smaller --memory" in r.output
    r = bad(*args, "--memory", "1KB", match="out of memory on cpu")  # one puzzle a chunk
    assert "(one puzzle of K=1000 rollouts)" in r.output and "lower --K" in r.output

    monkeypatch.setattr(evaluate, "run_eval", lambda *a, **k: (_ for _ in ()).throw(
        RuntimeError("something else")))
    from typer.testing import CliRunner
    from ptrm_cli.app import app

    r = CliRunner().invoke(app, ["eval", "--split", "val", "--data", str(dataset), "-c",
                                 str(ckpt), "--K", "2", "--D", "1", "--no-plots", "-o",
                                 str(tmp_path / "e2")])
    assert isinstance(r.exception, RuntimeError) and "something else" in str(r.exception)


# -- scripts/report_tables.py ----------------------------------------------------------------------

def _report_tables():
    return load_script("scripts/report_tables.py")


def test_report_tables_names_the_sigma_of_each_column_of_a_sweep(report):
    """A sweep's tables repeated pass@K ... verified@K once per sigma with nothing telling the
    blocks apart; one sigma's table is unchanged (README's tables)."""
    whole, _ = report  # sigma 0 and 0.5
    rt = _report_tables()
    text = rt.table(whole, "rules")
    head = next(line for line in text.splitlines() if line.startswith("| type"))
    assert "best-Q@4 σ=0 " in head and "best-Q@4 σ=0.5 " in head
    # the intervals of every σ, each named (once only the first σ's, under its name)
    assert "best-Q (σ=0) " in text.splitlines()[-1] and "pass (σ=0.5) " in text.splitlines()[-1]
    assert " on y" not in text
    on_y = copy.deepcopy(whole)
    for p in on_y["ptrm"]:
        p["perturb"] = "y"
    assert "PTRM K=4 D=2 σ=0.5 on y" in rt.table(on_y, "rules").splitlines()[0]
    one = copy.deepcopy(whole)
    one["ptrm"] = one["ptrm"][:1]
    head = next(line for line in rt.table(one, "rules").splitlines() if line.startswith("| type"))
    assert "| pass@4 | best-Q@4 | mode@4 | verified@4 |" in head



def test_report_tables_joins_reports_of_the_same_puzzles(report):
    """--join: one table of a split at two depths, TRM of each once, PTRM columns named by D,
    an interval for every column; reports of other puzzles are refused."""
    whole, _ = report  # D=2, σ 0 and 0.5, 2 seeds
    rt = _report_tables()
    deeper = copy.deepcopy(whole)
    for p in deeper["ptrm"]:
        p["D"] = 6
    deeper["deterministic"] = [{**d, "D": 6} for d in deeper["deterministic"]]
    text = rt.joined([whole, deeper], "rules")
    rows = [line for line in text.splitlines() if line.startswith("|")]
    head = rows[0]
    assert head.count("TRM D=") == len({d["D"] for d in whole["deterministic"]} | {6})
    assert "best-Q@4 D=2 σ=0.5" in head and "verified@4 D=6 σ=0 " in head
    assert all(r.count("|") == head.count("|") for r in rows)  # every row fills every column
    agg = next(r for r in rows if r.startswith("| **aggregate**"))
    run = whole["ptrm"][1]["summary"]["aggregate"]["rules"]["best_q"]
    shown = f"{100 * run['mean']:.1f}" + ("" if round(100 * run["std"], 1) == 0 else
                                         f" ± {100 * run['std']:.1f}")
    assert agg.split(" | ")[2 + head.count("TRM D=") + 4 + 1] == shown
    assert rows[-1].startswith("| 95% Wilson (aggregate)") and " - " not in rows[-1]
    other = copy.deepcopy(whole)
    other["split"]["name"] = "golden"
    with pytest.raises(SystemExit, match="--join"):
        rt.joined([whole, other], "rules")

# -- ptrm bench ------------------------------------------------------------------------------------

def test_bench_with_a_failed_mode_exits_non_zero(tmp_path, monkeypatch):
    """A mode that raised (--K 1000000000: the allocator) was reported in the table but the
    command exited 0, as if it had measured; the other modes still run and the report is
    written. No mode at all (--modes '') ran nothing and exited 0."""
    from typer.testing import CliRunner

    from ptrm_cli import benchmark
    from ptrm_cli.app import app

    def fast_mode(b, mode):
        raise RuntimeError("DefaultCPUAllocator: can't allocate memory")

    monkeypatch.setattr(benchmark, "fast_mode", fast_mode)
    out = tmp_path / "bench.json"
    args = ["bench", "--model", "tiny", "--K", "2", "--D", "1", "--puzzles", "2", "--split",
            "random", "--device", "cpu", "--peak-size", "64"]
    r = CliRunner().invoke(app, [*args, "--modes", "eager,fast", "--out", str(out)])
    assert r.exit_code == 1, r.output
    assert "mode(s) fast failed" in r.output
    modes = {m["mode"]: m for m in json.loads(out.read_text())["modes"]}
    assert "error" in modes["fast"] and "ms_per_puzzle" in modes["eager"]
    assert benchmark.main([*args[1:], "--modes", "fast"]) == 1  # python -m ptrm_cli.benchmark
    r = CliRunner().invoke(app, [*args, "--modes", "eager"])
    assert r.exit_code == 0, r.output
    r = CliRunner().invoke(app, [*args, "--modes", ""])
    assert r.exit_code == 2 and "name at least one mode" in r.output


@pytest.mark.parametrize("lines, match", [
    # none at all (a dataset of tokens only: it trains): eval says what it needs them for
    ("", "val/puzzles.jsonl: no puzzle text on line 1, which row 0 of val/puzzle.npy refers to"),
    # fewer than the rows refer to: a damaged dataset, said when it loads
    ('{"type": "sudoku"}\n', "val/puzzle.npy: damaged dataset: puzzle lines 0..3, but "
                              "puzzles.jsonl has 1"),
    # as many, one without text
    ('{"type": "sudoku"}\n' * 4, "val/puzzles.jsonl: no puzzle text on line 1, which row 0 of "
                                 "val/puzzle.npy refers to"),
])
def test_a_dataset_without_its_puzzle_records_is_one_message(ckpt, dataset, tmp_path, lines,
                                                             match):
    """A dataset written without puzzles.jsonl lines (the test helper tiny-cpu.yaml points at
    wrote one) was an IndexError traceback; a line without text a KeyError."""
    import shutil

    copy = tmp_path / "ds"
    shutil.copytree(dataset, copy)
    (copy / "val" / "puzzles.jsonl").write_text(lines)
    bad("eval", "--split", "val", "--data", copy, "-c", ckpt, "--K", "2", "--D", "2",
        match=match)


def test_a_dataset_line_that_no_longer_reads_says_to_build_it_again(ckpt, dataset, tmp_path):
    """The fault is the dataset's, not the user's input: the hint was the codec page's."""
    import json
    import shutil

    copy = tmp_path / "ds"
    shutil.copytree(dataset, copy)
    path = copy / "val" / "puzzles.jsonl"
    recs = [json.loads(line) for line in path.read_text().splitlines()]
    recs[0]["text"] = "sudoku\n1 2\n3"  # a grid that is no sudoku
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))
    r = bad("eval", "--split", "val", "--data", copy, "-c", ckpt, "--K", "2", "--D", "2",
            match="val/puzzles.jsonl:1:")
    assert "build it again with `ptrm build-data`" in " ".join(r.output.split())


def test_merge_refuses_to_overwrite_one_of_its_reports(report, tmp_path):
    """`--merge A --merge B -o A` replaced A's single-seed report without a word."""
    whole, out = report
    other = _edited(tmp_path, "other", whole, lambda r: None)
    bad("eval", "--merge", out, "--merge", other, "-o", out, match="holds one of the reports")


# -- scripts/split_records.py ----------------------------------------------------------------------

def test_split_records_give_back_a_splits_puzzles_as_sources(tmp_path):
    """A build's val sudoku as records: the split's own puzzles, valid, and a later build that
    keeps that split (--val-from) without the file they came from accepts them instead."""
    import subprocess
    import sys

    src, ds, out = tmp_path / "s.jsonl", tmp_path / "ds", tmp_path / "val_sudoku.jsonl"
    assert ptrm("generate", "sudoku", "--n", 6, "--seed", 1, "--workers", 1, "--out", src,
                "-q").exit_code == 0
    r = ptrm("build-data", src, "--val-per-type", 3, "--out", ds, "--workers", 1, "--json")
    assert r.exit_code == 0, r.output
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "split_records.py"),
                           str(ds), "val", "sudoku", str(out)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    rows = [json.loads(line) for line in (ds / "val" / "puzzles.jsonl").open()]
    recs = [json.loads(line) for line in out.open()]
    assert len(recs) == 3 and [r["url"] for r in recs] == [r["text"] for r in rows]
    assert [r["answer"] for r in recs] == [r["answer"] for r in rows]
    r = ptrm("build-data", out, "--val-from", ds, "--dry-run", "--workers", 1, "--json")
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["puzzles"]["val"]["sudoku"] == 3


def test_halted_reports_show_the_rule_and_the_steps_and_sigma_from_notes_a_rule_change(
        ckpt, dataset, tmp_path):
    """--halt: report_tables names the rule and the mean steps; --sigma-from a sweep made
    under the other answer rule says so, and the report records the sweep's rule."""
    sweep = tmp_path / "sweep"
    r = ptrm("eval", "--split", "val", "--data", dataset, "-c", ckpt, "--K", 2, "--D", 2,
             "--sigma", "0.3,0.6", "--seeds", 1, "--det-D", 2, "--halt", 0.5, "--no-plots",
             "--json", "-o", sweep)
    assert r.exit_code == 0, r.output
    rep = json.loads(r.stdout)
    head = _report_tables().table(rep, "rules").splitlines()[0]
    steps = rep["deterministic"][0]["halt_steps"]
    assert "halted at sigmoid(Q) > 0.5" in head and f"TRM D=2 {steps:.1f}" in head, head
    plain = ptrm("eval", "--split", "val", "--data", dataset, "-c", ckpt, "--K", 2, "--D", 2,
                 "--seeds", 1, "--det-D", 2, "--sigma-from", sweep, "--no-plots", "--json",
                 "-o", tmp_path / "plain")
    assert plain.exit_code == 0, plain.output
    said = " ".join(plain.stderr.split())
    assert "that sweep took each rollout's answer at the first step with sigmoid(Q) > 0.5, " \
           "this evaluation at the last step" in said, said
    assert json.loads(plain.stdout)["settings"]["sigma_from"]["halt"] == 0.5
    same = ptrm("eval", "--split", "val", "--data", dataset, "-c", ckpt, "--K", 2, "--D", 2,
                "--seeds", 1, "--det-D", 2, "--sigma-from", sweep, "--halt", 0.5,
                "--no-plots", "-o", tmp_path / "same")
    assert same.exit_code == 0 and "other rule" not in same.output, same.output


def test_bench_names_its_checkpoint_and_dataset_by_absolute_paths(ckpt, dataset, tmp_path,
                                                                  monkeypatch):
    """A bench report's `model.desc` said `checkpoint checkpoints/best` and its
    `puzzles.source` `../data/tiny/val`, as typed: read later from elsewhere, neither said where
    they were. The link is kept as the link, as eval's reports keep it."""
    import os

    from ptrm_cli import bench_setup

    (tmp_path / "checkpoints").mkdir()
    (tmp_path / "checkpoints" / "best").symlink_to(ckpt)
    monkeypatch.chdir(tmp_path)
    here = os.getcwd()
    o = bench_setup.BenchOptions(checkpoint="checkpoints/best", puzzles=2, split="val",
                                 data=os.path.relpath(dataset))
    loaded, desc = bench_setup.load_model(o, "cpu")
    assert desc == f"checkpoint {os.path.join(here, 'checkpoints', 'best')}"
    # the split with its rules verifier, and read as arrays (labels only)
    for pz in (bench_setup.load_puzzles(o, loaded), bench_setup._dataset_arrays(o, loaded)):
        folder, split = pz.source.split(" (")[0].rsplit("/", 1)
        assert split == "val" and os.path.isabs(folder), pz.source
        assert Path(folder).resolve() == Path(dataset).resolve()
    # and the options the report records, --out and a split given as a file too
    rec = o.recorded()
    assert rec["checkpoint"] == os.path.join(here, "checkpoints", "best")
    assert Path(rec["data"]) == Path(dataset).resolve() and os.path.isabs(rec["data"])
    assert rec["split"] == "val"  # a name inside --data, even with a folder ./val here
    (tmp_path / "val").mkdir()
    assert o.recorded()["split"] == "val"
    (tmp_path / "p.jsonl").write_text("")
    rec = bench_setup.BenchOptions(split="p.jsonl", out="b.json").recorded()
    assert (rec["split"], rec["out"]) == (os.path.join(here, "p.jsonl"),
                                          os.path.join(here, "b.json"))
    assert bench_setup.BenchOptions(split="golden").recorded()["split"] == "golden"
