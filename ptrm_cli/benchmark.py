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

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import platform
import resource
import sys
import time
from dataclasses import asdict, dataclass, field

import numpy as np
import torch

MODES = ("eager", "fast", "fast-autotune", "fast-step", "adaptive", "curve", "profile")
FORMAT = "ptrm-bench/1"


@dataclass
class BenchOptions:
    checkpoint: str | None = None
    model: str = "7m"                  # without a checkpoint: 7m | tiny (random weights)
    K: int = 100
    D: int = 48
    sigma: float = 0.2
    puzzles: int = 61
    split: str = "auto"                # auto | golden | random | FILE.jsonl | DIR | NAME (+data)
    data: str | None = None
    modes: list[str] = field(default_factory=lambda: ["eager", "fast", "adaptive"])
    device: str = "auto"
    seed: int = 0
    repeats: int = 1
    chunk_rows: int | None = None
    compile: bool | None = None        # None: on CUDA
    compile_mode: str = "default"
    deterministic: bool = True
    check_every: int = 4
    wave: int | None = None
    q_threshold: float | None = 0.9
    rules: bool = True
    peak_size: int | None = None
    out: str | None = None


def _log(msg: str, t0=[None]):  # noqa: B006 - one start time per process
    from .engine import distributed

    if t0[0] is None:
        t0[0] = time.perf_counter()
    if distributed.is_main():
        print(f"[{time.perf_counter() - t0[0]:7.1f} s] {msg}", file=sys.stderr, flush=True)


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


# -- inputs ---------------------------------------------------------------------------------

def random_7m(vocab_size: int = 294, seq_len: int = 100, seed: int = 0):
    from .engine.model import TRM, TRMConfig

    torch.manual_seed(seed)
    return TRM(TRMConfig(vocab_size=vocab_size, seq_len=seq_len, hidden_size=512, num_heads=8,
                         L_layers=2, H_cycles=3, L_cycles=6, puzzle_emb_ndim=512,
                         puzzle_emb_len=16, halt_max_steps=16)).eval()


def random_tiny(vocab_size: int = 294, seq_len: int = 100, seed: int = 0):
    from .engine.model import TRM, TRMConfig

    torch.manual_seed(seed)
    m = TRM(TRMConfig(vocab_size=vocab_size, seq_len=seq_len, hidden_size=32, num_heads=2,
                      expansion=2.0, L_layers=1, H_cycles=2, L_cycles=2, puzzle_emb_ndim=0,
                      puzzle_emb_len=0, halt_max_steps=4))
    with torch.no_grad():  # Q values that differ, so selection is not all ties
        m.q_head.weight.normal_(0, 1.0)
        m.q_head.bias.zero_()
    return m.eval()


def _ppbench_vocab():
    try:
        from ptrm_codecs.families import PPBENCH

        return PPBENCH.vocab
    except Exception:  # noqa: BLE001 - codecs not installed: random inputs only
        return None


def load_model(o: BenchOptions, device: str):
    """(LoadedModel, description)."""
    from .solver import LoadedModel, load_model as load_ckpt

    if o.checkpoint:
        lm = load_ckpt(o.checkpoint, device)
        return lm, f"checkpoint {lm.path}"
    make = {"7m": random_7m, "tiny": random_tiny}[o.model]
    model = make(seed=o.seed).to(device)
    if hasattr(model, "rotary_emb"):
        model.rotary_emb.reset_tables(device)
    vocab = _ppbench_vocab()
    return LoadedModel(model, vocab, {}, f"random-{o.model}", device), \
        f"random TRM ({o.model}) with reference init"


@dataclass
class Puzzles:
    inputs: torch.Tensor
    labels: torch.Tensor | None
    verifiers: list | None
    puzzle_ids: torch.Tensor | None
    source: str
    types: list[str] | None = None


