"""`ptrm train`'s configuration: the YAML schema as dataclasses, with the reference's defaults
(TRM_REFERENCE.md §0) except where a comment says otherwise, `--set key=value` overrides, type
checks that name the key, and the model config completed from the dataset."""

from __future__ import annotations

import dataclasses
import math
import os
import re
import typing
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ..errors import PtrmError, did_you_mean
from .data import Dataset
from .losses import LOSS_TYPES
from .model import TRMConfig

RECIPES = ("deep_supervision", "final_step")  # train.recipe

# Where every key's meaning, default and range are written down: the hint of a config mistake.
REFERENCE = 'docs/TRAINING.md, "Config reference", lists every key with its default'
SET_HINT = ("KEY is a dotted path of the config, VALUE is YAML: --set train.lr=3e-4 --set "
            "data.val_split=null; " + REFERENCE)
START_FROM = ("start from a recipe in examples/configs/ (tiny-cpu.yaml trains on a CPU); "
              + REFERENCE)

# Model settings that come from the dataset, not from the config.
FROM_DATASET = ("vocab_size", "seq_len", "num_puzzle_identifiers")


# Defaults are the reference's (TRM_REFERENCE.md §0), except where a comment says otherwise.

@dataclass
class DataConfig:
    path: str = ""
    train_split: str = "train"
    val_split: str | None = "val"     # null: no evaluation
    # another dataset to take val_split from (same vocabulary and length): keeps model
    # selection off a dataset whose own val is the test set (tdoku-hard + tdoku-tune)
    val_path: str | None = None
    # group: the reference's epochs - every base puzzle once, as one random augmented version
    #        (a version = the rows sharing (puzzle, puzzle_id) when puzzle_id > 0, else one row)
    # example: every row once per epoch
    sampling: str = "group"
    val_limit: int | None = None      # score only the first N validation examples


@dataclass
class RecipeConfig:
    global_batch_size: int = 768      # across all GPUs
    epochs: float = 100000            # total updates = epochs * examples per epoch / batch
    max_steps: int | None = None      # if set, overrides epochs
    lr: float = 1e-4
    lr_min_ratio: float = 1.0         # 1.0: constant after warm-up
    lr_warmup_steps: int = 2000
    beta1: float = 0.9
    beta2: float = 0.95
    weight_decay: float = 0.1
    puzzle_emb_lr: float = 1e-2
    puzzle_emb_weight_decay: float = 0.1
    ema: bool = True                  # reference default False, but every published run sets it
    ema_rate: float = 0.999
    loss_type: str = "stablemax"      # stablemax | softmax
    q_loss_weight: float = 0.5
    compile: bool = False             # torch.compile the supervision step (reference: on)
    compile_mode: str | None = None   # passed to torch.compile (e.g. max-autotune-no-cudagraphs)
    # deep_supervision: TRM's (a slot keeps its example and carry across updates until it
    # halts; the loss at every supervision step). final_step: in the spirit of the Recursive
    # Stem Model (arXiv 2603.15641): every update takes fresh examples, runs a random number
    # of detached warm-up supervision steps (0..warmup_steps_max, drawn per update) and puts
    # the loss on the one step after them. TRAINING.md, "Training recipes".
    recipe: str = "deep_supervision"
    warmup_steps_max: int | None = None  # final_step only; None: halt_max_steps - 1


@dataclass
class EvalConfig:
    interval: float = 10000           # epochs between evaluations (the reference's eval_interval)
    every_steps: int | None = None    # if set, overrides interval
    batch_size: int | None = None     # per rank; default global_batch_size / ranks
    steps: int | None = None          # supervision steps; default halt_max_steps (reference)


@dataclass
class CheckpointConfig:
    every_steps: int | None = 2000    # besides after every evaluation, at the end and on Ctrl-C
    keep: int = 2                     # newest step_<N> folders kept (plus the best)
    optimizer: bool = True            # write optimizer.safetensors (exact resume)
    carry: bool = True                # write carry.safetensors (exact resume)
    max_file_mb: float = 15.0         # shard our tensor files below this size (moving runs
                                      # between machines: 16 MiB per file)


@dataclass
class LogConfig:
    every: int = 50                   # steps between train log lines (the only host syncs)
    progress: str = "auto"            # auto | bar | lines | none


