"""The timed modes of `ptrm bench` and how their results compare: the matmul peak every share
is divided by, the fast / adaptive / eager runs, the profile of one step, the scaling over
several GPUs, and the agreement between the modes' rollouts.

Every mode gets the same `Bench` (the model, the puzzles, the rows in flight, the peak) and
returns its row of the report. The `Bench` also keeps what the modes leave behind: their
results, because the agreement is computed once all modes have run, and the fast engine,
because adaptive, profile, scaling and the curve reuse it (compiled once).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np
import torch

from .bench_report import launched
from .bench_setup import BenchOptions, Puzzles, log

FAST_MODES = ("fast", "fast-autotune", "fast-step")


# -- timing -----------------------------------------------------------------------------------

def _sync(device: torch.device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _reset_peak(device):
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)


def _peak_mem(device) -> int | None:
    if device.type == "cuda":
        return int(torch.cuda.max_memory_allocated(device))
    return None


def median_ms(fn, repeats: int, device: torch.device | str = "cuda", warmup: int = 3) -> float:
    """Median milliseconds of `fn()` over `repeats` calls after `warmup` untimed ones: CUDA
    events around each call on a GPU (the work is asynchronous), the host clock elsewhere.
    (Also the timer of scripts/fp8_gemm.py and scripts/swiglu_gemm.py.)"""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        if torch.device(device).type == "cuda":
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            fn()
            e.record()
            e.synchronize()
            times.append(s.elapsed_time(e))
        else:
            t0 = time.perf_counter()
            fn()
            times.append((time.perf_counter() - t0) * 1e3)
    return float(np.median(times))


def matmul_peak(device: torch.device, n: int | None = None, repeats: int = 20) -> dict:
    """Measured bf16 matmul rate (TFLOP/s): random data, warm-up, median of timed repeats."""
    if n is None:
        n = 8192 if device.type == "cuda" else 1024
    if device.type != "cuda":
        repeats = min(repeats, 5)
    g = torch.Generator(device=device).manual_seed(0)
    a = torch.randn(n, n, device=device, dtype=torch.bfloat16, generator=g)
    b = torch.randn(n, n, device=device, dtype=torch.bfloat16, generator=g)
    t = median_ms(lambda: a @ b, repeats, device) / 1e3
    return {"n": n, "dtype": "bfloat16", "median_s": t, "tflops": 2 * n ** 3 / t / 1e12,
            "repeats": repeats}


# -- what every mode shares -------------------------------------------------------------------

@dataclass
class Bench:
    """One benchmark's fixed inputs, and the engines and runs its modes leave behind."""
    o: BenchOptions
    device: torch.device
    world: int                          # processes launched (GPUs)
    loaded: object                      # solver.LoadedModel
    pz: Puzzles
    capacity: int                       # rows in flight
    fps: float                          # FLOPs of one rollout's supervision step
    peak: dict                          # matmul_peak()
    verify: object = None               # (puzzle, preds) -> bool, when the rules are used
    engines: dict = field(default_factory=dict)   # mode -> fast.Engine
    runs: dict = field(default_factory=dict)      # mode -> its (last) timed result

    @property
    def P(self) -> int:
        return self.pz.inputs.shape[0]

    @property
    def fixed_flops(self) -> float:
        return self.P * self.o.K * self.o.D * self.fps

    def engine(self, mode_name):
        """A new fast engine with the options of `mode_name` (fast, fast-autotune, fast-step)."""
        from .engine import fast

        o = self.o
        opts = dict(compile=o.compile, mode=o.compile_mode, deterministic=o.deterministic)
        if mode_name == "fast-autotune":
            opts.update(mode="max-autotune-no-cudagraphs", deterministic=False, split=True)
        if mode_name == "fast-step":
            opts.update(scope="step")
        return fast.Engine(self.loaded.model, **opts)

    def fast_engine(self):
        """The fast mode's engine, built here if the fast mode did not run (yet)."""
        return self.engines.get("fast") or self.engines.setdefault("fast", self.engine("fast"))

    def fast_run(self, eng, D_run, participants=None, K_run=None, **kw):
        """eng on every puzzle (sharded over the launched processes), K_run x D_run."""
        from .engine import distributed

        o = self.o
        return distributed.run(eng, self.pz.inputs, K=K_run or o.K, D=D_run, sigma=o.sigma,
                               perturb=o.perturb, seed=o.seed, puzzle_ids=self.pz.puzzle_ids,
                               capacity=self.capacity, participants=participants, **kw)

    def timed(self, fn):
        """(fn(), seconds, peak device memory): every process starts and ends together."""
        from .engine import distributed

        device = self.device
        distributed.barrier()
        _sync(device)
        _reset_peak(device)
        t0 = time.perf_counter()
        res = fn()
        _sync(device)
        distributed.barrier()
        return res, time.perf_counter() - t0, _peak_mem(device)


