"""pzpr.js as a reference oracle for the PPBench codecs, and where PPBench's reference files are.

The reference engine is the exact pzpr.js build that PPBench 0.1.0 vendors in its wheel
(`pip install --no-deps ppbench==0.1.0`). We never import the `ppbench` module (it pulls in
gymnasium); we only locate its files through the installed distribution's metadata, and drive
pzpr.js with our own node script, tests/pzpr/check.js, kept running for the whole test session.

    oracle = PzprOracle.start()          # or the session fixture `pzpr` in conftest.py
    oracle.check_cells(url, cells)       # -> {"complete": bool, "code": str | None, ...}
    oracle.check_file(pzprv3_text)
    oracle.ask([...requests...])         # many at once, one round trip (see check.js)

Helpers: `find_golden` / `golden_records` / `golden_by_type` / `golden_params` (PPBench's
golden set from the wheel); `cells_for(codec, puzzle, grid)` turns one of our Solution grids
into pzpr.js cell fields (qans, qsub, anum) per type (`QANS_OF`); `nearby_states` makes boards
around a solution; `compare_verifier` judges them with our verifier and pzpr.js.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
from functools import lru_cache
from importlib import metadata
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
CHECK_JS = HERE / "pzpr" / "check.js"
PPBENCH_VERSION = "0.1.0"
PZPRJS_IN_WHEEL = "ppbench/vendor/pzprjs/dist/js/pzpr.js"
GOLDEN_IN_WHEEL = "ppbench/bundled/golden_300.jsonl"
# a checkout next to the shared data folder (developer machines); CI uses the wheel
GOLDEN_NEXT_TO_REPO = HERE.parents[1] / "shared" / "data" / "ppbench" / "golden_300.jsonl"

INSTALL_HINT = f"pip install --no-deps ppbench=={PPBENCH_VERSION}"

#: the six PPBench types ptrm ships codecs for
GOLDEN_TYPES = ("sudoku", "lightup", "nurikabe", "heyawake", "tapa", "shakashaka")

#: verifier-vs-pzpr.js tally per type, filled by test_pzpr_oracle.py and printed by conftest.py:
#: {"lightup": {"agree": int, "total": int, "codes": {fail codes seen}}}
AGREEMENT: dict[str, dict] = {}


# -- locating PPBench's files ------------------------------------------------------------------

def _wheel_file(relpath: str) -> tuple[Path | None, str]:
    """(path, "") for a file of the installed ppbench wheel, or (None, why not)."""
    try:
        dist = metadata.distribution("ppbench")
    except metadata.PackageNotFoundError:
        return None, f"the ppbench wheel is not installed ({INSTALL_HINT})"
    if dist.version != PPBENCH_VERSION:
        return None, (f"ppbench {dist.version} is installed; the oracle is pinned to the pzpr.js "
                      f"build of {PPBENCH_VERSION} ({INSTALL_HINT})")
    listed = {str(f) for f in (dist.files or ())}
    path = Path(dist.locate_file(relpath))
    if relpath not in listed or not path.is_file():
        return None, f"the ppbench wheel has no {relpath}"
    return path, ""


def find_pzprjs() -> tuple[Path | None, str]:
    """The vendored pzpr.js, or (None, why not)."""
    return _wheel_file(PZPRJS_IN_WHEEL)


def find_node() -> tuple[str | None, str]:
    node = shutil.which("node")
    return (node, "") if node else (None, "node is not on PATH (the pzpr.js oracle runs under node)")


def find_golden() -> tuple[Path | None, str]:
    """PPBench's golden_300.jsonl: from the wheel, else PTRM_PPBENCH_GOLDEN, else the shared
    data folder next to this checkout."""
    path, why = _wheel_file(GOLDEN_IN_WHEEL)
    if path:
        return path, ""
    env = os.environ.get("PTRM_PPBENCH_GOLDEN")
    for cand in ([Path(env)] if env else []) + [GOLDEN_NEXT_TO_REPO]:
        if cand.is_file():
            return cand, ""
    return None, f"PPBench's golden_300.jsonl was not found: {why}"


@lru_cache(maxsize=1)
def golden_records() -> tuple[dict, ...]:
    path, _ = find_golden()
    if path is None:
        return ()
    with open(path) as f:
        return tuple(json.loads(line) for line in f if line.strip())


def golden_by_type(pid: str) -> list[dict]:
    return [r for r in golden_records() if r.get("pid") == pid]


def golden_params(pids) -> list:
    """pytest params, one per golden record of the given types (id: pid, size, URL start), or a
    single skipped param saying why when the golden file is missing."""
    import pytest

    path, why = find_golden()
    if path is None:
        return [pytest.param(None, marks=pytest.mark.skip(reason=why), id="no-golden")]
    return [pytest.param(rec, id=record_id(rec)) for pid in pids for rec in golden_by_type(pid)]


def record_id(record: dict) -> str:
    """A short, stable test id: pid, size and the start of the URL body."""
    url = record.get("puzzlink_url") or record.get("puzzle_url") or ""
    body = url.split("?", 1)[-1].split("/")
    size = f"{body[1]}x{body[2]}" if len(body) > 2 else "?"
    tail = body[3] if len(body) > 3 else ""
    return f"{record.get('pid')}-{size}-{tail[:10]}"


# -- our grids -> pzpr.js cells ----------------------------------------------------------------
#
# Solution.grid meanings, from each codec's module docstring:
#   sudoku      0 empty, 1..n digit (givens included)     -> anum on non-given cells
#   lightup     0 no light, 1 light                         -> qans 1 = light bulb
#   nurikabe    0 unshaded, 1 shaded                        -> qans 1 = shaded
#   tapa        0 unshaded, 1 shaded                        -> qans 1 = shaded
#   heyawake    0 unshaded, 1 shaded (every cell answers)   -> qans 1 = shaded
#   shakashaka  0 empty, 2..5 triangle (pzpr's own codes)   -> qans 2..5
#   hitori      0 unshaded, 1 shaded (the example plugin, examples/ptrm-plugin-hitori)
# Cells the solver cannot change (givens, walls, clues) are left alone: pzpr.js refuses answers
# there, and our codecs ignore them.

QANS_OF = {
    "lightup": {1: 1},
    "nurikabe": {1: 1},
    "tapa": {1: 1},
    "heyawake": {1: 1},
    "shakashaka": {2: 2, 3: 3, 4: 4, 5: 5},
    "hitori": {1: 1},
}


def answer_values(pid: str, n: int = 9) -> list[int]:
    """The values one answer cell of our Solution.grid can take, EMPTY (0) first."""
    if pid == "sudoku":
        return list(range(n + 1))
    return [0, *sorted(QANS_OF[pid])]


def cells_for(codec, puzzle, grid: np.ndarray) -> list[list[int | None]]:
    """[qans, qsub, anum] per cell, row-major; None = leave that field as pzpr.js has it."""
    pid = codec.name
    out: list[list[int | None]] = []
    for r in range(puzzle.rows):
        for c in range(puzzle.cols):
            if not codec.is_answer_cell(puzzle, r, c):
                out.append([None, None, None])
                continue
            v = int(grid[r, c])
            if pid == "sudoku":
                out.append([None, None, v if v > 0 else -1])
            else:
                out.append([QANS_OF[pid].get(v, 0), 0, None])
    return out


def nearby_states(codec, puzzle, solution, rng, n=40):
    """(label, grid) boards around and away from the solution: the solution, the empty board,
    partial (trajectory) boards, the solution minus one cell, 1-3 answer cells changed, and
    random boards. Only answer cells change: givens and clue cells are not the solver's."""
    values = answer_values(codec.name, puzzle.rows)
    answer = np.array([[codec.is_answer_cell(puzzle, r, c) for c in range(puzzle.cols)]
                       for r in range(puzzle.rows)])
    spots = [tuple(rc) for rc in np.argwhere(answer)]
    filled = [rc for rc in spots if solution.grid[rc] != codec.EMPTY]
    base = solution.grid
    out = [("solution", base.copy()), ("empty", np.where(answer, codec.EMPTY, base))]
    required = codec.required_cells(puzzle, solution)
    for k in sorted({len(required) // 3, 2 * len(required) // 3, max(len(required) - 1, 0)}):
        out.append((f"trajectory {k}", codec.trajectory(puzzle, solution, k).grid.copy()))
    for i in rng.choice(len(filled), size=min(3, len(filled)), replace=False):
        g = base.copy()
        g[filled[i]] = codec.EMPTY
        out.append((f"minus r{filled[i][0]}c{filled[i][1]}", g))
    n_random = 8
    while len(out) < n - n_random:
        g = base.copy()
        picks = rng.choice(len(spots), size=min(int(rng.integers(1, 4)), len(spots)), replace=False)
        for i in picks:
            g[spots[i]] = rng.choice([v for v in values if v != g[spots[i]]])
        out.append((f"changed {', '.join(f'r{spots[i][0]}c{spots[i][1]}' for i in picks)}", g))
    for j in range(n_random):
        g = base.copy()
        density = (0.15, 0.3, 0.5, 0.9)[j % 4]
        for rc in spots:
            g[rc] = rng.choice(values[1:]) if rng.random() < density else codec.EMPTY
        out.append((f"random density {density}", g))
    return out


def compare_verifier(oracle, codec, puzzle, url: str, states, *, file_every: int | None = 4):
    """Judge every (label, grid) state with our `codec.verify` and with pzpr.js (set as cells on
    the URL's board; every `file_every`-th state also as our pzprv3 text), in one round trip.
    Returns the disagreements (verdict or first fail code) as sentences; tallies AGREEMENT."""
    from ptrm_cli.codec import Solution

    requests = [(label, grid, {"url": url, "cells": cells_for(codec, puzzle, grid)})
                for label, grid in states]
    if file_every:
        requests += [(f"{label} (pzprv3)", grid,
                      {"file": codec.to_pzprv3(puzzle, Solution(codec.name, grid))})
                     for label, grid in states[::file_every]]
    answers = oracle.ask([req for _, _, req in requests])
    tally = AGREEMENT.setdefault(codec.name, {"agree": 0, "total": 0, "codes": set()})
    mismatches = []
    for (label, grid, _), theirs in zip(requests, answers):
        if "error" in theirs or theirs.get("refused"):
            mismatches.append(f"{label}: pzpr.js {theirs.get('error') or 'refused cells'} "
                              f"{theirs.get('refused') or ''}")
            continue
        violations = codec.verify(puzzle, Solution(codec.name, grid))
        ours = violations[0].code if violations else None
        tally["total"] += 1
        if theirs["complete"] == (not violations) and ours == theirs["code"]:
            tally["agree"] += 1
            tally["codes"].add(ours or "complete")
        else:
            mismatches.append(f"{label}: ours {ours or 'complete'}, "
                              f"pzpr.js {theirs['code'] or 'complete'}")
    return mismatches


# -- the node process --------------------------------------------------------------------------

class OracleError(RuntimeError):
    pass


class PzprOracle:
    """One long-lived `node tests/pzpr/check.js <pzpr.js>` process; JSON lines both ways."""

    def __init__(self, node: str, pzprjs: Path):
        self.pzprjs = pzprjs
        self._proc = subprocess.Popen(
            [node, str(CHECK_JS), str(pzprjs)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True, encoding="utf-8", bufsize=1)
        self._lock = threading.Lock()
        self._next_id = 0

    @classmethod
    def start(cls) -> "PzprOracle":
        """Start the oracle, or raise OracleError saying what is missing."""
        node, why = find_node()
        if node is None:
            raise OracleError(why)
        pzprjs, why = find_pzprjs()
        if pzprjs is None:
            raise OracleError(why)
        oracle = cls(node, pzprjs)
        # a first round trip proves node can load pzpr.js and a variety file
        probe = oracle.ask([{"url": "https://puzz.link/p?sudoku/4/4/g"}])[0]
        if "error" in probe:
            oracle.close()
            raise OracleError(f"pzpr.js did not start under node: {probe['error']}")
        return oracle

    def ask(self, requests: list[dict]) -> list[dict]:
        """Send many requests, get the answers in order. A writer thread feeds stdin while we
        read stdout, so a large batch cannot deadlock on full pipe buffers."""
        if not requests:
            return []
        with self._lock:
            proc = self._proc
            if proc.poll() is not None:
                raise OracleError(f"the pzpr.js process has exited: {proc.stderr.read()[-2000:]}")
            first = self._next_id
            self._next_id += len(requests)
            payload = "".join(json.dumps({**r, "id": first + k}, separators=(",", ":")) + "\n"
                              for k, r in enumerate(requests))
            failure: list[BaseException] = []

            def feed():
                try:
                    proc.stdin.write(payload)
                    proc.stdin.flush()
                except BaseException as e:  # reported after the reads below
                    failure.append(e)

            writer = threading.Thread(target=feed, daemon=True)
            writer.start()
            answers = []
            for k in range(len(requests)):
                line = proc.stdout.readline()
                if not line:
                    raise OracleError(f"the pzpr.js process stopped answering: "
                                      f"{proc.stderr.read()[-2000:]}")
                answer = json.loads(line)
                if answer.get("id", first + k) != first + k:  # out of step: unusable from here
                    proc.kill()
                    raise OracleError(f"pzpr.js answered request {answer.get('id')} "
                                      f"when {first + k} was due")
                answers.append(answer)
            writer.join()
            if failure:
                raise OracleError(f"writing to the pzpr.js process failed: {failure[0]}")
            return answers

    def check_cells(self, url: str, cells: list, **extra) -> dict:
        return self.ask([{"url": url, "cells": cells, **extra}])[0]

    def check_file(self, text: str, **extra) -> dict:
        return self.ask([{"file": text, **extra}])[0]

    def close(self) -> None:
        if self._proc.poll() is None:
            self._proc.stdin.close()
            try:
                self._proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        for stream in (self._proc.stdout, self._proc.stderr):
            stream.close()
