"""`ptrm bench`: how fast PTRM runs on this machine, measured in one invocation.

    ptrm bench --K 100 --D 48 --puzzles 61 --modes eager,fast,adaptive --out bench.json
    torchrun --standalone --nproc_per_node 4 -m ptrm_cli.app bench --modes fast ...
    python -m ptrm_cli.benchmark ...      # the same without typer/rich (needs torch, numpy)

What it measures, in order (every mode on the same puzzles, seed and model):

  peak       the card's matmul rate: a large bf16 matrix product (8192^3 on a GPU), median of
             timed repeats after warm-up; every "% of peak" below divides by this number
  fast       the fast engine (engine/fast.py): weights pre-cast, network compiled, one sync;
             compile + first run timed separately (a D=2 run at the same shapes) from the
             timed runs. fast-autotune: the same with max-autotune (matmul templates) and the
             SwiGLU split into two matmuls so its product can fuse into a matmul epilogue;
             fast-step: the whole supervision step compiled as one graph (long compile)
  adaptive   the same engine stopping puzzles early (rules verifier where the puzzles have a
             codec, and sigmoid(Q) > --q-threshold), checks every --check-every steps; FLOPs
             counted per row and step actually computed
  eager      the reference loop (sampler.sample(fast=False)): the straightforward
             implementation the speed-up is measured against
  curve      one recorded fixed run, every adaptive policy replayed on it (engine/adaptive.py):
             accuracy vs FLOPs, the Pareto front, and the cheapest policy that matches the fixed
             run's accuracy; the best one is then run for real and checked against the replay.
             Needs labelled puzzles (golden, or --split val --data DIR) and a trained
             --checkpoint to mean anything.
  scaling    (launched on several GPUs) the fast run on 1, 2, 4 ... of them: time and equality
             with the one-GPU result
  profile    one supervision step of the fast engine under torch.profiler: device time by
             kernel, and the shares of matmuls, attention, compiled (Triton) elementwise
             kernels and the rest: where the gap to the matmul peak is

For each: ms per puzzle, achieved TFLOP/s (reference matmul FLOPs: flops_per_step x row-steps
computed), share of the measured peak, peak device memory, and agreement with the other modes
(identical rollouts, identical best-Q answers, max |dQ|). A short table is printed last; the
full numbers go to --out (JSON).

Without --checkpoint the model is a randomly initialised TRM-Att of the paper's size (D=512,
8 heads, L_layers=2, T=3, n=6, P=16, vocab 294, seq 100: 7M parameters, 34.4 GFLOP a step);
its Q head keeps the reference init (every Q = -5), so adaptive runs never stop early on it and
measure the engine's overhead, not a saving.
"""

# This file is `run_bench` (the order of the modes, the report) and the command line without
# typer; the work lives beside it (kept out of the docstring, which is `--help`):
#
#     bench_setup.py    BenchOptions, MODES, FORMAT, the device, the model (random_7m, a
#                       checkpoint) and the puzzles (golden, a dataset, random tokens)
#     bench_modes.py    the matmul peak, `Bench` (what every mode shares, how a run is timed),
#                       the fast / adaptive / eager / profile modes, scaling, agreement
#     bench_curve.py    the accuracy/compute curve: record, replay, Pareto, the chosen policy
#     bench_report.py   the JSON encoding, the progress lines and the printed table
#
# The names other code uses (`benchmark.BenchOptions`, `run_bench`, `table`, `main`, `FORMAT`,
# `random_7m`, ...) are imported here, so callers need not know the layout.

from __future__ import annotations

import argparse
import datetime
import json
import math
import platform
import resource
import sys
from dataclasses import asdict, replace

import torch

from .bench_curve import curve_mode
from .bench_modes import (FAST_MODES, KERNEL_KINDS, Bench, adaptive_mode, agreement,
                          agreements, eager_mode, fast_mode, matmul_peak, profile_mode, scaling)
from .bench_report import device_desc, jsonable, line, noise, table
from .bench_setup import (FORMAT, MODES, BenchOptions, Puzzles, load_model, load_puzzles, log,
                          RANDOM_MODELS, random_7m, random_mlp, random_tiny)
from .devices import resolve_device
from .engine.sampler import PERTURB
from .errors import PtrmError, did_you_mean, is_out_of_memory

__all__ = ["FORMAT", "KERNEL_KINDS", "MODES", "BenchOptions", "Puzzles", "agreement",
           "load_model", "load_puzzles", "main", "matmul_peak", "parser", "RANDOM_MODELS",
           "random_7m", "random_mlp", "random_tiny", "run_bench", "table"]


class Interrupted(KeyboardInterrupt):
    """Ctrl-C (or SIGTERM) between or inside modes: `report` holds the modes finished before
    it (marked `"interrupted": true`), already written to --out."""

    def __init__(self, report: dict):
        super().__init__()
        self.report = report


