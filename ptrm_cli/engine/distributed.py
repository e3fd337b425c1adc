"""Several GPUs of one machine for evaluation: puzzles sharded across processes.

    torchrun --standalone --nproc_per_node 4 -m ptrm_cli.app eval --split golden ...
    ptrm eval --gpus 4 ...            # the same: re-launches itself under torchrun

Every process runs the same command. `setup` joins the process group (NCCL on CUDA, gloo on
CPU) and pins the process to cuda:LOCAL_RANK; `sample` / `run` give each rank a contiguous block
of puzzles, run the sampler there, and gather every rank's results to every rank through a
gloo group (results are small CPU tensors), so all ranks hold the full result and the rest of
the command (scoring, reports) runs unchanged; only rank 0 prints and writes. The result equals
a one-process run: a rollout's noise depends on its puzzle, not on its rank or batch, and rows
are computed independently. Commands end the group with `teardown` (barrier, then destroy) so
that no rank leaves while a peer still talks to it; `group(device)` wraps a block in
`setup` ... `teardown`.
"""

from __future__ import annotations

import os
import sys
from contextlib import contextmanager

import numpy as np
import torch

_GLOO = None  # the CPU group used to gather results


def world() -> tuple[int, int]:
    """(rank, world size); (0, 1) outside a launched group."""
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


def is_main() -> bool:
    return world()[0] == 0


def launched() -> bool:
    """True inside a torchrun launch of several processes."""
    return int(os.environ.get("WORLD_SIZE", "1")) > 1


def setup(device: str) -> str:
    """Join the process group when launched by torchrun; return this rank's device (cuda:i
    for a CUDA device, else the device unchanged). A no-op for a single process."""
    global _GLOO
    if not launched():
        return device
    import torch.distributed as dist

    from .launch import DIST_ENV  # set here too: eval or bench started by plain torchrun
    for k, v in DIST_ENV.items():
        os.environ.setdefault(k, v)
    local = int(os.environ.get("LOCAL_RANK", "0"))
    if device.startswith("cuda"):
        device = f"cuda:{local}"
        torch.cuda.set_device(local)
    if not dist.is_initialized():
        if device.startswith("cuda"):
            dist.init_process_group("nccl", device_id=torch.device(device))
        else:
            dist.init_process_group("gloo")
    if _GLOO is None:
        _GLOO = dist.new_group(backend="gloo") if dist.get_backend() != "gloo" else \
            dist.group.WORLD
    return device


def teardown():
    """Leave the process group once every rank is done with it. The barrier matters: a rank
    that destroys its gloo group while a peer still finishes its last exchange can abort at
    exit ("terminate called without an active exception", 1 run in 10 on a 2-core box)."""
    global _GLOO
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        barrier()
        dist.destroy_process_group()
    _GLOO = None


@contextmanager
def group(device: str):
    """`setup` on entry, `teardown` on a normal exit. After an error there is no barrier: the
    other ranks may never reach it, and the launcher ends them when this one exits."""
    device = setup(device)
    yield device
    teardown()


def shard(n: int, rank: int, size: int) -> tuple[int, int]:
    """Rank's contiguous block [lo, hi) of n items (sizes differ by at most one)."""
    bounds = np.linspace(0, n, size + 1).round().astype(int)
    return int(bounds[rank]), int(bounds[rank + 1])


def gather(obj, participants: int | None = None) -> list:
    """Every rank's `obj`, in rank order, on every rank (ranks >= participants send None)."""
    import torch.distributed as dist

    rank, size = world()
    if size == 1:
        return [obj]
    out = [None] * size
    dist.all_gather_object(out, obj, group=_GLOO)
    return out[:participants or size]


def barrier():
    import torch.distributed as dist

    if world()[1] > 1:
        dist.barrier(group=_GLOO)


def _cat(parts):
    parts = [p for p in parts if p is not None]
    return torch.cat(parts) if parts else None


