"""``attnrank`` stopped by a signal exits ``128 + signal`` (130 for SIGINT, 143 for SIGTERM)
with one line and no traceback, its pool's workers gone, with one worker or several."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="POSIX signals, Linux")


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(") ", 1)[1][0] != "Z"  # a zombie is gone, not yet reaped
    except FileNotFoundError:
        return False


def _wait_gone(pids, timeout=15.0) -> list[int]:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if not any(_alive(p) for p in pids):
            return []
        time.sleep(0.1)
    return [p for p in pids if _alive(p)]


@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_gives_128_plus_its_number(tmp_path, sig, workers):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.fixtures.cli_child", str(tmp_path), str(workers)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group, as a shell job is
    )
    searching: list[int] = []
    try:
        # the sleeping search has started: in each worker, or in the command itself
        searching = [int(proc.stdout.readline()) for _ in range(workers)]
        if sig == signal.SIGINT:  # Ctrl-C: the whole process group
            os.killpg(proc.pid, sig)
        else:  # `kill PID`: the command only
            proc.send_signal(sig)
        _, err = proc.communicate(timeout=30)
        assert proc.returncode == 128 + sig, err
        assert "Traceback" not in err, err
        lines = [ln for ln in err.splitlines() if ln.strip()]
        assert len(lines) == 1 and f"interrupted ({signal.Signals(sig).name})" in lines[0], err
        assert _wait_gone(searching) == []
    finally:
        for pid in {proc.pid, *searching}:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        proc.wait(timeout=30)


def test_a_closed_pipe_gives_141_without_a_traceback():
    # ``attnrank prereg check ... | head -1`` once head has left: stdout's reader is gone
    # before the command writes (its read end closed at once), so every write fails
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    cmd = [
        sys.executable,
        "-m",
        "analysis.cli",
        "prereg",
        "check",
        "preregistration/offline-minilm.toml",
    ]
    r, w = os.pipe()
    os.close(r)
    try:
        res = subprocess.run(cmd, cwd=ROOT, env=env, stdout=w, stderr=subprocess.PIPE, timeout=120)
    finally:
        os.close(w)
    err = res.stderr.decode()
    assert res.returncode == 141, err[-2000:]
    assert "Traceback" not in err and "BrokenPipeError" not in err