@dataclass
class ResumeConfig:
    weights_only: bool = False        # --resume takes weights + EMA + step, fresh optimizer
    init_from: str | None = None      # warm start a new run from this checkpoint folder
    rewarmup_steps: int = 0           # after a warm start, ramp the lr up again over N steps


@dataclass
class Config:
    run_dir: str = ""
    seed: int = 0
    device: str = "auto"              # auto | cpu | cuda | cuda:N (torchrun: cuda:LOCAL_RANK)
    data: DataConfig = field(default_factory=DataConfig)
    model: dict = field(default_factory=dict)   # TRMConfig fields except FROM_DATASET
    train: RecipeConfig = field(default_factory=RecipeConfig)
    eval: EvalConfig = field(default_factory=EvalConfig)
    checkpoint: CheckpointConfig = field(default_factory=CheckpointConfig)
    log: LogConfig = field(default_factory=LogConfig)
    resume: ResumeConfig = field(default_factory=ResumeConfig)

    def to_dict(self) -> dict:
        return asdict(self)


def load_config(path: str | os.PathLike | None = None, sets: list[str] | tuple = (),
                base: dict | None = None) -> Config:
    """A YAML file (or `base`), then `--set section.key=value` overrides (values are YAML:
    `train.lr=3e-4`, `data.val_split=null`). Unknown keys and wrong types are errors that name
    the key. `run_dir` defaults to runs/<config file name>."""
    import yaml

    doc: dict = dict(base or {})
    origin: dict[tuple, str] = {}  # key path -> where its value was written, for errors
    if path is not None:
        p = Path(path)
        try:
            text = p.read_text(encoding="utf-8")
            loaded = _load_yaml(text)
        except FileNotFoundError:
            raise PtrmError(f"{p}: no such config file", hint=START_FROM) from None
        except IsADirectoryError:
            raise PtrmError(f"{p}: is a folder, not a YAML config file",
                            hint=START_FROM) from None
        except UnicodeDecodeError as e:
            raise PtrmError(f"{p}: not UTF-8 text (byte {e.start}): expected a YAML config "
                            f"file", hint=START_FROM) from None
        except yaml.YAMLError as e:
            raise PtrmError(f"{_yaml_where(p, e)}: not valid YAML: "
                            f"{getattr(e, 'problem', None) or e}",
                            hint="a config is YAML sections of `key: value` lines; "
                                 + START_FROM) from None
        if not isinstance(loaded, dict):
            got = "is empty" if loaded is None else f"holds a {type(loaded).__name__}"
            raise PtrmError(f"{p}: {got}: expected a mapping of config sections "
                            f"(at least `data: {{path: DIR}}`)", hint=START_FROM)
        doc = _merge(doc, loaded)
        doc.setdefault("run_dir", str(Path("runs") / p.stem))
        origin = {k: f"{p}:{line}" for k, line in _key_lines(text).items()}
    set_by: dict[tuple, str] = {}  # key path -> the --set that gave it a value
    for item in sets:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise PtrmError(f"--set {item!r}: expected KEY=VALUE, e.g. train.lr=3e-4",
                            hint=SET_HINT)
        node = doc
        *parents, last = names = key.strip().split(".")
        if not all(n.strip() for n in names):
            raise PtrmError(f"--set {item!r}: {key.strip()!r} has an empty part: "
                            f"expected SECTION.KEY=VALUE, e.g. train.lr=3e-4", hint=SET_HINT)
        for i, k in enumerate(parents):
            if node.get(k) is None:  # a section left empty in the file (`train:`) is null
                node[k] = {}
            node = node[k]
            if not isinstance(node, dict):
                earlier = set_by.get(tuple(parents[:i + 1]))
                raise PtrmError(f"--set {item!r}: {k} is not a section" +
                                (f" (--set {earlier!r} made it a value)" if earlier else ""),
                                hint=SET_HINT)
        try:
            node[last] = yaml.safe_load(value) if value.strip() else None
        except yaml.YAMLError as e:
            raise PtrmError(f"--set {item!r}: {value.strip()!r} is not a YAML value: "
                            f"{getattr(e, 'problem', None) or e}",
                            hint="VALUE is YAML: a list is [a, b]; quote text that YAML "
                                 "would read otherwise: --set 'KEY=\"[a\"'") from None
        key_path = tuple(parents) + (last,)
        set_by[key_path] = item
        # the value is the --set's now, whatever the file wrote under it; sections it made
        # (a misspelt `trian.lr`) are its too
        origin = {k: v for k, v in origin.items() if k[:len(key_path)] != key_path}
        for n in range(1, len(key_path) + 1):
            origin.setdefault(key_path[:n], f"--set {item!r}")
    cfg = _build(Config, doc, (), origin)
    _check_model_keys(cfg.model, origin)
    cfg.origin = origin  # not a field (never saved): check_config's errors name file:line
    return cfg


