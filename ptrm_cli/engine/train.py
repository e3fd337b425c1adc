"""The entry to training: `train()` (what `ptrm train` calls) and `main()`, what torchrun runs
in each process:

    python -m ptrm_cli.engine.train CONFIG [--set KEY=VALUE ...] [--resume] [--init-from DIR]
    torchrun --nproc-per-node N -m ptrm_cli.engine.train CONFIG ...

Training a TRM (TRM_REFERENCE.md §3-4; docs/TRAINING.md) is split by what belongs together:

    train_config.py      the YAML schema, `--set` overrides, checks
    train_data.py        BatchStream: the order examples enter the batch (group sampling)
    train_loop.py        Trainer: the slots, one update, evaluation, the loop, interruption
    train_checkpoint.py  checkpoints/step_<N> with the resume state; last/best; resume
    train_dist.py        several GPUs: the process group, DDP, what ranks agree on
    train_log.py         log.jsonl and the console

A run directory holds:

    config.resolved.yaml    the config as run (dataset-derived model sizes filled in)
    log.jsonl               one JSON object per line: start, train, eval, checkpoint, end events
    checkpoints/step_<N>/   the EMA weights `ptrm solve` reads, plus the resume state
    checkpoints/last, best  symlinks to the newest and the best-on-validation step_<N>
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import shlex
import sys
from contextlib import nullcontext
from pathlib import Path

import torch.distributed as dist

from ..atomic import exclusive
from ..errors import PtrmError, plain_message
from . import distributed
from .checkpoint import CONFIG as CKPT_CONFIG
from .data import Dataset
from .train_config import load_config
from .train_data import BatchStream
from .train_dist import setup_distributed
from .train_loop import Stop, Trainer, training_flops

# The names other code imports from here (commands/train.py, scripts/bench_train.py, tests);
# the rest is imported from the module that defines it.
__all__ = ["train", "main", "load_config", "BatchStream", "Stop", "training_flops",
           "resume_command", "stopped_line", "RESUME_ENV"]

#: `ptrm train --gpus N` hands its ranks the user's words (JSON of resume_command's arguments)
#: here, so that rank 0 says the "continue with:" line a single process says
RESUME_ENV = "PTRM_TRAIN_WORDS"


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
    if dataset is None and not str(cfg.data.path).strip():  # "" would be the current folder
        raise PtrmError("data.path is not set: the dataset to train on is the one required key",
                        hint="add `data: {path: DIR}` to the config, or --set data.path=DIR "
                             "(a folder made by `ptrm build-data`)")
    if dataset is None and not Path(cfg.data.path).exists():  # not "not a ptrm dataset"
        raise PtrmError(f"data.path {cfg.data.path}: no such dataset folder",
                        hint=f"build it first (`ptrm build-data SOURCE... --out "
                             f"{cfg.data.path}`: docs/BUILD_DATA.md), or train on another: "
                             "--set data.path=DIR")
    run_dir = Path(cfg.run_dir)
    if run_dir.exists() and not run_dir.is_dir():
        raise PtrmError(f"run_dir {run_dir} is a file", hint="set run_dir to a folder")
    # a run written into a dataset or a checkpoint would mix its files into theirs
    for name, what in (("meta.json", "a dataset"), (CKPT_CONFIG, "a checkpoint")):
        if (run_dir / name).is_file():
            raise PtrmError(f"run_dir {run_dir} is {what} folder (it has {name})",
                            hint="set run_dir to a folder of its own, e.g. --set "
                                 "run_dir=runs/NAME")
    dist_info = _setup_device(cfg, given=device is not None)
    try:
        # one run per run_dir (rank 0 writes it): a second would mix its checkpoints in
        with exclusive(run_dir, "run (run_dir)") if dist_info.main else nullcontext():
            trainer = Trainer(cfg, resume=resume, dataset=dataset, on_step=on_step,
                              dist_info=dist_info)
            result = trainer.run()
            # DDP's reducer holds the process group: were it freed after teardown (when this
            # frame ends), a rank could abort at exit ("terminate called without an active
            # exception", 1 run in 10 on a 2-core box)
            del trainer
            gc.collect()
    except BaseException:  # no barrier here: the other ranks may never reach it
        if dist_info.on and dist.is_initialized():
            dist.destroy_process_group()
        raise
    distributed.teardown()  # every rank leaves together (a no-op for one process)
    return result


def _setup_device(cfg, *, given: bool):
    """setup_distributed, whose device errors speak of `--device`: a device the config wrote
    (`device: gpu`, or `device: cuda` on a machine without one) is named where it was
    written instead, with the flag that overrides it."""
    from .train_config import where_set

    try:
        return setup_distributed(cfg.device)
    except PtrmError as e:
        if given or not str(e).startswith("--device "):
            raise
        where = where_set(getattr(cfg, "origin", {}), ("device",))
        # the flag's hint kept whole, then a clause of its own: appended to the hint's last
        # clause, "(it overrides the config's)" read as said of whatever that clause named
        said = e.hint or "device: auto (the default) takes a GPU where there is one"
        raise PtrmError(f"{where}config device{str(e)[len('--device'):]}",
                        hint=f"{said}; the config's device takes what --device takes, and "
                             "--device cpu (or another) overrides it") from None


def resume_command(config: str, sets: list[str], gpus: int | None, device: str | None,
                   threads: int | None = None) -> str:
    """The command that continues a run: the same config and overrides (run_dir and the
    data path may come from them), the same threads (a CPU run repeats bit for bit only with
    them), --resume instead of --init-from."""
    words = ["ptrm", "train", config]
    for item in sets:
        words += ["--set", item]
    if gpus is not None:
        words += ["--gpus", str(gpus)]
    if device is not None:
        words += ["--device", device]
    if threads is not None:
        words += ["--threads", str(threads)]
    return shlex.join(words + ["--resume"])


def stopped_line(e: Stop, words: dict, *, markup: bool = False) -> str:
    """What a run that Ctrl-C stopped says: that it saved, and the command that continues it
    (`words`: resume_command's arguments, as the user gave them). A checkpoint without
    optimizer state or carry continues with resume.weights_only=true. `markup`: for Rich,
    the stop in yellow and the paths as text (`runs/exp[lr=3e-4]`)."""
    if not e.exact:
        words = {**words, "sets": [*words["sets"], "resume.weights_only=true"]}
    said, again = str(e), resume_command(**words)
    if markup:
        from ..console import esc

        said, again = f"[yellow]{esc(said)}[/]", esc(again)
    return f"{said}; continue with: {again}"


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
        if os.environ.get("RANK", "0") == "0":  # the user's words, when `ptrm train` launched us
            words = os.environ.get(RESUME_ENV)
            print(stopped_line(e, json.loads(words)) if words else str(e), file=sys.stderr)
        return 130
    except PtrmError as e:
        if os.environ.get("RANK", "0") == "0":  # every rank hits the same config error
            print(plain_message(e, "ptrm train"), file=sys.stderr)  # as the CLI says it
        return e.exit_code
    return 0


if __name__ == "__main__":
    sys.exit(main())
