"""What a `ptrm bench` run takes and what it runs on: the options, the device, the model and the
puzzles. The other bench_* modules and `benchmark.run_bench` share these; nothing here times
anything.

Everything runs without typer (the benchmark is also `python -m ptrm_cli.benchmark`, for GPU
machines where only torch and numpy are installed): the engine, solver and codecs are imported
inside the functions that need them.
"""

from __future__ import annotations

import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import torch

from .errors import PtrmError
from .paths import report_path

MODES = ("eager", "fast", "fast-autotune", "fast-step", "adaptive", "curve", "profile")
FORMAT = "ptrm-bench/1"

#: the hints of a split or a checkpoint that cannot be used (their readers, shared with eval
#: and solve, give some of those errors none)
SPLIT_HINT = ("--split golden, random, a PPBench JSONL file, a dataset folder, or a split name "
              "with --data DIR")
FAMILY_HINT = "give a dataset built for this model's token family (or the model trained on it)"


@dataclass
class BenchOptions:
    checkpoint: str | None = None
    model: str | None = None           # without a checkpoint: a RANDOM_MODELS key (None: 7m)
    K: int = 100
    D: int = 48
    sigma: float | None = None        # None: the checkpoint's (a random model: 0.2)
    perturb: str | None = None        # None: the checkpoint's target, else z
    puzzles: int = 61
    split: str = "auto"                # auto | golden | random | FILE.jsonl | DIR | NAME (+data)
    data: str | None = None
    types: list[str] | None = None     # only these puzzle types of the split (None: all)
    modes: list[str] = field(default_factory=lambda: ["eager", "fast", "adaptive"])
    device: str = "auto"
    seed: int = 0
    repeats: int = 1
    chunk_rows: int | None = None
    compile: bool | None = None        # None: on CUDA
    compile_mode: str = "default"
    deterministic: bool = True
    exact: bool = True                 # RMSNorm summed in a fixed order (TRM.fixed_order_norm)
    check_every: int = 4
    wave: int | None = None
    q_threshold: float | None = 0.9
    rules: bool = True
    peak_size: int | None = None
    out: str | None = None

    def recorded(self) -> dict:
        """The options as a report records them: paths absolute (checkpoint, data, out, a split
        given as a file or folder), as eval's reports do (`paths.report_path`)."""
        out = asdict(self)
        for key in ("checkpoint", "data", "out"):
            if out[key]:
                out[key] = report_path(out[key])
        if not out["data"] and out["split"] not in ("auto", "golden", "random") \
                and Path(out["split"]).exists():  # with --data, a split is a name in it
            out["split"] = report_path(out["split"])
        return out


def log(msg: str, t0=[None]):  # noqa: B006 - one start time per process
    """A progress line on stderr (rank 0 only), stamped with seconds since the first line."""
    from .engine import distributed

    if t0[0] is None:
        t0[0] = time.perf_counter()
    if distributed.is_main():
        print(f"[{time.perf_counter() - t0[0]:7.1f} s] {msg}", file=sys.stderr, flush=True)


# -- the model ------------------------------------------------------------------------------

def random_7m(vocab_size: int = 294, seq_len: int = 100, seed: int = 0):
    from .engine.model import TRM, TRMConfig

    torch.manual_seed(seed)
    return TRM(TRMConfig(vocab_size=vocab_size, seq_len=seq_len, hidden_size=512, num_heads=8,
                         L_layers=2, H_cycles=3, L_cycles=6, puzzle_emb_ndim=512,
                         puzzle_emb_len=16, halt_max_steps=16)).eval()


def random_tiny(vocab_size: int = 294, seq_len: int = 100, seed: int = 0):
    from .engine.model import TRM, TRMConfig

    torch.manual_seed(seed)
    m = TRM(TRMConfig(vocab_size=vocab_size, seq_len=seq_len, hidden_size=32, num_heads=2,
                      expansion=2.0, L_layers=1, H_cycles=2, L_cycles=2, puzzle_emb_ndim=0,
                      puzzle_emb_len=0, halt_max_steps=4))
    with torch.no_grad():  # Q values that differ, so selection is not all ties
        m.q_head.weight.normal_(0, 1.0)
        m.q_head.bias.zero_()
    return m.eval()


def random_mlp(vocab_size: int = 11, seq_len: int = 81, seed: int = 0):
    """TRM-MLP as examples/configs/sudoku-mlp.yaml trains it (5.0M parameters): a token-mixing
    SwiGLU over the 97 positions instead of attention, sudoku-native tokens."""
    from .engine.model import TRM, TRMConfig

    torch.manual_seed(seed)
    return TRM(TRMConfig(vocab_size=vocab_size, seq_len=seq_len, hidden_size=512, L_layers=2,
                         H_cycles=3, L_cycles=6, pos_encodings="none", mlp_t=True,
                         puzzle_emb_ndim=512, puzzle_emb_len=16, halt_max_steps=16)).eval()