def run_bench(o: BenchOptions) -> dict:
    from .engine import distributed
    from .engine.fast import COMPILE_MODES
    from .engine.model import count_parameters, flops_per_step
    from . import solver

    modes = [m for m in o.modes if m]
    bad = [m for m in modes if m not in MODES + ("scaling",)]
    if bad:
        raise ValueError(f"--modes: unknown mode(s) {', '.join(map(repr, bad))}"
                         f"{did_you_mean(bad, MODES + ('scaling',))}; choose from "
                         f"{', '.join(MODES)}, scaling")
    modes = list(dict.fromkeys(modes))  # a mode named twice runs once
    if o.sigma is not None and not 0 <= o.sigma < math.inf:  # NaN fails this too
        raise ValueError(f"--sigma {o.sigma}: expected a finite number >= 0")
    if o.q_threshold is not None and not o.q_threshold >= 0:
        raise ValueError(f"--q-threshold {o.q_threshold}: expected a number >= 0 (above 1 "
                         "turns the Q rule off)")
    if not 0 <= o.seed < 2**63:  # torch's generator takes no more; said as solve and eval say it
        raise ValueError(f"--seed {o.seed}: must be below 2**63")
    if o.wave is not None and o.wave > o.K:
        raise ValueError(f"--wave {o.wave}: a wave holds at most --K ({o.K}) rollouts")
    if o.compile_mode not in COMPILE_MODES:  # before any mode runs, not when fast reaches it
        raise ValueError(f"--compile-mode {o.compile_mode!r}: expected one of "
                         f"{', '.join(COMPILE_MODES)}")
    device_name = distributed.setup(resolve_device(o.device))
    device = torch.device(device_name)
    rank, world = distributed.world()
    log(f"device {device_name} (rank {rank} of {world}); torch {torch.__version__}")

    loaded, model_desc = load_model(o, device_name)
    # the noise solve and eval would use: speed does not depend on it, the acc column does
    sigma, _, perturb = loaded.noise_choice(o.sigma, o.perturb)
    o = replace(o, sigma=sigma, perturb=perturb)
    cfg = loaded.config
    fps = flops_per_step(cfg)
    try:
        pz = load_puzzles(o, loaded)
    except (RuntimeError, MemoryError) as e:  # --puzzles 10**9: the token arrays alone
        if not (isinstance(e, MemoryError) or is_out_of_memory(e)):
            raise
        raise PtrmError(f"--puzzles {o.puzzles}: that many puzzles do not fit in memory here",
                        hint="pass a smaller --puzzles") from None
    if "curve" in modes and pz.labels is None and pz.verifiers is None:
        # said now, not as a failed mode after the others have run
        raise PtrmError(f"--modes curve needs labelled puzzles; {pz.source} has none",
                        hint="--split golden, or --split val --data DIR")
    P, K, D = pz.inputs.shape[0], o.K, o.D
    fixed_flops = P * K * D * fps
    budget = solver.default_memory(device_name)
    capacity = o.chunk_rows or solver.plan_chunk_rows(cfg, K, D, budget)
    log(f"{model_desc}: {count_parameters(loaded.model):,} parameters, {fps / 1e9:.2f} GFLOP "
        f"a step; {pz.source}; K={K} D={D} {noise(o.sigma, o.perturb)}; {fixed_flops / P:.3e} FLOP a "
        f"puzzle; rows in flight {min(capacity, P * K)}")

    report = {"format": FORMAT,
              "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
              "host": platform.node(), "device": device_desc(device), "torch": torch.__version__,
              "world_size": world, "cpu_threads": torch.get_num_threads(),
              "options": asdict(o), "model": {"desc": model_desc, "config": cfg.to_dict(),
                                              "parameters": count_parameters(loaded.model),
                                              "flops_per_step": fps},
              "puzzles": {"source": pz.source, "n": P}, "fixed_flops_per_puzzle": fixed_flops / P,
              "rows_in_flight": min(capacity, P * K), "modes": [], "agreement": {}}
    log("measuring the matmul peak")
    try:
        peak = matmul_peak(device, o.peak_size)
    except RuntimeError as e:  # torch.OutOfMemoryError is one
        if not is_out_of_memory(e):
            raise
        raise PtrmError(f"--peak-size {o.peak_size}: the peak measurement's matrices do not "
                        "fit in memory here", hint="pass a smaller --peak-size") from None
    report["peak"] = peak
    log(f"matmul peak {peak['tflops']:.1f} TFLOP/s (bf16 {peak['n']}^3)")

    verify = None
    if o.rules and pz.verifiers is not None:
        verify = lambda p, preds: pz.verifiers[p].valid(preds)  # noqa: E731
    b = Bench(o, device, world, loaded, pz, capacity, fps, peak, verify)
    try:
        for mode in modes:
            _run_mode(b, mode, report)
        if world > 1 or "scaling" in modes:
            report["scaling"] = scaling(b)
    except KeyboardInterrupt:
        report["interrupted"] = True
        log(f"interrupted: keeping the {len(report['modes'])} mode(s) finished")
        raise Interrupted(_finish(o, b, report)) from None
    return _finish(o, b, report)


