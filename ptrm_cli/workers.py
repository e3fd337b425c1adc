"""What every worker process of a pool (`ptrm generate`, `ptrm build-data`) starts with."""

from __future__ import annotations

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
    warnings.formatwarning = one_line_warning
    warnings.filterwarnings("ignore", message="ptrm: codec")
