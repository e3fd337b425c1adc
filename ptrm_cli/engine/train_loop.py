"""The training loop: deep supervision with ACT halting, EMA, AdamATan2 (TRM_REFERENCE.md §3-4).

One optimizer update per supervision step. The batch is a set of slots; each slot holds one
example and its carry (y, z) across updates:

    for every update:
        slots that halted take the next examples of the data stream (fresh carry, ACT step 0);
        the others keep their example and carry (the new examples meant for them are dropped,
        as in the reference)
        one supervision step with gradient through its last latent recursion
        loss = stablemax CE + 0.5 * BCE(q_halt, answer exactly right); AdamATan2 and EMA
        update (one compiled function under train.compile); sign-SGD on the puzzle-embedding
        rows used
        halt a slot when its Q head says so (q_halt > 0), when it has had N_sup steps, and -
        with probability 0.1 - not before a random minimum number of steps (exploration)

Evaluation runs every validation example for all N_sup steps with the EMA weights (no early
halting), then scores exact accuracy, cell accuracy and Q-halt accuracy.

The hot loop never waits for the device: batches are copied asynchronously, metrics accumulate
on the device and are read every `log.every` steps, random draws come from a generator seeded
per step.
"""

from __future__ import annotations

import hashlib
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Callable

import numpy as np
import torch
import torch.distributed as dist
from torch import Tensor, nn

from ..atomic import write_text
from ..errors import PtrmError, did_you_mean
from . import train_checkpoint
from .data import Dataset, load_dataset
from .losses import act_loss
from .model import TRM, Carry, TRMConfig, count_parameters, flops_per_step
from .optim import AdamATan2, SignSGDEmbedding, adam_atan2_, lr_at
from .train_config import Config, DataConfig, check_config, model_config, where_set
from .train_data import BatchStream
from .train_dist import DistInfo, any_rank, setup_distributed, wrap_ddp
from .train_log import Reporter


#: torch.compile modes that replay CUDA graphs
CUDA_GRAPH_MODES = ("reduce-overhead", "max-autotune")


def _owned(carry: Carry) -> Carry:
    """A copy of a carry that a CUDA graph's next replay cannot overwrite."""
    return Carry(carry.y.clone(), carry.z.clone())


# -- EMA -----------------------------------------------------------------------------------------

class EMA:
    """A second TRM whose parameters are the exponential moving average of the trained ones
    (shadow <- rate * shadow + (1 - rate) * param after every update) and whose buffers (puzzle
    table, H_init/L_init) are the trained model's own tensors, shared, not copied: the reference
    averages parameters only, and the ARC puzzle table is 2 GB."""

    def __init__(self, model: TRM, rate: float):
        device = model.H_init.device
        params = dict(model.named_parameters())
        state = {k: (params[k].detach().clone() if k in params else v)
                 for k, v in model.state_dict().items()}
        self.model = TRM.from_state_dict(model.config, state, device=device).eval()
        self.model.requires_grad_(False)
        # shadow <- shadow + (1 - rate) * (param - shadow): torch._foreach_lerp_(*lerp_args),
        # which the trainer runs with the optimizer step (optimizer_and_ema_)
        self.lerp_args = (list(self.model.parameters()), list(model.parameters()), 1 - rate)


def optimizer_and_ema_(params: list[Tensor], grads: list[Tensor], ms: list[Tensor],
                       vs: list[Tensor], scalars: dict[str, float | Tensor],
                       ema_args: tuple) -> None:
    """One update's AdamATan2 step (`AdamATan2.pending`'s lists and scalars), then the EMA
    (`EMA.lerp_args`, or () without one), in place. Under train.compile the trainer compiles
    this as one function: a few fused kernels where eager runs ~30 (two per parameter for the
    atan2 step alone)."""
    adam_atan2_(params, grads, ms, vs, **scalars)
    if ema_args:
        torch._foreach_lerp_(*ema_args)


