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
