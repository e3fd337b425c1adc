"""`ptrm solve`: one puzzle, K noisy rollouts, the verified best answer.

An ARC task (`--task`, or a task file with a model that has per-task embeddings) goes through
the paper's ARC pipeline instead (ptrm_cli/arc_solve.py): views, best Q per view, vote, two
attempts.

Exit codes: 0 the shown answer satisfies the rules (ARC task: every test input answered, and
each known output among the two attempts); 1 no rules-valid answer was found (ARC: not so);
2 a usage or input error (bad file, unknown codec, wrong checkpoint, bad option, a puzzle that
no answer can solve: `Codec.puzzle_violations`, e.g. a maze with no route).
"""

from __future__ import annotations

import math

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from ..console import console, err_console, esc, fraction_progress
from ..errors import PtrmError, is_out_of_memory
from ..options import DEVICE, JSON, PERTURB_HELP, check_perturb, resolve_device
from ..paths import report_path

EXIT_SOLVED, EXIT_UNSOLVED = 0, 1  # usage errors: PtrmError.exit_code (2)
#: defaults on a CPU, sized so a 10x10 puzzle with the 7M model finishes in about half a minute
#: on 2 cores even when no rollout solves it (docs/PERFORMANCE.md has the measurements); a GPU
#: keeps the paper's K=100 in one wave
GPU_K = 100
CPU_DEFAULTS = {"K": 8, "wave": 4, "time_limit": 20.0}
#: upper bounds on the size options: far past any use (the paper's widest is K=100, its deepest
#: D=64), low enough that a typo is an error message rather than an allocation of terabytes
MAX_ROLLOUTS = 100_000
MAX_STEPS = 100_000
#: an ARC task: the paper's ARC-AGI-2 width on a GPU; on a CPU fewer rollouts per view and the
#: same time limit (checked between chunks of views: a 30x30 canvas is costly on a CPU)
ARC_GPU_K = 25
ARC_CPU_DEFAULTS = {"K": 4, "time_limit": 20.0}
if TYPE_CHECKING:
    from .. import solver


