"""The glue between codecs and the engine, shared by `ptrm solve` and `ptrm eval`.

    text --codec--> puzzle --encode--> tokens --sampler--> K predictions + Q
         --decode--> solutions --verify--> verdicts --select--> one answer

The engine sees token arrays only; this module is the one place that hands tokens to a codec
and back. Decoding and verifying run in Python, once per rollout, and rollouts often agree, so
verdicts are cached per distinct prediction (`Verifier`).

`solve_puzzle` runs the K rollouts in waves on the fast engine (engine/fast.py): with the
verified selector it stops as soon as a rollout satisfies the rules, checked at the end of each
wave or every few steps (adaptive early stop), which is what makes a CPU solve affordable.
Rollout k's noise depends only on (seed, puzzle, k), so waves are a prefix of one run: a solve in
waves of 4 runs exactly the first rollouts of a solve in one wave of K, and one wave of K is
exactly `sampler.sample(..., seed=seed)`.
"""

from __future__ import annotations

import codecs
import json
import math
import numbers
import os
import re
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

import numpy as np
import torch

from . import codec as registry
from .codec import Codec, Family, Parsed, Puzzle, Solution, Violation
from .errors import CodecNotFound, OtherType, ParseError, PtrmError, UsageError, check_counts, \
    json_problem, load_json
from .vocab import Vocab

#: what `ptrm solve` reads at most from a file or stdin (a puzzle is a few KB)
MAX_INPUT_BYTES = 1 << 20
SELECTORS = ("verified", "best_q", "mode", "q_vote")  # metrics.SELECTORS, solve's order
#: memory for one forward chunk when --memory is not given: small on CPU, most of a GPU
DEFAULT_CPU_MEMORY = 2 << 30
GPU_MEMORY_FRACTION = 0.6
#: the noise scale when neither --sigma nor the checkpoint says one (the paper's PPBench value)
DEFAULT_SIGMA = 0.2
#: steps between rules checks when stopping early, on any device: a rollout that satisfies the
#: rules at one step can leave them by the last (on validation, stopping at the first valid
#: step solved 91.7% against 88.3% valid at step 48: docs/PERFORMANCE.md, the H100 curve),
#: and a check is one small read of the answers
CHECK_EVERY = 1
#: how text output says where σ came from (LoadedModel.noise_choice; JSON: "sigma_source")
SIGMA_NOTES = {"option": "", "model": " (the model's)", "default": " (default)"}


# -- reading the user's input -----------------------------------------------------------------

_FILE_EXT = re.compile(r"\.[A-Za-z][\w]{0,7}$")
_SCHEME = re.compile(r"^\s*https?://", re.I)
#: what -c takes, for a checkpoint that cannot be loaded and says no more
CHECKPOINT_HINT = ("-c takes a checkpoint folder (`ptrm train`'s checkpoints/best, `ptrm "
                   "convert`'s output) or an official TRM step_N file")
# a file name mistyped, not a one-line puzzle: those (an 81-character sudoku) are digits and
# dots, never a run of three letters
_NAME = re.compile(r"[\w.-]*[A-Za-z]{3}[\w.-]*")


def read_input(spec: str) -> tuple[str, str]:
    """`INPUT` of `ptrm solve` -> (text, source name). A file path, `-` for stdin, a puzz.link
    URL (the URL carries the puzzle; nothing is downloaded) or, for one-liners such as an
    81-character sudoku, the puzzle text itself."""
    if spec == "-":
        if _is_terminal(sys.stdin):  # typed or pasted: a silent wait looks like a hang
            from .console import err_console

            err_console.print("reading the puzzle from stdin: paste or type it, then press "
                              "Ctrl-D on a line of its own (Ctrl-Z, Enter on Windows)",
                              style="dim", highlight=False, soft_wrap=True)
        data = sys.stdin.buffer.read(MAX_INPUT_BYTES + 1) if hasattr(sys.stdin, "buffer") \
            else sys.stdin.read(MAX_INPUT_BYTES + 1)
        return _text(data, "<stdin>"), "<stdin>"
    if not spec.strip():  # Path("") is the current folder: say what was expected instead
        raise PtrmError("empty INPUT: expected a puzzle file, a puzz.link URL, '-' for stdin, "
                        "or the puzzle itself (e.g. an 81-character sudoku)")
    path = Path(spec).expanduser()
    try:  # not only regular files: a pipe (`<(...)`, a FIFO) or a device is read the same
        is_dir, exists = path.is_dir(), path.exists()
    except (OSError, ValueError):  # a name too long, or with a NUL: not a file
        is_dir = exists = False
    if is_dir:
        raise PtrmError(f"{spec} is a directory, not a puzzle file",
                        hint="pass a puzzle file in it, a quoted puzz.link URL, or - to read "
                             "stdin")
    if exists:
        try:
            with open(path, "rb") as f:
                data = f.read(MAX_INPUT_BYTES + 1)
        except OSError as e:
            raise PtrmError(f"cannot read {spec}: {e.strerror or e}") from None
        return _text(data, spec), spec
    if spec.lstrip().startswith("{") and spec.rstrip().endswith("}"):
        # a JSON record (`ptrm generate`'s lines): its text field's "\n" escapes and a URL's
        # slashes are not a path's
        return _text(spec, "<argument>"), "<argument>"
    # puzz.link/p?type/..., any host; a missing file's name with a '?' (a shell glob that
    # matched nothing: puzzles/sudok?.txt) has no '/' after it, nor a scheme or "/p" before it
    before, _, after = spec.partition("?")
    if after and "\n" not in spec and ("/" in after or _SCHEME.match(spec) or before.endswith("/p")):
        return spec.strip(), "URL"
    if _SCHEME.match(spec):
        raise PtrmError(f"{spec}: not a puzzle URL (no '?type/...' part)",
                        hint="ptrm reads puzz.link-style URLs, which carry the puzzle "
                             "itself; it does not download files")
    if "\n" in spec or (len(spec) >= 16 and "/" not in spec and "\\" not in spec
                        and not _FILE_EXT.search(spec) and not _NAME.fullmatch(spec)):
        return _text(spec, "<argument>"), "<argument>"  # `"$(cat file)"`: as the file reads
    shown = spec if len(spec) <= 80 else f"{spec[:60]}... ({len(spec)} characters)"
    raise PtrmError(f"{shown}: no such file",
                    hint="pass a puzzle file, a quoted puzz.link URL, or - to read stdin")


