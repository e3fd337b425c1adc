#!/usr/bin/env python3
"""Would a fused SwiGLU GEMM shorten the fixed-K step? Time TRM-Att's gate/up projection with
its SiLU·up as the engine runs it (a cuBLAS GEMM writing the 2x-wide gate|up, then Inductor's
SiLU·up kernel reading it back) against one Triton kernel that holds the gate and up tiles of
the same output columns in two accumulators and writes only silu(gate) * up.

docs/PERFORMANCE.md ("What would close the gap", item 1) predicts the largest saving of any
fusion there: the SiLU·up kernel was 89 ms of a 568 ms step of 6,100 rows on an H100 (session
8's profile), and the GEMM writes 3 T it need not. The fused kernel pays for that with a
GEMM of our own instead of cuBLAS's: this measures which side wins before the engine gets one.

Shapes (one block of L_level, TRM-Att 7M: D=512, SwiGLU inter 1536), M = rows x 116 tokens:
    engine: h = silu(g) * u, [g | u] = x [M, 512] @ W.T, W [3072, 512]  (then down: h @ Wd.T)
    fused:  the same h in one kernel from x and W.T [512, 3072] (gate columns first)

The fused epilogue rounds where eager does (g and u to bf16, SiLU in fp32 to bf16, the product
to bf16), so only the GEMM's summation order differs from the engine's numbers.

    python scripts/swiglu_gemm.py [--rows 6100] [--json out.json]

Prints ms for each part and each tile configuration tried (fixed configurations, timed here
once: an engine would pin the winner, not autotune), the relative error against an fp32
reference and the share of outputs bit-identical to the engine's.
"""

from __future__ import annotations

import sys

import torch
import torch.nn.functional as F

from ptrm_cli import gpu_script

try:
    import triton
    import triton.language as tl
except ImportError:  # the CPU test checks the epilogue math without Triton
    triton = None

D, INTER = 512, 1536
# (BLOCK_M, BLOCK_N, BLOCK_K, num_warps, num_stages); two fp32 accumulators of BM x BN must
# fit the registers of one program: BM x BN <= 128 x 128 with 8 warps
# (session 22, one H100: 128 x 128 x 32 with 8 warps and 5 stages was best of the first seven)
CONFIGS = [(128, 128, 64, 8, 3), (128, 128, 64, 8, 4), (128, 64, 64, 8, 4), (256, 64, 64, 8, 3),
           (128, 128, 32, 8, 4), (128, 128, 32, 8, 5), (128, 128, 32, 8, 6), (64, 128, 64, 4, 4),
           (128, 128, 64, 4, 3), (64, 256, 32, 8, 4)]


def silu_mul_reference(gate_up: torch.Tensor) -> torch.Tensor:
    """The engine's SiLU·up on the GEMM's bf16 output (model.SwiGLU.forward)."""
    gate, up = gate_up.chunk(2, dim=-1)
    return F.silu(gate) * up


def epilogue(acc_g: torch.Tensor, acc_u: torch.Tensor) -> torch.Tensor:
    """The fused kernel's epilogue in torch, on fp32 accumulators: eager's rounding points."""
    g = acc_g.to(torch.bfloat16).float()
    u = acc_u.to(torch.bfloat16).float()
    s = (g / (1 + torch.exp(-g))).to(torch.bfloat16).float()
    return (s * u).to(torch.bfloat16)


