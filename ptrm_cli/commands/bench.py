"""`ptrm bench`: ms per puzzle, TFLOP/s, share of the measured matmul peak and peak memory of
PTRM here, for the eager loop, the fast engine and adaptive compute (ptrm_cli/benchmark.py
and its bench_*.py modules)."""

from __future__ import annotations

import typer

from ..options import JSON, PERTURB_HELP, check_perturb, set_threads, threads_option, \
    type_list


def bench(
    checkpoint: str = typer.Option(None, "--checkpoint", "-c",
                                   show_default="a random TRM of --model's size",
                                   help="Checkpoint folder (or official TRM step file)."),
    model: str = typer.Option(None, "--model", show_default="7m",
                              help="Without --checkpoint, random weights: 7m (the paper's "
                                   "TRM-Att, D=512, 8 heads, T=3, n=6, P=16, vocab 294, seq "
                                   "100), mlp (TRM-MLP on 9x9 sudoku, 5.0M: the golden set's "
                                   "sudoku puzzles) or tiny."),
    K: int = typer.Option(100, "--K", min=1, help="Rollouts per puzzle."),
    D: int = typer.Option(48, "--D", min=1, help="Supervision steps per rollout."),
    sigma: float = typer.Option(None, "--sigma", min=0.0,
                                show_default="the checkpoint's, else 0.2",
                                help="Noise scale, where --perturb says: what solve and eval "
                                     "would use (speed does not depend on it; the acc column "
                                     "does)."),
    perturb: str = typer.Option(None, "--perturb", help=PERTURB_HELP,
                                show_default="the checkpoint's, else z"),
    puzzles: int = typer.Option(61, "--puzzles", min=1,
                                help="Puzzles (the golden set is repeated if it has fewer; "
                                     "with --split random, random tokens)."),
    split: str = typer.Option("auto", "--split",
                              help="auto (golden if available, else random), golden, random, a "
                                   "PPBench JSONL file, a dataset folder, or a split name with "
                                   "--data."),
    data: str = typer.Option(None, "--data", help="Dataset folder for a named --split."),
    types: str = typer.Option(None, "--types", show_default="all of the split's",
                              help="Only these puzzle types of the split, comma-separated "
                                   "(tapa,nurikabe)."),
    modes: str = typer.Option("eager,fast,adaptive", "--modes",
                              help="Comma-separated: eager, fast, fast-autotune, fast-step, "
                                   "adaptive, curve, profile (scaling runs by itself on "
                                   "several GPUs)."),
    device: str = typer.Option("auto", "--device", help="auto | cpu | cuda | cuda:N"),
    seed: int = typer.Option(0, "--seed", min=0,
                             help="Seed of the noise (all modes), a random model's weights "
                                  "and random tokens."),
    repeats: int = typer.Option(1, "--repeats", min=1,
                                help="Timed runs of each fast/adaptive mode (median)."),
    chunk_rows: int = typer.Option(None, "--chunk-rows", min=1,
                                   show_default="as many as fit in 60% of free memory",
                                   help="Rows (puzzles x rollouts) in flight."),
    compile: bool = typer.Option(None, "--compile/--no-compile", show_default="on CUDA",
                                 help="torch.compile the fast engine."),
    compile_mode: str = typer.Option("default", "--compile-mode",
                                     help="default | max-autotune-no-cudagraphs."),
    deterministic: bool = typer.Option(True, "--deterministic/--no-deterministic",
                                       help="Inductor's deterministic mode (no kernel "
                                            "choices by timing: the same kernels on every "
                                            "GPU)."),
    exact: bool = typer.Option(True, "--exact/--no-exact",
                               help="Sum RMSNorm's squares in a fixed order, so the compiled "
                                    "engine gives the eager loop's results bit for bit on a "
                                    "GPU (fast vs eager: 100% identical rollouts on an H100, "
                                    "0.5% slower than a reduction, which gave 68%; "
                                    "docs/PERFORMANCE.md). --no-exact: the reduction's order."),
    check_every: int = typer.Option(4, "--check-every", min=1,
                                    help="Adaptive: steps between checks."),
    wave: int = typer.Option(None, "--wave", min=1, show_default="K",
                             help="Adaptive: rollouts per wave."),
    q_threshold: float = typer.Option(0.9, "--q-threshold",
                                      help="Adaptive: stop when sigmoid(Q) exceeds this "
                                           "(a value above 1 turns the Q rule off)."),
    rules: bool = typer.Option(True, "--rules/--no-rules",
                               help="Adaptive: stop when a rollout satisfies the rules."),
    peak_size: int = typer.Option(None, "--peak-size", min=64,
                                  show_default="8192 on GPU, 1024 on CPU",
                                  help="Matrix size of the peak measurement."),
    out: str = typer.Option(None, "--out", "-o", help="Write the full report (JSON) here."),
    gpus: int = typer.Option(None, "--gpus", min=1,
                             help="Run on N GPUs of this machine (re-launches under torchrun; "
                                  "with --device cpu, N CPU processes); adds the scaling "
                                  "measurement."),
    threads: int = threads_option("torch's: one a core"),
    as_json: bool = JSON,
):
    """Benchmark PTRM: eager vs fast vs adaptive, against this card's measured matmul peak.

    Modes are described in docs/PERFORMANCE.md (and `python -m ptrm_cli.benchmark --help`).

    Examples:

        ptrm bench --K 100 --D 48 --out bench.json
        ptrm bench --model tiny --K 8 --D 4 --device cpu
        ptrm bench -c CKPT --split val --data data/ppbench --modes curve
        ptrm bench --gpus 4 --modes fast
    """
    from ..engine import distributed
    from .. import benchmark  # torch loads here, not when `ptrm --help` starts

    check_perturb(perturb)
    set_threads(threads)  # CPU timings swung 100x with 2 threads on a busy 2-core machine
    opts = benchmark.BenchOptions(
        checkpoint=checkpoint, model=model, K=K, D=D, sigma=sigma, perturb=perturb,
        puzzles=puzzles, split=split, data=data, types=type_list(types),
        modes=[m.strip() for m in modes.split(",") if m.strip()], device=device, seed=seed,
        repeats=repeats, chunk_rows=chunk_rows, compile=compile, compile_mode=compile_mode,
        deterministic=deterministic, exact=exact, check_every=check_every, wave=wave,
        q_threshold=q_threshold, rules=rules, peak_size=peak_size, out=out)
    benchmark.check(opts)  # before a relaunch: else each rank would say it
    if gpus and gpus > 1 and not distributed.launched():
        distributed.check_gpus(gpus, device)
        raise typer.Exit(distributed.relaunch(gpus))
    status = benchmark.run_and_show(opts, as_json)  # its checks name the option: exit 2
    if status == 130:
        raise KeyboardInterrupt  # the app says "interrupted" and exits 130
    if status:
        raise typer.Exit(status)
