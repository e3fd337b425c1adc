"""What every worker process of a pool (`ptrm generate`, `ptrm build-data`) starts with."""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import os
import signal
import sys
import threading
import time
import warnings

#: how often a worker looks for its parent: a killed parent's workers stop within this
PARENT_POLL_S = 0.5


def one_line_warning(message, category, *args, **kwargs) -> str:
    """A warning as the CLI prints it: one line (a plugin that failed to load, say), not a
    source excerpt."""
    return f"warning: {message}\n"


def quiet_worker() -> None:
    """Ctrl-C reaches the whole process group: the parent stops the pool, the workers stay
    quiet instead of printing a traceback each. A spawned worker imports the codecs again; a
    plugin that fails to load was already reported by the parent, once, not once a worker."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # the pool ends its workers with it
    # a result sent to a parent that is gone (`kill -9`) ends the worker, silently: ignored,
    # as Python sets it, the send raised BrokenPipeError and printed a traceback a worker
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    if hasattr(signal, "pthread_sigmask"):  # held back by `sigterm_held` while forking
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})
    warnings.formatwarning = one_line_warning
    warnings.filterwarnings("ignore", message="ptrm: codec")
    parent = mp.parent_process()
    if parent is not None:
        threading.Thread(target=_exit_with_parent, args=(parent.pid,), daemon=True,
                         name="ptrm-parent-watch").start()


def _exit_with_parent(parent_pid: int) -> None:
    """End this worker, quietly, once its parent is gone (`kill -9`: no terminate() comes),
    rather than finish a puzzle no one will read (a large one takes minutes). The parent's pid,
    not os.getppid() at start: a parent killed before this ran is seen too (the orphan's
    getppid() is then its new reaper's)."""
    while os.getppid() == parent_pid:
        time.sleep(PARENT_POLL_S)
    os._exit(0)  # no result can reach the parent: nothing to flush or clean up here


def quiet_tracker() -> None:
    """Keep the resource tracker a spawn pool starts quiet: when the parent is killed, the
    tracker unlinks the pool's semaphores (its job), but warned of them as "leaked" on stderr.
    It takes its -W options from sys.warnoptions when started; call before the pool."""
    option = "ignore:resource_tracker:UserWarning"
    if option not in sys.warnoptions:
        sys.warnoptions.append(option)


@contextlib.contextmanager
def sigterm_held():
    """Hold SIGTERM back (in this thread, and in the processes and threads it starts) while a
    pool forks its workers; `quiet_worker` lets it through once the default action is in place.
    A forked worker runs the parent's SIGTERM handler until `quiet_worker` replaces it, and a
    SIGTERM from the pool's terminate() in between could be lost (Python drops a signal whose
    handler became SIG_DFL before it ran): the worker then waited for ever on the task queue
    the terminating pool holds, and its parent for ever on the worker (a build-data of a few
    tasks, under load)."""
    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)
