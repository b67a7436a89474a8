"""The executor seam: a local process pool, a dask LocalCluster of 1 or 2 workers, an
unanswering scheduler; stored profiles bit-identical whichever runs them; a worker killed
mid-run, a client interrupted and resumed, a result delivered twice."""

from __future__ import annotations

import json
import os
import signal
import socket
import time
import zlib

import pandas as pd
import pytest

from analysis.brackets.engine import default_engine
from analysis.executor import open_executor, parse_cluster, task_pool
from analysis.sources import synthetic
from analysis.store import RunSpec, Store, run_brackets
from analysis.store.store import ProfileResult
from analysis.validation import ParameterError

ENGINE = default_engine()

pytest.importorskip("distributed")

QUIET = {"say": lambda _: None}


def _store(path, n: int = 6, size: int = 16) -> Store:
    store = Store(path, create=True)
    for i in range(n):
        store.add_synthetic(synthetic.spherical(size, 3, 4.0, random_state=i), head=i)
    return store


def _rows(store: Store) -> list[tuple]:
    """Every stored profile (decoded, without its wall-clock timings) and bracket row."""
    conn = store._conn
    profiles = []
    for r in conn.execute(
        "SELECT matrix_key, temperature, version, effort, eps_grid, profile, engine, revision "
        "FROM profiles ORDER BY matrix_key, temperature, version"
    ):
        prof = json.loads(zlib.decompress(r["profile"]))
        prof.get("stats", {}).pop("seconds", None)  # how long it took, not what it found
        profiles.append((*tuple(r)[:5], json.dumps(prof, sort_keys=True), *tuple(r)[6:]))
    brackets = conn.execute(
        "SELECT p.matrix_key, p.temperature, b.eps, b.lo, b.hi FROM brackets b "
        "JOIN profiles p ON p.id = b.profile_id ORDER BY 1, 2, 3"
    ).fetchall()
    return profiles + [tuple(r) for r in brackets]


@pytest.fixture(scope="module")
def local1():
    with open_executor(cluster="local:1", **QUIET) as ex:
        yield ex


@pytest.fixture(scope="module")
def local2():
    with open_executor(cluster="local:2", **QUIET) as ex:
        yield ex


# -- the seam ------------------------------------------------------------------------


def test_cluster_and_scheduler_values_are_checked():
    assert parse_cluster("local:3") == 3
    for bad in ("local:0", "slurm:4", "local", 4):
        with pytest.raises(ParameterError) as info:
            parse_cluster(bad)
        assert info.value.name == "cluster"
    with pytest.raises(ParameterError) as info, open_executor(scheduler="localhost:8786"):
        pass
    assert info.value.name == "scheduler"
    with pytest.raises(ParameterError) as info, open_executor(workers=2, cluster="local:2"):
        pass
    assert info.value.name == "cluster"


def test_workers_alone_give_a_process_pool_or_none():
    with open_executor(workers=1) as ex:
        assert ex is None
    with open_executor(workers=2) as ex:
        assert ex.submit(pow, 2, 10).result() == 1024


def test_an_unanswering_scheduler_is_a_clear_error_within_the_timeout():
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    start = time.perf_counter()
    with pytest.raises(ParameterError) as info:
        with open_executor(scheduler=f"tcp://127.0.0.1:{port}", connect_timeout=2, **QUIET):
            pass
    assert time.perf_counter() - start < 10
    assert info.value.name == "scheduler"
    assert f"127.0.0.1:{port}" in str(info.value) and "2 s" in str(info.value)


def test_a_scheduler_address_connects(local1):
    address = local1._client.scheduler.address
    said = []
    with open_executor(scheduler=address, say=said.append) as ex:
        assert ex.submit(pow, 3, 3).result() == 27
    assert address in said[0] and "1 workers" in said[0]


def _set_flag(path: str) -> None:
    with open(path, "a") as fh:
        fh.write(f"{os.getpid()}\n")


def test_the_initializer_runs_once_per_worker_process(local2, tmp_path):
    flag = tmp_path / "init.txt"
    with task_pool(local2, 1, initializer=_set_flag, initargs=(str(flag),)) as pool:
        got = sorted(r for _, r in pool.imap(pow, (((i,), (i, 2)) for i in range(20))))
    assert got == [i * i for i in range(20)]
    pids = flag.read_text().split()
    assert 1 <= len(pids) <= 2 and len(set(pids)) == len(pids)