#: --model without --checkpoint: (constructor, token family, what its init means for a run)
RANDOM_MODELS = {
    "7m": (random_7m, "PPBENCH", "reference init (every Q = -5: adaptive never stops early)"),
    "tiny": (random_tiny, "PPBENCH", "reference init, Q head random (Q values that differ)"),
    "mlp": (random_mlp, "SUDOKU_NATIVE", "reference init (every Q = -5), TRM-MLP on sudoku"),
}
DEFAULT_RANDOM_MODEL = "7m"  # the paper's size: what the headline numbers are about


def _vocab(family: str):
    try:
        from ptrm_codecs import families

        return getattr(families, family).vocab
    except Exception:  # noqa: BLE001 - codecs not installed: random inputs only
        return None


def load_model(o: BenchOptions, device: str):
    """(LoadedModel, description)."""
    from .solver import LoadedModel, load_model as load_ckpt

    if o.checkpoint:

        lm = load_ckpt(o.checkpoint, device, layouts=_layouts(o))
        # absolute, as eval's reports record it: the report is read later from elsewhere
        return lm, f"checkpoint {report_path(lm.path)}"
    name = o.model or DEFAULT_RANDOM_MODEL
    make, family, init = RANDOM_MODELS[name]
    model = make(seed=o.seed).to(device)
    if hasattr(model, "rotary_emb"):
        model.rotary_emb.reset_tables(device)
    vocab = _vocab(family)
    return LoadedModel(model, vocab, {}, f"random-{name}", device), \
        f"random TRM ({name}) with {init}"


def _layouts(o: BenchOptions) -> list:
    """The token families bench's data may be in, which give an official step file the
    sequence length its weights and all_config.yaml do not (a TRM-Att run opened away from its
    dataset), as `ptrm eval` does. Without them `bench -c step_N` refused a Sudoku-Att run
    that eval and solve take. auto and random fall back to random tokens: any family."""
    from . import codec as registry

    if o.split in ("auto", "random"):
        return registry.families()
    from .commands.eval import _layouts as split_layouts  # eval's rule for a named split

    return split_layouts(o.split, o.data)


# -- the puzzles ----------------------------------------------------------------------------

@dataclass
class Puzzles:
    inputs: torch.Tensor
    labels: torch.Tensor | None
    verifiers: list | None
    puzzle_ids: torch.Tensor | None
    source: str
    types: list[str] | None = None


def load_puzzles(o: BenchOptions, loaded) -> Puzzles:
    """The benchmark's puzzles: a labelled split when asked (or, for auto, when the golden set,
    the codecs and a matching vocabulary are all here), else random tokens. With fewer puzzles
    in the split than --puzzles, the split is repeated (a benchmark needs the batch size)."""
    cfg = loaded.config
    ev, types, dataset = None, None, False
    if o.data is not None:  # a typo must not turn into a benchmark on random tokens
        if not Path(o.data).is_dir():
            raise PtrmError(f"--data {o.data}: no such dataset folder",
                            hint="give the folder `ptrm build-data --out` wrote")
        if o.split in ("auto", "random"):
            raise PtrmError(f"--data names a dataset, but --split {o.split} does not read one",
                            hint="--split val (or another split name of that dataset)")
    if o.split != "random" and loaded.vocab is not None:
        from .eval_sets import resolve_split

        split = "golden" if o.split == "auto" else o.split
        types = o.types
        if types is None and split == "golden" and o.data is None:
            types = golden_types(loaded)
        # the first --puzzles only (of --types' rows: eval_sets picks those first): a 49k-line
        # list file took two minutes to read whole
        dataset = o.data is not None or Path(o.split).expanduser().is_dir()
        try:
            ev = resolve_split(split, o.data, loaded, types=types, limit=o.puzzles)
        except (PtrmError, OSError, ValueError, IndexError, KeyError) as e:
            # --types asked for puzzles of the split: random tokens would time none of them
            if o.split == "auto" and o.types is None:
                log(f"no golden puzzles ({e}); using random inputs")
            else:
                arrays = _dataset_arrays(o, loaded)
                if arrays is None:
                    if isinstance(e, PtrmError) and not e.hint:  # eval_sets gives none
                        e.hint = SPLIT_HINT
                        if o.types is not None and "puzzles to evaluate" in str(e):
                            e.hint = ("--types takes puzzle types the split holds (`ptrm "
                                      "codecs` lists the installed ones)")
                    raise
                log(f"no rules verifier for this data ({e}); judging by labels only")
                return arrays
    if ev is None:
        g = torch.Generator().manual_seed(o.seed)
        x = torch.randint(1, cfg.vocab_size, (o.puzzles, cfg.seq_len), generator=g)
        ids = None
        return Puzzles(x, None, None, ids, f"random tokens ({o.puzzles} puzzles)")
    n = len(ev)
    if n == 0:
        raise PtrmError(f"{ev.name}: no puzzles to run", hint=SPLIT_HINT)
    idx = torch.arange(o.puzzles) % n
    verifiers = [ev.verifiers[i] for i in idx.tolist()]
    ids = None if ev.puzzle_ids is None else ev.puzzle_ids[idx]
    rep = "" if o.puzzles <= n else f", repeated to {o.puzzles}"
    only = "" if types is None else " " + ",".join(types)
    # a dataset's split by its folder: "golden" alone read as the wheel's golden set; the
    # folder absolute, as eval's reports record it

    name = f"{report_path(o.data or o.split)}/{ev.name}" if dataset else ev.name
    return Puzzles(ev.inputs[idx], ev.labels[idx], verifiers, ids,
                   f"{name}{only} ({min(n, o.puzzles)} puzzles{rep})",
                   [ev.types[i] for i in idx.tolist()])


