"""Training a TRM: deep supervision with ACT halting, EMA, AdamATan2 (TRM_REFERENCE.md §3-4).

One optimizer update per supervision step. The batch is a set of slots; each slot holds one
example and its carry (y, z) across updates:

    for every update:
        slots that halted take the next examples of the data stream (fresh carry, ACT step 0);
        the others keep their example and carry (the new examples meant for them are dropped,
        as in the reference)
        one supervision step with gradient through its last latent recursion
        loss = stablemax CE + 0.5 * BCE(q_halt, answer exactly right); AdamATan2 update;
        sign-SGD on the puzzle-embedding rows used; EMA update
        halt a slot when its Q head says so (q_halt > 0), when it has had N_sup steps, and -
        with probability 0.1 - not before a random minimum number of steps (exploration)

Evaluation runs every validation example for all N_sup steps with the EMA weights (no early
halting), then scores exact accuracy, cell accuracy and Q-halt accuracy.

A run directory holds:

    config.resolved.yaml    the config as run (dataset-derived model sizes filled in)
    log.jsonl               one JSON object per line: start, train, eval, checkpoint, end events
    checkpoints/step_<N>/   model.safetensors + config.json (EMA weights; `ptrm solve` reads
                            it), plus the resume state:
                              train_state.json           step, data position, RNG, best so far
                              train_state.safetensors    raw (non-EMA) fp32 parameters
                              optimizer.safetensors      AdamATan2 moments      (exact resume)
                              carry.safetensors          the batch slots' carry (exact resume)
    checkpoints/last, best  symlinks to the newest and the best-on-validation step_<N>

`--resume` continues exactly (same step, optimizer, carry, data position; bitwise on CPU).
A warm start (`resume.weights_only`, `--init-from DIR`) takes only the weights, the EMA and
the step counter, and starts AdamATan2's moments from zero: the files worth carrying between
machines are model.safetensors + train_state.* (see docs/TRAINING.md).

Several GPUs: `torchrun --nproc-per-node N -m ptrm_cli.engine.train CONFIG` (or
`ptrm train CONFIG --gpus N`). Each rank takes a contiguous slice of every global batch and of
the exploration draws, and gradients are averaged, so N ranks compute the single-GPU recipe.
Only rank 0 logs and writes.

The hot loop never waits for the device: batches are copied asynchronously, metrics accumulate
on the device and are read every `log.every` steps, random draws come from a generator seeded
per step.
"""

from __future__ import annotations

import argparse
import base64
import dataclasses
import hashlib
import inspect
import json
import os
import re
import shutil
import signal
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np
import torch
import torch.distributed as dist
from torch import Tensor, nn

from ..atomic import write_text
from ..errors import PtrmError
from .checkpoint import CONFIG as CKPT_CONFIG, WEIGHTS as CKPT_WEIGHTS, save_checkpoint
from .data import Dataset, Split, load_dataset
from .losses import act_loss
from .model import TRM, Carry, TRMConfig, count_parameters, flops_per_step
from .optim import AdamATan2, SignSGDEmbedding, lr_at
from .train_config import Config, check_config, load_config, model_config

STATE_FORMAT = "ptrm-train-state/1"
# Our GPU hosts need NVLink multicast off (NCCL NVLS and symmetric-memory multicast).
DIST_ENV = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1"}


# -- the order examples enter the batch ----------------------------------------------------------

class BatchStream:
    """An endless concatenation of epochs, cut into global batches of example indices.

    `group` sampling is the reference's (§5.1): per epoch a random order of the base puzzles
    (`puzzle` column); for each, one random augmented version, whose examples all go in, in a
    random order. The epoch's order is a pure function of (seed, epoch), so the position
    (epoch, offset) is the whole state: resuming recomputes the order and skips ahead.
    Unlike the reference, batches run on across epoch boundaries instead of dropping the
    last partial batch of every evaluation interval (a few examples per interval)."""

    def __init__(self, split: Split, batch_size: int, seed: int, sampling: str = "group"):
        self.batch_size, self.seed, self.sampling = batch_size, seed, sampling
        self.n = len(split)
        if self.n == 0:
            raise PtrmError("the training split is empty")
        self.epoch, self.offset = 0, 0
        self._cached: tuple[int, np.ndarray] | None = None
        if sampling == "group":
            puzzle = np.asarray(split.puzzle, dtype=np.int64)
            pid = np.asarray(split.puzzle_id, dtype=np.int64)
            version_key = np.stack([puzzle, np.where(pid > 0, pid, -1 - np.arange(self.n))], 1)
            versions, inverse = np.unique(version_key, axis=0, return_inverse=True)
            inverse = inverse.reshape(-1)
            self.rows = np.argsort(inverse, kind="stable")               # rows by version
            self.v_start = np.searchsorted(inverse[self.rows], np.arange(len(versions)))
            self.v_len = np.bincount(inverse, minlength=len(versions))
            groups, self.g_start = np.unique(versions[:, 0], return_index=True)
            self.g_len = np.diff(np.append(self.g_start, len(versions)))
            self.num_groups = len(groups)
            self.examples_per_epoch = self.num_groups * self.n / len(versions)
            self._one_row_versions = bool((self.v_len == 1).all())
        else:
            self.num_groups = self.n
            self.examples_per_epoch = float(self.n)

    def epoch_order(self, epoch: int) -> np.ndarray:
        rng = np.random.default_rng([self.seed, epoch])
        if self.sampling == "example":
            return rng.permutation(self.n)
        groups = rng.permutation(self.num_groups)
        offset = (rng.random(len(groups)) * self.g_len[groups]).astype(np.int64)
        pick = self.g_start[groups] + offset                       # one version per group
        if self._one_row_versions:
            return self.rows[self.v_start[pick]]
        lengths = self.v_len[pick]
        which = np.repeat(np.arange(len(pick)), lengths)
        within = np.arange(lengths.sum()) - np.repeat(np.cumsum(lengths) - lengths, lengths)
        idx = self.rows[np.repeat(self.v_start[pick], lengths) + within]
        return idx[np.argsort(which + rng.random(len(idx)), kind="stable")]  # shuffle in version

    def _order(self, epoch: int) -> np.ndarray:
        if self._cached is None or self._cached[0] != epoch:
            self._cached = (epoch, self.epoch_order(epoch))
        return self._cached[1]

    def next(self) -> np.ndarray:
        parts, need = [], self.batch_size
        while need:
            order = self._order(self.epoch)
            take = order[self.offset:self.offset + need]
            parts.append(take)
            need -= len(take)
            self.offset += len(take)
            if self.offset >= len(order):
                self.epoch, self.offset = self.epoch + 1, 0
        return np.concatenate(parts)

    def state(self) -> dict:
        return {"epoch": self.epoch, "offset": self.offset}

    def load_state(self, state: dict) -> None:
        self.epoch, self.offset = int(state["epoch"]), int(state["offset"])


