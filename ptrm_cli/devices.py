"""The --device option's values, checked (no typer here: `python -m ptrm_cli.benchmark` and
the training processes use it too)."""

from __future__ import annotations

import re

from .errors import PtrmError


def resolve_device(name: str) -> str:
    """'auto' -> cuda if available, else mps, else cpu; anything else is checked."""
    import torch

    if name == "auto":
        if torch.cuda.is_available():
            return "cuda"
        if getattr(torch.backends, "mps", None) and torch.backends.mps.is_available():
            return "mps"
        return "cpu"
    if not re.fullmatch(r"cpu|mps|cuda(:\d+)?", name):
        raise PtrmError(f"--device {name!r}: expected auto, cpu, cuda, cuda:N or mps")
    if name.startswith("cuda"):
        if not torch.cuda.is_available():
            raise PtrmError(f"--device {name}: no CUDA device is available here",
                            hint="use --device cpu")
        index = int(name.partition(":")[2] or 0)
        if index >= torch.cuda.device_count():
            raise PtrmError(f"--device {name}: this machine has {torch.cuda.device_count()} "
                            f"CUDA device(s), numbered from 0")
    if name == "mps" and not (getattr(torch.backends, "mps", None)
                              and torch.backends.mps.is_available()):
        raise PtrmError("--device mps: MPS is not available here", hint="use --device cpu")
    return name
