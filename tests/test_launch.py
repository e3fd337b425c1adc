"""`--gpus N`: our launcher runs torchrun's own `run` and exits with rank 0's status, not
torchrun's traceback and 1; a user error under it is one message, said once (rank 0)."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from ptrm_cli.engine import launch

from fixtures_models import save_tiny_checkpoint

REPO = Path(__file__).resolve().parents[1]


@dataclass
class _Failure:  # the fields of torch's ProcessFailure that the launcher reads
    exitcode: int
    timestamp: int = 0


def test_exit_status_is_the_root_causes():
    # rank 1 stopped on a usage error, then the agent's SIGTERM killed rank 0: say rank 1's
    assert launch.exit_status({0: _Failure(-15, 5), 1: _Failure(2, 5)}) == 2
    assert launch.exit_status({0: _Failure(2, 6), 1: _Failure(1, 5)}) == 1  # the earliest
    assert launch.exit_status({1: _Failure(2), 0: _Failure(130)}) == 130  # a tie: rank 0
    assert launch.exit_status({0: _Failure(-15), 1: _Failure(-9)}) == 143  # signals only
    assert launch.exit_status({0: _Failure(0)}) == 1  # failed, yet exit 0: still a failure


def test_command_and_environment():
    cmd = launch.command(4, "ptrm_cli.app", ["eval", "--K", "8"])
    assert cmd[1:] == ["-m", "ptrm_cli.engine.launch", "4", "-m", "ptrm_cli.app", "eval", "--K",
                       "8"]
    env = launch.env()
    assert all(env[k] == v for k, v in launch.DIST_ENV.items())
    assert env["OMP_NUM_THREADS"] == os.environ.get("OMP_NUM_THREADS", "1")


def test_a_user_error_under_two_processes_is_one_message_and_its_status(tmp_path):
    from ptrm_codecs.families import PPBENCH

    ck = save_tiny_checkpoint(tmp_path / "ck", PPBENCH.vocab)
    cfg = Path(ck) / "config.json"
    doc = json.loads(cfg.read_text())
    doc["meta"]["sigma"] = "bad"
    cfg.write_text(json.dumps(doc))
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
    proc = subprocess.run(
        [sys.executable, "-m", "ptrm_cli", "eval", "--split", "golden", "-c", str(ck), "--K",
         "2", "--D", "1", "--seeds", "1", "--limit", "1", "--no-plots", "--gpus", "2",
         "--device", "cpu", "-o", str(tmp_path / "ev")],
        env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert proc.stderr.count("meta.sigma is 'bad'") == 1, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr and "ChildFailedError" not in proc.stderr


def test_a_plain_torchrun_launch_gets_nvlink_multicast_off(monkeypatch):
    """`torchrun -m ptrm_cli.benchmark` (or eval) bypasses our launcher: joining the group sets
    DIST_ENV where the user did not, as the trainer does (it did not)."""
    import torch.distributed as dist

    from ptrm_cli.engine import distributed

    for k in launch.DIST_ENV:
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("NCCL_NVLS_ENABLE", "1")  # the user's own choice stays
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setattr(dist, "is_initialized", lambda: True)  # no group to join here
    monkeypatch.setattr(dist, "get_backend", lambda *a: "gloo")
    monkeypatch.setattr(distributed, "_GLOO", None)
    assert distributed.setup("cpu") == "cpu"
    assert os.environ["TORCH_SYMM_MEM_DISABLE_MULTICAST"] == "1"
    assert os.environ["NCCL_NVLS_ENABLE"] == "1"


# a stand-in for the launcher: notes its pid, then each signal it gets, and exits 130 on one
_CHILD = """
import os, signal, sys, time
from pathlib import Path
log = Path(sys.argv[1])
def on(signum, frame):
    with log.open("a") as f:
        f.write(signal.Signals(signum).name + "\\n")
    sys.exit(130)
signal.signal(signal.SIGTERM, on)
signal.signal(signal.SIGINT, on)
log.write_text(f"pid {os.getpid()}\\n")
time.sleep(60)
"""

# what `ptrm eval --gpus 2` is while it waits: app.py's SIGTERM -> KeyboardInterrupt, then
# supervise(the launcher)
_PARENT = """
import signal, sys
from ptrm_cli.engine import launch
def interrupt(signum, frame):
    raise KeyboardInterrupt
