"""add + RMSNorm with the squares summed in the fixed pairwise order, as one Triton kernel: what
the compiled engine runs on a GPU for a model under `TRM.fixed_order_norm` (every model loaded
for inference; `--no-exact` undoes it).

Why a kernel of our own: summed as elementwise halvings (`model.pairwise_mean_square`), RMSNorm
gives eager's bits under torch.compile, but Inductor's kernel for that sum took twice its
reduction's time on an H100 (it keeps levels of the tree in memory) and a fixed run 10% more
(docs/PERFORMANCE.md, "Session 22"). This one holds a block of whole rows in registers, as 16
chunks: the first four halvings add whole chunks, the last ones reshape the one chunk left to
[2, C/2] and add the halves (a sum over an axis of 2 is one add), so the order is eager's.
rsqrt, the scale and the bf16 cast are where eager has them; one read of each input and one
write, as the reduction's kernel. On an H100 it takes 0.87-0.98 ms where the reduction takes
0.80-0.89 and Inductor's pairwise code 1.55-1.63, and a fixed run costs 0.5% more than with the
reduction (a first version that reshaped the whole row at every level took 1.85-2.15 ms;
docs/PERFORMANCE.md, "Session 23").

`add_rms_norm(a, b, eps)` is a torch custom op, so torch.compile calls it as one opaque node.
Where the kernel does not apply (no Triton, not CUDA, not bf16, a width that is not a power of
two from 32 to 1024) it is `rms_norm(a + b, eps, pairwise=True)`, eager: the same bits by
definition.
"""

from __future__ import annotations

import torch
from torch import Tensor

from .model import TRM, rms_norm

try:
    import triton
    import triton.language as tl
except ImportError:  # CPU-only installs: the op runs its eager definition
    triton = None

#: (rows a program, num_warps) of the engine's launches: never far from the fastest of nine
#: shapes on three H100s, 0.970, 0.978, 0.867 ms for 6,100 x 116 rows (scripts/norm_kernel.py)
CONFIG = (16, 2)
#: row widths the kernel takes: powers of two, 16 chunks of 2 to 64
WIDTHS = (32, 64, 128, 256, 512, 1024)

