"""`ptrm eval`: PTRM vs deterministic TRM on a benchmark split (tables, report.json, plots)."""

from __future__ import annotations

import math
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path

import typer

from ..atomic import exclusive, refuse_file
from ..console import console, err_console, esc, fraction_progress
from ..errors import PtrmError, is_out_of_memory
from ..options import DEVICE, JSON, check_perturb, given_options, resolve_device, \
    set_threads, threads_option, type_list
from ..paths import report_path


def _floats(values: list[str], flag: str) -> list[float]:
    out = []
    for v in values:
        for part in str(v).split(","):
            if part.strip():
                try:
                    x = float(part)
                except ValueError:
                    raise PtrmError(f"{flag} {part.strip()!r}: expected a number") from None
                if not 0 <= x < math.inf:
                    raise PtrmError(f"{flag} {part.strip()}: expected a finite number >= 0")
                out.append(x)
    if values and not out:  # `--sigma ,` names nothing: not the default in disguise
        raise PtrmError(f"{flag} {','.join(map(str, values))!r} names no value",
                        hint=f"e.g. {flag} 0.1,0.2; leave it out for the default")
    return list(dict.fromkeys(out))


def _answer_step(halt: float | None) -> str:
    """Which step a rollout's answer comes from, in words (--halt)."""
    return "the last step" if halt is None else f"the first step with sigmoid(Q) > {halt:g}"


def _ints(values: list[str], flag: str) -> list[int]:
    out = [int(x) if x == int(x) else -1 for x in _floats(values, flag)]
    if any(x < 1 for x in out):
        raise PtrmError(f"{flag}: expected positive whole numbers")
    return out


