#!/usr/bin/env python3
"""Time TRM training steps: the real update of ptrm's trainer (supervision step, stablemax +
Q-halt loss, backward, AdamATan2, sign-SGD on the puzzle prefix, EMA, ACT bookkeeping, the
batch copy) on synthetic data, with and without torch.compile.

Default: TRM-Att 7M as in the PPBench recipe - D=512, 8 heads, h=2, T=3, n=6, 16 prefix slots,
100-token sequences (S=116), V=294, bf16 forward on CUDA - at global batch 768.

    python scripts/bench_train.py                                   # 1 GPU (or CPU)
    torchrun --standalone --nproc-per-node 4 scripts/bench_train.py # 4 GPUs, batch split 4 ways

Prints seconds per update, updates/s, examples/s, achieved TFLOP/s (analytic matmul FLOPs:
forward T(n+1) network applications + heads, backward ~2x the n+1 applications that carry
gradient, TRM_REFERENCE.md §8.2; whole global batch, all GPUs together) and peak memory.
Only rank 0 prints. `--json FILE` also writes the numbers. `--profile N` then profiles N more
updates (torch.profiler): kernel time per update by kind (matmul, attention, compiled
elementwise, optimizer foreach, communication, other), kernels launched per update, and how
much of the timed update the GPU was busy - a low share means the update waits on launches.
"""

from __future__ import annotations

import argparse
import gc
import gzip
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
import torch.distributed as dist

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ptrm_cli.bench_modes import profile_kernels  # noqa: E402
from ptrm_cli.engine.data import Dataset, Split  # noqa: E402
from ptrm_cli.engine.model import count_parameters  # noqa: E402
from ptrm_cli.engine.train import load_config, training_flops  # noqa: E402
from ptrm_cli.engine.train_dist import DIST_ENV, setup_distributed  # noqa: E402
from ptrm_cli.engine.train_loop import Trainer  # noqa: E402
from ptrm_cli.vocab import Vocab  # noqa: E402


def synthetic(seq_len: int, vocab: int, rows: int, seed: int = 0) -> Dataset:
    """Random tokens. Labels are random too, so nothing is ever right and no slot halts
    before N_sup: the cost per update does not depend on that anyway."""
    rng = np.random.default_rng(seed)
    split = Split(inputs=rng.integers(1, vocab, (rows, seq_len)).astype(np.uint16),
                  labels=rng.integers(1, vocab, (rows, seq_len)).astype(np.uint16),
                  type=np.zeros(rows, np.uint8), puzzle=np.arange(rows, dtype=np.int32),
                  transform=np.zeros(rows, np.uint8), puzzle_id=np.zeros(rows, np.int32))
    v = Vocab("synthetic", ("pad",) + tuple(f"t{i}" for i in range(1, vocab)))
    meta = {"format": "ptrm-dataset/1", "seq_len": seq_len, "types": ["synthetic"],
            "num_puzzle_ids": 1}
    return Dataset(Path("<synthetic>"), meta, v, {"train": split})