def _is_terminal(stream) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # no stdin, or a closed one
        return False


def _text(data: bytes | str, source: str) -> str:
    if len(data) > MAX_INPUT_BYTES:
        raise PtrmError(f"{source}: more than {MAX_INPUT_BYTES // 1024} KB; a puzzle file is "
                        "a few KB", hint="pass one puzzle at a time; `ptrm eval` takes datasets")
    # line ends as Windows (CRLF) and classic Mac (CR alone) write them read as newlines
    return _decoded(data, source).replace("\r\n", "\n").replace("\r", "\n")


def _decoded(data: bytes | str, source: str) -> str:
    if isinstance(data, str):  # the argument itself: a BOM comes with `"$(cat file)"`
        return data.removeprefix("\ufeff")
    # UTF-32's little-endian BOM starts with UTF-16's: read as UTF-16 it was a NUL between
    # each character, and "cannot tell the puzzle type"
    encoding = "utf-32" if data[:4] in (codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE) else \
        "utf-16" if data[:2] in (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE) else None
    if encoding is not None:  # Windows "Unicode" text
        try:
            return data.decode(encoding)
        except UnicodeDecodeError as e:
            raise PtrmError(f"{source} is not {encoding.upper()} text, though it starts like it "
                            f"(byte {e.start})") from None
    if b"\x00" in data:
        raise PtrmError(f"{source} is a binary file, not puzzle text")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise PtrmError(f"{source} is not UTF-8 text (byte {e.start})") from None


def parse_puzzle(text: str, *, codec: str | None = None,
                 source: str | None = None) -> tuple[Codec, Parsed]:
    """Puzzle text (URL, pzprv3, grid, or one JSON dataset record) -> (codec, parsed).
    Every failure is a ParseError / PtrmError naming the source."""
    text = _unquoted_url(text)
    stripped = text.strip()
    try:
        if stripped.startswith("{"):
            return _parse_record(stripped, codec=codec, source=source)
        return registry.parse(text, codec=codec, source=source)
    except CodecNotFound as e:
        if codec is not None:  # --codec named it: the option is wrong, not the file
            raise
        # the input names the type (a URL, a pzprv3 file, a record's pid): say where (the
        # line, where there are several)
        several = "\n" in stripped and not stripped.startswith("{")
        line = _type_line(text) if several else None
        raise ParseError(str(e), source=source, line=line, hint=e.hint) from None
    except PtrmError:
        raise
    except (ValueError, IndexError, KeyError, TypeError) as e:  # a codec choking on odd input
        raise ParseError(f"cannot read this puzzle ({type(e).__name__}: {e})",
                         source=source) from None


def _unquoted_url(text: str) -> str:
    """A URL whose part after '?' came percent-encoded (`p?akari%2F10%2F10%2F...`, as a form
    or a redirect link passes it on) decoded, so that its type and size are read, and one
    pasted inside a pair of quotes freed of them; any other text as it is (a '%' is also a
    number16 character, so only a query without a '/' of its own but with an encoded one is
    decoded)."""
    from urllib.parse import unquote

    line = text.strip()
    if len(line) > 2 and line[0] == line[-1] and line[0] in "'\"" and "\n" not in line \
            and _SCHEME.match(line[1:]):  # quoted twice ("'https://...'"): the quotes are no URL's
        line = text = line[1:-1].strip()
    head, mark, query = line.partition("?")
    if not mark or "\n" in line or line.startswith("{") or "/" in query \
            or "%2f" not in query.lower():
        return text
    return head + mark + unquote(query)