def solve(
    input: str = typer.Argument(..., metavar="INPUT", help="Puzzle file, puzz.link URL or pzprv3 text (as a "
                                          "file or inline), a grid whose first line names its "
                                          "type, one JSON record, or - for stdin.",
                                show_default=False),
    K: int = typer.Option(None, "--K", min=1, max=MAX_ROLLOUTS, show_default="100; 8 on CPU",
                          help="Rollouts (width)."),
    D: int = typer.Option(None, "--D", min=1, max=MAX_STEPS, show_default="the model's N_sup",
                          help="Supervision steps per rollout (depth)."),
    sigma: float = typer.Option(None, "--sigma",
                                show_default="the checkpoint's validated σ, else 0.2",
                                help="Noise scale, added where --perturb says."),
    perturb: str = typer.Option(None, "--perturb", help=PERTURB_HELP,
                                show_default="the checkpoint's, else z"),
    select: str = typer.Option("verified", "--select",
                               help="verified | best_q | mode | q_vote (see docs/INFERENCE.md)."),
    early_stop: bool = typer.Option(True, "--early-stop/--no-early-stop",
                                    help="With --select verified: stop at the first rules "
                                         "check that finds a valid rollout (see "
                                         "--check-every)."),
    wave: int = typer.Option(None, "--wave", min=1, max=MAX_ROLLOUTS,
                             show_default="K on GPU, 4 on CPU",
                             help="Rollouts per wave."),
    check_every: int = typer.Option(None, "--check-every", min=1, max=MAX_STEPS,
                                    show_default="every step",
                                    help="With early stop: steps between rules checks."),
    time_limit: float = typer.Option(None, "--time-limit",
                                     show_default="none on GPU, 20 s on CPU",
                                     help="Seconds of rollouts at most; then the best so far "
                                          "(0 or inf: no limit)."),
    threads: int = typer.Option(None, "--threads", min=1, max=4096,
                                show_default="CPU cores less the load average, at least 1",
                                help="CPU threads for torch."),
    checkpoint: str = typer.Option(None, "--checkpoint", "-c", show_default="the bundled model",
                                   help="Checkpoint folder (or official TRM step file)."),
    codec: str = typer.Option(None, "--codec", help="Puzzle type; overrides auto-detection."),
    device: str = DEVICE,
    memory: str = typer.Option(None, "--memory", show_default="2GB on CPU, 60% of free GPU memory",
                               help="Memory budget of one forward chunk, e.g. 2GB or 512MB; "
                                    "auto for the default."),
    seed: int = typer.Option(0, "--seed", min=0,
                             help="Random seed: the same seed gives the same result."),
    task: str = typer.Option(None, "--task",
                             help="ARC: the task to solve, by id, from a Kaggle challenges file "
                                  "(or the id of a one-task file); runs the ARC pipeline "
                                  "(docs/MAZE_ARC.md)."),
    views: int = typer.Option(None, "--views", min=1, show_default="all the checkpoint has",
                              help="ARC task: only the first N views (augmented versions)."),
    identifiers: Path = typer.Option(None, "--identifiers",
                                     show_default="the checkpoint's own",
                                     help="ARC task: the identifiers.json naming the "
                                          "checkpoint's puzzle-embedding rows."),
    as_json: bool = JSON,
):
    """Solve one puzzle with PTRM: K noisy rollouts, pick one, check it against the rules.

    A rollout is one attempt of the model; each is run with other noise, so more of them
    (--K) find more answers and take longer. The input's type is read from it (a URL's or
    pzprv3's type name, a grid's first line); `ptrm codecs` lists the types and `ptrm codecs
    TYPE` how a grid of that type is written. The defaults on a CPU are smaller and say so
    (docs/INFERENCE.md).

    "solved" means an exact checker of the puzzle's rules, not the model, accepted the answer
    shown; "confidence" is the model's own estimate. Otherwise the answer picked is shown
    with the rules it breaks, and what to try next.

    Exit status: 0 solved, 1 no rules-valid answer found, 2 a usage or input error, 130
    interrupted.

    Examples:

        ptrm solve examples/puzzles/sudoku.txt
        ptrm solve examples/puzzles/lightup.url --K 100 --json
        cat puzzle.pzprv3 | ptrm solve - --select best_q
        ptrm solve puzzle.txt -c runs/my-run/checkpoints/best --sigma 1.0
    """
    from .. import arc_solve, solver  # torch and the engine load here, not at `ptrm --help`
    from ..codec import also_read_by, guessed_hint, legend_json, type_guessed, \
        violations_of

    if sigma is not None and not 0 <= sigma < math.inf:  # here, not by typer: NaN too
        raise PtrmError(f"--sigma {sigma}: expected a finite number >= 0")
    if time_limit is not None and not time_limit >= 0:  # NaN too
        raise PtrmError(f"--time-limit {time_limit}: expected seconds >= 0 (0 or inf: no limit)")
    check_perturb(perturb)
    if seed >= 2**63:
        raise PtrmError("--seed must be below 2**63")
    if select not in solver.SELECTORS:
        raise PtrmError(f"--select {select!r}: expected {', '.join(solver.SELECTORS)}")
    stops_early = select == "verified" and early_stop  # the only case --check-every acts on
    if check_every is not None and not stops_early:
        err_console.print("[yellow]warning:[/] --check-every applies to early stopping (--select "
                          "verified with --early-stop); ignored", highlight=False,
                          soft_wrap=True)
    if codec is not None and not codec.strip():  # `--codec "$TYPE"` with TYPE unset
        raise PtrmError("--codec '': expected a puzzle type",
                        hint="`ptrm codecs` lists them; leave --codec out to read the type "
                             "from the input")
    device = resolve_device(device)
    budget = solver.parse_memory(memory)
    arc = dict(K=K, D=D, sigma=sigma, perturb=perturb, seed=seed, views=views,
               time_limit=time_limit, threads=threads, identifiers=identifiers, device=device,
               budget=budget, as_json=as_json)
    if task is not None or _many_tasks(input):
        if codec not in (None, "arc"):
            raise PtrmError(f"--task names an ARC task; --codec {codec} does not apply")
        _solve_arc_task(input, task, checkpoint, **arc)
    text, source = solver.read_input(input)
    loaded = None
    if codec in (None, "arc") and arc_solve.task_shaped(text):
        loaded = arc_solve.load_model(checkpoint, device)
        if _task_model(loaded):  # a task, and a model that learned one embedding per task
            _solve_arc_task(input, None, loaded, text=text, source=source, **arc)
    if views is not None or identifiers is not None:
        raise PtrmError("--views and --identifiers apply to ARC tasks (--task)")
    c, parsed = solver.parse_puzzle(text, codec=codec, source=source)
    guessed = codec is None and type_guessed(text)
    # before the model loads, let alone runs
    solver.check_solvable(c, parsed.puzzle, source, guessed=guessed)
    # --json's legend, read now: a plugin's broken legend is said before the rollouts, not
    # after them, losing their result
    legend = legend_json(c) if as_json else None
    # an official step_N file has no token table: family_for gives it the codec family of its
    # layout (vocabulary size and sequence length); a length it does not say is its family's
    loaded = loaded or solver.load_model(checkpoint, device, layouts=c.families)
    family = solver.family_for(c, loaded)  # (a step file takes its table here)
    if c.name == "arc" and _task_model(loaded):
        err_console.print("[yellow]warning:[/] this ARC model learned one embedding per task; "
                          "a lone grid or pair runs with the blank identifier, which it never "
                          "trained on (pass the task file and --task ID)", highlight=False)
    notes = []   # said on stderr as they arise, and listed in --json's "notes"

    def note(text: str) -> None:
        notes.append(text)
        err_console.print(f"[yellow]note:[/] {esc(text)}", highlight=False, soft_wrap=True)

    solver.encode_puzzle(c, parsed.puzzle, family, source)  # one it cannot hold: no note first
    # a header-less lightup grid was solved as a sudoku without a word; a grid only one type
    # reads (the README's sudoku.txt) needs no note
    if guessed and also_read_by(c, text):
        note(guessed_hint(c))
    if (unseen := solver.outside_training(loaded, parsed.puzzle)) is not None:
        note(unseen)
    D = D or loaded.config.halt_max_steps
    sigma, sigma_source, perturb = loaded.noise_choice(sigma, perturb)
    cpu = device == "cpu"
    cpu_defaults = {}
    if cpu:  # CPU-sized defaults for whatever the user left out; they are stated in the output
        given = {"K": K, "wave": wave, "time_limit": time_limit}
        cpu_defaults = {k: v for k, v in CPU_DEFAULTS.items() if given[k] is None}
        K = K if K is not None else CPU_DEFAULTS["K"]
        time_limit = time_limit if time_limit is not None else CPU_DEFAULTS["time_limit"]
        if wave is None:
            wave = min(K, CPU_DEFAULTS["wave"])
        _set_threads(threads, cpu_defaults)
    K = K if K is not None else GPU_K
    if not stops_early:
        check_every = None  # ignored (warned above): not reported as used
    elif check_every is None:
        check_every = solver.CHECK_EVERY
    time_limit = time_limit if time_limit and time_limit < math.inf else None  # 0, inf: none
    if wave is None:
        wave = K
    # one wave is one forward batch (a puzzle's rollouts are never split): keep it in budget
    row = solver.bytes_per_row(loaded.config, D)
    if memory is not None and budget is not None and budget < row:
        raise PtrmError(f"--memory {memory}: one rollout of this model needs about "
                        f"{row / 2**20:.0f} MB", hint="a larger --memory, or leave it out")
    fits = (budget or solver.default_memory(device)) // row
    if "wave" not in cpu_defaults and fits < min(wave, K):  # a --wave of the user's, cut
        note(f"waves of {max(1, fits)} rollouts, not {wave}: that many fit in the memory "
             "budget (--memory)")
    wave = max(1, min(wave, K, fits))
    chunk_rows = wave
    if "wave" in cpu_defaults:
        cpu_defaults["wave"] = wave  # the value used (never more than K)

    kwargs = dict(K=K, D=D, sigma=sigma, perturb=perturb, seed=seed, selector=select,
                  early_stop=early_stop, wave=wave, chunk_rows=chunk_rows,
                  check_every=check_every, time_limit=time_limit, source=source)
    try:
        res = _run_waves(solver, loaded, c, parsed.puzzle, family, kwargs)
    except RuntimeError as e:  # torch.OutOfMemoryError is one
        if not is_out_of_memory(e):
            raise
        raise PtrmError(f"out of memory on {device}: {K} rollouts of {D} steps (waves of "
                        f"{wave}) do not fit", hint="a smaller --K or --wave, or --memory "
                        "for a smaller budget") from None

    # the input may carry an answer (pzprv3 with answers, a dataset record): compare only with
    # a complete, rules-valid one (pzprv3 files carry an empty answer grid, too)
    given = parsed.solution
    matches = None
    if given is not None and not violations_of(c, parsed.puzzle, given):
        matches = bool(res.solution == given)
    settings = dict(K=K, D=D, sigma=sigma, perturb=perturb, seed=seed, selector=select,
                    device=device, checkpoint=loaded.path, wave=wave, check_every=check_every,
                    time_limit=time_limit, cpu_defaults=cpu_defaults, sigma_source=sigma_source,
                    notes=notes, format=parsed.format)
    if as_json:
        typer.echo(solver.to_json(_json(res, parsed, source, matches, settings, legend)))
    else:
        _show(res, matches, settings)
    # an answer nothing can judge (an ARC grid without its output) is an answer, not a failure
    raise typer.Exit(EXIT_SOLVED if res.valid or not _judges(res) else EXIT_UNSOLVED)