def bench(args, compile_: bool, dist_info, run_dir: str) -> dict:
    device = dist_info.device
    cuda = device.type == "cuda"
    model = dict(hidden_size=args.hidden, num_heads=args.heads, L_layers=args.layers,
                 H_cycles=args.T, L_cycles=args.n, puzzle_emb_ndim=args.hidden,
                 puzzle_emb_len=args.prefix, mlp_t=args.mlp_t,
                 pos_encodings="none" if args.mlp_t else "rope",
                 forward_dtype="bfloat16" if cuda or args.bf16 else "float32")
    doc = {"run_dir": run_dir, "device": str(device), "data": {"path": "", "val_split": None},
           "model": model,
           "train": {"global_batch_size": args.batch, "max_steps": 10**9,
                     "compile": compile_, "compile_mode": args.compile_mode},
           "checkpoint": {"every_steps": None}, "log": {"progress": "none"}}
    cfg = load_config(None, base=doc)
    ds = synthetic(args.seq, args.vocab, rows=max(4 * args.batch, 1024))
    tr = Trainer(cfg, dataset=ds, dist_info=dist_info)

    def sync():
        if cuda:
            torch.cuda.synchronize(device)
        if dist_info.on:
            dist.barrier()

    if cuda:
        torch.cuda.reset_peak_memory_stats(device)
    sync()
    t0 = time.perf_counter()
    for _ in range(args.warmup):
        tr.train_step()
    sync()
    warm = time.perf_counter() - t0
    times, host = [], []
    t0 = time.perf_counter()
    for _ in range(args.steps):
        a = time.perf_counter()
        tr.train_step()
        if args.per_step:
            host.append(time.perf_counter() - a)  # launching it, from an idle GPU
            sync()
            times.append(time.perf_counter() - a)
    sync()
    total = time.perf_counter() - t0
    m = tr.read_train_metrics()  # also proves the metrics path works
    per_step = total / args.steps
    flops = training_flops(tr.model_cfg) * tr.G
    peak = torch.cuda.max_memory_allocated(device) / 2**30 if cuda else None  # CPU: not tracked
    if dist_info.on and peak is not None:
        t = torch.tensor([peak], device=device, dtype=torch.float64)
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        peak = t.item()
    out = {"compile": compile_, "compile_mode": args.compile_mode, "device": str(device),
           "gpu": torch.cuda.get_device_name(device) if cuda else "cpu",
           "world_size": dist_info.world, "global_batch": tr.G, "seq_len": args.seq,
           "S": tr.model_cfg.total_len, "T": args.T, "n": args.n,
           "parameters": count_parameters(tr.model),
           "warmup_steps": args.warmup, "warmup_s": warm, "steps": args.steps,
           "s_per_step": per_step, "steps_per_s": 1 / per_step,
           "examples_per_s": tr.G / per_step,
           "flops_per_step": flops, "tflops_per_s": flops / per_step / 1e12,
           "tflops_per_s_per_gpu": flops / per_step / 1e12 / dist_info.world,
           "peak_mem_gib": peak, "loss": m["loss"]}
    if times:
        # host time near the update's: the CPU, not the GPU, sets the pace
        out["s_per_step_median"] = float(np.median(times))
        out["host_s_per_step_median"] = float(np.median(host))
    if args.profile:
        out["profile"] = profile_updates(tr, args.profile, device, per_step)
    if args.host_waits:
        out["host_waits"] = host_waits(tr, args.host_waits, device, args.trace)
    if args.gaps:
        mine = idle_gaps(tr, args.gaps, device)
        every = [None] * dist_info.world
        if dist_info.on:
            dist.all_gather_object(every, mine)
        else:
            every = [mine]
        out["gaps"] = every  # one entry per rank
    del tr
    gc.collect()
    if cuda:
        torch.cuda.empty_cache()
    return out


def profile_updates(tr: Trainer, n: int, device: torch.device, s_per_step: float) -> dict:
    """Kernel time of n updates (after the timed ones: compiled and warm), per update."""
    prof = profile_kernels(lambda: [tr.train_step() for _ in range(n)], device,
                           f"{n} training updates")
    busy = prof["device_time_us"] / 1e6 / n
    return {"updates": n, "kernel_s_per_update": busy, "kernels_per_update": prof["kernels"] / n,
            "busy_share_of_timed_update": busy / s_per_step, "shares": prof["shares"],
            "top": prof["top"][:15]}


