#!/usr/bin/env python3
"""Which compiled op parts the fast engine from eager? Issue #9 asks for identical results at
the same seed; on a GPU, fast and eager give 60-68% identical rollouts (docs/PERFORMANCE.md).
A rollout is ~1,000 network applications: one bf16 element rounded differently anywhere grows
until the argmax changes. This finds where the first differences come from: each elementwise
stage of a block and one whole network application (L_level: 2 blocks), eager against
compiled with the fast engine's Inductor options, on the same inputs, on this GPU.

    python scripts/op_parity.py [--rows 500] [--json out.json]

Prints, per stage, the share of output elements bit-identical to eager and the largest
difference, for the engine's options (deterministic, eager-like rounding of bf16
intermediates) and Inductor's defaults. Inputs: random bf16 activations of unit RMS (what the
post-norm blocks carry) and the bundled model's weights for the application.

What it found (session 22, one H100, docs/PERFORMANCE.md): with the engine's options only
RMSNorm's sum of squares differed (a reduction kernel's order); summed in a fixed pairwise
order (`TRM.fixed_order_norm`), a whole application was bit-identical, and so was a fixed
K=100, D=48 run on the golden set (`ptrm bench --exact`).
"""

from __future__ import annotations

import contextlib
import sys

import torch
import torch.nn.functional as F

from ptrm_cli import gpu_script
from ptrm_cli.engine import model as M


def stages(cfg: M.TRMConfig, rows: int, device) -> dict:
    """stage name -> (eager function, its inputs), the elementwise work between matmuls."""
    S, D, H = cfg.total_len, cfg.hidden_size, cfg.num_heads
    bf = torch.bfloat16

    def act(*shape):
        return torch.randn(*shape, device=device).to(bf)

    rope = M.RotaryEmbedding(D // H, S, cfg.rope_theta)
    rope.reset_tables(device)
    cos, sin = rope.cos_cached, rope.sin_cached
    eps = cfg.rms_norm_eps
    return {
        "add + RMSNorm": (lambda a, b: M.rms_norm(a + b, eps), (act(rows, S, D), act(rows, S, D))),
        "add + RMSNorm, pairwise sum": (lambda a, b: M.rms_norm(a + b, eps, pairwise=True),
                                        (act(rows, S, D), act(rows, S, D))),
        "RoPE": (lambda q: M.apply_rope(q, cos, sin), (act(rows, S, H, D // H),)),
        "SiLU·up": (lambda gu: (lambda g, u: F.silu(g) * u)(*gu.chunk(2, -1)),
                    (act(rows, S, 2 * M.swiglu_inter(D, cfg.expansion)),)),
        "injection add": (lambda a, b: a + b, (act(rows, S, D), act(rows, S, D))),
    }


def compare(fn, args, options: dict) -> dict:
    eager = fn(*args)
    got = torch.compile(fn, dynamic=False, options=options)(*args)
    diff = (got.float() - eager.float()).abs()
    return {"identical": float((got == eager).float().mean()), "max_abs_diff": float(diff.max())}


def main() -> int:
    p = gpu_script.parser(__doc__, rows=500, timed=False)
    p.add_argument("-c", "--checkpoint", default="ptrm_cli/models/default")
    args = p.parse_args()
    if not torch.cuda.is_available():
        print("op_parity.py needs a CUDA GPU (on a CPU the engine runs eager math)",
              file=sys.stderr)
        return 2
    from ptrm_cli.engine.checkpoint import load_checkpoint
    from ptrm_cli.engine.fast import precast

    torch.manual_seed(0)
    dev = torch.device("cuda")
    model = precast(load_checkpoint(args.checkpoint, dev)[0])
    cfg = model.config
    variants = {"engine": {"deterministic": True, "emulate_precision_casts": True},
                "inductor default": {}}
    out = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "rows": args.rows,
           "stages": {}}
    print(f"{out['gpu']}, torch {torch.__version__}, {args.rows} rows x {cfg.total_len} tokens")
    todo = stages(cfg, args.rows, dev)
    bf = torch.bfloat16
    state = [torch.randn(args.rows, cfg.total_len, cfg.hidden_size, device=dev).to(bf)
             for _ in range(2)]
    rope = model._rope()
    block = model.L_level.layers[0]
    attn = block.self_attn
    qkv = attn.qkv_proj(state[0]).view(args.rows, cfg.total_len, 3 * cfg.num_heads, -1)

    def sdpa(qkv):  # the model's SDPA call on the model's views of one qkv tensor
        q, k, v = (t.transpose(1, 2) for t in qkv.split(cfg.num_heads, dim=2))
        return F.scaled_dot_product_attention(q, k, v, is_causal=False)

    application = (lambda z, inj: model.L_level(z, inj, rope), state)
    todo.update({
        "qkv matmul": (attn.qkv_proj, state[:1]),
        "SDPA": (sdpa, (qkv,)),
        "attention (qkv to o_proj)": (lambda x: attn(x, rope), state[:1]),
        "SwiGLU (gate_up to down)": (block.mlp, state[:1]),
        "network application (L_level)": application,
        "application, pairwise RMSNorm": application,
        "application, pairwise RMSNorm, SDPA flash": application,
        "application, pairwise RMSNorm, SDPA cuDNN": application,
        "application, pairwise RMSNorm, SDPA efficient": application,
    })
    from torch.nn.attention import SDPBackend, sdpa_kernel
    backends = {"flash": SDPBackend.FLASH_ATTENTION, "cuDNN": SDPBackend.CUDNN_ATTENTION,
                "efficient": SDPBackend.EFFICIENT_ATTENTION}
    with torch.no_grad():
        for name, (fn, inputs) in todo.items():
            model.fixed_order_norm("pairwise" in name)
            only = [b for word, b in backends.items() if name.endswith("SDPA " + word)]
            try:
                with sdpa_kernel(only) if only else contextlib.nullcontext():
                    row = {v: compare(fn, inputs, opts) for v, opts in variants.items()}
            except RuntimeError as e:  # a backend this card or these shapes do not have
                print(f"{name:32} failed: {str(e)[:160]}")
                continue
            torch._dynamo.reset()
            out["stages"][name] = row
            print(f"{name:32} " + "   ".join(
                f"{v}: {r['identical']:.4%} identical, max |diff| {r['max_abs_diff']:.3g}"
                for v, r in row.items()))
    gpu_script.write_json(args.json, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