if triton is not None:
    @triton.jit
    def swiglu_kernel(x_ptr, w_ptr, h_ptr, M, N: tl.constexpr, K: tl.constexpr,
                      BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
        # x [M, K], w [K, 2N] (gate columns, then up), h [M, N]; all row-major. Programs walk
        # the N tiles of one row block together, so the x tile they share stays in L2.
        pid = tl.program_id(0)
        pid_m, pid_n = pid // (N // BN), pid % (N // BN)
        rm = pid_m * BM + tl.arange(0, BM)
        rn = pid_n * BN + tl.arange(0, BN)
        rk = tl.arange(0, BK)
        rows = rm[:, None] < M
        x_ptrs = x_ptr + rm[:, None].to(tl.int64) * K + rk[None, :]
        g_ptrs = w_ptr + rk[:, None] * (2 * N) + rn[None, :]
        acc_g = tl.zeros((BM, BN), dtype=tl.float32)
        acc_u = tl.zeros((BM, BN), dtype=tl.float32)
        for _ in range(0, K, BK):
            a = tl.load(x_ptrs, mask=rows, other=0.0)
            acc_g = tl.dot(a, tl.load(g_ptrs), acc_g)
            acc_u = tl.dot(a, tl.load(g_ptrs + N), acc_u)
            x_ptrs += BK
            g_ptrs += BK * 2 * N
        g = acc_g.to(tl.bfloat16).to(tl.float32)
        u = acc_u.to(tl.bfloat16).to(tl.float32)
        s = (g / (1.0 + tl.exp(-g))).to(tl.bfloat16).to(tl.float32)
        h = (s * u).to(tl.bfloat16)
        tl.store(h_ptr + rm[:, None].to(tl.int64) * N + rn[None, :], h, mask=rows)

    @triton.jit
    def swiglu_tma_kernel(x_desc, w_desc, h_desc, N: tl.constexpr, K: tl.constexpr,
                          BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
        # the same with Hopper's tensor-memory accelerator: tiles come in through TMA
        # descriptors (the copy engine fills shared memory, rows past M read as zeros and are
        # not stored), which frees the warps for the matmul
        pid = tl.program_id(0)
        pid_m, pid_n = pid // (N // BN), pid % (N // BN)
        off_m, off_n = pid_m * BM, pid_n * BN
        acc_g = tl.zeros((BM, BN), dtype=tl.float32)
        acc_u = tl.zeros((BM, BN), dtype=tl.float32)
        for k in range(0, K, BK):
            a = x_desc.load([off_m, k])
            acc_g = tl.dot(a, w_desc.load([k, off_n]), acc_g)
            acc_u = tl.dot(a, w_desc.load([k, N + off_n]), acc_u)
        g = acc_g.to(tl.bfloat16).to(tl.float32)
        u = acc_u.to(tl.bfloat16).to(tl.float32)
        s = (g / (1.0 + tl.exp(-g))).to(tl.bfloat16).to(tl.float32)
        h_desc.store([off_m, off_n], (s * u).to(tl.bfloat16))


def fused_swiglu(x: torch.Tensor, w_t: torch.Tensor, config=CONFIGS[0]) -> torch.Tensor:
    """silu(x @ w_t[:, :N]) * (x @ w_t[:, N:]) in one kernel; x [M, K], w_t [K, 2N]."""
    bm, bn, bk, warps, stages = config
    (m, k), n = x.shape, w_t.shape[1] // 2
    assert n % bn == 0 and k % bk == 0 and x.is_contiguous() and w_t.is_contiguous()
    h = torch.empty(m, n, device=x.device, dtype=torch.bfloat16)
    grid = (triton.cdiv(m, bm) * (n // bn),)
    swiglu_kernel[grid](x, w_t, h, m, n, k, bm, bn, bk, num_warps=warps, num_stages=stages)
    return h


def fused_swiglu_tma(x: torch.Tensor, w_t: torch.Tensor, config=CONFIGS[0]) -> torch.Tensor:
    """fused_swiglu through TMA descriptors (Hopper or newer)."""
    from triton.tools.tensor_descriptor import TensorDescriptor
    bm, bn, bk, warps, stages = config
    (m, k), n = x.shape, w_t.shape[1] // 2
    h = torch.empty(m, n, device=x.device, dtype=torch.bfloat16)
    descs = (TensorDescriptor.from_tensor(x, [bm, bk]), TensorDescriptor.from_tensor(w_t, [bk, bn]),
             TensorDescriptor.from_tensor(h, [bm, bn]))
    grid = (triton.cdiv(m, bm) * (n // bn),)
    swiglu_tma_kernel[grid](*descs, n, k, bm, bn, bk, num_warps=warps, num_stages=stages)
    return h


def timed(fn, iters: int) -> float:
    """Median milliseconds of `fn` on the GPU over `iters` calls after three warm-up calls."""
    from ptrm_cli.bench_modes import median_ms

    return median_ms(fn, iters)


def compare(got: torch.Tensor, engine: torch.Tensor, ref: torch.Tensor) -> dict:
    return {"rel_err": float((got.float() - ref).norm() / ref.norm()),
            "engine_rel_err": float((engine.float() - ref).norm() / ref.norm()),
            "identical_to_engine": float((got == engine).float().mean())}


def main() -> int:
    args = gpu_script.parser(__doc__).parse_args()
    if not torch.cuda.is_available() or triton is None:
        print("swiglu_gemm.py needs a CUDA GPU and Triton", file=sys.stderr)
        return 2
    torch.manual_seed(0)
    m = args.rows * args.tokens
    x = torch.randn(m, D, device="cuda", dtype=torch.bfloat16)
    w = (torch.randn(2 * INTER, D, device="cuda") / D ** 0.5).to(torch.bfloat16)
    w_t = w.t().contiguous()
    silu_mul = torch.compile(silu_mul_reference)
    engine = silu_mul(F.linear(x, w))
    check = slice(0, 65536)  # the fp32 reference on the first rows only (memory)
    ref = silu_mul_reference((x[check].float() @ w.float().t()))
    out = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__,
           "triton": triton.__version__, "rows": args.rows, "M": m}
    t_gemm = timed(lambda: F.linear(x, w), args.iters)
    gate_up = F.linear(x, w)
    t_silu = timed(lambda: silu_mul(gate_up), args.iters)
    t_engine = timed(lambda: silu_mul(F.linear(x, w)), args.iters)
    del gate_up
    flop = 2 * m * D * 2 * INTER
    out["engine"] = {"gemm_ms": t_gemm, "silu_mul_ms": t_silu, "total_ms": t_engine,
                     "gemm_tflops": flop / t_gemm / 1e9}
    print(f"{out['gpu']}, torch {torch.__version__}, triton {triton.__version__}, "
          f"M = {args.rows} x {args.tokens} = {m:,}")
    print(f"engine: cuBLAS gate_up {t_gemm:.3f} ms ({flop / t_gemm / 1e9:.0f} TFLOP/s) + "
          f"SiLU·up {t_silu:.3f} ms = {t_engine:.3f} ms together")
    out["fused"] = []
    for kernel, config in [(k, c) for k in (fused_swiglu, fused_swiglu_tma) for c in CONFIGS]:
        name = "tma" if kernel is fused_swiglu_tma else "ptr"
        try:
            h = kernel(x, w_t, config)
            t = timed(lambda: kernel(x, w_t, config), args.iters)
        except Exception as e:  # a configuration the compiler or the card refuses
            print(f"fused {name} {config}: failed ({type(e).__name__}: {str(e)[:120]})")
            continue
        row = {"kernel": name, "config": config, "ms": t, "tflops": flop / t / 1e9,
               "vs_engine": t_engine / t, **compare(h[check], engine[check], ref)}
        row["identical_to_engine_all"] = float((h == engine).float().mean())
        out["fused"].append(row)
        print(f"fused {name} {config}: {t:.3f} ms ({row['tflops']:.0f} TFLOP/s), "
              f"{row['vs_engine']:.2f}x the engine's pair; rel err {row['rel_err']:.2e} "
              f"(engine {row['engine_rel_err']:.2e}); "
              f"identical {row['identical_to_engine_all']:.1%}")
        del h
    if out["fused"]:
        best = min(out["fused"], key=lambda r: r["ms"])
        saved = t_engine - best["ms"]
        out["best"] = [best["kernel"], best["config"]]
        out["step_saving_ms"] = 42 * saved  # 21 applications of 2 blocks a step
        print(f"best {best['kernel']} {best['config']}: saves {saved:.3f} ms a block, "
              f"{42 * saved:.0f} ms a step of {args.rows} rows = "
              f"{48 * 42 * saved / 61:.0f} ms a golden puzzle at K=100, D=48 "
              "(session 21's fast run: 450.9 ms a puzzle on an H100)")
    gpu_script.write_json(args.json, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
