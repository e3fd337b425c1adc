#!/usr/bin/env python3
"""Could `--exact` be free? Time add + RMSNorm with its squares summed in the fixed pairwise
order (`model.pairwise_mean_square`) as one Triton kernel of our own (engine/norm_kernel.py),
against what Inductor makes of the same math and of the plain reduction.

Session 22 (docs/PERFORMANCE.md) found RMSNorm's reduction order the one thing that parts the
compiled engine from eager on a GPU, and summed the squares as pairwise halvings of the width
(`TRM.fixed_order_norm`, `ptrm bench --exact`): bit-identical, but Inductor's kernel for it
took 1.44 ms against the reduction's 0.71 ms on 6,100 x 116 rows of 512 (it keeps some levels
of the tree in memory), and a fixed run 10% more. This kernel holds a block of whole rows in
registers as 16 chunks each, adds whole chunks for the first four halvings and halves the last
chunk by reshapes (a sum over an axis of 2 is one add, so the order is eager's), then rsqrt,
scale and the bf16 cast where eager has them: one read of each input and one write, as the
reduction's kernel. Session 23's first version, which reshaped whole rows at every level,
took 1.87 ms on an H100 against Inductor's 1.60 (pairwise) and 0.80 (reduction).

    python scripts/norm_kernel.py [--rows 6100] [--json out.json]

Prints ms and GB/s for Inductor's reduction, Inductor's pairwise sum and the kernel (a few
block shapes, and the engine's one as the custom op inside a compiled function), and whether
the kernel's output is eager's pairwise one bit for bit.
"""

from __future__ import annotations

import sys

import torch

from ptrm_cli import gpu_script
from ptrm_cli.engine import norm_kernel

D = 512
EPS = 1e-5
# (rows a program, num_warps); the engine's is norm_kernel.CONFIG
CONFIGS = [(2, 1), (4, 1), (4, 4), (8, 2), (16, 2), (16, 4), (32, 4), (32, 8), (64, 8)]


def main() -> int:
    from ptrm_cli.bench_modes import median_ms
    from ptrm_cli.engine.model import rms_norm

    args = gpu_script.parser(__doc__).parse_args()
    if not torch.cuda.is_available() or norm_kernel.triton is None:
        print("norm_kernel.py needs a CUDA GPU and Triton", file=sys.stderr)
        return 2
    torch.manual_seed(0)
    a, b = (torch.randn(args.rows, args.tokens, D, device="cuda").to(torch.bfloat16)
            for _ in range(2))
    moved = 3 * a.numel() * 2  # bytes: read a and b, write the output (bf16)
    opts = {"deterministic": True, "emulate_precision_casts": True}  # the fast engine's
    eager = rms_norm(a + b, EPS, pairwise=True)
    out = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__,
           "triton": norm_kernel.triton.__version__, "rows": args.rows, "inductor": {},
           "kernel": []}
    print(f"{out['gpu']}, torch {torch.__version__}, triton {out['triton']}, "
          f"{args.rows} x {args.tokens} rows of {D}")

    def record(name: str, fn) -> None:
        got = fn()
        t = median_ms(fn, args.iters)
        same = float((got == eager).float().mean())
        out["inductor"][name] = {"ms": t, "gb_s": moved / t / 1e6, "identical_to_eager": same}
        print(f"{name:34}: {t:.3f} ms ({moved / t / 1e6:.0f} GB/s), "
              f"identical to eager pairwise: {same:.4%}")

    for name, pairwise in (("Inductor, reduction", False), ("Inductor, pairwise", True)):
        fn = torch.compile(lambda a, b: rms_norm(a + b, EPS, pairwise), options=opts)
        record(name, lambda: fn(a, b))
        torch._dynamo.reset()
    op = torch.compile(lambda a, b: norm_kernel.add_rms_norm(a, b, EPS), options=opts)
    record(f"the engine's custom op {norm_kernel.CONFIG}", lambda: op(a, b))
    for config in CONFIGS:
        try:
            got, _ = norm_kernel.launch(a, b, EPS, config)
            t = median_ms(lambda: norm_kernel.launch(a, b, EPS, config), args.iters)
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