def idle_gaps(tr: Trainer, n: int, device: torch.device) -> dict:
    """Where the device waits during n more updates: its idle time (no kernel running on any
    stream) and the largest gaps, each with the kernels before and after it. On a CPU the
    same over the top-level ops (a check of the script, not a measurement)."""
    from torch.profiler import profile

    cuda = device.type == "cuda"
    acts = _host_ahead(tr, device)
    with profile(activities=acts) as prof:
        for _ in range(n):
            tr.train_step()
        if cuda:
            torch.cuda.synchronize(device)
    spans = []
    for ev in prof.events():
        on_device = getattr(ev, "device_type", None) == torch.autograd.DeviceType.CUDA
        if (on_device and not getattr(ev, "is_user_annotation", False)) if cuda else (
                ev.cpu_parent is None and ev.name.startswith("aten::")):
            spans.append((ev.time_range.start, ev.time_range.end, ev.name))
    if not spans:
        return {"updates": n, "idle_ms_per_update": None, "largest": []}
    spans.sort()
    gaps, end, before = [], spans[0][1], spans[0][2]
    for start, stop, name in spans[1:]:
        if start > end:
            gaps.append((start - end, before, name))
        if stop > end:
            end, before = stop, name
    gaps.sort(key=lambda g: -g[0])
    return {"updates": n, "span_ms_per_update": (end - spans[0][0]) / 1e3 / n,
            "idle_ms_per_update": sum(g[0] for g in gaps) / 1e3 / n,
            "largest": [{"us": g[0], "after": g[1][:80], "before": g[2][:80]}
                        for g in gaps[:12]]}


def _host_ahead(tr: Trainer, device: torch.device) -> list:
    """Get the host ahead of the device, as it is in a long run, before a profile starts (and
    return the profiler activities for it): after a sync the device waits on the first
    update's eager part (the batch's copies, the embedding), and those gaps (session 19's "2 ms
    an update") would be counted as if every update had them. A process's first profiler
    session also starts CUPTI, which stalls the host: it is spent here, on one update."""
    from torch.profiler import ProfilerActivity, profile

    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
    with profile(activities=acts):
        tr.train_step()
    for _ in range(2):
        tr.train_step()
    return acts


def host_waits(tr: Trainer, n: int, device: torch.device, trace: str | None) -> dict:
    """Where the host is held back during n more updates: every CUDA runtime call that took
    over 50 us on the host (a stream or event sync, a blocking copy, a pinned allocation, a
    launch into a full queue), grouped by call and by the Python line it came from; and every
    synchronizing op that torch's sync debug mode reports. `trace`: also write the profile as
    a gzipped Chrome trace there (chrome://tracing, ui.perfetto.dev). On a GPU the profiler
    links runtime calls to their ops but not to Python lines ("@ outside our code")."""
    import traceback
    import warnings

    from torch.profiler import profile

    cuda = device.type == "cuda"
    acts = _host_ahead(tr, device)
    syncs: dict[str, int] = {}

    def note(message, category, filename, lineno, file=None, line=None):
        if "called a synchronizing" not in str(message):  # not the mode's own notice
            return
        here = [f for f in traceback.extract_stack()[:-1] if "warnings" not in f.filename]
        ours = [f for f in here if "ptrm_cli" in f.filename or "bench_train" in f.filename]
        f = (ours or here)[-1]
        key = f"{str(message)[:60]} at {Path(f.filename).name}:{f.lineno} ({f.line})"
        syncs[key] = syncs.get(key, 0) + 1

    with warnings.catch_warnings():  # restores showwarning too
        warnings.simplefilter("always")
        warnings.showwarning = note
        if cuda:
            torch.cuda.set_sync_debug_mode("warn")
        try:
            with profile(activities=acts, with_stack=True) as prof:
                for _ in range(n):
                    tr.train_step()
                if cuda:
                    torch.cuda.synchronize(device)
        finally:
            if cuda:
                torch.cuda.set_sync_debug_mode(0)
    waits: dict[str, list[float]] = {}
    for ev in prof.events():
        dur = ev.time_range.end - ev.time_range.start
        runtime = ev.name.startswith("cuda") and getattr(
            ev, "device_type", None) != torch.autograd.DeviceType.CUDA
        if not (runtime if cuda else _top_aten(ev)) or dur < 50:
            continue
        key = f"{ev.name} in {_where(ev)}"
        waits.setdefault(key, []).append(dur)
    rows = sorted(({"call": k, "count": len(v), "us_per_update": sum(v) / n,
                    "max_us": max(v)} for k, v in waits.items()),
                  key=lambda r: -r["us_per_update"])
    if trace:
        _write_trace(prof, trace)
    return {"updates": n, "waits": rows[:20],
            "syncs": [{"op": k, "per_update": v / n} for k, v in
                      sorted(syncs.items(), key=lambda kv: -kv[1])]}