def evaluate(
    ctx: typer.Context,
    split: str = typer.Option("golden", "--split",
                              help="golden, a dataset folder, a split name (val, test) with "
                                   "--data, or a source file: PPBench or ptrm-record JSONL, a "
                                   "Sudoku-Extreme or Maze-Hard CSV, a sudoku list."),
    data: str = typer.Option(None, "--data", help="Dataset folder for a named --split."),
    K: int = typer.Option(100, "--K", min=1,
                          help="Rollouts per puzzle (K_max of the width curve)."),
    D: int = typer.Option(None, "--D", min=1, show_default="the model's N_sup",
                          help="Supervision steps per rollout."),
    sigma: list[str] = typer.Option([], "--sigma", metavar="SIGMA[,SIGMA...]",
                                    show_default="the checkpoint's validated σ, else 0.2",
                                    help="Noise scale; several (0.1,0.2 or repeated) for a sweep."),
    sigma_from: list[Path] = typer.Option(None, "--sigma-from", metavar="REPORT",
                                          show_default=False, help=(
        "A report.json (or its folder) of a sigma sweep on validation: use the sigma with its "
        "best aggregate best-Q@K (the paper's protocol: sigma chosen on validation only), on "
        "the noise target that sweep used (its --perturb).")),
    seeds: int = typer.Option(3, "--seeds", min=1, max=1000,
                              help="Seeds per sigma (mean and spread)."),
    seed: int = typer.Option(0, "--seed", min=0, help="First seed."),
    perturb: str = typer.Option(None, "--perturb", show_default="the checkpoint's, else z",
                                help=("Where the noise goes: z | y | both | init. The model's "
                                      "σ is for its own target: another one needs --sigma or "
                                      "--sigma-from a sweep with that target.")),
    det_D: list[str] = typer.Option([], "--det-D", metavar="D[,D...]",
                                    show_default="D and K*D (equal compute)",
                                    help="Depths of the deterministic TRM baselines."),
    halt: float = typer.Option(None, "--halt", metavar="Q", show_default="the last step", help=(
        "Take each rollout's answer (TRM's too) at its first step with sigmoid(Q) above Q "
        "(0.5: the halting rule TRM's ACT trains), else at its last step, instead of always "
        "the last (the paper's protocol). The report gives the mean steps used.")),
    checkpoint: str = typer.Option(None, "--checkpoint", "-c", show_default="the bundled model",
                                   help="Checkpoint folder (or official TRM step file)."),
    device: str = DEVICE,
    memory: str = typer.Option(None, "--memory", show_default="2GB on CPU, 60% of free GPU memory",
                               help="Memory budget of one forward chunk, e.g. 8GB."),
    limit: int = typer.Option(None, "--limit", min=1, help="Only the first N puzzles."),
    types: str = typer.Option(None, "--types", show_default="all of the split's",
                              help="Only these puzzle types, comma-separated (tapa,nurikabe)."),
    min_difficulty: int = typer.Option(None, "--min-difficulty", show_default=False, help=(
        "A rated source file (Sudoku-Extreme or Maze-Hard CSV): only records rated N or more, as "
        "build-data's --min-difficulty.")),
    sample_n: int = typer.Option(None, "--sample", min=1, show_default=False, help=(
        "A seeded random N of the split's puzzles (seed 0 of its own: the same N for every "
        "--seed and setting), for costly settings on large splits; the report says so.")),
    out: Path = typer.Option(None, "--out", "-o", show_default="eval_<split>",
                             help="Folder for report.json and the plots."),
    plots: bool = typer.Option(True, "--plots/--no-plots", help="Write the PNG plots."),
    gpus: int = typer.Option(None, "--gpus", min=1, show_default="1 (or torchrun's processes)",
                             help="Shard the puzzles over N GPUs of this machine: runs this "
                                  "command again under torchrun with N processes."),
    identifiers: Path = typer.Option(None, "--identifiers",
                                     show_default="the checkpoint's own, else the dataset's",
                                     help="ARC: the identifiers.json naming the checkpoint's "
                                          "puzzle-embedding rows (docs/MAZE_ARC.md)."),
    exact: bool = typer.Option(True, "--exact/--no-exact", help=(
        "Sum RMSNorm's squares in a fixed order, so that on a GPU the compiled engine gives "
        "the eager loop's rollouts bit for bit (on an H100: 100% of a fixed run's rollouts, "
        "0.5% slower; docs/PERFORMANCE.md). --no-exact: a reduction kernel's own order, "
        "as evaluations before 2026-11-28 ran (needed to --resume or --merge those).")),
    threads: int = threads_option("torch's: one a core"),
    resume: bool = typer.Option(False, "--resume", help=(
        "Continue an interrupted evaluation: the runs already finished in --out (saved after "
        "each run in partial.json; same checkpoint, puzzles, K, D, perturb, --halt, --exact) "
        "are not run again.")),
    merge: list[Path] = typer.Option([], "--merge", metavar="REPORT", show_default=False, help=(
        "Run nothing: merge the reports (report.json or its folder; repeat the option) of one "
        "evaluation whose seeds ran as separate jobs (--seed S --seeds 1) into one report in "
        "--out, as if one job had run every seed.")),
    as_json: bool = JSON,
):
    """Evaluate PTRM against deterministic TRM: every selector, per type, over seeds.

    A long evaluation can be split by seed across jobs and put back together with --merge.

    Examples:

        ptrm eval --split golden --K 100 --D 48
        ptrm eval --split val --data data/ppbench --sigma 0.5,1,2 --seeds 1 -o runs/sweep
        ptrm eval --split golden --sigma-from runs/sweep --seeds 3 -o runs/golden
        ptrm eval --merge runs/s0 --merge runs/s1 -o runs/merged
    """
    if merge:
        given = given_options(ctx, keep={"merge", "out", "plots", "as_json"})
        if given:  # silently ignored, they would suggest the merge applied them
            raise PtrmError(f"--merge runs nothing, so {', '.join(given)} would have no effect: "
                            "a merge keeps the settings its reports ran with",
                            hint="drop them, or run the evaluation itself without --merge")
        return _merge(merge, out or Path("eval_merged"), plots=plots, as_json=as_json)
    check_perturb(perturb)
    if seed + seeds >= 2**63:
        raise PtrmError("--seed must be below 2**63")
    if limit is not None and sample_n is not None:
        raise PtrmError("--limit and --sample do not combine: pick one")
    sigmas = _floats(sigma, "--sigma") if sigma else None  # None: the checkpoint's
    if sigma_from and len(sigma_from) > 1:  # typer kept the last one silently
        raise PtrmError(f"--sigma-from given {len(sigma_from)} times "
                        f"({', '.join(map(str, sigma_from))}): it reads one sweep",
                        hint="compare the sweeps' aggregate best-Q (a z sweep and a y sweep, "
                             "say) and give the winner's report")
    sigma_from = sigma_from[0] if sigma_from else None
    if sigma and sigma_from is not None:
        raise PtrmError("--sigma and --sigma-from: give one of them")
    dets = _ints(det_D, "--det-D")
    if halt is not None and not 0 < halt < 1:
        raise PtrmError(f"--halt {halt:g}: expected a probability strictly between 0 and 1 "
                        "(e.g. 0.5)")
    # torch and the engine load here, not when `ptrm --help` starts
    set_threads(threads)
    from .. import evaluate as ev_mod
    from ..eval_finished import finished_report
    from ..eval_sets import resolve_split
    from .. import arc_solve, codec as registry, solver
    from ..engine import distributed

    on = None
    # where σ comes from, recorded as solve's --json says it: option, model, default or sweep
    sigma_source = "option" if sigmas else None
    if sigma_from is not None:
        choice = ev_mod.sigma_from_report(sigma_from)
        sigma_source = "sweep"
        chosen, on, tied = choice.sigma, choice.split, choice.tied
        sigmas = [chosen]
        if perturb not in (None, choice.perturb):  # σ belongs to the target it was swept on
            raise PtrmError(f"--sigma-from {sigma_from}: that sweep put the noise on "
                            f"{choice.perturb}; --perturb {perturb} needs a sweep of its own",
                            hint=f"sweep with `ptrm eval --split val --data DIR --perturb "
                                 f"{perturb} --sigma ...`, or leave --perturb out to take the "
                                 "sweep's")
        perturb = choice.perturb
        if distributed.is_main() and not (gpus and gpus > 1):
            err_console.print(f"σ = {chosen:g} on {perturb}, chosen on {esc(on)} "
                              f"({esc(sigma_from)})", highlight=False)
            if len(tied) > 1:
                err_console.print(
                    f"[yellow]note:[/] σ = {', '.join(f'{t:g}' for t in tied)} tie on that "
                    "sweep's best-Q: it does not separate them (more or harder validation "
                    "puzzles would); the smallest is taken", highlight=False, soft_wrap=True)
            if choice.halt != halt:  # the sweep took its answers by another rule
                err_console.print(
                    f"[yellow]note:[/] that sweep took each rollout's answer at "
                    f"{_answer_step(choice.halt)}, this evaluation at {_answer_step(halt)}: "
                    "σ was chosen under the other rule", highlight=False, soft_wrap=True)
            if choice.at_edge:
                side = "largest" if chosen == choice.swept[-1] else "smallest"
                err_console.print(
                    f"[yellow]note:[/] σ = {chosen:g} is the {side} of that sweep "
                    f"({', '.join(f'{t:g}' for t in choice.swept)}) and scored best: the best "
                    "σ may lie beyond it; a sweep that reaches past it would tell",
                    highlight=False, soft_wrap=True)

    if gpus and gpus > 1 and not distributed.launched():
        distributed.check_gpus(gpus, device)
        raise typer.Exit(distributed.relaunch(gpus))
    # every rank leaves the group together at the end (see distributed.teardown)
    with distributed.group(resolve_device(device)) as device, ExitStack() as hold:
        main = distributed.is_main()
        if out is not None:  # given: refused or claimed before the model and puzzles load
            _claim_out(out, sigma_from, hold, main=main)
        budget = solver.parse_memory(memory)
        if data is None and split != "golden" and _is_arc(Path(split).expanduser()):
            # an ARC dataset given as --split DIR: ARC's own method on its test pairs, as
            # `--data DIR --split test` runs it (it ran the per-row method, silently)
            data, split = split, "test"
        arc = data is not None and _is_arc(Path(data).expanduser())
        if identifiers is not None and not arc:
            raise PtrmError("--identifiers applies to ARC datasets (--data DIR built with "
                            "--family arc)")
        if arc:
            # --seeds by its source: the default (3) is a puzzle evaluation's
            given_seeds = seeds if "--seeds" in given_options(ctx, keep=set()) else 1
            _refuse_for_arc(sigmas=sigmas, seeds=given_seeds, halt=halt, det_D=dets, types=types,
                            min_difficulty=min_difficulty, sample_n=sample_n, resume=resume)
        # an official step_N file has no token table: an ARC dataset says it is TRM's ARC one;
        # a sequence length it does not say is that of the one family of its vocabulary size
        # among those the split may hold
        loaded = arc_solve.load_model(checkpoint, device) if arc else \
            solver.load_model(checkpoint, device, layouts=_layouts(split, data))
        loaded.model.fixed_order_norm(exact)  # before any engine copies the model
        if sigma_from is not None and main and \
                (why := ev_mod.sweep_model_differs(sigma_from, loaded)) is not None:
            err_console.print(f"[yellow]warning:[/] {esc(why)}", highlight=False, soft_wrap=True)
        D = D or loaded.config.halt_max_steps
        sigma_note = ""
        if not sigmas:  # neither --sigma nor --sigma-from: the checkpoint's, else the default
            sigma, sigma_source, perturb = loaded.noise_choice(None, perturb)
            sigmas, sigma_note = [sigma], solver.SIGMA_NOTES[sigma_source]
        perturb = perturb or loaded.perturb  # σ given: the noise goes where the model's did
        if arc:
            _eval_arc(loaded, Path(data).expanduser(), split, K=K, D=D, sigma=sigmas[0],
                      perturb=perturb, seed=seed, limit=limit,
                      memory=budget or solver.default_memory(device), out=out,
                      as_json=as_json, identifiers=identifiers, main=main, exact=exact)
            return
        evset = resolve_split(split, data, loaded, limit=limit, sample=sample_n,
                              types=type_list(types), min_difficulty=min_difficulty)
        if sample_n is not None and evset.sampled is None:
            err_console.print(f"note: --sample {sample_n} is not fewer than the "
                              f"{len(evset)} puzzles there: evaluating all of them",
                              highlight=False)
        elif limit is not None and limit > len(evset):  # said nothing, as if it had applied
            err_console.print(f"note: --limit {limit} is more than the {len(evset)} puzzles "
                              "there: evaluating all of them", highlight=False)
        budget = budget or solver.default_memory(device)
        settings = ev_mod.EvalSettings(
            K=K, D=D, sigmas=sigmas, seeds=[seed + i for i in range(seeds)], perturb=perturb,
            det_D=dets, halt=halt, exact=exact,
            chunk_rows=solver.plan_chunk_rows(loaded.config, K, D, budget, record_steps=True))
        # halting records every step of the baselines too: the deepest one sizes their chunks
        settings.det_chunk_rows = solver.plan_chunk_rows(
            loaded.config, 1, max(settings.det_D), budget, record_steps=halt is not None)
        if out is None:  # the default is named after the split, known only now
            out = Path(f"eval_{Path(evset.name).name}")
            _claim_out(out, sigma_from, hold, main=main)
        fp = _fingerprint(loaded, evset, settings)
        # every rank reads it (one machine's folder), so they all stop here or all run
        if resume and (done := finished_report(out, fp, len(evset.keys),
                                               ev_mod.run_keys(settings))) is not None:
            if main:
                _show_finished(done, out, as_json=as_json)
            return
        saved = _saved_runs(out, fp, evset, settings, resume=resume, write=main)

        if not main:  # other ranks of a torchrun launch: compute their share, print nothing
            ev_mod.run_eval(loaded, evset, settings, saved=saved)
            return
        for t, why in evset.skipped.items():
            err_console.print(f"[yellow]skipped[/] {esc(t)}: {esc(why)}", highlight=False)
        for u in evset.unusable:  # a record unreadable before its type is known: no type
            what = f"{u['type']} puzzle" if u["type"] else "record"
            where = f"line {u['line']}" if isinstance(u["line"], int) else f"entry {u['line']}"
            err_console.print(f"[yellow]skipped[/] {esc(what)} on {esc(where)} of "
                              f"{esc(evset.source)}: {esc(u['reason'])}", highlight=False,
                              soft_wrap=True)
        ranks = distributed.world()[1]
        of = f" (a seeded sample of {evset.sampled['of']})" if evset.sampled else ""
        err_console.print(
            f"[dim]{esc(evset.name)}: {len(evset)} puzzle{'' if len(evset) == 1 else 's'}{of} · "
            f"K={K} D={D} "
            f"σ={','.join(f'{s:g}' for s in sigmas)}{sigma_note} "
            f"perturb={perturb}{'' if halt is None else f' halt={halt:g}'}"
            f"{'' if exact else ' --no-exact'} · "
            f"seeds {settings.seeds} · TRM baselines D={settings.det_D} · "
            f"device={device}{f' x{ranks} processes' if ranks > 1 else ''} · "
            f"{esc(loaded.path)}[/]",
            highlight=False, soft_wrap=True)

        if getattr(device, "type", device) == "cpu":
            _cpu_note(ctx, ev_mod.steps_to_run(len(evset), settings, saved), loaded.config)
        with fraction_progress("eval") as progress:
            try:
                report = ev_mod.run_eval(loaded, evset, settings, saved=saved,
                                         progress=progress)
            except KeyboardInterrupt:  # app.py says "interrupted"; here, what is kept
                if saved.runs:
                    again = "the same command" + ("" if resume else " with --resume")
                    err_console.print(
                        f"{len(saved.runs)} finished run(s) are saved in "
                        f"{esc(saved.path)}: {again} continues", highlight=False,
                        soft_wrap=True)
                raise
            except RuntimeError as e:  # torch.OutOfMemoryError too
                if not is_out_of_memory(e):
                    raise
                one = settings.chunk_rows <= K  # already one puzzle's rollouts a chunk
                raise PtrmError(
                    f"out of memory on {device}: forward chunks of {settings.chunk_rows} rows "
                    f"({'one puzzle' if one else 'whole puzzles'} of K={K} rollouts) do not fit",
                    hint="lower --K" if one else
                    "a smaller --memory gives smaller chunks (at least one puzzle's K rollouts)"
                    ) from None
        report["settings"]["sigma_source"] = sigma_source
        if sigma_from is not None:  # where sigma came from, for whoever reads the report later
            # as an absolute file: `-o v1` given as `--sigma-from v1` named no file elsewhere
            sweep = report_path(ev_mod.report_file(sigma_from.expanduser()))
            report["settings"]["sigma_from"] = {"report": sweep, "split": on,
                                                "halt": choice.halt}
        # the partial results go once the report is written, before it is shown: a reader
        # that stops early (`| head`) ended the command there and left them beside the report,
        # and the same command was then refused ("holds 3 finished run(s)")
        _write_and_show(report, out, plots=plots, as_json=as_json, written=saved.finish)


