"""How `ptrm bench` shows what it measured: the device's description in the report, the
report's JSON encoding, one progress line per mode and the short table printed at the end.
The numbers are all computed elsewhere (bench_modes, bench_curve); this only formats them.
"""

from __future__ import annotations

import os
import platform

import numpy as np
import torch


def device_desc(device: torch.device) -> str:
    if device.type == "cuda":
        return f"{device} ({torch.cuda.get_device_name(device)})"
    return f"cpu ({platform.processor() or platform.machine()}, {os.cpu_count()} cores)"


def on_cpu(desc: str) -> bool:
    """Whether a report's device (`device_desc`) is the CPU."""
    return desc.startswith("cpu")


def launched(n: int, cpu: bool) -> str:
    """What n ranks of a launch are, in words: `--gpus N --device cpu` runs N CPU processes,
    which "N GPU(s)" misnamed."""
    return f"{n} CPU process(es)" if cpu else f"{n} GPU(s)"


def jsonable(x):
    """json.dumps' `default`: numpy scalars and arrays, tensors, anything else as its str."""
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


def tf(v) -> str:
    """TFLOP/s as printed: one decimal, more below 1 (a CPU's or a tiny model's rate, which
    read "0.0 TFLOP/s" beside "11.9% of peak")."""
    if v is None:
        return "-"
    if not 0 < abs(v) < 0.95:  # 0, NaN, inf and the GPU's hundreds
        return f"{v:.1f}"
    return f"{v:.3f}" if abs(v) >= 0.001 else f"{v:.1e}"


def _gb(b) -> str:
    return "-" if b is None else f"{b / 2**30:.1f} GB"


def line(e: dict) -> str:
    """One mode's result as a progress line."""
    if "error" in e:
        return f"{e['mode']}: error {e['error']}"
    if "ms_per_puzzle" not in e:
        return f"{e['mode']}: done"
    return (f"{e['mode']}: {e['ms_per_puzzle']:.1f} ms/puzzle, {tf(e['tflops'])} TFLOP/s "
            f"({100 * e['share_of_peak']:.1f}% of peak), peak mem {_gb(e.get('peak_mem_bytes'))}")


def noise(sigma: float, perturb: str | None) -> str:
    """"sigma=2" (the paper's z), or "sigma=0.5 on y": the target only where it is not z
    (reports written before --perturb existed have none: z)."""
    return f"sigma={sigma:g}" + ("" if perturb in (None, "z") else f" on {perturb}")


def _by_kernel(r: dict) -> str:
    """", in one Triton kernel" where a fast engine ran the fixed-order add + RMSNorm as one
    (engine/norm_kernel.py; compiled on a GPU), else Inductor's code for the same sum."""
    return ", in one Triton kernel" if any(e.get("norm_kernel") for e in r["modes"]) else ""


def table(r: dict) -> str:
    """The short summary printed at the end."""
    o = r["options"]
    lines = [f"ptrm bench · {r['device']} x{r['world_size']} · torch {r['torch']} · "
             f"{r['model']['desc']} ({_parameter_count(r['model']['parameters'])}) · "
             f"{r['puzzles']['source']} · K={o['K']} D={o['D']} "
             f"{noise(o['sigma'], o.get('perturb'))}"
             + (" · exact (RMSNorm summed in a fixed order" + _by_kernel(r) + ")"
                if o.get("exact") else ""),
             f"matmul peak (bf16 {r['peak']['n']}^3, measured): {tf(r['peak']['tflops'])} "
             f"TFLOP/s · fixed compute {r['fixed_flops_per_puzzle']:.3e} FLOP/puzzle · "
             f"rows in flight {r['rows_in_flight']}", ""]
    head = (f"{'mode':<14}{'ms/puzzle':>10}{'TFLOP/s':>9}{'%peak':>8}{'FLOP/puzzle':>13}"
            f"{'vs fixed':>9}{'peak mem':>10}{'warm-up':>9}{'x eager':>8}{'rules':>7}"
            f"{'label':>7}")
    if any(e["mode"] not in ("curve", "profile") for e in r["modes"]):
        lines.append(head)
    for e in r["modes"]:
        if "error" in e:
            lines.append(f"{e['mode']:<14}error: {e['error'][:90]}")
            continue
        if e["mode"] in ("curve", "profile"):
            continue
        vs = e["flops_per_puzzle"] / r["fixed_flops_per_puzzle"]
        pct = lambda key: "" if e.get(key) is None else f"{100 * e[key]:.1f}%"  # noqa: E731
        lines.append(f"{e['mode']:<14}{e['ms_per_puzzle']:>10.1f}{tf(e['tflops']):>9}"
                     # a space always: 11451.5% after 0.0 TFLOP/s was one number
                     f" {100 * e['share_of_peak']:>6.1f}%{e['flops_per_puzzle']:>13.3e}"
                     f"{vs:>9.3f}{_gb(e.get('peak_mem_bytes')):>10}"
                     f"{e.get('warmup_compile_s', float('nan')):>8.1f}s"
                     f"{_x(e.get('speedup_vs_eager')):>8}"
                     f"{pct('acc_rules'):>7}{pct('acc_label'):>7}")
    for e in r["modes"]:  # where adaptive's saving comes from
        if e.get("mode") == "adaptive" and e.get("stopped_frac") is not None:
            # a stop counts at any check, the one on step D too (which saves nothing): the
            # FLOP column says what stopping saved, this line why
            n = o.get("check_every")
            every = f" (checked every {n} step{'s' if n != 1 else ''})" if n else ""
            lines.append(f"adaptive: {100 * e['stopped_frac']:.0f}% of puzzles ended on a "
                         f"verified or confident rollout{every}; the rest ran all D={o['D']} "
                         f"steps without one")
    if any(e.get("share_of_peak", 0) > 1 for e in r["modes"]):
        lines.append(f"note: a mode ran faster than the measured peak: a {r['peak']['n']}^3 "
                     "product is too small to show the device's limit (a larger --peak-size)")
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
        cpu = on_cpu(r["device"])
        if r["world_size"] == 1:
            lines.append("scaling: one process, one device; launch on several "
                         + ("processes (--gpus N with --device cpu)" if cpu else
                            "GPUs (--gpus N)") + " to measure how the time divides")
        for s in r["scaling"]["rows"]:  # the JSON keys say gpus whatever the device
            lines.append(f"scaling {launched(s['gpus'], cpu)}: {s['ms_per_puzzle']:.1f} "
                         f"ms/puzzle, {tf(s['tflops'])} TFLOP/s, efficiency "
                         f"{100 * s['efficiency']:.0f}%, identical to {launched(1, cpu)}: "
                         f"{s['identical_to_1_gpu']}")
    return "\n".join(lines)


def _parameter_count(n: int) -> str:
    """7.1M for the paper's model; a small one (a test's, `--model tiny`) was "0.0M"."""
    return f"{n / 1e6:.1f}M" if n >= 50_000 else f"{n:,} parameters"
