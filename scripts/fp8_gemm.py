#!/usr/bin/env python3
"""Would FP8 GEMMs close issue #9's fixed-K gap? Time the four GEMM shapes of one TRM-Att
supervision-step batch in bf16 and in FP8 (e4m3, `torch._scaled_mm`), on this GPU.

docs/PERFORMANCE.md ("What the 2026-11-27 profile adds") splits a step of 6,100 rollout rows
on an H200 into 319 ms of cuBLAS GEMMs, 40 ms of attention and 157 ms of elementwise kernels:
fusion alone cannot reach 250 ms a puzzle. This measures the other route before anyone writes
an FP8 engine: how much of the 319 ms FP8 would save, and what the activation casts cost.

Per network application (one block of L_level, TRM-Att 7M: D=512, SwiGLU inter 1536), on
M = rows x 116 tokens:
    qkv      [M, 512]  x [512, 1536]
    o        [M, 512]  x [512, 512]
    gate_up  [M, 512]  x [512, 3072]
    down     [M, 1536] x [1536, 512]
Each is timed as a bf16 matmul, as `_scaled_mm` with one scale per tensor and with one scale
per row of the activation and per column of the weight (the scaling a recursion of 1,000
applications would need: rows of very different size share a batch), both giving bf16. The
cast of the activation to e4m3 with its row scales is timed on its own (compiled), since an
engine would fuse it into the elementwise kernel before the GEMM, or pay it.

    python scripts/fp8_gemm.py [--rows 6100] [--json out.json]

Prints ms per GEMM, TFLOP/s, the FP8/bf16 ratio, and a step estimate: measured GEMM time
scaled by the FP8 ratio plus the profile's attention and elementwise time.
"""

from __future__ import annotations

import sys

import torch

from ptrm_cli import gpu_script

SHAPES = {"qkv": (512, 1536), "o": (512, 512), "gate_up": (512, 3072), "down": (1536, 512)}
E4M3_MAX = 448.0


def timed(fn, iters: int) -> float:
    """Median milliseconds of `fn` on the GPU over `iters` calls after three warm-up calls."""
    from ptrm_cli.bench_modes import median_ms

    return median_ms(fn, iters)


def to_e4m3_rowwise(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """x ≈ q * scale with q in e4m3: one fp32 scale per row, the row's largest value at 448."""
    amax = x.abs().amax(dim=-1, keepdim=True).float().clamp(min=1e-12)
    scale = amax / E4M3_MAX
    return (x.float() / scale).to(torch.float8_e4m3fn), scale


def to_e4m3_tensorwise(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    scale = x.abs().amax().float().clamp(min=1e-12) / E4M3_MAX
    return (x.float() / scale).to(torch.float8_e4m3fn), scale


def main() -> int:
    args = gpu_script.parser(__doc__).parse_args()
    if not torch.cuda.is_available():
        print("fp8_gemm.py needs a CUDA GPU (FP8 tensor cores: Hopper or newer)", file=sys.stderr)
        return 2
    torch.manual_seed(0)
    m = args.rows * args.tokens
    cast = torch.compile(to_e4m3_rowwise)
    out = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "rows": args.rows,
           "M": m, "gemms": {}}
    print(f"{out['gpu']}, torch {torch.__version__}, M = {args.rows} rows x {args.tokens} "
          f"tokens = {m:,}")
    print(f"{'gemm':8} {'bf16 ms':>9} {'TFLOP/s':>8} {'fp8/t ms':>9} {'fp8/r ms':>9} "
          f"{'TFLOP/s':>8} {'ratio':>6} {'cast ms':>8} {'rel err':>8}")
    for name, (k, n) in SHAPES.items():
        x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
        w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16) / k ** 0.5
        w8, sw = to_e4m3_rowwise(w)            # per output column of x @ w.T
        w8t, swt = to_e4m3_tensorwise(w)
        x8, sx = cast(x)
        x8t, sxt = to_e4m3_tensorwise(x)
        flop = 2 * m * k * n
        t_bf16 = timed(lambda: x @ w.t(), args.iters)
        t_t = timed(lambda: torch._scaled_mm(x8t, w8t.t(), scale_a=sxt, scale_b=swt,
                                             out_dtype=torch.bfloat16), args.iters)
        t_r = timed(lambda: torch._scaled_mm(x8, w8.t(), scale_a=sx, scale_b=sw.t(),
                                             out_dtype=torch.bfloat16), args.iters)
        t_cast = timed(lambda: cast(x), args.iters)
        ref = (x @ w.t()).float()
        got = torch._scaled_mm(x8, w8.t(), scale_a=sx, scale_b=sw.t(),
                               out_dtype=torch.bfloat16).float()
        err = ((got - ref).norm() / ref.norm()).item()
        row = {"k": k, "n": n, "bf16_ms": t_bf16, "fp8_tensorwise_ms": t_t,
               "fp8_rowwise_ms": t_r, "cast_rowwise_ms": t_cast, "rel_err_rowwise": err,
               "bf16_tflops": flop / t_bf16 / 1e9, "fp8_rowwise_tflops": flop / t_r / 1e9}
        out["gemms"][name] = row
        print(f"{name:8} {t_bf16:9.2f} {row['bf16_tflops']:8.0f} {t_t:9.2f} {t_r:9.2f} "
              f"{row['fp8_rowwise_tflops']:8.0f} {t_bf16 / t_r:6.2f} {t_cast:8.2f} {err:8.4f}")
        del x, x8, x8t, ref, got
        torch.cuda.empty_cache()
    g = out["gemms"]
    bf16 = sum(r["bf16_ms"] for r in g.values())
    fp8 = sum(r["fp8_rowwise_ms"] for r in g.values())
    casts = sum(r["cast_rowwise_ms"] for r in g.values())
    out.update(bf16_ms=bf16, fp8_rowwise_ms=fp8, casts_ms=casts, gemm_ratio=bf16 / fp8)
    print(f"one application's GEMMs: bf16 {bf16:.1f} ms, fp8 rowwise {fp8:.1f} ms "
          f"({bf16 / fp8:.2f}x), unfused casts {casts:.1f} ms; a step's 42 applications: "
          f"bf16 {42 * bf16:.0f} ms (the profile's cuBLAS time: 319 ms on an H200)")
    # the session-16 profile (H200, 6,100 rows, one step): GEMM 319, attention 40, elementwise
    # 157 ms; a step is 21 applications of 2 blocks
    step_gemm = 319.0 if args.rows == 6100 else None
    if step_gemm:
        fp8_step = step_gemm / (bf16 / fp8) + 40 + 157
        out["step_estimate_ms"] = {"bf16_profile": 516.0, "fp8_fused_casts": fp8_step,
                                   "fp8_unfused_casts": fp8_step + 42 * casts}
        for label, ms in out["step_estimate_ms"].items():
            print(f"step estimate, {label}: {ms:.0f} ms = {48 * ms / 61:.0f} ms a golden puzzle "
                  f"at K=100, D=48")
    gpu_script.write_json(args.json, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