#: a CPU evaluation of more FLOPs than this, left at the protocol's size, says so up front
#: (~5 minutes at the 2-3e11 FLOP/s two cores give the 7M model)
CPU_NOTE_FLOP = 6e13
#: what the note suggests: 6 golden puzzles of 4 types, TRM and PTRM at D=4, took 51 s on 2
#: cores with the bundled model (2026-11-27), 50 s with other work loading them to 1.3-1.8
#: (2026-11-28), and 2-3 minutes on a 2-core machine kept busier; `--limit 5` took the first
#: type's only
FIRST_LOOK = "--sample 6 --K 8 --D 4 --det-D 4 --seeds 1"
#: how long it takes, as the note says it: the measurements above, not a promise
FIRST_LOOK_TIME = "about a minute on 2 CPU cores, a few when they are busy"
#: the options that size an evaluation: given any of them, the user chose its size
SIZE_OPTIONS = {"--K", "--D", "--seeds", "--limit", "--sample", "--det-D", "--sigma"}


def _cpu_note(ctx: typer.Context, steps: int, config) -> None:
    """The paper's protocol (K=100, three seeds, equal-compute baselines) is hours of a CPU's
    time for the 7M model: say how big the evaluation is (`steps`: what is left to run, as
    `evaluate.steps_to_run` counts it) and how to take a first look, unless the user sized
    it. The progress lines give the time left about a minute in."""
    from ..engine.model import flops_per_step
    from ..evaluate import fmt_flops

    flop = steps * flops_per_step(config)
    if flop < CPU_NOTE_FLOP or SIZE_OPTIONS & set(given_options(ctx, keep=set())):
        return
    err_console.print(
        f"[yellow]note:[/] on a CPU this evaluation is {steps:,} supervision steps of the model "
        f"({fmt_flops(flop)}), long for a CPU; the time left shows about a minute in. For a "
        f"first look: {FIRST_LOOK} (a mix of types: {FIRST_LOOK_TIME})", highlight=False,
        soft_wrap=True)