def _run_mode(b: Bench, mode: str, report: dict) -> None:
    """One mode, its entry appended to the report; a mode that fails is recorded as failed."""
    try:
        if mode in FAST_MODES:
            e = fast_mode(b, mode)
        elif mode == "adaptive":
            e = adaptive_mode(b)
        elif mode == "eager":
            e = eager_mode(b)
        elif mode == "profile":
            e = profile_mode(b)
        elif mode == "curve":
            e = curve_mode(b)
        else:  # scaling: after every mode
            return
        report["modes"].append(e)
        log(line(e))
    except Exception as ex:  # noqa: BLE001 - one failing mode must not lose the others
        if b.device.type == "cuda" and "out of memory" in str(ex).lower():
            torch.cuda.empty_cache()
        report["modes"].append({"mode": mode, "error": f"{type(ex).__name__}: {ex}"})
        log(f"{mode}: FAILED {type(ex).__name__}: {ex}")


def _finish(o: BenchOptions, b: Bench, report: dict) -> dict:
    """Agreement and speed-ups over the modes run, then the report written to --out."""
    from .engine import distributed

    report["agreement"].update(agreements(b.runs))
    base = next((m for m in report["modes"] if m["mode"] == "eager" and "time_s" in m), None)
    for m in report["modes"]:
        if base is not None and "time_s" in m:
            m["speedup_vs_eager"] = base["time_s"] / m["time_s"]
    report["peak_rss_bytes"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    if o.out and distributed.is_main():
        from .atomic import write_text

        write_text(o.out, json.dumps(report, indent=1, default=jsonable) + "\n")
    return report


def failed_modes(report: dict) -> list[str]:
    """The modes that raised (their error is in the report and the table): the run's exit
    status is 1 when there is one, so a script does not take a failed bench for a measurement."""
    return [m["mode"] for m in report["modes"] if "error" in m]


# -- command line without typer ------------------------------------------------------------------

def parser() -> argparse.ArgumentParser:
    d = BenchOptions()
    p = argparse.ArgumentParser(prog="python -m ptrm_cli.benchmark", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--checkpoint", "-c")
    p.add_argument("--model", default=d.model, choices=tuple(RANDOM_MODELS))
    for name in ("K", "D", "puzzles", "seed", "repeats", "check_every"):
        p.add_argument(f"--{name.replace('_', '-')}", dest=name, type=int,
                       default=getattr(d, name))
    p.add_argument("--sigma", type=float, default=d.sigma)
    p.add_argument("--perturb", default=d.perturb, choices=PERTURB)
    p.add_argument("--split", default=d.split)
    p.add_argument("--data")
    p.add_argument("--modes", default=",".join(d.modes))
    p.add_argument("--device", default=d.device)
    p.add_argument("--chunk-rows", dest="chunk_rows", type=int)
    p.add_argument("--compile", dest="compile", action="store_true", default=None)
    p.add_argument("--no-compile", dest="compile", action="store_false")
    p.add_argument("--compile-mode", dest="compile_mode", default=d.compile_mode)
    p.add_argument("--no-deterministic", dest="deterministic", action="store_false")
    p.add_argument("--wave", type=int)
    p.add_argument("--q-threshold", dest="q_threshold", type=float, default=d.q_threshold)
    p.add_argument("--no-rules", dest="rules", action="store_false")
    p.add_argument("--peak-size", dest="peak_size", type=int)
    p.add_argument("--out")
    p.add_argument("--gpus", type=int)
    return p


def main(argv: list[str] | None = None) -> int:
    from .engine import distributed

    args = parser().parse_args(argv)
    if args.gpus and args.gpus > 1 and not distributed.launched():
        argv = sys.argv[1:] if argv is None else argv
        cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone",
               f"--nproc_per_node={args.gpus}", "-m", "ptrm_cli.benchmark",
               *distributed.strip_gpus(argv)]
        import subprocess

        return subprocess.call(cmd)
    kw = {k: v for k, v in vars(args).items() if k != "gpus"}
    kw["modes"] = [m.strip() for m in kw["modes"].split(",") if m.strip()]
    report = run_bench(BenchOptions(**kw))
    if distributed.is_main():
        print(table(report))
    return 1 if failed_modes(report) else 0


if __name__ == "__main__":
    sys.exit(main())