def _type_line(text: str) -> int:
    """The line that names the type of a URL or pzprv3 text: the first one that is not blank,
    or for pzprv3 the one after it (past a `v:` variant line), as `registry.detect` reads."""
    lines = text.split("\n")
    k = next((i for i, ln in enumerate(lines) if ln.strip()), 0)
    if lines[k].strip().startswith("pzprv3"):
        k = next((i for i in range(k + 1, len(lines))
                  if lines[i].strip() and not lines[i].strip().startswith("v:")), k)
    return k + 1


def _json_hint(text: str, e: json.JSONDecodeError) -> str:
    """What to do about a record that is not JSON. Text that runs out before the parser is
    done (an unterminated string has no closing quote anywhere after it) was cut short, most
    often by a copy of part of a line; any other mistake is in the JSON itself."""
    what = "text that starts with '{' is read as one JSON record (a line of a .jsonl file) " \
           "or an ARC task"
    if e.pos >= len(text.rstrip()) or e.msg.startswith("Unterminated string"):
        return f"the text ends before its JSON does: was it cut short? {what}, given whole"
    return f"{what}: correct it at that column"


def _parse_record(text: str, *, codec: str | None, source: str | None) -> tuple[Codec, Parsed]:
    """A PPBench JSONL record, or any record a codec's `from_record` reads."""
    try:
        record = load_json(text)
    except json.JSONDecodeError as e:
        if e.msg == "Extra data":  # a JSONL file of several records
            raise ParseError("expected one puzzle: another JSON record starts here",
                             source=source, line=e.lineno,
                             hint="`ptrm solve` takes one puzzle; `ptrm eval --split FILE` "
                                  "takes a file of them") from None
        raise ParseError(json_problem(e), source=source, line=e.lineno,
                         hint=_json_hint(text, e)) from None
    if not isinstance(record, dict):
        raise ParseError("expected one JSON object (a dataset record)", source=source)
    name = codec or record.get("pid") or record.get("type")
    if not name:
        try:  # JSON that is a puzzle format of its own (an ARC task), not a dataset record
            c = registry.detect(text, source=source)
        except PtrmError:
            raise ParseError("this JSON record does not say its puzzle type ('pid' or 'type')",
                             source=source, hint="pass --codec TYPE") from None
        return registry.parse(text, codec=c.name, source=source)  # its errors say what is wrong
    c = registry.get(str(name))
    try:
        with registry.contract(c, "from_record", reading="record", source=source):
            got = c.from_record(record, source=source)
    except OtherType as e:
        if not codec:  # the record's own field chose the codec, not --codec
            field = "pid" if record.get("pid") else "type"
            e.hint = (f"the record's {field!r} says {name!r}: correct it, or pass --codec "
                      f"{e.found} to read it as what it is")
        elif e.hint is None:
            e.hint = registry.other_type_hint(e)
        raise
    if not (isinstance(got, tuple) and len(got) == 2 and isinstance(got[0], Puzzle)):
        raise registry.bug(c, f"from_record returned {type(got).__name__}, not (puzzle, "
                              "solution)")
    return c, Parsed(got[0], got[1], "record")


# -- the model ----------------------------------------------------------------------------------

@dataclass
class LoadedModel:
    model: torch.nn.Module  # TRM, eval mode, on `device`
    vocab: Vocab
    meta: dict
    path: str
    device: str

    @property
    def config(self):
        return self.model.config

    @property
    def sigma(self) -> float:
        """The σ this checkpoint was validated at (config.json `meta.sigma`, written when σ
        was chosen on validation), else DEFAULT_SIGMA: solve and eval use it when --sigma is
        not given."""
        s = self.meta.get("sigma")
        if s is None:
            return DEFAULT_SIGMA
        if isinstance(s, bool) or not isinstance(s, (int, float)) or not math.isfinite(s) \
                or s < 0:
            raise PtrmError(f"{self.path}: config.json meta.sigma is {s!r}; expected a number "
                            ">= 0 (the noise scale chosen on validation)",
                            hint="fix or remove it, or pass --sigma")
        return float(s)

    @property
    def perturb(self) -> str:
        """Where this checkpoint's σ puts the noise (config.json `meta.perturb`, recorded with
        `meta.sigma` by scripts/ship_model.py), else "z", the paper's latent."""
        from .engine.sampler import PERTURB

        p = self.meta.get("perturb", "z")
        if p not in PERTURB:
            raise PtrmError(f"{self.path}: config.json meta.perturb is {p!r}; expected one of "
                            f"{', '.join(PERTURB)} (where meta.sigma puts the noise)",
                            hint="fix or remove it, or pass --sigma and --perturb")
        return p

    def noise_choice(self, sigma: float | None, perturb: str | None) \
            -> tuple[float, str, str]:
        """(σ, where σ came from, where the noise goes). The target: --perturb, else the
        checkpoint's. σ: --sigma ("option"), else the checkpoint's ("model") when it was chosen
        for that target, else DEFAULT_SIGMA ("default") when the checkpoint records none. A σ
        chosen for z is no σ for y (2.0 on z solves; 2.0 on y solves nothing:
        docs/INFERENCE.md, "Where the noise goes"), so that mix is refused, not run."""
        from .engine.sampler import check_noise

        target = perturb or self.perturb
        # the caller's σ and target (a library call skips the CLI's checks); the model's own
        # σ was checked when its config.json was read
        check_noise(DEFAULT_SIGMA if sigma is None else sigma, target)
        if sigma is not None:
            return sigma, "option", target
        if self.meta.get("sigma") is None:
            return DEFAULT_SIGMA, "default", target
        if target != self.perturb:
            raise PtrmError(
                f"{self.path}: its σ {self.sigma:g} was chosen for noise on "
                f"{self.perturb}; --perturb {target} needs a σ of its own",
                hint=f"pass --sigma too, chosen on validation with `ptrm eval --split val "
                     f"--data DIR --perturb {target} --sigma ...` (docs/INFERENCE.md, \"Where "
                     f"the noise goes\")")
        return self.sigma, "model", target