def _scalars_as_tensors(scalars: dict[str, float], like: Tensor) -> dict:
    """The update's scalars that change every step (learning rate, bias corrections) as 0-d
    tensors on the parameters' device, for the compiled update, which would otherwise compile
    again for every new value. One small copy, queued without waiting for the device."""
    names = ("decay", "root_c2", "step_size")
    packed = torch.tensor([scalars[k] for k in names], dtype=like.dtype)
    return {**scalars, **dict(zip(names, packed.to(like.device, non_blocking=True).unbind()))}


# -- the training step as a module (what DistributedDataParallel wraps) ---------------------------

class _TrainStep(nn.Module):
    """embed -> reset halted slots -> one supervision step with gradient. DDP hooks a module's
    forward, and TRM.forward is the evaluation roll-out, so the step gets its own module."""

    def __init__(self, model: TRM, step_fn: Callable):
        super().__init__()
        self.model = model
        self.step_fn = step_fn

    def forward(self, inputs: Tensor, puzzle_ids: Tensor, y: Tensor, z: Tensor, reset: Tensor,
                warm: int = 0):
        x = self.model.embed(inputs, puzzle_ids)  # eager: records the puzzle-embedding rows
        carry = self.model.reset_carry(Carry(y, z), reset)
        with torch.no_grad():  # the final_step recipe's detached warm-up steps
            for _ in range(warm):
                carry = self.step_fn(carry, x, grad=False).carry
        return self.step_fn(carry, x, grad=True)


# -- the trainer ---------------------------------------------------------------------------------

class Stop(Exception):
    """Raised by the trainer after it saved a checkpoint on SIGINT/SIGTERM. `exact`: that
    checkpoint holds the optimizer state and carry an exact --resume needs (without them,
    only resume.weights_only=true continues it)."""

    def __init__(self, message: str, *, exact: bool = True):
        super().__init__(message)
        self.exact = exact