# -- distributed set-up --------------------------------------------------------------------------

@dataclass
class DistInfo:
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


# -- EMA -----------------------------------------------------------------------------------------

class EMA:
    """A second TRM whose parameters are the exponential moving average of the trained ones
    (shadow <- rate * shadow + (1 - rate) * param after every update) and whose buffers (puzzle
    table, H_init/L_init) are the trained model's own tensors, shared, not copied: the reference
    averages parameters only, and the ARC puzzle table is 2 GB."""

    def __init__(self, model: TRM, rate: float):
        self.rate = rate
        device = model.H_init.device
        params = dict(model.named_parameters())
        state = {k: (params[k].detach().clone() if k in params else v)
                 for k, v in model.state_dict().items()}
        self.model = TRM.from_state_dict(model.config, state, device=device).eval()
        self.model.requires_grad_(False)
        self._src = list(model.parameters())
        self._dst = list(self.model.parameters())

    @torch.no_grad()
    def update(self) -> None:
        torch._foreach_lerp_(self._dst, self._src, 1 - self.rate)


# -- the training step as a module (what DistributedDataParallel wraps) ---------------------------

class _TrainStep(nn.Module):
    """embed -> reset halted slots -> one supervision step with gradient. DDP hooks a module's
    forward, and TRM.forward is the evaluation roll-out, so the step gets its own module."""

    def __init__(self, model: TRM, step_fn: Callable):
        super().__init__()
        self.model = model
        self.step_fn = step_fn

    def forward(self, inputs: Tensor, puzzle_ids: Tensor, y: Tensor, z: Tensor, reset: Tensor):
        x = self.model.embed(inputs, puzzle_ids)  # eager: records the puzzle-embedding rows
        carry = self.model.reset_carry(Carry(y, z), reset)
        return self.step_fn(carry, x, grad=True)


# -- the trainer ---------------------------------------------------------------------------------

class Stop(Exception):
    """Raised by the trainer after it saved a checkpoint on SIGINT/SIGTERM."""


