"""`ptrm bench` end to end on a CPU with a tiny model: every mode runs, the JSON report holds the
numbers the table prints, and the curve's replay agrees with a real adaptive run."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from ptrm_cli import bench_report, benchmark
from ptrm_cli.app import app

from fixtures_models import golden_examples, installed_codecs


def test_bench_runs_every_mode_and_writes_json(tmp_path):
    out = tmp_path / "bench.json"
    r = CliRunner().invoke(app, ["bench", "--model", "tiny", "--K", "3", "--D", "2",
                                 "--puzzles", "4", "--split", "random", "--device", "cpu",
                                 "--modes", "eager,fast,adaptive", "--check-every", "1",
                                 "--out", str(out)])
    assert r.exit_code == 0, r.output
    rep = json.loads(out.read_text())
    assert rep["format"] == benchmark.FORMAT and rep["puzzles"]["n"] == 4
    assert rep["peak"]["tflops"] > 0
    modes = {m["mode"]: m for m in rep["modes"]}
    assert set(modes) == {"eager", "fast", "adaptive"}
    for m in modes.values():
        assert "error" not in m, m
        for key in ("ms_per_puzzle", "tflops", "share_of_peak", "flops_per_puzzle",
                    "warmup_compile_s"):
            assert m[key] >= 0, key
        # the share is of every card the run used (one process here)
        assert m["gpus"] == 1
        assert m["share_of_peak"] == pytest.approx(m["tflops"] / rep["peak"]["tflops"])
    # --json: the same report on stdout, nothing else there
    rj = CliRunner().invoke(app, ["bench", "--model", "tiny", "--K", "3", "--D", "2",
                                  "--puzzles", "4", "--split", "random", "--device", "cpu",
                                  "--modes", "eager", "--json"])
    assert rj.exit_code == 0, rj.output
    assert json.loads(rj.stdout)["format"] == benchmark.FORMAT
    assert modes["eager"]["flops_per_puzzle"] == rep["fixed_flops_per_puzzle"]
    assert modes["fast"]["flops_per_puzzle"] == rep["fixed_flops_per_puzzle"]
    assert modes["adaptive"]["compute_vs_fixed"] <= 1.0
    # on a CPU the fast engine is the eager math: the same rollouts, bit for bit
    agree = rep["agreement"]["fast vs eager"]
    assert agree["rollouts_identical"] == 1.0 and agree["max_abs_dq"] == 0
    assert "ms/puzzle" in r.stdout and "matmul peak" in r.stdout and "fast" in r.stdout
    # the tiny model's size, which "(0.0M)" hid
    assert f"({rep['model']['parameters']:,} parameters)" in r.stdout
    rep7m = {**rep, "model": {**rep["model"], "parameters": 7_117_826}}
    assert "(7.1M)" in bench_report.table(rep7m)
    assert "faster than the measured peak" not in bench_report.table(rep)
    # the share of puzzles adaptive stopped was in the JSON only; a stop at the check on step D
    # counts too, so the line said "stopped before D=2" of puzzles that ran every step
    stopped = modes["adaptive"]["stopped_frac"]
    assert (f"adaptive: {100 * stopped:.0f}% of puzzles ended on a verified or confident "
            "rollout (checked every 1 step); the rest ran all D=2 steps without one") in r.stdout
    assert "stopped before" not in r.stdout
    # a peak measured on too small a product: a mode above 100% of it, said so, columns apart
    for m in rep["modes"]:
        m["share_of_peak"] = 27.39
    text = bench_report.table(rep)
    assert "faster than the measured peak" in text and " 2739.0%" in text


def test_bench_curve_on_golden_puzzles(tmp_path):
    if "sudoku" not in installed_codecs() or not golden_examples(["sudoku"]):
        pytest.skip("needs the golden set and the built-in codecs")
    out = tmp_path / "curve.json"
    report = benchmark.run_bench(benchmark.BenchOptions(
        model="tiny", K=3, D=2, puzzles=3, split="golden", modes=["curve"], device="cpu",
        out=str(out)))
    (curve,) = report["modes"]
    assert "error" not in curve, curve
    cur = curve["curve"]
    assert cur["K"] == 3 and cur["D"] == 2 and cur["points"] and cur["pareto"]
    assert set(cur["summary"]) == {"best_q", "verified"}
    real = curve["real_run_of_best_policy"]
    if real:  # the cheapest matching policy is adaptive: its real run must match the replay
        assert real["same_choices_as_replay"] == 1.0
        assert real["flops_per_puzzle"] == pytest.approx(real["replay_flops_per_puzzle"])
    assert json.loads(out.read_text())["modes"][0]["mode"] == "curve"
    assert "curve (verified)" in benchmark.table(report)


def test_bench_without_typer_and_bad_modes(capsys):
    assert benchmark.main(["--model", "tiny", "--K", "2", "--D", "1", "--puzzles", "2",
                           "--split", "random", "--device", "cpu", "--modes", "fast"]) == 0
    assert "ms/puzzle" in capsys.readouterr().out
    r = CliRunner().invoke(app, ["bench", "--model", "tiny", "--split", "random",
                                 "--device", "cpu", "--modes", "warp-speed"])
    assert r.exit_code == 2 and "unknown mode" in r.output and "profile, scaling" in r.output


BENCH = ["bench", "--model", "tiny", "--K", "2", "--D", "1", "--puzzles", "2", "--device",
         "cpu", "--modes", "eager"]


@pytest.mark.parametrize("extra, message", [
    (["--device", "foo"], "--device 'foo': expected auto, cpu, cuda, cuda:N or mps"),
    (["--compile-mode", "bogus"], "--compile-mode 'bogus': expected one of"),
    (["--data", "no-such-folder"], "--data no-such-folder: no such dataset folder"),
    (["--out", "."], "expected a file path for the JSON report"),
    (["--out", "file/sub.json"], "cannot write there"),
    (["--sigma", "inf"], "--sigma inf: expected a finite number >= 0"),
    (["--q-threshold", "nan"], "--q-threshold nan: expected a number >= 0"),
    (["--wave", "3"], "--wave 3: a wave holds at most --K (2) rollouts"),
    (["--out", "notes.txt"], "that file exists and is not a `ptrm bench` report"),
])
def test_bench_refuses_bad_options_before_any_work(tmp_path, monkeypatch, extra, message):
    """Each of these was a traceback (device, --out under a file), a traceback after the whole
    run (a folder as --out, --compile-mode), a silent run on random tokens (--data) or, for a
    file that was not a bench report, its silent replacement."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "file").write_text("")
    (tmp_path / "notes.txt").write_text("hello world\n")
    monkeypatch.setattr(benchmark, "matmul_peak", lambda *a: pytest.fail("started the work"))
    r = CliRunner().invoke(app, [*BENCH, *extra])
    assert r.exit_code == 2 and message in r.output, r.output
    assert "Traceback" not in r.output


