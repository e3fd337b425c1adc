"""Nothing lost when `ptrm eval` is interrupted: every finished run is saved at once.

An evaluation is a list of runs (a deterministic baseline per depth, then PTRM per sigma and
seed), each minutes to hours on a large split. After each one, `run_eval` records it here in
`OUT/partial.json` (atomically); `ptrm eval --resume` with the same `--out` reads them back and
runs only the missing ones. A run is identified by its own parameters (depth, or sigma and
seed) under a fingerprint of what every run shares (the weights, model, puzzles, K, D,
perturbation, halting, and on a CPU torch's thread count), so a resumed command may also ask for
more seeds or sigmas than the first. The file goes away once the report is written; the report
holds the same fingerprint (`report_fingerprint`), so `--resume` of a finished evaluation can
tell that nothing is left to run.

`weights_sha256` is also what a report records of its weights (`model.weights_sha256`), so that
`--merge` and `--sigma-from` can tell two checkpoints apart where their paths cannot: seeds run
as jobs on other machines, where the same weights live at other paths.
"""

from __future__ import annotations

import functools
import hashlib
import json
from pathlib import Path

from .atomic import write_text
from .errors import PtrmError

FORMAT = "ptrm-eval-partial/1"
NAME = "partial.json"
#: the fingerprint's thread count, named as a report's provenance names it
THREADS = "cpu_threads"


class SavedRuns:
    """Finished runs by key; `put` saves (on the writing rank), `get` restores."""

    def __init__(self, path: Path | None, fingerprint: dict, *, resume: bool, write: bool,
                 n_puzzles: int | None = None):
        self.path, self.fingerprint, self.write = path, fingerprint, write
        self.n_puzzles = n_puzzles  # kept beside the fingerprint (whose digest has no count)
        self.runs: dict[str, dict] = {}
        if path is None or not resume or not path.exists():
            return
        try:
            saved = json.loads(path.read_text())
            assert saved["format"] == FORMAT
        except (OSError, ValueError, KeyError, TypeError, AssertionError):
            raise PtrmError(f"{path}: not the partial results of a `ptrm eval`",
                            hint="delete it, or run without --resume to start over") from None
        different = differences(saved, fingerprint, n_puzzles)
        if different:
            hint = "use another --out, or run without --resume to start over"
            if saved["fingerprint"].get("exact") is None and fingerprint.get("exact"):
                hint = ("its runs summed RMSNorm by a reduction (saved before the fixed order "
                        "became the default on 2026-11-28, or with --no-exact): add "
                        f"--no-exact to resume them; or {hint}")
            elif len(different) == 1 and _differs(THREADS, saved["fingerprint"].get(THREADS),
                                                  fingerprint.get(THREADS)):
                hint = f"--threads {saved['fingerprint'][THREADS]} resumes them; or {hint}"
            raise PtrmError(f"{path} holds runs of another evaluation (different "
                            f"{'; '.join(different)})", hint=hint)
        self.runs = saved["runs"]

    @classmethod
    def disabled(cls) -> "SavedRuns":
        return cls(None, {}, resume=False, write=False)

    def get(self, key: str) -> dict | None:
        return self.runs.get(key)

    def put(self, key: str, value: dict) -> None:
        self.runs[key] = value
        if self.write and self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            write_text(self.path, json.dumps({"format": FORMAT, "fingerprint": self.fingerprint,
                                              "n_puzzles": self.n_puzzles,
                                              "runs": self.runs}) + "\n")

    def finish(self) -> None:
        """The report is written: the partial results are no longer needed."""
        if self.write and self.path is not None:
            self.path.unlink(missing_ok=True)


def differences(saved: dict, fingerprint: dict, n_puzzles: int | None,
                where: str = "the saved runs") -> list[str]:
    """What differs between saved partial results (or a report: `where` says which) and the
    evaluation `fingerprint` names, one entry a setting ("K: 6 in the saved runs, 2 now")."""
    return [_puzzles_difference(saved.get("n_puzzles"), n_puzzles, where) if k == "puzzles"
            else _difference(k, saved["fingerprint"].get(k), fingerprint[k], where)
            for k in fingerprint if _differs(k, saved["fingerprint"].get(k), fingerprint[k])]


def _differs(key: str, saved, now) -> bool:
    """Whether one fingerprint entry differs. The thread count only where both sides ran on a
    CPU: a GPU's results do not depend on it, and files from before it was kept have none."""
    if key == THREADS and (saved is None or now is None):
        return False
    return saved != now


def other_runs(path: Path, fingerprint: dict, n_puzzles: int | None) -> tuple[int, list[str]]:
    """(how many runs, what differs) of partial results at `path` that belong to another
    evaluation than `fingerprint`'s; (0, []) when there are none or the file is unreadable."""
    try:
        saved = json.loads(path.read_text())
        fp = json.loads(json.dumps(fingerprint))  # as stored
        return len(saved["runs"]), differences(saved, fp, n_puzzles)
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return 0, []