def _fingerprint(loaded, evset, settings) -> dict:
    """What every run of this evaluation shares (eval_resume.fingerprint): what partial.json's
    runs and a finished report.json in --out are compared by."""
    import torch

    from ..eval_resume import fingerprint

    # a CPU's sums, and so its results, depend on the thread count; a GPU's do not
    threads = torch.get_num_threads() if loaded.device == "cpu" else None
    return fingerprint(loaded.path, loaded.config.to_dict(), evset.keys, settings.K, settings.D,
                       settings.perturb, settings.draws, settings.halt, settings.exact,
                       threads)


def _show_finished(report: dict, out: Path, *, as_json: bool) -> None:
    """--resume of an evaluation already complete: say so, and show its report as the run that
    wrote it did (its JSON on stdout with --json); the folder is left as it is."""
    file = out / "report.json"
    err_console.print(f"{esc(file)} holds this evaluation, complete: nothing left to run "
                      "(without --resume it runs again)", highlight=False, soft_wrap=True)
    _show(report, as_json=as_json, last=f"already complete, nothing run: {file}")


def _saved_runs(out: Path, fp: dict, evset, settings, *, resume: bool, write: bool):
    """Where finished runs are kept (OUT/partial.json) and, with --resume, read back."""
    from ..eval_finished import how_it_differs
    from ..eval_resume import NAME, SavedRuns, finished_runs, other_runs

    path = out / NAME
    saved = SavedRuns(path, fp, resume=resume, write=write, n_puzzles=len(evset.keys))
    if write and path.exists():
        from ..evaluate import run_keys

        if saved.runs:  # the runs these settings will take from it (another σ's are not)
            using = sum(k in saved.runs for k in run_keys(settings))
            err_console.print(f"[dim]resuming: {using} of {len(run_keys(settings))} run(s) "
                              f"finished in {esc(path)}[/]", highlight=False)
        elif resume:
            err_console.print(f"[dim]no run finished in {esc(path)} yet: running everything[/]",
                              highlight=False)
        else:
            finished = finished_runs(path, fp)
            if finished:  # this very evaluation, interrupted: starting over would lose them
                raise PtrmError(f"{path} holds {finished} finished run(s) of this evaluation",
                                hint="--resume continues it; to start over, delete that file "
                                     "or give another --out")
            n, why = other_runs(path, fp, len(evset.keys))
            if n and why:  # say what is given up (`--resume` of that evaluation keeps them)
                # runs that differ only in summing RMSNorm by a reduction (saved before the
                # fixed order became the default on 2026-11-28, or with --no-exact)
                older = fp["exact"] and finished_runs(path, {**fp, "exact": None})
                err_console.print(
                    f"[yellow]note:[/] {esc(path)} holds {n} finished run(s) of another "
                    f"evaluation (different {esc('; '.join(why))}): starting over, they are "
                    "replaced" + (" (--no-exact --resume would have kept them)" if older else ""),
                    highlight=False, soft_wrap=True)
            else:
                err_console.print(f"[yellow]{esc(path)}[/]: no finished run of this "
                                  "evaluation; starting over", highlight=False)
    elif write and resume and (path.parent / "report.json").is_file():
        err_console.print(f"[yellow]note:[/] {esc(path.parent / 'report.json')} is a finished "
                          f"evaluation{esc(how_it_differs(out, fp, len(evset.keys)))} and "
                          "nothing is "
                          "saved to resume: running everything again, and replacing it",
                          highlight=False, soft_wrap=True)
    elif write and resume:
        err_console.print(f"[dim]nothing saved in {esc(path)} yet: running everything[/]",
                          highlight=False)
    elif write and (path.parent / "report.json").is_file():
        err_console.print(f"[yellow]note:[/] {esc(path.parent / 'report.json')} holds a "
                          "finished evaluation: this one replaces it (and its plots)",
                          highlight=False, soft_wrap=True)
    return saved