def _run_waves(solver, loaded, c, puzzle, family, kwargs: dict):
    """solve_puzzle, with progress over the rollouts when they run in several waves (a bar on
    a terminal, else a line per tenth)."""
    if kwargs["wave"] >= kwargs["K"]:
        return solver.solve_puzzle(loaded, c, puzzle, family, **kwargs)
    # "solving", not "rollouts": rollouts that an early stop or the time limit made
    # unnecessary count as done, so 100% can mean fewer than K rollouts ran
    with fraction_progress("solving") as update:
        return solver.solve_puzzle(loaded, c, puzzle, family,
                                   on_wave=lambda done, _: update(done / kwargs["K"]), **kwargs)


def _judges(res: "solver.SolveResult") -> bool:
    """Whether the codec's rules judge this puzzle (an ARC grid without its output: no)."""
    from .. import solver

    return solver.judges(res.codec, res.puzzle)


def _json(res: "solver.SolveResult", parsed, source: str, matches, s: dict,
          legend: dict[str, str]) -> dict:
    from .. import codec as registry

    c = res.codec
    pzprv3 = _pzprv3(c, res.puzzle, res.solution)
    with registry.contract(c, "solution_url"):
        url = c.solution_url(res.puzzle, res.solution)
    return {
        "type": c.name,
        # null: not judged (an ARC grid without a known output has no rule to check)
        **dict.fromkeys(("solved", "valid"), res.valid if _judges(res) else None),
        "violations": [{"code": v.code, "message": v.message, "cells": [list(x) for x in v.cells]}
                       for v in res.violations],
        # legend: what grid's values mean, the codec's own words (`ptrm codecs TYPE` shows the
        # same); JSON keys are strings, so the values are written "0", "1", ...
        "solution": {"pzprv3": pzprv3, "grid": res.solution.grid.astype(int).tolist(),
                     "url": url, "legend": legend},
        "confidence": res.confidence, "q": res.q, "agree": res.agree,
        "K": s["K"], "D": s["D"], "sigma": s["sigma"], "sigma_source": s["sigma_source"],
        "seed": s["seed"],
        "selector": s["selector"], "time_s": round(res.time_s, 4),
        # absolute, a symlink kept as the link, as eval's reports record it (paths.report_path)
        "checkpoint": report_path(s["checkpoint"]),
        "perturb": s["perturb"], "device": s["device"], "rollouts": res.rollouts,
        # null when not judged: every rollout passes an empty check, none is verified
        "valid_rollouts": res.valid_rollouts if _judges(res) else None,
        "distinct_answers": res.distinct,
        "waves": res.waves, "stopped_early": res.stopped_early, "matches_answer": matches,
        "source": source, "format": parsed.format,
        "wave": s["wave"], "check_every": s["check_every"], "time_limit": s["time_limit"],
        "timed_out": res.timed_out, "row_steps": res.row_steps, "flops": res.flops,
        "chosen_step": res.chosen_step, "cpu_defaults": s["cpu_defaults"] or None,
        "notes": s["notes"],
    }