class Trainer:
    """One training run: `Trainer(cfg).run()`. Holds the model, its EMA twin, the optimizers,
    the batch slots (example + carry + ACT step per slot) and the data position; `save` and
    `_restore` write and read all of it. `train_step` is one update (benchmarks call it
    directly); `on_step(trainer)` is called after every update (tests use it to interrupt)."""

    def __init__(self, cfg: Config, *, resume: bool = False, dataset: Dataset | None = None,
                 on_step: Callable[["Trainer"], None] | None = None,
                 dist_info: DistInfo | None = None):
        check_config(cfg)
        self.cfg, self.on_step = cfg, on_step
        self.dist = dist_info or setup_distributed(cfg.device)
        self.device = self.dist.device
        self.run_dir = Path(cfg.run_dir)
        self.ckpt_dir = self.run_dir / "checkpoints"
        t = cfg.train

        # data
        self.dataset = dataset if dataset is not None else load_dataset(cfg.data.path)
        self.fingerprint = _dataset_fingerprint(self.dataset)
        self.train_split = self.dataset.split(cfg.data.train_split)
        self.val_split = None
        if cfg.data.val_split:
            if cfg.data.val_split in self.dataset.splits:
                self.val_split = self.dataset.split(cfg.data.val_split)
            elif self.dist.main:
                print(f"warning: dataset has no split {cfg.data.val_split!r}: no evaluation",
                      file=sys.stderr)
        if t.global_batch_size % self.dist.world:
            raise PtrmError(f"train.global_batch_size {t.global_batch_size} does not split "
                            f"evenly over {self.dist.world} ranks")
        self.G = t.global_batch_size
        self.B = self.G // self.dist.world
        self.stream = BatchStream(self.train_split, self.G, cfg.seed, cfg.data.sampling)
        self.total_steps = (t.max_steps if t.max_steps is not None else
                            int(t.epochs * self.stream.examples_per_epoch / self.G))
        steps_per_epoch = self.stream.examples_per_epoch / self.G
        self.eval_every = (cfg.eval.every_steps if cfg.eval.every_steps is not None else
                           max(1, round(cfg.eval.interval * steps_per_epoch)))

        # model: the same seed on every rank, so every rank starts from the same weights
        self.model_cfg = model_config(cfg, self.dataset)
        ids = np.asarray(self.train_split.puzzle_id)
        if len(ids) and self.model_cfg.puzzle_emb_ndim and int(ids.max()) >= \
                self.model_cfg.num_puzzle_identifiers:
            raise PtrmError(f"puzzle_id {int(ids.max())} in the training split is outside the "
                            f"dataset's num_puzzle_ids {self.model_cfg.num_puzzle_identifiers}")
        torch.manual_seed(cfg.seed)
        self.model = TRM(self.model_cfg).to(self.device).train()
        self.param_names = {p: n for n, p in self.model.named_parameters()}
        self.opt = AdamATan2(self.model.parameters(), lr=0.0, betas=(t.beta1, t.beta2),
                             weight_decay=t.weight_decay)
        self.sign_sgd = (SignSGDEmbedding(self.model.puzzle_emb.weights, t.puzzle_emb_lr,
                                          t.puzzle_emb_weight_decay)
                         if hasattr(self.model, "puzzle_emb") else None)
        self.ema = EMA(self.model, t.ema_rate) if t.ema else None

        # state that a checkpoint restores
        self.step = 0
        self.rewarm_from: int | None = None
        self.best: dict | None = None
        self.last_eval: dict | None = None
        self._init_slots()
        self._explore_gen = torch.Generator(device=self.device)

        if resume and cfg.resume.init_from:
            raise PtrmError("--resume and --init-from together: resume continues this run, "
                            "init-from starts a new one from another run's checkpoint")
        self.resumed_from: str | None = None
        if resume:
            self._restore(self._latest_checkpoint(), exact=not cfg.resume.weights_only)
        else:
            if self._checkpoints():
                raise PtrmError(f"{self.run_dir} already has checkpoints",
                                hint="pass --resume to continue it, or choose another run_dir")
            if cfg.resume.init_from:
                self._restore(Path(cfg.resume.init_from), exact=False)

        # the step function: compiled or not, wrapped in DDP when distributed
        step_fn = self.model.step
        eval_model = self.ema.model if self.ema else self.model
        self.eval_step = eval_model.step
        if t.compile:
            step_fn = torch.compile(self.model.step, mode=t.compile_mode)
            self.eval_step = torch.compile(eval_model.step, mode=t.compile_mode)
        self.forward: nn.Module = _TrainStep(self.model, step_fn)
        if self.dist.on:
            from torch.nn.parallel import DistributedDataParallel as DDP

            # No buffer broadcast before every forward: the buffers are H_init/L_init (constant)
            # and the puzzle table, which sign-SGD updates identically on every rank - no need
            # to resend up to 2 GB per step. (Newer PyTorch renamed the switch.)
            no_sync = ({"forward_sync_buffers": False}
                       if "forward_sync_buffers" in inspect.signature(DDP).parameters
                       else {"broadcast_buffers": False})
            self.forward = DDP(self.forward, device_ids=[self.device] if
                               self.device.type == "cuda" else None, **no_sync)
        self._metric_sum = torch.zeros(8, dtype=torch.float64, device=self.device)
        self._metric_steps = 0
        self._stop_signal: int | None = None
        self._last_saved = self.step if self.resumed_from else -1

    # -- slots ------------------------------------------------------------------------------------
    def _init_slots(self) -> None:
        B, L, dev = self.B, self.model_cfg.seq_len, self.device
        self.carry = self.model.init_carry(B, dev)
        self.halted = torch.ones(B, dtype=torch.bool, device=dev)   # all empty: fill at step 1
        self.act_steps = torch.zeros(B, dtype=torch.int32, device=dev)
        self.cur = {"inputs": torch.zeros(B, L, dtype=torch.int32, device=dev),
                    "labels": torch.zeros(B, L, dtype=torch.int32, device=dev),
                    "puzzle_ids": torch.zeros(B, dtype=torch.int32, device=dev),
                    "rows": torch.full((B,), -1, dtype=torch.int64, device=dev)}

    def _fetch(self, rows: np.ndarray) -> dict[str, Tensor]:
        """This rank's slice of the next global batch, copied to the device without waiting."""
        s = self.train_split
        arrays = {"inputs": np.asarray(s.inputs[rows], dtype=np.int32),
                  "labels": np.asarray(s.labels[rows], dtype=np.int32),
                  "puzzle_ids": np.asarray(s.puzzle_id[rows], dtype=np.int32),
                  "rows": rows.astype(np.int64)}
        return {k: _to_device(torch.from_numpy(v), self.device) for k, v in arrays.items()}

    # -- one update -------------------------------------------------------------------------------
    def lr_scale(self, step: int) -> float:
        """Learning rate of update `step` relative to the base (warm-up, cosine, re-warm-up)."""
        t = self.cfg.train
        s = lr_at(step, base=1.0, warmup=t.lr_warmup_steps, total=self.total_steps,
                  min_ratio=t.lr_min_ratio)
        if self.rewarm_from is not None and self.cfg.resume.rewarmup_steps > 0:
            s *= min(1.0, (step - self.rewarm_from) / self.cfg.resume.rewarmup_steps)
        return s

    def train_step(self) -> None:
        t, mc = self.cfg.train, self.model_cfg
        r0 = self.dist.rank * self.B
        new = self._fetch(self.stream.next()[r0:r0 + self.B])

        # halted slots take the new examples and start over; the others keep theirs
        h = self.halted
        cur = {k: torch.where(h.view(-1, *([1] * (v.dim() - 1))), new[k], v)
               for k, v in self.cur.items()}
        act_steps = torch.where(h, 0, self.act_steps)
        out = self.forward(cur["inputs"], cur["puzzle_ids"], self.carry.y, self.carry.z, h)
        loss = act_loss(out.logits, out.q_halt, cur["labels"], loss_type=t.loss_type,
                        q_weight=t.q_loss_weight)
        # sum over this rank's rows / its rows; DDP averages over ranks -> mean over the global
        # batch, the reference's total / global_batch_size
        (loss.total / self.B).backward()

        self.step += 1
        scale = self.lr_scale(self.step)
        for g in self.opt.param_groups:
            g["lr"] = t.lr * scale
        self.opt.step()
        self.opt.zero_grad(set_to_none=True)
        if self.sign_sgd is not None:
            pe = self.model.puzzle_emb
            if pe.rows is not None and pe.rows.grad is not None:
                self.sign_sgd.step(pe.ids, pe.rows.grad, t.puzzle_emb_lr * scale)
            pe.rows = pe.ids = None
        if self.ema is not None:
            self.ema.update()

        with torch.no_grad():
            act_steps = act_steps + 1
            halted = act_steps >= mc.halt_max_steps
            if mc.halt_max_steps > 1:
                halted |= out.q_halt > 0
                if mc.halt_exploration_prob > 0:
                    # drawn for the whole global batch and sliced, so N ranks halt exactly as
                    # one GPU would
                    g = self._explore_gen
                    g.manual_seed(_mix(self.cfg.seed, self.step))
                    explore = torch.rand(self.G, generator=g, device=self.device)[r0:r0 + self.B]
                    lo = torch.randint(2, mc.halt_max_steps + 1, (self.G,), generator=g,
                                       device=self.device)[r0:r0 + self.B]
                    min_steps = torch.where(explore < mc.halt_exploration_prob, lo, 0)
                    halted &= act_steps >= min_steps
            # train metrics, as the reference counts them: over the slots that halted now
            done = halted & (loss.cells > 0)
            cell_acc = loss.cells_right / loss.cells.clamp(min=1)
            self._metric_sum += torch.stack([
                done.sum(), (cell_acc * done).sum(), (loss.is_correct & done).sum(),
                (((out.q_halt >= 0) == loss.is_correct) & done).sum(), (act_steps * done).sum(),
                loss.lm_loss.detach(), loss.q_halt_loss.detach(), loss.total.detach(),
            ]).to(torch.float64)
            self._metric_steps += 1
        self.carry, self.cur, self.act_steps, self.halted = out.carry, cur, act_steps, halted

    def read_train_metrics(self) -> dict:
        """Mean train metrics since the last call (one device sync; all ranks must call it)."""
        m = self._metric_sum.clone()
        if self.dist.on:
            dist.all_reduce(m)
        m = m.tolist()
        n = max(1.0, m[0])
        rows = max(1, self._metric_steps) * self.G
        out = {"count": int(m[0]), "cell_accuracy": m[1] / n, "exact_accuracy": m[2] / n,
               "q_halt_accuracy": m[3] / n, "act_steps": m[4] / n, "lm_loss": m[5] / rows,
               "q_halt_loss": m[6] / rows, "loss": m[7] / rows}
        self._metric_sum.zero_()
        self._metric_steps = 0
        return out

    # -- evaluation -------------------------------------------------------------------------------
    @torch.inference_mode()
    def evaluate(self) -> dict:
        """Every validation example, fresh carry, all N_sup steps, the EMA weights; metrics of
        the last step. Each rank scores a contiguous share; sums are all-reduced."""
        if self.val_split is None:
            return {}
        model = self.ema.model if self.ema else self.model
        was_training = model.training
        model.eval()
        s = self.val_split
        n = len(s) if self.cfg.data.val_limit is None else min(len(s), self.cfg.data.val_limit)
        share = np.array_split(np.arange(n), self.dist.world)[self.dist.rank]
        bs = self.cfg.eval.batch_size or self.B
        steps = self.cfg.eval.steps or self.model_cfg.halt_max_steps
        types = self.dataset.types or ["all"]
        sums = torch.zeros(6, dtype=torch.float64, device=self.device)
        by_type = torch.zeros(2, len(types), dtype=torch.float64, device=self.device)
        for start in range(0, len(share), bs):
            rows = share[start:start + bs]
            real = len(rows)
            rows = np.concatenate([rows, np.full(bs - real, rows[0])])  # fixed shape
            inputs, labels, pids = (
                _to_device(torch.from_numpy(np.asarray(a[rows], np.int32)), self.device)
                for a in (s.inputs, s.labels, s.puzzle_id))
            kind = torch.from_numpy(np.asarray(s.type[rows], np.int64)).to(self.device)
            keep = (torch.arange(bs, device=self.device) < real)
            x = model.embed(inputs, pids)
            carry = model.init_carry(bs, self.device)
            for _ in range(steps):
                out = self.eval_step(carry, x)
                carry = out.carry
            loss = act_loss(out.logits, out.q_halt, labels, loss_type=self.cfg.train.loss_type,
                            q_weight=self.cfg.train.q_loss_weight)
            scored = keep & (loss.cells > 0)
            right = loss.is_correct & scored
            sums += torch.stack([
                scored.sum(), (loss.cells_right / loss.cells.clamp(min=1) * scored).sum(),
                right.sum(), (((out.q_halt >= 0) == loss.is_correct) & scored).sum(),
                (loss.lm_rows * scored).sum(),
                torch.nn.functional.binary_cross_entropy_with_logits(
                    out.q_halt, loss.is_correct.float(), reduction="none").mul(scored).sum(),
            ]).to(torch.float64)
            kind = kind.clamp(max=len(types) - 1)
            by_type[0].index_add_(0, kind, scored.double())
            by_type[1].index_add_(0, kind, right.double())
        if self.dist.on:
            dist.all_reduce(sums)
            dist.all_reduce(by_type)
        v, bt = sums.tolist(), by_type.tolist()
        c = max(1.0, v[0])
        out = {"count": int(v[0]), "exact_accuracy": v[2] / c, "cell_accuracy": v[1] / c,
               "q_halt_accuracy": v[3] / c, "lm_loss": v[4] / c, "q_halt_loss": v[5] / c,
               "steps": steps,
               "exact_accuracy_by_type": {types[i]: bt[1][i] / bt[0][i]
                                          for i in range(len(types)) if bt[0][i] > 0}}
        model.train(was_training)
        return out

    # -- the loop ---------------------------------------------------------------------------------
    def run(self) -> dict:
        """Train to total_steps (evaluating, logging and checkpointing on the way). Returns the
        final record. Raises Stop after saving when interrupted by SIGINT/SIGTERM."""
        cfg = self.cfg
        rep = _Reporter(self, enabled=self.dist.main)
        if self.dist.main:
            self.run_dir.mkdir(parents=True, exist_ok=True)
            self._clean_stale_tmp()
            write_text(self.run_dir / "config.resolved.yaml", self.resolved_yaml())
            rep.event("start", step=self.step, total_steps=self.total_steps,
                      resumed_from=self.resumed_from, world_size=self.dist.world,
                      device=str(self.device), parameters=count_parameters(self.model),
                      examples_per_epoch=self.stream.examples_per_epoch,
                      eval_every=self.eval_every, config=self.resolved_dict())
        old_handlers = self._install_signal_handlers()
        t0, s0 = time.perf_counter(), self.step
        try:
            rep.open(self.step)
            while self.step < self.total_steps:
                self.train_step()
                if self.on_step is not None:
                    self.on_step(self)
                rep.advance(self.step)
                final = self.step >= self.total_steps
                if self.step % cfg.log.every == 0 or final:
                    now = time.perf_counter()
                    m = self.read_train_metrics()
                    sps = (self.step - s0) / max(now - t0, 1e-9)
                    t0, s0 = now, self.step
                    rep.train(self.step, m, lr=cfg.train.lr * self.lr_scale(self.step),
                              epoch=self.stream.epoch, steps_per_s=sps,
                              examples_per_s=sps * self.G)
                evaluated = False
                if self.step % self.eval_every == 0 or final:
                    self.last_eval = self.evaluate()
                    evaluated = bool(self.last_eval)
                    if evaluated:
                        if self.best is None or (self.last_eval["exact_accuracy"]
                                                 > self.best["exact_accuracy"]):
                            self.best = {"step": self.step,
                                         "exact_accuracy": self.last_eval["exact_accuracy"]}
                        rep.eval(self.step, self.last_eval, self.best)
                every = cfg.checkpoint.every_steps
                if evaluated or final or (every and self.step % every == 0):
                    self.save(reason="eval" if evaluated else "final" if final else "periodic")
                    rep.event("checkpoint", step=self.step, path=str(self._step_dir(self.step)))
                if self._stop_requested():
                    if self._last_saved != self.step:
                        self.save(reason="interrupt")
                    rep.event("interrupted", step=self.step, path=str(self._step_dir(self.step)))
                    raise Stop(f"stopped at step {self.step}; checkpoint saved")
            if self._last_saved != self.step and self.step > 0:  # e.g. resumed at the end
                self.save(reason="final")
            result = {"step": self.step, "total_steps": self.total_steps,
                      "val": self.last_eval, "best": self.best,
                      "checkpoint": str(self._step_dir(self.step))}
            rep.event("end", **result)
            return result
        finally:
            rep.close()
            self._restore_signal_handlers(old_handlers)

    # -- interruption -----------------------------------------------------------------------------
    def _install_signal_handlers(self):
        if threading.current_thread() is not threading.main_thread():
            return {}

        def handler(signum, frame):
            if self._stop_signal is not None and signum == signal.SIGINT:
                signal.signal(signal.SIGINT, signal.default_int_handler)  # second Ctrl-C: now
                raise KeyboardInterrupt
            self._stop_signal = signum
            if self.dist.main:
                print(f"\n{signal.Signals(signum).name}: stopping after this step and saving "
                      "a checkpoint (Ctrl-C again to abort without saving)", file=sys.stderr)

        return {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}

    @staticmethod
    def _restore_signal_handlers(old) -> None:
        for s, h in old.items():
            signal.signal(s, h)

    def _stop_requested(self) -> bool:
        """Whether any rank got SIGINT/SIGTERM. Ranks agree over a gloo group (host only),
        so every rank stops and saves at the same step without a device sync."""
        flag = self._stop_signal is not None
        if not self.dist.on:
            return flag
        t = torch.tensor([int(flag)], dtype=torch.int32)
        if self.dist.flag_group is None:  # gloo is the main backend (CPU)
            dist.all_reduce(t, op=dist.ReduceOp.MAX)
        else:
            dist.all_reduce(t, op=dist.ReduceOp.MAX, group=self.dist.flag_group)
        return bool(t.item())

    # -- checkpoints ------------------------------------------------------------------------------
    def _step_dir(self, step: int) -> Path:
        return self.ckpt_dir / f"step_{step}"

    def _checkpoints(self) -> list[tuple[int, Path]]:
        """Complete checkpoints of this run, oldest first."""
        found = []
        if self.ckpt_dir.is_dir():
            for d in self.ckpt_dir.iterdir():
                m = re.fullmatch(r"step_(\d+)", d.name)
                if m and d.is_dir() and not d.is_symlink() and _complete(d):
                    found.append((int(m.group(1)), d))
        return sorted(found)

    def _latest_checkpoint(self) -> Path:
        last = self.ckpt_dir / "last"
        if last.is_symlink() and last.resolve().is_dir() and _complete(last.resolve()):
            return last.resolve()
        found = self._checkpoints()   # `last` lost (copied without links) or never written
        if not found:
            raise PtrmError(f"nothing to resume: {self.ckpt_dir} has no complete checkpoint",
                            hint="start without --resume")
        return found[-1][1]

    def save(self, reason: str = "") -> Path:
        """Write checkpoints/step_<N> (all ranks call this; rank 0 writes). The folder appears
        whole or not at all (save_checkpoint writes a temporary folder and renames it), and
        `last` moves only after it exists, so an interrupted write leaves the previous
        checkpoint as the latest."""
        carry = self._gather_slots() if self.cfg.checkpoint.carry else None
        if self.dist.on:
            self._check_replicas()
        path = self._step_dir(self.step)
        if self.dist.main:
            model = self.ema.model if self.ema else self.model
            meta = {"steps": self.step, "seed": self.cfg.seed, "ema": self.ema is not None,
                    "dataset": str(self.dataset.path), "dataset_fingerprint": self.fingerprint,
                    "run_dir": str(self.run_dir), "reason": reason, "val": self.last_eval}
            # ARC datasets name their puzzle-embedding rows: the checkpoint keeps the names, so
            # `ptrm solve --task` finds a task's views without the dataset at hand
            save_checkpoint(path, model, self.dataset.vocab, meta,
                            write_extra=lambda tmp: write_train_state(self, tmp, carry),
                            identifiers=self.dataset.meta.get("identifiers"))
            _point(self.ckpt_dir / "last", path.name)
            if self.best is not None and self.best["step"] == self.step:
                _point(self.ckpt_dir / "best", path.name)
            self._prune()
        if self.dist.on:
            dist.barrier()
        self._last_saved = self.step
        return path

    def _prune(self) -> None:
        keep = {d for _, d in self._checkpoints()[-self.cfg.checkpoint.keep:]}
        for link in ("best", "last"):
            p = self.ckpt_dir / link
            if p.is_symlink():
                keep.add(p.resolve())
        for _, d in self._checkpoints():
            if d.resolve() not in {k.resolve() for k in keep}:
                shutil.rmtree(d, ignore_errors=True)

    def _clean_stale_tmp(self) -> None:
        """Temporary folders of writes that were killed half way."""
        if self.ckpt_dir.is_dir():
            for d in self.ckpt_dir.glob(".step_*.tmp"):
                shutil.rmtree(d, ignore_errors=True)

    def _gather_slots(self) -> dict[str, Tensor] | None:
        """Every rank's slots, concatenated in global slot order (what one GPU would hold)."""
        local = {"y": self.carry.y, "z": self.carry.z, "halted": self.halted,
                 "act_steps": self.act_steps, **{f"data.{k}": v for k, v in self.cur.items()}}
        if not self.dist.on:
            return {k: v.detach().cpu() for k, v in local.items()}
        out = {}
        for k, v in local.items():
            parts = [torch.empty_like(v) for _ in range(self.dist.world)]
            dist.all_gather(parts, v.contiguous())
            out[k] = torch.cat(parts).cpu()
        return out if self.dist.main else None

    def _check_replicas(self) -> None:
        """DDP keeps replicas equal by construction; check it cheaply before every save."""
        with torch.no_grad():
            sums = torch.stack([p.detach().double().sum() for p in self.model.parameters()]
                               + [b.detach().double().sum() for b in self.model.buffers()])
            parts = [torch.empty_like(sums) for _ in range(self.dist.world)]
            dist.all_gather(parts, sums)
        if not all(torch.equal(parts[0], p) for p in parts[1:]):
            raise RuntimeError(f"ranks disagree on the weights at step {self.step}")

    def _restore(self, path: Path, *, exact: bool) -> None:
        """Load a checkpoint folder: exactly (every piece of state) or as a warm start (weights,
        EMA, step; fresh optimizer moments and carry)."""
        if not (path / CKPT_CONFIG).exists():
            raise PtrmError(f"{path} is not a ptrm checkpoint folder (no {CKPT_CONFIG})")
        doc = json.loads((path / CKPT_CONFIG).read_text())
        ckpt_cfg = TRMConfig.from_dict(doc["model"])
        mine = dataclasses.replace(self.model_cfg,
                                   halt_exploration_prob=ckpt_cfg.halt_exploration_prob)
        from ..vocab import Vocab

        Vocab.from_json(doc["vocab"]).check_same(self.dataset.vocab, what=f"checkpoint {path}",
                                                 other_what="the dataset")
        table_rows = None
        if ckpt_cfg.num_puzzle_identifiers != mine.num_puzzle_identifiers and not exact:
            table_rows = ckpt_cfg.num_puzzle_identifiers
            ckpt_cfg = dataclasses.replace(ckpt_cfg,
                                           num_puzzle_identifiers=mine.num_puzzle_identifiers)
        if ckpt_cfg != mine:
            diff = {k: (v, getattr(mine, k)) for k, v in ckpt_cfg.to_dict().items()
                    if getattr(mine, k) != v}
            raise PtrmError(f"{path}: the checkpoint's model differs from the config's: "
                            + ", ".join(f"{k} {a!r} vs {b!r}" for k, (a, b) in diff.items()))
        state_file = path / "train_state.json"
        state = _read_json(state_file) if state_file.exists() else None
        from safetensors.torch import load_file

        weights = load_file(str(path / CKPT_WEIGHTS))      # EMA params (if EMA) + raw buffers
        raw = _load_tensors(path, "train_state") or {}
        if table_rows is not None and "puzzle_emb.weights" in weights:
            # the reference's rule for a different puzzle set: every row = the mean row
            w = weights["puzzle_emb.weights"]
            weights["puzzle_emb.weights"] = w.mean(0, keepdim=True).expand(
                mine.num_puzzle_identifiers, -1).contiguous()
        params = dict(self.model.named_parameters())
        with torch.no_grad():
            for name, buf in self.model.named_buffers():
                if name in weights:
                    buf.copy_(weights[name])
            for name, p in params.items():
                p.copy_(raw.get(name, weights[name]))      # no train_state: EMA == raw
            if self.ema is not None:
                for name, p in self.ema.model.named_parameters():
                    p.copy_(weights[name])
        self.resumed_from = str(path)
        if state is None:                                   # e.g. an imported official model
            return
        if state.get("format") != STATE_FORMAT:
            raise PtrmError(f"{path}/train_state.json: format {state.get('format')!r} is not "
                            f"{STATE_FORMAT!r}")
        self.step = int(state["step"])
        self.best = state.get("best") if exact or self.cfg.resume.weights_only else None
        same_data = (state["data"]["fingerprint"] == self.fingerprint
                     and state["data"]["seed"] == self.cfg.seed
                     and state["data"]["global_batch_size"] == self.G
                     and state["data"]["sampling"] == self.cfg.data.sampling)
        if exact:
            if not same_data:
                raise PtrmError(f"{path}: exact resume needs the same dataset, seed, global "
                                "batch size and sampling as the run that wrote it",
                                hint="resume with --set resume.weights_only=true to keep only "
                                     "the weights")
            moments = _load_tensors(path, "optimizer")
            slots = _load_tensors(path, "carry")
            if moments is None or slots is None:
                raise PtrmError(f"{path} has no {'optimizer' if moments is None else 'carry'} "
                                "state, so it cannot be resumed exactly",
                                hint="resume with --set resume.weights_only=true (a warm "
                                     "start: fresh optimizer moments)")
            self.opt.load_moments(moments, state["optimizer"]["step"], self.param_names)
            self._load_slots(slots)
            _set_rng(state.get("rng") or {})
            self.rewarm_from = state.get("rewarm_from")
        else:
            self.rewarm_from = self.step                    # fresh moments: optional re-warm-up
        if same_data:
            self.stream.load_state(state["stream"])

    def _load_slots(self, slots: dict[str, Tensor]) -> None:
        if slots["y"].shape[0] != self.G:
            raise PtrmError(f"saved carry has {slots['y'].shape[0]} slots, the batch {self.G}")
        sl = slice(self.dist.rank * self.B, (self.dist.rank + 1) * self.B)
        d = self.device
        self.carry = Carry(slots["y"][sl].to(d), slots["z"][sl].to(d))
        self.halted = slots["halted"][sl].to(d)
        self.act_steps = slots["act_steps"][sl].to(d)
        self.cur = {k: slots[f"data.{k}"][sl].to(d) for k in self.cur}

    # -- config -----------------------------------------------------------------------------------
    def resolved_dict(self) -> dict:
        d = self.cfg.to_dict()
        d["model"] = self.model_cfg.to_dict()
        return d

    def resolved_yaml(self) -> str:
        import yaml

        return ("# as run by ptrm train; model sizes from the dataset\n"
                + yaml.safe_dump(self.resolved_dict(), sort_keys=False))

    def flops_per_update(self) -> float:
        """Analytic matmul FLOPs of one training update over the global batch: the forward's
        T(n+1) network applications + heads, and a backward of ~2x the n+1 applications that
        carry gradient (+ 2x the heads), per TRM_REFERENCE.md §8.2."""
        return training_flops(self.model_cfg) * self.G


