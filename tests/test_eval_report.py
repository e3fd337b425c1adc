"""What a `ptrm eval` report claims about itself: which weights made it (--merge and --sigma-from
compare them), what its time cost (only an H100's is priced), its Wilson intervals, and what an
interrupted evaluation kept. Tiny random models, as test_eval.py."""

from __future__ import annotations

import json
import math

import pytest
from typer.testing import CliRunner

from ptrm_cli import evaluate
from ptrm_cli.paths import report_path
from ptrm_cli.app import app

from fixtures_models import save_tiny_checkpoint
from test_eval import bad, ckpt, dataset, ptrm, sudoku  # noqa: F401 (fixtures)

TINY = ("--K", 2, "--D", 1, "--det-D", 1, "--seeds", 1, "--sigma", "0.5", "--no-plots")


@pytest.fixture(scope="module")
def other_ckpt(tmp_path_factory):
    """The same config and size as `ckpt`, other weights (another init seed)."""
    from ptrm_codecs.families import PPBENCH

    return save_tiny_checkpoint(tmp_path_factory.mktemp("model") / "other", PPBENCH.vocab,
                                seed=1)


def run_eval(dataset, checkpoint, out, *args):
    r = ptrm("eval", "--split", "val", "--data", dataset, "-c", checkpoint, *TINY, *args,
             "--out", out)
    assert r.exit_code == 0, r.output
    return json.loads((out / "report.json").read_text())


# -- which weights -------------------------------------------------------------------------------

def test_merge_refuses_reports_of_other_weights(ckpt, other_ckpt, dataset, tmp_path):
    a = run_eval(dataset, ckpt, tmp_path / "a", "--seed", 0)
    run_eval(dataset, other_ckpt, tmp_path / "b", "--seed", 1)
    r = bad("eval", "--merge", tmp_path / "a", "--merge", tmp_path / "b", "-o", tmp_path / "m",
            match="different weights")
    flat = "".join(r.output.split())
    assert str(tmp_path / "a" / "report.json") in flat and \
        str(tmp_path / "b" / "report.json") in flat
    same = run_eval(dataset, ckpt, tmp_path / "c", "--seed", 2)
    assert a["model"]["weights_sha256"] == same["model"]["weights_sha256"]
    # the same weights at another path (a copy, as on another machine) merge, silently
    import shutil

    moved = shutil.copytree(ckpt, tmp_path / "elsewhere")
    run_eval(dataset, moved, tmp_path / "d", "--seed", 3)
    r = ptrm("eval", "--merge", tmp_path / "a", "--merge", tmp_path / "d", "-o", tmp_path / "m")
    assert r.exit_code == 0 and "warning" not in r.output, r.output
    merged = json.loads((tmp_path / "m" / "report.json").read_text())
    assert merged["model"]["weights_sha256"] == a["model"]["weights_sha256"]
    assert "warnings" not in merged


def test_merge_of_a_report_without_a_weights_fingerprint_says_so(ckpt, dataset, tmp_path):
    run_eval(dataset, ckpt, tmp_path / "a", "--seed", 0)
    old = run_eval(dataset, ckpt, tmp_path / "b", "--seed", 1)
    old["model"].pop("weights_sha256", None)  # as written before reports recorded it
    (tmp_path / "b" / "report.json").write_text(json.dumps(old))
    r = ptrm("eval", "--merge", tmp_path / "a", "--merge", tmp_path / "b", "-o", tmp_path / "m")
    assert r.exit_code == 0, r.output
    assert "weights could not be compared" in " ".join(r.output.split())
    merged = json.loads((tmp_path / "m" / "report.json").read_text())
    assert merged["model"]["weights_sha256"] is None
    assert "could not be compared" in merged["warnings"][0]
    assert str(tmp_path / "b" / "report.json") in merged["warnings"][0]