def _claim_out(out: Path, sigma_from: Path | None, hold: ExitStack, *, main: bool) -> None:
    """Refuse an --out that cannot take the report, and lock it for this evaluation: before
    any work (reading a 49k-line source file took half a minute before a file given as --out,
    or a folder another evaluation was writing, was refused)."""
    _check_out(out)
    if sigma_from is not None:
        _refuse_own_sweep(out, sigma_from)
    if main:  # one evaluation per folder: two would overwrite each other's partial.json
        hold.enter_context(exclusive(out, "eval --out"))


def _check_out(out: Path) -> None:
    refuse_file(out, hint="pass a folder: report.json, the plots and partial.json go there")


def _refuse_own_sweep(out: Path, sigma_from: Path) -> None:
    """--out is where the --sigma-from sweep lies: its report.json would be replaced by one
    whose `settings.sigma_from` names itself, and the sweep that chose σ would be lost."""
    from ..evaluate import report_file

    if report_file(sigma_from.expanduser()).resolve() == (out / "report.json").resolve():
        raise PtrmError(f"--out {out} holds the --sigma-from sweep ({sigma_from}): this "
                        "evaluation would replace it", hint="write it to another folder")


def _merge(paths: list[Path], out: Path, *, plots: bool, as_json: bool) -> None:
    from ..eval_merge import load_report, merge
    from ..evaluate import report_file

    files = [report_file(p.expanduser()).resolve() for p in paths]
    if (out / "report.json").resolve() in files:
        raise PtrmError(f"--out {out} holds one of the reports being merged: the merge would "
                        "replace it", hint="write the merge to another folder")
    _refuse_twice(paths, files)
    report = merge([load_report(p.expanduser()) for p in paths])
    _check_out(out)
    with exclusive(out, "eval --out"):  # not into a folder an evaluation is writing
        for warning in report.get("warnings", []):
            err_console.print(f"[yellow]warning:[/] {esc(warning)}", highlight=False,
                              soft_wrap=True)
        _write_and_show(report, out, plots=plots, as_json=as_json,
                        what=f"merged seeds {report['settings']['seeds']} of {len(paths)} "
                             "reports; ")


