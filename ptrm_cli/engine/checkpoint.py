"""Checkpoints: our safetensors format, and import of official TRM `step_N` files.

Ours is a directory, written whole into a temporary folder and renamed into place:

    DIR/model.safetensors   every persistent tensor of `TRM.state_dict()` (EMA weights when
                            training used EMA; H_init/L_init and the puzzle table included),
                            under the reference's key names without its `_orig_mod.model.inner.`
    DIR/config.json         {"format": "ptrm-checkpoint/1", "model": TRMConfig, "vocab": Vocab,
                            "meta": {seed, git commit, torch version, dataset hash, steps, ...}}
    DIR/identifiers.json    optional: the names of the puzzle-embedding rows (TRM's ARC
                            identifiers.json, "<blank>" first; ptrm_cli/arc_ids.py reads it)

An official checkpoint is `torch.save(state_dict)` with no config inside (TRM_REFERENCE.md
§2.3). We read it with `weights_only=True`, which refuses anything but tensors and plain
containers, so neither format can run pickled code. What the tensors do not reveal comes from
the run's `all_config.yaml` or from explicit settings, and anything still unknown is an error
that names it: a silently wrong T, n or sequence length would give garbage, not a crash.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import hashlib
import json
import os
import re
import subprocess
from pathlib import Path
from typing import Callable

import torch

from .. import __version__
from ..atomic import atomic_dir, ordinary_modes, write_problem
from ..errors import PtrmError, VocabError
from ..vocab import PAD, Vocab
from .data import ANY_SIZE
from .model import FORWARD_DTYPES, TRM, TRMConfig, count_parameters, swiglu_inter

FORMAT = "ptrm-checkpoint/1"
WEIGHTS = "model.safetensors"
CONFIG = "config.json"
IDENTIFIERS = "identifiers.json"
OFFICIAL_CONFIG = "all_config.yaml"


class CheckpointError(PtrmError):
    """A checkpoint that cannot be read: missing, corrupt, of another kind, or underspecified."""


# -- what a model trained on (meta.trained_on) ----------------------------------------------------

#: meta.trained_on is {type: size} of the puzzles a model trained on; a size is "ROWSxCOLS" or
#: ANY_SIZE. `ptrm train` writes it (Dataset.trained_on), `ptrm solve` notes puzzles outside it.
_SIZE = re.compile(rf"\d+x\d+|{ANY_SIZE}", re.IGNORECASE)


def trained_on_problem(value) -> str | None:
    """What is wrong with a meta.trained_on value (a hand-edited config.json), or None."""
    if isinstance(value, dict) and all(isinstance(k, str) and isinstance(v, str)
                                       and _SIZE.fullmatch(v) for k, v in value.items()):
        return None
    return 'expected {type: "ROWSxCOLS" or "any"}, e.g. {"sudoku": "9x9"}'


def merge_trained_on(*records: dict | None) -> dict[str, str] | None:
    """What a model trained on across a warm start's runs or an average's checkpoints: every
    type any record names; a type seen at two sizes is ANY_SIZE. None records are skipped;
    None when none is left."""
    out: dict[str, str] = {}
    for r in records:
        if r is None:
            continue
        if (why := trained_on_problem(r)) is not None:
            raise PtrmError(f"meta.trained_on {r!r}: {why}")
        for t, size in r.items():
            size = size.lower()
            out[t] = size if out.get(t, size) == size else ANY_SIZE
    return out or None


# -- our format ----------------------------------------------------------------------------------

def refuse_to_replace(path: Path) -> None:
    """A checkpoint is written by replacing its folder whole: refuse any `path` but a new, an
    empty or a checkpoint folder."""
    if path.exists() and not (path.is_dir() and (not any(path.iterdir())
                                                 or (path / CONFIG).exists())):
        raise CheckpointError(f"{path} exists and is not a ptrm checkpoint; refusing to replace it",
                              hint="choose a new output directory")


def save_checkpoint(path, model: TRM, vocab: Vocab, meta: dict | None = None, *,
                    write_extra: Callable[[Path], None] | None = None,
                    identifiers: list[str] | None = None) -> Path:
    """Write `model` (pass the EMA copy when training used EMA) as a checkpoint directory.

    The directory is replaced whole and atomically. `write_extra(tmp_dir)` may add files (a
    trainer's resume state) to the same atomic write. `identifiers` names the puzzle-embedding
    rows (one name per row), written as identifiers.json. Returns the directory."""
    path = Path(path)
    model = getattr(model, "module", model)        # DistributedDataParallel
    model = getattr(model, "_orig_mod", model)     # torch.compile
    cfg = model.config
    if len(vocab) != cfg.vocab_size:
        raise VocabError(f"vocabulary {vocab.family!r} has {len(vocab)} tokens but the model's "
                         f"vocab_size is {cfg.vocab_size}")
    if identifiers is not None and len(identifiers) != cfg.num_puzzle_identifiers:
        raise CheckpointError(f"{len(identifiers):,} identifier names for a puzzle-embedding "
                              f"table of {cfg.num_puzzle_identifiers:,} rows")
    refuse_to_replace(path)
    from safetensors.torch import save_file

    tensors = {k: v.detach().to("cpu").contiguous() for k, v in model.state_dict().items()}
    # The caller's meta (seed, dataset hash, steps, ...) plus facts about this write.
    full_meta = {**(meta or {}),
                 "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                 "ptrm": __version__, "torch": torch.__version__,
                 "num_parameters": count_parameters(model)}
    full_meta.setdefault("git_commit", _git_commit())
    doc = {"format": FORMAT, "model": cfg.to_dict(), "vocab": vocab.to_json(), "meta": full_meta}
    with write_failures(path):
        with atomic_dir(path) as tmp:
            save_file(tensors, str(tmp / WEIGHTS), metadata={"format": FORMAT})
            (tmp / CONFIG).write_text(json.dumps(doc, indent=1, default=str) + "\n")
            if identifiers is not None:
                (tmp / IDENTIFIERS).write_text(json.dumps(list(identifiers)) + "\n")
            if write_extra is not None:
                write_extra(tmp)
            ordinary_modes(tmp)
    return path


@contextlib.contextmanager
def write_failures(path: Path):
    """A checkpoint write that the file system refuses (a full disk, no permission) as one
    CheckpointError naming the folder. safetensors reports a failed write as its own
    SafetensorError, not an OSError, so without this a full disk ends a training run in a
    traceback. atomic_dir has already removed its temporary folder by the time this runs."""
    from safetensors import SafetensorError

    try:
        yield
    except (OSError, SafetensorError) as e:
        why = write_problem(path, e) if isinstance(e, OSError) else str(e)
        raise CheckpointError(f"{path}: cannot write the checkpoint ({why})",
                              hint="nothing was written there; free some space or choose a "
                                   "folder you can write, then run again") from None


def load_checkpoint(path, device="cpu", *, vocab: Vocab | None = None, config_yaml=None,
                    layout=None, **overrides) -> tuple[TRM, Vocab, dict]:
    """Load a checkpoint: our directory (or the model.safetensors inside it), or an official
    TRM `step_N` file, recognised by its content (see `import_official` for its options).

    `vocab`, if given, is the table the caller expects: ours must match it exactly; an official
    checkpoint (which has none) takes it as its vocabulary. `overrides` replace config values
    (e.g. forward_dtype="float32"); the weights must still fit. Returns (model in eval mode,
    vocabulary, meta)."""
    path = Path(path)
    if not path.exists():
        raise not_there(path)
    if path.is_dir():
        if (path / CONFIG).exists():
            _no_yaml(config_yaml, path)
            return _load_ours(path, path / WEIGHTS, device, vocab, overrides)
        raise CheckpointError(f"{path} is not a ptrm checkpoint (no {CONFIG})",
                              hint=checkpoint_inside(path))
    if path.suffix == ".safetensors":
        if not (path.parent / CONFIG).exists():
            raise CheckpointError(f"{path} has no {CONFIG} next to it, so its model config and "
                                  "vocabulary are unknown", hint=_safetensors_hint(path))
        _no_yaml(config_yaml, path)
        return _load_ours(path.parent, path, device, vocab, overrides)
    if is_official_checkpoint(path):
        return import_official(path, config_yaml=config_yaml, vocab=vocab, device=device,
                               layout=layout, **overrides)
    raise CheckpointError(f"{path} is not a checkpoint",
                          hint=f"expected a ptrm checkpoint directory ({CONFIG} + {WEIGHTS}) or "
                               "an official TRM step_N file")


def not_there(path: Path) -> CheckpointError:
    """The error for a checkpoint path that does not exist. A run's `best` or `last` link
    whose folder was removed is named as such, with the checkpoints the run has left."""
    if not path.is_symlink():
        return CheckpointError(f"{path}: no such file or directory")
    if path.name not in ("best", "last"):  # a link of the user's own: no run to speak of
        return CheckpointError(f"{path} is a link to {os.readlink(path)}, which does not exist")
    left = sorted((p for p in path.parent.glob("step_*") if (p / CONFIG).exists()),
                  key=lambda p: int(p.name[5:]) if p.name[5:].isdigit() else -1)
    return CheckpointError(
        f"{path} is a link to {os.readlink(path)}, which no longer exists",
        hint=f"the checkpoints left in {path.parent}: {', '.join(p.name for p in left)}"
        if left else f"{path.parent} holds no checkpoint any more")


def checkpoint_inside(folder: Path) -> str | None:
    """The checkpoint a folder that is not one most likely stands for: a `ptrm train` run
    folder (or its checkpoints/) holds best/ and last/; an official TRM run, step_N files."""
    for run in (folder / "checkpoints", folder):
        if (run / "best" / CONFIG).exists():
            return f"a `ptrm train` run: pass {run / 'best'} (or {run / 'last'})"
        if (run / "last" / CONFIG).exists():  # no validation yet, or best's folder removed
            return f"a `ptrm train` run: pass {run / 'last'}"
    steps = sorted((p for p in folder.glob("step_*") if p.is_file()),
                   key=lambda p: p.stat().st_mtime)
    return f"for an official TRM run, pass one of its step files, e.g. {steps[-1]}" \
        if steps else None


def _no_yaml(config_yaml, path: Path) -> None:
    if config_yaml is not None:
        raise CheckpointError(f"{path} is a ptrm checkpoint with its own config; an official "
                              "all_config.yaml applies only to official step_N files")


def _load_ours(root: Path, weights: Path, device, vocab: Vocab | None, overrides: dict):
    doc, cfg, ckpt_vocab = read_config(root, overrides)
    if vocab is not None:
        vocab.check_same(ckpt_vocab, what="the expected vocabulary",
                         other_what=f"checkpoint {root}")
    state = read_weights(weights)
    _refuse_nonfinite(state, weights)
    model = _build(cfg, state, device, weights)
    meta = dict(doc.get("meta") or {})
    if overrides:
        meta["overrides"] = dict(overrides)
    return model, ckpt_vocab, meta


def _refuse_nonfinite(state: dict, where: Path) -> None:
    """Refuse weights that hold NaN or inf, naming the tensor. safetensors stores no checksum:
    a copy with bytes overwritten inside a tensor loaded, and NaN weights gave "confidence
    nan" and advice to try harder instead of an error (an official step_N of a diverged run
    was converted, and solved with, alike). The sum is checked first: a NaN or inf carries
    into it, at no copy of a 2 GB ARC table."""
    bad = next((k for k, t in state.items() if t.is_floating_point()
                and not bool(torch.isfinite(t.sum())) and not bool(torch.isfinite(t).all())),
               None)
    if bad is not None:
        raise CheckpointError(f"{where}: the tensor {bad} holds NaN or infinite values",
                              hint="a damaged copy (copy it again), or a run that diverged "
                                   "(take an earlier checkpoint of it)")


def read_config(root: Path, overrides: dict | None = None) -> tuple[dict, TRMConfig, Vocab]:
    """A checkpoint folder's config.json, checked: (the document, its model config with
    `overrides` applied, its vocabulary). A CheckpointError names the file otherwise."""
    try:
        doc = json.loads((root / CONFIG).read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise CheckpointError(f"{root / CONFIG} is not readable JSON: {e}") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        found = doc.get("format") if isinstance(doc, dict) else None
        raise CheckpointError(f"{root / CONFIG}: format {found!r} is not {FORMAT!r}")
    try:
        cfg = TRMConfig.from_dict(doc["model"])
        if overrides:
            cfg = dataclasses.replace(cfg, **_check_keys(overrides))
        ckpt_vocab = Vocab.from_json(doc["vocab"])
    except KeyError as e:
        raise CheckpointError(f"{root / CONFIG} has no {e} section") from None
    except TypeError as e:
        raise CheckpointError(f"{root / CONFIG}: malformed model config: {e}") from None
    except PtrmError as e:
        raise type(e)(f"{root / CONFIG}: {e}", hint=e.hint) from None
    if len(ckpt_vocab) != cfg.vocab_size:
        raise VocabError(f"{root}: vocabulary {ckpt_vocab.family!r} has {len(ckpt_vocab)} "
                         f"tokens but the model's vocab_size is {cfg.vocab_size}")
    return doc, cfg, ckpt_vocab


def read_weights(path: Path) -> dict:
    """The tensors of a .safetensors file; a missing, cut or foreign file is a CheckpointError
    naming it (a checkpoint carried between machines in parts can arrive incomplete)."""
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    if not path.exists():
        raise CheckpointError(f"{path.parent} has no {path.name}")
    try:
        return load_file(str(path))
    except (SafetensorError, OSError, ValueError) as e:
        raise CheckpointError(f"{path} is corrupt or not a safetensors file: {e}") from None


def _build(cfg: TRMConfig, state: dict, device, where) -> TRM:
    try:
        return TRM.from_state_dict(cfg, state, device=device).eval()
    except ValueError as e:
        raise CheckpointError(f"{where}: {e}") from None


def _git_commit() -> str | None:
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=Path(__file__).parent,
                             capture_output=True, text=True, timeout=5)
        return out.stdout.strip() or None if out.returncode == 0 else None
    except (OSError, subprocess.SubprocessError):
        return None


# -- official TRM checkpoints --------------------------------------------------------------------

# Attribute chain of the reference: torch.compile wrapper -> loss head -> ACT wrapper -> inner.
ANCHOR = "embed_tokens.embedding_weight"
NON_PERSISTENT = ("rotary_emb.cos_cached", "rotary_emb.sin_cached", "puzzle_emb.local_weights",
                  "puzzle_emb.local_ids")
# Settings the tensors cannot reveal, and where they usually come from (for the error's hint).
NOT_IN_WEIGHTS = {
    "H_cycles": "T, 3 in every published run",
    "L_cycles": "n, 6 for Sudoku, 4 for ARC and Maze",
    "halt_max_steps": "16 in every published run",
    "num_heads": "8 in every published run",
    "pos_encodings": "rope, or none for TRM-MLP Sudoku",
    "puzzle_emb_len": "16 in every published run",
    "seq_len": "81 Sudoku, 900 ARC and Maze",
}


def is_official_checkpoint(path) -> bool:
    """A file written by torch.save: a zip archive (torch >= 1.6) or a legacy pickle stream."""
    try:
        with open(path, "rb") as f:
            head = f.read(4)
    except OSError:
        return False
    return head == b"PK\x03\x04" or head[:2] == b"\x80\x02"


def placeholder_vocab(V: int) -> Vocab:
    """The table an official checkpoint gets when nobody says which it is: `trm-v{V}` (pad,
    tok1, ...), claimed by no codec until a family or dataset is adopted (solver.adopt_vocab)."""
    return Vocab(f"trm-v{V}", (PAD,) + tuple(f"tok{i}" for i in range(1, V)))


def import_official(path, *, config_yaml=None, vocab: Vocab | None = None, device="cpu",
                    layout: Callable[[int], tuple[int, str] | None] | None = None,
                    **overrides) -> tuple[TRM, Vocab, dict]:
    """Load an official TRM checkpoint (`step_N`, a torch.save'd state_dict).

    From the tensors: hidden_size, vocab_size, L_layers, mlp_t (key names), the SwiGLU width
    (checked against `expansion`), the puzzle table (presence, ndim, number of ids), learned
    positions, forward_dtype (dtype of H_init; may be overridden) and, for TRM-MLP or learned
    positions, S = seq_len + P. The rest comes from `overrides` (TRMConfig field names), else
    from the run's `all_config.yaml` (`config_yaml`; by default the one next to the file, if
    any), else num_heads=8 for D=512; anything still unknown raises CheckpointError naming it.
    `layout(vocab_size)` -> (seq_len, where from) or None, e.g. the codec family of that
    vocabulary size, gives the seq_len of last resort: taken only when neither the overrides,
    the yaml, its dataset nor the weights say it.
    The vocabulary is `vocab` if given, else a generic `trm-v{V}` table (pad, tok1, ...)."""
    path = Path(path)
    state, prefix = _read_official(path)
    _refuse_nonfinite(state, path)
    arch, yaml_path, ignored, data_seq_len, data_paths = _read_official_yaml(path, config_yaml)
    overrides = _check_keys(overrides)
    given = {**arch, **overrides}
    source = {k: "all_config.yaml" for k in arch} | {k: "override" for k in overrides}

    found, S = _infer_from_weights(state, path)
    for k, v in found.items():
        if k in given and given[k] != v and k != "forward_dtype":
            raise CheckpointError(f"{path}: {k}={given[k]!r} ({_origin(source[k], yaml_path)}) "
                                  f"contradicts the weights, which say {k}={v!r}")
    if given.get("pos_encodings") == "learned" and "pos_encodings" not in found:
        # the one setting whose weights are missing rather than different: the model would
        # fail to load with only "missing: embed_pos.embedding_weight" to go on
        raise CheckpointError(
            f"{path}: pos_encodings='learned' ({_origin(source['pos_encodings'], yaml_path)}) "
            "contradicts the weights, which have no learned position table "
            "(embed_pos.embedding_weight)",
            hint="TRM-Att (attention) uses rope, TRM-MLP none: `ptrm convert STEP --set "
                 "pos_encodings=rope` (in Python, import_official(..., pos_encodings='rope')), "
                 "or mend the yaml")
    cfg = {**found, **given}
    if "seq_len" not in cfg and data_seq_len:
        cfg["seq_len"], source["seq_len"] = data_seq_len, "dataset.json"
    cfg.setdefault("num_puzzle_identifiers", 1)
    if cfg["puzzle_emb_ndim"] == 0:
        cfg.setdefault("puzzle_emb_len", 0)       # no table: the reference must have had P = 0
    if "num_heads" not in cfg and cfg["hidden_size"] == 512:
        cfg["num_heads"], source["num_heads"] = 8, "default"
    elif "num_heads" not in cfg and cfg["mlp_t"]:
        cfg["num_heads"], source["num_heads"] = 1, "unused (mlp_t)"
    if cfg["mlp_t"] and "pos_encodings" not in cfg:
        cfg["pos_encodings"] = "none"             # TRM-MLP has no attention: rope would be unused
    if S is not None:
        _resolve_lengths(cfg, S, path, source)
    if "seq_len" not in cfg and layout is not None and \
            (given_layout := layout(cfg["vocab_size"])) is not None:
        cfg["seq_len"], source["seq_len"] = given_layout
        if S is not None:
            _resolve_lengths(cfg, S, path, source)
    if "expansion" not in cfg:
        source["expansion"] = "weights"
    _check_expansion(cfg, state, S, path)

    missing = [k for k in NOT_IN_WEIGHTS if k not in cfg]
    if missing == ["seq_len"] and layout is not None:
        raise _no_layout_for(path, cfg["vocab_size"], yaml_path)
    if missing:
        # the caller's data had no single family of this vocabulary size to take the length
        # from: often a model of another vocabulary (a maze model given a sudoku), so say so
        unsettled = (f"no single token family of the data has {cfg['vocab_size']} tokens to "
                     "take seq_len from (a model for another kind of puzzle, or several "
                     "installed families of that size: see `ptrm codecs`); "
                     if "seq_len" in missing and layout is not None else "")
        if yaml_path is None:
            where = ("put the run's all_config.yaml next to the step file (`ptrm solve`, "
                     "`ptrm eval` and `ptrm train --init-from` read it there), or convert it "
                     "once: `ptrm convert STEP --config all_config.yaml` or ")
        else:  # it was read: saying "put it there" would send the user in a circle
            where = f"{yaml_path} does not give them either"
            if "seq_len" in missing:
                where += (" (seq_len comes from the dataset.json of its data_paths, "
                          f"{', '.join(data_paths) or 'none'}, not readable from here; "
                          "`ptrm convert STEP --family F` takes it from the family's layout)")
            where += "; give them with "
        raise CheckpointError(
            f"{path}: the weights do not say {', '.join(missing)}",
            hint=unsettled + where + "`ptrm convert STEP --set KEY=VALUE` for each (in Python, "
                 "import_official(..., KEY=VALUE)). Usual values: "
                 + "; ".join(f"{k}: {NOT_IN_WEIGHTS[k]}" for k in missing))
    try:
        config = TRMConfig.from_dict(cfg)
    except PtrmError as e:  # name where the bad value came from: the yaml, --set, ...
        # (not a value the weights confirmed: "hidden_size 64 is not divisible by num_heads 3";
        # forward_dtype is in `found` too, but a given one replaces the weights', unchecked)
        bad = next((k for k in source if k in cfg and cfg[k] != found.get(k, _UNSEEN)
                    and re.search(rf"\b{re.escape(k)}\b", str(e))), None)
        origin = f" (from {_origin(source[bad], yaml_path)})" if bad else ""
        raise CheckpointError(f"{path}: {e}{origin}", hint=e.hint) from None
    V = config.vocab_size
    if vocab is None:
        vocab = placeholder_vocab(V)
    elif len(vocab) != V:
        raise VocabError(f"vocabulary {vocab.family!r} has {len(vocab)} tokens but the "
                         f"checkpoint {path} has vocab_size {V}")
    model = _build(config, state, device, path)

    step = path.name.removeprefix("step_")
    meta = {"source": "official-trm", "imported_from": str(path), "sha256": _sha256(path),
            "steps": int(step) if step.isdigit() else None, "key_prefix": prefix,
            "config_yaml": str(yaml_path) if yaml_path else None,
            "inferred_from_weights": sorted(found),
            "given": {k: source[k] for k in sorted(source) if k in cfg},
            "ignored_arch_keys": ignored, "data_paths": data_paths}
    return model, vocab, meta


_UNSEEN = object()  # a setting the weights do not show: never equal to a given value


def _no_layout_for(path: Path, V: int, yaml_path: Path | None) -> CheckpointError:
    """The error for a step file whose length only the data could give, and the data has no
    single family of its vocabulary size: most often a model for another kind of puzzle (a
    maze or ARC model given a sudoku). "The weights do not say seq_len", with advice to set
    it, hid that: setting it only led to the next refusal. Name the families it does fit."""
    fits = _families_of_size(V)
    kinds = (f"the installed families with {V} tokens: {', '.join(fits)}: it is a model for "
             "their puzzles" if fits else
             f"no installed family has {V} tokens: a model for a puzzle type whose plugin is "
             "not installed (`ptrm codecs` lists them)")
    return CheckpointError(
        f"{path} is a model with a vocabulary of {V} tokens, and no single token family of "
        f"the data given here has {V} tokens (its sequence length, which a TRM-Att's weights "
        "do not hold, would come from that family; "
        + (f"{yaml_path} does not give it)" if yaml_path else "no all_config.yaml is beside "
           "it)"),
        hint=kinds + f". (Where several families of the data have {V} tokens, pick its run's: "
             "`ptrm convert STEP --family F --out DIR`, and pass DIR.)")


def _families_of_size(V: int) -> list[str]:
    """'name (its size)' of each installed codec family with V tokens. Imported here, in an
    error's path only: the engine does not otherwise depend on the codec registry."""
    try:
        from .. import codec as registry

        found = {f.name: f"{f.name} ({registry.size_name(f.rows, f.cols)})"
                 for f in registry.families()
                 if len(f.vocab) == V}
    except PtrmError:  # a broken plugin must not hide the checkpoint's own error
        return []
    return sorted(found.values())