def _pzprv3(c, puzzle, solution) -> str | None:
    """The answer as pzprv3 text that reads back as this puzzle; None for a type with no
    pzprv3 form. A codec's usual form may not hold every puzzle of its type: heyawake's, the
    file the vendored pzpr.js writes, keeps room ids, which lose a loose border (a wall that
    closes no room; PPBench golden has one), so read back it was another puzzle. Such a codec
    takes `filever` for a later form that holds it (heyawake's upstream pzprv3.1)."""
    import inspect

    from .. import codec as registry

    with registry.contract(c, "to_pzprv3"):
        try:
            text = c.to_pzprv3(puzzle, solution)
        except PtrmError:
            return None
        try:
            with registry.contract(c, "parse", reading="puzzle", source="its own pzprv3 text"):
                same = c.key(c.parse(text).puzzle) == c.key(puzzle)
        except PtrmError:  # a form its own parse does not take (a plugin may write another
            same = True    # type's pzprv3): the check is only there to choose a form
        if not same and "filever" in inspect.signature(c.to_pzprv3).parameters:
            text = c.to_pzprv3(puzzle, solution, filever=1)
    return text


def _show(res: "solver.SolveResult", matches, s: dict) -> None:
    from .. import codec as registry
    from .. import solver

    c = res.codec
    try:  # the answer is found: a render that breaks says so, and how to get the answer anyway
        with registry.contract(c, "render"):
            drawn = c.render(res.puzzle, res.solution)
        if (why := registry.render_problem("render", drawn)) is not None:
            raise registry.bug(c, why)
    except registry.CodecBug as e:
        raise registry.CodecBug(str(e), hint=f"{e.hint}; --json gives the answer without "
                                             "drawing it") from e
    # soft wrap: a grid wider than the terminal (COLUMNS=40, a 30x30 maze) keeps its lines
    # whole, for the terminal to fold, instead of Rich breaking them mid-row
    console.print(drawn, soft_wrap=True)
    w = VERDICT_WORDS[bool(c.has_rules)]
    if not _judges(res):
        console.print(f"[bold]answered[/], not judged: {_unjudged(c, s['format'])}",
                      highlight=False, soft_wrap=True)
    elif res.valid:
        console.print(f"[bold green]solved[/]: {w['solved'].format(type=c.name)}",
                      highlight=False)
    elif res.valid_rollouts:   # another selector than `verified` picked a wrong one
        console.print(w["pick_wrong"].format(selector=s["selector"], k=res.valid_rollouts,
                                             n=res.rollouts, v=len(res.violations)),
                      highlight=False, soft_wrap=True)
    else:
        n = res.rollouts
        console.print(w["none"].format(rollouts=f"{n} rollout{'s' if n != 1 else ''}",
                                       pick=_shown_pick(s["selector"]), v=len(res.violations)),
                      highlight=False, soft_wrap=True)
    if _judges(res) and not res.valid:
        for v in res.violations[:5]:  # placed: each line says where, whoever wrote the codec
            code = f"[red]{v.code}[/] " if c.has_rules else ""
            console.print(f"  {code}{esc(registry.placed(v))}", highlight=False,
                          soft_wrap=True)
        if len(res.violations) > 5:
            console.print(f"  ... and {len(res.violations) - 5} more", highlight=False)
    # without rules, the answer given in the input is the expected output: the verdict said it
    if matches is not None and c.has_rules:
        console.print("matches the answer given in the input" if matches
                      else "[yellow]differs from the answer given in the input[/]")
    run = (f"{res.rollouts} of K={s['K']} rollouts run, stopped at step {res.chosen_step} of "
           f"D={s['D']} ({w['stopped']})" if res.stopped_early
           else f"{res.rollouts} rollouts")
    # unjudged, every rollout passes the (empty) check: a count of "valid" ones would mislead
    valid = f"{res.valid_rollouts} {w['valid']} · " if _judges(res) else ""
    console.print(
        f"confidence {res.confidence:.3f} (Q {res.q:+.2f}) · {res.agree}/{res.rollouts} rollouts "
        f"agree · {valid}{run} in {res.time_s:.2f} s", highlight=False, soft_wrap=True)
    if _judges(res) and not res.valid and res.confidence >= CONFIDENT:
        # Q is trained on puzzles like the training data; off its sizes or types it can be
        # sure of an answer that the rules, which are never wrong, reject
        console.print(f"[yellow]note:[/] the model is confident ({res.confidence:.3f}) in an "
                      f"answer that {w['rejected']}: its confidence says little about this "
                      "puzzle", highlight=False, soft_wrap=True)
    url = c.solution_url(res.puzzle, res.solution)
    if url:
        console.print(f"open: {esc(url)}", highlight=False, soft_wrap=True)
    if res.timed_out:
        console.print(f"[yellow]time limit of {s['time_limit']:g} s reached[/]: the answer is the "
                      f"best of the rollouts so far (--time-limit to change)", highlight=False)
    if _judges(res) and not res.valid_rollouts:
        console.print(f"[yellow]to try harder:[/] {_try_harder(res, s)}", highlight=False,
                      soft_wrap=True)
    console.print(f"[dim]K={s['K']} D={s['D']} sigma={s['sigma']:g}"
                  f"{solver.SIGMA_NOTES[s['sigma_source']]} "
                  f"perturb={s['perturb']} "
                  f"select={s['selector']} seed={s['seed']} device={s['device']} · "
                  f"{res.row_steps} rollout-steps ({res.flops:.2e} FLOP) · "
                  f"{esc(s['checkpoint'])}[/]", highlight=False, soft_wrap=True)
    if s["cpu_defaults"]:
        d = s["cpu_defaults"]
        parts = [f"{k.replace('_', '-')}={v:g}" if isinstance(v, float) else
                 f"{k.replace('_', '-')}={v}" for k, v in d.items()]
        console.print(f"[dim]CPU defaults: {' '.join(parts)} (GPU: K={GPU_K} in one wave, "
                      f"no time limit); set --K, --wave, --time-limit, --threads to change[/]",
                      highlight=False, soft_wrap=True)


