"""One process per GPU through PyTorch's own launcher (torchrun's `run`), minus its traceback.

When a rank fails, torchrun prints a ChildFailedError traceback and exits 1, whatever the
rank said: a user mistake (a bad path, an exit 2 with one clear message) read as a crash.
This launcher runs the same `torch.distributed.run.run` (standalone rendezvous, NVLink
multicast off as our GPU hosts need) and exits with the failing rank's own status instead
(`exit_status`).

    python -m ptrm_cli.engine.launch NPROC -m MODULE ARGS...      (what `command` builds)
"""

from __future__ import annotations

import os
import sys

#: what every launch sets: our GPU hosts need NVLink multicast off (NCCL and symmetric memory)
DIST_ENV = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1"}


def command(nproc: int, module: str, args: list[str]) -> list[str]:
    """The command line that runs `python -m MODULE ARGS` in NPROC processes."""
    return [sys.executable, "-m", "ptrm_cli.engine.launch", str(nproc), "-m", module, *args]


def env() -> dict[str, str]:
    """The launch's environment: ours, plus DIST_ENV, one OpenMP thread a rank by default."""
    return {"OMP_NUM_THREADS": "1", **os.environ, **DIST_ENV}


def run(nproc: int, module: str, args: list[str]) -> int:
    """Run `python -m MODULE ARGS` in NPROC processes through this launcher and return its
    exit status: what `--gpus N` does (ptrm eval, ptrm bench, python -m ptrm_cli.benchmark)."""
    return supervise(command(nproc, module, args), env())


def supervise(cmd: list[str], environ: dict[str, str]) -> int:
    """Run the launcher `cmd` and return its status, passing on each SIGINT and SIGTERM this
    process receives, once.

    A scheduler's SIGTERM reaches this process only; `subprocess.call` answered it by
    SIGKILLing the launcher, whose ranks then ran on, orphaned, holding the cards and the
    --out lock. The launcher runs in its own session instead, so a Ctrl-C at the terminal
    reaches it only through here too: one signal each time (torchrun's agent forwards it to
    the ranks, which keep what they finished and exit 130; a second Ctrl-C aborts, as for a
    single process)."""
    import signal
    import subprocess

    p = subprocess.Popen(cmd, env=environ, start_new_session=True)

    def forward(signum, frame):
        if p.poll() is None:
            p.send_signal(signum)

    before = {s: signal.signal(s, forward) for s in (signal.SIGINT, signal.SIGTERM)
              if signal.getsignal(s) is not signal.SIG_IGN}  # a background job's stay ignored
    try:
        return p.wait()
    finally:
        for s, handler in before.items():
            signal.signal(s, handler)


def exit_status(failures: dict) -> int:
    """The status of the root cause: a rank that exited by itself (the agent then stops the
    others with SIGTERM, and they may die by it), the earliest such, rank 0 on a tie; a rank
    killed by a signal is 128 + the signal, as a shell says it."""
    def status(f) -> int:
        code = int(f.exitcode)
        return code if code > 0 else 128 - code if code < 0 else 1

    own = [r for r, f in failures.items() if int(f.exitcode) > 0] or list(failures)
    first = min(own, key=lambda r: (getattr(failures[r], "timestamp", 0), r))
    return status(failures[first])


#: statuses a rank ends with after saying why itself: a usage error (2), an interrupt (130)
SAID = (2, 130)


def main(argv: list[str]) -> int:
    import logging

    from torch.distributed.elastic.multiprocessing.api import SignalException
    from torch.distributed.elastic.multiprocessing.errors import ChildFailedError
    from torch.distributed.run import get_args_parser, run

    # the agent logs every failed rank at ERROR ("failed (exitcode: 2) local_rank: 0 ..."):
    # a rank's own message says more; anything else is said below
    logging.getLogger("torch.distributed.elastic.multiprocessing.api").setLevel(logging.CRITICAL)
    nproc, rest = argv[0], argv[1:]
    args = get_args_parser().parse_args(["--standalone", f"--nproc-per-node={nproc}", *rest])
    try:
        run(args)
    except ChildFailedError as e:
        status = exit_status(e.failures)
        if status not in SAID:
            ranks = ", ".join(f"rank {r}: status {exit_status({r: f})}"
                              for r, f in sorted(e.failures.items()))
            print(f"launch: {len(e.failures)} of {nproc} processes failed ({ranks})",
                  file=sys.stderr)
        return status
    except (KeyboardInterrupt, SignalException):  # forwarded to the ranks: they save and stop
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
