"""The fast engine and adaptive compute (CPU): the same rollouts as the eager sampler, bit for bit
(any pool size, order, wave or compile trace), counter-based noise, adaptive runs that follow
the fixed run's trajectories and match their replay, and sharding over two gloo processes."""

from __future__ import annotations

import json
import os
import socket

import pytest
import torch

from ptrm_cli.engine import adaptive, distributed, fast
from ptrm_cli.engine.model import TokenMix
from ptrm_cli.engine.sampler import SamplerConfig, gaussian, sample, stream_keys

from fixtures_models import tiny_model

V = 40


@pytest.fixture(scope="module")
def model():
    return tiny_model(V, seed=1)


@pytest.fixture(scope="module")
def inputs():
    return torch.randint(1, V, (5, 100), generator=torch.Generator().manual_seed(0))


@pytest.fixture(scope="module")
def engine(model):
    return fast.Engine(model, compile=False)


def eager(model, inputs, **kw):
    cfg = SamplerConfig(**{"K": 4, "D": 3, "sigma": 0.5, "record_steps": True, **kw})
    return sample(model, inputs, cfg, seed=3, fast=False)


def same(a, b):
    return (torch.equal(a.preds, b.preds) and torch.equal(a.q, b.q)
            and torch.equal(a.step_q, b.step_q) and torch.equal(a.step_preds, b.step_preds))


# -- noise ------------------------------------------------------------------------------------