def outside_training(loaded: LoadedModel, puzzle: Puzzle) -> str | None:
    """Why this puzzle is of a kind the checkpoint never trained on, when its config.json says
    what it trained on (`meta.trained_on`, checkpoint.py; a "*" entry stands for the types it
    does not name); None when it is, or when the checkpoint does not say."""
    from .engine.checkpoint import trained_on_problem
    from .engine.data import ANY_SIZE

    seen = loaded.meta.get("trained_on")
    if seen is None:
        return None
    if (why := trained_on_problem(seen)) is not None:
        raise PtrmError(f"{loaded.path}: config.json meta.trained_on is {seen!r}: {why}",
                        hint="fix or remove it (it only adds a note)")
    if not seen:
        return None
    kept = seen.get(puzzle.type, seen.get("*"))
    if kept is None:
        return (f"this model did not train on {puzzle.type} (it trained on "
                f"{', '.join(sorted(seen))}): it may not find a valid answer")
    if kept.lower() == ANY_SIZE:
        return None
    rows, cols = (int(n) for n in kept.lower().split("x"))  # ROWSxCOLS; "09x09" is 9x9 too
    if (rows, cols) != (puzzle.rows, puzzle.cols):
        trained = registry.size_name(rows, cols)
        return (f"this model trained on {trained} {puzzle.type} only, and this one is "
                f"{registry.size_name(puzzle.rows, puzzle.cols)}: it may not find a valid "
                "answer")
    return None


def cpu_threads() -> int:
    """All cores, unless other processes already keep them busy: then one thread, because
    torch's OpenMP threads wait for each other at every operation and a busy machine makes
    that wait long (measured: 6x slower with 2 threads than with 1 at load 12 on 2 cores).
    What `ptrm solve` gives `torch.set_num_threads` on a CPU unless --threads says."""
    cores = os.cpu_count() or 1
    try:
        load = os.getloadavg()[0]
    except (OSError, AttributeError):
        return cores
    return max(1, min(cores, int(cores - load + 0.5)))


def resolve_checkpoint(arg: str | Path | None) -> Path:
    """--checkpoint, else the bundled model; a clear usage error when there is neither."""
    if arg is not None and str(arg) != "":
        return Path(arg).expanduser()
    from .models import default_checkpoint

    default = default_checkpoint()
    if default is None:
        raise PtrmError("no model: this installation has no bundled checkpoint "
                        "(ptrm_cli/models/default is missing)",
                        hint="pass --checkpoint DIR (a folder written by `ptrm train`, or an "
                             "official TRM step_N file)")
    return default


def load_model(arg: str | Path | None, device: str = "auto", *,
               official_vocab: Vocab | None = None,
               layouts: Sequence[Family] = ()) -> LoadedModel:
    """`arg`: a checkpoint (None: the bundled model); `device`: as --device takes it ("auto":
    CUDA, else MPS, else the CPU).
    `official_vocab`: the token table to give an official step_N file, which has none of its
    own (the caller knows the family from the data: ARC for an ARC task or dataset).
    `layouts`: the families the data may be in (the puzzle's codec's); an official file whose
    sequence length neither its weights nor its all_config.yaml say takes the one of these
    with its vocabulary size (a TRM-Att run opened away from its dataset)."""
    from .engine.checkpoint import is_official_checkpoint, load_checkpoint

    from .devices import resolve_device

    device = resolve_device(device)
    path = resolve_checkpoint(arg)
    official = path.is_file() and is_official_checkpoint(path)
    vocab = official_vocab if official else None

    def layout(V: int) -> tuple[int, str] | None:
        fits = {f.seq_len: f.name for f in layouts if len(f.vocab) == V}
        return next(((n, f"family {name}") for n, name in fits.items()), None) \
            if len(fits) == 1 else None

    try:
        model, vocab, meta = load_checkpoint(path, device=device, vocab=vocab,
                                             layout=layout if official else None)
    except PtrmError as e:  # "X: no such file or directory" said what is wrong, not what is right
        if e.hint is None:
            e.hint = CHECKPOINT_HINT
        raise
    except (OSError, ValueError, KeyError, RuntimeError) as e:
        raise PtrmError(f"cannot load checkpoint {path}: {e}") from None
    # Inference sums RMSNorm's squares in a fixed order: the compiled engine on a GPU then
    # gives the eager loop's rollouts bit for bit, 0.5% slower on an H100 (engine/norm_kernel.py;
    # docs/PERFORMANCE.md, "Session 23"). `ptrm eval --no-exact` and `bench --no-exact` undo it.
    model.eval().fixed_order_norm()
    return LoadedModel(model, vocab, meta, str(path), device)