def test_sigma_from_a_sweep_of_other_weights_warns(ckpt, other_ckpt, dataset, tmp_path):
    run_eval(dataset, ckpt, tmp_path / "sweep")
    sweep = tmp_path / "sweep" / "report.json"
    args = ("eval", "--split", "val", "--data", dataset, "--K", 2, "--D", 1, "--det-D", 1,
            "--seeds", 1, "--no-plots", "--sigma-from", sweep)
    r = ptrm(*args, "-c", other_ckpt, "-o", tmp_path / "o1")
    assert r.exit_code == 0, r.output  # a warning, not an error
    assert "warning:" in r.output and "other weights" in r.output, r.output
    r = ptrm(*args, "-c", ckpt, "-o", tmp_path / "o2")
    assert r.exit_code == 0 and "warning" not in r.output, r.output
    # a report from before the weights fingerprint: only a different model config can tell
    old = json.loads(sweep.read_text())
    old["model"].pop("weights_sha256", None)
    (tmp_path / "old.json").write_text(json.dumps(old))
    r = ptrm(*args[:-1], tmp_path / "old.json", "-c", other_ckpt, "-o", tmp_path / "o3")
    assert r.exit_code == 0 and "warning" not in r.output, r.output
    old["model"]["config"]["hidden_size"] *= 2
    (tmp_path / "old.json").write_text(json.dumps(old))
    r = ptrm(*args[:-1], tmp_path / "old.json", "-c", ckpt, "-o", tmp_path / "o4")
    assert r.exit_code == 0 and "another kind of model" in " ".join(r.output.split()), r.output


# -- where things are ----------------------------------------------------------------------------

def test_report_path_is_absolute_keeps_a_named_link_and_reads_dotdot_as_the_disk_does(
        tmp_path, monkeypatch):
    import os

    from ptrm_cli.models import DEFAULT_DIR

    step = tmp_path / "run" / "step_7"
    step.mkdir(parents=True)
    (tmp_path / "run" / "checkpoints").mkdir()
    (tmp_path / "run" / "checkpoints" / "best").symlink_to(step)
    monkeypatch.chdir(tmp_path / "run")
    here = os.getcwd()
    # the link the user named, not the step it points at this time
    assert report_path("checkpoints/best") == os.path.join(here, "checkpoints", "best")
    assert report_path("./checkpoints//best/") == \
        os.path.join(here, "checkpoints", "best")
    # `..` after a link is the link target's parent, as open() reads it (abspath: checkpoints)
    assert report_path("checkpoints/best/../x") == \
        os.path.join(os.path.realpath(tmp_path / "run"), "x")
    assert report_path("../run/step_7") == os.path.join(
        os.path.realpath(tmp_path), "run", "step_7")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert report_path("~/run") == str(tmp_path / "run")
    # an absolute path is kept as it is: the bundled model reads as the package's folder
    assert report_path(DEFAULT_DIR) == str(DEFAULT_DIR)
    assert report_path(str(DEFAULT_DIR)).endswith(
        os.path.join("ptrm_cli", "models", "default"))


def test_report_paths_are_absolute_wherever_the_command_ran(ckpt, dataset, tmp_path,
                                                            monkeypatch):
    """`-c checkpoints/best`, `--data ../data/tiny` and `-o out` were recorded as typed, so the
    report, read from anywhere but the folder its command ran in, could not say where its
    checkpoint, its puzzles and its files were."""
    import os
    from pathlib import Path

    (tmp_path / "run" / "checkpoints").mkdir(parents=True)
    (tmp_path / "run" / "checkpoints" / "best").symlink_to(ckpt)
    monkeypatch.chdir(tmp_path / "run")
    here = os.getcwd()
    data = os.path.relpath(dataset)  # ../../data0/tiny, say
    r = ptrm("eval", "--split", "val", "--data", data, "-c", "checkpoints/best", *TINY,
             "-o", "out")
    assert r.exit_code == 0, r.output
    rep = json.loads((tmp_path / "run" / "out" / "report.json").read_text())
    assert rep["checkpoint"] == os.path.join(here, "checkpoints", "best")  # the link, kept
    assert rep["files"] == {"report": os.path.join(here, "out", "report.json")}
    source = rep["split"]["source"]
    assert os.path.isabs(source) and source.endswith("/val")
    monkeypatch.chdir(tmp_path)  # read from elsewhere, they still name the same things
    assert Path(source).parent.resolve() == Path(dataset).resolve()
    assert Path(rep["checkpoint"]).resolve() == Path(ckpt).resolve()
    assert Path(rep["files"]["report"]).is_file()