def test_noise_is_a_standard_normal_and_streams_are_independent():
    B = 32
    a, b = stream_keys(torch.arange(B), torch.full((B,), 7), torch.arange(B) % 4,
                       torch.arange(B) // 4, 0)
    g = gaussian(a, b, 20000)
    assert abs(float(g.mean())) < 0.01 and abs(float(g.std()) - 1) < 0.01
    kurt = float(((g - g.mean()) ** 4).mean() / g.var() ** 2)
    assert abs(kurt - 3) < 0.1
    c = torch.corrcoef(g)
    assert float((c - torch.eye(B)).abs().max()) < 0.05
    assert torch.equal(g, gaussian(a, b, 20000))  # a pure function of the keys
    z, y = (gaussian(*stream_keys(torch.tensor([1]), torch.tensor([2]), torch.tensor([3]),
                                  torch.tensor([4]), tgt), 1000) for tgt in (0, 1))
    assert not torch.equal(z, y)


# -- fast == eager ----------------------------------------------------------------------------

@pytest.mark.parametrize("variant", [
    {}, {"forward_dtype": "float32"}, {"mlp_t": True, "pos_encodings": "none"},
    {"puzzle_emb_ndim": 32, "puzzle_emb_len": 1, "num_puzzle_identifiers": 3},
], ids=["att-bf16", "att-fp32", "mlp", "puzzle-emb"])
def test_fast_engine_equals_eager_sampler(variant, inputs):
    m = tiny_model(V, seed=2, **variant)
    ids = torch.tensor([0, 1, 2, 1, 0]) if variant.get("puzzle_emb_ndim") else None
    if ids is not None:
        m.puzzle_emb.weights.normal_()
    cfg = SamplerConfig(K=3, D=3, sigma=0.5, record_steps=True)
    ref = sample(m, inputs, cfg, seed=1, puzzle_ids=ids, fast=False)
    got = sample(m, inputs, cfg, seed=1, puzzle_ids=ids, fast=True)
    assert same(got, ref)
    # weights are cast once, not per call; the model itself is untouched
    eng = fast.Engine(m, compile=False)
    assert all(p.dtype == m.config.dtype for p in eng.model.parameters())
    assert all(p.dtype == torch.float32 for p in m.parameters())


def test_token_mix_padded_for_tensor_cores_is_the_same_math(inputs, monkeypatch):
    """TRM-MLP's token mix with S padded to a multiple of 8 (what CUDA runs, for tensor cores)
    computes what the plain one does, parameters unchanged; the CPU pads only when asked."""
    m = tiny_model(V, seed=2, mlp_t=True, pos_encodings="none", seq_len=99,
                   forward_dtype="float32")
    plain = fast.Engine(m, compile=False)
    padded = fast.Engine(m, compile=False)
    mixes = [b.mlp_t for b in padded.model.L_level.layers]
    assert mixes and all(isinstance(t, TokenMix) and t.align is None for t in mixes)
    x = plain.embed(inputs[:, :99])
    y, z = plain.init_carry(len(inputs))
    ref = plain.step(y, z, x)
    for t in mixes:
        t.align = True
    seen, pad = [], torch.nn.functional.pad  # the widths the token-mix matmuls ran at
    monkeypatch.setattr(torch.nn.functional, "pad",
                        lambda t, p, *a: seen.append(pad(t, p, *a).shape[-1]) or pad(t, p, *a))
    got = padded.step(y, z, x)
    monkeypatch.undo()
    assert 104 in seen
    for a, b in zip(ref, got):
        torch.testing.assert_close(b, a, rtol=1e-5, atol=1e-5)
    runs = [fast.run(e, inputs[:, :99], K=3, D=3, sigma=0.5, seed=1) for e in (plain, padded)]
    assert torch.equal(runs[0].rollouts().preds, runs[1].rollouts().preds)
    assert torch.allclose(runs[0].rollouts().q, runs[1].rollouts().q, atol=1e-4)
    assert set(padded.model.state_dict()) == set(m.state_dict())


@pytest.mark.parametrize("perturb", ["z", "y", "both", "init"])
def test_fast_equals_eager_for_every_perturbation(model, inputs, engine, perturb):
    ref = eager(model, inputs, perturb=perturb)
    got = fast.run(engine, inputs, K=4, D=3, sigma=0.5, seed=3, perturb=perturb,
                   record_steps=True)
    assert same(got.rollouts(), ref)


@pytest.mark.parametrize("capacity", [1, 3, 7, 1000])
def test_pool_size_does_not_change_rollouts(model, inputs, engine, capacity):
    ref = eager(model, inputs)
    got = fast.run(engine, inputs, K=4, D=3, sigma=0.5, seed=3, capacity=capacity,
                   record_steps=True)
    assert same(got.rollouts(), ref)
    assert got.stats["max_rows"] <= capacity and got.row_steps == 5 * 4 * 3
    assert got.stats["syncs"] == 0  # a fixed run reads the device once, at the end


def test_order_and_neighbours_do_not_matter(engine, inputs):
    full = fast.run(engine, inputs, K=4, D=2, sigma=0.5, seed=3)
    perm = torch.tensor([3, 0, 4, 1, 2])
    shuffled = fast.run(engine, inputs[perm], K=4, D=2, sigma=0.5, seed=3, capacity=6)
    assert torch.equal(shuffled.preds, full.preds[perm]) and torch.equal(shuffled.q, full.q[perm])
    alone = fast.run(engine, inputs[2:3], K=4, D=2, sigma=0.5, seed=3)
    assert torch.equal(alone.q, full.q[2:3])


def test_rollouts_do_not_depend_on_K_waves_are_prefixes(model, inputs, engine):
    big = eager(model, inputs, K=8)
    small = eager(model, inputs, K=4)
    assert torch.equal(small.q, big.q[:, :4]) and torch.equal(small.preds, big.preds[:, :4])
    tail = sample(model, inputs, SamplerConfig(K=4, D=3, sigma=0.5), seed=3, first_rollout=4)
    assert torch.equal(tail.q, big.q[:, 4:])
    waves = fast.run(engine, inputs, K=8, D=3, sigma=0.5, seed=3, wave=2, capacity=4)
    assert torch.equal(waves.q, big.q)


def test_k1_sigma0_is_the_deterministic_trm(model, inputs, engine):
    with torch.no_grad():
        ref = model(inputs, steps=3)
    got = fast.run(engine, inputs, K=1, D=3, sigma=0.0)
    assert torch.equal(got.preds[:, 0], ref.preds) and torch.equal(got.q[:, 0], ref.q_halt)


def test_compiled_trace_equals_eager(model, inputs):
    """torch.compile's traced graphs (aot_eager: the trace without a C++/Triton compiler) give
    the same rollouts, and changing the batch size does not recompile into something else."""
    eng = fast.Engine(model, compile=True, backend="aot_eager")
    ref = eager(model, inputs[:3], K=2, D=2)
    got = fast.run(eng, inputs[:3], K=2, D=2, sigma=0.5, seed=3, record_steps=True)
    assert eng.compiled and eng.compile_error is None
    assert same(got.rollouts(), ref)
    again = fast.run(eng, inputs[:3], K=2, D=2, sigma=0.5, seed=3, capacity=4)
    assert torch.equal(again.q, ref.q)


def test_a_failing_compiler_falls_back_to_eager(model, inputs):
    def broken(gm, example_inputs):
        raise RuntimeError("no compiler here")

    eng = fast.Engine(model, compile=True, backend=broken)
    with pytest.warns(UserWarning, match="running eagerly"):
        got = fast.run(eng, inputs[:2], K=2, D=2, sigma=0.5, seed=3)
    assert not eng.compiled and "no compiler here" in eng.compile_error
    assert torch.equal(got.q, eager(model, inputs[:2], K=2, D=2).q)


def test_engine_cache_follows_weight_updates(model):
    a = fast.engine_for(model, compile=False)
    assert fast.engine_for(model, compile=False) is a
    m2 = tiny_model(V, seed=5)
    b = fast.engine_for(m2, compile=False)
    with torch.no_grad():
        m2.lm_head.weight.add_(1.0)
    assert fast.engine_for(m2, compile=False) is not b


# -- adaptive ---------------------------------------------------------------------------------

def _rule(preds):
    """A stand-in for a rules verifier: a few of the tiny model's answers 'verify'."""
    return (preds[..., 0] % 2 == 0) & (preds[..., 1] < 20)


@pytest.fixture(scope="module")
def recorded(engine, inputs):
    return fast.run(engine, inputs, K=8, D=6, sigma=0.5, seed=3, record_steps=True)


@pytest.mark.parametrize("policy", [
    adaptive.Policy(8, 6, wave=4, check_every=2, q_threshold=0.9),
    adaptive.Policy(8, 6, wave=2, check_every=1, rules=True, select="verified"),
    adaptive.Policy(8, 6, wave=4, check_every=3, q_threshold=0.95, rules=True,
                    select="verified"),
    adaptive.Policy(8, 6, wave=8, check_every=6, rules=True, select="verified"),
], ids=["q", "rules", "rules+q", "rules-at-end"])
def test_adaptive_follows_the_fixed_run_and_its_replay(engine, inputs, recorded, policy):
    valid = _rule(recorded.step_preds.long())
    sim = adaptive.simulate(policy, recorded.step_q, recorded.step_preds, valid)
    got = fast.run(engine, inputs, K=8, D=6, sigma=0.5, seed=3, wave=policy.wave,
                   check_every=policy.check_every, q_threshold=policy.q_threshold,
                   verify=(lambda p, preds: _rule(preds).numpy()) if policy.rules else None,
                   capacity=10)  # < 5 puzzles x wave: rows are refilled; >= wave: waves whole
    assert got.chosen.tolist() == sim["chosen_k"]
    assert got.puzzle_row_steps.tolist() == sim["row_steps"]
    assert got.stopped.tolist() == sim["stopped"]
    # every rollout it ran is the fixed run's rollout up to the step it reached
    ar = torch.arange(5)[:, None]
    ran = got.steps > 0
    t = (got.steps.long() - 1).clamp(min=0)
    assert torch.equal(got.preds[ran], recorded.step_preds[ar, torch.arange(8), t][ran].long())
    assert torch.equal(got.q[ran], recorded.step_q[ar, torch.arange(8), t][ran])
    # a puzzle it did not stop got the fixed run's answers; a stopped one satisfied the rule
    for p in range(5):
        if not got.stopped[p]:
            assert torch.equal(got.preds[p], recorded.preds[p])
        else:
            k = int(got.chosen[p])
            ok = bool(_rule(got.preds[p, k])) if policy.rules else False
            conf = float(torch.sigmoid(got.q[p, k])) > (policy.q_threshold or 2)
            assert ok or conf
    assert got.row_steps <= recorded.row_steps
    if policy.check_every < policy.D:  # checks before the end: these runs do stop early here
        assert got.stopped.any() and got.row_steps < recorded.row_steps
        assert got.stats["syncs"] >= 1


def test_time_limit_answers_from_the_rollouts_so_far(engine, inputs):
    got = fast.run(engine, inputs, K=4, D=6, sigma=0.5, seed=3, time_limit=0.0)
    assert got.timed_out and (got.steps == 1).all() and got.row_steps == 5 * 4
    assert torch.isfinite(got.q).all()


def test_curve_finds_the_fixed_run_and_cheaper_points(recorded, inputs):
    valid = _rule(recorded.step_preds.long())
    labels = recorded.preds[:, 0]  # pretend rollout 0's answer is the label
    cur = adaptive.curve(recorded.step_q, recorded.step_preds, valid=valid, labels=labels,
                         flops_per_step=1000)
    fixed = cur["summary"]["best_q"]["fixed"]
    assert fixed["compute_vs_fixed"] == 1.0 and fixed["flops_per_puzzle"] == 8 * 6 * 1000
    best = cur["summary"]["verified"]["cheapest_at_same_accuracy"]
    assert best["accuracy"] >= cur["summary"]["verified"]["fixed"]["accuracy"]
    assert best["row_steps_per_puzzle"] <= 8 * 6
    assert cur["pareto"][0]["row_steps_per_puzzle"] <= cur["pareto"][-1]["row_steps_per_puzzle"]


def test_curve_judges_by_the_rules_when_there_are_rules(recorded, capsys, tmp_path):
    # labels that disagree with the rules (rollout 0's answer, valid or not): a curve with a
    # verifier must rank by the rules, as `ptrm eval` does, and report label match beside it
    valid = _rule(recorded.step_preds.long())
    labels = recorded.preds[:, 0]
    cur = adaptive.curve(recorded.step_q, recorded.step_preds, valid=valid, labels=labels,
                         flops_per_step=1000)
    assert cur["accuracy"] == "acc_rules"
    assert all(p["accuracy"] == p["acc_rules"] for p in cur["pareto"])
    rules_front = [p["acc_rules"] for p in cur["pareto"]]
    assert rules_front == sorted(rules_front) and len(set(rules_front)) == len(rules_front)
    no_rules = adaptive.curve(recorded.step_q, recorded.step_preds, valid=None, labels=labels,
                              flops_per_step=1000)
    assert no_rules["accuracy"] == "acc_label" and set(no_rules["summary"]) == {"best_q"}
    # a saved report re-judged by label gives the label-only front over the same points
    report = tmp_path / "report.json"
    report.write_text(json.dumps({"modes": [{"mode": "curve", "curve": cur}]}))
    assert adaptive.main([str(report), "--judge", "label"]) == 0
    out = capsys.readouterr().out
    again = adaptive.summarize(cur["points"], 8, 6, "acc_label")
    assert "judged by label" in out
    assert f"{100 * again['summary']['best_q']['fixed']['accuracy']:.1f}%" in out
    assert adaptive.main([str(report)]) == 0 and "judged by rules" in capsys.readouterr().out
    # no fixed K x D run among the points: said, not a silent half answer
    partial = tmp_path / "partial.json"
    fixed_free = [p for p in cur["points"] if p["rules"] or p["q_threshold"] is not None]
    partial.write_text(json.dumps({"modes": [{"curve": {**cur, "points": fixed_free}}]}))
    assert adaptive.main([str(partial)]) == 0
    assert "nothing to compare with" in capsys.readouterr().out


@pytest.mark.parametrize("text, says", [
    (None, "cannot read it"), ("not json", "cannot read it"), ("[1, 2]", "no curve"),
    ('{"modes": 5}', "no curve"),
    ('{"modes": [{"curve": {"K": 2, "D": 2, "puzzles": 1, "points": []}}]}', "no replayed"),
    ('{"modes": [{"curve": {"K": 2, "D": 2, "puzzles": 1, "points": [{"policy": "x"}]}}]}',
     "the points lack"),
])
def test_curve_summary_of_a_bad_report_is_one_usage_error(tmp_path, capsys, text, says):
    path = tmp_path / "report.json"
    if text is not None:
        path.write_text(text)
    with pytest.raises(SystemExit) as e:
        adaptive.main([str(path)])
    assert e.value.code == 2 and says in capsys.readouterr().err


# -- several processes ------------------------------------------------------------------------

def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _worker(rank: int, world: int, port: int, out: str):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank),
                      WORLD_SIZE=str(world), LOCAL_RANK=str(rank))
    torch.set_num_threads(1)
    import torch.distributed as dist

    with distributed.group("cpu") as device:  # leaves the group together with the peer
        assert device == "cpu" and dist.is_initialized()
        m = tiny_model(V, seed=1)
        x = torch.randint(1, V, (5, 100), generator=torch.Generator().manual_seed(0))
        r = distributed.sample(m, x, SamplerConfig(K=3, D=2, sigma=0.5, record_steps=True),
                               seed=3)
        eng = fast.Engine(m, compile=False)
        a = distributed.run(eng, x, K=4, D=4, sigma=0.5, seed=3, wave=2, check_every=1,
                            q_threshold=0.8, verify=lambda p, preds: _rule(preds).numpy())
        if rank == 0:
            torch.save({"sample": (r.preds, r.q, r.step_q), "adaptive": (
                a.preds, a.q, a.chosen, a.puzzle_row_steps)}, out)
    assert not dist.is_initialized()


