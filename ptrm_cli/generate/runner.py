"""Running a generator: puzzle i from (seed, i), a process pool, and a resumable JSONL file.

Output: one ptrm record per line, `codec.to_record(puzzle, solution, id=..., source="generated",
seed=..., index=..., difficulty=..., knobs=...)`, in index order. Each line is written whole and
then flushed and fsynced, so an interrupted run leaves complete lines plus at most one partial
last line. Resuming with the same command drops that partial line, keeps every complete one and
makes only the missing indices; because puzzle i depends only on (seed, type, i), the finished
file is the same as one made in a single run, with any worker count.
"""

from __future__ import annotations

import contextlib
import errno
import json
import multiprocessing as mp
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

from ..atomic import write_problem
from ..codec import size_name
from ..errors import PtrmError
from ..workers import quiet_tracker, quiet_worker
from . import get
from .base import Instance, Knobs, puzzle_rng


@dataclass(frozen=True)
class Job:
    """What a worker needs to make puzzle `index` (picklable)."""

    type: str
    rows: int
    cols: int
    seed: int
    knobs: Knobs


def record_id(job: Job, index: int) -> str:
    return f"gen-{job.type}-{job.rows}x{job.cols}-s{job.seed}-{index:06d}"


#: record_id's format read back; kept beside it (a test round-trips the two)
_RECORD_ID = re.compile(r"gen-(?P<type>[^-]+)-(?P<rows>\d+)x(?P<cols>\d+)-s(?P<seed>\d+)"
                        r"-(?P<index>\d+)")


def parse_record_id(text) -> dict | None:
    """The type, rows, cols, seed and index a `record_id` names, or None for any other id.
    The size is in no other field of a record, so a resumed file's size is read from here."""
    match = _RECORD_ID.fullmatch(text) if isinstance(text, str) else None
    if match is None:
        return None
    fields = match.groupdict()
    return {"type": fields.pop("type"), **{k: int(v) for k, v in fields.items()}}


def make_instance(job: Job, index: int) -> Instance:
    """Puzzle `index` of the job, in the generator's own terms (no codec involved)."""
    gen = get(job.type)
    return gen.make(puzzle_rng(job.seed, job.type, index), job.rows, job.cols, job.knobs)


def make_record(job: Job, index: int) -> dict:
    """Puzzle `index` as a ptrm record, through the codec: parse the pzprv3 text with its answer,
    verify the answer by the codec's own rules, and write the record."""
    from .. import codec as registry

    gen = get(job.type)
    codec = registry.get(job.type)
    inst = make_instance(job, index)
    text = gen.to_pzprv3(inst)
    parsed = codec.parse(text, source=record_id(job, index))
    if parsed.solution is None:
        raise AssertionError(f"{job.type} codec read no answer from generated pzprv3 text")
    bad = codec.verify(parsed.puzzle, parsed.solution)
    if bad:
        raise AssertionError(f"{record_id(job, index)}: the {job.type} codec rejects the generated "
                             f"solution ({bad[0].code}: {bad[0].message})\n{text}")
    version = {"version": gen.version} if gen.version > 1 else {}  # 1: records before versions
    return codec.to_record(parsed.puzzle, parsed.solution, id=record_id(job, index),
                           source="generated", seed=job.seed, index=index,
                           difficulty=inst.stats["difficulty"], knobs=job.knobs.tag(), **version)


def _work(args: tuple[Job, int]) -> tuple[int, str]:
    job, index = args
    return index, json.dumps(make_record(job, index), separators=(",", ":"))


# -- the output file -------------------------------------------------------------------------

