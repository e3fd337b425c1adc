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
import os
import platform
import resource
import signal
import sys
from contextlib import nullcontext
from dataclasses import replace
from pathlib import Path

import torch

from .bench_curve import curve_mode
from .bench_modes import (FAST_MODES, KERNEL_KINDS, Bench, adaptive_mode, agreement,
                          agreements, eager_mode, fast_mode, matmul_peak, profile_mode, scaling)
from .bench_report import device_desc, jsonable, line, noise, table, tf
from .bench_setup import (DEFAULT_RANDOM_MODEL, FORMAT, MODES, BenchOptions, Puzzles, load_model,
                          load_puzzles, log, RANDOM_MODELS, random_7m, random_mlp, random_tiny)
from .devices import resolve_device
from .engine.sampler import PERTURB
from .errors import PtrmError, UsageError, did_you_mean, is_out_of_memory, plain_message

__all__ = ["FORMAT", "KERNEL_KINDS", "MODES", "BenchOptions", "Puzzles", "agreement",
           "check_out", "load_model", "load_puzzles", "main", "matmul_peak", "parser",
           "RANDOM_MODELS", "random_7m", "random_mlp", "random_tiny", "run_and_show",
           "run_bench", "table"]


class Interrupted(KeyboardInterrupt):
    """Ctrl-C (or SIGTERM) between or inside modes: `report` holds the modes finished before
    it (marked `"interrupted": true`), already written to --out."""

    def __init__(self, report: dict):
        super().__init__()
        self.report = report


#: the least value of each counting option (typer's `min=` says the same on `ptrm bench`; this
#: is what `python -m ptrm_cli.benchmark` and run_bench's other callers get): 0 rollouts or
#: puzzles was a ZeroDivisionError traceback, --repeats 0 or --D 0 a failed mode after the work
AT_LEAST = {"K": 1, "D": 1, "puzzles": 1, "repeats": 1, "check_every": 1, "wave": 1,
            "chunk_rows": 1, "peak_size": 64}


def check_options(o: BenchOptions) -> list[str]:
    """The modes to run, once each; every option a run cannot use refused (a UsageError, a
    ValueError naming the option, with a hint) before the device, the model or the puzzles are
    touched."""
    from .engine.fast import COMPILE_MODES

    modes = [m for m in o.modes if m]
    bad = [m for m in modes if m not in MODES + ("scaling",)]
    modes_hint = "e.g. --modes eager,fast,adaptive (docs/PERFORMANCE.md says what each does)"
    if bad:
        raise UsageError(f"--modes: unknown mode(s) {', '.join(map(repr, bad))}"
                         f"{did_you_mean(bad, MODES + ('scaling',))}; choose from "
                         f"{', '.join(MODES)}, scaling", hint=modes_hint)
    if not modes:
        raise UsageError("--modes: name at least one mode (eager, fast, adaptive, ...)",
                         hint=modes_hint)
    if o.model is not None and o.model not in RANDOM_MODELS:
        raise UsageError(f"--model {o.model!r}: expected {', '.join(RANDOM_MODELS)}",
                         hint=f"leave --model out for {DEFAULT_RANDOM_MODEL}, the paper's size")
    if o.model is not None and o.checkpoint:  # else ignored: a 7m run reported as an mlp's
        raise UsageError(f"--model {o.model}: random weights are for a run without "
                         "--checkpoint; the checkpoint is the model",
                         hint="leave --model out, or -c out")
    if o.types is not None and o.split == "random":
        raise UsageError("--types picks puzzles of a split; --split random has none",
                         hint="leave --types out, or --split golden")
    if o.perturb is not None and o.perturb not in PERTURB:
        raise UsageError(f"--perturb {o.perturb!r}: expected {', '.join(PERTURB[:-1])} or "
                         f"{PERTURB[-1]}", hint="leave --perturb out: the model's own target")
    for name, least in AT_LEAST.items():
        value = getattr(o, name)
        if value is not None and not value >= least:
            flag = f"--{name.replace('_', '-')}"
            raise UsageError(f"{flag} {value}: expected an integer >= {least}",
                             hint=f"{flag} {least} or more")
    if o.sigma is not None and not 0 <= o.sigma < math.inf:  # NaN fails this too
        raise UsageError(f"--sigma {o.sigma}: expected a finite number >= 0",
                         hint="leave --sigma out: the model's own (a random model: 0.2)")
    if o.q_threshold is not None and not o.q_threshold >= 0:
        raise UsageError(f"--q-threshold {o.q_threshold}: expected a number >= 0 (above 1 "
                         "turns the Q rule off)", hint="--q-threshold 0.9 (the default)")
    if o.seed < 0:
        raise UsageError(f"--seed {o.seed}: expected a number >= 0", hint="e.g. --seed 0")
    if not o.seed < 2**63:  # torch's generator takes no more; said as solve and eval say it
        raise UsageError(f"--seed {o.seed}: must be below 2**63", hint="e.g. --seed 0")
    if o.wave is not None and o.wave > o.K:
        raise UsageError(f"--wave {o.wave}: a wave holds at most --K ({o.K}) rollouts",
                         hint=f"--wave {o.K} or fewer, or leave it out (one wave of --K)")
    if o.compile_mode not in COMPILE_MODES:  # before any mode runs, not when fast reaches it
        raise UsageError(f"--compile-mode {o.compile_mode!r}: expected one of "
                         f"{', '.join(COMPILE_MODES)}", hint="leave --compile-mode out: default")
    return list(dict.fromkeys(modes))  # a mode named twice runs once