def test_two_gloo_processes_give_the_single_process_result(model, inputs, engine, tmp_path):
    import torch.multiprocessing as mp

    out = str(tmp_path / "rank0.pt")
    mp.spawn(_worker, args=(2, _free_port(), out), nprocs=2, join=True)
    got = torch.load(out)
    ref = sample(model, inputs, SamplerConfig(K=3, D=2, sigma=0.5, record_steps=True), seed=3)
    assert all(torch.equal(a, b) for a, b in zip(got["sample"], (ref.preds, ref.q, ref.step_q)))
    one = fast.run(engine, inputs, K=4, D=4, sigma=0.5, seed=3, wave=2, check_every=1,
                   q_threshold=0.8, verify=lambda p, preds: _rule(preds).numpy())
    nan = lambda t: torch.nan_to_num(t, nan=99.0) if t.is_floating_point() else t  # noqa: E731
    assert all(torch.equal(nan(a), nan(b)) for a, b in
               zip(got["adaptive"], (one.preds, one.q, one.chosen, one.puzzle_row_steps)))


def test_shards_and_relaunch_arguments():
    assert [distributed.shard(61, r, 4) for r in range(4)] == [(0, 15), (15, 30), (30, 46),
                                                              (46, 61)]
    for n, w in ((1, 2), (3, 2), (7, 3)):
        parts = [distributed.shard(n, r, w) for r in range(w)]
        assert parts[0][0] == 0 and parts[-1][1] == n
        assert all(a[1] == b[0] for a, b in zip(parts, parts[1:]))
    assert distributed.strip_gpus(["eval", "--gpus", "4", "--K", "8", "--gpus=2"]) == \
        ["eval", "--K", "8"]