def training_flops(c: TRMConfig) -> float:
    """Per sequence and supervision step: forward + backward matmul FLOPs."""
    fwd = flops_per_step(c)
    heads = 2 * c.hidden_size * c.vocab_size * c.total_len + 4 * c.hidden_size
    per_app = (fwd - heads) / (c.H_cycles * (c.L_cycles + 1))
    return fwd + 2 * ((c.L_cycles + 1) * per_app + heads)


# -- the resume state on disk --------------------------------------------------------------------

def write_train_state(tr: Trainer, folder: Path, slots: dict | None) -> None:
    """Called inside save_checkpoint's temporary folder: everything beyond the EMA weights."""
    limit = int(tr.cfg.checkpoint.max_file_mb * 2**20)
    files = {}
    if tr.ema is not None:  # without EMA, model.safetensors already holds the raw weights
        files["train_state"] = _save_tensors(
            {n: p.detach() for n, p in tr.model.named_parameters()}, folder, "train_state", limit)
    moments, t = tr.opt.moments(tr.param_names)
    if tr.cfg.checkpoint.optimizer:
        files["optimizer"] = _save_tensors(moments, folder, "optimizer", limit)
    if slots is not None:
        files["carry"] = _save_tensors(slots, folder, "carry", limit)
    state = {
        "format": STATE_FORMAT, "step": tr.step, "total_steps": tr.total_steps,
        "stream": tr.stream.state(),
        "data": {"fingerprint": tr.fingerprint, "seed": tr.cfg.seed,
                 "global_batch_size": tr.G, "sampling": tr.cfg.data.sampling,
                 "path": str(tr.dataset.path)},
        "optimizer": {"step": t, "lr_scale": tr.lr_scale(max(tr.step, 1))},
        "best": tr.best, "last_eval": tr.last_eval, "rewarm_from": tr.rewarm_from,
        "world_size": tr.dist.world, "rng": _get_rng(), "files": files,
        "config": tr.resolved_dict(),
    }
    (folder / "train_state.json").write_text(json.dumps(state, indent=1) + "\n")


