"""Reporting a training run: RUN_DIR/log.jsonl (appended, so a resumed run continues the same
log) and the console."""

from __future__ import annotations

import json
import math
import signal
import time
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from .train_loop import Trainer


class Reporter:
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
        self.diverged = False   # said once: the loss is no longer finite

    def _write(self, rec: dict) -> None:
        if not self.enabled:
            return
        rec = {"time": round(time.time(), 3), **_finite(rec)}
        with open(self.path, "a") as f:
            f.write(json.dumps(rec, default=_json_default) + "\n")

    def event(self, kind: str, **fields) -> None:
        self._write({"event": kind, **fields})
        if kind == "start":
            self._say(_start_line(fields))
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
        info = (f"loss {m['loss']:.4f} exact {_share(m['exact_accuracy'])} "
                f"q {_share(m['q_halt_accuracy'])} {extra['steps_per_s']:.2f} it/s")
        if self.progress is not None:
            self.progress.update(self.task, info=info)
        elif self.mode == "lines":
            self._say(f"step {step}/{self.tr.total_steps} lr {extra['lr']:.2e} {info}")
        if not math.isfinite(m["loss"]) and not self.diverged:  # it trained on, silently
            self.diverged = True
            self._say(f"[yellow]warning:[/] the training loss is {m['loss']} at step {step}: "
                      "the run diverged, and what it trains and saves from here is not a "
                      "model (lower train.lr, or raise train.lr_warmup_steps)")

    def eval(self, step: int, m: dict, best: dict | None) -> None:
        self._write({"event": "eval", "step": step, **m, "best": best})
        self._say(f"[bold]eval[/] step {step}: exact {m['exact_accuracy']:.4f} cell "
                  f"{m['cell_accuracy']:.4f} q-halt {m['q_halt_accuracy']:.4f} "
                  f"(n={m['count']}; best {best['exact_accuracy']:.4f} at {best['step']})")

    def _say(self, text: str) -> None:
        if self.mode == "none":
            return
        try:
            (self.progress.console if self.progress is not None else self.console).print(
                text, highlight=False)
        except SystemExit as e:  # the console's reader went away (`| head`, a `| tee` that
            from ..console import EXIT_BROKEN_PIPE  # a Ctrl-C ended): it ended the run unsaved

            if e.code != EXIT_BROKEN_PIPE:
                raise
            # stop as on SIGINT: a checkpoint at the end of this step; log.jsonl keeps the rest
            self.mode = "none"
            if self.tr._stop_signal is None:
                self.tr._stop_signal = signal.SIGPIPE

    def close(self) -> None:
        if self.progress is not None:
            self.progress.stop()
            self.progress = None


def _start_line(f: dict) -> str:
    """What the run trains on and where it writes, said at once: the first train line comes
    `log.every` updates later, after compiling or a slow first step (a minute or more)."""
    from ..console import esc  # paths are text, not markup: `runs/exp[lr=3e-4]`

    cfg = f["config"]
    n, epoch = f["training_examples"], int(f["examples_per_epoch"])
    # group sampling draws one augmented version of each puzzle an epoch: "142 examples per
    # epoch" read as a contradiction of build-data's 1,420 training examples
    drawn = f"{n:,} training examples" + (f", {epoch:,} drawn an epoch (one version of each "
                                          "puzzle)" if epoch < n else "")
    # compiling a 7M model's step took over two minutes on 2 cores, with nothing on screen
    compiling = "; compiling the step first (minutes on a CPU; --set train.compile=false " \
        "skips it)" if cfg["train"].get("compile") and str(f["device"]) == "cpu" else ""
    return (f"training {f['parameters']:,} parameters on {f['device']}: "
            f"{esc(cfg['data']['path'])} ({drawn}), {f['total_steps']:,} "
            f"update{'' if f['total_steps'] == 1 else 's'} of "
            f"{cfg['train']['global_batch_size']:,}; writing {esc(cfg['run_dir'])}{compiling}")


def _finite(o):
    """NaN and infinities as null: json.dumps writes them as `NaN`, which is not JSON (jq and
    JSON.parse refused every line of a run whose loss diverged)."""
    if isinstance(o, float) and not math.isfinite(o):
        return None
    if isinstance(o, dict):
        return {k: _finite(v) for k, v in o.items()}
    if isinstance(o, (list, tuple)):
        return [_finite(v) for v in o]
    return o


def _json_default(o):
    if isinstance(o, (np.integer,)):
        return int(o)
    if isinstance(o, (np.floating,)):
        return _finite(float(o))
    if isinstance(o, Path):
        return str(o)
    return str(o)


def _share(v: float | None) -> str:
    """A train metric over the slots that halted: '-' when none halted in the window."""
    return "  -  " if v is None else f"{v:.3f}"
