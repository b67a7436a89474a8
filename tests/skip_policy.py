"""In CI, a skipped test fails the run unless it was skipped for an allowed reason.

A skip is a test that did not run, and one that silently stops running (a dependency
missing from the dev extras, a leftover ``pytest.skip``) looks like a pass. CI (the
environment variable ``CI`` set, as ``.ci/run`` does) therefore fails the session when any
test or module is skipped for a reason other than those in :data:`ALLOWED_SKIPS`: the
machine has no GPU (or has one, for the test of the missing-device message), or the
optional Gemma-3 weights (Gemma Terms of Use, ``make gemma``) are not installed. Outside
CI skips are reported as usual (``-ra``) and change nothing.

Expected failures (``xfail``) are not skips and are left to pytest.
"""

from __future__ import annotations

import os
import re

import pytest

#: Why a test may be skipped in CI: name -> pattern of the skip reason.
ALLOWED_SKIPS: dict[str, re.Pattern[str]] = {
    "no GPU": re.compile(r"\bneeds a CUDA device\b"),
    "a GPU present": re.compile(r"^this machine has a GPU: "),
    "Gemma weights not installed": re.compile(r"^Gemma-3-270M weights are optional\b"),
}

#: Values of ``CI`` that mean "not CI".
_OFF = {"", "0", "false", "no", "off"}


def strict_skips() -> bool:
    """Whether the environment is CI (``CI`` set to anything but an off value)."""
    return os.environ.get("CI", "").strip().lower() not in _OFF


def skip_reason(report: pytest.CollectReport | pytest.TestReport) -> str:
    """The reason of a skipped report, without pytest's ``Skipped: `` prefix."""
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        reason = str(longrepr[2])
    else:
        reason = str(longrepr)
    return reason.removeprefix("Skipped: ")


def allowed(reason: str) -> bool:
    """Whether a skip for ``reason`` is allowed in CI."""
    return any(p.search(reason) for p in ALLOWED_SKIPS.values())


class SkipPolicy:
    """Collects every skip; in CI fails the session on one that is not allowed."""

    def __init__(self) -> None:
        self.offending: list[tuple[str, str]] = []

    def _record(self, report: pytest.CollectReport | pytest.TestReport) -> None:
        if not report.skipped or hasattr(report, "wasxfail"):
            return
        reason = skip_reason(report)
        if not allowed(reason):
            self.offending.append((report.nodeid, reason))

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        self._record(report)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self._record(report)

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        if self.offending and strict_skips() and exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter, exitstatus: int, config) -> None:
        if not (self.offending and strict_skips()):
            return
        terminalreporter.section("skips not allowed in CI", sep="=", red=True, bold=True)
        terminalreporter.line(
            f"{len(self.offending)} skipped for a reason other than: "
            + ", ".join(ALLOWED_SKIPS)
            + " (tests/skip_policy.py); CI fails on them:"
        )
        for nodeid, reason in self.offending:
            terminalreporter.line(f"  {nodeid}: {reason}")
