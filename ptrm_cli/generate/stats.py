"""Clue statistics and difficulty of generated puzzles next to real ones, and the generation
rate: the numbers in docs/GENERATORS.md.

    python -m ptrm_cli.generate.stats TYPE [--n 50] [--seed 0] [-p KEY=VALUE ...]
                                           [--size 10x10] [--real-limit 200]

Real puzzles: shared/data/janko/<type>_10x10.json and the PPBench golden file at the same size
(sudoku: golden 9x9 and the hard lists in shared/data/sudoku), read from their text by the
generator's own readers (`read_janko`, `read_url`, `read_line`), so both sides are measured by
the same code. Difficulty is the same for both sides: a fresh solver's conflicts, decisions and
propagations to solve the puzzle and prove it unique (`Generator.solve`), median and mean.
The rate is CPU time (`time.process_time`) per puzzle through the whole pipeline (make, fresh
re-check, codec parse and verify, record), so a busy machine does not distort it.
"""

from __future__ import annotations

import argparse
import json
import signal
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

from ..errors import PtrmError, plain_message
from . import get
from .base import Knobs

SHARED = Path(__file__).resolve().parents[3] / "shared" / "data"
JANKO = {"lightup": "akari"}


class _Timeout(Exception):
    pass


def _alarm(*_):
    raise _Timeout


def real_puzzles(name: str, rows: int, cols: int, limit: int, shared: Path = SHARED):
    """{source: [Instance]} of the real puzzles of a type at a size."""
    gen = get(name)
    out = {}
    jfile = shared / "janko" / f"{JANKO.get(name, name)}_{rows}x{cols}.json"
    if jfile.exists():
        data = json.loads(jfile.read_text())["data"]
        out["janko"] = [gen.read_janko(v["problem"]) for v in list(data.values())[:limit]]
    gfile = shared / "ppbench" / "golden_300.jsonl"
    if gfile.exists():
        golden = []
        for line in gfile.read_text().splitlines():
            rec = json.loads(line)
            if rec["pid"] == name and rec["height"] == rows and rec["width"] == cols:
                golden.append(gen.read_url(rec["puzzlink_url"]))
        if golden:
            out["golden"] = golden
    if name == "sudoku":
        for fname in ("puzzles5_forum_hardest_1905_11+.txt", "puzzles2_17_clue.txt"):
            path = shared / "sudoku" / fname
            if path.exists():
                lines = [ln.strip() for ln in path.read_text().splitlines()
                         if ln.strip() and not ln.startswith("#")]
                out[fname.removesuffix(".txt")] = [gen.read_line(ln[:81]) for ln in lines[:limit]]
    return out


def measure(name: str, insts, timeout: float = 20.0) -> dict:
    """Clue statistics and solver difficulty over a list of instances."""
    gen = get(name)
    scalars: dict[str, list[float]] = {}
    values: Counter = Counter()
    diff = {"conflicts": [], "decisions": [], "propagations": []}
    timeouts = 0
    old = signal.signal(signal.SIGALRM, _alarm)
    try:
        for inst in insts:
            st = gen.clue_stats(inst)
            values.update(st.pop("values"))
            for k, v in st.items():
                scalars.setdefault(k, []).append(float(v))
            signal.setitimer(signal.ITIMER_REAL, timeout)
            try:
                sols, d = gen.solve(inst, limit=2)
            except _Timeout:
                timeouts += 1
                continue
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
            if len(sols) == 1:
                for k in diff:
                    diff[k].append(d[k])
    finally:
        signal.signal(signal.SIGALRM, old)
    return {"n": len(insts), "scalars": {k: statistics.mean(v) for k, v in scalars.items()},
            "range": {k: (min(v), max(v)) for k, v in scalars.items()},
            "values": values, "timeouts": timeouts,
            "median": {k: statistics.median(v) if v else None for k, v in diff.items()},
            "mean": {k: statistics.mean(v) if v else None for k, v in diff.items()}}


def generated(name: str, rows: int, cols: int, n: int, seed: int, knobs: Knobs):
    """(instances, CPU seconds per puzzle through the whole pipeline) for indices 0..n-1."""
    from .runner import Job, make_instance, make_record

    job = Job(name, rows, cols, seed, knobs)
    t0 = time.process_time()
    for i in range(n):
        make_record(job, i)
    per = (time.process_time() - t0) / n
    return [make_instance(job, i) for i in range(n)], per