def _refuse_twice(paths: list[Path], files: list[Path]) -> None:
    """One report given twice (`--merge s0 --merge s0/report.json`): said as such, not as
    seeds that two reports share (the same path named twice)."""
    for i, file in enumerate(files):
        if file in files[:i]:
            first = paths[files.index(file)]
            said = f"--merge {first} is given twice" if first == paths[i] else \
                f"--merge {first} and --merge {paths[i]} are the same report ({file})"
            raise PtrmError(f"{said}: a report merges once",
                            hint="give each seed job's report once")


def _write_and_show(report: dict, out: Path, *, plots: bool, as_json: bool, what: str = "",
                    written: Callable[[], None] | None = None):
    """report.json (and plots) into `out`, `written()`, then the report on stdout: JSON or the
    tables."""
    from .. import evaluate as ev_mod

    files = ev_mod.write_report(report, out, plots=plots)
    if written is not None:
        written()
    _show(report, as_json=as_json, last=f"{what}wrote " + ", ".join(map(str, files.values())))


def _show(report: dict, *, as_json: bool, last: str) -> None:
    """The report on stdout: its JSON, or the tables and then `last` (what became of it)."""
    from .. import evaluate as ev_mod, solver

    if as_json:
        typer.echo(solver.to_json(report))
        return
    for table in ev_mod.tables(report):
        console.print(table)
    console.print(esc(last), highlight=False, soft_wrap=True)