def _check_model_keys(model: dict, origin: dict[tuple, str]) -> None:
    """A misspelt `model` key, named where it was written as any other section's is. TRMConfig
    found it only after the dataset had loaded, without the file's line or a suggestion."""
    known = [f.name for f in dataclasses.fields(TRMConfig)]
    unknown = sorted(str(k) for k in model if k not in known)
    if unknown:
        # the sizes the dataset fixes are accepted (when they match it) but never suggested:
        # a config leaves them out
        settable = sorted(k for k in known if k not in FROM_DATASET)
        raise PtrmError(f"{where_set(origin, ('model', unknown[0]))}config section model: unknown "
                        f"key(s) {', '.join(unknown)}{did_you_mean(unknown, settable)}",
                        hint=f"known keys: {', '.join(settable)}")


def _key_lines(text: str) -> dict[tuple, int]:
    """The 1-based line of every key of a YAML document, by its path of (str) keys: a wrong key
    or value is then reported as `file:line`, as a YAML syntax error is."""
    import yaml

    lines: dict[tuple, int] = {}

    def walk(node, path: tuple) -> None:
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                if isinstance(key, yaml.ScalarNode):
                    lines[path + (key.value,)] = key.start_mark.line + 1
                    walk(value, path + (key.value,))

    walk(yaml.compose(text, Loader=yaml.SafeLoader), ())
    return lines


def where_set(origin: dict[tuple, str], path: tuple) -> str:
    """'FILE:LINE: ' (or "--set 'K=V': ") of the key at `path`, else of its nearest section
    that has one; '' for keys from no file (a `base` config, a default)."""
    for n in range(len(path), 0, -1):
        if path[:n] in origin:
            return f"{origin[path[:n]]}: "
    return ""


def _load_yaml(text: str):
    """yaml.safe_load, refusing a key given twice in one mapping (PyYAML keeps the last one
    silently: a second `train:` section would drop the first without a word)."""
    import yaml

    class UniqueKeys(yaml.SafeLoader):
        def construct_mapping(self, node, deep=False):
            seen = set()
            for key_node, _ in node.value:
                key = self.construct_object(key_node, deep=deep)
                if key in seen:
                    raise yaml.constructor.ConstructorError(
                        None, None, f"key {key!r} appears twice in one section",
                        key_node.start_mark)
                seen.add(key)
            return super().construct_mapping(node, deep)

    return yaml.load(text, Loader=UniqueKeys)


def _yaml_where(path: Path, e) -> str:
    """`file:line:column` of a YAML error (PyYAML's own message names "<unicode string>")."""
    mark = getattr(e, "problem_mark", None)
    return f"{path}:{mark.line + 1}:{mark.column + 1}" if mark is not None else str(path)


def _merge(a: dict, b: dict) -> dict:
    out = dict(a)
    for k, v in b.items():
        out[k] = _merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def _build(cls, doc, path: tuple, origin: dict[tuple, str]):
    where = ".".join(path)
    if not isinstance(doc, dict):
        raise PtrmError(f"{where_set(origin, path)}config {where or 'file'}: expected a mapping, "
                        f"got {doc!r}",
                        hint=f"{where or 'a config'} holds `key: value` lines; {REFERENCE}")
    hints = typing.get_type_hints(cls)
    names = {f.name for f in dataclasses.fields(cls)}
    # str(): YAML keys may be numbers or booleans (`1: 2`, `yes: 3`)
    unknown = sorted(str(k) for k in set(doc) - names)
    if unknown:
        raise PtrmError(f"{where_set(origin, path + (unknown[0],))}config"
                        f"{' section ' + where if where else ''}: unknown key(s) "
                        f"{', '.join(unknown)}{did_you_mean(unknown, sorted(names))}",
                        hint=f"known keys: {', '.join(sorted(names))}")
    kwargs = {}
    for name, value in doc.items():
        hint = hints[name]
        if dataclasses.is_dataclass(hint):
            kwargs[name] = _build(hint, value or {}, path + (name,), origin)
        else:
            try:
                kwargs[name] = _coerce(value, hint, ".".join(path + (name,)))
            except PtrmError as e:
                key = ".".join(path + (name,))
                raise PtrmError(f"{where_set(origin, path + (name,))}{e}",
                                hint=e.hint or _value_hint(cls, name, key)) from None
    return cls(**kwargs)