def _write_trace(prof, trace: str) -> None:
    """The profile as a gzipped Chrome trace at `trace` (FILE.json.gz; each rank of several
    processes writes FILE.rankN.json.gz)."""
    if dist.is_initialized() and dist.get_world_size() > 1:
        trace = f"{trace[:-len('.json.gz')]}.rank{dist.get_rank()}.json.gz"
    raw = Path(trace + ".tmp")
    prof.export_chrome_trace(str(raw))
    with open(raw, "rb") as src, gzip.open(trace, "wb") as dst:
        shutil.copyfileobj(src, dst)
    raw.unlink()


def _top_aten(ev) -> bool:
    """An aten op not inside another (on a CPU, the stand-in for a runtime call)."""
    if not ev.name.startswith("aten::"):
        return False
    e = ev.cpu_parent
    while e is not None:
        if e.name.startswith("aten::"):
            return False
        e = e.cpu_parent
    return True


def _where(ev) -> str:
    """The op a runtime call ran under and the innermost line of ours that called it (the
    profiler's Python-function events are named 'path(line): function')."""
    op, frame = None, None
    e = ev.cpu_parent
    while e is not None and frame is None:
        if op is None and e.name.startswith(("aten::", "autograd::", "Optimizer", "Torch-")):
            op = e.name
        if "ptrm_cli" in e.name or "bench_train" in e.name:
            frame = e.name.split("/ptrm_cli/")[-1]
        e = e.cpu_parent
    return f"{op or '-'} @ {frame or 'outside our code'}"


def print_waits(w: dict) -> None:
    print(f"  host waits over {w['updates']} updates (runtime calls >= 50 us, per update):")
    for r in w["waits"][:12]:
        print(f"    {r['us_per_update']:8.0f} us {r['count']:4d}x (max {r['max_us']:.0f}) "
              f"{r['call'][:110]}")
    for s in w["syncs"][:8]:
        print(f"    sync {s['per_update']:.1f}x per update: {s['op'][:120]}")
    if not w["syncs"]:
        print("    torch's sync debug mode saw no synchronizing op")


def print_gaps(rank: int, g: dict) -> None:
    if g["idle_ms_per_update"] is None:
        print(f"  rank {rank}: no kernels seen")
        return
    print(f"  rank {rank}: idle {g['idle_ms_per_update']:.2f} ms of "
          f"{g['span_ms_per_update']:.2f} ms per update; largest gaps:")
    for x in g["largest"][:8]:
        print(f"    {x['us'] / 1e3:7.3f} ms after {x['after'][:50]!r} before {x['before'][:50]!r}")


def _gib(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.2f} GiB"


def print_profile(pr: dict) -> None:
    shares = ", ".join(f"{k} {100 * v:.0f}%" for k, v in
                       sorted(pr["shares"].items(), key=lambda kv: -kv[1]))
    print(f"  profile of {pr['updates']} updates: {1e3 * pr['kernel_s_per_update']:.1f} ms of "
          f"kernels per update ({100 * pr['busy_share_of_timed_update']:.0f}% of the timed "
          f"update), {pr['kernels_per_update']:.0f} kernels per update; {shares}")
    for k in pr["top"][:8]:
        print(f"    {k['time_us'] / 1e3 / pr['updates']:8.2f} ms {k['calls'] // pr['updates']:5d}x "
              f"{k['kind']:<20} {k['name'][:70]}")