def test_a_merge_of_a_report_from_before_absolute_paths_takes_the_newer_ones(
        ckpt, dataset, tmp_path, monkeypatch):
    """Reports written before 2026-11-28 hold their paths as typed: they merge with newer ones
    as before (a merge compares weights, never paths), and the merged report says where the
    checkpoint and puzzles are from the report that knows it. Its sources are named by
    absolute path, though given as `--merge s0`."""
    import os

    new = run_eval(dataset, ckpt, tmp_path / "s1", "--seed", 1)
    old = run_eval(dataset, ckpt, tmp_path / "s0", "--seed", 0)
    old.update(checkpoint="runs/ppb9/checkpoints/best",
               files={"report": "runs/e_s0/report.json"})
    old["split"]["source"] = "data/tiny/val"
    (tmp_path / "s0" / "report.json").write_text(json.dumps(old))
    monkeypatch.chdir(tmp_path)
    r = ptrm("eval", "--merge", "s0", "--merge", "s1/report.json", "-o", "m", "--no-plots")
    assert r.exit_code == 0 and "warning" not in r.output, r.output
    merged = json.loads((tmp_path / "m" / "report.json").read_text())
    assert merged["checkpoint"] == new["checkpoint"] and os.path.isabs(merged["checkpoint"])
    assert merged["split"]["source"] == new["split"]["source"]
    here = os.getcwd()
    assert [(m["report"], m["checkpoint"]) for m in merged["merged_from"]] == [
        (os.path.join(here, "s0", "report.json"), "runs/ppb9/checkpoints/best"),
        (os.path.join(here, "s1", "report.json"), new["checkpoint"])]
    assert merged["files"] == {"report": os.path.join(here, "m", "report.json")}
    # two old reports: the first one's, as before (nothing tells where they were relative to)
    old1 = {**new, "checkpoint": "elsewhere/best", "split": {**new["split"], "source": "d/val"}}
    (tmp_path / "s1" / "report.json").write_text(json.dumps(old1))
    r = ptrm("eval", "--merge", "s0", "--merge", "s1", "-o", "m2", "--no-plots")
    assert r.exit_code == 0, r.output
    merged = json.loads((tmp_path / "m2" / "report.json").read_text())
    assert (merged["checkpoint"], merged["split"]["source"]) == (
        "runs/ppb9/checkpoints/best", "data/tiny/val")


# -- cost ----------------------------------------------------------------------------------------

def test_cost_only_for_time_measured_on_an_h100(ckpt, dataset, tmp_path, monkeypatch):
    r = ptrm("eval", "--split", "val", "--data", dataset, "-c", ckpt, *TINY, "-o", tmp_path)
    assert r.exit_code == 0, r.output
    rep = json.loads((tmp_path / "report.json").read_text())
    assert rep["device"] == "cpu" and rep["usd_per_h100_hour"] is None
    for entry in rep["deterministic"] + rep["ptrm"] + rep["ptrm"][0]["runs"]:
        assert entry["cost_per_puzzle_usd"] is None
    compute = r.stdout[r.stdout.index("compute per puzzle"):]
    assert "$" not in compute and "cost: H100 only" in compute
    row = next(line for line in compute.splitlines() if "PTRM K=2" in line)
    assert row.split()[6] == "-", row  # PTRM K=2 D=1 σ=0.5 | time, unit | cost

    names = {"cuda:0": "NVIDIA H100 80GB HBM3", "cuda:1": "NVIDIA A100-SXM4-80GB"}
    monkeypatch.setattr("torch.cuda.get_device_name", lambda d: names[str(d)])
    assert evaluate.usd_per_hour("cuda:0") == evaluate.USD_PER_H100_HOUR
    assert evaluate.usd_per_hour("cuda:1") is None
    assert evaluate.usd_per_hour("cpu") is None
    # an H100's runs: each run priced, the sigma's cost their mean, the table shows it
    t = evaluate._timing(3.6, 0.0, 2, evaluate.usd_per_hour("cuda:0"))
    assert t["cost_per_puzzle_usd"] == pytest.approx(1.8 * 2.5 / 3600)
    # --gpus 4: the wall time is the four cards', and all four are paid for (it was one card)
    t4 = evaluate._timing(3.6, 0.0, 2, evaluate.usd_per_hour("cuda:0"), cards=4)
    assert t4["time_per_puzzle_s"] == t["time_per_puzzle_s"]
    assert t4["cost_per_puzzle_usd"] == pytest.approx(4 * 1.8 * 2.5 / 3600)
    runs = [{**run, "cost_per_puzzle_usd": c}
            for run, c in zip(rep["ptrm"][0]["runs"] * 2, (1e-3, 3e-3))]
    entry = evaluate.ptrm_entry({"sigma": 0.5}, runs, rep["groups"], {})
    assert entry["cost_per_puzzle_usd"] == pytest.approx(2e-3)
    runs[1]["cost_per_puzzle_usd"] = None  # one run not on an H100: no cost for the mix
    assert evaluate.ptrm_entry({"sigma": 0.5}, runs, rep["groups"], {})[
        "cost_per_puzzle_usd"] is None