def _origin(label: str, yaml_path: Path | None) -> str:
    """Where a setting came from, for an error message: the yaml file read, --set, ..."""
    if label == "all_config.yaml" and yaml_path is not None:
        return str(yaml_path)
    return "--set" if label == "override" else label


def _read_official(path: Path) -> tuple[dict, str]:
    ours = path if path.is_dir() else path.parent if path.name == WEIGHTS else None
    if ours is not None and (ours / CONFIG).is_file():  # converted already, or ptrm train's
        raise CheckpointError(f"{path} is a ptrm checkpoint already, not an official TRM "
                              "step_N file: there is nothing to convert",
                              hint=f"use it as it is: -c {ours}")
    if path.is_dir():
        raise CheckpointError(f"{path} is a directory, not an official TRM checkpoint file",
                              hint="pass the step_N file inside the run's checkpoint folder")
    if not path.is_file():
        raise CheckpointError(f"{path}: no such file")
    if path.stat().st_size == 0:
        raise CheckpointError(f"{path} is empty (0 bytes), not an official TRM checkpoint",
                              hint="copy the step_N file again")
    if not is_official_checkpoint(path):
        raise CheckpointError(f"{path} is not a file written by torch.save (an official TRM "
                              f"checkpoint, step_N, is one)", hint=_safetensors_hint(path))
    if _zip_cut_short(path):  # torch's own message is a paragraph about miniz
        raise CheckpointError(f"{path} is cut short or corrupt: it begins as a torch.save "
                              f"archive but its end (the zip directory) is missing "
                              f"({path.stat().st_size:,} bytes)",
                              hint="an incomplete copy or download: copy the step_N file again")
    if (damaged := _zip_damage(path)) is not None:
        raise CheckpointError(f"{path} is corrupt: {damaged}",
                              hint="a damaged copy: copy the step_N file again")
    try:
        obj = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:  # noqa: BLE001 - any failure here means "not a readable checkpoint"
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        pickled = first.startswith("Weights only load failed")
        if pickled:  # torch's advice to drop the guard
            first = "it holds objects other than tensors"
        # a whole model (torch.save(model)) needs its state_dict saved alone; anything else
        # failing here is damage (a cut legacy file: "unexpected EOF"), which no save fixes
        raise CheckpointError(f"{path} is corrupt or not a plain tensor checkpoint: {first}",
                              hint="only state_dict files are read (weights_only=True), never "
                                   "pickled objects: for a whole model saved with "
                                   "torch.save(model), run torch.save(model.state_dict(), "
                                   "'step_N') and pass that file" if pickled else
                              "a damaged or incomplete copy: copy the step_N file again") from None
    if not isinstance(obj, dict) or not all(isinstance(v, torch.Tensor) for v in obj.values()):
        raise _not_a_state_dict(path, obj)
    anchors = [k for k in obj if k.endswith(ANCHOR)]
    if len(anchors) != 1:
        raise CheckpointError(f"{path} is not a TRM checkpoint (no single "
                              f"'...{ANCHOR}' tensor among {len(obj)} keys)")
    prefix = anchors[0][: -len(ANCHOR)]
    stray = [k for k in obj if not k.startswith(prefix)]
    if stray:
        raise CheckpointError(f"{path}: keys outside {prefix!r}: {', '.join(stray[:5])}")
    state = {k[len(prefix):]: v for k, v in obj.items()}
    if any(k.startswith("H_level.") for k in state):
        raise CheckpointError(f"{path} looks like an HRM checkpoint (it has an H_level), not TRM")
    # the official repository's TRM variants share TRM's layers but not its two states
    variant = ("trm_hier6 (six latent states, L1_init..L6_init)"
               if any(re.fullmatch(r"L\d+_init", k) for k in state) else
               "trm_singlez (one state: L_init, no H_init)"
               if "L_init" in state and "H_init" not in state else None)
    if variant:
        raise CheckpointError(f"{path} looks like the official repository's {variant} variant, "
                              "not TRM (recursive_reasoning.trm, two states y and z, H_init and "
                              "L_init), the one model ptrm implements")
    return {k: v for k, v in state.items() if k not in NON_PERSISTENT}, prefix


