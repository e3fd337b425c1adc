"""Triton's CPU interpreter for the tests of our GPU kernels. A CPU torch comes without Triton,
so scripts/setup.sh installs it into .triton/ instead of the environment; the tests run the
interpreter in a subprocess that alone has that folder on its path."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

TRITON_DIR = Path(__file__).resolve().parents[1] / ".triton"
_IN_ENV = importlib.util.find_spec("triton") is not None

needs_triton = pytest.mark.skipif(
    not (_IN_ENV or (TRITON_DIR / "triton").is_dir()),
    reason="Triton not installed (scripts/setup.sh puts it in .triton/)")


def interpreter_env() -> dict[str, str]:
    """The environment for a subprocess that runs a kernel in Triton's interpreter."""
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    if not _IN_ENV:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(TRITON_DIR), env.get("PYTHONPATH")]))
    return env