def _save_tensors(tensors: dict[str, Tensor], folder: Path, stem: str, limit: int) -> list[str]:
    """stem.safetensors, or stem-00001-of-0000K.safetensors shards each under `limit` bytes
    (a single tensor larger than the limit gets a file of its own)."""
    from safetensors.torch import save_file

    shards, cur, size = [], {}, 0
    for k, v in tensors.items():
        nb = v.numel() * v.element_size()
        if cur and size + nb > limit:
            shards.append(cur)
            cur, size = {}, 0
        cur[k] = v.detach().to("cpu").contiguous()
        size += nb
    shards.append(cur)
    names = ([f"{stem}.safetensors"] if len(shards) == 1 else
             [f"{stem}-{i + 1:05d}-of-{len(shards):05d}.safetensors" for i in range(len(shards))])
    for name, shard in zip(names, shards):
        save_file(shard, str(folder / name), metadata={"format": STATE_FORMAT})
    return names


def _load_tensors(folder: Path, stem: str) -> dict[str, Tensor] | None:
    from safetensors.torch import load_file

    single = folder / f"{stem}.safetensors"
    files = [single] if single.exists() else sorted(folder.glob(f"{stem}-*-of-*.safetensors"))
    if not files:
        return None
    expected = re.fullmatch(rf"{re.escape(stem)}-\d+-of-(\d+)\.safetensors", files[0].name)
    if expected and int(expected.group(1)) != len(files):
        raise PtrmError(f"{folder}: {stem} has {len(files)} of {expected.group(1)} shards")
    out = {}
    for f in files:
        out.update(load_file(str(f)))
    return out


