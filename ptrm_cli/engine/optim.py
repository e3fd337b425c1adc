"""Optimizers and learning-rate schedule of the TRM recipe (TRM_REFERENCE.md §4), pure PyTorch.

AdamATan2      Adam with atan2(m, sqrt(v)) in place of m / (sqrt(v) + eps): bounded steps and no
               epsilon to tune. The exact update of the `adam-atan2` package the reference uses,
               without its compiled CUDA extension.
SignSGDEmbedding
               sign-SGD on the rows of the puzzle-embedding table that the batch touched (the
               table is a buffer, far too large for Adam state on ARC: ~1M rows x 512).
lr_at          linear warm-up, then cosine decay to lr_min_ratio * lr (constant when 1.0).
"""

from __future__ import annotations

import math

import torch
import torch.distributed as dist
from torch import Tensor


class AdamATan2(torch.optim.Optimizer):
    """Per element, with t the number of updates so far including this one:

        p <- p * (1 - lr * wd)                       decoupled weight decay, on every parameter
        m <- m + (1 - b1) * (g - m)
        v <- v + (1 - b2) * (g^2 - v)
        p <- p - lr / (1 - b1^t) * atan2(m, sqrt(v) / sqrt(1 - b2^t))

    No epsilon and no scale constants (unlike the a=1.27, b=1 variant elsewhere); the b1 bias
    correction scales the step size, outside the atan2. |atan2| < pi/2 bounds every step by
    lr * pi / 2 / (1 - b1^t) no matter how small v is.
    """

    def __init__(self, params, lr: float = 1e-4, betas: tuple[float, float] = (0.9, 0.95),
                 weight_decay: float = 0.1):
        if lr < 0 or weight_decay < 0 or not (0 <= betas[0] < 1 and 0 <= betas[1] < 1):
            raise ValueError(f"bad AdamATan2 settings: lr={lr}, betas={betas}, "
                             f"weight_decay={weight_decay}")
        super().__init__(params, dict(lr=lr, betas=tuple(betas), weight_decay=weight_decay))

    @torch.no_grad()
    def step(self, closure=None):
        for params, grads, ms, vs, scalars in self.pending():
            adam_atan2_(params, grads, ms, vs, **scalars)

    def pending(self) -> list[tuple[list[Tensor], list[Tensor], list[Tensor], list[Tensor],
                                    dict[str, float]]]:
        """Count this update and return, per group with gradients, what `adam_atan2_` takes:
        (params, grads, exp_avgs, exp_avg_sqs, scalars). `step` is `adam_atan2_` over these; a
        caller that fuses more into the update (the trainer's compiled optimizer + EMA) calls
        `pending` and then its own function."""
        out = []
        for group in self.param_groups:
            params = [p for p in group["params"] if p.grad is not None]
            if not params:
                continue
            ms, vs = [], []
            for p in params:
                state = self.state[p]
                if not state:
                    state["step"] = 0
                    state["exp_avg"] = torch.zeros_like(p, memory_format=torch.preserve_format)
                    state["exp_avg_sq"] = torch.zeros_like(p, memory_format=torch.preserve_format)
                state["step"] += 1
                ms.append(state["exp_avg"])
                vs.append(state["exp_avg_sq"])
            # All parameters of a group step together, so one t serves them all; the scalars
            # are Python floats, so the bias corrections cost no device sync (a compiled update
            # takes them as 0-d tensors instead: train_loop._scalars_as_tensors says why)
            t = self.state[params[0]]["step"]
            lr, wd = group["lr"], group["weight_decay"]
            b1, b2 = group["betas"]
            scalars = dict(b1=b1, b2=b2, decay=1 - lr * wd, root_c2=math.sqrt(1 - b2 ** t),
                           step_size=lr / (1 - b1 ** t))
            out.append((params, [p.grad for p in params], ms, vs, scalars))
        return out

    # -- state as plain tensors (safetensors, no pickle) -----------------------------------------
    def moments(self, names: dict[Tensor, str]) -> tuple[dict[str, Tensor], int]:
        """({"<name>.exp_avg": m, "<name>.exp_avg_sq": v}, t) for every parameter with state."""
        out, t = {}, 0
        for p, state in self.state.items():
            if state:
                out[f"{names[p]}.exp_avg"] = state["exp_avg"]
                out[f"{names[p]}.exp_avg_sq"] = state["exp_avg_sq"]
                t = state["step"]
        return out, t

    def load_moments(self, tensors: dict[str, Tensor], t: int, names: dict[Tensor, str]) -> None:
        """Inverse of `moments`. Every parameter must be present (a partial load would resume
        some parameters with fresh moments and others without: refuse it)."""
        for group in self.param_groups:
            for p in group["params"]:
                key = names[p]
                try:
                    m, v = tensors[f"{key}.exp_avg"], tensors[f"{key}.exp_avg_sq"]
                except KeyError:
                    raise KeyError(f"optimizer state has no moments for {key!r}") from None
                if m.shape != p.shape or v.shape != p.shape:
                    raise ValueError(f"optimizer state for {key!r} has shape {tuple(m.shape)}, "
                                     f"the parameter {tuple(p.shape)}")
                self.state[p] = {"step": int(t), "exp_avg": m.to(p.device, p.dtype).clone(),
                                 "exp_avg_sq": v.to(p.device, p.dtype).clone()}