def sample(model, inputs: torch.Tensor, cfg, *, seed: int = 0, puzzle_ids=None,
           on_chunk=None, participants: int | None = None, **kw):
    """sampler.sample over this rank's block of puzzles, results gathered from all ranks.
    `participants`: use only ranks 0..participants-1 (the others return the gathered result
    without computing; used by `ptrm bench` to time 1, 2, ... GPUs in one launch)."""
    from .sampler import Rollouts
    from .sampler import sample as sample_one

    rank, size = world()
    n = participants or size
    if size == 1:
        return sample_one(model, inputs, cfg, seed=seed, puzzle_ids=puzzle_ids,
                          on_chunk=on_chunk, **kw)
    local = None
    P = inputs.shape[0]
    if rank < n:
        lo, hi = shard(P, rank, n)
        # rank 0 reports its own share's progress for all (the shards are alike in size):
        # a long evaluation shows how far it got, not only when it ends
        mine = None if on_chunk is None or rank != 0 or hi == lo else \
            (lambda stop, total: on_chunk(min(P - 1, stop * P // total), P))
        r = sample_one(model, inputs[lo:hi], cfg, seed=seed,
                       puzzle_ids=None if puzzle_ids is None else puzzle_ids[lo:hi],
                       on_chunk=mine, **kw)
        local = (r.preds, r.q, r.step_q, r.step_preds, r.latents)
    parts = [p for p in gather(local, n) if p is not None]
    out = Rollouts(*(_cat([p[i] for p in parts]) for i in range(5)))
    if on_chunk is not None:
        on_chunk(P, P)
    return out


def run(engine, inputs: torch.Tensor, *, puzzle_ids=None, verify=None,
        participants: int | None = None, **kw):
    """fast.run over this rank's block of puzzles (verify gets global puzzle indices), results
    gathered from all ranks into one PoolResult."""
    from .fast import PoolResult
    from .fast import run as run_one

    rank, size = world()
    n = participants or size
    if size == 1:
        return run_one(engine, inputs, puzzle_ids=puzzle_ids, verify=verify, **kw)
    local = None
    if rank < n:
        lo, hi = shard(inputs.shape[0], rank, n)
        v = None if verify is None else (lambda p, preds: verify(p + lo, preds))
        r = run_one(engine, inputs[lo:hi], verify=v,
                    puzzle_ids=None if puzzle_ids is None else puzzle_ids[lo:hi], **kw)
        local = r
    parts = [p for p in gather(local, n) if p is not None]
    cat = lambda name: _cat([getattr(p, name) for p in parts])  # noqa: E731
    row_steps = sum(p.row_steps for p in parts)
    return PoolResult(cat("preds"), cat("q"), cat("steps"), cat("chosen"), cat("stopped"),
                      cat("valid"), row_steps, cat("puzzle_row_steps"),
                      float(sum(p.flops for p in parts)), cat("step_q"), cat("step_preds"),
                      any(p.timed_out for p in parts),
                      {"ranks": n, "per_rank": [p.stats for p in parts]})


def check_gpus(nproc: int, device: str) -> None:
    """`--gpus N` needs N CUDA devices; with `--device cpu` it runs N CPU processes instead
    (how the tests run the sharded path), asked for by name, never by accident."""
    from ..errors import PtrmError

    have = torch.cuda.device_count()
    if device != "cpu" and have < nproc:
        raise PtrmError(f"--gpus {nproc}: this machine has {have} CUDA device(s)",
                        hint=f"--device cpu --gpus {nproc} runs {nproc} CPU "
                             f"process{'es' if nproc > 1 else ''} instead")


def relaunch(nproc: int, argv: list[str] | None = None) -> int:
    """Run this command again in nproc processes (engine/launch.py, torchrun's launcher;
    without its --gpus option) and return the launch's exit status."""
    from . import launch

    return launch.run(nproc, "ptrm_cli.app", strip_gpus(sys.argv[1:] if argv is None else argv))


def strip_gpus(args: list[str]) -> list[str]:
    out, skip = [], False
    for a in args:
        if skip:
            skip = False
            continue
        if a == "--gpus":
            skip = True
            continue
        if a.startswith("--gpus="):
            continue
        out.append(a)
    return out
