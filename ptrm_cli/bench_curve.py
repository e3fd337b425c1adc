"""`ptrm bench --modes curve`: accuracy against compute for every adaptive policy, from one run.

Rollouts do not depend on their neighbours, so any stopping policy can be replayed exactly on
a fixed run that recorded each step's Q and predictions (engine/adaptive.py). The curve
records that run once, checks the recorded answers with the rules (when the puzzles have a
verifier), replays every default policy, and keeps the Pareto front and the cheapest policy
that matches the fixed run's accuracy; when that policy is adaptive it is then run for real, as
a check on the replay (same choices, same FLOPs).
"""

from __future__ import annotations

import time

import numpy as np

from .bench_modes import Bench, accuracy
from .bench_setup import log


def curve_mode(b: Bench) -> dict:
    """Record one fixed run's per-step Q and predictions, replay every policy, run the best."""
    from .engine import adaptive

    o, pz, verify, fps, peak = b.o, b.pz, b.verify, b.fps, b.peak
    if pz.labels is None and verify is None:
        raise ValueError("the curve needs labelled puzzles (--split golden, or --split val "
                         "--data DIR)")
    eng = b.fast_engine()
    P, K, D = b.P, o.K, o.D
    # warm first, as every other mode: alone (no fast mode before it) the recorded run's time
    # held the engine's first run, the compile on a GPU (693 against 17 ms/puzzle on a CPU)
    log("curve: warm-up (D=2)")
    _, t_warm, _ = b.timed(lambda: b.fast_run(eng, 2, record_steps=True))
    log("curve: recording a fixed run (per-step Q and predictions)")
    rec, t_rec, _ = b.timed(lambda: b.fast_run(eng, D, record_steps=True))
    valid = None
    if verify is not None:
        pols = adaptive.default_policies(K, D, rules=True)
        steps = adaptive.steps_needed(pols)
        log(f"curve: verifying recorded predictions at {len(steps)} steps")
        t0 = time.perf_counter()
        every = max(1, P // 10)
        valid = adaptive.step_validity(
            rec.step_preds, pz.verifiers, steps,
            progress=lambda i, n: log(f"curve: verified {i}/{n} puzzles") if i % every == 0
            else None)
        t_ver = time.perf_counter() - t0
    else:
        pols, t_ver = adaptive.default_policies(K, D, rules=False), 0.0
    log(f"curve: replaying {len(pols)} policies")
    cur = adaptive.curve(rec.step_q, rec.step_preds, valid=valid, labels=pz.labels,
                         flops_per_step=fps, policies=pols)
    # run the cheapest policy that matches the fixed run for real, and check the replay
    check = {}
    sel = "verified" if valid is not None else "best_q"
    best_name = cur["summary"][sel]["cheapest_at_same_accuracy"]["policy"]
    pol = next(p for p in pols if p.name == best_name)
    if pol.adaptive:
        log(f"curve: running {pol.name} for real")
        kw = dict(check_every=pol.check_every, wave=pol.wave, q_threshold=pol.q_threshold,
                  verify=verify if pol.rules else None)
        real, t_real, mem = b.timed(lambda: b.fast_run(eng, pol.D, K_run=pol.K, **kw))
        # the replay must agree with the real run: same rollouts, same stops, same FLOPs
        sim = adaptive.simulate(pol, rec.step_q, rec.step_preds, valid, pz.labels)
        check = {"policy": pol.name, "time_s": t_real, "ms_per_puzzle": 1e3 * t_real / P,
                 "flops_per_puzzle": real.flops / P,
                 "replay_flops_per_puzzle": sim["row_steps_per_puzzle"] * fps,
                 "same_choices_as_replay": float(np.mean(np.asarray(sim["chosen_k"]) ==
                                                         real.chosen.numpy())),
                 "tflops": real.flops / t_real / 1e12, **accuracy(real.answer, pz)}
    fixed_t = t_rec
    return {"mode": "curve", "time_s": fixed_t, "ms_per_puzzle": 1e3 * fixed_t / P,
            "flops": P * K * D * fps, "flops_per_puzzle": K * D * fps,
            "tflops": P * K * D * fps / fixed_t / 1e12,
            "share_of_peak": P * K * D * fps / fixed_t / 1e12 / peak["tflops"],
            "warmup_compile_s": t_warm, "verify_s": t_ver, "curve": cur,
            "real_run_of_best_policy": check,
            "note": "time_s is the recorded fixed run (per-step heads add a little)"}