def run_bench(o: BenchOptions) -> dict:
    from .engine import distributed
    from .engine.model import count_parameters, flops_per_step
    from . import solver

    modes = check_options(o)
    if not o.checkpoint:  # the report says which random model ran
        o = replace(o, model=o.model or DEFAULT_RANDOM_MODEL)
    device_name = distributed.setup(resolve_device(o.device))
    device = torch.device(device_name)
    rank, world = distributed.world()
    log(f"device {device_name} (rank {rank} of {world}); torch {torch.__version__}")

    loaded, model_desc = load_model(o, device_name)
    loaded.model.fixed_order_norm(o.exact)  # before any engine copies the model
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
              "options": o.recorded(), "model": {"desc": model_desc, "config": cfg.to_dict(),
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
    log(f"matmul peak {tf(peak['tflops'])} TFLOP/s (bf16 {peak['n']}^3)")

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
        if _kept(report):
            log(f"interrupted: keeping the {len(report['modes'])} mode(s) finished")
        else:  # an empty report replaced the earlier one a rerun's --out held
            log("interrupted before any mode finished: nothing to keep"
                + (f", nothing written to {o.out}" if o.out else ""))
        raise Interrupted(_finish(o, b, report, write=_kept(report))) from None
    return _finish(o, b, report)


def _kept(report: dict) -> bool:
    """Whether the report holds a measurement (a mode, finished or failed, or scaling)."""
    return bool(report["modes"]) or "scaling" in report


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


def _finish(o: BenchOptions, b: Bench, report: dict, write: bool = True) -> dict:
    """Agreement and speed-ups over the modes run, then the report written to --out (unless
    `write` is false: an interrupted run that finished nothing)."""
    from .engine import distributed

    report["agreement"].update(agreements(b.runs))
    base = next((m for m in report["modes"] if m["mode"] == "eager" and "time_s" in m), None)
    for m in report["modes"]:
        if base is not None and "time_s" in m:
            m["speedup_vs_eager"] = base["time_s"] / m["time_s"]
    report["peak_rss_bytes"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    if write and o.out and distributed.is_main():
        from .atomic import write_text

        write_text(o.out, json.dumps(report, indent=1, default=jsonable) + "\n")
    return report


def failed_modes(report: dict) -> list[str]:
    """The modes that raised (their error is in the report and the table): the run's exit
    status is 1 when there is one, so a script does not take a failed bench for a measurement."""
    return [m["mode"] for m in report["modes"] if "error" in m]


# -- the command line: what `ptrm bench` and `python -m ptrm_cli.benchmark` share ------------------

def check(o: BenchOptions) -> None:
    """Every check that needs no device, model or puzzles, as a PtrmError: before a relaunch on
    several GPUs (else each rank would say it), and again in run_bench for its other callers."""
    try:
        check_options(o)
    except ValueError as e:
        if isinstance(e, PtrmError):  # a UsageError: its hint with it
            raise
        raise PtrmError(str(e), hint="ptrm bench --help says what each option takes") from None
    check_out(o.out)


def check_out(out: str | None) -> None:
    """--out before any work: a file path, and nothing there but an earlier bench report (a
    rerun) or an empty file, never another file that happens to be there."""
    if out is None:
        return
    if not out.strip() or Path(out).is_dir():
        raise PtrmError(f"--out {out!r}: expected a file path for the JSON report",
                        hint="e.g. --out bench.json")
    if not _replaceable(Path(out)):
        raise PtrmError(f"--out {out}: that file exists and is not a `ptrm bench` report; it "
                        "would be replaced", hint="choose another path, or delete it first")


def _replaceable(path: Path) -> bool:
    try:
        text = path.read_text() if path.is_file() else ""
        return not text.strip() or json.loads(text).get("format") == FORMAT
    except (OSError, UnicodeDecodeError, ValueError, AttributeError):
        return False


def run_and_show(o: BenchOptions, as_json: bool = False) -> int:
    """run_bench under --out's lock (an unwritable --out fails before the work, not after
    it), then the table, or with --json the report --out writes, on stdout (progress and notes
    on stderr), from rank 0. The exit status: 0; 1 when a mode failed (a script must not take
    a failed bench for a measurement); 130 when interrupted (the modes finished are shown and
    kept). A user's mistake is a PtrmError. Both front ends call `check` first (before any
    relaunch on several GPUs), so it is not repeated here."""
    from .atomic import exclusive
    from .engine import distributed

    writes = o.out is not None and os.environ.get("RANK", "0") == "0"  # rank 0 writes --out
    interrupted = False
    try:
        with exclusive(o.out, "bench --out") if writes else nullcontext():
            report = run_bench(o)
    except ValueError as e:
        if isinstance(e, PtrmError):  # a UsageError: its hint with it
            raise
        raise PtrmError(str(e), hint="ptrm bench --help says what each option takes") from None
    except Interrupted as e:
        report, interrupted = e.report, True
    main = distributed.is_main()  # asked before teardown: after it every rank says rank 0
    distributed.teardown()
    if main and as_json:
        print(json.dumps(report, indent=1, default=jsonable), flush=True)
    elif main and (report["modes"] or "scaling" in report):
        print(table(report), flush=True)
    if main and o.out and (not interrupted or _kept(report)):
        print(f"wrote {o.out}", file=sys.stderr if as_json else sys.stdout, flush=True)
    if interrupted:
        return 130
    if failed := failed_modes(report):
        if main:
            print(f"error: mode(s) {', '.join(failed)} failed (the table and the report say "
                  "why)", file=sys.stderr, flush=True)
        return 1
    return 0


def parser() -> argparse.ArgumentParser:
    d = BenchOptions()
    p = argparse.ArgumentParser(prog="python -m ptrm_cli.benchmark", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--checkpoint", "-c")
    p.add_argument("--model", choices=tuple(RANDOM_MODELS),
                   help=f"without --checkpoint (default {DEFAULT_RANDOM_MODEL})")
    for name in ("K", "D", "puzzles", "seed", "repeats", "check_every"):
        p.add_argument(f"--{name.replace('_', '-')}", dest=name, type=int,
                       default=getattr(d, name))
    p.add_argument("--sigma", type=float, default=d.sigma)
    p.add_argument("--perturb", default=d.perturb, choices=PERTURB)
    p.add_argument("--split", default=d.split)
    p.add_argument("--data")
    p.add_argument("--types", type=_type_list,
                   help="only these puzzle types of the split, comma-separated")
    p.add_argument("--modes", default=",".join(d.modes))
    p.add_argument("--device", default=d.device)
    p.add_argument("--chunk-rows", dest="chunk_rows", type=int)
    p.add_argument("--compile", dest="compile", action="store_true", default=None)
    p.add_argument("--no-compile", dest="compile", action="store_false")
    p.add_argument("--compile-mode", dest="compile_mode", default=d.compile_mode)
    p.add_argument("--no-deterministic", dest="deterministic", action="store_false")
    p.add_argument("--exact", action=argparse.BooleanOptionalAction, default=d.exact,
                   help="RMSNorm summed in a fixed order: fast gives eager's results bit for bit "
                        "(the default; --no-exact: a reduction kernel's order)")
    p.add_argument("--wave", type=int)
    p.add_argument("--q-threshold", dest="q_threshold", type=float, default=d.q_threshold)
    p.add_argument("--no-rules", dest="rules", action="store_false")
    p.add_argument("--peak-size", dest="peak_size", type=int)
    p.add_argument("--out", "-o")
    p.add_argument("--json", dest="as_json", action="store_true",
                   help="the report on stdout instead of the table")
    p.add_argument("--gpus", type=int)
    return p


def main(argv: list[str] | None = None) -> int:
    """`python -m ptrm_cli.benchmark`: `ptrm bench` without typer, the same checks, output and
    exit statuses (a mistake is one "error:" line and status 2, not a traceback)."""
    from .engine import distributed

    ap = parser()
    args = ap.parse_args(argv)
    kw = {k: v for k, v in vars(args).items() if k not in ("gpus", "as_json")}
    kw["modes"] = [m.strip() for m in kw["modes"].split(",") if m.strip()]
    o = BenchOptions(**kw)
    # SIGTERM (`timeout`, a scheduler) keeps the finished modes as Ctrl-C does, as in ptrm bench
    term = signal.signal(signal.SIGTERM, _interrupt)
    try:
        check(o)
        if args.gpus and args.gpus > 1 and not distributed.launched():
            distributed.check_gpus(args.gpus, o.device)
            return _relaunch(args.gpus, sys.argv[1:] if argv is None else argv)
        status = run_and_show(o, args.as_json)
    except PtrmError as e:
        if os.environ.get("RANK", "0") == "0":  # every rank meets it: rank 0 says it
            print(plain_message(e, ap.prog), file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt:  # before any mode finished: nothing to keep
        status = 130
    finally:
        signal.signal(signal.SIGTERM, term)
    if status == 130:
        print("interrupted", file=sys.stderr)
    return status


def _type_list(text: str) -> list[str]:
    """--types a,b as `ptrm bench` reads it (options.type_list; that module needs typer)."""
    names = [t.strip() for t in text.split(",") if t.strip()]
    if not names:
        raise argparse.ArgumentTypeError(f"{text!r} names no puzzle type")
    return names


def _interrupt(signum, frame):
    raise KeyboardInterrupt


def _relaunch(nproc: int, argv: list[str]) -> int:
    """This module again in nproc processes, through the launcher `ptrm bench --gpus` uses
    (NVLink multicast off, a failing rank's own exit status; engine/launch.py)."""
    from .engine import distributed, launch

    return launch.run(nproc, "ptrm_cli.benchmark", distributed.strip_gpus(argv))


if __name__ == "__main__":
    sys.exit(main())