#: sigmoid(Q) from which a wrong answer gets a note that the model's confidence misled
CONFIDENT = 0.8

#: how the text output speaks of a verdict: of the rules (`Codec.has_rules`), or for a type
#: without rules (ARC) of the expected output, all an answer is right or wrong against there;
#: its lines are then verify's messages without their codes, which name no rule
VERDICT_WORDS = {
    True: {"solved": "the answer satisfies every {type} rule",
           "pick_wrong": "[bold red]the {selector} pick breaks the rules[/] although {k} of the "
                         "{n} rollouts are rules-valid (--select verified shows one); {v} rule "
                         "violation(s):",
           "none": "[bold red]no rules-valid solution[/] among {rollouts}; shown: {pick}, "
                   "with {v} rule violation(s):",
           "stopped": "an answer satisfied the rules", "valid": "valid",
           "rejected": "the rules reject"},
    False: {"solved": "the answer is the expected output",
            "pick_wrong": "[bold red]the {selector} pick is wrong[/] although {k} of the {n} "
                          "rollouts give the expected output (--select verified shows one):",
            "none": "[bold red]wrong[/]: none of the {rollouts} gives the expected output; "
                    "shown: {pick}:",
            "stopped": "an answer was the expected output", "valid": "correct",
            "rejected": "is not the expected output"},
}