# -- solve on a CPU ---------------------------------------------------------------------------

def test_solve_uses_and_states_cpu_defaults(tmp_path):
    from typer.testing import CliRunner

    from ptrm_cli.app import app
    from fixtures_models import golden_examples, installed_codecs, save_tiny_checkpoint

    if "sudoku" not in installed_codecs():
        pytest.skip("codec 'sudoku' is not installed")
    found = golden_examples(["sudoku"])
    if not found:
        pytest.skip("PPBench golden set not found")
    from ptrm_codecs.families import PPBENCH

    ckpt = save_tiny_checkpoint(tmp_path / "m", PPBENCH.vocab)
    codec = installed_codecs()["sudoku"]
    url = codec.to_url(codec.from_record(found[0][1])[0])
    r = CliRunner().invoke(app, ["solve", url, "-c", str(ckpt), "--device", "cpu", "--json"])
    assert r.exit_code in (0, 1), r.output
    out = json.loads(r.stdout)
    assert out["K"] == 8 and out["wave"] == 4 and out["check_every"] == 1
    assert out["cpu_defaults"]["K"] == 8 and out["cpu_defaults"]["time_limit"] == 20.0
    assert out["row_steps"] == out["rollouts"] * out["D"]  # nothing verified: all ran
    r = CliRunner().invoke(app, ["solve", url, "-c", str(ckpt), "--device", "cpu", "--K", "2"])
    line = next(x for x in r.stdout.splitlines() if "CPU defaults:" in x)
    assert " K=" not in line.split("(GPU")[0] and "wave=2" in line and "time-limit=20" in line
    assert "K=2 D=3" in r.stdout and "check-every" not in line  # every device checks each step
    assert "check_every" not in out["cpu_defaults"]
    # best-Q selection runs every rollout to the end: no check interval at all
    r = CliRunner().invoke(app, ["solve", url, "-c", str(ckpt), "--device", "cpu", "--K", "2",
                                 "--select", "best_q", "--json"])
    assert json.loads(r.stdout)["check_every"] is None


def test_compiled_engine_handles_a_single_row(model, inputs):
    eng = fast.Engine(model, compile=True, backend="aot_eager")
    got = fast.run(eng, inputs[:1], K=1, D=2, sigma=0.5, seed=3)
    ref = sample(model, inputs[:1], SamplerConfig(K=1, D=2, sigma=0.5), seed=3, fast=False)
    assert torch.equal(got.q, ref.q) and torch.equal(got.preds, ref.preds)
