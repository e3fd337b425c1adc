"""`ptrm generate`: uniquely solvable puzzles with their solutions, as ptrm records."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import typer
from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn,
                           TimeElapsedColumn, TimeRemainingColumn)

from ..atomic import exclusive
from ..console import err_console, esc, progress_lines
from ..errors import PtrmError
from ..generate import MODULES
from ..options import SEED


def _size(text: str | None, gen) -> tuple[int, int]:
    if text is None:
        return gen.default_size
    m = re.fullmatch(r"\s*(\d+)\s*[xX]\s*(\d+)\s*", text)
    if not m:
        raise PtrmError(f"--size {text!r}: expected ROWSxCOLS, e.g. "
                        f"{'x'.join(map(str, gen.default_size))}",
                        hint=gen.size_hint())
    return int(m.group(1)), int(m.group(2))


#: a number as a user writes it: float() also reads `1_0` (as 10) and non-ASCII digits; nan and
#: inf pass here so that the knob's own check says "expected a finite number"
NUMBER = re.compile(r"\s*[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?\s*|\s*[-+]?(nan|inf|infinity)\s*",
                    re.ASCII | re.IGNORECASE)


def _number(text: str) -> float:
    """`text` as a float, if it is a number as written (NUMBER); ValueError otherwise."""
    if not NUMBER.fullmatch(text):
        raise ValueError(text)
    return float(text)


def _params(items: list[str], gen) -> dict[str, float]:
    out, seen = {}, {}
    for item in items:
        key, sep, value = item.partition("=")
        try:
            out[key.strip()] = _number(value)
        except ValueError:
            sep = ""
        if not sep or not key.strip():  # `=3` named no knob ("unknown --param " before)
            raise PtrmError(f"--param {item!r}: expected KEY=NUMBER, e.g. "
                            f"{_example(gen, key.strip())}",
                            hint=f"one knob a -p; {gen.name}'s: "
                                 f"{', '.join(gen.params) or 'none'} ({gen.docs})")
        if key.strip() in seen:   # the last would win without a word
            raise PtrmError(f"--param {key.strip()} is given twice ({seen[key.strip()]!r}, "
                            f"then {item!r}): give each knob once",
                            hint=f"keep the -p {key.strip()}=... you mean and drop the other")
        seen[key.strip()] = item
    return out


def _example(gen, typed: str) -> str:
    """A -p this type takes, with its default: the knob the user `typed` when it is one
    (`-p walls_min` was answered "e.g. min_path=110"), else the type's first (every type has
    knobs: a test says so)."""
    key = typed if typed in gen.params else next(iter(gen.params))
    return f"{key}={gen.params[key][0]:g}"


def generate(
    type: str = typer.Argument(..., metavar="TYPE", help=f"Puzzle type: {', '.join(MODULES)}."),
    n: int = typer.Option(..., "--n", min=1, help="How many puzzles (indices 0..N-1)."),
    out: str = typer.Option(..., "--out", "-o", help="JSONL file to write; an existing file "
                                                     "from the same run is resumed."),
    size: str = typer.Option(None, "--size", help="ROWSxCOLS, 4 to 30 a side (default 10x10; "
                                                  "maze 30x30; sudoku 9x9, also 4x4 or 6x6)."),
    seed: int = SEED,
    workers: int = typer.Option(0, "--workers", "-w", min=0,
                                help="Processes (0 = one per CPU core). Output is the same "
                                     "for any value."),
    minimal: bool = typer.Option(True, "--minimal/--no-minimal",
                                 help="Remove clues until none can go (--no-minimal keeps all)."),
    max_clues: int = typer.Option(None, "--max-clues", min=0,
                                  help="Stop removing clues once this many remain (denser, "
                                       "easier; not nurikabe or maze)."),
    min_difficulty: int = typer.Option(0, "--min-difficulty", min=0,
                                       help="Keep only puzzles that cost the SAT solver at "
                                            "least this many conflicts (harder, slower)."),
    param: list[str] = typer.Option([], "--param", "-p", metavar="KEY=NUMBER",
                                    help="Per-type knob, repeatable, e.g. -p walls=0.2 "
                                         "(lightup). Each type's knobs and defaults: "
                                         "docs/GENERATORS.md (maze: docs/MAZE_ARC.md); a KEY "
                                         "the type lacks is refused with the list."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bar."),
    as_json: bool = typer.Option(False, "--json", help=(
        "Also print a JSON summary on stdout (out, type, size, seed, n, knobs and the counts); "
        "progress and messages stay on stderr.")),
):
    """Generate uniquely solvable puzzles (proved by a SAT solver) with their solutions.

    Puzzle i depends only on (seed, type, i): the file is the same for any --workers, and an
    interrupted run continues where it stopped when run again with the same arguments.

    Examples:

        ptrm generate sudoku --n 100 --out data/gen/sudoku.jsonl
        ptrm generate lightup --n 2000 --out data/gen/lightup.jsonl -p walls=0.2
    """
    from .. import codec as registry
    from ..generate import get
    from ..generate.base import Knobs
    from ..generate.runner import Interrupted, Job, run

    gen = get(type)
    codec = registry.get(gen.name)  # fail now, not in a worker, when the codec is missing
    _check_out(out)
    rows, cols = _size(size, gen)
    gen.check_size(rows, cols)
    knobs = Knobs(minimal=minimal, max_clues=max_clues, min_difficulty=min_difficulty,
                  params=_params(param, gen))
    gen.check_params(knobs)
    gen.check_knobs(knobs, rows, cols)
    if not workers:  # the cores this process may use (a container may allow fewer than exist)
        workers = (len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
                   else os.cpu_count() or 1)
    job = Job(codec.name, rows, cols, seed, knobs)

    bar = not quiet and err_console.is_terminal  # else a line per tenth (a log, CI)
    progress = Progress(TextColumn("[bold]{task.description}"), BarColumn(),
                        MofNCompleteColumn(), TextColumn("{task.fields[rate]}"),
                        TimeElapsedColumn(), TimeRemainingColumn(),
                        console=err_console, disable=not bar, transient=False)
    label = f"{job.type} {rows}x{cols}"
    state = {"present": 0, "line": None if bar or quiet else progress_lines(label)}

    def on_start(todo: int, present: int, beyond: int) -> None:
        state["present"] = present
        if present or beyond:
            err_console.print(f"{esc(out)}: {present + beyond} puzzle(s) already there"
                              f"{_beyond(beyond, n)}; making {todo} more", highlight=False,
                              soft_wrap=True)
        state["task"] = progress.add_task(label, total=n, completed=present, rate="")

    def on_done(index: int) -> None:
        progress.advance(state["task"])
        task = progress.tasks[0]
        if task.elapsed:
            rate = 60 * (task.completed - state["present"]) / task.elapsed
            progress.update(state["task"], rate=f"{rate:.0f}/min")
        if state["line"] is not None:
            state["line"](task.completed / n)

    def report(summary: dict, interrupted: bool, error: str | None = None) -> None:
        if as_json:  # what a script needs to know of the file (the messages stay on stderr)
            typer.echo(json.dumps({"out": out, "type": job.type, "size": f"{rows}x{cols}",
                                   "seed": seed, "n": n, "knobs": knobs.tag(), **summary,
                                   "interrupted": interrupted,
                                   **({"error": error} if error else {})}))

    # one job per file: a second one on it would interleave its lines with this one's. The
    # lock sits beside the file itself: through a symlink to it (another name) a second job
    # took a lock of its own and wrote the same indices again
    try:
        with exclusive(os.path.realpath(out), "generate --out"), progress:
            summary = run(job, n, out, workers=workers, on_start=on_start, on_done=on_done)
    except PtrmError as e:  # a puzzle it could not make: the ones before it are kept
        if getattr(e, "summary", None) is not None:
            report(e.summary, False, str(e))
        raise
    except Interrupted as e:
        report(e.summary, True)
        err_console.print(_kept(e.summary["made"], out), highlight=False, soft_wrap=True)
        raise KeyboardInterrupt from None  # the app says "interrupted" and exits 130
    report(summary, False)
    made, secs = summary["made"], summary["seconds"]
    if made:
        per_core = 60 * made / secs / min(workers, made)
        err_console.print(f"wrote {made} {job.type} puzzle(s) to {esc(out)} in {secs:.1f} s "
                          f"({60 * made / secs:.1f}/min, {per_core:.1f}/min per worker)",
                          highlight=False)
    else:
        err_console.print(f"{esc(out)} already holds all {n} puzzles"
                          f"{_beyond(summary['beyond'], n)}", highlight=False, soft_wrap=True)


def _check_out(out: str) -> None:
    """A file path: generate reads what is there to resume, then appends (a pipe or a device
    would block the reading or refuse the syncing)."""
    if out == "-":
        raise PtrmError("--out -: generate writes a file it can resume from, not stdout",
                        hint="pass a .jsonl path")
    if not out:  # Path("") is ".": it was reported as "--out .: is a folder"
        raise PtrmError("--out '': the path is empty", hint="pass a .jsonl path, e.g. --out "
                                                            "data/gen/puzzles.jsonl")
    path = Path(out)
    # a new folder's name: Path drops the '/', and a file of that name was made
    if out.endswith(("/", os.sep)) and not os.path.lexists(path):
        raise PtrmError(f"--out {out}: names a folder (it ends in '/'), and generate writes "
                        f"one file", hint=f"pass a .jsonl file path, e.g. {out}puzzles.jsonl")
    if path.exists() and not path.is_file() and not path.is_dir():  # a folder: said later
        raise PtrmError(f"--out {out}: not a regular file (a pipe or device)",
                        hint="pass a .jsonl path; generate reads it back to resume")


def _kept(made: int, out: str) -> str:
    """What a stop left in `out`: "0 more puzzle(s) kept" read as if something were saved
    (and a file is made only with its first puzzle, so there may be none)."""
    if made:
        return f"{made} more puzzle(s) kept in {esc(out)}; the same command continues"
    if not os.path.lexists(out):
        return f"stopped before the first puzzle: nothing kept, no {esc(out)} written"
    return f"stopped before a puzzle was made: nothing added to {esc(out)}"


def _beyond(beyond: int, n: int) -> str:
    """What a file made with a larger --n holds past this one: kept as it is, not counted."""
    return f" ({beyond} beyond --n {n}, left as they are)" if beyond else ""