def _is_safetensors(path: Path) -> bool:
    """A safetensors file: an 8-byte little-endian header length, then a JSON header."""
    try:
        with open(path, "rb") as f:
            head = f.read(9)
    except OSError:
        return False
    return len(head) == 9 and head[8:] == b"{" and \
        0 < int.from_bytes(head[:8], "little") < path.stat().st_size


def _safetensors_hint(path: Path) -> str | None:
    """What to do with weights saved as safetensors without a ptrm config beside them: they
    are read only as a checkpoint folder's model.safetensors (the config says the model's
    settings and token table, which the tensors do not). Without this hint the user was told
    what the file is not, and nothing else."""
    if not _is_safetensors(path):
        return None
    return (f"a safetensors file is read only as the {WEIGHTS} of a ptrm checkpoint folder, "
            f"with the {CONFIG} that `ptrm train` or `ptrm convert` writes beside it (pass the "
            f"folder); an official TRM run is read from its step_N file (torch.save) and "
            f"{OFFICIAL_CONFIG}")


def _not_a_state_dict(path: Path, obj) -> CheckpointError:
    """The error for a file that holds something else than a flat {name: tensor} dict. A dict
    that wraps one ({"model": state_dict, "step": ...}, as many training scripts save) was
    "holds a dict, not a TRM state_dict", which reads as a contradiction: name its entries and
    the one that looks like the state_dict, so the user knows what to save alone."""
    if not isinstance(obj, dict):
        return CheckpointError(f"{path} holds a {type(obj).__name__}, not a TRM state_dict "
                               "(a dict of tensors, as pretrain.py saves)")
    keys = [str(k) for k in obj]
    shown = ", ".join(keys[:5]) + (f", ... ({len(keys)} in all)" if len(keys) > 5 else "")
    inner = next((k for k, v in obj.items() if isinstance(v, dict)
                  and any(str(n).endswith(ANCHOR) for n in v)), None)
    return CheckpointError(
        f"{path} holds a dict whose entries are not all tensors ({shown}), not a TRM "
        "state_dict (a flat dict of tensors, as pretrain.py saves)",
        hint=f"its entry {inner!r} looks like the state_dict: save that alone "
             f"(torch.save(ckpt[{inner!r}], 'step_N')) and pass that file" if inner is not None
        else None)


