"""A local process pool shuts down cleanly: on SIGTERM / SIGINT of the process that owns it
(its workers stopped at once, no traceback, exit ``128 + signal``), when that process is
killed (its workers follow it, and a spawned pool's resource tracker them), and after a
worker dies (a one-line error naming ``workers``, never a ``BrokenProcessPool``
traceback); for :func:`task_pool`'s own pool and for ``open_executor(workers=N)``'s."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import analysis.brackets.io as bio
from analysis.cli import main
from analysis.executor import open_executor, task_pool
from analysis.validation import ParameterError
from tests.fixtures.stacks import write_stack

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="POSIX signals, Linux")


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ", 1)[1][0] != "Z"  # a zombie is gone, not yet reaped
    except FileNotFoundError:
        return False


def _wait_gone(pids, timeout=15.0) -> list[int]:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        left = [p for p in pids if _alive(p)]
        if not left:
            return []
        time.sleep(0.1)
    return [p for p in pids if _alive(p)]


def _descendants(pid: int) -> list[int]:
    """Every live process below ``pid`` (its pool's workers, the resource tracker)."""
    parent: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            parent[int(entry.name)] = int(stat.rsplit(") ", 1)[1].split()[1])
    found, frontier = [], [pid]
    while frontier:
        kids = [p for p, pp in parent.items() if pp in frontier and p not in found]
        found += kids
        frontier = kids
    return found


def _start(method: str, kind: str = "task_pool"):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.fixtures.pool_child", method, kind],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group, as a shell job is
    )
    line = proc.stdout.readline()
    assert line.strip(), proc.stderr.read()
    return proc, [int(p) for p in line.split()]


#: (start method, pool): task_pool's own pool, and open_executor(workers=N)'s (spawned)
POOLS = [("spawn", "task_pool"), ("default", "task_pool"), ("spawn", "open_executor")]


@pytest.mark.parametrize("method, kind", POOLS)
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_stops_the_pool_at_once(sig, method, kind):
    proc, workers = _start(method, kind)
    below = _descendants(proc.pid)  # the workers, and a spawned pool's resource tracker
    try:
        assert set(workers) <= set(below)
        time.sleep(0.5)  # the 60 s tasks are running
        start = time.monotonic()
        if sig == signal.SIGINT:  # Ctrl-C: the whole process group, workers too
            os.killpg(proc.pid, sig)
        else:  # `kill PID`: the owner only
            proc.send_signal(sig)
        _, err = proc.communicate(timeout=30)
        assert time.monotonic() - start < 10  # not after the running tasks
        assert proc.returncode == 128 + sig, err  # 143 for SIGTERM, 130 for SIGINT
        assert _wait_gone(below) == []
        assert "Traceback" not in err, err
    finally:
        _kill(proc, below)


def _kill(proc, workers):
    """Leave nothing running, whatever the test found."""
    for pid in [proc.pid, *workers]:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    proc.wait(timeout=30)


@pytest.mark.parametrize("method, kind", POOLS)
def test_workers_follow_a_killed_owner(method, kind):
    proc, workers = _start(method, kind)
    below = _descendants(proc.pid)
    try:
        proc.kill()
        proc.wait(timeout=30)
        assert _wait_gone(below) == []  # the workers, then the resource tracker
    finally:
        _kill(proc, below)


def _die(_):
    os.kill(os.getpid(), signal.SIGKILL)


def test_a_dead_worker_is_a_named_error():
    with pytest.raises(ParameterError) as info:
        with task_pool(None, 2) as pool:
            list(pool.imap(_die, [(i, (i,)) for i in range(4)]))
    assert info.value.name == "workers"


def test_a_dead_worker_of_open_executor_is_a_named_error():
    with pytest.raises(ParameterError) as info:
        with open_executor(workers=2) as ex, task_pool(ex, 1) as pool:
            list(pool.imap(_die, [(i, (i,)) for i in range(4)]))
    assert info.value.name == "workers"
    assert "worker process died" in str(info.value)


def test_bracket_with_a_dead_worker_is_one_line(tmp_path, capsys, monkeypatch):
    stack = write_stack(tmp_path / "A.npy")
    monkeypatch.setattr(bio, "_block", _die)  # the bracket pool forks: workers see it
    out = tmp_path / "o.json"
    argv = ["bracket", str(stack), "--eps", "0.1", "--batch", "1", "--workers", "2", "--quiet"]
    rc = main([*argv, "--out", str(out)])
    err = capsys.readouterr().err
    assert rc == 2 and "Traceback" not in err, err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and "--workers" in lines[0], err


def test_only_the_teardown_race_is_silenced(capsys):
    """The manager thread's InvalidStateError from ``terminate_broken`` (Python 3.11 sets an
    exception on a future the pool's owner already cancelled) prints nothing while a pool is
    torn down; any other thread exception still reaches the previous hook."""
    import concurrent.futures as cf
    import threading

    from analysis.executor import _quiet_broken_pool_thread

    def terminate_broken():
        raise cf.InvalidStateError("CANCELLED: <Future state=cancelled>")

    def other():
        raise cf.InvalidStateError("not the teardown")

    seen = []
    previous = threading.excepthook
    threading.excepthook = lambda args: seen.append(str(args.exc_value))
    try:
        with _quiet_broken_pool_thread():
            for target in (terminate_broken, other):
                t = threading.Thread(target=target)
                t.start()
                t.join()
        assert threading.excepthook is not previous  # ours restored to the test's
    finally:
        threading.excepthook = previous
    assert seen == ["not the teardown"]