def _shown_pick(selector: str) -> str:
    """The rollout shown when none is rules-valid, in words: `verified` falls back to best_q."""
    return "the most confident rollout" if selector in ("verified", "best_q") else \
        f"the {selector} pick"


def _try_harder(res: "solver.SolveResult", s: dict) -> str:
    """What to run next when no rollout was rules-valid: each rollout is another noisy try, so
    more of them (and the time to run them), or other noise, can find one these did not."""
    more = f"--K {min(4 * s['K'], MAX_ROLLOUTS)}"
    if s["time_limit"] is not None:  # more rollouts would only hit the same limit
        more += " --time-limit 0 (no time limit" + \
            ("; minutes on a CPU)" if s["device"] == "cpu" else ")")
    return f"more rollouts, {more}; or other noise, --seed {s['seed'] + 1}"


def _unjudged(c, fmt: str) -> str:
    """Why nothing judged the answer, said of the input as it was given: a whole task reaches
    this path only with a model that cannot take the task (no per-task embeddings), which ran
    its first test input alone; anything else was a lone grid."""
    if fmt == "task":
        return ("the task's first test input has no known output to check against; this model "
                "has no per-task embeddings, so it answered that input alone, without the "
                "task's demonstrations (a TRM ARC model with per-task embeddings runs the whole "
                "task: docs/MAZE_ARC.md)")
    return (f"a lone {c.name} grid has no known output to check against (give the task file "
            "and --task ID for its demos)")


