"""Options shared by several commands, defined once."""

from __future__ import annotations

import typer

from .devices import resolve_device  # noqa: F401  (the commands import it from here)

DEVICE = typer.Option("auto", "--device", help="auto | cpu | cuda | cuda:N | mps")
SEED = typer.Option(0, "--seed", min=0, help="Random seed: the same seed gives the same result.")
JSON = typer.Option(False, "--json", help="Print machine-readable JSON instead of tables.")


def threads_option(default_text: str):
    """`--threads N`: torch's CPU threads (`set_threads`). A CPU sums in another order with
    another count, so bitwise-equal results need the same number."""
    return typer.Option(None, "--threads", min=1, max=4096, show_default=default_text,
                        help="CPU threads for torch (results repeat bit for bit only with the "
                             "same number).")


def set_threads(threads: int | None) -> None:
    """Give torch `threads` CPU threads, here and in the processes this one starts (torchrun's
    ranks read OMP_NUM_THREADS). None: leave torch's choice."""
    if threads is None:
        return
    import os

    import torch

    os.environ["OMP_NUM_THREADS"] = str(threads)
    torch.set_num_threads(threads)


def type_list(text: str | None) -> list[str] | None:
    """`--types tapa,nurikabe` -> ['tapa', 'nurikabe']; left out (or '') -> None, every type.
    Commas with no name between them (`--types ,`) name nothing: an error, not an empty
    selection that would skip every puzzle."""
    from .errors import PtrmError

    if not text:
        return None
    names = [t.strip() for t in text.split(",") if t.strip()]
    if not names:
        raise PtrmError(f"--types {text!r} names no puzzle type",
                        hint="e.g. --types tapa,nurikabe; leave it out for every type")
    return names


PERTURB_HELP = ("Where the noise goes: z (the paper), y, both, or init (z before the first step "
                "only). The model's σ is for its own target: another one needs --sigma too.")


def check_perturb(perturb: str | None) -> None:
    """`--perturb` names a noise target the sampler knows (None: the checkpoint's, chosen
    once the model is loaded)."""
    from .engine.sampler import PERTURB
    from .errors import PtrmError

    if perturb is not None and perturb not in PERTURB:
        raise PtrmError(f"--perturb {perturb!r}: expected {', '.join(PERTURB[:-1])} or "
                        f"{PERTURB[-1]}")


def given_options(ctx: typer.Context, keep: set[str]) -> list[str]:
    """The options given on the command line (or by environment), other than `keep`, by their
    first name: those a mode of a command cannot honour (eval --merge, build-data --family
    arc), default value or not."""
    # by the enum's name: newer typer releases vendor their own click, with its own enum
    return [p.opts[0] for p in ctx.command.params if p.name not in keep and
            getattr(ctx.get_parameter_source(p.name), "name", None) in ("COMMANDLINE",
                                                                         "ENVIRONMENT")]