def load_puzzles(o: BenchOptions, loaded) -> Puzzles:
    """The benchmark's puzzles: a labelled split when asked (or, for auto, when the golden set,
    the codecs and a matching vocabulary are all here), else random tokens. With fewer puzzles
    in the split than --puzzles, the split is repeated (a benchmark needs the batch size)."""
    from .errors import PtrmError

    cfg = loaded.config
    ev = None
    if o.split != "random" and loaded.vocab is not None:
        from . import evaluate

        split = "golden" if o.split == "auto" else o.split
        try:
            ev = evaluate.resolve_split(split, o.data, loaded)
        except (PtrmError, OSError, ValueError, IndexError, KeyError) as e:
            if o.split == "auto":
                _log(f"no golden puzzles ({e}); using random inputs")
            else:
                arrays = _dataset_arrays(o, loaded)
                if arrays is None:
                    raise
                _log(f"no rules verifier for this data ({e}); judging by labels only")
                return arrays
    if ev is None:
        g = torch.Generator().manual_seed(o.seed)
        x = torch.randint(1, cfg.vocab_size, (o.puzzles, cfg.seq_len), generator=g)
        ids = None
        return Puzzles(x, None, None, ids, f"random tokens ({o.puzzles} puzzles)")
    n = len(ev)
    idx = torch.arange(o.puzzles) % n
    verifiers = [ev.verifiers[i] for i in idx.tolist()]
    ids = None if ev.puzzle_ids is None else ev.puzzle_ids[idx]
    rep = "" if o.puzzles <= n else f", repeated to {o.puzzles}"
    return Puzzles(ev.inputs[idx], ev.labels[idx], verifiers, ids,
                   f"{ev.name} ({min(n, o.puzzles)} puzzles{rep})",
                   [ev.types[i] for i in idx.tolist()])


def _dataset_arrays(o: BenchOptions, loaded) -> Puzzles | None:
    """A `ptrm build-data` split read as arrays (labels, no verifier): for data whose puzzle
    type has no codec for this model's family. None when --split/--data is not a dataset."""
    from pathlib import Path

    from .engine.data import load_dataset

    root = Path(o.data) if o.data else Path(o.split)
    if not (root / "meta.json").is_file():
        return None
    name = o.split if o.data else None
    ds = load_dataset(root)
    name = name or next((s for s in ("val", "test") if s in ds.splits), next(iter(ds.splits)))
    s = ds.splits[name]
    n = min(len(s), o.puzzles)
    ids = None
    if loaded.config.puzzle_emb_ndim > 0:
        ids = torch.as_tensor(np.asarray(s.puzzle_id[:n]).astype(np.int64))
    return Puzzles(torch.as_tensor(np.asarray(s.inputs[:n]).astype(np.int64)),
                   torch.as_tensor(np.asarray(s.labels[:n]).astype(np.int64)), None, ids,
                   f"{root}/{name} ({n} puzzles, labels only)")


# -- measurements -----------------------------------------------------------------------------

def matmul_peak(device: torch.device, n: int | None = None, repeats: int = 20) -> dict:
    """Measured bf16 matmul rate (TFLOP/s): random data, warm-up, median of timed repeats."""
    if n is None:
        n = 8192 if device.type == "cuda" else 1024
    if device.type != "cuda":
        repeats = min(repeats, 5)
    g = torch.Generator(device=device).manual_seed(0)
    a = torch.randn(n, n, device=device, dtype=torch.bfloat16, generator=g)
    b = torch.randn(n, n, device=device, dtype=torch.bfloat16, generator=g)
    for _ in range(3):
        a @ b
    times = []
    for _ in range(repeats):
        if device.type == "cuda":
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            a @ b
            e.record()
            e.synchronize()
            times.append(s.elapsed_time(e) / 1e3)
        else:
            t0 = time.perf_counter()
            a @ b
            times.append(time.perf_counter() - t0)
    t = float(np.median(times))
    return {"n": n, "dtype": "bfloat16", "median_s": t, "tflops": 2 * n ** 3 / t / 1e12,
            "repeats": repeats}


