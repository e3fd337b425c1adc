"""A training run's checkpoints: writing them with the state a resume needs, the `last` / `best`
links, pruning, and reading them back.

    RUN_DIR/checkpoints/step_<N>/   model.safetensors + config.json (EMA weights; `ptrm solve`
                                    reads it, checkpoint.py writes it), plus the resume state:
                                      train_state.json           step, data position, RNG, best
                                      train_state.safetensors    raw (non-EMA) fp32 parameters
                                      optimizer.safetensors      AdamATan2 moments (exact resume)
                                      carry.safetensors          the batch slots' carry (exact)
    RUN_DIR/checkpoints/last, best  symlinks to the newest and the best-on-validation step_<N>

`--resume` continues exactly (same step, optimizer, carry, data position; bitwise on CPU).
A warm start (`resume.weights_only`, `--init-from DIR`) takes only the weights, the EMA and
the step counter, and starts AdamATan2's moments from zero: the files worth carrying between
machines are model.safetensors + train_state.* (see docs/TRAINING.md).
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import json
import os
import re
import shlex
import shutil
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import torch
import torch.distributed as dist
from torch import Tensor

from ..errors import PtrmError
from .checkpoint import CONFIG as CKPT_CONFIG, WEIGHTS as CKPT_WEIGHTS, CheckpointError, \
    checkpoint_inside, merge_trained_on, read_config, read_weights, save_checkpoint, \
    write_failures
from .data import Dataset
from .model import TRMConfig
from .train_dist import check_replicas, gather_to_main

if TYPE_CHECKING:
    from .train_loop import Trainer

STATE_FORMAT = "ptrm-train-state/1"


# -- writing -------------------------------------------------------------------------------------

def step_dir(ckpt_dir: Path, step: int) -> Path:
    return ckpt_dir / f"step_{step}"


def save(tr: Trainer, reason: str = "") -> Path:
    """Write checkpoints/step_<N> (all ranks call this; rank 0 writes). The folder appears
    whole or not at all (save_checkpoint writes a temporary folder and renames it), and
    `last` moves only after it exists, so an interrupted write leaves the previous
    checkpoint as the latest."""
    carry = gather_to_main(tr.local_slots(), tr.dist) if tr.cfg.checkpoint.carry else None
    window = tr.metric_window()
    check_replicas(tr.model, tr.dist, tr.step)
    path = step_dir(tr.ckpt_dir, tr.step)
    if tr.dist.main:
        model = tr.ema.model if tr.ema else tr.model
        meta = {"steps": tr.step, "seed": tr.cfg.seed, "ema": tr.ema is not None,
                "dataset": str(tr.dataset.path), "dataset_fingerprint": tr.fingerprint,
                "run_dir": str(tr.run_dir), "reason": reason, "val": tr.last_eval}
        seen = merge_trained_on(tr.inherited_trained_on,
                                tr.dataset.trained_on(tr.cfg.data.train_split))
        if seen is not None:
            meta["trained_on"] = seen
        # ARC datasets name their puzzle-embedding rows: the checkpoint keeps the names, so
        # `ptrm solve --task` finds a task's views without the dataset at hand
        try:
            save_checkpoint(path, model, tr.dataset.vocab, meta,
                            write_extra=lambda tmp: write_train_state(tr, tmp, carry, window),
                            identifiers=tr.dataset.meta.get("identifiers"))
        except CheckpointError as e:
            raise CheckpointError(str(e), hint=_after_failed_write(tr.ckpt_dir)) from None
        _point(tr.ckpt_dir / "last", path.name)
        if tr.best is not None and tr.best["step"] == tr.step:
            _point(tr.ckpt_dir / "best", path.name)
        _prune(tr.ckpt_dir, tr.cfg.checkpoint.keep)
    if tr.dist.on:
        dist.barrier()
    return path


def _after_failed_write(ckpt_dir: Path) -> str:
    """What a run stopped by a checkpoint it could not write can go on from: the checkpoints
    before it are whole (each is written aside and renamed into place)."""
    found = checkpoints(ckpt_dir)
    since = (f"its newest checkpoint, {found[-1][1].name}, is whole" if found else
             "it has no checkpoint yet")
    return (f"the run stopped; {since}: free some space (or set checkpoint.keep lower), then "
            + ("run the same command with --resume" if found else "run the same command again"))


def write_train_state(tr: Trainer, folder: Path, slots: dict | None,
                      window: dict | None = None) -> None:
    """Called inside save_checkpoint's temporary folder: everything beyond the EMA weights
    (`window`: the train metrics since the last log line, Trainer.metric_window)."""
    limit = int(tr.cfg.checkpoint.max_file_mb * 2**20)
    files = {}
    if tr.ema is not None:  # without EMA, model.safetensors already holds the raw weights
        files["train_state"] = _save_tensors(
            {n: p.detach() for n, p in tr.model.named_parameters()}, folder, "train_state", limit)
    moments, t = tr.opt.moments(tr.param_names)
    if tr.cfg.checkpoint.optimizer:
        files["optimizer"] = _save_tensors(moments, folder, "optimizer", limit)
    if slots is not None:
        files["carry"] = _save_tensors(slots, folder, "carry", limit)
    state = {
        "format": STATE_FORMAT, "step": tr.step, "total_steps": tr.total_steps,
        "stream": tr.stream.state(),
        "data": {"fingerprint": tr.fingerprint, "train_split": tr.cfg.data.train_split,
                 "rows": rows_digest(tr.train_split), "seed": tr.cfg.seed,
                 "global_batch_size": tr.G, "sampling": tr.cfg.data.sampling,
                 "path": str(tr.dataset.path)},
        "optimizer": {"step": t, "lr_scale": tr.lr_scale(max(tr.step, 1))},
        "best": tr.best, "last_eval": tr.last_eval, "rewarm_from": tr.rewarm_from,
        "world_size": tr.dist.world, "rng": _get_rng(), "files": files,
        "train_window": window,
        "config": tr.resolved_dict(),
    }
    (folder / "train_state.json").write_text(json.dumps(state, indent=1) + "\n")


def _save_tensors(tensors: dict[str, Tensor], folder: Path, stem: str, limit: int) -> list[str]:
    """stem.safetensors, or stem-00001-of-0000K.safetensors shards each under `limit` bytes
    (a single tensor larger than the limit gets a file of its own)."""
    from safetensors.torch import save_file

    shards, cur, size = [], {}, 0
    for k, v in tensors.items():
        nb = v.numel() * v.element_size()
        if cur and size + nb > limit:
            shards.append(cur)
            cur, size = {}, 0
        cur[k] = v.detach().to("cpu").contiguous()
        size += nb
    shards.append(cur)
    names = ([f"{stem}.safetensors"] if len(shards) == 1 else
             [f"{stem}-{i + 1:05d}-of-{len(shards):05d}.safetensors" for i in range(len(shards))])
    for name, shard in zip(names, shards):
        save_file(shard, str(folder / name), metadata={"format": STATE_FORMAT})
    return names


def _point(link: Path, target: str) -> None:
    """Move a relative symlink atomically (no moment without one). Skipped where the file
    system has no symlinks; resume then finds the newest step_<N> by name."""
    tmp = link.with_name(f".{link.name}.tmp")
    try:
        tmp.unlink(missing_ok=True)
        os.symlink(target, tmp)
        os.replace(tmp, link)
    except OSError:
        pass


def _prune(ckpt_dir: Path, keep_last: int) -> None:
    """Keep the newest `keep_last` checkpoints and whatever `best` and `last` point to. A
    step folder that lost files goes too once it is older than every checkpoint kept, as it
    would have gone whole (resume skips it; newer ones are refused, not removed)."""
    newest = checkpoints(ckpt_dir)[-keep_last:]
    keep = {d.resolve() for _, d in newest}
    for link in ("best", "last"):
        p = ckpt_dir / link
        if p.is_symlink():
            keep.add(p.resolve())
    oldest_kept = newest[0][0] if newest else -1
    for n, d in step_folders(ckpt_dir):
        if d.resolve() not in keep and (n < oldest_kept or _complete(d)):
            shutil.rmtree(d, ignore_errors=True)


def clean_stale_tmp(ckpt_dir: Path) -> None:
    """Temporary folders of writes that were killed half way."""
    if ckpt_dir.is_dir():
        for d in ckpt_dir.glob(".step_*.tmp"):
            shutil.rmtree(d, ignore_errors=True)


# -- finding -------------------------------------------------------------------------------------

def checkpoints(ckpt_dir: Path) -> list[tuple[int, Path]]:
    """Complete checkpoints of this run, oldest first."""
    return [(n, d) for n, d in step_folders(ckpt_dir) if _complete(d)]


def latest_checkpoint(ckpt_dir: Path) -> Path:
    found = checkpoints(ckpt_dir)
    _refuse_incomplete_newest(ckpt_dir, found)
    last = ckpt_dir / "last"
    if last.is_symlink() and last.resolve().is_dir() and _complete(last.resolve()):
        return last.resolve()
    if not found:                   # `last` lost (copied without links) or never written
        raise PtrmError(f"nothing to resume: {ckpt_dir} has no complete checkpoint",
                        hint="start without --resume")
    return found[-1][1]


def restore_latest(tr: Trainer, *, exact: bool) -> None:
    """`--resume`: restore the run's newest checkpoint. One whose files do not read (cut
    short or damaged on the way between machines) stops the run; the hint names the newest
    older one that reads and how to go on from it (--resume always takes the newest)."""
    path = latest_checkpoint(tr.ckpt_dir)
    try:
        restore(tr, path, exact=exact)
    except CheckpointError as e:
        raise CheckpointError(str(e), hint=e.hint or _after_unreadable(tr.ckpt_dir, path)) \
            from None


def _after_unreadable(ckpt_dir: Path, bad: Path) -> str:
    """Where a run whose newest checkpoint `bad` does not read can go on from: the newest
    older checkpoint that reads, once every step folder after it is out of the way (a resume
    from it would otherwise reach their steps and refuse to replace them)."""
    m = re.fullmatch(r"step_(\d+)", bad.name)  # (`last` moved by hand: any other is older)
    newest = int(m.group(1)) if m else float("inf")
    good = next(((n, d) for n, d in reversed(checkpoints(ckpt_dir))
                 if n < newest and d.resolve() != bad.resolve() and _reads(d)), None)
    if good is None:
        return ("no older checkpoint of this run reads either: copy the checkpoint again if it "
                "came from another machine, or start again without --resume in another run_dir")
    after = [d for n, d in step_folders(ckpt_dir) if n > good[0]]
    aside = ckpt_dir.parent / "damaged_checkpoints"
    move = shlex.join(["mv", *map(str, after), f"{aside}/"])
    return (f"{good[1].name} is the newest checkpoint that reads: move "
            f"{' and '.join(d.name for d in after)} out of {ckpt_dir} (mkdir -p "
            f"{shlex.quote(str(aside))} && {move}), then run the same command with --resume to "
            f"continue from {good[1].name}")


def _reads(d: Path) -> bool:
    """Whether a checkpoint folder's files open: its JSON parses and each safetensors file is
    as long as its header says (a cut one is not). Reads headers only, not the tensors."""
    from safetensors import SafetensorError, safe_open

    try:
        read_config(d)
        _read_json(d / "train_state.json")
        for f in d.glob("*.safetensors"):
            with safe_open(str(f), "pt"):
                pass
    except (PtrmError, SafetensorError, OSError):
        return False
    return True


def _refuse_incomplete_newest(ckpt_dir: Path, found: list[tuple[int, Path]]) -> None:
    """A step_<N> folder newer than every complete checkpoint has lost files (ptrm writes
    them whole: a copy or a clean-up cut it short). Resuming from an older one would train
    up to step N and then fail, refusing to replace a folder that is not a checkpoint: say
    so before any work is done."""
    newest = found[-1][0] if found else -1
    cut = [(n, d) for n, d in step_folders(ckpt_dir) if n > newest]
    if not cut:
        return
    step, d = cut[-1]
    why = f"{d} has no {', '.join(_missing(d))}"
    if not found:
        raise PtrmError(f"nothing to resume: {ckpt_dir} has no complete checkpoint ({why})",
                        hint="start without --resume in another run_dir")
    raise PtrmError(f"{why}: an incomplete checkpoint, newer than the last complete one "
                    f"({found[-1][1].name}); a resume would reach step {step} and fail to "
                    f"replace it",
                    hint=f"remove {' and '.join(str(p) for _, p in cut)} to continue from "
                         f"{found[-1][1].name}")


def step_folders(ckpt_dir: Path) -> list[tuple[int, Path]]:
    """Every step_<N> folder, complete or not, oldest first: a run writes each N once."""
    found = []
    if ckpt_dir.is_dir():
        for d in ckpt_dir.iterdir():
            m = re.fullmatch(r"step_(\d+)", d.name)
            if m and d.is_dir() and not d.is_symlink():
                found.append((int(m.group(1)), d))
    return sorted(found)


_NEEDED = (CKPT_CONFIG, CKPT_WEIGHTS, "train_state.json")


def _missing(d: Path) -> list[str]:
    return [f for f in _NEEDED if not (d / f).exists()]


def _complete(d: Path) -> bool:
    return not _missing(d)


# -- reading -------------------------------------------------------------------------------------

def _differences(ckpt: TRMConfig, mine: TRMConfig, *, warm: bool) -> dict:
    """{setting: (checkpoint's, config's)} where the two models differ. A warm start only
    needs the same weights: it ignores what no weight depends on (the compute dtype; heads of
    a TRM-MLP, which has no attention; the sequence length of a RoPE model) and an expansion
    that gives the same SwiGLU widths."""
    diff = {k: (v, getattr(mine, k)) for k, v in ckpt.to_dict().items()
            if getattr(mine, k) != v}
    if warm:
        diff.pop("forward_dtype", None)
        if ckpt.mlp_t and mine.mlp_t:
            diff.pop("num_heads", None)
        if not (ckpt.mlp_t or mine.mlp_t) and "learned" not in (ckpt.pos_encodings,
                                                                 mine.pos_encodings):
            diff.pop("seq_len", None)  # no weight depends on it: RoPE's tables are computed
        same = dataclasses.replace(mine, expansion=ckpt.expansion)
        if "expansion" in diff and (same.inter_size, same.mlp_t and same.inter_size_t) == (
                mine.inter_size, mine.mlp_t and mine.inter_size_t):
            diff.pop("expansion")
    return diff


def _yaml_value(v) -> str:
    """A value as `--set` reads it back (YAML): 1e-06 alone is a string there, 1.0e-06 a float."""
    text = repr(v)
    if isinstance(v, float) and "e" in text and "." not in text:
        text = text.replace("e", ".0e")
    return text


def _row_names(path: Path, dataset_names, rows: int) -> tuple[list[str], list[str]] | None:
    """(the checkpoint's row names, the dataset's) when both name their puzzle-embedding rows
    (ARC's identifiers) and the names differ; None otherwise. A warm start once copied rows
    by position, so an ARC task trained on another task's row without a word."""
    from .checkpoint import IDENTIFIERS

    if not isinstance(dataset_names, list) or not (path / IDENTIFIERS).is_file():
        return None
    try:
        mine = json.loads((path / IDENTIFIERS).read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise PtrmError(f"{path / IDENTIFIERS}: unreadable ({e})") from None
    if not isinstance(mine, list) or mine == dataset_names:
        return None
    if len(mine) != rows:  # edited by hand, or another run's: rows by name would be wrong
        raise PtrmError(f"{path / IDENTIFIERS} names {len(mine):,} rows, but the checkpoint's "
                        f"puzzle-embedding table has {rows:,}",
                        hint="the file does not belong to this checkpoint: restore its own")
    return [str(n) for n in mine], [str(n) for n in dataset_names]


def _rows_by_name(w: Tensor, old: list[str], new: list[str]) -> tuple[Tensor, int]:
    """The table for the `new` row names from `w`, whose rows are named `old`: a name in both
    keeps its row, any other gets the mean row (the reference's rule for a new puzzle).
    Returns the table and how many rows were kept."""
    index = {n: i for i, n in enumerate(old)}
    at = torch.tensor([index.get(n, -1) for n in new], dtype=torch.long)
    out = w[at.clamp(min=0)].clone()
    out[at < 0] = w.mean(0)
    return out, int((at >= 0).sum())


def _same_vocab(vocab, tr: Trainer, path: Path, *, exact: bool) -> None:
    """The checkpoint's token table must be the dataset's: a model reads one vocabulary."""
    from ..errors import VocabError

    try:
        vocab.check_same(tr.dataset.vocab, what=f"checkpoint {path}", other_what="the dataset")
    except VocabError as e:
        hint = (f"{'--resume' if exact else '--init-from'} needs a dataset of the checkpoint's "
                f"tokens ({vocab.family!r}): --set data.path=DIR for one built for it (`ptrm "
                f"build-data --family {vocab.family}`)"
                + ("" if exact else ", or train from scratch without --init-from"))
        raise VocabError(str(e), hint=e.hint or hint) from None


def restore(tr: Trainer, path: Path, *, exact: bool) -> None:
    """Load a checkpoint folder into the trainer: exactly (every piece of state) or as a warm
    start (weights, EMA, step; fresh optimizer moments and carry). A warm start also takes an
    official TRM step_N file (settings from the all_config.yaml beside it)."""
    from . import checkpoint as ck

    if path.name == CKPT_WEIGHTS and path.is_file() and (path.parent / CKPT_CONFIG).is_file():
        # the weights file of a checkpoint folder, as solve and eval take it: its folder (it
        # was "no config.json", with the config right beside it)
        path = path.parent
    official = path.is_file() and ck.is_official_checkpoint(path)
    if official and not exact:  # its own table is a placeholder: it takes the dataset's, and
        # the dataset's length where neither the weights (TRM-Att's) nor the yaml say it
        data = tr.dataset
        model, _, _ = ck.import_official(
            path, vocab=data.vocab, layout=lambda V: (data.seq_len, f"the training data "
                                                      f"{tr.cfg.data.path}")
            if V == len(data.vocab) else None)
        ckpt_cfg, weights = model.config, model.state_dict()
    elif not (path / CKPT_CONFIG).exists():
        run = path / "checkpoints"   # a run folder given for one of its checkpoints
        if not path.exists():
            raise ck.not_there(path)
        raise PtrmError(f"{path} is not a ptrm checkpoint folder (no {CKPT_CONFIG})",
                        hint=f"{path} is a run folder: --init-from {run / 'best'} (or "
                             f"{run / 'last'})" if run.is_dir() else _what_to_init_from(path))
    else:
        doc, ckpt_cfg, vocab = ck.read_config(path)
        tr.inherited_trained_on = (doc.get("meta") or {}).get("trained_on")
        if exact or vocab != ck.placeholder_vocab(len(tr.dataset.vocab)):
            # an official import kept its placeholder table: it takes the dataset's, as a
            # step file does; any other table must be the dataset's
            _same_vocab(vocab, tr, path, exact=exact)
        weights = None
    mine = dataclasses.replace(tr.model_cfg,
                               halt_exploration_prob=ckpt_cfg.halt_exploration_prob)
    table_rows = None
    names = None if exact else _row_names(path, tr.dataset.meta.get("identifiers"),
                                          ckpt_cfg.num_puzzle_identifiers)
    if (ckpt_cfg.num_puzzle_identifiers != mine.num_puzzle_identifiers or names) and not exact:
        table_rows = ckpt_cfg.num_puzzle_identifiers
        ckpt_cfg = dataclasses.replace(ckpt_cfg,
                                       num_puzzle_identifiers=mine.num_puzzle_identifiers)
    diff = _differences(ckpt_cfg, mine, warm=not exact)
    if diff:
        from .train_config import FROM_DATASET

        settable = [f"--set model.{k}={_yaml_value(a)}" for k, (a, _) in diff.items()
                    if k not in FROM_DATASET]
        raise PtrmError(f"{path}: the checkpoint's model differs from the config's: "
                        + ", ".join(f"{k} {a!r} in the checkpoint, {b!r} in the config"
                                    for k, (a, b) in diff.items()),
                        hint=("take the checkpoint's: " + " ".join(settable)
                              + (" (and a dataset of its vocabulary and length)"
                                 if len(settable) < len(diff) else ""))
                        if settable else "a dataset of the checkpoint's vocabulary and length")
    state_file = path / "train_state.json"
    state = _read_json(state_file) if not official and state_file.exists() else None
    if weights is None:
        weights = read_weights(path / CKPT_WEIGHTS)  # EMA params (if EMA) + raw buffers
    raw = {} if official else _load_tensors(path, "train_state") or {}
    if table_rows is not None and "puzzle_emb.weights" in weights:
        w = weights["puzzle_emb.weights"]
        if names is not None:  # both tables are named: a puzzle keeps its row, wherever it is
            weights["puzzle_emb.weights"], kept = _rows_by_name(w, *names)
            if tr.dist.main:
                print(f"puzzle embeddings: {kept:,} of {len(names[1]):,} rows taken by name "
                      f"from {path}'s table, the rest its mean row", file=sys.stderr)
        else:  # the reference's rule for a different puzzle set: every row = the mean row
            weights["puzzle_emb.weights"] = w.mean(0, keepdim=True).expand(
                mine.num_puzzle_identifiers, -1).contiguous()
    params = dict(tr.model.named_parameters())
    with torch.no_grad():
        for name, buf in tr.model.named_buffers():
            if name in weights:
                buf.copy_(weights[name])
        for name, p in params.items():
            p.copy_(raw.get(name, weights[name]))      # no train_state: EMA == raw
        if tr.ema is not None:
            for name, p in tr.ema.model.named_parameters():
                p.copy_(weights[name])
    tr.resumed_from = str(path)
    if state is None:                                   # e.g. an imported official model
        return
    if state.get("format") != STATE_FORMAT:
        raise PtrmError(f"{path}/train_state.json: format {state.get('format')!r} is not "
                        f"{STATE_FORMAT!r}")
    tr.step = int(state["step"])
    was, now = state["data"], {"fingerprint": tr.fingerprint,
                               "train_split": tr.cfg.data.train_split,
                               "rows": rows_digest(tr.train_split), "seed": tr.cfg.seed,
                               "global_batch_size": tr.G, "sampling": tr.cfg.data.sampling}
    # (checkpoints written before train_split and rows were recorded have neither)
    changed = [k for k in now if was.get(k, now[k]) != now[k]]
    if "fingerprint" in changed and "rows" in changed:  # one difference, said once
        changed.remove("rows")
    # the best so far holds only where it was measured: on this dataset's validation split
    same_data = "fingerprint" not in changed
    tr.best = state.get("best") if exact or (tr.cfg.resume.weights_only and same_data) \
        else None
    if exact:
        if changed:
            said = {"fingerprint": "the dataset differs (its contents, fingerprint)",
                    "rows": "the training split's rows differ (same meta.json)"}
            what = "; ".join(said.get(k) or f"{k} was {was[k]}, now {now[k]}"
                             for k in changed)
            raise PtrmError(f"{path}: exact resume needs the same dataset, training split, "
                            f"seed, global batch size and sampling as the run that wrote it: "
                            f"{what}",
                            hint="resume with --set resume.weights_only=true to keep only "
                                 "the weights")
        moments = _load_tensors(path, "optimizer")
        slots = _load_tensors(path, "carry")
        if moments is None or slots is None:
            raise PtrmError(f"{path} has no {'optimizer' if moments is None else 'carry'} "
                            "state, so it cannot be resumed exactly",
                            hint="resume with --set resume.weights_only=true (a warm "
                                 "start: fresh optimizer moments)")
        if tr.dist.main and (said := _settings_changed(state.get("config"),
                                                       tr.resolved_dict())):
            print(f"note: resuming with settings changed since {path.name}: {said}",
                  file=sys.stderr)
        tr.opt.load_moments(moments, state["optimizer"]["step"], tr.param_names)
        tr.load_slots(slots)
        _set_rng(state.get("rng") or {})
        tr.rewarm_from = state.get("rewarm_from")
        if state.get("train_window"):  # checkpoints before it had none: the window restarts
            tr.load_metric_window(state["train_window"])
    else:
        tr.rewarm_from = tr.step                        # fresh moments: optional re-warm-up
    if not changed:
        tr.stream.load_state(state["stream"])


def _what_to_init_from(path: Path) -> str:
    """The hint for an --init-from that is no checkpoint: an official TRM run's folder names
    one of its step files (it said only what --init-from takes, leaving the user to look)."""
    inside = checkpoint_inside(path) if path.is_dir() else None
    return inside or ("--init-from takes a checkpoint folder (`ptrm train` writes them in "
                      "RUN_DIR/checkpoints) or an official TRM step_N file")


def _settings_changed(was: dict | None, now: dict) -> str:
    """"train.lr 0.003 -> 0.001, ..." for the config keys an exact resume lets change (the
    ones it may not are refused above): a resumed run says what it no longer does as the
    run it continues did, instead of changing the lr or the length silently."""
    def flat(d, prefix=""):
        return {k2: v2 for k, v in d.items()
                for k2, v2 in (flat(v, f"{prefix}{k}.").items() if isinstance(v, dict)
                               else [(prefix + k, v)])}

    if not isinstance(was, dict):
        return ""
    a, b = flat(was), flat(now)
    return ", ".join(f"{k} {a.get(k)!r} -> {b.get(k)!r}" for k in sorted(a.keys() | b.keys())
                     if a.get(k) != b.get(k))


def write_lean(src: str | Path, dst: str | Path, dtype: torch.dtype = torch.bfloat16) -> Path:
    """What a warm start (`--init-from DST`) needs from checkpoint `src`, small enough to commit
    between machines: the EMA weights cast to `dtype` (half the size in bf16), config.json and
    train_state.json (step, data position, best so far; a `best` folder or a shipped model has
    none, and its lean copy is a model to evaluate). The forward pass already runs in bf16, so
    bf16 weights lose only the low bits of the fp32 master copy. Written whole or not at all."""
    from safetensors import safe_open
    from safetensors.torch import save_file

    from ..atomic import atomic_dir, ordinary_modes

    src, dst = Path(src), Path(dst)
    with safe_open(str(src / CKPT_WEIGHTS), "pt") as f:
        meta = f.metadata()
        weights = {k: f.get_tensor(k) for k in f.keys()}
    weights = {k: w.to(dtype) if w.is_floating_point() else w for k, w in weights.items()}
    with write_failures(dst), atomic_dir(dst) as tmp:
        save_file(weights, str(tmp / CKPT_WEIGHTS), metadata=meta)
        for name in (CKPT_CONFIG, "train_state.json"):
            if name == CKPT_CONFIG or (src / name).exists():
                shutil.copyfile(src / name, tmp / name)
        ordinary_modes(tmp)
    return dst


def _load_tensors(folder: Path, stem: str) -> dict[str, Tensor] | None:
    single = folder / f"{stem}.safetensors"
    files = [single] if single.exists() else sorted(folder.glob(f"{stem}-*-of-*.safetensors"))
    if not files:
        return None
    expected = re.fullmatch(rf"{re.escape(stem)}-\d+-of-(\d+)\.safetensors", files[0].name)
    if expected and int(expected.group(1)) != len(files):
        raise CheckpointError(f"{folder}: {stem} has {len(files)} of {expected.group(1)} "
                              "shards")
    out = {}
    for f in files:
        out.update(read_weights(f))
    return out


def _read_json(path: Path) -> dict:
    try:
        doc = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise CheckpointError(f"{path}: unreadable ({e})") from None
    if not isinstance(doc, dict):
        raise CheckpointError(f"{path}: expected a JSON object, found {type(doc).__name__}")
    return doc


# -- what else a resume must match or restore ----------------------------------------------------

def _get_rng() -> dict:
    """Global generator states as base64 (no pickle). The recipe draws its own random numbers
    from generators seeded per step; these are kept so that code that uses the global
    generators (a user's hook, a future dropout) also resumes exactly."""
    enc = lambda t: base64.b64encode(t.cpu().numpy().tobytes()).decode()  # noqa: E731
    out = {"torch_cpu": enc(torch.get_rng_state())}
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        out["torch_cuda"] = enc(torch.cuda.get_rng_state())
    return out


def _set_rng(state: dict) -> None:
    def dec(s: str) -> Tensor:
        return torch.from_numpy(np.frombuffer(base64.b64decode(s), np.uint8).copy())

    if "torch_cpu" in state:
        torch.set_rng_state(dec(state["torch_cpu"]))
    if "torch_cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state(dec(state["torch_cuda"]))


def rows_digest(split) -> str:
    """A digest of a split's contents, from at most 4,096 evenly spaced rows (read through the
    memory map: hashing all of a big split would slow every start). The fingerprint is
    meta.json's, which a dataset written by hand (DATASET_FORMAT.md) keeps through a rebuild
    with other puzzles of the same counts."""
    n = len(split)
    rows = np.unique(np.linspace(0, n - 1, min(n, 4096)).astype(np.int64))
    h = hashlib.sha256(str(n).encode())
    for a in (split.inputs, split.labels, split.puzzle_id):
        h.update(np.ascontiguousarray(a[rows]).tobytes())
    return h.hexdigest()[:16]


def dataset_fingerprint(ds: Dataset) -> str:
    """Identifies the training data in the resume state: an exact resume refuses other data, a
    warm start keeps the data position only on the same data. (arc_ids.py recomputes it.)"""
    meta = Path(ds.path) / "meta.json"
    if meta.is_file():
        return hashlib.sha256(meta.read_bytes()).hexdigest()[:16]
    text = json.dumps(ds.meta, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]