def _set_threads(threads: int | None, cpu_defaults: dict) -> None:
    """torch's CPU threads: the given number, else our default, which the output states."""
    import torch

    from .. import solver

    torch.set_num_threads(threads or solver.cpu_threads())
    if threads is None:
        cpu_defaults["threads"] = torch.get_num_threads()


# -- ARC tasks -----------------------------------------------------------------------------------

def _many_tasks(input: str) -> bool:
    """A JSON file too big for one puzzle: a Kaggle challenges file (ARC's come in MBs), which
    the task path reads whole and asks which task to solve."""
    from ..solver import MAX_INPUT_BYTES

    path = Path(input).expanduser()
    try:
        return path.suffix == ".json" and path.is_file() and \
            path.stat().st_size > MAX_INPUT_BYTES
    except (OSError, ValueError):
        return False


def _task_model(loaded) -> bool:
    """An ARC model with per-task embeddings: it solves tasks, not lone grids."""
    from ..arc_ids import has_table

    return loaded.vocab.family == "arc" and has_table(loaded.config)


def _not_a_task_file(input: str, path: Path) -> PtrmError:
    """INPUT of `--task` that is no file: a folder (`ptrm solve . --task X`) is said as one,
    with the file inside it that was meant."""
    what = "--task reads an ARC task file or a Kaggle challenges file"
    try:
        is_dir = path.is_dir()
    except (OSError, ValueError):  # a name too long, or with a NUL: not a folder either
        is_dir = False
    if not is_dir:
        return PtrmError(f"{input}: no such file", hint=what)
    # a Kaggle download is a folder of such files: name the ones it holds
    held = sorted(str(f) for f in path.glob("*_challenges.json"))
    shown = f"; this one holds {', '.join(held[:3])}" + (", ..." if len(held) > 3 else "") \
        if held else ""
    return PtrmError(f"{input} is a folder, not an ARC task file",
                     hint=f"{what}: pass the file itself{shown}")