# keys whose default is no value to fall back on
_REQUIRED_HINTS = {
    "data.path": "data.path is the dataset folder, one made by `ptrm build-data` (--set "
                 "data.path=DIR)",
    "run_dir": "run_dir is the folder the run writes (--set run_dir=runs/NAME); left out, it "
               "is runs/<config file name>",
}


def _value_hint(cls, name: str, key: str) -> str:
    """What to do about a wrong value: its default (leaving the key out gives it), and where
    the keys are described."""
    if key in _REQUIRED_HINTS:
        return f"{_REQUIRED_HINTS[key]}; {REFERENCE}"
    default = _default_of(cls, name)
    return f"leave {key} out for its default ({_yaml_text(default)}); {REFERENCE}"


def _hint_for_key(key: str) -> str:
    """_value_hint of a dotted key of Config (check_config's errors name keys, not classes)."""
    *sections, name = key.split(".")
    cls = Config
    for section in sections:
        cls = typing.get_type_hints(cls)[section]
    return _value_hint(cls, name, key)


def _default_of(cls, name: str):
    f = next(f for f in dataclasses.fields(cls) if f.name == name)
    if f.default is not dataclasses.MISSING:
        return f.default
    return f.default_factory() if f.default_factory is not dataclasses.MISSING else None


def _yaml_text(v) -> str:
    """A default as a config file writes it: null, true, 3e-4, text unquoted."""
    if v is None:
        return "null"
    if isinstance(v, bool):
        return str(v).lower()
    return repr(v) if not isinstance(v, str) else (v or '""')


def _coerce(value, hint, key: str):
    args = typing.get_args(hint)
    if value is None:
        if type(None) in args:
            return None
        raise PtrmError(f"config {key}: must not be null")
    target = next((a for a in args if a is not type(None)), hint) if args else hint
    if target is dict:
        if not isinstance(value, dict):
            raise PtrmError(f"config {key}: expected a mapping, got {value!r}")
        return dict(value)
    if target is bool:
        if isinstance(value, bool):
            return value
    elif target is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
    elif target is float:
        number = None
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            number = float(value)
        elif isinstance(value, str):  # PyYAML reads 1e-4 (no dot) as a string
            try:
                number = float(value)
            except ValueError:
                pass
        if number is not None:
            if math.isfinite(number):  # a NaN lr trains to NaN weights without a word
                return number
            raise PtrmError(f"config {key}: expected a finite number, got {value!r}")
    elif target is str:
        if isinstance(value, (str, int, float)) and not isinstance(value, bool):
            return str(value)
    raise PtrmError(f"config {key}: expected {_TYPE_WORDS.get(target, target)}, "
                    f"got {value!r}")


# a config's types as its writer reads them (not Python's names)
_TYPE_WORDS = {int: "a whole number", float: "a number", bool: "true or false", str: "text"}