def _zip_cut_short(path: Path) -> bool:
    """A torch.save zip archive whose end is missing (a partial copy): zip files keep their
    directory at the end, so a cut one has none. Legacy pickle files are not checked here."""
    import zipfile

    with open(path, "rb") as f:
        if f.read(4) != b"PK\x03\x04":
            return False
    try:
        return not zipfile.is_zipfile(path)
    except zipfile.BadZipFile:  # an end record damaged past what is_zipfile itself catches
        return True


def _zip_damage(path: Path) -> str | None:
    """What is damaged in a torch.save zip archive, or None: the first entry whose bytes fail
    their CRC-32 (torch.load does not check them, so a copy damaged in the middle loaded as a
    model with silently wrong weights; reading the file once more costs little next to
    loading it), or a directory zipfile cannot parse (damage near the end: a name that is no
    longer UTF-8, a flag it does not know; that was a traceback)."""
    import zipfile

    with open(path, "rb") as f:
        if f.read(4) != b"PK\x03\x04":
            return None
    try:
        with zipfile.ZipFile(path) as z:
            bad = z.testzip()
    except (zipfile.BadZipFile, OSError, EOFError):  # a damaged directory: torch.load says so
        return None
    except (UnicodeDecodeError, NotImplementedError, ValueError) as e:
        return f"its zip directory does not read ({type(e).__name__}: {e})"
    return None if bad is None else f"its entry {bad} does not match the checksum stored with it"