# -- Wilson interval of a mean over seeds ---------------------------------------------------------

def wilson_closed_form(p: float, n: int, z: float = 1.959964) -> tuple[float, float]:
    c = (2 * n * p + z * z) / (2 * (n + z * z))
    h = z * math.sqrt(z * z + 4 * n * p * (1 - p)) / (2 * (n + z * z))
    return max(0.0, c - h), min(1.0, c + h)


def test_wilson_interval_uses_the_observed_mean_not_a_rounded_count():
    # seeds got 1/3, 0 and 1/3 of 3 puzzles: a mean of 2/9 = 22.2%, which no count of 3 gives
    s = evaluate.summarize([1 / 3, 0.0, 1 / 3], 3)
    assert s["mean"] == pytest.approx(2 / 9)
    assert s["wilson"] == pytest.approx(wilson_closed_form(2 / 9, 3), abs=1e-4)
    assert s["wilson"] != pytest.approx(wilson_closed_form(1 / 3, 3), abs=1e-3)
    assert evaluate.wilson_of(0.0, 5)[0] == 0.0 and evaluate.wilson_of(1.0, 5)[1] == 1.0


# -- Ctrl-C ---------------------------------------------------------------------------------------

def test_interrupted_eval_says_what_is_saved_and_how_to_continue(ckpt, dataset, tmp_path,
                                                                 monkeypatch):
    from ptrm_cli.engine import distributed

    real, calls = distributed.sample, []

    def interrupted(*args, **kw):  # timed runs report progress; Ctrl-C during the n-th
        if kw.get("on_chunk") is not None:
            calls.append(1)
            if len(calls) == stop_at:
                raise KeyboardInterrupt
        return real(*args, **kw)

    monkeypatch.setattr(distributed, "sample", interrupted)
    out = tmp_path / "ev"
    args = ["eval", "--split", "val", "--data", dataset, "-c", ckpt, *TINY, "--seeds", 2,
            "--out", out]
    stop_at = 1  # nothing finished: nothing to say but "interrupted"
    r = CliRunner().invoke(app, [str(a) for a in args])
    assert r.exit_code == 130 and "interrupted" in r.output, r.output
    assert "partial.json" not in r.output and "--resume" not in r.output

    stop_at, calls[:] = 3, []  # det D=1 and sigma 0.5 seed 0 finished
    r = CliRunner().invoke(app, [str(a) for a in args])
    assert r.exit_code == 130 and "interrupted" in r.output, r.output
    text = " ".join(r.output.split())
    assert f"2 finished run(s) are saved in {out / 'partial.json'}" in text
    assert "the same command with --resume continues" in text
    assert (out / "partial.json").exists()

    stop_at, calls[:] = 1, []  # already resuming: the same command continues
    r = CliRunner().invoke(app, [str(a) for a in args + ["--resume"]])
    assert r.exit_code == 130, r.output
    assert "the same command continues" in " ".join(r.output.split()), r.output