def _complete(d: Path) -> bool:
    return all((d / f).exists() for f in (CKPT_CONFIG, CKPT_WEIGHTS, "train_state.json"))


def _point(link: Path, target: str) -> None:
    """Move a relative symlink atomically (no moment without one). Skipped where the file
    system has no symlinks; resume then finds the newest step_<N> by name."""
    tmp = link.with_name(f".{link.name}.tmp")
    try:
        tmp.unlink(missing_ok=True)
        os.symlink(target, tmp)
        os.replace(tmp, link)
    except OSError:
        pass


def _read_json(path: Path) -> dict:
    try:
        return json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as e:
        raise PtrmError(f"{path}: unreadable ({e})") from None


def _get_rng() -> dict:
    """Global generator states as base64 (no pickle). The recipe draws its own random numbers
    from generators seeded per step; these are kept so that code that uses the global
    generators (a user's hook, a future dropout) also resumes exactly."""
    enc = lambda t: base64.b64encode(t.cpu().numpy().tobytes()).decode()  # noqa: E731
    out = {"torch_cpu": enc(torch.get_rng_state())}
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        out["torch_cuda"] = enc(torch.cuda.get_rng_state())
    return out


def _set_rng(state: dict) -> None:
    def dec(s: str) -> Tensor:
        return torch.from_numpy(np.frombuffer(base64.b64decode(s), np.uint8).copy())

    if "torch_cpu" in state:
        torch.set_rng_state(dec(state["torch_cpu"]))
    if "torch_cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state(dec(state["torch_cuda"]))