def _infer_from_weights(sd: dict, path: Path) -> tuple[dict, int | None]:
    """Config values the tensors reveal, and S (= seq_len + P) when they fix it."""
    V, D = sd[ANCHOR].shape
    layers = {int(k.split(".")[2]) for k in sd if k.startswith("L_level.layers.")}
    found = {"vocab_size": V, "hidden_size": D, "L_layers": len(layers),
             "mlp_t": any(".mlp_t." in k for k in sd)}
    # the first layer's widths are read below: a file without them (cut down, or filtered by
    # hand) was a KeyError traceback
    read = ["L_level.layers.0.mlp.gate_up_proj.weight"] + \
        (["L_level.layers.0.mlp_t.gate_up_proj.weight"] if found["mlp_t"] else [])
    lacking = [k for k in read if k not in sd]
    if lacking:
        raise CheckpointError(f"{path} is not a whole TRM checkpoint (no '...{lacking[0]}' "
                              f"tensor among {len(sd)} keys)",
                              hint="a damaged or incomplete copy: copy the step_N file again")
    if "H_init" in sd and sd["H_init"].dtype in FORWARD_DTYPES.values():
        found["forward_dtype"] = {v: k for k, v in FORWARD_DTYPES.items()}[sd["H_init"].dtype]
    if "puzzle_emb.weights" in sd:
        found["num_puzzle_identifiers"], found["puzzle_emb_ndim"] = sd["puzzle_emb.weights"].shape
    else:
        found["puzzle_emb_ndim"] = 0
    S = None
    if "embed_pos.embedding_weight" in sd:
        found["pos_encodings"] = "learned"
        S = sd["embed_pos.embedding_weight"].shape[0]
    if found["mlp_t"]:
        S = sd["L_level.layers.0.mlp_t.gate_up_proj.weight"].shape[1]
    return found, S