def test_an_executor_and_workers_together_are_refused(local1, tmp_path):
    store = _store(tmp_path / "s", n=1)
    with pytest.raises(ParameterError) as info:
        run_brackets(
            store, (0.1,), engine=ENGINE, run=RunSpec(workers=2, executor=local1, progress=False)
        )
    assert info.value.name == "workers"
    store.close()


# -- store profiles ------------------------------------------------------------------

EPS = (0.1, 0.2)
TEMPS = (1.0, 2.0)


def test_profiles_are_bit_identical_across_executors(tmp_path, local1, local2):
    runs = {
        "sequential": {},
        "pool2": {"workers": 2},
        "local1": {"executor": local1},
        "local2": {"executor": local2},
    }
    rows = {}
    for name, kwargs in runs.items():
        store = _store(tmp_path / name, n=3)
        s = run_brackets(
            store,
            EPS,
            engine=ENGINE,
            temperatures=TEMPS,
            effort="default",
            run=RunSpec(progress=False, **kwargs),
        )
        assert s.computed == 6
        rows[name] = _rows(store)
        store.close()
    assert rows["pool2"] == rows["sequential"]
    assert rows["local1"] == rows["sequential"]
    assert rows["local2"] == rows["sequential"]


def test_a_result_delivered_twice_is_committed_once(tmp_path):
    store = _store(tmp_path / "s", n=2)
    run_brackets(store, EPS, engine=ENGINE, effort="fast", run=RunSpec(progress=False))
    before = _rows(store)
    p = next(iter(store.profiles()))
    again = ProfileResult(p.effort, p.eps_grid, p.profile_dict(), p.brackets, p.elapsed_s + 1.0)
    pid = store.put_profile(p.matrix_key, p.temperature, p.version, again, engine=p.engine)
    assert pid == p.id
    assert _rows(store) == before  # revision still 1, nothing rewritten
    store.close()


def test_a_worker_killed_mid_run_loses_nothing(tmp_path, monkeypatch):
    expected_store = _store(tmp_path / "expected", n=6, size=20)
    run_brackets(expected_store, EPS, engine=ENGINE, effort="default", run=RunSpec(progress=False))
    expected = _rows(expected_store)
    expected_store.close()

    store = _store(tmp_path / "s", n=6, size=20)
    killed = []
    real = Store.put_profile

    with open_executor(cluster="local:2", **QUIET) as ex:
        client = ex._client
        client.run(int, 0)  # both workers up before the run

        def put_then_kill(self, *args, **kwargs):
            out = real(self, *args, **kwargs)
            if not killed:  # after the first commit, other tasks are in flight
                busy = [a for a, ts in client.processing().items() if ts] or list(
                    client.run(os.getpid)
                )
                pid = client.run(os.getpid, workers=[busy[0]])[busy[0]]
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
            return out

        monkeypatch.setattr(Store, "put_profile", put_then_kill)
        s = run_brackets(
            store, EPS, engine=ENGINE, effort="default", run=RunSpec(progress=False, executor=ex)
        )
        assert killed and s.computed == 6
        assert killed[0] not in client.run(os.getpid).values()
    assert _rows(store) == expected
    store.close()


def test_an_interrupted_client_resumes_from_what_it_committed(tmp_path, local2, monkeypatch):
    expected_store = _store(tmp_path / "expected")
    run_brackets(
        expected_store,
        EPS,
        engine=ENGINE,
        temperatures=TEMPS,
        effort="fast",
        run=RunSpec(progress=False),
    )
    expected = _rows(expected_store)
    expected_store.close()

    store = _store(tmp_path / "s")
    real = Store.put_profile
    commits = []

    def put_then_stop(self, *args, **kwargs):
        if len(commits) == 3:
            raise KeyboardInterrupt
        commits.append(args[:2])
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Store, "put_profile", put_then_stop)
    kw = {"engine": ENGINE, "temperatures": TEMPS, "effort": "fast"}
    with pytest.raises(KeyboardInterrupt):
        run_brackets(store, EPS, **kw, run=RunSpec(executor=local2, progress=False))
    assert len(list(store.profiles())) == 3
    monkeypatch.setattr(Store, "put_profile", real)
    s = run_brackets(store, EPS, **kw, run=RunSpec(executor=local2, progress=False))
    assert (s.skipped, s.computed) == (3, 9)
    assert _rows(store) == expected
    store.close()