def _dataset_fingerprint(ds: Dataset) -> str:
    meta = Path(ds.path) / "meta.json"
    if meta.is_file():
        return hashlib.sha256(meta.read_bytes()).hexdigest()[:16]
    text = json.dumps(ds.meta, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


# -- small helpers -------------------------------------------------------------------------------

def _to_device(t: Tensor, device: torch.device) -> Tensor:
    if device.type == "cuda":
        return t.pin_memory().to(device, non_blocking=True)
    return t.to(device)


def _mix(seed: int, step: int) -> int:
    """A 63-bit generator seed for (run seed, update number)."""
    h = hashlib.blake2b(f"{seed}:{step}".encode(), digest_size=8).digest()
    return int.from_bytes(h, "little") >> 1


# -- reporting: JSONL log + Rich progress --------------------------------------------------------

class _Reporter:
    """log.jsonl (every event, one JSON object per line, appended) and the console: a Rich
    progress bar on a terminal, plain lines otherwise. Rank 0 only."""

    def __init__(self, trainer: Trainer, *, enabled: bool):
        self.tr, self.enabled = trainer, enabled
        self.path = trainer.run_dir / "log.jsonl"
        mode = trainer.cfg.log.progress
        from ..console import err_console

        self.console = err_console
        if mode == "auto":
            mode = "bar" if err_console.is_terminal else "lines"
        self.mode = mode if enabled else "none"
        self.progress = None
        self.task = None
        self.t_start = time.time()

    def _write(self, rec: dict) -> None:
        if not self.enabled:
            return
        rec = {"time": round(time.time(), 3), **rec}
        with open(self.path, "a") as f:
            f.write(json.dumps(rec, default=_json_default) + "\n")

    def event(self, kind: str, **fields) -> None:
        self._write({"event": kind, **fields})
        if kind in ("checkpoint", "start"):
            return
        if kind == "interrupted":
            self._say(f"[yellow]interrupted[/] at step {fields['step']}; "
                      f"checkpoint {fields['path']}")

    def open(self, step: int) -> None:
        if self.mode != "bar":
            return
        from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn,
                                   TimeElapsedColumn, TimeRemainingColumn)

        self.progress = Progress(TextColumn("[bold]train"), BarColumn(), MofNCompleteColumn(),
                                 TimeElapsedColumn(), TimeRemainingColumn(),
                                 TextColumn("{task.fields[info]}"), console=self.console)
        self.progress.start()
        self.task = self.progress.add_task("train", total=self.tr.total_steps, completed=step,
                                           info="")

    def advance(self, step: int) -> None:
        if self.progress is not None:
            self.progress.update(self.task, completed=step)

    def train(self, step: int, m: dict, **extra) -> None:
        self._write({"event": "train", "step": step, **extra, **m})
        info = (f"loss {m['loss']:.4f} exact {m['exact_accuracy']:.3f} "
                f"q {m['q_halt_accuracy']:.3f} {extra['steps_per_s']:.2f} it/s")
        if self.progress is not None:
            self.progress.update(self.task, info=info)
        elif self.mode == "lines":
            self._say(f"step {step}/{self.tr.total_steps} lr {extra['lr']:.2e} {info}")

    def eval(self, step: int, m: dict, best: dict | None) -> None:
        self._write({"event": "eval", "step": step, **m, "best": best})
        self._say(f"[bold]eval[/] step {step}: exact {m['exact_accuracy']:.4f} cell "
                  f"{m['cell_accuracy']:.4f} q-halt {m['q_halt_accuracy']:.4f} "
                  f"(n={m['count']}; best {best['exact_accuracy']:.4f} at {best['step']})")

    def _say(self, text: str) -> None:
        if self.mode == "none":
            return
        (self.progress.console if self.progress is not None else self.console).print(
            text, highlight=False)

    def close(self) -> None:
        if self.progress is not None:
            self.progress.stop()
            self.progress = None


