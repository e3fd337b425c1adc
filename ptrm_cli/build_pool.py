"""How the build's decode and augment phases run: an ordered map over worker processes, the
progress bar, and the default number of workers.

The map keeps the input order and every random draw is keyed by puzzle, so a build's bytes do
not depend on `--workers` (one process or many) or on chunking.
"""

from __future__ import annotations

import multiprocessing as mp
import os
from collections.abc import Callable, Iterator

from .workers import quiet_worker, sigterm_held


def default_workers() -> int:
    """--workers 0: every core this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:
        return max(1, os.cpu_count() or 1)


def pmap(fn: Callable, tasks: list, workers: int, tick: Callable[[int], None],
         chunksize: int = 8) -> Iterator:
    """Ordered map over `tasks`, in `workers` processes when that is worth it. The results
    are the same either way (ordered; all randomness is keyed by puzzle)."""
    if workers <= 1 or len(tasks) < 2 * chunksize:
        for t in tasks:
            result = fn(t)
            tick(1)  # before handing it on: a consumer that stops at the last never resumes us
            yield result
        return
    method = "fork" if "fork" in mp.get_all_start_methods() else "spawn"
    # no more processes than chunks to hand out: `-j 500` started 500 for a few dozen tasks
    workers = min(workers, -(-len(tasks) // chunksize))
    with sigterm_held():
        pool = mp.get_context(method).Pool(workers, initializer=quiet_worker)
    with pool:
        for r in pool.imap(fn, tasks, chunksize=chunksize):
            tick(1)
            yield r


class Progress:
    """A Rich progress bar on stderr; where stderr is not a terminal (a log, CI), a line per
    tenth of each stage; or nothing."""

    def __init__(self, enabled: bool):
        from .console import err_console

        self.p = None
        self.lines = enabled and not err_console.is_terminal
        if enabled and not self.lines:
            from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn,
                                       TimeElapsedColumn, TimeRemainingColumn)

            self.p = Progress(TextColumn("{task.description:<7}"), BarColumn(),
                              MofNCompleteColumn(), TimeElapsedColumn(), TimeRemainingColumn(),
                              console=err_console, transient=True)

    def __enter__(self):
        if self.p:
            self.p.__enter__()
        return self

    def __exit__(self, *exc):
        if self.p:
            self.p.__exit__(*exc)

    def task(self, description: str, total: int | None) -> Callable[[int], None]:
        if self.lines and total:
            from .console import progress_lines

            update, done = progress_lines(description), 0

            def tick(n: int) -> None:
                nonlocal done
                done += n
                update(done / total)
            return tick
        if not self.p:
            return lambda n: None
        tid = self.p.add_task(description, total=total)
        self.last = tid
        return lambda n: self.p.advance(tid, n)

    def close_open_task(self) -> None:
        """Give the last task (one started without a total) its total: it is finished."""
        if self.p:
            task = self.p.tasks[self.last]
            self.p.update(self.last, total=task.completed)