def table(rows: dict[str, dict]) -> str:
    """A markdown table: one row per source."""
    keys = []
    for m in rows.values():
        keys += [k for k in m["scalars"] if k not in keys]
    head = ["puzzles", "n"] + keys + ["median conflicts", "mean conflicts", "median decisions"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for src, m in rows.items():
        cells = [src, str(m["n"])]
        for k in keys:
            v = m["scalars"].get(k)
            if v is None:
                cells.append("-")
            elif k == "clues":
                lo, hi = m["range"][k]
                cells.append(f"{v:.1f} ({lo:.0f}-{hi:.0f})")
            else:
                cells.append(f"{v:.3f}")
        med, mean = m["median"], m["mean"]
        cells += [_num(med["conflicts"]), _num(mean["conflicts"]), _num(med["decisions"])]
        if m["timeouts"]:
            cells[-1] += f" ({m['timeouts']} over the time limit)"
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def value_table(rows: dict[str, dict], top: int = 16) -> str:
    """Fractions of clue values, the most common first (by the first source)."""
    order = []
    for m in rows.values():
        order += [v for v, _ in m["values"].most_common() if v not in order]
    order = sorted(order[:top], key=lambda v: (len(v), v))
    lines = ["| value | " + " | ".join(rows) + " |", "|---|" + "---|" * len(rows)]
    for v in order:
        cells = []
        for m in rows.values():
            total = sum(m["values"].values()) or 1
            cells.append(f"{m['values'][v] / total:.3f}")
        lines.append(f"| {v} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _num(x) -> str:
    return "-" if x is None else f"{x:.0f}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m ptrm_cli.generate.stats", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("type")
    ap.add_argument("--n", type=int, default=50, help="generated puzzles to measure")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--size", default=None, help="ROWSxCOLS (default: the type's)")
    ap.add_argument("-p", "--param", action="append", default=[], help="KEY=NUMBER")
    ap.add_argument("--max-clues", type=int, default=None)
    ap.add_argument("--min-difficulty", type=int, default=0)
    ap.add_argument("--real-limit", type=int, default=200, help="real puzzles per source")
    ap.add_argument("--no-real", action="store_true")
    ap.add_argument("--timeout", type=float, default=20.0, help="seconds per real puzzle")
    args = ap.parse_args(argv)
    try:  # the user's to fix (a type, a size, a knob): one message, no traceback
        _report(args)
    except PtrmError as e:
        print(plain_message(e, ap.prog), file=sys.stderr)
        return 2
    return 0


def _args(args) -> tuple:
    """The generator, size and knobs `args` ask for, refused as `ptrm generate` refuses them
    (a knob out of range spent 200 attempts before failing, a type tracebacked)."""
    from ..commands.generate import _params, _size  # the same words for the same mistakes

    gen = get(args.type)
    rows, cols = _size(args.size, gen)
    knobs = Knobs(max_clues=args.max_clues, min_difficulty=args.min_difficulty,
                  params=_params(args.param, gen))
    gen.check_size(rows, cols)
    gen.check_params(knobs)
    gen.check_knobs(knobs, rows, cols)
    return gen, rows, cols, knobs


def _report(args) -> None:
    gen, rows, cols, knobs = _args(args)
    result = {}
    if not args.no_real:
        for src, insts in real_puzzles(gen.name, rows, cols, args.real_limit).items():
            result[src] = measure(gen.name, insts, args.timeout)
    insts, per = generated(gen.name, rows, cols, args.n, args.seed, knobs)
    label = f"generated ({knobs.tag()})"
    result[label] = measure(gen.name, insts, args.timeout)
    print(f"## {gen.name} {rows}x{cols}: {args.n} generated, seed {args.seed}, knobs "
          f"{knobs.tag()}\n")
    print(f"rate: {per:.3f} CPU s per puzzle = {60 / per:.1f} puzzles/min per core "
          f"(whole pipeline)\n")
    print(table(result) + "\n")
    print(value_table(result))


if __name__ == "__main__":
    sys.exit(main())
