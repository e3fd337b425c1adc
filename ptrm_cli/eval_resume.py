"""Nothing lost when `ptrm eval` is interrupted: every finished run is saved at once.

An evaluation is a list of runs (a deterministic baseline per depth, then PTRM per sigma and
seed), each minutes to hours on a large split. After each one, `run_eval` records it here in
`OUT/partial.json` (atomically); `ptrm eval --resume` with the same `--out` reads them back and
runs only the missing ones. A run is identified by its own parameters (depth, or sigma and
seed) under a fingerprint of what every run shares (checkpoint, model, puzzles, K, D,
perturbation), so a resumed command may also ask for more seeds or sigmas than the first.
The file goes away once the report is written.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from .atomic import write_text
from .errors import PtrmError

FORMAT = "ptrm-eval-partial/1"
NAME = "partial.json"


class SavedRuns:
    """Finished runs by key; `put` saves (on the writing rank), `get` restores."""

    def __init__(self, path: Path | None, fingerprint: dict, *, resume: bool, write: bool):
        self.path, self.fingerprint, self.write = path, fingerprint, write
        self.runs: dict[str, dict] = {}
        if path is None or not resume or not path.exists():
            return
        try:
            saved = json.loads(path.read_text())
            assert saved["format"] == FORMAT
        except (OSError, ValueError, KeyError, TypeError, AssertionError):
            raise PtrmError(f"{path}: not the partial results of a `ptrm eval`",
                            hint="delete it, or run without --resume to start over") from None
        different = [k for k in fingerprint if saved["fingerprint"].get(k) != fingerprint[k]]
        if different:
            raise PtrmError(f"{path} holds runs of another evaluation (different "
                            f"{', '.join(different)})",
                            hint="use another --out, or run without --resume to start over")
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
                                              "runs": self.runs}) + "\n")

    def finish(self) -> None:
        """The report is written: the partial results are no longer needed."""
        if self.write and self.path is not None:
            self.path.unlink(missing_ok=True)


def fingerprint(checkpoint: str, model_config: dict, keys: list, K: int, D: int,
                perturb: str, draws: int) -> dict:
    """What every saved run of one evaluation shares."""
    digest = hashlib.sha256(json.dumps(keys).encode()).hexdigest()
    # resolved: `-c ./ckpt` is `-c ckpt`, and a moving `checkpoints/best` link is its step_N
    return {"checkpoint": str(Path(checkpoint).resolve()), "model": model_config,
            "puzzles": digest,
            "K": K, "D": D, "perturb": perturb, "width_draws": draws}
