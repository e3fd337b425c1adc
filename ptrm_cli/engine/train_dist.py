"""Training on several GPUs of one machine: the process group, and the few places where ranks
talk besides DDP's gradient all-reduce.

    torchrun --nproc-per-node N -m ptrm_cli.engine.train CONFIG     (or ptrm train CONFIG --gpus N)

Each rank takes a contiguous slice of every global batch and of the exploration draws, and
gradients are averaged, so N ranks compute the single-GPU recipe. Only rank 0 logs and writes.
(Evaluation's sharding, `ptrm eval --gpus`, is distributed.py.)
"""

from __future__ import annotations

import inspect
import os
from dataclasses import dataclass

import torch
import torch.distributed as dist
from torch import Tensor, nn

from .launch import DIST_ENV  # set here too: a run started by plain torchrun


@dataclass
class DistInfo:
    """This process's place in the run; the defaults are a single process."""
    rank: int = 0
    world: int = 1
    local_rank: int = 0
    device: torch.device = torch.device("cpu")
    flag_group: object = None   # gloo group for host-side flags (no device sync)

    @property
    def main(self) -> bool:
        return self.rank == 0

    @property
    def on(self) -> bool:
        return self.world > 1


def setup_distributed(device: str = "auto") -> DistInfo:
    """torchrun sets WORLD_SIZE/RANK/LOCAL_RANK; without them this is a single process."""
    from ..options import resolve_device

    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world <= 1:
        return DistInfo(device=torch.device(resolve_device(device)))
    for k, v in DIST_ENV.items():
        os.environ.setdefault(k, v)
    rank, local_rank = int(os.environ["RANK"]), int(os.environ.get("LOCAL_RANK", "0"))
    use_cuda = torch.cuda.is_available() and device != "cpu"
    if use_cuda:
        dev = torch.device("cuda", local_rank)
        torch.cuda.set_device(dev)
    else:
        dev = torch.device("cpu")
    if not dist.is_initialized():
        dist.init_process_group("nccl" if use_cuda else "gloo",
                                **({"device_id": dev} if use_cuda else {}))
    flag_group = dist.new_group(backend="gloo") if use_cuda else None
    return DistInfo(rank, world, local_rank, dev, flag_group)


def wrap_ddp(module: nn.Module, d: DistInfo) -> nn.Module:
    """DistributedDataParallel around the training step (the caller checks `d.on`)."""
    from torch.nn.parallel import DistributedDataParallel as DDP

    # No buffer broadcast before every forward: the buffers are H_init/L_init (constant)
    # and the puzzle table, which sign-SGD updates identically on every rank - no need
    # to resend up to 2 GB per step. (Newer PyTorch renamed the switch.)
    no_sync = ({"forward_sync_buffers": False}
               if "forward_sync_buffers" in inspect.signature(DDP).parameters
               else {"broadcast_buffers": False})
    # Dynamo cuts compiled code that runs inside a DDP module into one graph per gradient
    # bucket, so that each bucket's all-reduce can start while backward goes on. TRM's
    # gradients are final only at the end of backward (one_bucket_mb), so the cuts buy no
    # overlap, only lost fusion and graph boundaries: on 4 x H100 the supervision step became
    # 7 compiled graphs, 26 CUDA graph launches and ~285 more kernels an update than on one
    # card (docs/PERFORMANCE.md, "Session 20"). One graph, as on one card. (A process-wide
    # setting: it acts only on code compiled inside a DDP forward, which is this step alone.)
    torch._dynamo.config.optimize_ddp = False
    return DDP(module, device_ids=[d.device] if d.device.type == "cuda" else None,
               bucket_cap_mb=one_bucket_mb(module), **no_sync)


def one_bucket_mb(module: nn.Module) -> float:
    """A bucket size that holds every gradient: one all-reduce per update. TRM runs the same
    weights at every recursion step, so no gradient is final before backward reaches the first
    step: DDP's 25 MB buckets buy no overlap with backward, only more NCCL calls (4 x H200:
    3% faster on one machine, 0.5% on another; docs/PERFORMANCE.md, "Session 18")."""
    size = sum(p.numel() * p.element_size() for p in module.parameters() if p.requires_grad)
    return size / 2**20 + 1


def any_rank(flag: bool, d: DistInfo) -> bool:
    """Whether `flag` is set on any rank. Ranks agree over a gloo group (host only), so every
    rank sees the same answer at the same step without a device sync."""
    if not d.on:
        return flag
    t = torch.tensor([int(flag)], dtype=torch.int32)
    if d.flag_group is None:  # gloo is the main backend (CPU)
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
    else:
        dist.all_reduce(t, op=dist.ReduceOp.MAX, group=d.flag_group)
    return bool(t.item())


def gather_to_main(tensors: dict[str, Tensor], d: DistInfo) -> dict[str, Tensor] | None:
    """Every rank's tensors concatenated along dim 0 in rank order, on the CPU, at rank 0
    (None on the other ranks); all ranks must call it."""
    if not d.on:
        return {k: v.detach().cpu() for k, v in tensors.items()}
    out = {}
    for k, v in tensors.items():
        parts = [torch.empty_like(v) for _ in range(d.world)]
        dist.all_gather(parts, v.contiguous())
        out[k] = torch.cat(parts).cpu()
    return out if d.main else None


def check_replicas(model: nn.Module, d: DistInfo, step: int) -> None:
    """DDP keeps replicas equal by construction; check it cheaply before every save (all ranks
    must call it)."""
    if not d.on:
        return
    with torch.no_grad():
        sums = torch.stack([p.detach().double().sum() for p in model.parameters()]
                           + [b.detach().double().sum() for b in model.buffers()])
        parts = [torch.empty_like(sums) for _ in range(d.world)]
        dist.all_gather(parts, sums)
    if not all(torch.equal(parts[0], p) for p in parts[1:]):
        raise RuntimeError(f"ranks disagree on the weights at step {step}")