class ResumableJsonl:
    """An append-only JSONL file of generated records.

    Opening it drops a trailing partial line (an interrupted write), checks that the records
    already there come from the same job, and reports their indices; `write` appends one whole
    line and fsyncs it. A new file is made by the first `write` (its folder is made and
    checked at once): none is left by a run that made no puzzle."""

    def __init__(self, path: str | os.PathLike, job: Job):
        self.path = Path(path)
        self.job = job
        self.done: set[int] = set()
        self._fd: int | None = None  # a new file is made at the first write, not here
        try:  # a user's path: a symlink loop, a file without read or write permission
            exists = self._exists()
            if exists:
                self._scan()
                self._fd = self._open()  # a file it cannot append to: said before any work
        except OSError as e:
            raise PtrmError(f"--out {self.path}: cannot read and append to it "
                            f"({write_problem(self.path, e)})",
                            hint="pass a .jsonl path you can read and write; generate reads "
                                 "it back to resume") from None
        if not exists:
            self._check_creatable()

    def _exists(self) -> bool:
        """Whether there is a file to resume. Only "no such file" means a new one: any other
        failure (a symlink loop, a folder it may not search) is raised now, before the work,
        rather than at the first write (`Path.exists` reads a loop as absent)."""
        try:
            os.stat(self.path)
        except FileNotFoundError:
            return False
        return True

    def _open(self, create: bool = False) -> int:
        # unbuffered: a write the disk refuses leaves nothing behind for `close` to retry
        flags = os.O_WRONLY | os.O_APPEND | (os.O_CREAT if create else 0)
        return os.open(self.path, flags, 0o666)

    def _check_creatable(self) -> None:
        """Make the new file's folder and check that it may be written, now: with the file
        made only at the first write, a folder it could not write was found after the first
        puzzle (minutes, for a hard one). The folder is the real one a dangling symlink
        points into, where the file will be made."""
        folder = Path(os.path.realpath(self.path)).parent
        try:
            folder.mkdir(parents=True, exist_ok=True)
            if not os.access(folder, os.W_OK | os.X_OK):  # (a read-only mount says so too)
                raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(folder))
        except OSError as e:
            raise self._cannot_create(e) from None

    def _cannot_create(self, e: OSError) -> PtrmError:
        return PtrmError(f"--out {self.path}: cannot create it ({write_problem(self.path, e)})",
                         hint="pass a .jsonl path in a folder you can write")

    def _create(self) -> None:
        """Make the file for its first line: a run stopped or failed before its first puzzle
        left an empty file behind, which read as a result."""
        try:
            self._fd = self._open(create=True)
        except OSError as e:
            raise self._cannot_create(e) from None

    def _discard(self) -> None:
        """Remove the file `_create` made, when its first line could not be written (a full
        disk): an empty file, or one cut line, read as a result. Removed where it lies, so a
        dangling symlink --out keeps its link."""
        self.close()
        with contextlib.suppress(OSError):
            os.unlink(os.path.realpath(self.path))

    def _scan(self) -> None:
        """Check every whole line first and only then drop a partial last line: a file that is
        not ours (a wrong --out) is refused untouched."""
        if self.path.is_dir():
            raise PtrmError(f"--out {self.path}: is a folder", hint="pass a .jsonl file path")
        data = self.path.read_bytes()
        end = data.rfind(b"\n") + 1
        lines = data[:end].split(b"\n")[:-1]
        first: dict[int, int] = {}  # index -> the line that holds it
        for n, raw in enumerate(lines, 1):
            if raw.strip():
                self._add(n, raw, first)
        tail = data[end:]
        if tail and _is_json(tail):
            # a whole record without its newline (a file another tool wrote, or a write cut
            # just before it): checked like every line, so another run's record is refused,
            # not cut off; ours is kept and its line ended
            self._add(len(lines) + 1, tail, first)
            with open(self.path, "ab") as f:
                f.write(b"\n")
                f.flush()
                os.fsync(f.fileno())
        elif tail:  # a partial last line from an interrupted run: drop it
            start = f'{{"type":"{self.job.type}"'.encode()
            if not (self.done or tail.startswith(start) or start.startswith(tail)):
                raise PtrmError(f"{self.path}:{len(lines) + 1}: not a record `ptrm generate` "
                                f"wrote", hint="pass another --out")
            with open(self.path, "r+b") as f:
                f.truncate(end)
                f.flush()
                os.fsync(f.fileno())

    def _add(self, n: int, raw: bytes, first: dict[int, int]) -> None:
        """Count line `n` as done. An index seen before means the file was joined with itself
        or with a copy: counted once, it was passed on to build-data twice."""
        index = self._index(n, raw)
        if index in first:
            raise PtrmError(f"{self.path}:{n}: puzzle {index} again (also on line "
                            f"{first[index]}): each index is written once",
                            hint="keep one line per index (or pass another --out)")
        first[index] = n
        self.done.add(index)

    def _index(self, n: int, raw: bytes) -> int:
        """The index of line `n`, a record of this job, or a PtrmError that says why not."""
        try:
            rec = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError):
            raise PtrmError(f"{self.path}:{n}: not a JSON line; this is not a file "
                            f"`ptrm generate` wrote", hint="pass another --out") from None
        index = rec.get("index") if isinstance(rec, dict) else None
        if not isinstance(index, int) or isinstance(index, bool) or index < 0:
            raise PtrmError(f"{self.path}:{n}: not a record `ptrm generate` wrote (expected a "
                            f"JSON object with an index)", hint="pass another --out")
        differs = self._differs(rec)
        if differs:
            raise PtrmError(f"{self.path}:{n}: holds a puzzle from another run "
                            f"({rec.get('id')}): {'; '.join(differs)}",
                            hint="resume with the same type, size, seed and knobs, or pass "
                                 "another --out (a new generator version makes other puzzles "
                                 "from the same seed: docs/GENERATORS.md)")
        return index

    def _differs(self, rec: dict) -> list[str]:
        """What of record `rec`'s run is not this job's, each as "size 10 rows x 12 columns,
        this run 9x9". Named one by one: the whole settings shown side by side left a wrong
        --size unsaid (the size is only in the id) and two equal-looking dicts to compare by
        eye."""
        job = self.job
        named = parse_record_id(rec.get("id"))
        size = named and size_name(named["rows"], named["cols"])  # sizes as messages say them
        theirs = {"type": rec.get("type"), "size": size, "seed": rec.get("seed"),
                  "knobs": rec.get("knobs"),
                  "generator version": rec.get("version", 1)}
        ours = {"type": job.type, "size": size_name(job.rows, job.cols), "seed": job.seed,
                "knobs": job.knobs.tag(), "generator version": get(job.type).version}
        if theirs["type"] != ours["type"]:  # versions of two types' generators: unrelated
            del theirs["generator version"], ours["generator version"]
        return [f"{key} {_shown(theirs[key])}, this run {_shown(ours[key])}"
                for key in ours if theirs[key] != ours[key]]

    def write(self, line: str) -> None:
        data = (line + "\n").encode()
        first = self._fd is None  # this line makes the file
        if first:
            self._create()
        try:
            while data:  # a write may take part of it (the last bytes before a full disk)
                data = data[os.write(self._fd, data):]
            os.fsync(self._fd)
        except OSError as e:  # a full disk, a quota: the lines before this one are whole
            if first:  # there are none: no file is left, as for a run that made no puzzle
                self._discard()
                raise PtrmError(f"{self.path}: cannot write the first puzzle "
                                f"({e.strerror or e}): nothing kept, no file left",
                                hint="make room (or pass another --out) and run the same "
                                     "command again") from None
            raise PtrmError(f"{self.path}: cannot append a puzzle ({e.strerror or e})",
                            hint="make room and run the same command again: the puzzles "
                                 "written so far are kept, a cut line is dropped") from None

    def close(self) -> None:
        if self._fd is not None:  # None: nothing was written, so no file was made
            os.close(self._fd)
            self._fd = None


