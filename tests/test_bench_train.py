"""scripts/bench_train.py (training throughput) and the kernel profile it shares with `ptrm
bench`: the profile groups kernel time by kind and counts launches; the script runs on a CPU."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from ptrm_cli.bench_modes import profile_kernels

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "bench_train.py"


def test_profile_groups_kernel_time_by_kind():
    a, b = torch.randn(256, 256), torch.randn(256, 256)
    params, grads = [torch.zeros(1000) for _ in range(4)], [torch.ones(1000) for _ in range(4)]

    def work():
        for _ in range(3):
            a @ b
        torch._foreach_add_(params, grads)

    prof = profile_kernels(work, torch.device("cpu"), "a test")
    assert prof["what"] == "a test"
    assert set(prof["shares"]) >= {"matmul", "optimizer (foreach)"}
    assert sum(prof["shares"].values()) == pytest.approx(1.0)
    mm = [r for r in prof["top"] if r["kind"] == "matmul"]
    assert sum(r["calls"] for r in mm) >= 3  # every product counted, none twice as two kinds
    assert prof["kernels"] == sum(r["calls"] for r in prof["top"])
    assert all(params[0] == 1)  # the function ran, once


@pytest.mark.parametrize("name, kind", [
    # names from an H100 profile of a training update (2026-11-27)
    ("cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7_64x128x64", "attention"),
    ("triton_poi_fused__scaled_dot_product_cudnn_attention__to_copy__unsafe_view_add_cat_mul",
     "compiled elementwise"),
    ("nvjet_sm90_tst_192x192_64x4_2x1_v_bz_coopB_TNN", "matmul"),
    ("triton_tem_fused_mm_0", "matmul"),
    ("triton_for_fused_0", "optimizer (foreach)"),
    ("void at::native::multi_tensor_apply_kernel<", "optimizer (foreach)"),
    ("ncclDevKernel_AllReduce_Sum_f32_RING_LL", "communication"),
    ("Memcpy HtoD (Pinned -> Device)", "other"),
    ("add_rms_norm_kernel", "compiled elementwise"),  # engine/norm_kernel.py's
])
def test_kernels_are_filed_by_what_they_do_not_by_every_name_they_carry(name, kind):
    from ptrm_cli.bench_modes import _kind

    assert _kind(name) == kind


def test_gpu_profile_counts_kernels_not_ranges_on_the_gpu_timeline():
    """On a GPU only kernels count: DDP's `DistributedDataParallel.forward` range (a user
    annotation drawn on the GPU timeline) was 38% of a 4-GPU update's "kernel time", and CPU
    ops and compiled-region markers would count their kernels twice. (Fake events: CI has
    no GPU.)"""
    from types import SimpleNamespace as Ev

    from ptrm_cli.bench_modes import _kernel_time

    cuda, cpu = torch.autograd.DeviceType.CUDA, torch.autograd.DeviceType.CPU
    kernel = Ev(key="nvjet_sm90_tst_256x128", device_type=cuda, is_user_annotation=False,
                self_device_time_total=7.0)
    assert _kernel_time(kernel) == 7.0
    assert _kernel_time(Ev(key="DistributedDataParallel.forward", device_type=cuda,
                           is_user_annotation=True, self_device_time_total=18.0)) is None
    assert _kernel_time(Ev(key="aten::mm", device_type=cpu, is_user_annotation=False,
                           self_device_time_total=7.0)) is None
    # torch builds without device_type: kernels by name, the old time attribute
    assert _kernel_time(Ev(key="Torch-Compiled Region", self_cuda_time_total=9.0)) is None
    assert _kernel_time(Ev(key="triton_poi_fused_mul", self_cuda_time_total=3.0)) == 3.0


def run(tmp_path, *args) -> dict:
    out = tmp_path / "bench.json"
    r = subprocess.run([sys.executable, str(SCRIPT), "--tiny", "--compile", "off", "--device",
                        "cpu", "--json", str(out), *args], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    [result] = json.loads(out.read_text())
    return result, r.stdout


def test_bench_train_profiles_updates_on_request(tmp_path):
    plain, _ = run(tmp_path)
    assert "profile" not in plain
    assert plain["s_per_step"] > 0 and plain["global_batch"] == 16
    assert plain["peak_mem_gib"] is None  # not tracked on a CPU: null, not NaN (invalid JSON)

    result, stdout = run(tmp_path, "--profile", "2")
    pr = result["profile"]
    assert pr["updates"] == 2
    assert pr["kernels_per_update"] > 10  # forward, backward and the optimizer of a real update
    assert pr["kernel_s_per_update"] > 0 and pr["busy_share_of_timed_update"] > 0
    assert sum(pr["shares"].values()) == pytest.approx(1.0)
    assert pr["shares"].get("matmul", 0) > 0
    assert "profile of 2 updates" in stdout


@pytest.mark.parametrize("args, match", [(("--steps", "0"), "--steps: 0 is below 1"),
                                         (("--profile", "-1"), "--profile: -1 is below 0"),
                                         (("--warmup", "x"), "'x' is not a whole number"),
                                         (("--trace", "t.json.gz"), "give both"),
                                         (("--host-waits", "1", "--trace", "t"),
                                          "must end in .json.gz")])
def test_bench_train_refuses_counts_that_make_no_sense(args, match):
    """--steps 0 was a ZeroDivisionError, --profile -1 printed negative times."""
    r = subprocess.run([sys.executable, str(SCRIPT), "--tiny", *args], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 2 and match in r.stderr and "Traceback" not in r.stderr


def test_bench_train_per_step_reports_the_host_share(tmp_path):
    """--per-step says how long the host took to launch an update beside the synced time: a
    host time near the update's means the CPU sets the pace (the 4-card question)."""
    result, stdout = run(tmp_path, "--per-step")
    assert 0 < result["host_s_per_step_median"] <= result["s_per_step_median"]
    assert "of which the host took" in stdout
    plain, _ = run(tmp_path)
    assert "host_s_per_step_median" not in plain


def test_bench_train_reports_idle_gaps_per_rank(tmp_path):
    """--gaps N: how long the device sat idle over N updates, and where (the 4-card question:
    a card idles 1.7 ms an update that no kernel accounts for)."""
    result, stdout = run(tmp_path, "--gaps", "2")
    [g] = result["gaps"]  # one process: one rank
    assert g["updates"] == 2 and 0 <= g["idle_ms_per_update"] < g["span_ms_per_update"]
    assert g["largest"] and all(x["us"] > 0 and x["after"] and x["before"]
                                for x in g["largest"])
    assert [x["us"] for x in g["largest"]] == sorted((x["us"] for x in g["largest"]),
                                                     reverse=True)
    assert "rank 0: idle" in stdout


def test_bench_train_host_waits_name_the_line_that_waited(tmp_path):
    """--host-waits N: the calls that held the host back over N updates (on a CPU the top
    aten ops stand in for CUDA runtime calls), each with the op and the line of ours it ran
    under, largest first; --trace writes the profile as a gzipped Chrome trace."""
    import gzip

    trace = tmp_path / "t.json.gz"
    result, stdout = run(tmp_path, "--host-waits", "2", "--trace", str(trace))
    w = result["host_waits"]
    assert w["updates"] == 2 and w["waits"]
    per = [r["us_per_update"] for r in w["waits"]]
    assert per == sorted(per, reverse=True)
    assert any("train_loop.py" in r["call"] or "model.py" in r["call"] for r in w["waits"])
    assert "host waits over 2 updates" in stdout
    events = json.loads(gzip.open(trace).read())["traceEvents"]
    assert any(e.get("name", "").startswith("aten::") for e in events)