def test_plot_titles_name_a_noise_target_other_than_z(tmp_path, monkeypatch):
    """A y sweep's σ axis is y's σ: the titles say so, as the tables do (they named none)."""
    from ptrm_cli import plots

    report = {"settings": {"D": 16, "K": 100, "perturb": "y"},
              "split": {"name": "val", "n": 550}}
    assert plots._on(report) == " on y"
    report["settings"]["perturb"] = "z"
    assert plots._on(report) == ""
    del report["settings"]["perturb"]  # reports from before --perturb: z
    assert plots._on(report) == ""
    # in the figures, beside the σ it qualifies: a y sweep of the bundled model
    from pathlib import Path

    rep = json.loads((Path(__file__).parents[1] / "docs" / "runs" /
                      "ppb9-2026-11-27-v_new_y.json").read_text())
    titles, title = [], plots._title
    monkeypatch.setattr(plots, "_title", lambda r, what: titles.append(what) or title(r, what))
    plots.sigma_sweep(rep, tmp_path / "s.png")
    plots.width_scaling(rep, tmp_path / "w.png")
    assert titles == ["σ sweep on y, K=100", "width scaling, σ=0.3 on y"]


def test_plot_titles_say_the_answers_were_halted(tmp_path):
    """--halt takes each answer at its first confident step: the tables' titles say so, the
    plots said nothing, so a halted width curve read as one at the last step."""
    from ptrm_cli import plots

    report = {"settings": {"D": 16, "K": 100, "halt": 0.5}, "split": {"name": "val", "n": 5}}
    assert plots._title(report, "σ sweep").endswith("D=16, halted at sigmoid(Q) > 0.5")
    report["settings"]["halt"] = None
    assert plots._title(report, "σ sweep").endswith("D=16")
    del report["settings"]["halt"]  # reports from before --halt
    assert plots._title(report, "σ sweep").endswith("D=16")


def _texts_outside(fig) -> list[str]:
    """The titles and labels of a drawn figure that reach past its edges (cut off in the PNG)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.text import Text

    canvas = FigureCanvasAgg(fig)  # as savefig draws a PNG: constrained layout included
    canvas.draw()
    renderer = canvas.get_renderer()
    box = fig.bbox
    # every text artist (titles, labels, legends, notes) by public API; tick labels are
    # matplotlib's to place, and its tick pool holds some that are never drawn
    ticks = {id(t) for ax in fig.axes for axis in (ax.xaxis, ax.yaxis)
             for tick in axis.get_major_ticks() + axis.get_minor_ticks()
             for t in (tick.label1, tick.label2)}
    texts = [t for t in fig.findobj(Text) if id(t) not in ticks]
    out = []
    for text in texts:
        if text is None or not text.get_text() or not text.get_visible():
            continue
        ext = text.get_window_extent(renderer)
        if ext.x0 < box.x0 - 1 or ext.x1 > box.x1 + 1 or ext.y1 > box.y1 + 1:
            out.append(text.get_text())
    return out


def test_plot_titles_fit_inside_their_figures(tmp_path, monkeypatch):
    """q_steps.png's title ran past the figure's left edge: 'Q over steps (σ=' was cut off, so
    the PNG did not say what it shows. Every title and label must lie inside the image, even
    for a y run under --halt (the longest titles)."""
    from pathlib import Path

    from ptrm_cli import plots

    rep = json.loads((Path(__file__).parents[1] / "docs" / "runs" /
                      "ppb9-2026-11-27-v_new_y.json").read_text())
    rep["settings"]["halt"] = 0.5
    figures, figure = [], plots._figure
    monkeypatch.setattr(plots, "_figure", lambda *a, **k: figures.append(figure(*a, **k)) or
                        figures[-1])
    plots.write_all(rep, tmp_path)
    assert len(figures) == 3
    for fig, axes in figures:
        assert _texts_outside(fig) == []
