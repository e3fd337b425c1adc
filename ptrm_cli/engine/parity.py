"""Parity with the official TRM: our network against the reference's golden fixtures.

A fixture (`trm_fixture_{name}.pt`, TRM_REFERENCE.md §9) holds a tiny reference model's config,
its state_dict, one batch and the outputs of every supervision step. The tests hold our model to
them; run as a module it prints the measured differences (docs/ENGINE.md "Parity"), so anyone can
check an installation or a change of the network against the reference:

    python -m ptrm_cli.engine.parity [FIXTURES_DIR]      # default: ../shared/fixtures/trm
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch

from .model import TRM, TRMConfig

#: the repository's neighbour, where the fixtures live in this workplace
DEFAULT_DIR = Path(__file__).resolve().parents[3] / "shared" / "fixtures" / "trm"
FIXTURES = ("att_fp32", "mlp_fp32", "att_bf16")
PREFIX = "_orig_mod.model.inner."
REFERENCE_ONLY = ("H_layers", "no_ACT_continue", "batch_size")  # reference config keys we drop


def load_fixture(path: Path) -> tuple[TRM, dict]:
    """Our TRM with the fixture's weights (eval mode), and the fixture itself."""
    fx = torch.load(path, weights_only=True)
    cfg = TRMConfig.from_dict({k: v for k, v in fx["config"].items() if k not in REFERENCE_ONLY})
    state = {k.removeprefix(PREFIX): v for k, v in fx["state_dict"].items()}
    return TRM.from_state_dict(cfg, state).eval(), fx


def run_steps(model: TRM, batch: dict, steps: int) -> list:
    """`steps` supervision steps from the initial carry, the output of each."""
    x = model.embed(batch["inputs"], batch["puzzle_identifiers"])
    carry = model.init_carry(x.shape[0])
    outs = []
    with torch.no_grad():
        for _ in range(steps):
            out = model.step(carry, x)
            carry = out.carry
            outs.append(out)
    return outs


def max_errors(out, ref: dict) -> dict:
    """Max |ours - reference| of each output of one step."""
    return {"logits": (out.logits.float() - ref["logits"]).abs().max().item(),
            "q_halt": (out.q_halt - ref["q_halt_logits"]).abs().max().item(),
            "q_continue": (out.q_continue - ref["q_continue_logits"]).abs().max().item(),
            "z_H": (out.carry.y.float() - ref["z_H"]).abs().max().item(),
            "z_L": (out.carry.z.float() - ref["z_L"]).abs().max().item()}


def measure(path: Path) -> list[dict]:
    """Per step of the fixture: its max errors and the share of predictions that agree."""
    model, fx = load_fixture(path)
    outs = run_steps(model, fx["batch"], len(fx["per_step"]))
    return [{"step": i, **max_errors(out, ref),
             "preds_agree": (out.preds == ref["preds"]).float().mean().item()}
            for i, (out, ref) in enumerate(zip(outs, fx["per_step"]), 1)]


def main(argv: list[str]) -> int:
    import argparse

    p = argparse.ArgumentParser(prog="python -m ptrm_cli.engine.parity",
                                description="Our TRM against the reference outputs in the TRM "
                                            "fixtures: max |ours - reference| per supervision "
                                            "step, as a markdown table.")
    p.add_argument("folder", nargs="?", type=Path, default=DEFAULT_DIR,
                   help=f"where trm_fixture_{{{','.join(FIXTURES)}}}.pt are (default: "
                        f"{DEFAULT_DIR})")
    folder = p.parse_args(argv).folder
    if not all((folder / f"trm_fixture_{n}.pt").exists() for n in FIXTURES):
        print(f"no TRM fixtures in {folder} (trm_fixture_{{{','.join(FIXTURES)}}}.pt)",
              file=sys.stderr)
        return 2
    print(f"max |ours - reference| per supervision step, torch {torch.__version__}, CPU")
    print("| fixture | step | logits | q_halt | q_continue | z_H (y) | z_L (z) | preds agree |")
    print("|---|---|---|---|---|---|---|---|")
    for name in FIXTURES:
        for r in measure(folder / f"trm_fixture_{name}.pt"):
            print(f"| {name} | {r['step']} | {r['logits']:.2g} | {r['q_halt']:.2g} | "
                  f"{r['q_continue']:.2g} | {r['z_H']:.2g} | {r['z_L']:.2g} | "
                  f"{r['preds_agree']:.0%} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