if triton is not None:
    @triton.jit
    def _halve(s, BR: tl.constexpr, W: tl.constexpr):
        # [BR, W] -> [BR, W/2]: element j plus element W/2 + j, as s[:W/2] + s[W/2:] in eager
        return tl.sum(tl.reshape(s, [BR, 2, W // 2]), axis=1)

    @triton.jit
    def _pairwise_sum(s, BR: tl.constexpr, W: tl.constexpr):
        # the halvings of a chunk, each level a compile-time width (a loop would change the
        # shape of its carried tensor, which Triton's loops do not allow)
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
    def _load(a_ptr, b_ptr, offs, mask):
        a = tl.load(a_ptr + offs, mask=mask, other=0.0).to(tl.float32)
        b = tl.load(b_ptr + offs, mask=mask, other=0.0).to(tl.float32)
        return (a + b).to(tl.bfloat16).to(tl.float32)  # eager adds in bf16, then .float()

    @triton.jit
    def add_rms_norm_kernel(a_ptr, b_ptr, out_ptr, ms_ptr, R, eps, W: tl.constexpr,
                            BR: tl.constexpr, INTERPRET: tl.constexpr):
        # A row of W is 16 chunks of C = W/16: h0 = elements 0..C-1, h1 = C..2C-1, ... Eager's
        # first halving adds element j to element j + W/2, i.e. chunk i to chunk i + 8, lane
        # by lane; the next chunk i to i + 4, then i + 2, i + 1: four levels of plain adds of
        # whole chunks, no data moved. The last log2(C) levels halve the one chunk left.
        C: tl.constexpr = W // 16
        rows = tl.program_id(0) * BR + tl.arange(0, BR)
        offs = rows[:, None].to(tl.int64) * W + tl.arange(0, C)[None, :]
        mask = rows[:, None] < R
        h0 = _load(a_ptr, b_ptr, offs, mask)
        h1 = _load(a_ptr, b_ptr, offs + C, mask)
        h2 = _load(a_ptr, b_ptr, offs + 2 * C, mask)
        h3 = _load(a_ptr, b_ptr, offs + 3 * C, mask)
        h4 = _load(a_ptr, b_ptr, offs + 4 * C, mask)
        h5 = _load(a_ptr, b_ptr, offs + 5 * C, mask)
        h6 = _load(a_ptr, b_ptr, offs + 6 * C, mask)
        h7 = _load(a_ptr, b_ptr, offs + 7 * C, mask)
        h8 = _load(a_ptr, b_ptr, offs + 8 * C, mask)
        h9 = _load(a_ptr, b_ptr, offs + 9 * C, mask)
        h10 = _load(a_ptr, b_ptr, offs + 10 * C, mask)
        h11 = _load(a_ptr, b_ptr, offs + 11 * C, mask)
        h12 = _load(a_ptr, b_ptr, offs + 12 * C, mask)
        h13 = _load(a_ptr, b_ptr, offs + 13 * C, mask)
        h14 = _load(a_ptr, b_ptr, offs + 14 * C, mask)
        h15 = _load(a_ptr, b_ptr, offs + 15 * C, mask)
        s0, s1, s2, s3 = h0 * h0 + h8 * h8, h1 * h1 + h9 * h9, h2 * h2 + h10 * h10, \
            h3 * h3 + h11 * h11
        s4, s5, s6, s7 = h4 * h4 + h12 * h12, h5 * h5 + h13 * h13, h6 * h6 + h14 * h14, \
            h7 * h7 + h15 * h15
        s0, s1, s2, s3 = s0 + s4, s1 + s5, s2 + s6, s3 + s7
        s0, s1 = s0 + s2, s1 + s3
        ms = _pairwise_sum(s0 + s1, BR, C) / W
        if INTERPRET:  # Triton's interpreter has no libdevice
            r = 1.0 / tl.sqrt(ms + eps)
        else:  # what Inductor emits for torch.rsqrt, which gives eager's bits
            r = tl.extra.cuda.libdevice.rsqrt(ms + eps)
        r = r[:, None]
        tl.store(out_ptr + offs, (h0 * r).to(tl.bfloat16), mask=mask)
        tl.store(out_ptr + offs + C, (h1 * r).to(tl.bfloat16), mask=mask)
        tl.store(out_ptr + offs + 2 * C, (h2 * r).to(tl.bfloat16), mask=mask)
        tl.store(out_ptr + offs + 3 * C, (h3 * r).to(tl.bfloat16), mask=mask)
        tl.store(out_ptr + offs + 4 * C, (h4 * r).to(tl.bfloat16), mask=mask)
        tl.store(out_ptr + offs + 5 * C, (h5 * r).to(tl.bfloat16), mask=mask)
        tl.store(out_ptr + offs + 6 * C, (h6 * r).to(tl.bfloat16), mask=mask)
        tl.store(out_ptr + offs + 7 * C, (h7 * r).to(tl.bfloat16), mask=mask)
        tl.store(out_ptr + offs + 8 * C, (h8 * r).to(tl.bfloat16), mask=mask)
        tl.store(out_ptr + offs + 9 * C, (h9 * r).to(tl.bfloat16), mask=mask)
        tl.store(out_ptr + offs + 10 * C, (h10 * r).to(tl.bfloat16), mask=mask)
        tl.store(out_ptr + offs + 11 * C, (h11 * r).to(tl.bfloat16), mask=mask)
        tl.store(out_ptr + offs + 12 * C, (h12 * r).to(tl.bfloat16), mask=mask)
        tl.store(out_ptr + offs + 13 * C, (h13 * r).to(tl.bfloat16), mask=mask)
        tl.store(out_ptr + offs + 14 * C, (h14 * r).to(tl.bfloat16), mask=mask)
        tl.store(out_ptr + offs + 15 * C, (h15 * r).to(tl.bfloat16), mask=mask)
        tl.store(ms_ptr + rows, ms, mask=rows < R)


def applies(a: Tensor, b: Tensor) -> bool:
    """Whether the Triton kernel computes add_rms_norm(a, b) (else it is the eager definition)."""
    w = a.shape[-1]
    return (triton is not None and a.is_cuda and a.dtype == b.dtype == torch.bfloat16
            and a.shape == b.shape and w in WIDTHS)


def launch(a: Tensor, b: Tensor, eps: float,
           config: tuple[int, int] = CONFIG, *, interpret: bool = False) -> tuple[Tensor, Tensor]:
    """The kernel on a, b (bf16 [..., W], W in WIDTHS): (out bf16, the mean square of each row
    in float32). interpret: under TRITON_INTERPRET=1.

    The mean squares are always written, to a buffer of their own (0.1% of the bytes moved),
    so that no tensor is handed to the kernel twice."""
    br, warps = config
    a, b = a.contiguous(), b.contiguous()
    w = a.shape[-1]
    rows = a.numel() // w
    out = torch.empty_like(a)
    ms = torch.empty(a.shape[:-1], device=a.device, dtype=torch.float32)
    add_rms_norm_kernel[(triton.cdiv(rows, br),)](a, b, out, ms, rows, eps, w, br, interpret,
                                                 num_warps=warps)
    return out, ms


def _add_rms_norm(a: Tensor, b: Tensor, eps: float) -> Tensor:
    """rms_norm(a + b, eps, pairwise=True), bit for bit: one Triton kernel where it applies.
    Contiguous either way, as the fake below says: torch.compile plans the code around the op
    with the fake's strides, and the kernel writes rows in order whatever the inputs' layout
    (a fake of `empty_like(a)` gave a transposed input transposed strides the kernel's output
    did not have; the engine's inputs are contiguous, a caller's need not be)."""
    if applies(a, b):
        return launch(a, b, eps)[0]
    return rms_norm(a + b, eps, pairwise=True).contiguous()


# An opaque custom op, not a `triton_op` (whose kernel Inductor launches from its own code):
# as a triton_op, the compiled engine's results were not eager's (99.9992% of the op's outputs,
# 67.7% of a fixed run's rollouts; session 23, one H100), at the reduction's speed, so what
# Inductor ran there was not this kernel as written. Opaque, 100%: Inductor calls this
# function, which launches the kernel, and the call's cost hides behind the GPU's work
add_rms_norm = torch.library.custom_op("ptrm::add_rms_norm_fixed_order", _add_rms_norm,
                                       mutates_args=())
add_rms_norm.register_fake(lambda a, b, eps: a.new_empty(a.shape))  # contiguous


def use(model: TRM) -> bool:
    """Give the kernel to every block of `model` that sums its norms in the fixed order: the
    norms over the hidden width (both of TRM-Att's, TRM-MLP's second; TRM-MLP's first, after the
    token mix, normalises across the sequence and keeps Inductor's code). Returns whether any
    block took it; none does where the kernel does not apply (not bf16, a width not in WIDTHS).
    For the engine's own copy of a model, compiled on a GPU: the eager loop keeps the plain
    definition, the yardstick the kernel is held to."""
    cfg = model.config
    if triton is None or cfg.dtype != torch.bfloat16 or cfg.hidden_size not in WIDTHS:
        return False  # the op would run its eager definition: Inductor's fused code is better
    took = False
    for block in model.L_level.layers:
        if block.pairwise_norm:
            block.add_norm = add_rms_norm
            took = True
    return took