def test_bench_on_a_dataset_split_it_lacks_or_that_is_empty(tmp_path):
    """`--split test --data DS` without a test split was a KeyError traceback, and an empty
    split a ZeroDivisionError."""
    import numpy as np

    from ptrm_cli.engine.data import Split, write_dataset
    from ptrm_codecs.families import PPBENCH

    def split(n):
        tokens = np.ones((n, 100), np.uint16)
        return Split(inputs=tokens, labels=tokens, type=np.zeros(n), puzzle=np.arange(n),
                     transform=np.zeros(n), puzzle_id=np.zeros(n))

    ds = write_dataset(tmp_path / "ds", vocab=PPBENCH.vocab, seq_len=100, types=["sudoku"],
                       splits={"train": split(2), "val": split(0)})
    for name, message in (("test", "has no split 'test' (it has train, val)"),
                          ("val", "no puzzles to run")):
        r = CliRunner().invoke(app, [*BENCH, "--split", name, "--data", str(ds)])
        assert r.exit_code == 2 and message in r.output, r.output
    r = CliRunner().invoke(app, [*BENCH, "--data", str(ds)])  # no --split: it read golden
    assert r.exit_code == 2 and "--split auto does not read one" in r.output, r.output


def test_an_interrupted_bench_keeps_the_modes_it_finished(tmp_path, monkeypatch):
    """Ctrl-C during the second mode: the first is printed and written to --out, marked
    interrupted, and the command exits 130 (it kept nothing)."""
    def stop(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(benchmark, "fast_mode", stop)
    out = tmp_path / "b.json"
    r = CliRunner().invoke(app, [*BENCH[:-1], "eager,fast", "--split", "random", "--out",
                                 str(out)])
    assert r.exit_code == 130, r.output
    rep = json.loads(out.read_text())
    assert rep["interrupted"] is True and [m["mode"] for m in rep["modes"]] == ["eager"]
    assert "ms/puzzle" in r.stdout and "interrupted" in r.output


def test_a_peak_measurement_that_does_not_fit_is_one_error(monkeypatch):
    def too_big(device, n):
        raise RuntimeError("DefaultCPUAllocator: can't allocate memory: you tried to allocate "
                           "7200000000 bytes")

    monkeypatch.setattr(benchmark, "matmul_peak", too_big)
    r = CliRunner().invoke(app, [*BENCH, "--split", "random", "--peak-size", "60000"])
    assert r.exit_code == 2 and "--peak-size 60000: the peak measurement's matrices" in r.output
    assert "Traceback" not in r.output



def test_scaling_alone_on_one_process_prints_its_row_and_says_why_it_is_one():
    """`--modes scaling` without a launch on several GPUs printed nothing at all: the table
    was skipped for want of other modes."""
    r = CliRunner().invoke(app, [*BENCH[:-1], "scaling", "--split", "random"])
    assert r.exit_code == 0, r.output
    # on the CPU (`--gpus N --device cpu` launches N CPU processes), not "GPU(s)"
    assert "scaling 1 CPU process(es):" in r.stdout and "one process, one device" in r.stdout
    assert "identical to 1 CPU process(es)" in r.stdout and "GPU" not in r.stdout
    assert "GPU" not in r.stderr
    assert "ms/puzzle" not in r.stdout.split("scaling")[0]   # no header over an empty table


def test_a_dataset_of_another_family_is_refused_not_run_as_labels_only(tmp_path):
    """The labels-only fallback (data whose type has no verifier for this model) skipped the
    vocabulary and length checks: a 4x4-sudoku dataset under the 294-token model ran, and every
    mode failed on "size of tensor a (100) must match ... (16)" (exit 1)."""
    import numpy as np

    from ptrm_cli.engine.data import Split, write_dataset
    from ptrm_cli.vocab import Vocab

    tokens = np.ones((3, 16), np.uint16)
    ds = write_dataset(tmp_path / "ds4", vocab=Vocab("sudoku4", ("pad", "a", "b")), seq_len=16,
                       types=["sudoku"], splits={"val": Split(
                           inputs=tokens, labels=tokens, type=np.zeros(3), puzzle=np.arange(3),
                           transform=np.zeros(3), puzzle_id=np.zeros(3))})
    r = CliRunner().invoke(app, [*BENCH, "--split", "val", "--data", str(ds)])
    assert r.exit_code == 2, r.output
    assert "uses the 'ppbench' vocabulary but dataset" in r.output and "'sudoku4'" in r.output
    assert "Traceback" not in r.output


@pytest.mark.parametrize("extra, message", [
    # a ValueError from torch's generator, said without the option
    (["--seed", str(2**64)], f"--seed {2**64}: must be below 2**63"),
    # a failed mode (exit 1) after the others had run
    (["--modes", "eager,curve", "--split", "random"], "--modes curve needs labelled puzzles"),
    # a list's repr, no option named, no hint of the one meant
    (["--modes", "fats"], "--modes: unknown mode(s) 'fats' (did you mean fast?)"),
])
def test_bench_option_mistakes_name_the_option_before_any_work(monkeypatch, extra, message):
    monkeypatch.setattr(benchmark, "matmul_peak", lambda *a: pytest.fail("started the work"))
    r = CliRunner().invoke(app, [*BENCH, *extra])
    assert r.exit_code == 2 and message in r.output, r.output
    assert "Traceback" not in r.output


def test_puzzles_that_do_not_fit_in_memory_are_one_error(monkeypatch):
    """--puzzles 1000000000 was an allocator traceback (8 GB of token ids before any mode)."""
    def too_many(o, loaded):
        raise RuntimeError("DefaultCPUAllocator: can't allocate memory: you tried to allocate "
                           "800000000000 bytes")

    monkeypatch.setattr(benchmark, "load_puzzles", too_many)
    r = CliRunner().invoke(app, [*BENCH, "--split", "random", "--puzzles", "1000000000"])
    assert r.exit_code == 2, r.output
    assert "--puzzles 1000000000: that many puzzles do not fit in memory here" in r.output
    assert "Traceback" not in r.output


def test_bench_uses_the_noise_solve_would_use(tmp_path):
    """The acc column is the model's own: σ and its target from the checkpoint (they were σ 0.2
    on z whatever it recorded, so a model shipped with σ 0.5 on y was benchmarked at a noise
    nobody solves with); --sigma / --perturb as in solve, a σ never moved to another target."""
    from ptrm_codecs.families import PPBENCH
    from ptrm_cli.engine.checkpoint import save_checkpoint
    from fixtures_models import tiny_model

    on_y = save_checkpoint(tmp_path / "y", tiny_model(len(PPBENCH.vocab)), PPBENCH.vocab,
                           {"sigma": 0.5, "perturb": "y"})
    args = ["bench", "-c", str(on_y), "--K", "2", "--D", "1", "--puzzles", "2", "--split",
            "random", "--device", "cpu", "--modes", "eager,fast", "--json"]

    def options(*extra):
        r = CliRunner().invoke(app, [*args, *extra])
        assert r.exit_code == 0, r.output
        rep = json.loads(r.stdout)
        # a different noise makes different rollouts: the fast engine ran that noise too
        assert rep["agreement"]["fast vs eager"]["rollouts_identical"] == 1.0
        return rep["options"]["sigma"], rep["options"]["perturb"], bench_report.table(rep)

    sigma, perturb, text = options()
    assert (sigma, perturb) == (0.5, "y") and "sigma=0.5 on y" in text
    assert options("--sigma", "0.3")[:2] == (0.3, "y")
    assert options("--perturb", "z", "--sigma", "1")[:2] == (1.0, "z")
    r = CliRunner().invoke(app, [*args, "--perturb", "z"])
    assert r.exit_code == 2 and "chosen for noise on y" in r.output, r.output
    r = CliRunner().invoke(app, [*args, "--perturb", "w"])
    assert r.exit_code == 2 and "expected z, y, both or init" in r.output
    # a random model records nothing: 0.2 on z, the table says no target
    rep = benchmark.run_bench(benchmark.BenchOptions(model="tiny", K=2, D=1, puzzles=2,
                                                     split="random", modes=["fast"],
                                                     device="cpu"))
    assert (rep["options"]["sigma"], rep["options"]["perturb"]) == (0.2, "z")
    assert " sigma=0.2 · exact" in benchmark.table(rep).splitlines()[0]  # no "on z"


def test_bench_passes_the_noise_down_to_both_loops(monkeypatch):
    """The fast engine and the eager loop both get the target, not only the report."""
    from ptrm_cli.engine import distributed

    seen = []
    run, sample = distributed.run, distributed.sample
    monkeypatch.setattr(distributed, "run", lambda *a, **kw: seen.append(
        ("fast", kw["sigma"], kw["perturb"])) or run(*a, **kw))
    monkeypatch.setattr(distributed, "sample", lambda model, inputs, cfg, **kw: seen.append(
        ("eager", cfg.sigma, cfg.perturb)) or sample(model, inputs, cfg, **kw))
    benchmark.run_bench(benchmark.BenchOptions(model="tiny", K=2, D=1, puzzles=2,
                                               split="random", modes=["eager", "fast"],
                                               device="cpu", sigma=0.7, perturb="both"))
    assert {"fast", "eager"} == {m for m, _, _ in seen}
    assert {(s, t) for _, s, t in seen} == {(0.7, "both")}


def test_exact_sums_the_norm_in_a_fixed_order_in_both_loops(monkeypatch):
    """`--exact`: both the eager loop and the fast engine run the model with its RMSNorm summed
    pairwise (the engine's copy too), and the report and its header say so."""
    from ptrm_cli.engine import distributed

    seen = []
    run, sample = distributed.run, distributed.sample

    def pairwise(model):
        return tuple({b.pairwise_norm for b in model.L_level.layers})

    monkeypatch.setattr(distributed, "run", lambda engine, *a, **kw: seen.append(
        ("fast", pairwise(engine.model))) or run(engine, *a, **kw))
    monkeypatch.setattr(distributed, "sample", lambda model, *a, **kw: seen.append(
        ("eager", pairwise(model))) or sample(model, *a, **kw))
    for exact in (True, False):
        seen.clear()
        rep = benchmark.run_bench(benchmark.BenchOptions(model="tiny", K=2, D=1, puzzles=2,
                                                         split="random", device="cpu",
                                                         modes=["eager", "fast"], exact=exact))
        assert set(seen) == {("eager", (exact,)), ("fast", (exact,))}  # warm-ups included
        assert rep["options"]["exact"] is exact
        assert ("exact (RMSNorm summed in a fixed order)" in benchmark.table(rep)) is exact
        assert rep["agreement"]["fast vs eager"]["rollouts_identical"] == 1.0
    fast = next(e for e in rep["modes"] if e["mode"] == "fast")
    assert fast["norm_kernel"] is False  # the Triton kernel is a compiled GPU engine's only
    rep["options"]["exact"], fast["norm_kernel"] = True, True  # as a GPU run reports it
    assert "exact (RMSNorm summed in a fixed order, in one Triton kernel)" in \
        benchmark.table(rep)
    r = CliRunner().invoke(app, ["bench", "--help"])
    assert "--exact" in r.output


def test_no_exact_undoes_the_fixed_order_a_loaded_checkpoint_comes_with(tmp_path, monkeypatch):
    """A checkpoint loads in the fixed order (solver.load_model, for every inference command);
    `bench -c CKPT --no-exact` must time the reduction's order, as it says, in both loops."""
    from ptrm_codecs.families import PPBENCH
    from ptrm_cli.engine import distributed
    from ptrm_cli.engine.checkpoint import save_checkpoint
    from fixtures_models import tiny_model

    ckpt = save_checkpoint(tmp_path / "m", tiny_model(len(PPBENCH.vocab)), PPBENCH.vocab, {})
    seen = set()
    run, sample = distributed.run, distributed.sample
    monkeypatch.setattr(distributed, "run", lambda engine, *a, **kw: seen.update(
        b.pairwise_norm for b in engine.model.L_level.layers) or run(engine, *a, **kw))
    monkeypatch.setattr(distributed, "sample", lambda model, *a, **kw: seen.update(
        b.pairwise_norm for b in model.L_level.layers) or sample(model, *a, **kw))
    for flag, exact in ((None, True), ("--no-exact", False)):
        seen.clear()
        r = CliRunner().invoke(app, ["bench", "-c", str(ckpt), "--K", "2", "--D", "1",
                                     "--puzzles", "1", "--split", "random", "--device", "cpu",
                                     "--modes", "eager,fast", "--json",
                                     *([flag] if flag else [])])
        assert r.exit_code == 0, r.output
        assert seen == {exact} and json.loads(r.stdout)["options"]["exact"] is exact


def test_bench_random_trm_mlp_needs_no_checkpoint():
    """`--model mlp`: the TRM-MLP shape of the sudoku recipe with random weights (speed does
    not depend on the weights), so perf.sh mlp no longer needs the trained checkpoint."""
    rep = benchmark.run_bench(benchmark.BenchOptions(model="mlp", K=2, D=1, puzzles=2,
                                                     split="random", modes=["fast"],
                                                     device="cpu", compile=False))
    cfg = rep["model"]["config"]
    assert cfg["mlp_t"] is True and cfg["pos_encodings"] == "none"
    assert (cfg["vocab_size"], cfg["seq_len"]) == (11, 81)
    assert 4.9e6 < rep["model"]["parameters"] < 5.1e6  # docs/TRAINING.md: 5.0M
    assert "error" not in rep["modes"][0]
    r = CliRunner().invoke(app, ["bench", "--model", "huge", "--device", "cpu"])
    assert r.exit_code == 2 and "expected 7m, tiny, mlp" in r.output


@pytest.mark.parametrize("extra, message", [
    # ZeroDivisionError tracebacks
    (["--K", "0"], "--K 0: expected an integer >= 1"),
    (["--puzzles", "0"], "--puzzles 0: expected an integer >= 1"),
    # failed modes (exit 1) after the work
    (["--D", "0"], "--D 0: expected an integer >= 1"),
    (["--repeats", "0"], "--repeats 0: expected an integer >= 1"),
    # "must be below 2**63" of a negative seed
    (["--seed", "-1"], "--seed -1: expected a number >= 0"),
    # IsADirectoryError after the whole run
    (["--out", "."], "--out '.': expected a file path for the JSON report"),
    # ValueError / PtrmError tracebacks: the checks `ptrm bench` had, none here
    (["--modes", "fats"], "--modes: unknown mode(s) 'fats' (did you mean fast?)"),
    (["--device", "foo"], "--device 'foo': expected auto, cpu, cuda, cuda:N or mps"),
])
def test_python_m_benchmark_says_mistakes_in_one_line(tmp_path, monkeypatch, capsys, extra,
                                                      message):
    """`python -m ptrm_cli.benchmark` (docs/PERFORMANCE.md: "the same options") raised every
    user mistake as a traceback (exit 1), or ran into a ZeroDivisionError, or wrote nothing
    after the whole run; now the checks, messages and exit status 2 of `ptrm bench`."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(benchmark, "matmul_peak", lambda *a: pytest.fail("started the work"))
    status = benchmark.main([*BENCH[1:], "--split", "random", *extra])
    err = capsys.readouterr().err
    assert status == 2 and f"error: {message}" in err, err


def test_python_m_benchmark_gives_a_hint_for_an_error_without_one(monkeypatch, capsys):
    """An error without its own hint was said with no hint line, where `ptrm bench` names
    its --help."""
    from ptrm_cli.errors import PtrmError

    def check(o):
        raise PtrmError("something is off")

    monkeypatch.setattr(benchmark, "check", check)
    assert benchmark.main([*BENCH[1:], "--split", "random"]) == 2
    assert capsys.readouterr().err == (
        "error: something is off\n"
        "hint: python -m ptrm_cli.benchmark --help says what it takes\n")


def test_python_m_benchmark_json_and_out_are_those_of_ptrm_bench(tmp_path, capsys):
    """--json was unknown to `python -m ptrm_cli.benchmark` (and -o); --out was neither
    checked nor locked before the work."""
    out = tmp_path / "b.json"
    assert benchmark.main([*BENCH[1:], "--split", "random", "--json", "-o", str(out)]) == 0
    got = capsys.readouterr()
    rep = json.loads(got.out)  # stdout is the report, nothing else
    assert rep["format"] == benchmark.FORMAT and rep["options"]["model"] == "tiny"
    assert json.loads(out.read_text())["created"] == rep["created"]
    assert f"wrote {out}" in got.err
    (tmp_path / "notes.txt").write_text("hello\n")
    assert benchmark.main([*BENCH[1:], "--out", str(tmp_path / "notes.txt")]) == 2
    assert "is not a `ptrm bench` report" in capsys.readouterr().err
    assert (tmp_path / "notes.txt").read_text() == "hello\n"


def test_python_m_benchmark_relaunches_through_the_ptrm_launcher(monkeypatch, capsys):
    """--gpus N ran torch.distributed.run itself: without NVLink multicast off (our GPU hosts
    need it) and with torchrun's ChildFailedError for a rank's user error; a bad option was
    said by every rank after the launch."""
    from ptrm_cli.engine import launch

    calls = []
    monkeypatch.setattr(launch, "supervise", lambda cmd, env: calls.append((cmd, env)) or 0)
    args = [*BENCH[1:], "--split", "random", "--gpus", "2"]
    assert benchmark.main(args) == 0
    (cmd, env), = calls
    assert cmd[1:5] == ["-m", "ptrm_cli.engine.launch", "2", "-m"] and "--gpus" not in cmd
    assert cmd[5] == "ptrm_cli.benchmark" and env["NCCL_NVLS_ENABLE"] == "0"
    assert benchmark.main([*args, "--K", "0"]) == 2 and len(calls) == 1
    assert "--K 0: expected an integer >= 1" in capsys.readouterr().err


def test_model_with_a_checkpoint_is_refused_not_ignored(tmp_path, monkeypatch, capsys):
    """`-c CKPT --model mlp` benchmarked the checkpoint and said nothing of --model."""
    from ptrm_codecs.families import PPBENCH
    from ptrm_cli.engine.checkpoint import save_checkpoint
    from fixtures_models import tiny_model

    ckpt = save_checkpoint(tmp_path / "m", tiny_model(len(PPBENCH.vocab)), PPBENCH.vocab, {})
    monkeypatch.setattr(benchmark, "matmul_peak", lambda *a: pytest.fail("started the work"))
    r = CliRunner().invoke(app, [*BENCH, "--split", "random", "-c", str(ckpt)])  # --model tiny
    assert r.exit_code == 2, r.output
    assert "--model tiny: random weights are for a run without --checkpoint" in r.output
    assert benchmark.main([*BENCH[1:], "-c", str(ckpt), "--model", "mlp"]) == 2
    assert "--model mlp: random weights" in capsys.readouterr().err


def test_random_trm_mlp_on_golden_runs_its_sudoku_puzzles():
    """`--model mlp --split golden` stopped at the first heyawake with eval's hint "--types
    sudoku" (bench has no --types), and --split auto fell back to random tokens: the golden
    set's sudoku puzzles are the ones a sudoku-native model reads."""
    if "sudoku" not in installed_codecs() or not golden_examples(["sudoku"]):
        pytest.skip("needs the golden set and the built-in codecs")
    from ptrm_cli import bench_setup

    for split in ("golden", "auto"):
        o = benchmark.BenchOptions(model="mlp", puzzles=20, split=split, seed=1)
        loaded, _ = bench_setup.load_model(o, "cpu")
        pz = bench_setup.load_puzzles(o, loaded)
        assert pz.source.startswith("golden sudoku (") and "repeated to 20" in pz.source
        assert set(pz.types) == {"sudoku"} and pz.labels is not None
        assert pz.inputs.shape == (20, 81) and len(pz.verifiers) == 20
    # a model that reads every golden type runs all of them, as before
    o = benchmark.BenchOptions(model="tiny", puzzles=300, split="golden")
    pz = bench_setup.load_puzzles(o, bench_setup.load_model(o, "cpu")[0])
    assert pz.source.startswith("golden (") and len(set(pz.types)) > 1


def test_share_of_peak_column_keeps_a_space_at_any_width(tmp_path):
    """11451.5% (a tiny --peak-size) ran into the TFLOP/s column: "0.011451.5%"."""
    rep = benchmark.run_bench(benchmark.BenchOptions(model="tiny", K=2, D=1, puzzles=2,
                                                     split="random", modes=["fast"],
                                                     device="cpu"))
    rep["modes"][0]["tflops"], rep["modes"][0]["share_of_peak"] = 0.0, 114.515
    row = next(x for x in bench_report.table(rep).splitlines() if x.startswith("fast "))
    assert " 0.0 11451.5%" in row, row


def test_python_m_benchmark_keeps_the_modes_finished_on_sigterm(tmp_path, monkeypatch, capsys):
    """`timeout` (SIGTERM) killed `python -m ptrm_cli.benchmark` outright: the finished modes
    were neither printed nor written, where `ptrm bench` keeps them and exits 130."""
    import os
    import signal

    monkeypatch.setattr(benchmark, "fast_mode", lambda b, mode: os.kill(os.getpid(),
                                                                        signal.SIGTERM))
    ignore = lambda *a: None  # noqa: E731 - what this process does with SIGTERM otherwise
    before = signal.signal(signal.SIGTERM, ignore)
    out = tmp_path / "b.json"
    try:
        status = benchmark.main([*BENCH[1:-1], "eager,fast", "--split", "random", "--out",
                                 str(out)])
        assert signal.getsignal(signal.SIGTERM) is ignore  # given back when main returns
    finally:
        signal.signal(signal.SIGTERM, before)
    got = capsys.readouterr()
    assert status == 130 and "interrupted" in got.err
    assert "ms/puzzle" in got.out
    rep = json.loads(out.read_text())
    assert rep["interrupted"] is True and [m["mode"] for m in rep["modes"]] == ["eager"]


def test_bench_types_picks_puzzles_of_the_split():
    """--types, as in eval: eval's hint for a model that reads some of a split's types names
    it, and bench had no such option. Golden's sudoku alone, then a type golden lacks."""
    if "sudoku" not in installed_codecs() or not golden_examples(["sudoku"]):
        pytest.skip("needs the golden set and the built-in codecs")
    rep = benchmark.run_bench(benchmark.BenchOptions(
        model="tiny", K=2, D=1, puzzles=3, split="golden", types=["sudoku"], modes=["fast"],
        device="cpu", compile=False))
    assert rep["puzzles"]["source"].startswith("golden sudoku (")
    # judged by the rules too, as eval's tables lead (the table had a label column alone)
    (fast,) = rep["modes"]
    assert 0 <= fast["acc_rules"] <= 1 and 0 <= fast["acc_label"] <= fast["acc_rules"]
    head = next(x for x in benchmark.table(rep).splitlines() if x.startswith("mode "))
    assert head.split()[-2:] == ["rules", "label"]
    r = CliRunner().invoke(app, [*BENCH, "--split", "golden", "--types", "hitorii"])
    assert r.exit_code == 2 and "hitorii" in r.output and "Traceback" not in r.output
    r = CliRunner().invoke(app, [*BENCH, "--split", "random", "--types", "sudoku"])
    assert r.exit_code == 2 and "--split random has none" in r.output
    # --split auto (the default) too: it fell back to random tokens, exit 0, timing none of
    # the puzzles asked for and judging nothing
    r = CliRunner().invoke(app, [*BENCH, "--types", "hitorii"])
    assert r.exit_code == 2 and "hitorii" in r.output and "random inputs" not in r.output
    with pytest.raises(SystemExit) as e:  # argparse's own usage error, as typer's
        benchmark.main(["--model", "tiny", "--split", "golden", "--types", ",", "--device",
                        "cpu"])
    assert e.value.code == 2


def test_bench_reads_no_more_of_a_split_than_it_runs(monkeypatch):
    """A 49k-line sudoku list given as --split took two minutes to read whole before a
    two-puzzle benchmark started."""
    if "sudoku" not in installed_codecs() or not golden_examples(["sudoku"]):
        pytest.skip("needs the golden set and the built-in codecs")
    from ptrm_cli import eval_sets

    asked, real = [], eval_sets.resolve_split
    monkeypatch.setattr(eval_sets, "resolve_split",
                        lambda *a, **k: asked.append(k.get("limit")) or real(*a, **k))
    rep = benchmark.run_bench(benchmark.BenchOptions(
        model="tiny", K=2, D=1, puzzles=2, split="golden", modes=["fast"], device="cpu",
        compile=False))
    assert asked == [2] and rep["puzzles"]["n"] == 2


def test_median_ms_warms_up_then_takes_the_median_of_the_timed_calls(monkeypatch):
    from ptrm_cli import bench_modes

    calls, clock = [], iter([0.0, 0.001, 1.0, 1.005, 2.0, 2.002])  # 1, 5 and 2 ms
    monkeypatch.setattr(bench_modes.time, "perf_counter", lambda: next(clock))
    ms = bench_modes.median_ms(lambda: calls.append(1), 3, "cpu", warmup=2)
    assert len(calls) == 5 and ms == pytest.approx(2.0)


# -- QA pass 2026-11-28: each of these failed before its fix ---------------------------------------

def test_small_tflops_are_printed_with_their_digits_not_as_zero():
    """A CPU's or the tiny model's rate printed "0.0 TFLOP/s" beside "11.9% of peak" (and the
    CPU's peak "0.1 TFLOP/s"): the table seemed to disagree with the JSON."""
    rep = benchmark.run_bench(benchmark.BenchOptions(model="tiny", K=2, D=1, puzzles=2,
                                                     split="random", modes=["fast"],
                                                     device="cpu"))
    rep["modes"][0]["tflops"], rep["peak"]["tflops"] = 0.0474, 0.3969
    text = bench_report.table(rep)
    row = next(x for x in text.splitlines() if x.startswith("fast "))
    assert row.split()[2] == "0.047", row
    assert "matmul peak (bf16 1024^3, measured): 0.397 TFLOP/s" in text
    assert "0.047 TFLOP/s" in bench_report.line(rep["modes"][0])
    assert [bench_report.tf(v) for v in (0.0, 768.14, 1.0, 2e-5)] == ["0.0", "768.1", "1.0",
                                                                       "2.0e-05"]


def test_the_curve_times_a_warm_engine_when_it_runs_alone(monkeypatch):
    """`--modes curve` without a fast mode before it timed the engine's first run (on a GPU its
    compile: 693 against 17 ms/puzzle on the CPU) as the recorded fixed run."""
    if "sudoku" not in installed_codecs() or not golden_examples(["sudoku"]):
        pytest.skip("needs the golden set and the built-in codecs")
    from ptrm_cli import bench_modes

    calls, real = [], bench_modes.Bench.fast_run
    monkeypatch.setattr(bench_modes.Bench, "fast_run", lambda self, eng, D, **kw: calls.append(
        (D, kw.get("record_steps", False))) or real(self, eng, D, **kw))
    rep = benchmark.run_bench(benchmark.BenchOptions(
        model="tiny", K=2, D=3, puzzles=2, split="golden", modes=["curve"], device="cpu"))
    (curve,) = rep["modes"]
    assert "error" not in curve, curve
    assert calls[:2] == [(2, True), (3, True)]  # warm-up, then the recorded run
    assert curve["warmup_compile_s"] >= 0


def test_types_pick_rows_of_a_dataset_split_not_its_first_rows(monkeypatch, tmp_path):
    """`--split val --data DS --types tapa --puzzles 4` read the first 4 rows of val, found "no
    tapa puzzles" there, and ran those rows (lightup, heyawake) as labels only: --types was
    ignored without a word. A labels-only split (types without a codec) ignored it too."""
    import numpy as np

    from ptrm_cli import bench_setup, eval_sets
    from ptrm_cli.engine.data import Split, write_dataset
    from ptrm_codecs.families import PPBENCH

    n = 6
    tokens = np.arange(n * 100).reshape(n, 100) % 50 + 1
    kinds = np.array([0, 0, 0, 0, 1, 1])  # the "tapa" of this test: the last two rows
    ds = write_dataset(tmp_path / "ds", vocab=PPBENCH.vocab, seq_len=100,
                       types=["qa-one", "qa-two"],  # no codec reads them: labels only
                       splits={"val": Split(inputs=tokens.astype(np.uint16),
                                            labels=tokens.astype(np.uint16), type=kinds,
                                            puzzle=np.arange(n), transform=np.zeros(n),
                                            puzzle_id=np.zeros(n))})
    asked, real = [], eval_sets.resolve_split
    monkeypatch.setattr(eval_sets, "resolve_split",
                        lambda *a, **k: asked.append(k.get("limit")) or real(*a, **k))
    o = benchmark.BenchOptions(model="tiny", puzzles=2, split="val", data=str(ds),
                               types=["qa-two"])
    loaded, _ = bench_setup.load_model(o, "cpu")
    pz = bench_setup.load_puzzles(o, loaded)
    assert asked == [2]  # --types' rows, then the first --puzzles of them: not the whole split
    assert pz.types == ["qa-two", "qa-two"] and "qa-two" in pz.source
    assert pz.inputs.tolist() == tokens[4:].tolist()
    r = CliRunner().invoke(app, [*BENCH, "--split", "val", "--data", str(ds), "--types",
                                 "qa-three"])
    assert r.exit_code == 2 and "no qa-three puzzles to run" in r.output, r.output
    assert "hint:" in r.output and "Traceback" not in r.output


def test_an_interrupt_before_any_mode_finished_keeps_the_earlier_report(tmp_path, monkeypatch):
    """Ctrl-C before the first mode finished replaced the report a rerun's --out held with an
    empty one (and said "wrote")."""
    def stop(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(benchmark, "eager_mode", stop)
    out = tmp_path / "b.json"
    earlier = json.dumps({"format": benchmark.FORMAT, "modes": [{"mode": "eager"}]})
    out.write_text(earlier)
    r = CliRunner().invoke(app, [*BENCH, "--split", "random", "--out", str(out)])
    assert r.exit_code == 130, r.output
    assert out.read_text() == earlier and "wrote" not in r.output
    assert "nothing to keep" in r.output


def test_adaptive_agrees_with_eager_on_the_puzzles_it_did_not_stop():
    """"agreement adaptive vs eager: identical rollouts 25.0%, max |dQ| 4.08" compared rollouts
    adaptive stopped at step 1 with eager's at step D: runs that agree bit for bit read as if
    they did not."""
    import torch

    from ptrm_cli.bench_modes import agreements

    class R:
        def __init__(self, preds, q, stopped=None):
            self.preds, self.q, self.stopped = preds, q, stopped

    preds = torch.zeros(3, 2, 4, dtype=torch.long)
    q = torch.zeros(3, 2)
    early = preds.clone()
    early[:2] += 1  # puzzles 0 and 1 stopped early: other predictions, other Q
    ad = R(early, q - 1 * torch.tensor([[1.], [1.], [0.]]), torch.tensor([True, True, False]))
    out = agreements({"eager": R(preds, q), "adaptive": ad})
    assert "adaptive vs eager" not in out
    a = out["adaptive vs eager (puzzles it did not stop)"]
    assert a["rollouts_identical"] == 1.0 and a["max_abs_dq"] == 0
    # every puzzle stopped: nothing to compare, no line
    ad.stopped = torch.tensor([True, True, True])
    assert agreements({"eager": R(preds, q), "adaptive": ad}) == {}


@pytest.mark.parametrize("extra", [
    ["--modes", "warp"], ["--wave", "3"], ["--split", "random", "--types", "sudoku"],
    ["--q-threshold", "nan"], ["--compile-mode", "bogus"], ["--split", "no-such.jsonl"],
    ["--data", "no-such-folder", "--split", "val"],
])
def test_every_bench_mistake_comes_with_a_hint(tmp_path, monkeypatch, capsys, extra):
    """README: a mistake is an `error:` line and a `hint:` line; these had no hint."""
    monkeypatch.chdir(tmp_path)
    r = CliRunner().invoke(app, [*BENCH, *extra])
    assert r.exit_code == 2 and "error:" in r.output and "hint:" in r.output, r.output
    assert "Traceback" not in r.output
    assert benchmark.main([*BENCH[1:], *extra]) == 2  # python -m ptrm_cli.benchmark
    err = capsys.readouterr().err
    assert "\nhint: " in err, err


def test_a_checkpoint_that_does_not_exist_is_one_error_with_a_hint(tmp_path):
    r = CliRunner().invoke(app, ["bench", "-c", str(tmp_path / "nope"), "--device", "cpu",
                                 "--split", "random", "--modes", "eager"])
    assert r.exit_code == 2 and "no such file or directory" in r.output, r.output
    assert "hint: -c takes a checkpoint folder" in r.output


def test_a_dataset_split_is_named_with_its_folder(monkeypatch, tmp_path):
    """`--split golden --data DS` was headed "golden (4 puzzles)", as if it were the wheel's
    golden set, and `--split val --data DS` "val" of no dataset in particular."""
    if "sudoku" not in installed_codecs() or not golden_examples(["sudoku"]):
        pytest.skip("needs the golden set and the built-in codecs")
    from ptrm_cli import bench_setup, eval_sets

    real = eval_sets.resolve_split  # the dataset's golden split: the wheel's puzzles will do
    monkeypatch.setattr(eval_sets, "resolve_split",
                        lambda split, data, loaded, **k: real("golden", None, loaded, **k))
    o = benchmark.BenchOptions(model="tiny", puzzles=2, split="golden", data=str(tmp_path))
    pz = bench_setup.load_puzzles(o, bench_setup.load_model(o, "cpu")[0])
    assert pz.source.startswith(f"{tmp_path}/golden (2 puzzles"), pz.source
