"""`ptrm build-data`: the paper's PPBench recipe, for PPBench JSONL and every other source
(the pipeline is ptrm_cli/build.py, which lists its build_*.py modules; docs/BUILD_DATA.md
explains it)."""

from __future__ import annotations

import json
import sys
from contextlib import nullcontext
from pathlib import Path

import typer
from rich.table import Table

from .. import build as B
from ..atomic import exclusive
from ..console import console, esc
from ..engine.data import ANY_SIZE
from ..errors import PtrmError
from ..options import JSON, given_options, type_list
from ..sources import resolve_type

#: what `--family arc` (TRM's ARC recipe, arc_data.py) reads; every other option would be ignored
ARC_OPTIONS = {"sources", "out", "seed", "augment", "test_set", "dry_run", "as_json", "family"}


def build_data(
    ctx: typer.Context,
    sources: list[Path] = typer.Argument(..., metavar="SOURCE", show_default=False, help=(
        "Source folders or files: PPBench JSONL (golden_300.jsonl, full_dataset.jsonl), "
        "ptrm records (.jsonl), janko JSON, one-line sudoku lists (.txt), Sudoku-Extreme and "
        "Maze-Hard CSV (.csv). A folder is read file by file; files named golden* form the golden split.")),
    out: Path = typer.Option(None, "--out", "-o", show_default=False,
                             help="Dataset folder to write (replaced whole, atomically)."),
    seed: int = typer.Option(0, "--seed", min=0,
                             help="Seed for the validation sample and augmentation."),
    val_per_type: int = typer.Option(B.DEFAULT_VAL_PER_TYPE, "--val-per-type",
                                     help="Validation puzzles per type (tapa: half, "
                                          "rounded up; see --val-tapa)."),
    val_tapa: int = typer.Option(None, "--val-tapa", show_default=False, help=(
        "Validation puzzles for tapa (default: half of --val-per-type, rounded up: the paper's "
        "50).")),
    val_pool: str = typer.Option("all-sizes", "--val-pool", help=(
        "all-sizes: sample validation among all records of a type, then drop off-size ones "
        "(the paper's order); kept: among kept puzzles only (exactly N per type).")),
    augment: int = typer.Option(10, "--augment", help=(
        "Examples per training puzzle: the original plus N-1 augmented samples.")),
    augmentation: str = typer.Option("dihedral", "--augmentation", help=(
        "dihedral: trajectory prefixes under the 8 symmetries (the paper's PPBench recipe); "
        "sudoku-trm: TRM's sudoku shuffle (relabel, transpose, band/stack and row/column "
        "shuffles; 9x9 sudoku only).")),
    train_puzzles: int = typer.Option(None, "--train-puzzles", show_default=False, help=(
        "Keep a seeded random N training puzzles per type (TRM's sudoku recipe: 1000).")),
    min_difficulty: int = typer.Option(None, "--min-difficulty", show_default=False, help=(
        "Keep only records rated N or more by their source (the 'rating' of a "
        "Sudoku-Extreme or Maze-Hard CSV); unrated records are dropped, `ptrm generate` records included (filter "
        "those when generating: `ptrm generate --min-difficulty`).")),
    types: str = typer.Option(None, "--types", show_default=",".join(B.PPBENCH_TYPES),
                              help="Comma-separated puzzle types to keep (with --family and no "
                                   "--types: every type of that family)."),
    sizes: str = typer.Option(None, "--sizes", show_default="sudoku=9x9,*=10x10 for PPBench, "
                              "the family's grid for others (maze 30x30)",
                              help="Kept grid size per type, ROWSxCOLS or 'any' "
                                   "('*' = the others; without it, a type not named keeps "
                                   "its default)."),
    golden: list[Path] = typer.Option(
        [], "--golden", metavar="FILE", show_default=False,
        help="A golden file (repeatable); any source file named golden* is one too."),
    limit: int = typer.Option(None, "--limit", show_default=False,
                              help="Read only the first N records of each non-golden file."),
    subsample: int = typer.Option(None, "--subsample", show_default=False,
                                  help="Read a seeded random N records of each non-golden file."),
    val_from: Path = typer.Option(None, "--val-from", show_default=False, help=(
        "An earlier dataset folder: its validation puzzles (by identity) are this build's "
        "validation, none sampled - so a model warm-started on that build is still judged on "
        "puzzles it never trained on. The sources must include them; built with the same "
        "--augmentation.")),
    exclude: list[Path] = typer.Option([], "--exclude", metavar="DIR", show_default=False, help=(
        "An earlier dataset folder (repeatable): drop every puzzle it holds, in any split, so "
        "a new held-out set (say, one to choose sigma on) shares nothing with it. Built with "
        "the same --augmentation.")),
    family: str = typer.Option(None, "--family", show_default=False,
                               help="Token family (default: the first type's codec's)."),
    test_set: str = typer.Option(None, "--test-set", show_default="evaluation*", help=(
        "--family arc: the subset (file name without arc-agi_ and _challenges.json) whose "
        "test pairs form the test split.")),
    workers: int = typer.Option(0, "--workers", "-j", help="Worker processes (0 = all cores)."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Count everything, write nothing."),
    as_json: bool = JSON,
):
    """Build a dataset: read, filter, split (train/val/golden), augment, write tokens.

    The recipe, every source format and the output are in docs/BUILD_DATA.md.

    Examples:

        ptrm build-data data/gen --out data/ppbench
        ptrm build-data data/gen janko/ --golden golden_300.jsonl --out data/ppbench
        ptrm build-data data/gen --dry-run
    """
    if out is None and not dry_run:
        raise PtrmError("missing --out OUTDIR", hint="or --dry-run to count without writing")
    if test_set is not None and family != "arc":
        raise PtrmError("--test-set names an ARC subset: it applies with --family arc only",
                        hint="leave it out, or add --family arc to build ARC challenge files")
    if family == "arc":  # Kaggle ARC challenge files: TRM's recipe (ptrm_cli/arc_data.py)
        if ignored := given_options(ctx, keep=ARC_OPTIONS):
            verb = "does" if len(ignored) == 1 else "do"
            raise PtrmError(f"--family arc builds TRM's ARC recipe, which {', '.join(ignored)} "
                            f"{verb} not apply to", hint="it takes --out, --seed, --augment, "
                                                        "--test-set, --dry-run and --json")
        from ..arc_data import build_arc

        summary = build_arc(sources, None if dry_run else out, num_aug=augment, seed=seed,
                            test_set_name=test_set)
        if as_json:
            typer.echo(json.dumps(summary, indent=1))
        else:
            test = (f"test set {summary['test_set']}" if summary["test_set"] else
                    "no test set: no evaluation* subset, --test-set NAME names one")
            console.print(f"ARC: {_count(summary['tasks'], 'task')} "
                          f"({', '.join(summary['subsets'])}; {test}), "
                          f"{_count(summary['num_puzzle_ids'], 'puzzle id')}, rows train "
                          f"{summary['rows']['train']:,} test {summary['rows']['test']:,}",
                          highlight=False)
            if n := summary["test_tasks_elsewhere"]:
                console.print(f"left out {n:,} task(s) of other subsets that are test-set "
                              f"tasks (same test inputs), e.g. "
                              f"{', '.join(summary['test_tasks_elsewhere_first'][:3])}",
                              highlight=False)
            if summary["out"]:
                console.print(f"wrote [bold]{esc(summary['out'])}[/]")
        return
    if limit is not None and subsample is not None:
        raise PtrmError("--limit and --subsample do not combine: pick one",
                        hint="--limit N reads each file's first N records, --subsample N a "
                             "seeded random N")
    for name, v in (("--val-per-type", val_per_type), ("--val-tapa", val_tapa),
                    ("--train-puzzles", train_puzzles), ("--workers", workers)):
        if v is not None and v < 0:
            raise PtrmError(f"{name} must be 0 or more, not {v}",
                            hint="--workers 0 uses every core" if name == "--workers" else
                            f"leave {name} out for its default")
    if val_tapa is None:  # rounded up: --val-per-type 1 still holds one tapa out
        val_tapa = (val_per_type + 1) // 2
    if (names := type_list(types)) is not None:  # a typo is a usage error, not 0 puzzles later
        names = [resolve_type(t) for t in names]  # akari, Sudoku: as the records name them
        _check_installed("--types", names)
        if "arc" in names:  # no reader here takes ARC files: every one was "unrecognised"
            raise PtrmError("--types arc: ARC tasks build with --family arc (TRM's ARC recipe)",
                            hint="ptrm build-data ARC_FOLDER --family arc --out DIR "
                                 "(docs/MAZE_ARC.md)")
    size_map = parse_sizes(sizes) if sizes else None
    if size_map:
        _check_installed("--sizes", [t for t in size_map if t != "*"])
    opts = B.BuildOptions(
        seed=seed, val_per_type=val_per_type, val_overrides={"tapa": val_tapa},
        val_pool=val_pool, augment=augment, augmentation=augmentation,
        train_puzzles=train_puzzles, min_difficulty=min_difficulty,
        types=None if names is None else tuple(names),
        sizes=size_map, golden=tuple(golden), limit=limit,
        subsample=subsample,
        family=family, workers=workers or B.default_workers(),
        val_keys=None if val_from is None else B.read_val_keys(val_from, augmentation),
        exclude_keys=frozenset().union(*(B.read_dataset_keys(d, augmentation) for d in exclude)),
        progress=not as_json)
    if not dry_run:
        B.check_out(out)  # before taking its lock: `--out .` left a `..lock` behind
    try:
        # one build per folder: a second would report what the other one's swap replaced
        with nullcontext() if dry_run else exclusive(out, "build-data --out"):
            replaces = not dry_run and (out / "meta.json").is_file()
            result = B.build(sources, None if dry_run else out, opts)
    except B.BuildError as e:
        _report(e.result, as_json)
        raise
    _report(result, as_json, replaces)


def _count(n: int, noun: str) -> str:
    """"1 task", "2,400 tasks": a one-task build is a common first try."""
    return f"{n:,} {noun}{'' if n == 1 else 's'}"


def _check_installed(option: str, names: list[str]) -> None:
    from .. import codec as registry

    installed = registry.registered()
    if unknown := [t for t in names if t not in installed]:
        raise PtrmError(f"{option}: no installed codec for {', '.join(map(repr, unknown))}",
                        hint=f"installed: {', '.join(installed)} (`ptrm codecs`)")


def parse_sizes(text: str) -> dict[str, tuple[int, int] | None]:
    """`sudoku=9x9,*=10x10` -> {"sudoku": (9, 9), "*": (10, 10)}; `any` = no size filter."""
    out = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        name, _, size = part.partition("=")
        name = name.strip() if name.strip() in ("", "*") else resolve_type(name)
        if name and size.strip().lower() == ANY_SIZE:
            out[name] = None
            continue
        r, _, c = size.lower().partition("x")
        if not (name and r.isdigit() and c.isdigit() and int(r) and int(c)):
            raise PtrmError(f"--sizes: {part!r} is not TYPE=ROWSxCOLS (both at least 1) or "
                            "TYPE=any",
                            hint="e.g. sudoku=9x9,*=10x10; *=any keeps every size that fits "
                                 "the family grid")
        out[name] = (int(r), int(c))
    return out


def _report(r: B.BuildResult, as_json: bool, replaced: bool = False) -> None:
    if as_json:
        typer.echo(json.dumps(r.to_json(), indent=1))
        return
    console.print(counts_table(r))
    src = Table(title="Sources", title_justify="left")
    for col in ("source", "role", "kind", "records", "train", "val", "golden", "dropped"):
        src.add_column(col, justify="left" if col in ("source", "role", "kind") else "right",
                       overflow="fold", no_wrap=col != "source")
    for s in r.sources:
        n = {k: sum(v.values()) for k, v in s["puzzles"].items()}
        src.add_row(esc(s["name"]), s["role"], s["kind"] or "-", f"{s['records']:,}",
                    f"{n.get('train', 0):,}", f"{n.get('val', 0):,}", f"{n.get('golden', 0):,}",
                    f"{sum(s['dropped'].values()):,}")
    console.print(src)
    if r.dropped:
        d = Table(title="Dropped", title_justify="left")
        for col in ("reason", "count", "by type", "why"):
            d.add_column(col, justify="right" if col == "count" else "left")
        for reason, by_type in r.dropped.items():
            shown = ", ".join(f"{t} {n:,}" for t, n in sorted(by_type.items(), key=lambda x: -x[1]))
            d.add_row(reason, f"{sum(by_type.values()):,}", shown, B.REASONS.get(reason, ""))
        console.print(d)
        for reason, msgs in r.messages.items():
            for m in msgs[:10]:
                console.print(f"  [yellow]{reason}[/] {esc(m)}", highlight=False,
                              soft_wrap=True)
            if len(msgs) > 10:
                console.print(f"  [dim]{reason}: {len(msgs) - 10} more in meta.json / --json[/]")
    for note in r.notes:
        console.print(f"[yellow]note:[/] {esc(note)}")
    t = r.timings
    rate = lambda n, s: f"{n / s:,.0f}/s" if s > 0 else "-"  # noqa: E731
    console.print(f"[dim]decoded {t.get('decode_puzzles', 0):,} puzzles in "
                  f"{t.get('decode', 0):.1f}s "
                  f"({rate(t.get('decode_puzzles', 0), t.get('decode', 0))}), augmented "
                  f"{t.get('augment_puzzles', 0):,} training puzzles in {t.get('augment', 0):.1f}s "
                  f"({rate(t.get('augment_puzzles', 0), t.get('augment', 0))}); total "
                  f"{t.get('total', 0):.1f}s[/]", highlight=False)
    if r.out is not None and (r.out / "meta.json").is_file():
        console.print(f"wrote [bold]{esc(r.out)}[/]"
                      + (" (it replaced the earlier build there)" if replaced else ""))
    sys.stdout.flush()


def counts_table(r: B.BuildResult) -> Table:
    """The paper's table: puzzles per type and split, with train examples after augmentation."""
    table = Table(title=f"Dataset ({r.family}): puzzles per type", title_justify="left")
    for col in ("type", "train", "train examples", "val", "golden"):
        table.add_column(col, justify="left" if col == "type" else "right")
    tot = [0, 0, 0, 0]
    for t in r.types:
        row = [r.puzzles["train"].get(t, 0), r.counts["train"].get(t, 0),
               r.puzzles["val"].get(t, 0), r.puzzles["golden"].get(t, 0)]
        tot = [a + b for a, b in zip(tot, row)]
        table.add_row(t, *(f"{v:,}" for v in row))
    table.add_section()
    table.add_row("total", *(f"{v:,}" for v in tot), style="bold")
    return table