def _other_layout(loaded: LoadedModel) -> str:
    """For an official model that fits none of a puzzle's families: which installed types it
    fits, if any (a model for another kind of puzzle; no table to attach fixes that)."""
    from . import codec as registry

    V, L = len(loaded.vocab), loaded.config.seq_len
    types = sorted({reg.codec.name for reg in registry.registered().values()
                    for f in reg.codec.families if len(f.vocab) == V and f.seq_len == L})
    if types:
        return f"it is a model for {', '.join(types)} puzzles: give it one of those"
    if not _step_file(loaded):  # converted: the length may be the conversion's
        return ("no installed puzzle type has that layout; if its step_N file is a model for "
                "these puzzles, convert it again with --family NAME, which sets the length")
    return ("no installed puzzle type has that layout: a model for a type whose plugin is not "
            "installed (`ptrm codecs` lists the installed ones)")


def family_for(codec: Codec, loaded: LoadedModel) -> Family:
    """The codec family this checkpoint was trained for; a clear error when the model's
    vocabulary or sequence length is not one the codec can encode into. An official step_N
    file has no token table: it takes the one family of the codec with its vocabulary size
    and sequence length (TRM's own layouts, e.g. sudoku-native, are id for id)."""
    if has_no_table(loaded):
        fits = [f for f in codec.families
                if len(f.vocab) == len(loaded.vocab) and f.seq_len == loaded.config.seq_len]
        if len(fits) != 1:
            what = ("an official TRM checkpoint" if _step_file(loaded) else
                    "an official TRM checkpoint converted without --family")
            layouts = ", ".join(f"{f.name}: {len(f.vocab)} tokens, {f.seq_len} positions"
                                for f in codec.families)
            raise PtrmError(
                f"{loaded.path} is {what} ({len(loaded.vocab)} tokens, "
                f"{loaded.config.seq_len} positions) with no token table, and "
                + ("none" if not fits else "more than one") + f" of {codec.name}'s token "
                f"families has that layout ({layouts})",
                hint=_other_layout(loaded) if not fits else
                (f"`ptrm convert {loaded.path} --family NAME --out DIR` attaches one"
                 if _step_file(loaded) else
                 f"convert its step_N file again with --family NAME (`ptrm convert "
                 f"step_N --family NAME --out DIR`; {loaded.path} was converted "
                 "without one)"))
        adopt_vocab(loaded, fits[0].vocab)
    if loaded.vocab.family not in {f.vocab.family for f in codec.families} and _bundled(loaded):
        from .models import not_for  # said as `ptrm codecs TYPE` says it, not "-c" advice alone

        raise PtrmError(not_for(codec.name, loaded.vocab.family,
                                [f.name for f in codec.families]),
                        hint=f"pass -c CHECKPOINT, a model trained on {codec.name}: `ptrm "
                             f"build-data SOURCES --family {codec.families[0].name}`, then "
                             "`ptrm train` (docs/PLUGINS.md, section 5)")
    family = codec.family_for(loaded.vocab)
    if family.seq_len != loaded.config.seq_len:
        raise PtrmError(f"the model reads {loaded.config.seq_len} tokens but {codec.name}'s "
                        f"{family.name!r} family has {family.seq_len} "
                        f"({registry.size_name(family.rows, family.cols)})")
    return family


def _step_file(loaded: LoadedModel) -> bool:
    """Whether the model was loaded from an official step_N file itself, not from a converted
    folder (given as the folder or as its model.safetensors)."""
    path = Path(loaded.path)
    return path.is_file() and path.suffix != ".safetensors"


def _bundled(loaded: LoadedModel) -> bool:
    """Whether `loaded` is the bundled model (the user passed no -c)."""
    from .models import default_checkpoint

    default = default_checkpoint()
    return default is not None and Path(loaded.path).resolve() == default.resolve()


def has_no_table(loaded: LoadedModel) -> bool:
    """An official step_N file loaded without a vocabulary: it holds the generic `trm-v{V}`
    placeholder until a codec family or a dataset gives it theirs (`adopt_vocab`)."""
    from .engine.checkpoint import placeholder_vocab

    return (loaded.meta.get("source") == "official-trm"
            and loaded.vocab == placeholder_vocab(len(loaded.vocab)))


def reads_family(loaded: LoadedModel, family: Family) -> bool:
    """Whether the model reads this family's tokens: its table's family, or, for an official
    step file without a table, a family of its layout (size and length: TRM's layouts are id
    for id, as solve and eval take it). By table name alone an official Sudoku-MLP read no
    golden type, where its converted copy read sudoku."""
    if has_no_table(loaded):
        return len(family.vocab) == len(loaded.vocab) and family.seq_len == loaded.config.seq_len
    return family.vocab.family == loaded.vocab.family


