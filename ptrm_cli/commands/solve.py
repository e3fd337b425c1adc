"""`ptrm solve`: one puzzle, K noisy rollouts, the verified best answer.

Exit codes: 0 the shown answer satisfies the rules; 1 no rules-valid answer was found;
2 a usage or input error (bad file, unknown codec, wrong checkpoint, bad option).
"""

from __future__ import annotations

import typer

from .. import solver
from ..console import console, err_console
from ..errors import PtrmError
from ..options import DEVICE, JSON, resolve_device

EXIT_SOLVED, EXIT_UNSOLVED = 0, 1  # usage errors: PtrmError.exit_code (2)
PERTURB_HELP = ("Where the noise goes: z (the paper), y, both, or init (z before the first step "
                "only).")


def solve(
    input: str = typer.Argument(..., help="Puzzle file, puzz.link URL, or - for stdin.",
                                show_default=False),
    K: int = typer.Option(100, "--K", min=1, help="Rollouts (width)."),
    D: int = typer.Option(None, "--D", min=1, show_default="the model's N_sup",
                          help="Supervision steps per rollout (depth)."),
    sigma: float = typer.Option(0.2, "--sigma", min=0.0, help="Noise scale added to the latent."),
    perturb: str = typer.Option("z", "--perturb", help=PERTURB_HELP),
    select: str = typer.Option("verified", "--select",
                               help="verified | best_q | mode | q_vote (see docs/INFERENCE.md)."),
    early_stop: bool = typer.Option(True, "--early-stop/--no-early-stop",
                                    help="With --select verified: stop after the first wave "
                                         "that holds a rules-valid rollout."),
    wave: int = typer.Option(None, "--wave", min=1, show_default="K on GPU, 4 on CPU",
                             help="Rollouts per wave."),
    checkpoint: str = typer.Option(None, "--checkpoint", "-c", show_default="the bundled model",
                                   help="Checkpoint folder (or official TRM step file)."),
    codec: str = typer.Option(None, "--codec", help="Puzzle type; overrides auto-detection."),
    device: str = DEVICE,
    memory: str = typer.Option(None, "--memory", show_default="2GB on CPU, 60% of free GPU memory",
                               help="Memory budget of one forward chunk, e.g. 2GB."),
    seed: int = typer.Option(0, "--seed", min=0,
                             help="Random seed: the same seed gives the same result."),
    as_json: bool = JSON,
):
    """Solve one puzzle with PTRM: K noisy rollouts, pick one, check it against the rules."""
    if perturb not in ("z", "y", "both", "init"):
        raise PtrmError(f"--perturb {perturb!r}: expected z, y, both or init")
    if seed >= 2**63:
        raise PtrmError("--seed must be below 2**63")
    if select not in solver.SELECTORS:
        raise PtrmError(f"--select {select!r}: expected {', '.join(solver.SELECTORS)}")
    device = resolve_device(device)
    budget = solver.parse_memory(memory)
    text, source = solver.read_input(input)
    c, parsed = solver.parse_puzzle(text, codec=codec, source=source)
    loaded = solver.load_model(checkpoint, device)
    family = solver.family_for(c, loaded)
    D = D or loaded.config.halt_max_steps
    if wave is None:
        wave = K if device != "cpu" else min(K, 4)
    # one wave is one forward batch (a puzzle's rollouts are never split): keep it in budget
    budget = budget or solver.default_memory(device)
    wave = max(1, min(wave, K, budget // solver.bytes_per_row(loaded.config, D)))
    chunk_rows = wave

    kwargs = dict(K=K, D=D, sigma=sigma, perturb=perturb, seed=seed, selector=select,
                  early_stop=early_stop, wave=wave, chunk_rows=chunk_rows)
    if wave < K:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, \
            TimeElapsedColumn

        with Progress(TextColumn("rollouts"), BarColumn(), MofNCompleteColumn(),
                      TimeElapsedColumn(), console=err_console, transient=True) as bar:
            task = bar.add_task("rollouts", total=K)
            res = solver.solve_puzzle(loaded, c, parsed.puzzle, family,
                                      on_wave=lambda done, _: bar.update(task, completed=done),
                                      **kwargs)
    else:
        res = solver.solve_puzzle(loaded, c, parsed.puzzle, family, **kwargs)

    # the input may carry an answer (pzprv3 with answers, a dataset record): compare only with
    # a complete, rules-valid one (pzprv3 files carry an empty answer grid, too)
    given = parsed.solution
    matches = None
    if given is not None and not c.verify(parsed.puzzle, given):
        matches = bool(res.solution == given)
    settings = dict(K=K, D=D, sigma=sigma, perturb=perturb, seed=seed, selector=select,
                    device=device, checkpoint=loaded.path)
    if as_json:
        typer.echo(solver.to_json(_json(res, parsed, source, matches, settings)))
    else:
        _show(res, matches, settings)
    raise typer.Exit(EXIT_SOLVED if res.valid else EXIT_UNSOLVED)


def _json(res: solver.SolveResult, parsed, source: str, matches, s: dict) -> dict:
    c = res.codec
    try:
        pzprv3 = c.to_pzprv3(res.puzzle, res.solution)
    except PtrmError:
        pzprv3 = None
    return {
        "type": c.name, "solved": res.valid, "valid": res.valid,
        "violations": [{"code": v.code, "message": v.message, "cells": [list(x) for x in v.cells]}
                       for v in res.violations],
        "solution": {"pzprv3": pzprv3, "grid": res.solution.grid.astype(int).tolist(),
                     "url": c.solution_url(res.puzzle, res.solution)},
        "confidence": res.confidence, "q": res.q, "agree": res.agree,
        "K": s["K"], "D": s["D"], "sigma": s["sigma"], "seed": s["seed"],
        "selector": s["selector"], "time_s": round(res.time_s, 4), "checkpoint": s["checkpoint"],
        "perturb": s["perturb"], "device": s["device"], "rollouts": res.rollouts,
        "valid_rollouts": res.valid_rollouts, "distinct_answers": res.distinct,
        "waves": res.waves, "stopped_early": res.stopped_early, "matches_answer": matches,
        "source": source, "format": parsed.format,
    }


def _show(res: solver.SolveResult, matches, s: dict) -> None:
    c = res.codec
    console.print(c.render(res.puzzle, res.solution))
    if res.valid:
        console.print(f"[bold green]solved[/]: the answer satisfies every {c.name} rule",
                      highlight=False)
    else:
        console.print(f"[bold red]no rules-valid solution[/] among {res.rollouts} rollouts; "
                      f"shown: the {s['selector']} pick, which breaks "
                      f"{len(res.violations)} rule(s):", highlight=False)
        for v in res.violations[:5]:
            console.print(f"  [red]{v.code}[/] {v.message}", highlight=False)
        if len(res.violations) > 5:
            console.print(f"  ... and {len(res.violations) - 5} more", highlight=False)
    if matches is not None:
        console.print("matches the answer given in the input" if matches
                      else "[yellow]differs from the answer given in the input[/]")
    early = f" (stopped early of K={s['K']})" if res.stopped_early else ""
    console.print(
        f"confidence {res.confidence:.3f} (Q {res.q:+.2f}) · {res.agree}/{res.rollouts} rollouts "
        f"agree · {res.valid_rollouts} valid · {res.rollouts} rollouts{early} in "
        f"{res.time_s:.2f} s", highlight=False)
    url = c.solution_url(res.puzzle, res.solution)
    if url:
        console.print(f"open: {url}", highlight=False, soft_wrap=True)
    console.print(f"[dim]K={s['K']} D={s['D']} sigma={s['sigma']:g} perturb={s['perturb']} "
                  f"select={s['selector']} seed={s['seed']} device={s['device']} · "
                  f"{s['checkpoint']}[/]", highlight=False, soft_wrap=True)
