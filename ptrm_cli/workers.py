"""What every worker process of a pool (`ptrm generate`, `ptrm build-data`) starts with."""

from __future__ import annotations

import contextlib
import signal
import warnings


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
    if hasattr(signal, "pthread_sigmask"):  # held back by `sigterm_held` while forking
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})
    warnings.formatwarning = one_line_warning
    warnings.filterwarnings("ignore", message="ptrm: codec")


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