def count(least: int):
    """argparse type: a whole number >= least (a clear usage error, not a nonsense result)."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if value < least:
            raise argparse.ArgumentTypeError(f"{value} is below {least}")
        return value
    return parse


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--steps", type=count(1), default=30, help="timed updates")
    p.add_argument("--warmup", type=count(0), default=8,
                   help="untimed updates first (compilation)")
    p.add_argument("--compile", choices=("off", "on", "both"), default="both")
    p.add_argument("--compile-mode", default=None,
                   help="torch.compile mode, e.g. max-autotune-no-cudagraphs")
    p.add_argument("--batch", type=count(1), default=768, help="global batch (all GPUs)")
    p.add_argument("--seq", type=int, default=100)
    p.add_argument("--vocab", type=int, default=294)
    p.add_argument("--hidden", type=int, default=512)
    p.add_argument("--heads", type=int, default=8)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--T", type=int, default=3)
    p.add_argument("--n", type=int, default=6)
    p.add_argument("--prefix", type=int, default=16)
    p.add_argument("--mlp-t", action="store_true", help="TRM-MLP instead of TRM-Att")
    p.add_argument("--bf16", action="store_true", help="bf16 forward on CPU too")
    p.add_argument("--device", default="auto")
    p.add_argument("--per-step", action="store_true",
                   help="also sync after every update and report the median, and the median time "
                        "train_step took to return (the host's share: launches, Python)")
    p.add_argument("--profile", type=count(0), default=0, metavar="N",
                   help="then profile N more updates: kernel time by kind, launches per update")
    p.add_argument("--gaps", type=count(0), default=0, metavar="N",
                   help="then profile N more updates on every rank: the device's idle time "
                        "and its largest gaps, with the kernels around them")
    p.add_argument("--host-waits", type=count(0), default=0, metavar="N",
                   help="then profile N more updates on the host: CUDA runtime calls that held "
                        "it back, and synchronizing ops (rank 0 prints its own)")
    p.add_argument("--trace", default=None, metavar="FILE.json.gz",
                   help="with --host-waits: also write those updates' Chrome trace there")
    p.add_argument("--tiny", action="store_true", help="a tiny model (checks the script on CPU)")
    p.add_argument("--json", default=None, help="write the results here (rank 0)")
    args = p.parse_args()
    if args.trace and not args.host_waits:
        p.error("--trace writes the updates --host-waits N profiles: give both")
    if args.trace and not args.trace.endswith(".json.gz"):
        p.error(f"--trace {args.trace}: the file name must end in .json.gz")
    if args.tiny:
        args.hidden, args.heads, args.layers, args.T, args.n = 32, 2, 1, 2, 1
        args.batch, args.seq, args.vocab, args.prefix = 16, 16, 12, 1
        args.steps, args.warmup = min(args.steps, 3), min(args.warmup, 1)
    for k, v in DIST_ENV.items():
        os.environ.setdefault(k, v)
    dist_info = setup_distributed(args.device)
    if dist_info.device.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
    modes = {"off": [False], "on": [True], "both": [False, True]}[args.compile]
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for c in modes:
            r = bench(args, c, dist_info, str(Path(tmp) / f"run{int(c)}"))
            results.append(r)
            if dist_info.main:
                print(f"[{r['gpu']} x{r['world_size']}] compile={'on ' if c else 'off'} "
                      f"batch {r['global_batch']} S={r['S']} T={r['T']} n={r['n']}: "
                      f"{r['s_per_step']:.4f} s/step ({r['steps_per_s']:.2f} steps/s, "
                      f"{r['examples_per_s']:.0f} examples/s), "
                      f"{r['tflops_per_s']:.1f} TFLOP/s ({r['tflops_per_s_per_gpu']:.1f}/GPU), "
                      f"peak {_gib(r['peak_mem_gib'])}/GPU, warm-up {r['warmup_s']:.1f} s",
                      flush=True)
                if "host_s_per_step_median" in r:
                    print(f"  per update, synced: median {r['s_per_step_median']:.4f} s, of "
                          f"which the host took {r['host_s_per_step_median']:.4f} s to launch it")
                if "profile" in r:
                    print_profile(r["profile"])
                if "host_waits" in r:
                    print_waits(r["host_waits"])
                for rank, g in enumerate(r.get("gaps", [])):
                    print_gaps(rank, g)
    if dist_info.main and args.json:
        Path(args.json).write_text(json.dumps(results, indent=1) + "\n")
    if dist_info.on:
        dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