def finished_runs(path: Path, fingerprint: dict) -> int:
    """How many finished runs the partial results at `path` hold, if they are of the
    evaluation `fingerprint` names (0 otherwise, or when the file is unreadable). Compared as
    --resume compares them (`differences`): a key the file lacks (written before --halt or
    --exact existed) is unset, not another evaluation whose runs may be replaced."""
    try:
        saved = json.loads(path.read_text())
        same = not differences(saved, json.loads(json.dumps(fingerprint)), None)  # as stored
        return len(saved["runs"]) if same else 0
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return 0


def refuse_unfinished(partial: Path, then: str) -> None:
    """The runs an interrupted evaluation saved (its partial.json) are no report: `--merge`
    and `--sigma-from` given its folder said only that report.json was missing, not that the
    evaluation is finished with --resume. `then`: what to do with the report afterwards."""
    if partial.is_file():
        raise PtrmError(f"{partial.parent}: an interrupted evaluation (its finished runs in "
                        f"{partial.name}), not a report",
                        hint="finish it first: the same `ptrm eval` command with --resume "
                             f"and -o {partial.parent}; then {then} its report.json")


def setting_text(value) -> str:
    """A setting in an error message (also `--merge`'s): None (--halt not given, say) reads as
    "not set"."""
    return "not set" if value is None else str(value)


def _difference(key: str, saved, now, where: str = "the saved runs") -> str:
    """One differing fingerprint entry, for the error: settings with their two values."""
    if key in ("weights", "model", "puzzles"):  # digests and configs: the name says enough
        return key
    return f"{key}: {setting_text(saved)} in {where}, {setting_text(now)} now"


def _puzzles_difference(saved: int | None, now: int | None,
                        where: str = "the saved runs") -> str:
    """The puzzles differ (their digest does): say how many each side has, where known."""
    if saved is None or now is None:  # a file from before the count was kept
        return "puzzles"
    if saved == now:
        return f"puzzles: {now} in both, not the same ones"
    return f"puzzles: {saved} in {where}, {now} now"


def fingerprint(checkpoint: str, model_config: dict, keys: list, K: int, D: int,
                perturb: str, draws: int, halt: float | None = None,
                exact: bool = False, threads: int | None = None) -> dict:
    """What every saved run of one evaluation shares. `threads`: torch's CPU threads of a CPU
    evaluation (None on a GPU), whose sums, and so results, change with the count."""
    # the weights' content, not the path: `ptrm train` replaces `last` and `best` in place, and
    # a moving `checkpoints/best` link points at new weights under the same name
    return _fingerprint(weights_sha256(checkpoint), model_config, keys, K, D, perturb, draws,
                        halt, exact, threads)


def report_fingerprint(report: dict) -> dict:
    """The fingerprint of the evaluation a finished report.json holds (raises KeyError or
    TypeError for a report without what it needs: an ARC one, or one from an older version)."""
    s = report["settings"]
    on_cpu = report["device"] == "cpu"  # evaluate.provenance: a GPU is named "cuda:N (...)"
    return _fingerprint(report["model"]["weights_sha256"], report["model"]["config"],
                        report["split"]["keys"], s["K"], s["D"], s["perturb"], s["width_draws"],
                        s.get("halt"), bool(s.get("exact")),
                        report["cpu_threads"] if on_cpu else None)


def _fingerprint(weights: str, model_config: dict, keys: list, K: int, D: int, perturb: str,
                 draws: int, halt: float | None, exact: bool, threads: int | None) -> dict:
    digest = hashlib.sha256(json.dumps(keys).encode()).hexdigest()
    return {"weights": weights, "model": model_config, "puzzles": digest,
            "K": K, "D": D, "perturb": perturb, "width_draws": draws,
            "halt": halt,  # None matches a file written before --halt existed
            "exact": exact or None,  # and before --exact
            THREADS: threads}  # compared only where both are set (`_differs`)


def weights_sha256(checkpoint: str | Path) -> str:
    """sha256 of a checkpoint's weights: the model.safetensors of our checkpoint folder, or the
    file given (that safetensors file, an official step_N file). The config is compared
    separately (a report's `model.config`)."""
    from .engine.checkpoint import WEIGHTS

    path = Path(checkpoint).resolve()
    file = path / WEIGHTS if path.is_dir() else path
    st = file.stat()
    return _file_sha256(file, (st.st_ino, st.st_size, st.st_mtime_ns))


@functools.lru_cache(maxsize=8)
def _file_sha256(file: Path, stat: tuple) -> str:
    """Hashed once per command (the resume fingerprint and the report both ask); the file's
    inode, size and mtime are in the key so a file replaced meanwhile is hashed again."""
    h = hashlib.sha256()
    with open(file, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()