def _entry(name: str, t: float, flops: float, P: int, peak: dict, mem, gpus: int = 1,
           **extra) -> dict:
    """One mode's row; `share_of_peak` is of all `gpus` cards' peak (the run is sharded)."""
    tf = flops / t / 1e12 if t > 0 else math.nan
    return {"mode": name, "time_s": t, "ms_per_puzzle": 1e3 * t / P, "flops": flops,
            "flops_per_puzzle": flops / P, "tflops": tf, "gpus": gpus,
            "share_of_peak": tf / (peak["tflops"] * gpus), "peak_mem_bytes": mem, **extra}


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


def _accuracy(preds_answer: torch.Tensor, pz: Puzzles) -> dict:
    from .engine.metrics import correct

    out = {}
    if pz.labels is not None:
        out["acc_label"] = float(correct(preds_answer, pz.labels).float().mean())
    return out


def run_bench(o: BenchOptions) -> dict:
    from .engine import distributed, fast
    from .engine.model import count_parameters, flops_per_step
    from .engine.sampler import SamplerConfig
    from . import solver

    modes = [m for m in o.modes if m]
    bad = [m for m in modes if m not in MODES + ("scaling",)]
    if bad:
        raise ValueError(f"unknown mode(s) {bad}; choose from {', '.join(MODES)}")
    device_name = distributed.setup(_resolve_device(o.device))
    device = torch.device(device_name)
    rank, world = distributed.world()
    _log(f"device {device_name} (rank {rank} of {world}); torch {torch.__version__}")

    loaded, model_desc = load_model(o, device_name)
    cfg = loaded.config
    fps = flops_per_step(cfg)
    pz = load_puzzles(o, loaded)
    P, K, D = pz.inputs.shape[0], o.K, o.D
    fixed_flops = P * K * D * fps
    budget = solver.default_memory(device_name)
    capacity = o.chunk_rows or solver.plan_chunk_rows(cfg, K, D, budget)
    _log(f"{model_desc}: {count_parameters(loaded.model):,} parameters, {fps / 1e9:.2f} GFLOP "
         f"a step; {pz.source}; K={K} D={D} sigma={o.sigma}; {fixed_flops / P:.3e} FLOP a "
         f"puzzle; rows in flight {min(capacity, P * K)}")

    report = {"format": FORMAT,
              "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
              "host": platform.node(), "device": _device_desc(device), "torch": torch.__version__,
              "world_size": world, "cpu_threads": torch.get_num_threads(),
              "options": asdict(o), "model": {"desc": model_desc, "config": cfg.to_dict(),
                                              "parameters": count_parameters(loaded.model),
                                              "flops_per_step": fps},
              "puzzles": {"source": pz.source, "n": P}, "fixed_flops_per_puzzle": fixed_flops / P,
              "rows_in_flight": min(capacity, P * K), "modes": [], "agreement": {}}
    _log("measuring the matmul peak")
    peak = matmul_peak(device, o.peak_size)
    report["peak"] = peak
    _log(f"matmul peak {peak['tflops']:.1f} TFLOP/s (bf16 {peak['n']}^3)")

    runs = {}
    verify = None
    if o.rules and pz.verifiers is not None:
        verify = lambda p, preds: pz.verifiers[p].valid(preds)  # noqa: E731

    def engine(mode_name):
        opts = dict(compile=o.compile, mode=o.compile_mode, deterministic=o.deterministic)
        if mode_name == "fast-autotune":
            opts.update(mode="max-autotune-no-cudagraphs", deterministic=False, split=True)
        if mode_name == "fast-step":
            opts.update(scope="step")
        return fast.Engine(loaded.model, **opts)

    def fast_run(eng, D_run, participants=None, K_run=None, **kw):
        return distributed.run(eng, pz.inputs, K=K_run or K, D=D_run, sigma=o.sigma, seed=o.seed,
                               puzzle_ids=pz.puzzle_ids, capacity=capacity,
                               participants=participants, **kw)

    def timed(fn):
        distributed.barrier()
        _sync(device)
        _reset_peak(device)
        t0 = time.perf_counter()
        res = fn()
        _sync(device)
        distributed.barrier()
        return res, time.perf_counter() - t0, _peak_mem(device)

    engines = {}
    for mode in modes:
        try:
            if mode in ("fast", "fast-autotune", "fast-step"):
                _log(f"{mode}: building and compiling (warm-up run, D=2)")
                eng = engines[mode] = engine(mode)
                _, t_warm, _ = timed(lambda: fast_run(eng, 2))
                times, res, mem = [], None, None
                for i in range(o.repeats):
                    _log(f"{mode}: timed run {i + 1}/{o.repeats}")
                    res, t, mem = timed(lambda: fast_run(eng, D))
                    times.append(t)
                t = float(np.median(times))
                runs[mode] = res
                e = _entry(mode, t, res.flops, P, peak, mem, world, warmup_compile_s=t_warm,
                           times_s=times, compiled=eng.compiled, compile_error=eng.compile_error,
                           compile_mode=eng.mode if eng.compile else None,
                           **_accuracy(res.answer, pz))
            elif mode == "adaptive":
                eng = engines.get("fast") or engines.setdefault("fast", engine("fast"))
                kw = dict(check_every=o.check_every, wave=o.wave, q_threshold=o.q_threshold,
                          verify=verify)
                _log(f"adaptive: warm-up (D=2); rules={'on' if verify else 'off'} "
                     f"q_threshold={o.q_threshold} check_every={o.check_every} "
                     f"wave={o.wave or K}")
                _, t_warm, _ = timed(lambda: fast_run(eng, 2, **kw))
                times = []
                for i in range(o.repeats):
                    _log(f"adaptive: timed run {i + 1}/{o.repeats}")
                    res, t, mem = timed(lambda: fast_run(eng, D, **kw))
                    times.append(t)
                t = float(np.median(times))
                runs[mode] = res
                e = _entry(mode, t, res.flops, P, peak, mem, world, warmup_compile_s=t_warm,
                           times_s=times, compute_vs_fixed=res.flops / fixed_flops,
                           stopped_frac=float(res.stopped.float().mean()),
                           syncs=_stat(res, "syncs"), **_accuracy(res.answer, pz))
            elif mode == "eager":
                scfg = SamplerConfig(K=K, D=D, sigma=o.sigma, chunk_rows=capacity)
                _log("eager: warm-up (D=1)")
                _, t_warm, _ = timed(lambda: distributed.sample(
                    loaded.model, pz.inputs, SamplerConfig(K=K, D=1, sigma=o.sigma,
                                                           chunk_rows=capacity),
                    seed=o.seed, puzzle_ids=pz.puzzle_ids, fast=False))
                _log("eager: timed run")
                res, t, mem = timed(lambda: distributed.sample(
                    loaded.model, pz.inputs, scfg, seed=o.seed, puzzle_ids=pz.puzzle_ids,
                    fast=False))
                runs[mode] = res
                best = res.q.argmax(-1)
                e = _entry(mode, t, fixed_flops, P, peak, mem, world, warmup_compile_s=t_warm,
                           **_accuracy(res.preds[torch.arange(P), best], pz))
            elif mode == "profile":
                eng = engines.get("fast") or engines.setdefault("fast", engine("fast"))
                timed(lambda: fast_run(eng, 2))  # compiled and warm
                e = _profile(lambda: fast_run(eng, 1), device, P)
            elif mode == "curve":
                e = _curve(o, pz, loaded, engines, engine, fast_run, timed, fps, peak, verify)
                runs["curve"] = None
            else:
                continue
            report["modes"].append(e)
            _log(_line(e))
        except Exception as ex:  # noqa: BLE001 - one failing mode must not lose the others
            if device.type == "cuda" and "out of memory" in str(ex).lower():
                torch.cuda.empty_cache()
            report["modes"].append({"mode": mode, "error": f"{type(ex).__name__}: {ex}"})
            _log(f"{mode}: FAILED {type(ex).__name__}: {ex}")

    fixed_ref = next((runs[m] for m in ("fast", "fast-autotune", "fast-step") if m in runs), None)
    for m in ("fast", "fast-autotune", "fast-step", "adaptive"):
        if m in runs and "eager" in runs:
            report["agreement"][f"{m} vs eager"] = agreement(_ran(runs[m]), runs["eager"])
    if "adaptive" in runs and fixed_ref is not None:
        ad = runs["adaptive"]
        keep = ~ad.stopped
        if keep.any():
            sub = lambda r: type("R", (), {"preds": r.preds[keep], "q": r.q[keep]})  # noqa: E731
            report["agreement"]["adaptive vs fixed (puzzles it did not stop)"] = \
                agreement(sub(ad), sub(fixed_ref))
    for name in [m for m in ("fast-autotune", "fast-step") if m in runs]:
        if "fast" in runs:
            report["agreement"][f"{name} vs fast"] = agreement(runs[name], runs["fast"])

    if world > 1 or "scaling" in modes:
        report["scaling"] = _scaling(o, engines, engine, fast_run, timed, P, peak, fixed_flops)
    base = next((m for m in report["modes"] if m["mode"] == "eager" and "time_s" in m), None)
    for m in report["modes"]:
        if base is not None and "time_s" in m:
            m["speedup_vs_eager"] = base["time_s"] / m["time_s"]
    report["peak_rss_bytes"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    if o.out and distributed.is_main():
        from .atomic import write_text

        write_text(o.out, json.dumps(report, indent=1, default=_jsonable) + "\n")
    return report


def _ran(res):
    """A PoolResult with never-run rollouts (q nan) left as they are: all ran in fixed mode."""
    return res


def _stat(res, key):
    s = res.stats
    if "per_rank" in s:
        return [r.get(key) for r in s["per_rank"]]
    return s.get(key)


def _curve(o, pz, loaded, engines, engine, fast_run, timed, fps, peak, verify) -> dict:
    """Record one fixed run's per-step Q and predictions, replay every policy, run the best."""
    from .engine import adaptive

    if pz.labels is None and verify is None:
        raise ValueError("the curve needs labelled puzzles (--split golden, or --split val "
                         "--data DIR)")
    eng = engines.get("fast") or engines.setdefault("fast", engine("fast"))
    P, K, D = pz.inputs.shape[0], o.K, o.D
    _log("curve: recording a fixed run (per-step Q and predictions)")
    rec, t_rec, _ = timed(lambda: fast_run(eng, D, record_steps=True))
    valid = None
    if verify is not None:
        pols = adaptive.default_policies(K, D, rules=True)
        steps = adaptive.steps_needed(pols)
        _log(f"curve: verifying recorded predictions at {len(steps)} steps")
        t0 = time.perf_counter()
        every = max(1, P // 10)
        valid = adaptive.step_validity(
            rec.step_preds, pz.verifiers, steps,
            progress=lambda i, n: _log(f"curve: verified {i}/{n} puzzles") if i % every == 0
            else None)
        t_ver = time.perf_counter() - t0
    else:
        pols, t_ver = adaptive.default_policies(K, D, rules=False), 0.0
    _log(f"curve: replaying {len(pols)} policies")
    cur = adaptive.curve(rec.step_q, rec.step_preds, valid=valid, labels=pz.labels,
                         flops_per_step=fps, policies=pols)
    # run the cheapest policy that matches the fixed run for real, and check the replay
    check = {}
    sel = "verified" if valid is not None else "best_q"
    best_name = cur["summary"][sel]["cheapest_at_same_accuracy"]["policy"]
    pol = next(p for p in pols if p.name == best_name)
    if pol.adaptive:
        _log(f"curve: running {pol.name} for real")
        kw = dict(check_every=pol.check_every, wave=pol.wave, q_threshold=pol.q_threshold,
                  verify=verify if pol.rules else None)
        real, t_real, mem = timed(lambda: fast_run(eng, pol.D, K_run=pol.K, **kw))
        # the replay must agree with the real run: same rollouts, same stops, same FLOPs
        sim = adaptive.simulate(pol, rec.step_q, rec.step_preds, valid, pz.labels)
        check = {"policy": pol.name, "time_s": t_real, "ms_per_puzzle": 1e3 * t_real / P,
                 "flops_per_puzzle": real.flops / P,
                 "replay_flops_per_puzzle": sim["row_steps_per_puzzle"] * fps,
                 "same_choices_as_replay": float(np.mean(np.asarray(sim["chosen_k"]) ==
                                                         real.chosen.numpy())),
                 "tflops": real.flops / t_real / 1e12, **_accuracy(real.answer, pz)}
    fixed_t = t_rec
    return {"mode": "curve", "time_s": fixed_t, "ms_per_puzzle": 1e3 * fixed_t / P,
            "flops": P * K * D * fps, "flops_per_puzzle": K * D * fps,
            "tflops": P * K * D * fps / fixed_t / 1e12,
            "share_of_peak": P * K * D * fps / fixed_t / 1e12 / peak["tflops"],
            "verify_s": t_ver, "curve": cur, "real_run_of_best_policy": check,
            "note": "time_s is the recorded fixed run (per-step heads add a little)"}


KERNEL_KINDS = (("matmul", ("gemm", "cutlass", "xmma", "nvjet", "cublas", "sm90_", "sm80_",
                             "addmm", "aten::mm", "aten::bmm", "aten::linear")),
                ("attention", ("flash", "fmha", "attention", "sdpa", "cudnn")),
                ("compiled elementwise", ("triton", "cpp_fused", "kernel_cpp")))


def _kind(name: str) -> str:
    low = name.lower()
    for kind, keys in KERNEL_KINDS:
        if any(k in low for k in keys):
            return kind
    return "other"


def _profile(fn, device: torch.device, P: int) -> dict:
    """Device time by kernel for one run of fn (a one-step run of every puzzle's rollouts)."""
    from torch.profiler import ProfilerActivity, profile

    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
    with profile(activities=acts) as prof:
        fn()
        _sync(device)
    rows = []
    for ev in prof.key_averages():
        if device.type == "cuda":
            # kernels only (device events); CPU-side ops and compiled-region markers would
            # count their kernels a second time
            kind = getattr(ev, "device_type", None)
            if kind is not None and kind != torch.autograd.DeviceType.CUDA:
                continue
            t = getattr(ev, "self_device_time_total", None)
            if t is None:
                t = getattr(ev, "self_cuda_time_total", 0)
            if kind is None and ev.key.startswith(("aten::", "cuda", "Torch-Compiled", "##")):
                continue
        else:
            t = ev.self_cpu_time_total
            if not ev.key.startswith(("aten::", "cpp_fused", "kernel_cpp")) or \
                    ev.key in ("aten::empty", "aten::empty_strided", "aten::as_strided",
                               "aten::view", "aten::slice", "aten::select", "aten::t",
                               "aten::transpose", "aten::reshape", "aten::expand"):
                continue
        if t and t > 0:
            rows.append({"name": ev.key, "time_us": float(t), "calls": int(ev.count),
                         "kind": _kind(ev.key)})
    rows.sort(key=lambda r: -r["time_us"])
    total = sum(r["time_us"] for r in rows) or 1.0
    shares = {}
    for r in rows:
        shares[r["kind"]] = shares.get(r["kind"], 0.0) + r["time_us"] / total
    return {"mode": "profile", "what": "one supervision step of every rollout (fast engine)",
            "device_time_us": total, "shares": shares, "top": rows[:25]}


def _scaling(o, engines, engine, fast_run, timed, P, peak, fixed_flops) -> dict:
    """The fast fixed run on 1, 2, 4, ... of the launched GPUs, each compared with one GPU."""
    from .engine import distributed

    rank, world = distributed.world()
    eng = engines.get("fast") or engines.setdefault("fast", engine("fast"))
    ns = sorted({n for n in (1, 2, 4, 8) if n <= world} | {world})
    rows, ref = [], None
    for n in ns:
        _log(f"scaling: {n} GPU(s): warm-up")
        timed(lambda: fast_run(eng, 2, participants=n))
        _log(f"scaling: {n} GPU(s): timed run")
        res, t, mem = timed(lambda: fast_run(eng, o.D, participants=n))
        if ref is None:
            ref = res
        agree = agreement(res, ref)
        rows.append({"gpus": n, "time_s": t, "ms_per_puzzle": 1e3 * t / P,
                     "tflops": fixed_flops / t / 1e12,
                     "share_of_peak_per_gpu": fixed_flops / t / 1e12 / peak["tflops"] / n,
                     "efficiency": (rows[0]["time_s"] / (n * t)) if rows else 1.0,
                     "identical_to_1_gpu": agree["rollouts_identical"] == 1.0
                     and agree["q_identical"] == 1.0, "agreement_with_1_gpu": agree})
        _log(f"scaling: {n} GPU(s): {1e3 * t / P:.1f} ms/puzzle, efficiency "
             f"{rows[-1]['efficiency']:.2f}, identical {rows[-1]['identical_to_1_gpu']}")
    return {"rows": rows}


def _resolve_device(name: str) -> str:
    """options.resolve_device without typer (this module runs where typer is not installed)."""
    if name == "auto":
        if torch.cuda.is_available():
            return "cuda"
        mps = getattr(torch.backends, "mps", None)
        return "mps" if mps is not None and mps.is_available() else "cpu"
    if name.startswith("cuda") and not torch.cuda.is_available():
        raise ValueError(f"--device {name}: no CUDA device is available here")
    return name


def _device_desc(device: torch.device) -> str:
    if device.type == "cuda":
        return f"{device} ({torch.cuda.get_device_name(device)})"
    return f"cpu ({platform.processor() or platform.machine()}, {os.cpu_count()} cores)"


def _jsonable(x):
    if isinstance(x, (np.integer,)):
        return int(x)
    if isinstance(x, (np.floating,)):
        return float(x)
    if isinstance(x, np.ndarray):
        return x.tolist()
    if isinstance(x, torch.Tensor):
        return x.tolist()
    return str(x)


def _x(v) -> str:
    return "-" if v is None else f"{v:.2f}x"


def _gb(b) -> str:
    return "-" if b is None else f"{b / 2**30:.1f} GB"


def _line(e: dict) -> str:
    if "error" in e:
        return f"{e['mode']}: error {e['error']}"
    if "ms_per_puzzle" not in e:
        return f"{e['mode']}: done"
    return (f"{e['mode']}: {e['ms_per_puzzle']:.1f} ms/puzzle, {e['tflops']:.1f} TFLOP/s "
            f"({100 * e['share_of_peak']:.1f}% of peak), peak mem {_gb(e.get('peak_mem_bytes'))}")


def table(r: dict) -> str:
    """The short summary printed at the end."""
    o = r["options"]
    lines = [f"ptrm bench · {r['device']} x{r['world_size']} · torch {r['torch']} · "
             f"{r['model']['desc']} ({r['model']['parameters'] / 1e6:.1f}M) · "
             f"{r['puzzles']['source']} · K={o['K']} D={o['D']} sigma={o['sigma']}",
             f"matmul peak (bf16 {r['peak']['n']}^3, measured): {r['peak']['tflops']:.1f} "
             f"TFLOP/s · fixed compute {r['fixed_flops_per_puzzle']:.3e} FLOP/puzzle · "
             f"rows in flight {r['rows_in_flight']}", ""]
    head = (f"{'mode':<14}{'ms/puzzle':>10}{'TFLOP/s':>9}{'%peak':>7}{'FLOP/puzzle':>13}"
            f"{'vs fixed':>9}{'peak mem':>10}{'warm-up':>9}{'x eager':>8}{'acc':>7}")
    lines.append(head)
    for e in r["modes"]:
        if "error" in e:
            lines.append(f"{e['mode']:<14}error: {e['error'][:90]}")
            continue
        if e["mode"] in ("curve", "profile"):
            continue
        vs = e["flops_per_puzzle"] / r["fixed_flops_per_puzzle"]
        acc = e.get("acc_label")
        lines.append(f"{e['mode']:<14}{e['ms_per_puzzle']:>10.1f}{e['tflops']:>9.1f}"
                     f"{100 * e['share_of_peak']:>6.1f}%{e['flops_per_puzzle']:>13.3e}"
                     f"{vs:>9.3f}{_gb(e.get('peak_mem_bytes')):>10}"
                     f"{e.get('warmup_compile_s', float('nan')):>8.1f}s"
                     f"{_x(e.get('speedup_vs_eager')):>8}"
                     f"{'' if acc is None else f'{100 * acc:.1f}%':>7}")
    for name, a in r["agreement"].items():
        lines.append(f"agreement {name}: identical rollouts {100 * a['rollouts_identical']:.1f}%,"
                     f" same best-Q answer {100 * a['best_q_answer_same']:.1f}%, "
                     f"max |dQ| {a['max_abs_dq']:.3g}")
    for e in r["modes"]:
        if e.get("mode") == "curve" and "curve" in e:
            for sel, s in e["curve"]["summary"].items():
                f, b = s["fixed"], s["cheapest_at_same_accuracy"]
                lines.append(f"curve ({sel}): fixed {100 * f['accuracy']:.1f}% at "
                             f"{f['flops_per_puzzle']:.3e} FLOP; {b['policy']}: "
                             f"{100 * b['accuracy']:.1f}% at {b['flops_per_puzzle']:.3e} FLOP "
                             f"({s['compute_saving']:.2f}x less)")
            rb = e.get("real_run_of_best_policy") or {}
            if rb:
                lines.append(f"curve: real run of {rb['policy']}: {rb['ms_per_puzzle']:.1f} "
                             f"ms/puzzle, {rb['flops_per_puzzle']:.3e} FLOP/puzzle (replay "
                             f"{rb['replay_flops_per_puzzle']:.3e}), same choices "
                             f"{100 * rb['same_choices_as_replay']:.0f}%")
    for e in r["modes"]:
        if e.get("mode") == "profile" and "shares" in e:
            sh = ", ".join(f"{k} {100 * v:.0f}%" for k, v in
                           sorted(e["shares"].items(), key=lambda kv: -kv[1]))
            lines.append(f"profile of one step ({e['device_time_us'] / 1e3:.1f} ms of kernels): "
                         f"{sh}")
            for k in e["top"][:6]:
                lines.append(f"  {k['time_us'] / 1e3:8.2f} ms {k['calls']:5d}x  {k['kind']:<20} "
                             f"{k['name'][:70]}")
    if "scaling" in r:
        for s in r["scaling"]["rows"]:
            lines.append(f"scaling {s['gpus']} GPU(s): {s['ms_per_puzzle']:.1f} ms/puzzle, "
                         f"{s['tflops']:.1f} TFLOP/s, efficiency {100 * s['efficiency']:.0f}%, "
                         f"identical to 1 GPU: {s['identical_to_1_gpu']}")
    return "\n".join(lines)


# -- command line without typer ------------------------------------------------------------------

def parser() -> argparse.ArgumentParser:
    d = BenchOptions()
    p = argparse.ArgumentParser(prog="python -m ptrm_cli.benchmark", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--checkpoint", "-c")
    p.add_argument("--model", default=d.model, choices=("7m", "tiny"))
    for name in ("K", "D", "puzzles", "seed", "repeats", "check_every"):
        p.add_argument(f"--{name.replace('_', '-')}", dest=name, type=int,
                       default=getattr(d, name))
    p.add_argument("--sigma", type=float, default=d.sigma)
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
    return 0


if __name__ == "__main__":
    sys.exit(main())