def golden_types(loaded) -> list[str] | None:
    """The golden set's types this model's family reads, where it reads some but not all (a
    TRM-MLP on sudoku-native tokens: sudoku); None otherwise. Without it `--model mlp --split
    golden` stopped at the first heyawake with eval's hint `--types sudoku`, an option bench
    does not have, and --split auto fell back to random tokens."""
    from .eval_sets import GOLDEN_TYPES, _installed  # the codecs eval would use
    from .solver import reads_family

    codecs = _installed()
    held = [t for t in GOLDEN_TYPES if t in codecs]
    reads = [t for t in held if any(reads_family(loaded, f) for f in codecs[t].families)]
    return reads if reads and len(reads) < len(held) else None


def _dataset_arrays(o: BenchOptions, loaded) -> Puzzles | None:
    """A `ptrm build-data` split read as arrays (labels, no verifier): for data whose puzzle
    type has no codec for this model's family. None when --split/--data is not a dataset."""
    from .engine.data import load_dataset
    from .solver import adopt_vocab

    root = Path(o.data) if o.data else Path(o.split)
    if not (root / "meta.json").is_file():
        return None
    name = o.split if o.data else None
    ds = load_dataset(root)
    name = name or next((s for s in ("val", "test") if s in ds.splits), next(iter(ds.splits)))
    if name not in ds.splits:
        other = next((x for x in ("val", "test") if x in ds.splits), next(iter(ds.splits)))
        raise PtrmError(f"dataset {root} has no split {name!r} (it has "
                        f"{', '.join(ds.splits)})", hint=f"--split {other} --data {root}")
    # what resolve_split checks before it looks for a verifier: a dataset of another family
    # must be refused here too, not run as labels only until every mode fails on its shape
    try:
        adopt_vocab(loaded, ds.vocab)
        loaded.vocab.check_same(ds.vocab, what=f"checkpoint {loaded.path}",
                                other_what=f"dataset {root}")
    except PtrmError as e:
        if not e.hint:
            e.hint = FAMILY_HINT
        raise
    if ds.seq_len != loaded.config.seq_len:
        raise PtrmError(f"dataset {root} has sequences of {ds.seq_len} tokens, the model reads "
                        f"{loaded.config.seq_len}", hint=FAMILY_HINT)
    s = ds.splits[name]
    rows = np.arange(len(s))
    if o.types is not None:  # --types here too: ignored, it ran the split's other types
        have = [ds.types[int(t)] for t in np.unique(np.asarray(s.type))]
        missing = [t for t in o.types if t not in have]
        if missing:
            raise PtrmError(f"{root}/{name}: no {', '.join(missing)} puzzles to run (it holds "
                            f"{', '.join(have) or 'none'})",
                            hint="--types takes puzzle types the split holds")
        keep = [i for i, t in enumerate(ds.types) if t in o.types]
        rows = rows[np.isin(np.asarray(s.type), keep)]
    n = len(rows)
    if n == 0:
        raise PtrmError(f"{root}/{name}: no puzzles to run", hint=SPLIT_HINT)
    idx = rows[np.arange(o.puzzles) % n]  # repeated as a labelled split is: the batch size
    ids = None
    if loaded.config.puzzle_emb_ndim > 0:
        ids = torch.as_tensor(np.asarray(s.puzzle_id)[idx].astype(np.int64))
        if int(ids.max()) >= loaded.config.num_puzzle_identifiers:
            raise PtrmError(f"dataset {root} uses puzzle ids up to {int(ids.max())}, the model "
                            f"knows {loaded.config.num_puzzle_identifiers}", hint=FAMILY_HINT)
    rep = "" if o.puzzles <= n else f", repeated to {o.puzzles}"
    only = "" if o.types is None else " " + ",".join(o.types)

    return Puzzles(torch.as_tensor(np.asarray(s.inputs)[idx].astype(np.int64)),
                   torch.as_tensor(np.asarray(s.labels)[idx].astype(np.int64)), None, ids,
                   f"{report_path(root)}/{name}{only} ({min(n, o.puzzles)} puzzles{rep}, "
                   "labels only)",
                   [ds.types[int(t)] for t in np.asarray(s.type)[idx]])