def entry(name: str, t: float, flops: float, P: int, peak: dict, mem, gpus: int = 1,
          **extra) -> dict:
    """One mode's row; `share_of_peak` is of all `gpus` cards' peak (the run is sharded)."""
    tf = flops / t / 1e12 if t > 0 else math.nan
    return {"mode": name, "time_s": t, "ms_per_puzzle": 1e3 * t / P, "flops": flops,
            "flops_per_puzzle": flops / P, "tflops": tf, "gpus": gpus,
            "share_of_peak": tf / (peak["tflops"] * gpus), "peak_mem_bytes": mem, **extra}


def accuracy(preds_answer: torch.Tensor, pz: Puzzles) -> dict:
    from .engine.metrics import correct

    out = {}
    if pz.labels is not None:
        out["acc_label"] = float(correct(preds_answer, pz.labels).float().mean())
    if pz.verifiers is not None:  # the judgment eval's tables lead with (cached verdicts)
        answers = preds_answer.cpu()
        out["acc_rules"] = sum(bool(v.valid(a[None])[0])
                               for v, a in zip(pz.verifiers, answers)) / len(answers)
    return out


# -- the modes --------------------------------------------------------------------------------

def fast_mode(b: Bench, mode: str) -> dict:
    """fast, fast-autotune or fast-step: a fresh engine, compiled by a D=2 warm-up run (timed
    apart), then --repeats timed fixed runs (median)."""
    log(f"{mode}: building and compiling (warm-up run, D=2)")
    eng = b.engines[mode] = b.engine(mode)
    _, t_warm, _ = b.timed(lambda: b.fast_run(eng, 2))
    times, res, mem = [], None, None
    for i in range(b.o.repeats):
        log(f"{mode}: timed run {i + 1}/{b.o.repeats}")
        res, t, mem = b.timed(lambda: b.fast_run(eng, b.o.D))
        times.append(t)
    t = float(np.median(times))
    b.runs[mode] = res
    return entry(mode, t, res.flops, b.P, b.peak, mem, b.world, warmup_compile_s=t_warm,
                 times_s=times, compiled=eng.compiled, compile_error=eng.compile_error,
                 norm_kernel=eng.norm_kernel,
                 compile_mode=eng.mode if eng.compile else None, **accuracy(res.answer, b.pz))


def adaptive_mode(b: Bench) -> dict:
    """The fast engine stopping puzzles early (rules, Q threshold); FLOPs as computed."""
    o = b.o
    eng = b.fast_engine()
    kw = dict(check_every=o.check_every, wave=o.wave, q_threshold=o.q_threshold,
              verify=b.verify)
    log(f"adaptive: warm-up (D=2); rules={'on' if b.verify else 'off'} "
        f"q_threshold={o.q_threshold} check_every={o.check_every} "
        f"wave={o.wave or o.K}")
    _, t_warm, _ = b.timed(lambda: b.fast_run(eng, 2, **kw))
    times = []
    for i in range(o.repeats):
        log(f"adaptive: timed run {i + 1}/{o.repeats}")
        res, t, mem = b.timed(lambda: b.fast_run(eng, o.D, **kw))
        times.append(t)
    t = float(np.median(times))
    b.runs["adaptive"] = res
    return entry("adaptive", t, res.flops, b.P, b.peak, mem, b.world, warmup_compile_s=t_warm,
                 times_s=times, compute_vs_fixed=res.flops / b.fixed_flops,
                 stopped_frac=float(res.stopped.float().mean()),
                 syncs=_stat(res, "syncs"), **accuracy(res.answer, b.pz))


def _stat(res, key):
    s = res.stats
    if "per_rank" in s:
        return [r.get(key) for r in s["per_rank"]]
    return s.get(key)