def _solve_arc_task(input: str, task_id: str | None, model, *, K, D, sigma, perturb, seed,
                    views, time_limit, threads, identifiers, device, budget, as_json,
                    text: str | None = None, source: str | None = None):
    """`model`: a checkpoint argument, or the model already loaded. Always exits."""
    from .. import arc_ids, arc_solve, solver

    if text is None and input == "-":
        text, source = solver.read_input(input)
    path = None if input == "-" else Path(input).expanduser()
    if path is not None and not path.is_file():
        raise _not_a_task_file(input, path)
    task_id, task = arc_solve.read_task(path, task_id, text=None if path else text,
                                        source=source or input)
    loaded = model if isinstance(model, solver.LoadedModel) else \
        arc_solve.load_model(model, device)
    arc_solve.check_model(loaded)
    table = arc_ids.table_for(loaded, identifiers)
    # said before the progress bar starts: an error raised under it follows the line the bar
    # leaves behind on stderr
    if not table.views(task_id):
        raise arc_solve.no_views_error(loaded, table, task_id)
    D = D or loaded.config.halt_max_steps
    sigma, sigma_source, perturb = loaded.noise_choice(sigma, perturb)
    cpu_defaults = {}
    if device == "cpu":  # CPU-sized defaults for what the user left out, stated in the output
        given = {"K": K, "time_limit": time_limit}
        cpu_defaults = {k: v for k, v in ARC_CPU_DEFAULTS.items() if given[k] is None}
        K = K if K is not None else ARC_CPU_DEFAULTS["K"]
        time_limit = time_limit if time_limit is not None else ARC_CPU_DEFAULTS["time_limit"]
        _set_threads(threads, cpu_defaults)
    K = K if K is not None else ARC_GPU_K
    time_limit = time_limit if time_limit and time_limit < math.inf else None  # 0, inf: none
    chunk_rows = solver.plan_chunk_rows(loaded.config, K, D,
                                        budget or solver.default_memory(device))
    kwargs = dict(K=K, D=D, sigma=sigma, perturb=perturb, seed=seed, max_views=views,
                  chunk_rows=chunk_rows, time_limit=time_limit)
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, \
        TimeElapsedColumn

    with Progress(TextColumn("views"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=err_console, transient=True) as bar:
        job = bar.add_task("views", total=None)
        res = arc_solve.solve_task(loaded, task_id, task, table, **kwargs,
                                   on_progress=lambda done, n: bar.update(job, completed=done,
                                                                          total=n))

    # the checkpoint absolute, as eval's reports and a puzzle's --json record it
    settings = dict(device=device, checkpoint=report_path(loaded.path), source=source or input,
                    time_limit=time_limit, cpu_defaults=cpu_defaults or None,
                    sigma_source=sigma_source)
    if as_json:
        typer.echo(solver.to_json(arc_solve.to_dict(res, **settings)))
    else:
        console.print(arc_solve.render(res))
        console.print(f"[dim]task {esc(res.task)} · {res.views}/{res.views_known} views x "
                      f"{len(res.tests)} test input(s) x K={K}: {res.rollouts} rollouts in "
                      f"{res.time_s:.2f} s · D={D} sigma={sigma:g}"
                      f"{solver.SIGMA_NOTES[sigma_source]} perturb={perturb} "
                      f"seed={seed} device={device} · best Q per view, vote across views · "
                      f"identifiers {esc(res.identifiers)} · {esc(loaded.path)}[/]",
                      highlight=False, soft_wrap=True)
        if cpu_defaults:
            parts = [f"{k.replace('_', '-')}={v:g}" for k, v in cpu_defaults.items()]
            console.print(f"[dim]CPU defaults: {' '.join(parts)} (GPU: K={ARC_GPU_K}, no time "
                          f"limit); set --K, --time-limit, --views, --threads to change[/]",
                          highlight=False, soft_wrap=True)
    raise typer.Exit(EXIT_SOLVED if res.answered and res.solved is not False else EXIT_UNSOLVED)