def check_config(cfg: Config) -> None:
    """Values that parse but make no sense. Each is named with where it was written (the
    file's line or the --set), as a misspelt key is, all of them in one message."""
    t = cfg.train
    bad: list[tuple[str, str]] = []  # (dotted key, what is wrong with its value)

    def need(ok: bool, key: str, what: str) -> None:
        if not ok:
            bad.append((key, what))

    need(cfg.data.sampling in ("group", "example"), "data.sampling",
         f"must be group or example, not {cfg.data.sampling!r}")
    need(t.recipe in RECIPES, "train.recipe",
         f"must be one of {', '.join(RECIPES)}, not {t.recipe!r}")
    need(t.warmup_steps_max is None or t.warmup_steps_max >= 0, "train.warmup_steps_max",
         "must be >= 0 (or null: halt_max_steps - 1)")
    need(t.loss_type in LOSS_TYPES, "train.loss_type",
         f"must be one of {', '.join(LOSS_TYPES)}, not {t.loss_type!r}")
    need(cfg.seed >= 0, "seed", "must be >= 0")
    for key in ("lr", "puzzle_emb_lr", "weight_decay", "puzzle_emb_weight_decay",
                "q_loss_weight"):
        need(getattr(t, key) >= 0, f"train.{key}", "must be >= 0")
    # the cosine's floor: above 1 the lr would rise to it
    need(0 <= t.lr_min_ratio <= 1, "train.lr_min_ratio",
         "must be in [0, 1] (1: constant after warm-up)")
    for key in ("beta1", "beta2"):
        need(0 <= getattr(t, key) < 1, f"train.{key}", "must be in [0, 1)")
    need(cfg.data.val_limit is None or cfg.data.val_limit >= 1, "data.val_limit",
         "must be >= 1 (or null: all)")
    need(t.global_batch_size >= 1, "train.global_batch_size", "must be >= 1")
    need(t.max_steps is None or t.max_steps >= 0, "train.max_steps", "must be >= 0")
    need(0 <= t.ema_rate < 1, "train.ema_rate", "must be in [0, 1)")
    need(t.lr_warmup_steps >= 0, "train.lr_warmup_steps", "must be >= 0")
    need(cfg.log.every >= 1, "log.every", "must be >= 1")
    need(cfg.log.progress in ("auto", "bar", "lines", "none"), "log.progress",
         "must be auto, bar, lines or none")
    need(cfg.checkpoint.keep >= 1, "checkpoint.keep", "must be >= 1")
    for key, v in (("eval.every_steps", cfg.eval.every_steps),
                   ("eval.batch_size", cfg.eval.batch_size), ("eval.steps", cfg.eval.steps),
                   ("checkpoint.every_steps", cfg.checkpoint.every_steps)):
        need(v is None or v >= 1, key, "must be >= 1 (or null)")
    need(cfg.checkpoint.max_file_mb > 0, "checkpoint.max_file_mb", "must be > 0")
    need(cfg.resume.rewarmup_steps >= 0, "resume.rewarmup_steps", "must be >= 0")
    need(cfg.eval.interval > 0, "eval.interval", "must be > 0")
    need(t.epochs > 0 or t.max_steps is not None, "train.epochs", "must be > 0")
    need(bool(cfg.run_dir), "run_dir", "is not set")
    if bad:
        origin = getattr(cfg, "origin", {})
        at = [where_set(origin, tuple(key.split("."))) for key, _ in bad]
        if len(bad) == 1:  # the form of a misspelt key's error: FILE:LINE: config: ...
            raise PtrmError(f"{at[0]}config: {bad[0][0]} {bad[0][1]}",
                            hint=_hint_for_key(bad[0][0]))
        raise PtrmError(f"config: {len(bad)} values make no sense:\n" + "\n".join(
            f"  {a}{key} {what}" for a, (key, what) in zip(at, bad)),
            hint=f"leave a key out for its default; {REFERENCE}")


def model_config(cfg: Config, dataset: Dataset) -> TRMConfig:
    """The TRM config: the `model` section plus the sizes the dataset fixes."""
    derived = {"vocab_size": len(dataset.vocab), "seq_len": dataset.seq_len,
               "num_puzzle_identifiers": dataset.num_puzzle_ids}
    for k in FROM_DATASET:
        if k in cfg.model and cfg.model[k] != derived[k]:
            raise PtrmError(f"config model.{k}={cfg.model[k]} but the dataset has {derived[k]}",
                            hint=f"leave model.{k} out: it comes from the dataset")
    try:
        return TRMConfig.from_dict({**cfg.model, **derived})
    except TypeError as e:
        raise PtrmError(f"config model: {e}", hint=REFERENCE) from None
    except PtrmError as e:  # TRMConfig's own checks: say where the value was written
        raise PtrmError(f"{_model_value_at(cfg, str(e))}{e}",
                        hint=e.hint or f"model.* keys are TRMConfig's; {REFERENCE}") from None


def _model_value_at(cfg: Config, message: str) -> str:
    """'FILE:LINE: ' (or the --set) of the model key a TRMConfig error is about. A message may
    name several (hidden_size 32 is not divisible by num_heads 3): one a --set gave is the
    change that broke a config that worked, so it is named before the file's first."""
    origin = getattr(cfg, "origin", {})
    named = [k for k in dict.fromkeys(re.findall(r"\w+", message))
             if k in cfg.model and ("model", k) in origin]
    by_set = [k for k in named if origin[("model", k)].startswith("--set ")]
    return where_set(origin, ("model", (by_set or named)[0])) if named else ""
