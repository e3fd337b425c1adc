"""Adaptive compute: what a stopping rule saves and what it costs, computed from one fixed run.

The fast engine (fast.py) can stop a puzzle as soon as one of its rollouts satisfies the rules
or is confident (sigmoid(Q) > threshold), checking every few steps, and can start rollouts in
waves (the next wave only if the previous one did not stop the puzzle). Because a rollout's
trajectory does not depend on what else runs beside it (counter-based noise, rows computed
independently), what such a run would do is fully determined by the per-step Q and
predictions of a fixed K x D run: `simulate` replays any policy on a recorded run (exactly:
the same rollout, step and answer the engine picks) and `curve` sweeps policies into an
accuracy / compute curve. tests/test_fast.py checks the replay against real adaptive runs.

Cost is counted in supervision steps computed, summed over rollouts ("row-steps"), times the
FLOPs of one step (model.flops_per_step): a puzzle stopped at step t of its first wave of W
rollouts cost W*t row-steps; fixed K x D costs K*D.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np
import torch

from .fast import _sigmoid


@dataclass(frozen=True)
class Policy:
    K: int                       # rollouts at most
    D: int                       # supervision steps per rollout at most
    wave: int | None = None      # rollouts per wave (None: all K at once)
    check_every: int | None = None  # steps between checks (None: only at D)
    q_threshold: float | None = None  # stop when a rollout has sigmoid(Q) above this
    rules: bool = False          # stop when a rollout satisfies the rules
    select: str = "best_q"       # the answer when it never stops: best_q or verified

    @property
    def adaptive(self) -> bool:
        return self.rules or self.q_threshold is not None

    @property
    def name(self) -> str:
        if not self.adaptive:
            return f"fixed K={self.K} D={self.D} ({self.select})"
        rule = "+".join((["rules"] if self.rules else []) +
                        ([f"q>{self.q_threshold:g}"] if self.q_threshold is not None else []))
        return (f"adaptive {rule} K={self.K} D={self.D} wave={self.wave or self.K} "
                f"every={self.check_every or self.D}")

    def checks(self) -> list[int]:
        """The steps (1-based) at which a rollout is checked."""
        if not self.adaptive:
            return [self.D]
        c = self.check_every or self.D
        return sorted(set(range(c, self.D + 1, c)) | {self.D})


def steps_needed(policies: list[Policy]) -> list[int]:
    return sorted({t for p in policies for t in p.checks()})


def step_validity(step_preds: torch.Tensor, verifiers, steps: list[int],
                  progress=None) -> torch.Tensor:
    """[P, K, D] bool rules verdicts of the recorded predictions at the given steps (1-based;
    False at the others). verifiers[p] is a solver.Verifier (cached per distinct answer)."""
    P, K, D, _ = step_preds.shape
    out = torch.zeros(P, K, D, dtype=torch.bool)
    for p in range(P):
        for t in steps:
            out[p, :, t - 1] = verifiers[p].valid(step_preds[p, :, t - 1].long())
        if progress is not None:
            progress(p + 1, P)
    return out


def simulate(policy: Policy, step_q: torch.Tensor, step_preds: torch.Tensor | None = None,
             valid: torch.Tensor | None = None, labels: torch.Tensor | None = None) -> dict:
    """Replay `policy` on a recorded fixed run: step_q [P, K, D], step_preds [P, K, D, L],
    valid [P, K, D] (needed for rules and the verified selector), labels [P, L] (for label
    accuracy). Returns per-puzzle choices and the totals."""
    P, K, D = step_q.shape
    Km, Dm = policy.K, policy.D
    if Km > K or Dm > D:
        raise ValueError(f"{policy.name}: the recorded run has only K={K}, D={D}")
    if (policy.rules or policy.select == "verified") and valid is None:
        raise ValueError(f"{policy.name} needs rules verdicts")
    W = min(policy.wave or Km, Km)
    nw = -(-Km // W)
    checks = policy.checks()
    ci = np.asarray(checks) - 1
    q = step_q[:, :Km].numpy().astype(np.float32)  # [P, Km, D]
    v = valid[:, :Km].numpy() if valid is not None else None
    sizes = np.minimum(W, Km - W * np.arange(nw))  # rollouts per wave

    trig = np.zeros((P, nw * W, len(ci)), bool)
    vtrig = np.zeros_like(trig)
    if policy.rules:
        vtrig[:, :Km] = v[:, :, ci]
    if policy.q_threshold is not None:
        trig[:, :Km] = _sigmoid(q[:, :, ci]) > policy.q_threshold
    trig |= vtrig
    fired = trig.reshape(P, nw, W, len(ci)).any(2).reshape(P, nw * len(ci))
    stopped = fired.any(1) & policy.adaptive
    first = fired.argmax(1)
    w_stop, c_stop = first // len(ci), first % len(ci)

    chosen_k = np.zeros(P, np.int64)
    chosen_t = np.full(P, Dm, np.int64)  # 1-based step of the chosen prediction
    row_steps = np.full(P, Km * Dm, np.int64)
    for p in range(P):
        if stopped[p]:
            w, c = int(w_stop[p]), int(c_stop[p])
            ks = np.arange(w * W, w * W + sizes[w])
            vs = vtrig[p, ks, c]
            cand = ks[vs] if vs.any() else ks[trig[p, ks, c]]
            chosen_k[p] = cand[np.argmax(q[p, cand, ci[c]])]
            chosen_t[p] = checks[c]
            row_steps[p] = int(sizes[:w].sum()) * Dm + int(sizes[w]) * checks[c]
        else:
            finals = q[p, :, Dm - 1]
            if policy.rules or policy.select == "verified":
                ok = v[p, :, Dm - 1]
                if ok.any():
                    cand = np.nonzero(ok)[0]
                    chosen_k[p] = cand[np.argmax(finals[cand])]
                    continue
            chosen_k[p] = int(np.argmax(finals))
    out = {"policy": policy.name, **asdict(policy), "stopped": stopped.tolist(),
           "chosen_k": chosen_k.tolist(), "chosen_t": chosen_t.tolist(),
           "row_steps": row_steps.tolist(),
           "row_steps_per_puzzle": float(row_steps.mean()),
           "stopped_frac": float(stopped.mean()),
           "compute_vs_fixed": float(row_steps.mean() / (K * D))}
    ar = np.arange(P)
    if valid is not None:
        ok = valid.numpy()[ar, chosen_k, chosen_t - 1]
        out["rules_ok"] = ok.tolist()
        out["acc_rules"] = float(ok.mean())
    if labels is not None and step_preds is not None:
        from .metrics import correct

        ans = step_preds[torch.as_tensor(ar), torch.as_tensor(chosen_k),
                         torch.as_tensor(chosen_t - 1)].long()
        ok = correct(ans, labels)
        out["label_ok"] = ok.tolist()
        out["acc_label"] = float(ok.float().mean())
    return out


def default_policies(K: int, D: int, *, rules: bool) -> list[Policy]:
    """The sweep behind the curve: fixed K' x D' (smaller width and depth), Q-threshold and
    rules stopping with waves of several sizes and checks every 1, 2, 4, 8 steps."""
    sel = ("best_q", "verified") if rules else ("best_q",)
    ks = sorted({k for k in (1, 2, 5, 10, 20, 25, 50, 100, 200, 500, 1000) if k <= K} | {K})
    ds = sorted({d for d in (4, 8, 16, 24, 32, 48, 64, 96) if d <= D} | {D})
    out = [Policy(k, d, select=s) for k in ks for d in ds for s in sel]
    waves = sorted({w for w in (1, 2, 5, 10, 25, K) if w <= K})
    checks = sorted({c for c in (1, 2, 4, 8) if c <= D})
    for w in waves:
        for c in checks:
            for tau in (0.5, 0.7, 0.9, 0.95, 0.99, 0.999):
                out.append(Policy(K, D, w, c, q_threshold=tau))
            if rules:
                out.append(Policy(K, D, w, c, rules=True, select="verified"))
                for tau in (0.9, 0.99):
                    out.append(Policy(K, D, w, c, q_threshold=tau, rules=True,
                                      select="verified"))
    return out


def pareto(points: list[dict], acc_key: str) -> list[dict]:
    """Points not beaten on both compute and accuracy, cheapest first."""
    pts = sorted(points, key=lambda r: (r["row_steps_per_puzzle"], -r[acc_key]))
    front, best = [], -math.inf
    for r in pts:
        if r[acc_key] > best:
            front.append(r)
            best = r[acc_key]
    return front


def curve(step_q: torch.Tensor, step_preds: torch.Tensor, *, valid: torch.Tensor | None,
          labels: torch.Tensor | None, flops_per_step: int,
          policies: list[Policy] | None = None) -> dict:
    """Every policy replayed; the Pareto front; and the cheapest policy that matches the fixed
    full run (K x D, same selector) in accuracy. Accuracy is judged by the rules when the
    puzzles have a verifier (as `ptrm eval` judges), by label match otherwise: label match also
    scores cells the rules leave free (clues the model copies), and a deeper run that rewrites
    one of those is no worse a solution."""
    P, K, D = step_q.shape
    rules = valid is not None
    policies = policies or default_policies(K, D, rules=rules)
    rows = []
    for pol in policies:
        r = simulate(pol, step_q, step_preds, valid, labels)
        r["flops_per_puzzle"] = r["row_steps_per_puzzle"] * flops_per_step
        rows.append({k: v for k, v in r.items() if not isinstance(v, list)})
    acc_key = "acc_rules" if rules else "acc_label"
    return {"K": K, "D": D, "puzzles": P, "flops_per_step": flops_per_step, "points": rows,
            **summarize(rows, K, D, acc_key)}


def summarize(points: list[dict], K: int, D: int, acc_key: str) -> dict:
    """The Pareto front of `points` (replayed policies) and, per selector, the fixed K x D run
    against the cheapest policy at least as accurate, judged by `acc_key`."""
    summary = {}
    for sel in sorted({r["select"] for r in points}):
        base = next((r for r in points if r["K"] == K and r["D"] == D and r["select"] == sel
                     and not (r["rules"] or r["q_threshold"] is not None)), None)
        if base is None:
            continue
        match = [r for r in points if r[acc_key] >= base[acc_key] - 1e-12]
        best = min(match, key=lambda r: (r["row_steps_per_puzzle"], -r[acc_key]))
        summary[sel] = {"fixed": _brief(base, acc_key), "cheapest_at_same_accuracy":
                        _brief(best, acc_key),
                        "compute_saving": base["row_steps_per_puzzle"] /
                        max(best["row_steps_per_puzzle"], 1e-9)}
    return {"accuracy": acc_key, "pareto": [_brief(r, acc_key) for r in pareto(points, acc_key)],
            "summary": summary}


def _brief(r: dict, acc_key: str) -> dict:
    keys = ("policy", "row_steps_per_puzzle", "flops_per_puzzle", "compute_vs_fixed",
            "stopped_frac", "acc_label", "acc_rules")
    return {k: r[k] for k in keys if k in r} | {"accuracy": r[acc_key]}


def main(argv: list[str] | None = None) -> int:
    """Print the Pareto front and the matching-accuracy summary of a saved `ptrm bench --modes
    curve` report (its replayed points), judged by the rules or by label match."""
    import argparse
    import json

    ap = argparse.ArgumentParser(prog="python -m ptrm_cli.engine.adaptive",
                                 description=main.__doc__)
    ap.add_argument("report", help="a report.json written by `ptrm bench --modes curve --out`")
    ap.add_argument("--judge", choices=("rules", "label"),
                    help="default: rules where the run verified its answers, else label")
    args = ap.parse_args(argv)
    try:
        with open(args.report, encoding="utf-8") as f:
            report = json.load(f)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        ap.error(f"{args.report}: cannot read it as JSON ({e})")
    modes = report.get("modes") if isinstance(report, dict) else None
    curves = [e["curve"] for e in modes if isinstance(e, dict) and
              isinstance(e.get("curve"), dict)] if isinstance(modes, list) else []
    if not curves:
        ap.error(f"{args.report}: no curve in this report (run `ptrm bench --modes curve`)")
    for c in curves:
        points = c.get("points")
        if not isinstance(points, list) or not points or \
                not all(isinstance(r, dict) for r in points) or \
                not all(k in c for k in ("K", "D", "puzzles")):
            ap.error(f"{args.report}: the curve has no replayed points (K, D, puzzles, points)")
        judge = args.judge or ("rules" if all("acc_rules" in r for r in points) else "label")
        key = f"acc_{judge}"
        needed = (key, "policy", "K", "D", "select", "rules", "q_threshold",
                  "row_steps_per_puzzle", "flops_per_puzzle", "compute_vs_fixed", "stopped_frac")
        if missing := sorted({k for r in points for k in needed if k not in r}):
            ap.error(f"{args.report}: the points lack {', '.join(missing)}")
        res = summarize(points, c["K"], c["D"], key)
        print(f"{c['puzzles']} puzzles, K={c['K']} D={c['D']}, judged by {judge}")
        print("| policy | compute vs fixed | FLOP / puzzle | stopped early | accuracy |")
        print("|---|---:|---:|---:|---:|")
        for r in res["pareto"]:
            print(f"| {r['policy']} | {r['compute_vs_fixed']:.4f} | {r['flops_per_puzzle']:.3e} "
                  f"| {100 * r['stopped_frac']:.0f}% | {100 * r['accuracy']:.1f}% |")
        if not res["summary"]:
            print(f"no fixed K={c['K']} D={c['D']} run among the points: nothing to compare with")
        for sel, s in res["summary"].items():
            f, b = s["fixed"], s["cheapest_at_same_accuracy"]
            print(f"{sel}: fixed K={c['K']} D={c['D']} {100 * f['accuracy']:.1f}%; cheapest at "
                  f"least as accurate: {b['policy']} {100 * b['accuracy']:.1f}%, "
                  f"{s['compute_saving']:.2f}x less compute")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