# -- the other places: bracket files, law sweeps, power simulations, the command line --


def _without_timings(prof: dict) -> dict:
    prof = json.loads(json.dumps(prof))
    prof.get("stats", {}).pop("seconds", None)
    return prof


def test_bracket_files_are_identical_on_a_cluster(rng, tmp_path, local2):
    from analysis.brackets.io import MatrixInput, profile_file
    from analysis.executor import RunSpec
    from tests.brackets.test_batch import smooth_stack

    A = smooth_stack(rng, h=5, n=20)
    data = MatrixInput(A, [None] * 5, [None] * 5, "sha", None, False)
    one = profile_file(data, eps=EPS, execution=RunSpec(batch=2, progress=False))
    ck = tmp_path / "ck.jsonl"
    dask = profile_file(
        data, eps=EPS, checkpoint=ck, execution=RunSpec(batch=2, progress=False, executor=local2)
    )
    assert [_without_timings(p.to_dict()) for p in dask] == [
        _without_timings(p.to_dict()) for p in one
    ]
    assert len(ck.read_text().splitlines()) == 5  # appended here, once per matrix


def test_law_sweeps_are_identical_on_a_cluster(tmp_path, local2):
    from analysis.laws.sweep import default_config, make_config, run_sweep

    cfg = make_config(
        default_config("spherical"),
        dims=[2],
        betas=[1, 4],
        n=24,
        eps=[0.2],
        seeds=[0, 1],
        effort="fast",
    )
    timing = ["cpu_s", "wall_s", "cached"]
    one = run_sweep(cfg, out=tmp_path / "one", progress=False).drop(columns=timing)
    dask = run_sweep(cfg, out=tmp_path / "dask", progress=False, executor=local2)
    assert len((tmp_path / "dask" / "brackets.jsonl").read_text().splitlines()) == 4
    pd.testing.assert_frame_equal(dask.drop(columns=timing), one, check_exact=True)


def test_power_simulations_are_identical_on_a_cluster(tmp_path, local2):
    from analysis.power import PowerSpec, StudySizes, load_widths, simulated_decisions

    rows = [(e, lo, lo * r) for e in (0.05, 0.1, 0.2) for lo in (2, 3, 5) for r in (1, 2, 3)]
    pd.DataFrame(rows, columns=["eps", "lower", "upper"]).to_csv(tmp_path / "w.csv", index=False)
    w = load_widths(tmp_path / "w.csv")
    sizes = StudySizes(n_heads=24, n_held_out=8, n_boot=199)
    spec = PowerSpec(simulations=3, sizes=sizes, random_state=5)
    one = simulated_decisions(w, spec, share=0.2)
    dask = simulated_decisions(w, spec, share=0.2, executor=local2)
    pd.testing.assert_frame_equal(dask, one, check_exact=True)


def test_the_command_line_runs_on_a_cluster_and_names_its_flags(tmp_path, capsys, monkeypatch):
    from analysis.cli import main

    store = _store(tmp_path / "s", n=2)
    store.close()
    argv = ["store", "bracket", str(tmp_path / "s"), "--eps", "0.1", "--effort", "fast", "--quiet"]
    assert main([*argv, "--cluster", "local:1"]) == 0
    out = capsys.readouterr()
    assert "2 computed" in out.out and "LocalCluster of 1 worker" in out.err
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setattr("analysis.executor.DEFAULT_CONNECT_TIMEOUT", 1.0)
    assert main([*argv, "--scheduler", f"tcp://127.0.0.1:{port}"]) == 2
    assert "--scheduler" in capsys.readouterr().err
    assert main([*argv, "--cluster", "slurm:4"]) == 2
    assert "--cluster: " in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main([*argv, "--workers", "2", "--cluster", "local:2"])
    assert "not allowed with" in capsys.readouterr().err


def test_error_messages_name_the_flags():
    from analysis.cli import build_parser
    from analysis.cli.errors import PARAM_FLAGS, _subcommands

    parsers = {p.prog.split()[-1]: p for p in _subcommands(build_parser())}
    for command in ("run", "bracket", "laws", "validate-comparison", "reference-widths"):
        flags = parsers[command].get_default(PARAM_FLAGS)
        assert flags["scheduler"] == "--scheduler" and flags["cluster"] == "--cluster"
        assert flags["executor"] == "--scheduler/--cluster"
