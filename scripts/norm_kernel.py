#!/usr/bin/env python3
"""Could `--exact` be free? Time add + RMSNorm with its squares summed in the fixed pairwise
order (`model.pairwise_mean_square`) as one Triton kernel of our own, against what Inductor
makes of the same math and of the plain reduction.

Session 22 (docs/PERFORMANCE.md) found RMSNorm's reduction order the one thing that parts the
compiled engine from eager on a GPU, and summed the squares as pairwise halvings of the width
(`TRM.fixed_order_norm`, `ptrm bench --exact`): bit-identical, but Inductor's kernel for it
took 1.44 ms against the reduction's 0.71 ms on 6,100 x 116 rows of 512 (it keeps some levels
of the tree in memory), and a fixed run 10% more. This kernel holds a block of whole rows in
registers and sums each row by reshaping it to [2, W/2] and adding the two halves, level by
level (a sum over an axis of 2 is one add, so the order is eager's), then rsqrt, scale and the
bf16 cast where eager has them: one read of each input and one write, as the reduction's kernel.

    python scripts/norm_kernel.py [--rows 6100] [--json out.json]

Prints ms and GB/s for Inductor's reduction, Inductor's pairwise sum and the kernel (a few
block shapes), and whether the kernel's output is eager's pairwise one bit for bit.
"""

from __future__ import annotations

import sys

import torch

from ptrm_cli import gpu_script

try:
    import triton
    import triton.language as tl
except ImportError:
    triton = None

D = 512
EPS = 1e-5
# (rows a program, num_warps)
CONFIGS = [(1, 4), (2, 4), (4, 4), (4, 8), (8, 8), (16, 8)]

if triton is not None:
    @triton.jit
    def _halve(s, BR: tl.constexpr, W: tl.constexpr):
        # [BR, W] -> [BR, W/2]: element j plus element W/2 + j, as s[:W/2] + s[W/2:] in eager
        return tl.sum(tl.reshape(s, [BR, 2, W // 2]), axis=1)

    @triton.jit
    def _pairwise_sum(s, BR: tl.constexpr, W: tl.constexpr):
        # the halvings for a power-of-two width up to 1024, each level a compile-time width
        if W >= 1024:
            s = _halve(s, BR, 1024)
        if W >= 512:
            s = _halve(s, BR, 512)
        if W >= 256:
            s = _halve(s, BR, 256)
        if W >= 128:
            s = _halve(s, BR, 128)
        if W >= 64:
            s = _halve(s, BR, 64)
        if W >= 32:
            s = _halve(s, BR, 32)
        if W >= 16:
            s = _halve(s, BR, 16)
        if W >= 8:
            s = _halve(s, BR, 8)
        if W >= 4:
            s = _halve(s, BR, 4)
        if W >= 2:
            s = _halve(s, BR, 2)
        return tl.reshape(s, [BR])

    @triton.jit
    def add_rms_norm_kernel(a_ptr, b_ptr, out_ptr, ms_ptr, R, eps, W: tl.constexpr,
                            BR: tl.constexpr, INTERPRET: tl.constexpr):
        rows = tl.program_id(0) * BR + tl.arange(0, BR)
        offs = rows[:, None].to(tl.int64) * W + tl.arange(0, W)[None, :]
        mask = rows[:, None] < R
        a = tl.load(a_ptr + offs, mask=mask, other=0.0).to(tl.float32)
        b = tl.load(b_ptr + offs, mask=mask, other=0.0).to(tl.float32)
        h = (a + b).to(tl.bfloat16).to(tl.float32)  # eager adds in bf16, then RMSNorm's float()
        ms = _pairwise_sum(h * h, BR, W) / W
        if INTERPRET:  # Triton's interpreter has no libdevice
            r = 1.0 / tl.sqrt(ms + eps)
        else:  # what Inductor emits for torch.rsqrt, which matched eager's bits
            r = tl.extra.cuda.libdevice.rsqrt(ms + eps)
        tl.store(out_ptr + offs, (h * r[:, None]).to(tl.bfloat16), mask=mask)
        tl.store(ms_ptr + rows, ms, mask=rows < R)


def add_rms_norm(a: torch.Tensor, b: torch.Tensor, config=CONFIGS[2], *,
                 interpret: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """rms_norm(a + b, pairwise=True) over the last dim in one kernel: (out bf16, mean square
    fp32 a row). a, b: contiguous bf16 [..., W], W a power of two up to 1024."""
    br, warps = config
    w = a.shape[-1]
    rows = a.numel() // w
    out = torch.empty_like(a, dtype=torch.bfloat16)
    ms = torch.empty(a.shape[:-1], device=a.device, dtype=torch.float32)
    add_rms_norm_kernel[(triton.cdiv(rows, br),)](a, b, out, ms, rows, EPS, w, br, interpret,
                                                 num_warps=warps)
    return out, ms


def main() -> int:
    from ptrm_cli.bench_modes import median_ms
    from ptrm_cli.engine.model import rms_norm

    args = gpu_script.parser(__doc__).parse_args()
    if not torch.cuda.is_available() or triton is None:
        print("norm_kernel.py needs a CUDA GPU and Triton", file=sys.stderr)
        return 2
    torch.manual_seed(0)
    a, b = (torch.randn(args.rows, args.tokens, D, device="cuda").to(torch.bfloat16)
            for _ in range(2))
    moved = 3 * a.numel() * 2  # bytes: read a and b, write the output (bf16)
    opts = {"deterministic": True, "emulate_precision_casts": True}  # the fast engine's
    eager = rms_norm(a + b, EPS, pairwise=True)
    out = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__,
           "triton": triton.__version__, "rows": args.rows, "inductor": {}, "kernel": []}
    print(f"{out['gpu']}, torch {torch.__version__}, triton {triton.__version__}, "
          f"{args.rows} x {args.tokens} rows of {D}")
    for name, pairwise in (("reduction", False), ("pairwise", True)):
        fn = torch.compile(lambda a, b: rms_norm(a + b, EPS, pairwise), options=opts)
        t = median_ms(lambda: fn(a, b), args.iters)
        same = torch.equal(fn(a, b), eager) if pairwise else None
        out["inductor"][name] = {"ms": t, "gb_s": moved / t / 1e6, "identical_to_eager": same}
        print(f"Inductor, {name:9}: {t:.3f} ms ({moved / t / 1e6:.0f} GB/s)"
              + ("" if same is None else f", identical to eager pairwise: {same}"))
        torch._dynamo.reset()
    for config in CONFIGS:
        try:
            got, _ = add_rms_norm(a, b, config)
            t = median_ms(lambda: add_rms_norm(a, b, config), args.iters)
        except Exception as e:  # a shape the compiler or the card refuses
            print(f"kernel {config}: failed ({type(e).__name__}: {str(e)[:120]})")
            continue
        same = float((got == eager).float().mean())
        out["kernel"].append({"config": config, "ms": t, "gb_s": moved / t / 1e6,
                              "identical_to_eager": same})
        print(f"kernel {config} (rows a program, warps): {t:.3f} ms "
              f"({moved / t / 1e6:.0f} GB/s), identical to eager pairwise: {same:.4%}")
    gpu_script.write_json(args.json, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
