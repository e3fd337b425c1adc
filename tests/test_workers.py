"""The start of every pool worker (generate, build-data)."""

from __future__ import annotations

import subprocess
import sys


def test_a_worker_warns_in_one_line_and_leaves_plugin_failures_to_the_parent():
    """A spawned worker imports the codecs again: a broken plugin's warning came out once a
    worker, in Python's raw format (file, line, source), after the parent's one-line one."""
    code = ("import warnings; from ptrm_cli.workers import quiet_worker; quiet_worker(); "
            "warnings.warn(\"ptrm: codec plugin 'x' (x:X) failed to load: boom\"); "
            "warnings.warn('something else')")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stderr == "warning: something else\n"


def _term_self_then_start():
    """A forked worker that gets its SIGTERM before `quiet_worker` has run, then lives on."""
    import os
    import signal
    import time

    from ptrm_cli.workers import quiet_worker

    os.kill(os.getpid(), signal.SIGTERM)
    quiet_worker()
    time.sleep(30)


def test_a_sigterm_that_reaches_a_forked_worker_early_still_ends_it():
    """A pool's terminate() may signal a forked worker before its initializer ran: with the
    parent's handler still in place the signal was lost, the worker waited for ever on the
    queue the pool holds, and build-data (and the test suite) with it. Forked under
    `sigterm_held`, the worker keeps the signal until its own default action is in place."""
    import multiprocessing as mp
    import signal

    import pytest

    from ptrm_cli.workers import sigterm_held

    if "fork" not in mp.get_all_start_methods() or not hasattr(signal, "pthread_sigmask"):
        pytest.skip("no fork or no signal masks here")
    # the parent's own handler (ptrm's raises KeyboardInterrupt; this one lets the child live)
    old = signal.signal(signal.SIGTERM, lambda *a: None)
    try:
        with sigterm_held():
            p = mp.get_context("fork").Process(target=_term_self_then_start)
            p.start()
        assert signal.pthread_sigmask(signal.SIG_BLOCK, set()) == set()  # the parent's again
        p.join(20)
    finally:
        signal.signal(signal.SIGTERM, old)
        if p.is_alive():
            p.kill()
            p.join()
    assert p.exitcode == -signal.SIGTERM