def _layouts(split: str, data: str | None) -> list:
    """The token families a split may hold: a dataset's own (--data), the golden set's types'
    for golden, else every installed one (a source file's types are known once it is read)."""
    import json

    from .. import codec as registry
    from ..eval_sets import GOLDEN_TYPES

    every = registry.families()
    if data is not None:
        try:
            family = json.loads((Path(data).expanduser() / "meta.json").read_text())["family"]
        except (OSError, ValueError, KeyError, TypeError):
            return every  # resolve_split says what is wrong with the folder
        return [f for f in every if f.vocab.family == family] or every
    if split == "golden":
        return [f for t in GOLDEN_TYPES if (c := registry.type_named(t)) is not None
                for f in c.families] or every
    return every


def _refuse_for_arc(*, sigmas, seeds, halt, det_D, types, min_difficulty, sample_n,
                    resume) -> None:
    """The options of a puzzle evaluation that ARC's pipeline (one σ, one seed, its TRM at D)
    cannot honour: refused, since run anyway they would read as applied (a σ sweep that ran
    its first σ only, three seeds that ran one)."""
    if sample_n is not None:
        raise PtrmError("--sample applies to puzzle splits, not ARC tasks: use --limit")
    if resume:
        raise PtrmError("--resume applies to puzzle splits: an ARC evaluation runs whole")
    if sigmas is not None and len(sigmas) > 1:
        raise PtrmError(f"--sigma {','.join(f'{s:g}' for s in sigmas)}: an ARC evaluation "
                        "runs one σ", hint="run `ptrm eval --data DIR --sigma S` once per σ")
    if seeds > 1:
        raise PtrmError(f"--seeds {seeds}: an ARC evaluation runs one seed (--seed)",
                        hint="run it once per --seed")
    given = [flag for flag, value in (("--halt", halt), ("--det-D", det_D or None),
                                      ("--types", types),
                                      ("--min-difficulty", min_difficulty))
             if value is not None]
    if given:
        raise PtrmError(f"{', '.join(given)}: not for ARC tasks (an ARC evaluation answers at "
                        "the last step, runs its TRM at --D, and scores every task)",
                        hint="drop them; --limit keeps the first N tasks")


