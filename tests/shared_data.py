"""The third-party data the tests read in place from ../shared/data (never copied into the
repository), as pytest parameters that skip with a reason when the data is absent."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

SHARED = Path(__file__).resolve().parents[1].parent / "shared"
JANKO_DIR = SHARED / "data" / "janko"


def _golden() -> Path:
    """The golden file the tests read: the installed ppbench wheel's copy (CI has it, through
    scripts/setup.sh), else the shared data folder's; where neither exists, the shared path,
    so that skip messages name where it was looked for."""
    from pzpr_oracle import find_golden

    return find_golden()[0] or SHARED / "data" / "ppbench" / "golden_300.jsonl"


GOLDEN = _golden()


def golden_params(pid: str) -> list:
    """Every golden record of one PPBench type, with an id naming its size and URL."""
    if not GOLDEN.exists():
        return [pytest.param(None, marks=pytest.mark.skip(reason=f"golden set not found at {GOLDEN}"))]
    records = [json.loads(ln) for ln in GOLDEN.read_text().splitlines() if ln.strip()]
    return [pytest.param(r, id=f"{r['width']}x{r['height']}-{r['puzzlink_url'].rsplit('/', 1)[-1][:10]}")
            for r in records if r["pid"] == pid]


def janko_params(filename: str) -> list:
    """Every entry ({"problem", "solution"}) of one janko file, with its janko id."""
    path = JANKO_DIR / filename
    if not path.exists():
        return [pytest.param(None, marks=pytest.mark.skip(reason=f"janko data not found at {path}"))]
    data = json.loads(path.read_text())["data"]
    return [pytest.param(e, id=k) for k, e in data.items()]