def eager_mode(b: Bench) -> dict:
    """The reference loop (sampler.sample(fast=False)) the speed-ups are measured against."""
    from .engine import distributed
    from .engine.sampler import SamplerConfig

    o, pz, P = b.o, b.pz, b.P
    scfg = SamplerConfig(K=o.K, D=o.D, sigma=o.sigma, perturb=o.perturb, chunk_rows=b.capacity)
    log("eager: warm-up (D=1)")
    _, t_warm, _ = b.timed(lambda: distributed.sample(
        b.loaded.model, pz.inputs, SamplerConfig(K=o.K, D=1, sigma=o.sigma,
                                                 perturb=o.perturb, chunk_rows=b.capacity),
        seed=o.seed, puzzle_ids=pz.puzzle_ids, fast=False))
    log("eager: timed run")
    res, t, mem = b.timed(lambda: distributed.sample(
        b.loaded.model, pz.inputs, scfg, seed=o.seed, puzzle_ids=pz.puzzle_ids,
        fast=False))
    b.runs["eager"] = res
    best = res.q.argmax(-1)
    return entry("eager", t, b.fixed_flops, P, b.peak, mem, b.world, warmup_compile_s=t_warm,
                 **accuracy(res.preds[torch.arange(P), best], pz))


# -- profile: where the gap to the matmul peak is ------------------------------------------------

# First match wins, so the order matters: Inductor names a kernel after every op it fused
# ("triton_poi_fused__scaled_dot_product_cudnn_attention_..._cat_mul_neg" is RoPE's
# elementwise work), and cuDNN's flash attention kernels carry "sm90_" like the GEMMs
# (both misfiled on the H100s until 2026-11-27)
KERNEL_KINDS = (("matmul", ("triton_tem",)),     # Inductor's GEMM templates (max-autotune)
                # training only: the optimizer's and EMA's multi-tensor kernels (eager, or
                # Inductor's "triton_for" ones), DDP's all-reduce
                ("optimizer (foreach)", ("multi_tensor", "foreach", "triton_for")),
                # our fixed-order add + RMSNorm (engine/norm_kernel.py) is elementwise work too
                ("compiled elementwise", ("triton", "cpp_fused", "kernel_cpp", "add_rms_norm")),
                ("attention", ("flash", "fmha", "attention", "sdpa")),
                ("matmul", ("gemm", "cutlass", "xmma", "nvjet", "cublas", "sm90_", "sm80_",
                            "addmm", "aten::mm", "aten::bmm", "aten::linear")),
                ("communication", ("nccl",)))


def _kind(name: str) -> str:
    low = name.lower()
    for kind, keys in KERNEL_KINDS:
        if any(k in low for k in keys):
            return kind
    return "other"


def profile_mode(b: Bench) -> dict:
    """One supervision step of every rollout on the (compiled, warm) fast engine."""
    eng = b.fast_engine()
    b.timed(lambda: b.fast_run(eng, 2))  # compiled and warm
    return profile_kernels(lambda: b.fast_run(eng, 1), b.device,
                           "one supervision step of every rollout (fast engine)")


def profile_kernels(fn, device: torch.device, what: str) -> dict:
    """Device time by kernel for one call of fn (on a CPU: the time of its aten ops and
    compiled kernels), grouped by KERNEL_KINDS; `what` says what fn ran. Also used by
    scripts/bench_train.py for training updates."""
    from torch.profiler import ProfilerActivity, profile

    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
    with profile(activities=acts) as prof:
        fn()
        _sync(device)
    rows = []
    for ev in prof.key_averages():
        t = _kernel_time(ev) if device.type == "cuda" else _cpu_op_time(ev)
        if t and t > 0:
            rows.append({"name": ev.key, "time_us": float(t), "calls": int(ev.count),
                         "kind": _kind(ev.key)})
    rows.sort(key=lambda r: -r["time_us"])
    total = sum(r["time_us"] for r in rows) or 1.0
    shares = {}
    for r in rows:
        shares[r["kind"]] = shares.get(r["kind"], 0.0) + r["time_us"] / total
    return {"mode": "profile", "what": what, "device_time_us": total,
            "kernels": sum(r["calls"] for r in rows), "shares": shares, "top": rows[:25]}


def _kernel_time(ev) -> float | None:
    """A profiler event's own device time if it is a kernel, else None. CPU-side ops and
    compiled-region markers would count their kernels a second time, and so would a range
    drawn on the GPU's timeline (a user annotation: DDP's `DistributedDataParallel.forward`
    spans the whole forward, and was 38% of a 4-GPU training update's "kernel time")."""
    kind = getattr(ev, "device_type", None)
    if kind is not None and kind != torch.autograd.DeviceType.CUDA:
        return None
    if getattr(ev, "is_user_annotation", False):
        return None
    if kind is None and ev.key.startswith(("aten::", "cuda", "Torch-Compiled", "##")):
        return None
    t = getattr(ev, "self_device_time_total", None)
    return getattr(ev, "self_cuda_time_total", 0) if t is None else t


