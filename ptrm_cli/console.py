"""Shared Rich consoles: results to stdout, progress and messages to stderr.

Messages are Rich markup, so a value from the user (a path, a task id, a line of their file)
goes in through `esc`: `[b]` in a file name must print as itself, not open a style or crash
the printer. Emoji codes stay off for the same reason (`:x:` in a device name is text).
"""

import codecs
import os
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.markup import escape

#: the exit status when stdout's reader goes away (`ptrm ... | head`): what a shell gives a
#: process that SIGPIPE ends, and not 1, which `ptrm solve` uses for "no rules-valid answer"
EXIT_BROKEN_PIPE = 141


def silence_stdout() -> None:
    """Point stdout at /dev/null, so that flushing it at exit cannot fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


class _Console(Console):
    def on_broken_pipe(self) -> None:  # Rich's own exits with status 1
        self.quiet = True
        silence_stdout()
        raise SystemExit(EXIT_BROKEN_PIPE)


#: ASCII stand-ins for the characters the boards and messages draw with, used on a stream
#: that cannot encode them (an ASCII locale without Python's UTF-8 mode, PYTHONIOENCODING=ascii,
#: a legacy code page): there printing a solved board raised UnicodeEncodeError, a traceback
#: and exit 1 ("unsolved") after the solve. Shakashaka's triangles become their diagonals.
ASCII_STANDINS = {
    **dict.fromkeys("─━═", "-"), **dict.fromkeys("│┃║", "|"),
    **dict.fromkeys("┌┐└┘├┤┬┴┼", "+"), **dict.fromkeys("╴╶", "-"), **dict.fromkeys("╵╷", "|"),
    "·": ".", "●": "*", "■": "#", "█": "#", "◤": "/", "◢": "/", "◥": "\\", "◣": "\\",
    "σ": "sigma", "≥": ">=", "≤": "<=", "×": "x", "…": "...", "—": "-", "–": "-",
    "•": "o", "→": "->", "✓": "ok", "✗": "x", "±": "+-", "√": "sqrt", "²": "^2", "§": "S",
}
ASCII_ERRORS = "ptrm-ascii"


def _ascii_standin(err: UnicodeError) -> tuple[str, int]:
    """A drawing character's stand-in; any other character as Python writes it to stderr by
    default (`\\xe9`): a file name must stay recognisable, not become `?`."""
    if not isinstance(err, UnicodeEncodeError):
        raise err
    bad = err.object[err.start:err.end]
    return "".join(ASCII_STANDINS.get(ch) or ch.encode("ascii", "backslashreplace").decode()
                   for ch in bad), err.end


codecs.register_error(ASCII_ERRORS, _ascii_standin)


def draw_within_encoding(stream) -> None:
    """Let a stream that cannot encode the drawing characters write ASCII stand-ins instead."""
    try:
        "".join(ASCII_STANDINS).encode(stream.encoding or "ascii")
    except (UnicodeEncodeError, LookupError):
        # Python's defaults only (stdout's crash, stderr's \\u escapes, which ours keeps
        # for what is not drawing): an `ascii:replace` asked for in PYTHONIOENCODING stays
        if hasattr(stream, "reconfigure") and \
                getattr(stream, "errors", "strict") in ("strict", "backslashreplace"):
            stream.reconfigure(errors=ASCII_ERRORS)
    except (AttributeError, TypeError):  # not a text stream (a test harness's)
        pass


for _stream in (sys.stdout, sys.stderr):
    if _stream is not None:
        draw_within_encoding(_stream)
console = _Console(emoji=False)
err_console = _Console(stderr=True, emoji=False)
for _c in (console, err_console):
    # piped into a file or a log, Rich would wrap every line at 80 columns (grep then misses
    # a message split in two); there, lines stay whole unless COLUMNS says otherwise
    if not _c.is_terminal and "COLUMNS" not in os.environ:
        _c.width = 400


def esc(value) -> str:
    """Any value as markup-safe text."""
    return escape(str(value))


@contextmanager
def fraction_progress(label: str, every: float = 0.1) -> Iterator[Callable[[float], None]]:
    """Progress of work measured as a fraction done; yields `update(fraction)`. A bar on a
    terminal; elsewhere (a log file, CI, a GPU machine's captured output, where a live bar
    prints nothing) `progress_lines`: a line each time another `every` of the work is done,
    and at least once a minute while it moves, so a run cut short still shows how far it got
    and how fast it went."""
    if err_console.is_terminal:
        from rich.progress import BarColumn, Progress, TaskProgressColumn, TextColumn, \
            TimeElapsedColumn, TimeRemainingColumn

        with Progress(TextColumn(label), BarColumn(), TaskProgressColumn(), TimeElapsedColumn(),
                      TimeRemainingColumn(), console=err_console, transient=True) as bar:
            task = bar.add_task(label, total=1.0)
            yield lambda fraction: bar.update(task, completed=fraction)
        return
    yield progress_lines(label, every)


def progress_lines(label: str, every: float = 0.1,
                   at_least_every_s: float = 60.0) -> Callable[[float], None]:
    """`update(fraction)` that prints a line on stderr each time another `every` of the work
    is done, and when `at_least_every_s` seconds have passed since the last line if the work
    moved (as often as the caller reports it): progress where no live bar can be drawn. (By
    tenths alone, a CPU evaluation of some hours said nothing for its first half hour, and
    gave the time left in seconds.)"""
    t0 = time.perf_counter()
    shown, last = 0, t0

    def update(fraction: float) -> None:
        nonlocal shown, last
        fraction = min(1.0, fraction)
        now = time.perf_counter()
        reached = int(fraction / every + 1e-9)
        if fraction <= 0 or (reached <= shown and now - last < at_least_every_s):
            return
        shown, last = max(shown, reached), now
        elapsed = now - t0
        done = f"{fraction:.1%}" if fraction < 0.1 else f"{fraction:.0%}"
        err_console.print(f"{label} {done} · {duration(elapsed)} elapsed · "
                          f"~{duration(elapsed * (1 - fraction) / fraction)} left",
                          highlight=False)

    return update


def duration(seconds: float) -> str:
    """A time span as people say it: 42 s, 12 min, 3.4 h."""
    if round(seconds) < 100:
        return f"{round(seconds)} s"
    if round(seconds / 60) < 90:
        return f"{round(seconds / 60)} min"
    return f"{seconds / 3600:.1f} h"
