"""Paths as reports record them (eval, ARC, bench, `solve --json`): one rule, in a module that
imports nothing of ptrm's, so that every writer can use it at the top of its file."""

from __future__ import annotations

import os
from pathlib import Path


def report_path(path: str | os.PathLike) -> str:
    """`path` as a report records it: absolute, so that a report read later from another folder
    (or merged by `--merge`, or read by `--sigma-from`) still says where it points; as the user
    typed it, it meant something only from the folder that command ran in.

    Not resolved: a symlink the user named stays that link. `checkpoints/best` is what was asked
    for (the best-on-validation weights of a run; `ptrm train` moves the link to each new best),
    and reads as that, where its target `step_4200` would not; which weights it held then is
    `model.weights_sha256`, by content. The bundled model's folder is already absolute
    (`.../ptrm_cli/models/default`) and stays so. Only a `..` is resolved, through what precedes
    it, as the file system reads it: `best/../x` is beside best's target, not beside `best`,
    where a plain `os.path.abspath` would put it."""
    p = Path(path).expanduser()
    parts = p.parts
    if ".." in parts:
        cut = len(parts) - parts[::-1].index("..")
        p = Path(os.path.realpath(Path(*parts[:cut]))).joinpath(*parts[cut:])
    return os.path.abspath(p)