def _json_default(o):
    if isinstance(o, (np.integer,)):
        return int(o)
    if isinstance(o, (np.floating,)):
        return float(o)
    if isinstance(o, Path):
        return str(o)
    return str(o)


# -- entry points --------------------------------------------------------------------------------

def train(config: str | os.PathLike | None, sets: list[str] | tuple = (), *, resume: bool = False,
          init_from: str | None = None, device: str | None = None, base: dict | None = None,
          dataset: Dataset | None = None, on_step=None) -> dict:
    """Load the config, train, return the final record (raises Stop when interrupted)."""
    sets = list(sets)
    if init_from:
        sets.append(f"resume.init_from={init_from}")
    if device:
        sets.append(f"device={device}")
    cfg = load_config(config, sets, base=base)
    dist_info = setup_distributed(cfg.device)
    try:
        trainer = Trainer(cfg, resume=resume, dataset=dataset, on_step=on_step,
                          dist_info=dist_info)
        return trainer.run()
    finally:
        if dist_info.on and dist.is_initialized():
            dist.destroy_process_group()


def main(argv: list[str] | None = None) -> int:
    """`python -m ptrm_cli.engine.train CONFIG [--set k=v ...] [--resume]` (what torchrun runs)."""
    p = argparse.ArgumentParser(prog="python -m ptrm_cli.engine.train",
                                description="Train a TRM (one process per GPU under torchrun).")
    p.add_argument("config")
    p.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE")
    p.add_argument("--resume", action="store_true")
    p.add_argument("--init-from", default=None)
    p.add_argument("--device", default=None)
    args = p.parse_args(argv)
    try:
        train(args.config, args.sets, resume=args.resume, init_from=args.init_from,
              device=args.device)
    except Stop as e:
        if os.environ.get("RANK", "0") == "0":
            print(str(e), file=sys.stderr)
        return 130
    except PtrmError as e:
        if os.environ.get("RANK", "0") == "0":  # every rank hits the same config error
            print(f"error: {e}" + (f"\nhint: {e.hint}" if e.hint else ""), file=sys.stderr)
        return e.exit_code
    return 0


if __name__ == "__main__":
    sys.exit(main())