def _cpu_op_time(ev) -> float | None:
    """A profiler event's own CPU time if it is an op that computes (not a view or an
    allocation), else None."""
    if not ev.key.startswith(("aten::", "cpp_fused", "kernel_cpp")) or \
            ev.key in ("aten::empty", "aten::empty_strided", "aten::as_strided", "aten::view",
                       "aten::slice", "aten::select", "aten::t", "aten::transpose",
                       "aten::reshape", "aten::expand"):
        return None
    return ev.self_cpu_time_total


# -- scaling over the launched GPUs ---------------------------------------------------------------

def scaling(b: Bench) -> dict:
    """The fast fixed run on 1, 2, 4, ... of the launched GPUs (or CPU processes), each
    compared with one."""
    def on(n: int) -> str:
        return launched(n, b.device.type == "cpu")

    eng = b.fast_engine()
    P, peak, fixed_flops = b.P, b.peak, b.fixed_flops
    ns = sorted({n for n in (1, 2, 4, 8) if n <= b.world} | {b.world})
    rows, ref = [], None
    for n in ns:
        log(f"scaling: {on(n)}: warm-up")
        b.timed(lambda: b.fast_run(eng, 2, participants=n))
        log(f"scaling: {on(n)}: timed run")
        res, t, mem = b.timed(lambda: b.fast_run(eng, b.o.D, participants=n))
        if ref is None:
            ref = res
        agree = agreement(res, ref)
        rows.append({"gpus": n, "time_s": t, "ms_per_puzzle": 1e3 * t / P,
                     "tflops": fixed_flops / t / 1e12,
                     "share_of_peak_per_gpu": fixed_flops / t / 1e12 / peak["tflops"] / n,
                     "efficiency": (rows[0]["time_s"] / (n * t)) if rows else 1.0,
                     "identical_to_1_gpu": agree["rollouts_identical"] == 1.0
                     and agree["q_identical"] == 1.0, "agreement_with_1_gpu": agree})
        log(f"scaling: {on(n)}: {1e3 * t / P:.1f} ms/puzzle, efficiency "
            f"{rows[-1]['efficiency']:.2f}, identical {rows[-1]['identical_to_1_gpu']}")
    return {"rows": rows}


# -- agreement between the modes ------------------------------------------------------------------

def agreement(a, b) -> dict:
    """How alike two runs' rollouts are: [P, K, L] preds and [P, K] q each (ran rollouts)."""
    P = a.preds.shape[0]
    ar = torch.arange(P)
    same = (a.preds == b.preds).all(-1)
    dq = (a.q - b.q).abs()
    ca, cb = a.q.argmax(-1), b.q.argmax(-1)
    ans = (a.preds[ar, ca] == b.preds[ar, cb]).all(-1)
    return {"rollouts_identical": float(same.float().mean()),
            "q_identical": float((dq == 0).float().mean()),
            "max_abs_dq": float(torch.nan_to_num(dq, nan=0.0).max()) if dq.numel() else 0.0,
            "best_q_rollout_same": float((ca == cb).float().mean()),
            "best_q_answer_same": float(ans.float().mean())}


def agreements(runs: dict) -> dict:
    """Every pair worth comparing among the modes that ran: each fast variant and adaptive vs
    eager, adaptive vs fixed on the puzzles it ran to the end, the fast variants vs fast."""
    out = {}
    fixed_ref = next((runs[m] for m in FAST_MODES if m in runs), None)
    for m in FAST_MODES:
        if m in runs and "eager" in runs:
            out[f"{m} vs eager"] = agreement(_ran(runs[m]), runs["eager"])
    if "adaptive" in runs:
        # only where it ran to the end: a puzzle stopped at step 2 has other rollouts than one
        # run to D (and waves never started), so over every puzzle "adaptive vs eager" said
        # "identical rollouts 25%, max |dQ| 4.08" of runs that agree bit for bit
        ad = runs["adaptive"]
        keep = ~ad.stopped
        if keep.any():
            sub = lambda r: type("R", (), {"preds": r.preds[keep], "q": r.q[keep]})  # noqa: E731
            if "eager" in runs:
                out["adaptive vs eager (puzzles it did not stop)"] = \
                    agreement(sub(ad), sub(runs["eager"]))
            if fixed_ref is not None:
                out["adaptive vs fixed (puzzles it did not stop)"] = \
                    agreement(sub(ad), sub(fixed_ref))
    for name in [m for m in ("fast-autotune", "fast-step") if m in runs]:
        if "fast" in runs:
            out[f"{name} vs fast"] = agreement(runs[name], runs["fast"])
    return out


def _ran(res):
    """A PoolResult with never-run rollouts (q nan) left as they are: all ran in fixed mode."""
    return res