def adopt_vocab(loaded: LoadedModel, vocab: Vocab) -> None:
    """Give an official model without a table the vocabulary of its data (same size: the
    weights fix V; whether the ids mean the same is what TRM's own layouts guarantee)."""
    if has_no_table(loaded) and len(vocab) == len(loaded.vocab):
        loaded.vocab = vocab


# -- memory ------------------------------------------------------------------------------------

_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(?:i?b)?\s*$", re.I)


def parse_memory(text: str | None) -> int | None:
    """'2GB', '512M', '1.5g', '800000000' -> bytes (powers of 1024); None stays None."""
    if text is None or str(text).strip() in ("", "auto"):
        return None
    m = _SIZE.match(str(text))
    if not m or float(m.group(1)) <= 0:
        raise PtrmError(f"--memory {text!r}: expected a size such as 2GB, 512MB or auto")
    scale = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}[m.group(2).lower()]
    return int(float(m.group(1)) * scale)


def default_memory(device: str) -> int:
    if device.startswith("cuda"):
        free, _ = torch.cuda.mem_get_info(torch.device(device))
        return int(free * GPU_MEMORY_FRACTION)
    return DEFAULT_CPU_MEMORY


def bytes_per_row(cfg, D: int, *, record_steps: bool = False,
                  record_latents: bool = False) -> int:
    """A generous estimate of the memory one rollout needs in a forward chunk: carry, input
    embedding, one network application's temporaries (qkv, attention scores, SwiGLU), logits;
    plus what the sampler keeps per step when asked to record."""
    b = 2 if cfg.forward_dtype == "bfloat16" else 4
    S, H, I = cfg.total_len, cfg.hidden_size, cfg.inter_size
    live = S * (8 * H + 3 * I + cfg.vocab_size) + cfg.num_heads * S * S
    if cfg.mlp_t:
        live += 3 * H * cfg.inter_size_t
    total = live * b + 3 * S * H * 4  # float32 copies in RMSNorm / RoPE
    if record_steps:
        total += D * (cfg.seq_len * 2 + 4)
    if record_latents:
        total += D * S * H * 2
    return int(total * 1.5)