def _resolve_lengths(cfg: dict, S: int, path: Path, source: dict) -> None:
    """With S known (TRM-MLP or learned positions), seq_len and P determine each other."""
    P = cfg.get("puzzle_emb_len")
    if P == 0 and cfg["puzzle_emb_ndim"]:
        P = -(-cfg["puzzle_emb_ndim"] // cfg["hidden_size"])
    if "seq_len" in cfg and P is not None and cfg["seq_len"] + P != S:
        raise CheckpointError(f"{path}: seq_len {cfg['seq_len']} + puzzle_emb_len {P} != {S}, "
                              "the sequence length the weights were built for")
    if "seq_len" not in cfg and P is not None:
        cfg["seq_len"], source["seq_len"] = S - P, "weights"
    elif "puzzle_emb_len" not in cfg and "seq_len" in cfg:
        # a table needs at least ceil(ndim / D) prefix slots (P = 0 means exactly that many)
        least = -(-cfg["puzzle_emb_ndim"] // cfg["hidden_size"])
        if cfg["seq_len"] > S - least:  # was "puzzle_emb_len must be ..., got -61"
            raise CheckpointError(
                f"{path}: seq_len {cfg['seq_len']} ({source.get('seq_len', 'given')}) is longer "
                f"than the weights allow: they were built for {S} positions (seq_len + "
                f"puzzle_emb_len), and the puzzle table needs at least {least} of them",
                hint=f"the run's seq_len is at most {S - least}: the token mixer or the learned "
                     "positions fix the whole length")
        cfg["puzzle_emb_len"], source["puzzle_emb_len"] = S - cfg["seq_len"], "weights"


def _check_expansion(cfg: dict, sd: dict, S: int | None, path: Path) -> None:
    """expansion only fixes the SwiGLU width through a rounding rule, so check the width it
    gives; if none was given, take 4 (every published run's) if it explains the weights,
    else the smallest whole expansion that does."""
    inter = sd["L_level.layers.0.mlp.gate_up_proj.weight"].shape[0] // 2
    widths = [(cfg["hidden_size"], inter)]
    if S is not None and cfg["mlp_t"]:
        widths.append((S, sd["L_level.layers.0.mlp_t.gate_up_proj.weight"].shape[0] // 2))
    fits = lambda e: all(swiglu_inter(w, e) == i for w, i in widths)  # noqa: E731
    if "expansion" in cfg:
        if not fits(cfg["expansion"]):
            raise CheckpointError(f"{path}: expansion {cfg['expansion']} does not give the "
                                  f"SwiGLU width {inter} found in the weights")
        return
    for e in (4, 1, 2, 3, 5, 6, 7, 8, 1.5, 2.5, 3.5):
        if fits(e):
            cfg["expansion"] = float(e)
            return
    raise CheckpointError(f"{path}: no common expansion gives the SwiGLU width {inter}",
                          hint="set expansion explicitly")


def _read_official_yaml(step_path: Path, config_yaml):
    """-> (the `arch:` section of an official all_config.yaml reduced to TRMConfig keys, the
    file used, the arch keys ignored, the dataset's seq_len when its data path is readable,
    the run's dataset folders as written there: where its identifiers.json lives)."""
    path = Path(config_yaml) if config_yaml else step_path.parent / OFFICIAL_CONFIG
    if not path.exists():
        if config_yaml:
            raise CheckpointError(f"{path}: no such file")
        return {}, None, [], None, []
    if path.is_dir():
        raise CheckpointError(f"{path} is a directory, not the run's {OFFICIAL_CONFIG}",
                              hint=f"pass the file: {path / OFFICIAL_CONFIG}")
    import yaml

    try:
        doc = yaml.safe_load(path.read_text())
    except yaml.MarkedYAMLError as e:  # its str() names "<unicode string>", not the file
        line = f":{e.problem_mark.line + 1}" if e.problem_mark else ""
        raise CheckpointError(f"{path}{line}: not valid YAML: {e.problem}") from None
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as e:
        raise CheckpointError(f"{path} is not readable YAML: {e}") from None
    if not isinstance(doc, dict):
        raise CheckpointError(f"{path} is not a TRM run config")
    arch = doc.get("arch", doc)
    # another model's arch: is refused by its name before any missing setting: an HRM run's
    # yaml has no hidden_size (its H/L levels), and "has no hidden_size" hid what it was
    if isinstance(arch, dict) and ("arch" in doc or "hidden_size" in arch):
        _refuse_other_arch(path, arch)
    if not isinstance(arch, dict) or "hidden_size" not in arch:
        # the official pretrain.py writes the model's settings under arch:, beside data_paths,
        # lr, ...; a file without them is another program's config, or cut short
        what = ("its arch: section has no hidden_size" if "arch" in doc else
                f"it has no arch: section (keys here: {', '.join(map(str, list(doc)[:6]))}"
                f"{', ...' if len(doc) > 6 else ''})" if doc else "it is empty")
        raise CheckpointError(
            f"{path} is not an official TRM run config: {what}",
            hint="the official pretrain.py writes all_config.yaml with the model's settings "
                 "under arch: (name, hidden_size, num_heads, H_cycles, L_cycles, ...): pass "
                 "that run's file with --config, or give the settings with --set KEY=VALUE")
    known = {f.name for f in dataclasses.fields(TRMConfig)}
    out = {k: v for k, v in arch.items() if k in known}
    ignored = sorted(k for k in arch if k not in known)
    data = doc.get("data_paths") or doc.get("data_path") or []
    # a list as the official run writes it; one path, or any other scalar a hand-edited file
    # holds, is one entry (list() of a number was a TypeError traceback)
    dirs = [str(d) for d in (data if isinstance(data, (list, tuple)) else [data])]
    for d in dirs:
        for split in ("test", "train"):
            meta = Path(d) / split / "dataset.json"  # paths are relative to the run's cwd
            try:
                return out, path, ignored, int(json.loads(meta.read_text())["seq_len"]), dirs
            except (OSError, ValueError, KeyError, TypeError):
                continue
    return out, path, ignored, None, dirs


def _refuse_other_arch(path: Path, arch: dict) -> None:
    """Refuse an `arch:` whose name is not TRM itself (HRM, trm_singlez, trm_hier6), by name."""
    name = str(arch.get("name", "trm"))
    hint = ("ptrm imports TRM runs only (arch name recursive_reasoning.trm@...): pass a TRM "
            "run's step_N, with its all_config.yaml")
    if "trm" not in name.lower() and "tinyrecursive" not in name.lower():
        raise CheckpointError(f"{path}: arch {name!r} is not a TRM", hint=hint)
    module = name.split("@")[0].rsplit(".", 1)[-1]  # recursive_reasoning.trm@TinyRecursive...
    if "@" in name and module != "trm":  # trm_singlez, trm_hier6: other models, same class name
        raise CheckpointError(f"{path}: arch {name!r} is the official repository's {module!r} "
                              "model, not TRM (recursive_reasoning.trm@...), the one model ptrm "
                              "implements", hint=hint)


def _check_keys(overrides: dict) -> dict:
    known = {f.name for f in dataclasses.fields(TRMConfig)}
    unknown = sorted(set(overrides) - known)
    if unknown:
        raise CheckpointError(f"unknown model setting(s) {', '.join(unknown)}",
                              hint=f"known settings: {', '.join(sorted(known))}")
    return dict(overrides)


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()