def _shown(value) -> str:
    """A record's setting as a message shows it: a missing one says so, not "None"."""
    return "none" if value is None else str(value)


def _is_json(raw: bytes) -> bool:
    """A complete JSON value (a record line is an object, so no prefix of one is)."""
    try:
        json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        return False
    return True


class Interrupted(KeyboardInterrupt):
    """Ctrl-C (or SIGTERM) during `run`: every puzzle written so far is in the file, and
    `summary` says how many, as `run`'s own return value would."""

    def __init__(self, summary: dict):
        super().__init__()
        self.summary = summary


def run(job: Job, n: int, out: str | os.PathLike, *, workers: int = 1,
        on_start: Callable[[int, int, int], None] | None = None,
        on_done: Callable[[int], None] | None = None,
        make: Callable[[tuple[Job, int]], tuple[int, str]] = _work) -> dict:
    """Make puzzles 0..n-1 of `job` into `out`, skipping indices already there. Returns a
    summary: how many were made now, how many of 0..n-1 were present, how many more the file
    holds beyond n (an earlier run with a larger n: kept, not counted), and the seconds
    spent. `on_start(todo, present, beyond)` is called before the work begins. Interrupted,
    it raises `Interrupted` with the same summary of what was made up to then; a PtrmError
    (a puzzle it could not make) leaves with that summary as its `summary`."""
    writer = ResumableJsonl(out, job)
    # counted, not listed: a list of every index (and a task per index) took gigabytes before
    # the first puzzle at --n 100000000, then a MemoryError traceback
    present = sum(1 for i in writer.done if i < n)
    beyond, todo = len(writer.done) - present, n - present
    if on_start:
        on_start(todo, present, beyond)
    t0, made = time.perf_counter(), 0

    def summary() -> dict:
        return {"made": made, "present": present, "beyond": beyond,
                "seconds": time.perf_counter() - t0}

    try:
        missing = (i for i in range(n) if i not in writer.done)
        for index, line in _results(job, missing, todo, workers, make):
            writer.write(line)
            made += 1
            if on_done:
                on_done(index)
    except KeyboardInterrupt:
        raise Interrupted(summary()) from None
    except PtrmError as e:  # what was written before it stays: say how much
        e.summary = summary()
        raise
    finally:
        writer.close()
    return summary()


