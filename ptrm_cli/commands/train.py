"""`ptrm train`: the TRM training recipe (docs/TRAINING.md)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import typer

from ..console import console, err_console, esc
from ..errors import PtrmError, is_out_of_memory
from ..options import set_threads, threads_option


def train(
    config: str = typer.Argument(..., metavar="CONFIG", help="YAML config file (see examples/configs/)."),
    set_: list[str] = typer.Option([], "--set", "-s", metavar="KEY=VALUE",
                                   help="Override a config value, dotted and repeatable: "
                                        "--set train.lr=3e-4 --set data.path=data/ppbench"),
    resume: bool = typer.Option(False, "--resume",
                                help="Continue the run in run_dir from its last checkpoint "
                                     "(exactly: same step, optimizer, data position)."),
    init_from: str = typer.Option(None, "--init-from", metavar="CKPT",
                                  help="Warm start a new run from a checkpoint folder or an "
                                       "official TRM step_N file: weights, EMA and step; "
                                       "fresh optimizer moments."),
    gpus: int = typer.Option(None, "--gpus", min=1,
                             help="GPUs on this machine. More than one launches torchrun with "
                                  "one process per GPU (DistributedDataParallel)."),
    device: str = typer.Option(None, "--device",
                               help="auto | cpu | cuda | cuda:N | mps (default: the config's)"),
    threads: int = threads_option("torch's: one a core"),
):
    """Train a TRM: deep supervision, ACT halting, EMA, AdamATan2.

    Writes RUN_DIR/config.resolved.yaml, RUN_DIR/log.jsonl and RUN_DIR/checkpoints/step_N
    (with `last` and `best` links). Ctrl-C saves a checkpoint at the end of the current step;
    `--resume` continues from it. The first example makes the toy 4x4 sudoku data that
    tiny-cpu.yaml reads.

    Examples:

        python -m ptrm_cli.engine.sudoku4 data/sudoku4
        ptrm train examples/configs/tiny-cpu.yaml
        ptrm train examples/configs/ppbench-att.yaml --gpus 4 --set data.path=data/ppbench
        ptrm train examples/configs/ppbench-att.yaml --resume
    """
    set_threads(threads)  # before torchrun: its ranks take OMP_NUM_THREADS
    if gpus is not None:   # before anything starts: one message, --gpus 1 included
        from ..engine.distributed import check_gpus

        check_gpus(gpus, device or "cuda")
    # the user's own words, for the command that continues the run
    words = {"config": config, "sets": list(set_), "gpus": gpus, "device": device,
             "threads": threads}
    if gpus is not None and gpus > 1 and int(os.environ.get("WORLD_SIZE", "1")) == 1:
        raise typer.Exit(_launch_torchrun(gpus, config, set_, resume, init_from,
                                          device or "cuda", words))
    from ..engine.train import Stop, resume_command, stopped_line, train as run

    again = resume_command(**words)
    if gpus is not None and device is None:
        device = "cuda"
    try:
        result = run(config, set_, resume=resume, init_from=init_from, device=device)
    except Stop as e:
        err_console.print(stopped_line(e, words, markup=True), highlight=False, soft_wrap=True)
        raise typer.Exit(130)
    except KeyboardInterrupt:  # a second Ctrl-C, or one before training began: nothing saved
        if int(os.environ.get("RANK", "0")) == 0:
            err_console.print(f"[yellow]aborted without saving[/]; "
                              f"{esc(_after_abort(config, set_, again))}", highlight=False,
                              soft_wrap=True)
        raise typer.Exit(130)
    except RuntimeError as e:  # torch.OutOfMemoryError too
        if not is_out_of_memory(e):
            raise
        raise PtrmError(f"out of memory on {device or 'the configured device'}: a training "
                        "batch (train.global_batch_size rows, each with its carry and "
                        "gradients) does not fit",
                        hint="--set train.global_batch_size=N with a smaller N (the lr was "
                             "tuned for the recipe's batch), or more GPUs (--gpus)") from None
    if int(os.environ.get("RANK", "0")) == 0:
        _summary(result)


def _after_abort(config: str, sets: list[str], again: str) -> str:
    """Where a run aborted without saving can go on from: its newest checkpoint, if any."""
    from pathlib import Path

    from ..engine.train_checkpoint import checkpoints
    from ..engine.train_config import load_config

    found = checkpoints(Path(load_config(config, sets).run_dir) / "checkpoints")
    if not found:
        return "no checkpoint was written: the same command starts the run again"
    return f"the newest checkpoint is {found[-1][1]}; continue with: {again}"


def _launch_torchrun(gpus: int, config: str, sets: list[str], resume: bool,
                     init_from: str | None, device: str, words: dict) -> int:
    """One process per GPU via PyTorch's own launcher, with NVLink multicast off (our GPU hosts
    need NCCL_NVLS_ENABLE=0 and TORCH_SYMM_MEM_DISABLE_MULTICAST=1). Every process gets the
    device, so a config written for a laptop (`device: cpu`) still trains on the GPUs; `--device
    cpu` runs N CPU processes (gloo) on purpose. `words`: the user's, for the command that
    continues the run, which rank 0 says on Ctrl-C."""
    from ..engine import launch
    from ..engine.train import RESUME_ENV

    args = [config, "--device", device]
    for s in sets:
        args += ["--set", s]
    if resume:
        args.append("--resume")
    if init_from:
        args += ["--init-from", init_from]
    cmd = launch.command(gpus, "ptrm_cli.engine.train", args)
    err_console.print(f"[dim]launching: {esc(' '.join(cmd))}[/]", highlight=False)
    # each Ctrl-C or SIGTERM is passed on to the launcher, which forwards it to the ranks:
    # they save and exit 130 (a second Ctrl-C aborts without saving)
    return launch.supervise(cmd, {**launch.env(), RESUME_ENV: json.dumps(words)})


def _summary(result: dict) -> None:
    from rich.table import Table

    table = Table(title=f"trained to step {result['step']}", show_header=False)
    val, best = result.get("val") or {}, result.get("best")
    for key in ("exact_accuracy", "cell_accuracy", "q_halt_accuracy"):
        if key in val:
            table.add_row(f"val {key.replace('_', ' ')}", f"{val[key]:.4f}")
    if best:
        table.add_row("best val exact accuracy",
                      f"{best['exact_accuracy']:.4f} (step {best['step']})")
    table.add_row("checkpoint", esc(result["checkpoint"] or "none written (nothing to train)"))
    if best and result["checkpoint"]:  # what `ptrm eval` and `ptrm solve` take (README)
        best_dir = Path(result["checkpoint"]).parent / "best"
        if best_dir.is_dir():
            table.add_row("best checkpoint", esc(str(best_dir)))
    console.print(table)
