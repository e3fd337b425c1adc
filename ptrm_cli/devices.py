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
        raise PtrmError(f"--device {name!r}: expected auto, cpu, cuda, cuda:N or mps",
                        hint=_device_hint(name))
    if name.startswith("cuda"):
        if not torch.cuda.is_available():
            raise PtrmError(f"--device {name}: no CUDA device is available here",
                            hint="use --device cpu")
        index = int(name.partition(":")[2] or 0)
        if index >= torch.cuda.device_count():
            n = torch.cuda.device_count()
            raise PtrmError(f"--device {name}: this machine has {n} CUDA device(s), numbered "
                            "from 0", hint=f"--device cuda:0 to cuda:{n - 1}, or cuda for the "
                                           "first")
    if name == "mps" and not (getattr(torch.backends, "mps", None)
                              and torch.backends.mps.is_available()):
        raise PtrmError("--device mps: MPS is not available here", hint="use --device cpu")
    return name


def _device_hint(name: str) -> str:
    """What the user likely meant: torch calls a GPU cuda ("gpu", "nvidia"), and picks one by
    its number ("cuda:x", "cuda1": cuda:N)."""
    low = name.strip().lower()
    if re.fullmatch(r"cpu|mps|cuda(:\d+)?|auto", low):  # CPU, " cuda": the name, as written
        return f"--device {low}: device names are lower case, without spaces"
    if low.startswith(("cuda", "gpu", "nvidia")):
        return ("a GPU is cuda: --device cuda for the first, cuda:N (N = 0, 1, ...) for "
                "another; auto (the default) takes one when there is one")
    return "leave --device out: auto (the default) takes a GPU when there is one, else the CPU"