def _is_arc(data: Path) -> bool:
    import json

    try:
        return json.loads((data / "meta.json").read_text()).get("family") == "arc"
    except (OSError, ValueError, AttributeError):
        return False


def _eval_arc(loaded, data: Path, split: str, *, K, D, sigma, perturb, seed, limit, memory,
              out, as_json, identifiers, main: bool = True, exact: bool = True):
    """ARC (ptrm_cli/arc_eval.py): best-Q rollout per augmented view, vote across views. Under
    torchrun every rank computes its share of the views; rank 0 votes, prints and writes."""
    from .. import arc_eval, arc_ids, solver

    # which embedding row is which task version: the checkpoint's own table when it has one
    # (its `source`, the report's `identifiers`, absolute: arc_ids.read_table's)
    table = None
    if loaded.config.puzzle_emb_ndim > 0:
        table = arc_ids.table_for(loaded, identifiers, dataset=data)
    if main:
        err_console.print(f"[dim]ARC {esc(f'{data}/{split}')}: K={K} D={D} σ={sigma:g} "
                          f"perturb={perturb}{'' if exact else ' --no-exact'} seed {seed} · "
                          f"{esc(loaded.path)}"
                          f"{esc(f' · identifiers {table.source}') if table else ''}[/]",
                          highlight=False)
    report = arc_eval.evaluate_arc(
        loaded.model, data, split, table=table, K=K, D=D, sigma=sigma, perturb=perturb,
        seed=seed, limit=limit,
        chunk_rows=solver.plan_chunk_rows(loaded.config, K, D, memory), vocab=loaded.vocab)
    if not main:
        return
    from ..evaluate import provenance, weights_sha256

    # what made it, as the other evaluations' reports say (ARC's said nothing of it)
    report.update(provenance(loaded))
    report["model"]["weights_sha256"] = weights_sha256(loaded.path)
    if exact:
        report["exact"] = True
    missing = report["tasks_without_views"]
    if missing:
        err_console.print(f"[yellow]{len(missing)} task(s) have no identifiers[/] in "
                          f"{esc(report['identifiers'])}, scored as unsolved: "
                          f"{esc(', '.join(missing[:5]))}{' ...' if len(missing) > 5 else ''}",
                          highlight=False)
    path = arc_eval.write_report(report, out or Path(f"eval_arc_{split}"))
    if as_json:
        typer.echo(solver.to_json(report))
        return
    console.print(arc_eval.table(report))
    console.print(f"wrote {esc(path)}", highlight=False, soft_wrap=True)