def plan_chunk_rows(cfg, K: int, D: int, memory: int, **record) -> int:
    """Rows (puzzles x K) per forward pass under `memory` bytes: a multiple of K (the sampler
    keeps a puzzle's rollouts together) and never less than one puzzle."""
    per_row = bytes_per_row(cfg, D, **record)
    return max(K, (memory // per_row) // K * K)


# -- verifying predictions ----------------------------------------------------------------------

@dataclass
class Verdict:
    valid: bool
    violations: list[Violation]
    solution: Solution


class Verifier:
    """Decode + verify predictions for one puzzle, once per distinct token sequence."""

    def __init__(self, codec: Codec, puzzle: Puzzle, family: Family):
        check_family(codec, family)
        self.codec, self.puzzle, self.family = codec, puzzle, family
        self._cache: dict[bytes, Verdict] = {}

    def __call__(self, tokens) -> Verdict:
        arr = np.ascontiguousarray(np.asarray(tokens, dtype=np.int64))
        if arr.shape != (self.family.seq_len,):  # else the codec's decode fails, blamed on it
            raise UsageError(f"a {self.family.name!r} answer is {self.family.seq_len} tokens, "
                             f"got shape {arr.shape}")
        key = arr.tobytes()
        hit = self._cache.get(key)
        if hit is None:
            with registry.contract(self.codec, "decode"):
                solution = self.codec.decode(self.puzzle, arr, self.family)
            violations = registry.violations_of(self.codec, self.puzzle, solution)
            hit = self._cache[key] = Verdict(not violations, violations, solution)
        return hit

    def valid(self, preds: torch.Tensor) -> torch.Tensor:
        """[K, L] predictions -> [K] bool rules verdicts."""
        rows = preds.cpu().numpy()
        return torch.tensor([self(r).valid for r in rows], dtype=torch.bool)

    def __len__(self) -> int:
        """Distinct predictions decoded and verified so far."""
        return len(self._cache)

    def answers(self, preds: torch.Tensor) -> torch.Tensor:
        """[K, L] predictions -> [K, 2 + rows*cols] decoded answers. Selecting by mode and
        counting agreement compare these, not raw tokens: tokens on cells that are not part of
        the answer (sudoku's padding, givens) may differ between rollouts that give the same
        answer.
        Each row starts with the answer's shape: an ARC answer's size is the model's to choose,
        so rollouts may give grids of different sizes (or none, 0x0), which could not be
        stacked; with the shape first, the padding after a smaller grid never makes two
        answers equal."""
        grids = [np.asarray(self(r).solution.grid) for r in preds.cpu().numpy()]
        flat = [np.concatenate((g.shape, g.reshape(-1))) for g in grids]  # [rows, cols] grids
        out = np.zeros((len(flat), max(len(f) for f in flat)), dtype=np.int64)
        for i, f in enumerate(flat):
            out[i, :len(f)] = f
        return torch.from_numpy(out)


def valid_matrix(verifiers: list[Verifier], preds: torch.Tensor) -> torch.Tensor:
    """[P, K, L] predictions, one verifier per puzzle -> [P, K] bool."""
    if len(verifiers) != preds.shape[0]:  # zip stopped at the shorter, silently
        raise UsageError(f"{len(verifiers)} verifiers for {preds.shape[0]} puzzles' predictions")
    if len(verifiers) == 0:
        return torch.zeros(preds.shape[:2], dtype=torch.bool)
    return torch.stack([v.valid(p) for v, p in zip(verifiers, preds)])


# -- solving one puzzle -------------------------------------------------------------------------

@dataclass
class SolveResult:
    codec: Codec
    puzzle: Puzzle
    solution: Solution
    valid: bool
    violations: list[Violation]
    q: float
    confidence: float
    agree: int
    rollouts: int            # rollouts actually run (< K after an early stop)
    valid_rollouts: int      # how many of them satisfy the rules
    distinct: int            # distinct decoded answers among them
    waves: int
    stopped_early: bool
    chosen: int              # index of the chosen rollout
    time_s: float
    preds: torch.Tensor = field(repr=False)  # [rollouts, L]
    q_all: torch.Tensor = field(repr=False)  # [rollouts]
    row_steps: int = 0       # supervision steps computed, summed over rollouts
    flops: float = 0.0       # row_steps x flops_per_step
    chosen_step: int = 0     # the step at which the chosen rollout's answer was read
    timed_out: bool = False  # stopped by the time limit (answer: the best so far)


def check_family(codec: Codec, family: Family) -> None:
    """A UsageError for a family the codec does not encode into: a lightup encoded "into" the
    maze family failed inside the codec, with "'lightup.white' is outside the maze vocabulary
    (wall numbers are 0..4)", and a Verifier decoded a foreign table into nonsense."""
    names = [f.name for f in codec.families]
    if getattr(family, "name", None) not in names:
        got = f"the {family.name!r} family" if isinstance(family, Family) else \
            type(family).__name__
        raise UsageError(f"the {codec.name!r} codec does not encode into {got} (its families: "
                         f"{', '.join(names)})",
                         hint="solver.family_for(codec, loaded) gives the one the model reads")


def encode_puzzle(codec: Codec, puzzle: Puzzle, family: Family, source: str | None = None):
    """The puzzle's tokens in the model's family; one the family cannot hold (a grid too big,
    a clue past its vocabulary) is a ParseError naming `source`."""
    if puzzle.type != codec.name:  # else "a 10x10 sudoku does not fit ..." of a lightup
        raise UsageError(f"a {puzzle.type} puzzle given to the {codec.name!r} codec",
                         hint=f"registry.get({puzzle.type!r}) is its codec")
    check_family(codec, family)
    try:
        with registry.contract(codec, "encode"):
            return registry.checked_tokens(codec, codec.encode(puzzle, family=family), family)
    except registry.CodecBug:
        raise
    except PtrmError as e:
        raise ParseError(str(e), source=source, hint=e.hint) from None


def check_solvable(codec: Codec, puzzle: Puzzle, source: str | None = None, *,
                   guessed: bool = False) -> None:
    """A ParseError naming `source` for a puzzle that no answer can solve, by the rules its
    codec finds it breaks itself (`Codec.puzzle_violations`: a maze with no route from S to
    G): said at once, where rollouts would all fail and only then say why. `guessed`: the
    type was read off a grid that names none (`registry.type_guessed`), so the puzzle may be
    another type's, which the hint says how to name."""
    found = registry.puzzle_violations_of(codec, puzzle)
    if found:
        hint = "no model was run: no answer can satisfy the rules of the puzzle as written"
        raise ParseError(f"this {codec.name} cannot be solved: "
                         + "; ".join(registry.placed(v) for v in found), source=source,
                         hint=f"{hint}; {registry.guessed_hint(codec)}" if guessed else hint)


def solve_puzzle(loaded: LoadedModel, codec: Codec, puzzle: Puzzle, family: Family, *,
                 K: int, D: int | None = None, sigma: float | None = None,
                 perturb: str | None = None, seed: int = 0,
                 selector: str = "verified", early_stop: bool = True, wave: int | None = None,
                 chunk_rows: int | None = None, check_every: int | None = CHECK_EVERY,
                 q_threshold: float | None = None, time_limit: float | None = None,
                 compile: bool = False, source: str | None = None,
                 on_wave: Callable[[int, int], None] | None = None) -> SolveResult:
    """K rollouts (in waves of `wave`), then one answer by `selector`. D defaults to the
    model's N_sup, σ and the noise target to the model's (`LoadedModel.noise_choice`), as in
    `ptrm solve`. With the verified selector and `early_stop`, stops as soon as a rollout
    satisfies the rules, checked every `check_every` steps (None: at the end of each wave), or
    (q_threshold) one is confident; `time_limit` seconds: answer from the rollouts so far.
    `on_wave(done, K)` reports progress. `source` names the input in the error for a puzzle
    this model's vocabulary cannot encode."""
    from .engine import fast, metrics

    D = loaded.config.halt_max_steps if D is None else D
    sigma, _, perturb = loaded.noise_choice(sigma, perturb)
    _check_solve_options(wave=wave, chunk_rows=chunk_rows, check_every=check_every,
                         time_limit=time_limit, q_threshold=q_threshold)
    if selector not in SELECTORS:
        raise UsageError(f"unknown selector {selector!r} (choose from {', '.join(SELECTORS)})")
    t0 = time.perf_counter()
    tokens = torch.as_tensor(encode_puzzle(codec, puzzle, family, source), dtype=torch.long)[None]
    verifier = Verifier(codec, puzzle, family)
    wave = K if wave is None else max(1, min(int(wave), K))
    # a puzzle nothing judges (an ARC grid without its output) passes every check vacuously:
    # an early stop there read every rollout's answer after its first step, not its D-th
    stop = early_stop and selector == "verified" and judges(codec, puzzle)
    engine = fast.engine_for(loaded.model, compile=compile)
    res = fast.run(engine, tokens, K=K, D=D, sigma=sigma, perturb=perturb, seed=seed, wave=wave,
                   capacity=max(wave, chunk_rows or wave),
                   check_every=check_every if stop else None,
                   q_threshold=q_threshold if stop else None,
                   verify=(lambda p, preds: verifier.valid(preds)) if stop else None,
                   time_limit=time_limit, on_progress=on_wave)
    ran = torch.nonzero(res.steps[0] > 0).flatten()
    P, Q = res.preds[0, ran], res.q[0, ran]
    V = verifier.valid(P)
    A = verifier.answers(P)
    pick = int(metrics.select(A[None], Q[None], selector, V[None])[0])
    verdict = verifier(P[pick].numpy())
    q = float(Q[pick])
    stopped = bool(res.stopped[0]) and int(res.row_steps) < K * D
    return SolveResult(
        codec=codec, puzzle=puzzle, solution=verdict.solution, valid=verdict.valid,
        violations=verdict.violations, q=q, confidence=_sigmoid(q),
        agree=int(metrics.agreement(A[None], torch.tensor([pick]))[0]), rollouts=len(ran),
        valid_rollouts=int(V.sum()), distinct=len(torch.unique(A, dim=0)),
        waves=int(res.stats["waves_started"][0]), stopped_early=stopped,
        chosen=int(ran[pick]), time_s=time.perf_counter() - t0, preds=P, q_all=Q,
        row_steps=int(res.row_steps), flops=float(res.flops),
        chosen_step=int(res.steps[0, ran[pick]]), timed_out=res.timed_out)


def _check_solve_options(*, wave, chunk_rows, check_every, time_limit, q_threshold) -> None:
    """solve_puzzle's optional settings, as `ptrm solve` checks its options: wave=0 ran
    waves of 1, check_every=0 checked at the end of each wave only (None's meaning), and a
    negative time_limit or a q_threshold above 1 ran without a word."""
    check_counts(wave=wave, chunk_rows=chunk_rows, check_every=check_every)
    if time_limit is not None and not (isinstance(time_limit, numbers.Real)
                                       and time_limit >= 0):  # NaN too
        raise UsageError(f"time_limit must be seconds >= 0 or None, no limit (got "
                         f"{time_limit!r})")
    if q_threshold is not None and not (isinstance(q_threshold, numbers.Real)
                                        and 0 <= q_threshold <= 1):
        raise UsageError(f"q_threshold must be a probability in [0, 1] (sigmoid(Q) above it "
                         f"stops) or None (got {q_threshold!r})")


def judges(codec: Codec, puzzle: Puzzle) -> bool:
    """Whether the codec's rules judge this puzzle (an ARC grid without its output: no)."""
    with registry.contract(codec, "judges"):
        return bool(codec.judges(puzzle))


def _sigmoid(x: float) -> float:
    return 1 / (1 + math.exp(-x)) if x >= 0 else math.exp(x) / (1 + math.exp(x))


def to_json(obj, indent: int = 1) -> str:
    """JSON with nested containers indented but lists of plain values (grid rows, cell
    coordinates, per-step curves) kept on one line, so a solution grid reads as a grid."""
    def flat(x):
        return isinstance(x, list) and all(not isinstance(v, (list, dict)) for v in x)

    def leaf(x):  # strict JSON: NaN and infinities (a huge σ, no time limit) are null
        return None if isinstance(x, float) and not math.isfinite(x) else x

    def write(x, level):
        pad, inner = " " * (indent * level), " " * (indent * (level + 1))
        if isinstance(x, dict) and x:
            items = [f"{inner}{json.dumps(str(k))}: {write(v, level + 1)}" for k, v in x.items()]
            return "{\n" + ",\n".join(items) + "\n" + pad + "}"
        if isinstance(x, (list, tuple)) and x and not flat(list(x)):
            return "[\n" + ",\n".join(inner + write(v, level + 1) for v in x) + "\n" + pad + "]"
        if isinstance(x, (list, tuple)):
            return json.dumps([leaf(v) for v in x], allow_nan=False)
        return json.dumps(leaf(x), allow_nan=False)

    return write(obj, 0)
