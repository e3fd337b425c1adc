"""What the GPU measurement scripts share (scripts/fp8_gemm.py, swiglu_gemm.py, norm_kernel.py,
op_parity.py): their options and the JSON they write. Their timer is bench_modes.median_ms."""

from __future__ import annotations

import argparse
import json


def parser(doc: str, rows: int = 6100, *, timed: bool = True) -> argparse.ArgumentParser:
    """--rows (rollout rows in one batch), and for a timed script --tokens and --iters; --json.
    The description is the first paragraph of the script's docstring."""
    p = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    p.add_argument("--rows", type=int, default=rows, help="rollout rows in one batch")
    if timed:
        p.add_argument("--tokens", type=int, default=116, help="tokens a row (100 + 16 prefix)")
        p.add_argument("--iters", type=int, default=20, help="timed calls (their median)")
    p.add_argument("--json", help="also write the numbers to this file")
    return p


def write_json(path: str | None, out: dict) -> None:
    """The script's numbers as JSON at `path` (--json), if one was given."""
    if path:
        with open(path, "w") as f:
            json.dump(out, f, indent=1)