def adam_atan2_(params: list[Tensor], grads: list[Tensor], ms: list[Tensor], vs: list[Tensor],
                *, b1: float, b2: float, decay: float | Tensor, root_c2: float | Tensor,
                step_size: float | Tensor) -> None:
    """AdamATan2's update of lists of tensors, in place, with the scalars `pending` works out:
    decay = 1 - lr * wd, root_c2 = sqrt(1 - b2^t), step_size = lr / (1 - b1^t). Multi-tensor
    (foreach) ops: a few kernels for all parameters, plus one atan2 each. The three scalars
    that change every update may be 0-d tensors on the parameters' device: a compiled caller
    passes them so (torch.compile bakes a foreach op's float into the code and would compile
    again at every update)."""
    if isinstance(decay, Tensor) or decay != 1:  # no weight decay: no pass over the weights
        torch._foreach_mul_(params, decay)
    torch._foreach_lerp_(ms, grads, 1 - b1)
    torch._foreach_lerp_(vs, torch._foreach_mul(grads, grads), 1 - b2)
    denom = torch._foreach_sqrt(vs)
    torch._foreach_div_(denom, root_c2)
    steps = [torch.atan2(m, d) for m, d in zip(ms, denom)]
    if isinstance(step_size, Tensor):  # alpha= takes a number only
        torch._foreach_mul_(steps, step_size)
        torch._foreach_sub_(params, steps)
    else:  # one rounding (p - s * step, fused), as the reference
        torch._foreach_add_(params, steps, alpha=-step_size)


class SignSGDEmbedding:
    """Sparse sign-SGD for the puzzle-embedding table (the reference's
    CastedSparseEmbeddingSignSGD_Distributed). For the rows the batch used:

        w <- w * (1 - lr * wd) - lr * sign(sum of the gradients of that row)

    Rows outside the batch are left alone (no decay either). Gradients of one id from several
    batch rows, and across ranks, are summed before the sign, so the update is the same however
    the global batch is split. Summing by a [G, G] same-id matrix rather than unique() keeps
    shapes static and the host out of the loop (unique() would sync every step)."""

    def __init__(self, table: Tensor, lr: float = 1e-2, weight_decay: float = 0.1):
        self.table, self.lr, self.weight_decay = table, lr, weight_decay

    @torch.no_grad()
    def step(self, ids: Tensor, grad: Tensor, lr: float | None = None) -> None:
        """ids [B] of the rows looked up; grad [B, ndim] their gradients (this rank's)."""
        lr = self.lr if lr is None else lr
        if dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1:
            ids, grad = _all_gather_cat(ids), _all_gather_cat(grad)
        same = (ids[:, None] == ids[None, :]).to(torch.float64)
        summed = same @ grad.to(torch.float64)     # row i: total gradient of id ids[i]
        step = lr * summed.sign().to(self.table.dtype)
        new = self.table[ids] * (1 - lr * self.weight_decay) - step
        self.table[ids] = new  # duplicate ids write identical values: order does not matter


def _all_gather_cat(t: Tensor) -> Tensor:
    parts = [torch.empty_like(t) for _ in range(dist.get_world_size())]
    dist.all_gather(parts, t.contiguous())
    return torch.cat(parts)


def lr_at(step: int, *, base: float, warmup: int, total: int, min_ratio: float = 1.0) -> float:
    """Learning rate of update number `step` (1-based: the first update uses base / warmup,
    as in the reference, which increments its counter before use)."""
    if step < warmup:
        return base * step / warmup
    progress = min(1.0, (step - warmup) / max(1, total - warmup))
    return base * (min_ratio + (1 - min_ratio) * 0.5 * (1 + math.cos(math.pi * progress)))