def _results(job: Job, missing: Iterator[int], todo: int, workers: int,
             make) -> Iterator[tuple[int, str]]:
    """(index, line) for the `todo` indices `missing` yields, in index order. Several workers:
    a process pool whose `imap` keeps order, so lines are written in index order while later
    puzzles are already being made (its feeder blocks on the pipe to the workers, so the tasks
    are drawn as they are needed, not all at once)."""
    tasks = ((job, i) for i in missing)
    if workers <= 1 or todo <= 1:
        for t in tasks:
            yield _made_here(make, t)
        return
    ctx = mp.get_context("spawn")  # no forked solver or Rich state; same on Linux and macOS
    quiet_tracker()
    pool = ctx.Pool(min(workers, todo), initializer=quiet_worker)
    try:
        yield from pool.imap(make, tasks, chunksize=1)
        pool.close()
    except BaseException:
        pool.terminate()
        raise
    finally:
        pool.join()


#: pysat's C modules: each catches Ctrl-C itself while it runs and raises its own `error`
_PYSAT_C = ("pysolvers", "pycard")


def _made_here(make, task) -> tuple[int, str]:
    """`make(task)` in this process. Ctrl-C during a CaDiCaL solve or a cardinality encoding
    reaches pysat's own SIGINT handler, which raises `error("Caught keyboard interrupt")`, not
    KeyboardInterrupt: a traceback in place of the summary and exit 130. (Workers ignore
    SIGINT, so only this path sees it.)"""
    try:
        return make(task)
    except Exception as e:
        if type(e).__module__ in _PYSAT_C and "keyboard interrupt" in str(e).lower():
            raise KeyboardInterrupt from None
        raise