signal.signal(signal.SIGTERM, interrupt)
sys.exit(launch.supervise([sys.executable, "-c", sys.argv[1], sys.argv[2]], {}))
"""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_a_signal_to_the_ptrm_process_reaches_the_launcher_once(tmp_path):
    """A scheduler's SIGTERM reaches `ptrm eval --gpus N` only: subprocess.call SIGKILLed the
    launcher and its ranks ran on, orphaned, holding the cards and the --out lock. Now the
    launcher gets the signal (once: it runs in its own session, so a terminal's Ctrl-C cannot
    reach it twice), ends by it, and its status is the command's."""
    import signal
    import time

    for sig in (signal.SIGTERM, signal.SIGINT):
        log = tmp_path / f"{sig.name}.log"
        parent = subprocess.Popen([sys.executable, "-c", _PARENT, _CHILD, str(log)],
                                  env={**os.environ, "PYTHONPATH": str(REPO)})
        deadline = time.monotonic() + 60
        while not log.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        child = int(log.read_text().split()[1])
        parent.send_signal(sig)
        assert parent.wait(timeout=30) == 130
        assert log.read_text().splitlines()[1:] == [sig.name]  # forwarded, once
        time.sleep(0.2)
        assert not _alive(child) or Path(f"/proc/{child}/stat").read_text().split()[2] == "Z"


def test_a_rank_gives_an_error_without_a_hint_the_clis_hint(tmp_path):
    """`ptrm train --gpus N` ranks print their errors themselves (engine/train.py's main): one
    raised without a hint had no `hint:` line there, where `ptrm train` alone points at its
    --help. Now both say the same (errors.help_hint)."""
    from ptrm_cli.engine.sudoku4 import write_sudoku4

    data = write_sudoku4(tmp_path / "sudoku4")
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
    args = ["train", str(REPO / "examples/configs/tiny-cpu.yaml"), "--set",
            f"data.path={data}", "--set", f"run_dir={tmp_path / 'run'}", "--resume",
            "--init-from", str(tmp_path / "other"), "--device", "cpu"]
    said = []
    for gpus in ([], ["--gpus", "2"]):
        proc = subprocess.run([sys.executable, "-m", "ptrm_cli", *args, *gpus], env=env,
                              capture_output=True, text=True, timeout=600)
        assert proc.returncode == 2, proc.stderr[-2000:]
        lines = [ln for ln in proc.stderr.splitlines() if ln.startswith(("error:", "hint:"))]
        said.append(lines)
    # (the CLI names itself as run, `python -m ptrm_cli train` here; a rank, `ptrm train`)
    assert said[0][0] == said[1][0], said
    assert said[0][0].startswith("error: --resume and --init-from together")
    assert said[0][1:] == ["hint: python -m ptrm_cli train --help says what it takes"]
    assert said[1][1:] == ["hint: ptrm train --help says what it takes"]


def test_ctrl_c_under_two_processes_says_how_to_continue(tmp_path):
    """Ctrl-C of `ptrm train --gpus 2`: rank 0 said "stopped at step N; checkpoint saved" but
    not the "continue with: ... --resume" command a single process says after saving."""
    import signal
    import time

    from ptrm_cli.engine.sudoku4 import write_sudoku4

    data = write_sudoku4(tmp_path / "sudoku4")
    run = tmp_path / "run"
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
    words = ["train", str(REPO / "examples/configs/tiny-cpu.yaml"), "--set", f"data.path={data}",
             "--set", f"run_dir={run}", "--set", "train.max_steps=100000", "--gpus", "2",
             "--device", "cpu"]
    proc = subprocess.Popen([sys.executable, "-m", "ptrm_cli", *words], env=env,
                            stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    try:
        log, deadline = run / "log.jsonl", time.monotonic() + 300
        while not (log.exists() and '"train"' in log.read_text()):  # a step was taken
            assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read()
            time.sleep(0.2)
        proc.send_signal(signal.SIGINT)
        _, said = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, said[-2000:]
    stopped = [ln for ln in said.splitlines() if ln.startswith("stopped at step")]
    assert len(stopped) == 1, said[-2000:]  # rank 0 only
    assert stopped[0].split("; continue with: ")[1] == shlex.join(
        ["ptrm", *words, "--resume"]), said[-2000:]