class Trainer:
    """One training run: `Trainer(cfg).run()`. Holds the model, its EMA twin, the optimizers,
    the batch slots (example + carry + ACT step per slot) and the data position;
    train_checkpoint.py's `save` and `restore` write and read all of it. `train_step` is one
    update (benchmarks call it directly); `on_step(trainer)` is called after every update (tests
    use it to interrupt)."""

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
        self.fingerprint = train_checkpoint.dataset_fingerprint(self.dataset)
        if cfg.data.train_split not in self.dataset.splits:  # (the dataset's error: no hint)
            raise PtrmError(f"data.train_split {cfg.data.train_split!r}: dataset "
                            f"{self.dataset.path} has splits "
                            f"{_splits_of(self.dataset, cfg.data.train_split)}",
                            hint="--set data.train_split=NAME with one of them (the default "
                                 "is train)")
        self.train_split = self.dataset.split(cfg.data.train_split)
        if len(self.train_split) == 0:  # (BatchStream's own check does not know the dataset)
            raise PtrmError(f"dataset {self.dataset.path}: the training split "
                            f"{cfg.data.train_split!r} has no rows",
                            hint="build it with training puzzles (build-data --train-puzzles, "
                                 "--val-per-type), or name another split: --set "
                                 "data.train_split=NAME")
        elif not np.asarray(self.train_split.labels).any() and self.dist.main:
            print(f"warning: dataset {self.dataset.path}: every label of the training split "
                  f"{cfg.data.train_split!r} is pad (0), which the loss ignores: nothing to "
                  "learn from", file=sys.stderr)
        self.val_split, self.val_types = None, self.dataset.types
        if cfg.data.val_split and cfg.data.val_path:
            self.val_split, self.val_types = _val_elsewhere(cfg.data, self.dataset)
        elif cfg.data.val_split:
            if cfg.data.val_split in self.dataset.splits:
                self.val_split = self.dataset.split(cfg.data.val_split)
            elif cfg.data.val_split != DataConfig.val_split:  # asked for by name: a typo?
                raise PtrmError(f"data.val_split {cfg.data.val_split!r}: dataset "
                                f"{self.dataset.path} has splits "
                                f"{_splits_of(self.dataset, cfg.data.val_split)}",
                                hint="data.val_split=null trains without evaluation")
            elif self.dist.main:  # the default: a dataset without a validation split
                print(f"warning: dataset has no split {cfg.data.val_split!r}: no evaluation",
                      file=sys.stderr)
        if self.val_split is not None and len(self.val_split) == 0:
            # an empty split (build-data --val-per-type 0) scores nothing: 0.0 read as measured,
            # and `best` was chosen from it
            if self.dist.main:
                print(f"warning: validation split {cfg.data.val_split!r} is empty: no "
                      "evaluation, no best checkpoint", file=sys.stderr)
            self.val_split = None
        if t.global_batch_size % self.dist.world:
            w = self.dist.world
            raise PtrmError(f"train.global_batch_size {t.global_batch_size} does not split "
                            f"evenly over {w} ranks",
                            hint=f"--set train.global_batch_size=N with N a multiple of {w}, "
                                 f"e.g. {max(w, t.global_batch_size // w * w)}")
        self.G = t.global_batch_size
        self.B = self.G // self.dist.world
        self.stream = BatchStream(self.train_split, self.G, cfg.seed, cfg.data.sampling)
        if self.G > self.stream.examples_per_epoch and self.dist.main:
            _warn_batch_above_epoch(self.G, self.stream.examples_per_epoch, self.dist.world)
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
        # train metrics summed since the last log line (read_train_metrics)
        self._metric_sum = torch.zeros(8, dtype=torch.float64, device=self.device)
        self._metric_steps = 0

        if resume and cfg.resume.init_from:
            raise PtrmError("--resume and --init-from together: resume continues this run, "
                            "init-from starts a new one from another run's checkpoint")
        self.resumed_from: str | None = None
        # what the checkpoint this run starts from had trained on (its meta.trained_on): a
        # warm start's checkpoints say it together with this run's own data
        self.inherited_trained_on: dict | None = None
        if resume:
            train_checkpoint.restore_latest(self, exact=not cfg.resume.weights_only)
        else:
            # incomplete step_<N> folders count too: a new run would reach step N and fail
            if train_checkpoint.step_folders(self.ckpt_dir):
                raise PtrmError(f"{self.run_dir} already has checkpoints",
                                hint="pass --resume to continue it, or choose another run_dir")
            if cfg.resume.init_from:
                train_checkpoint.restore(self, Path(cfg.resume.init_from), exact=False)
                self._refuse_nothing_to_train(cfg.resume.init_from)

        # the step function: compiled or not, wrapped in DDP when distributed
        step_fn = self.model.step
        eval_model = self.ema.model if self.ema else self.model
        self.eval_step = eval_model.step
        self.loss_fn = act_loss
        self.update_fn = optimizer_and_ema_
        self.tensor_scalars = False  # the update's scalars as 0-d tensors (compiled update)
        if t.compile:
            # the float64 stablemax loss as a few fused kernels, not ~40 eager ones, forward
            # and backward: 1.3-1.7% an update on an H100 (docs/PERFORMANCE.md, "Session 20").
            # Inductor's default mode: its inputs are the step's outputs, no graph of its own
            self.loss_fn = torch.compile(act_loss)
            self.update_fn = torch.compile(optimizer_and_ema_)
            self.tensor_scalars = True
            try:
                step_fn = torch.compile(self.model.step, mode=t.compile_mode)
            except RuntimeError as e:  # an unknown mode, before anything is compiled
                raise PtrmError(f"config train.compile_mode {t.compile_mode!r}: {e}",
                                hint="null is torch.compile's default") from None
            self.eval_step = torch.compile(eval_model.step, mode=t.compile_mode)
        # CUDA graphs (reduce-overhead, max-autotune) write every replay's outputs into the same
        # buffers, so a carry that outlives the next call of its graph must be copied out
        self.graphed = bool(t.compile) and t.compile_mode in CUDA_GRAPH_MODES
        self.forward: nn.Module = _TrainStep(self.model, step_fn)
        if self.dist.on:
            self.forward = wrap_ddp(self.forward, self.dist)
        self._stop_signal: int | None = None
        self._last_saved = self.step if self.resumed_from else -1

    def _length_said(self) -> str:
        """How the run's length was set: "train.max_steps is N", or the epochs' arithmetic."""
        t = self.cfg.train
        if t.max_steps is not None:
            return f"train.max_steps is {t.max_steps}"
        return (f"train.epochs {t.epochs:g} x {self.stream.examples_per_epoch:g} examples / "
                f"global batch {self.G} = {self.total_steps} updates")

    def _refuse_nothing_to_train(self, init_from: str) -> None:
        """A warm start keeps the checkpoint's step count, so one at or past the run's length
        trains nothing: it printed "continuing at step 200 of 100", exited 0 and left a
        run_dir of a config and a log. Refused before the run_dir is written."""
        if self.step < self.total_steps:
            return
        t = self.cfg.train
        key = "train.max_steps" if t.max_steps is not None else "train.epochs"
        where = where_set(getattr(self.cfg, "origin", {}), tuple(key.split(".")))
        more = max(self.total_steps, 1)  # the updates asked for, most likely meant as more
        raise PtrmError(f"{where}{self._length_said()}, but --init-from {init_from} is at step "
                        f"{self.step}: a warm start keeps the checkpoint's step count, so "
                        "nothing would train",
                        hint=f"raise train.max_steps above {self.step} (e.g. --set "
                             f"train.max_steps={self.step + more} for {more:,} more updates), "
                             "or init from an earlier checkpoint")

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

    def local_slots(self) -> dict[str, Tensor]:
        """This rank's slots, by the names a checkpoint's carry.safetensors uses."""
        return {"y": self.carry.y, "z": self.carry.z, "halted": self.halted,
                "act_steps": self.act_steps, **{f"data.{k}": v for k, v in self.cur.items()}}

    def load_slots(self, slots: dict[str, Tensor]) -> None:
        """Take this rank's share of the global slots a checkpoint saved."""
        if slots["y"].shape[0] != self.G:
            raise PtrmError(f"saved carry has {slots['y'].shape[0]} slots, the batch {self.G}")
        sl = slice(self.dist.rank * self.B, (self.dist.rank + 1) * self.B)
        d = self.device
        self.carry = Carry(slots["y"][sl].to(d), slots["z"][sl].to(d))
        self.halted = slots["halted"][sl].to(d)
        self.act_steps = slots["act_steps"][sl].to(d)
        self.cur = {k: slots[f"data.{k}"][sl].to(d) for k in self.cur}

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

    def update(self) -> None:
        """Update number `self.step + 1` from the gradients the backward pass left: AdamATan2
        and the EMA (one compiled function under train.compile), then sign-SGD on the rows of
        the puzzle table that the batch used (a buffer, which the EMA model shares)."""
        t = self.cfg.train
        self.step += 1
        scale = self.lr_scale(self.step)
        for g in self.opt.param_groups:
            g["lr"] = t.lr * scale
        # the trainer's optimizer has one group, the whole model
        (params, grads, ms, vs, scalars), = self.opt.pending()
        if self.tensor_scalars:
            scalars = _scalars_as_tensors(scalars, params[0])
        with torch.no_grad():
            self.update_fn(params, grads, ms, vs, scalars,
                           self.ema.lerp_args if self.ema is not None else ())
        self.opt.zero_grad(set_to_none=True)
        if self.sign_sgd is not None:
            pe = self.model.puzzle_emb
            if pe.rows is not None and pe.rows.grad is not None:
                self.sign_sgd.step(pe.ids, pe.rows.grad, t.puzzle_emb_lr * scale)
            pe.rows = pe.ids = None

    def train_step(self) -> None:
        t, mc = self.cfg.train, self.model_cfg
        r0 = self.dist.rank * self.B
        new = self._fetch(self.stream.next()[r0:r0 + self.B])

        # halted slots take the new examples and start over; the others keep theirs
        # (final_step: every slot, after `warm` detached supervision steps)
        final_step = t.recipe == "final_step"
        h = torch.ones_like(self.halted) if final_step else self.halted
        warm = self.warmup_steps(self.step + 1) if final_step else 0
        cur = {k: torch.where(h.view(-1, *([1] * (v.dim() - 1))), new[k], v)
               for k, v in self.cur.items()}
        act_steps = torch.where(h, warm, self.act_steps)
        out = self.forward(cur["inputs"], cur["puzzle_ids"], self.carry.y, self.carry.z, h,
                           warm)
        loss = self.loss_fn(out.logits, out.q_halt, cur["labels"], loss_type=t.loss_type,
                            q_weight=t.q_loss_weight)
        # sum over this rank's rows / its rows; DDP averages over ranks -> mean over the global
        # batch, the reference's total / global_batch_size
        (loss.total / self.B).backward()

        self.update()

        with torch.no_grad():
            act_steps = act_steps + 1
            halted = act_steps >= mc.halt_max_steps
            if final_step:  # every example is seen once: all done
                halted = torch.ones_like(halted)
            elif mc.halt_max_steps > 1:
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

    def warmup_steps(self, step: int) -> int:
        """The final_step recipe's detached warm-up steps before update `step`: uniform in
        0..warmup_steps_max, from a generator seeded per update (the same on every rank)."""
        t = self.cfg.train
        top = t.warmup_steps_max if t.warmup_steps_max is not None else \
            self.model_cfg.halt_max_steps - 1
        g = torch.Generator().manual_seed(_mix(self.cfg.seed + 1, step))
        return int(torch.randint(0, top + 1, (1,), generator=g))

    def metric_window(self) -> dict:
        """The train metrics summed since the last log line over all ranks, and the updates
        they cover (one device sync; all ranks must call it). A checkpoint keeps it, so a run
        resumed between two log lines logs its window whole, as an uninterrupted run does."""
        m = self._metric_sum.clone()
        if self.dist.on:
            dist.all_reduce(m)
        return {"sum": m.tolist(), "steps": self._metric_steps}

    def load_metric_window(self, window: dict) -> None:
        """The saved window back: its sum on one rank (the next log line sums over ranks)."""
        self._metric_sum.zero_()
        if self.dist.main:
            self._metric_sum += torch.tensor(window["sum"], dtype=torch.float64,
                                             device=self.device)
        self._metric_steps = int(window["steps"])

    def read_train_metrics(self) -> dict:
        """Mean train metrics since the last call (all ranks must call it). Those over the
        slots that halted are None when none halted in the window (nothing to average)."""
        window = self.metric_window()
        m = window["sum"]
        n = m[0] or None
        rows = max(1, window["steps"]) * self.G
        out = {"count": int(m[0]), **{k: m[i] / n if n else None for i, k in (
                   (1, "cell_accuracy"), (2, "exact_accuracy"), (3, "q_halt_accuracy"),
                   (4, "act_steps"))},
               "lm_loss": m[5] / rows, "q_halt_loss": m[6] / rows, "loss": m[7] / rows}
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
        if self.graphed:  # the training carry must survive the evaluation's replays
            self.carry = _owned(self.carry)
        s = self.val_split
        n = len(s) if self.cfg.data.val_limit is None else min(len(s), self.cfg.data.val_limit)
        share = np.array_split(np.arange(n), self.dist.world)[self.dist.rank]
        # a batch no larger than the split: a 256-example validation at the default batch of
        # 768 ran 3x the rows it scored (each batch is padded to one fixed shape)
        bs = min(self.cfg.eval.batch_size or self.B, max(1, len(share)))
        steps = self.cfg.eval.steps or self.model_cfg.halt_max_steps
        types = self.val_types or ["all"]
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
                carry = _owned(out.carry) if self.graphed else out.carry
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
        rep = Reporter(self, enabled=self.dist.main)
        if self.dist.main:
            self.run_dir.mkdir(parents=True, exist_ok=True)
            train_checkpoint.clean_stale_tmp(self.ckpt_dir)
            write_text(self.run_dir / "config.resolved.yaml", self.resolved_yaml())
            rep.event("start", step=self.step, total_steps=self.total_steps,
                      resumed_from=self.resumed_from, world_size=self.dist.world,
                      device=str(self.device), parameters=count_parameters(self.model),
                      examples_per_epoch=self.stream.examples_per_epoch,
                      training_examples=self.stream.n, eval_every=self.eval_every, config=self.resolved_dict())
            if self.resumed_from:
                how = "continuing at" if self.step else "starting at"  # a warm start of step 0
                print(f"{how} step {self.step} of {self.total_steps} from "
                      f"{self.resumed_from}", file=sys.stderr)
            if self.step >= self.total_steps:  # (a --resume of a finished run)
                print(f"warning: nothing to train: the run is at step {self.step} and "
                      f"{self._length_said()} (raise it to train more)", file=sys.stderr)
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
                        if new_best(self.last_eval, self.best):
                            self.best = {"step": self.step,
                                         "exact_accuracy": self.last_eval["exact_accuracy"],
                                         "cell_accuracy": self.last_eval["cell_accuracy"]}
                        rep.eval(self.step, self.last_eval, self.best)
                every = cfg.checkpoint.every_steps
                if evaluated or final or (every and self.step % every == 0):
                    self.save(reason="eval" if evaluated else "final" if final else "periodic")
                    rep.event("checkpoint", step=self.step, path=str(self._step_dir(self.step)))
                # a signal in the last update stops nothing: the run is done, so it ends as
                # one (its `end` event, exit 0), not with a --resume that has nothing to train
                if not final and self._stop_requested():
                    if self._last_saved != self.step:
                        self.save(reason="interrupt")
                    rep.event("interrupted", step=self.step, path=str(self._step_dir(self.step)))
                    raise Stop(f"stopped at step {self.step}; checkpoint saved",
                               exact=self.cfg.checkpoint.optimizer and self.cfg.checkpoint.carry)
            if self._last_saved != self.step and self.step > 0:  # e.g. resumed at the end
                self.save(reason="final")
            written = self._step_dir(self.step)   # none when there was nothing to train
            result = {"step": self.step, "total_steps": self.total_steps,
                      "val": self.last_eval, "best": self.best,
                      "checkpoint": str(written) if written.is_dir() else None}
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
                try:  # stderr's reader may be gone: `2>&1 | tee log` loses tee to this Ctrl-C
                    print(f"\n{signal.Signals(signum).name}: stopping after this step and "
                          "saving a checkpoint (Ctrl-C again to abort without saving)",
                          file=sys.stderr)
                except OSError:  # raised here, it ended the run with nothing saved
                    pass

        # a signal ignored when we start stays ignored: a script's background job (`ptrm train
        # &`) ignores SIGINT, and a Ctrl-C meant for its foreground must not stop the run
        return {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)
                if signal.getsignal(s) is not signal.SIG_IGN}

    @staticmethod
    def _restore_signal_handlers(old) -> None:
        for s, h in old.items():
            signal.signal(s, h)

    def _stop_requested(self) -> bool:
        """Whether any rank got SIGINT/SIGTERM: every rank stops and saves at the same step."""
        return any_rank(self._stop_signal is not None, self.dist)

    # -- checkpoints ------------------------------------------------------------------------------
    def save(self, reason: str = "") -> Path:
        """Write checkpoints/step_<N> (all ranks call this; rank 0 writes)."""
        path = train_checkpoint.save(self, reason)
        self._last_saved = self.step
        return path

    def _step_dir(self, step: int) -> Path:
        return train_checkpoint.step_dir(self.ckpt_dir, step)

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
        carry gradient (+ 2x the heads), per TRM_REFERENCE.md §8.2; for the final_step recipe
        also the mean number of detached warm-up steps, forward only."""
        per_row = training_flops(self.model_cfg)
        t = self.cfg.train
        if t.recipe == "final_step":  # plus the detached warm-up steps, forward only
            top = t.warmup_steps_max if t.warmup_steps_max is not None else \
                self.model_cfg.halt_max_steps - 1
            per_row += top / 2 * flops_per_step(self.model_cfg)
        return per_row * self.G


def training_flops(c: TRMConfig) -> float:
    """Per sequence and supervision step: forward + backward matmul FLOPs."""
    fwd = flops_per_step(c)
    heads = 2 * c.hidden_size * c.vocab_size * c.total_len + 4 * c.hidden_size
    per_app = (fwd - heads) / (c.H_cycles * (c.L_cycles + 1))
    return fwd + 2 * ((c.L_cycles + 1) * per_app + heads)


def new_best(val: dict, best: dict | None) -> bool:
    """Whether a validation result makes a new `best` checkpoint: a higher exact accuracy, or
    the same and a higher cell accuracy (a run whose exact accuracy sat at 0.0 kept its first
    evaluated step as best, though later ones got more cells right); a full tie keeps the
    earlier step. A best recorded without its cell accuracy (older runs) keeps every tie."""
    if best is None:
        return True
    return ((val["exact_accuracy"], val["cell_accuracy"])
            > (best["exact_accuracy"], best.get("cell_accuracy", float("inf"))))


# -- small helpers -------------------------------------------------------------------------------

def _warn_batch_above_epoch(batch: int, epoch: float, ranks: int) -> None:
    """A batch larger than an epoch runs on (batches cross epoch boundaries), but every update
    then holds some examples twice or more: said once, since it trained without a word."""
    print(f"warning: train.global_batch_size {batch:,} is more than the {epoch:,.0f} "
          f"examples an epoch draws: every batch holds some examples more than once (hint: "
          f"--set train.global_batch_size={_batch_within(epoch, ranks)}, or train on more "
          "data)", file=sys.stderr)


def _batch_within(n: float, ranks: int) -> int:
    """A global batch size to suggest: at most n examples and a multiple of the ranks (a
    plain power of two below n, 1024 of 2,000 on 3 ranks, failed the next check), as a power
    of two per rank. `ranks` when even that is more than n: no smaller batch splits."""
    return ranks << max(0, int(n // ranks).bit_length() - 1)


def _splits_of(dataset: Dataset, asked: str) -> str:
    """"train, val (did you mean train?)": a dataset's splits, and the one a misspelt name
    (`trian`) meant, as a misspelt key is answered."""
    names = sorted(dataset.splits)
    return ", ".join(names) + did_you_mean([asked], names)


def _to_device(t: Tensor, device: torch.device) -> Tensor:
    if device.type == "cuda":
        return t.pin_memory().to(device, non_blocking=True)
    return t.to(device)


def _mix(seed: int, step: int) -> int:
    """A 63-bit generator seed for (run seed, update number)."""
    h = hashlib.blake2b(f"{seed}:{step}".encode(), digest_size=8).digest()
    return int.from_bytes(h, "little") >> 1


def _val_elsewhere(data_cfg, train: Dataset):
    """(split, its type names) of `data.val_split` in the dataset at `data.val_path`, which
    must speak the training dataset's tokens."""
    try:
        other = load_dataset(data_cfg.val_path)
    except PtrmError as e:
        raise PtrmError(f"data.val_path: {e}", hint=e.hint) from None
    other.vocab.check_same(train.vocab, what=f"data.val_path {data_cfg.val_path}",
                           other_what=f"the training dataset {train.path}")
    if other.seq_len != train.seq_len:
        raise PtrmError(f"data.val_path {data_cfg.val_path} has sequences of {other.seq_len} "
                        f"tokens, the training dataset {train.seq_len}")
    if data_cfg.val_split not in other.splits:
        raise PtrmError(f"data.val_path {data_cfg.val_path} has no split "
                        f"{data_cfg.val_split!r} (it has {', '.join(other.splits)})")
    return other.split(data_cfg.val_split), other.types
