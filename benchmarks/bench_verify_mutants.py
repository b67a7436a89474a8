"""Mutation testing of the verifier: can a weakened ``analysis/brackets/verify.py`` pass?

Two sets of mutants, each run against the verifier's tests:

- ``named``: the weakenings that matter for soundness, written by hand, of ``verify.py``
  (the promotion of the inputs to float64, and one rounding term of the allowance removed
  each: the ``|U||W|^T`` mass, ``gamma_N``, ``|A|``, the final ``1 + 4u``, ``_SAFETY``,
  the ``D`` of ``Y A R``, the numerator's ``gamma_(m+2)``, the norm inflations, the final
  ``1 - 4u``, the underflow cases) and of ``profile.py`` (a margin equal to eps accepted
  by ``largest_lower``). Every one must be killed; the report says which tests killed it
  and whether a soundness assertion (a certified number on the wrong side of the exact
  one) was among them. This set needs no cosmic-ray.
- ``cosmic-ray``: every mutation that cosmic-ray's core operators (its own AST walk and
  mutation code, ``cosmic_ray.mutating.mutate_code``) make in ``verify.py``: each
  arithmetic and comparison operator replaced by each other one, numbers changed,
  conditions negated, and so on.

Mutants run in this process: a mutant's functions swap their code objects into the
imported module (the tests hold those same function objects) and its constants replace
the module's, then ``pytest.main`` runs the test subset; a mutant is killed when a test
fails or errors, survived when all pass, a timeout after ``--timeout`` seconds. Running
in-process (one import of numpy / torch for the whole run) is what makes a full run take
minutes: cosmic-ray's own runner starts a test process per mutant.

cosmic-ray is not a test dependency: install it with ``pip install -e ".[mutation]"`` for
the ``cosmic-ray`` set (imported only there).
Run from the repository root::

    python -m benchmarks.bench_verify_mutants            # both sets (about 60 min on a loaded core)
    python -m benchmarks.bench_verify_mutants --set named --verbose

The table and every surviving mutant (with its diff) are printed, and written as JSON to
``benchmarks/out/verify_mutants.json``.
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import io
import json
import platform
import signal
import sys
import time
import types
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
VERIFY = "analysis/brackets/verify.py"
PROFILE = "analysis/brackets/profile.py"  # the read-off of bracket ends (largest_lower)
TARGET = ROOT / VERIFY  # what the cosmic-ray set mutates
OUT = ROOT / "benchmarks" / "out"
# The verifier's tests, fastest killers first: the exact adversarial suite (its slow cases
# left out, they repeat the fast ones at engine sizes), the original verifier tests, the
# inputs that are not float64, and the read-off of ends at eps itself.
TESTS = [
    "tests/brackets/test_verify_exact.py",
    "tests/brackets/test_verify.py",
    "tests/brackets/test_verify_dtypes.py",
    "tests/brackets/test_read_off.py",
]

# (file, name, what it removes, text in the file, replacement)
NAMED = [
    (
        VERIFY,
        "as64-promote",
        "the promotion of the inputs to float64 (float32 products rounded at 2^-24)",
        "X = X.astype(np.float64, copy=False)",
        "X = X",
    ),
    (
        VERIFY,
        "upper-mass",
        "the |U||W|^T rounding allowance of U W^T",
        "mass = np.abs(U) @ np.abs(W).sum(axis=0) if k else np.zeros(M)",
        "mass = np.zeros(M)",
    ),
    (
        VERIFY,
        "upper-A-term",
        "the |A| part of the upper allowance",
        "mass = (mass + np.abs(A).sum(axis=1)) * _SAFETY",
        "mass = mass * _SAFETY",
    ),
    (
        VERIFY,
        "upper-gamma-term",
        "the whole gamma_(k+2) allowance of the upper check",
        "e = s * (1.0 + gamma(N)) + gamma(k + 2) * mass * _SAFETY",
        "e = s * (1.0 + gamma(N))",
    ),
    (
        VERIFY,
        "upper-gamma-k",
        "gamma_(k+2) -> gamma_2 (drops the inner products' k)",
        "gamma(k + 2) * mass",
        "gamma(2) * mass",
    ),
    (VERIFY, "upper-gamma-N", "the gamma_N row-sum term", "e = s * (1.0 + gamma(N)) +", "e = s +"),
    (
        VERIFY,
        "upper-final",
        "the final 1 + 4u of the upper error",
        "e = float(np.max(e) * (1.0 + 4 * UNIT_ROUNDOFF))",
        "e = float(np.max(e))",
    ),
    (
        VERIFY,
        "upper-underflow",
        "the absolute allowance of the upper error below 2^-500",
        "e = 4.0 * e + (N * (k + 2) + 16) * _TINY",
        "e = e",
    ),
    (VERIFY, "safety", "_SAFETY = 1.01 -> 1.0 (both checks)", "_SAFETY = 1.01", "_SAFETY = 1.0"),
    (VERIFY, "lower-D", "the rounding bound D of Y A R", "D = gamma(M + N + m) * (", "D = 0.0 * ("),
    (
        VERIFY,
        "lower-D-gamma",
        "gamma_(M+N+m) -> gamma_m in D",
        "D = gamma(M + N + m) * (",
        "D = gamma(m) * (",
    ),
    (
        VERIFY,
        "lower-num-gamma",
        "the gamma_(m+2) term of the numerator",
        "num -= gamma(m + 2) * (np.abs(diag) + np.diag(D) + off_sum)",
        "pass",
    ),
    (
        VERIFY,
        "lower-ynorm",
        "the 1 + gamma_M inflation of ||y_p||_1",
        "ynorm = np.abs(Y).sum(axis=1) * (1.0 + gamma(M))",
        "ynorm = np.abs(Y).sum(axis=1)",
    ),
    (
        VERIFY,
        "lower-rnorm",
        "the 1 + gamma_m inflation of max_i ||R_i||_1",
        "rnorm = float(np.abs(R).sum(axis=1).max()) * (1.0 + gamma(m))",
        "rnorm = float(np.abs(R).sum(axis=1).max())",
    ),
    (
        VERIFY,
        "lower-final",
        "the final 1 - 4u of positive margins",
        "ratio > 0, ratio * (1 - 4 * UNIT_ROUNDOFF)",
        "ratio > 0, ratio",
    ),
    (
        VERIFY,
        "lower-underflow-D",
        "the absolute underflow allowance of D",
        "D = D + (2.0 * (M * N * rmax + N + 8) + 2.0) * _TINY",
        "D = D",
    ),
    (
        VERIFY,
        "lower-rescale",
        "the scaled re-check of witnesses with tiny norms",
        "if den < 2.0**-100:",
        "if False:",
    ),
    (
        PROFILE,
        "lower-accept-ge",
        "margin > eps -> margin >= eps in largest_lower (a margin equal to eps accepted)",
        "if w.margin > eps]",
        "if w.margin >= eps]",
    ),
]


@dataclass
class Result:
    set: str
    name: str
    outcome: str  # killed / survived / timeout / not-applied
    seconds: float
    killed_by: list[str]
    soundness: bool  # a certified number on the wrong side of the exact one
    diff: str


class _Collect:
    """pytest plugin: the failing tests and whether a soundness assertion failed."""

    def __init__(self):
        self.failed: list[str] = []
        self.soundness = False

    @classmethod
    def failing(cls, what: str) -> _Collect:
        out = cls()
        out.failed.append(what)
        return out

    def pytest_runtest_logreport(self, report):
        if report.failed:
            self.failed.append(report.nodeid.split("::")[-1])
            crash = getattr(report.longrepr, "reprcrash", None)
            text = crash.message if crash is not None else ""
            if "< exact error" in text or "> exact margin" in text:
                self.soundness = True


class _Timeout(Exception):
    pass


def _swap(module: types.ModuleType, source: str) -> list:
    """Install ``source`` into ``module`` in place; return what to restore.

    Functions, and the methods of classes, keep their objects and take the mutant's code
    (callers and tests hold those objects); other module-level values are replaced. A class
    itself stays the module's (instances and ``isinstance`` keep working)."""
    ns: dict = {"__name__": module.__name__, "__file__": module.__file__}
    exec(compile(source, module.__file__, "exec"), ns)
    pairs = []  # (old function, new function)
    saved = []
    for name, new in ns.items():
        old = module.__dict__.get(name)
        if isinstance(old, types.FunctionType) and isinstance(new, types.FunctionType):
            pairs.append((old, new))
        elif isinstance(old, type) and isinstance(new, type):
            pairs += [
                (f, vars(new)[attr])
                for attr, f in vars(old).items()
                if isinstance(f, types.FunctionType)
                and isinstance(vars(new).get(attr), types.FunctionType)
            ]
        elif not name.startswith("__"):
            saved.append(("value", name, old, None))
            module.__dict__[name] = new
    for old, new in pairs:
        saved.append(("code", old, old.__code__, old.__defaults__))
        old.__code__, old.__defaults__ = new.__code__, new.__defaults__
    return saved


def _restore(module: types.ModuleType, saved: list) -> None:
    for kind, target, a, b in saved:
        if kind == "code":
            target.__code__, target.__defaults__ = a, b
        else:
            module.__dict__[target] = a


def run_mutant(module, source, original, *, first_failure, timeout, verbose):
    import pytest

    collect = _Collect()
    try:
        saved = _swap(module, source)
    except Exception as exc:  # the mutated module does not even import: every test fails
        return (
            "killed",
            0.0,
            _Collect.failing(f"import: {type(exc).__name__}"),
            _diff(original, source),
        )
    args = ["-q", "-p", "no:cacheprovider", "-m", "not slow", "-W", "ignore"]
    args += (["-x"] if first_failure else []) + [str(ROOT / t) for t in TESTS]

    def alarm(signum, frame):
        raise _Timeout

    old = signal.signal(signal.SIGALRM, alarm)
    signal.alarm(timeout)
    t0 = time.perf_counter()
    try:
        sink = io.StringIO()
        with contextlib.redirect_stdout(sys.stdout if verbose else sink):
            rc = pytest.main(args, plugins=[collect])
        outcome = "survived" if rc == 0 else "killed"
    except _Timeout:
        outcome = "timeout"
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
        _restore(module, saved)
    return outcome, time.perf_counter() - t0, collect, _diff(original, source)


def _diff(original: str, source: str) -> str:
    return "\n".join(
        line
        for line in difflib.unified_diff(
            original.splitlines(), source.splitlines(), lineterm="", n=0
        )
        if not line.startswith(("---", "+++"))
    )


def named_mutants():
    """``(file, name, what, source)`` of each hand-written mutant (source None: its text is
    no longer in the file)."""
    for path, name, what, old, new in NAMED:
        original = (ROOT / path).read_text()
        yield path, name, what, (original.replace(old, new, 1) if old in original else None)


def _module(path: str) -> types.ModuleType:
    """The imported module of a file of the package (``analysis/brackets/verify.py``)."""
    import importlib

    return importlib.import_module(path.removesuffix(".py").replace("/", "."))


def cosmic_ray_mutants(original: str):
    """Every (operator, occurrence) that cosmic-ray's core operators apply to the module."""
    import cosmic_ray.plugins
    from cosmic_ray.ast import ast_nodes, get_ast
    from cosmic_ray.mutating import mutate_code

    tree = get_ast(original)
    for op_name in cosmic_ray.plugins.operator_names():
        cls = cosmic_ray.plugins.get_operator(op_name)
        if cls.arguments():  # operators that need arguments (none in the core set we use)
            continue
        op = cls()
        count = sum(len(list(op.mutation_positions(node))) for node in ast_nodes(tree))
        for occurrence in range(count):
            src = mutate_code(original, op, occurrence)
            yield f"{op_name}#{occurrence}", op_name, src


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--set", choices=["named", "cosmic-ray", "both"], default="both")
    ap.add_argument("--timeout", type=int, default=120, help="seconds per mutant")
    ap.add_argument("--start", type=int, default=0, help="skip the first N cosmic-ray mutants")
    ap.add_argument("--limit", type=int, default=0, help="only the first N cosmic-ray mutants")
    ap.add_argument(
        "--only",
        nargs="+",
        default=(),
        metavar="NAME",
        help="only these mutants (names as printed, e.g. core/NumberReplacer#3 upper-mass)",
    )
    ap.add_argument("--verbose", action="store_true", help="pytest output of every mutant")
    args = ap.parse_args(argv)
    print("command: python -m benchmarks.bench_verify_mutants " + " ".join(sys.argv[1:]))
    sys.path.insert(0, str(ROOT))
    import importlib.metadata

    module = _module(VERIFY)
    targets = sorted({path for path, *_ in NAMED} if args.set == "named" else {VERIFY})
    print(f"targets: {' '.join(targets)}; tests: {' '.join(TESTS)} (-m 'not slow')")
    # cosmic-ray is needed (and imported) only for the cosmic-ray set
    cosmic = (
        "" if args.set == "named" else f"cosmic-ray {importlib.metadata.version('cosmic-ray')}, "
    )
    print(
        f"{cosmic}pytest {importlib.metadata.version('pytest')}, python {platform.python_version()}"
    )
    original = TARGET.read_text()
    results: list[Result] = []
    t_start = time.perf_counter()
    # The unmutated module must pass, or every mutant would count as killed.
    outcome, sec, collect, _ = run_mutant(
        module, original, original, first_failure=True, timeout=args.timeout, verbose=False
    )
    print(f"baseline (unmutated): {outcome}, {sec:.1f} s")
    if outcome != "survived":
        raise SystemExit(f"the tests fail on the unmutated verifier: {collect.failed}")

    def run_and_record(
        kind: str, name: str, src: str, *, first_failure: bool, path: str = VERIFY
    ) -> tuple[str, float, _Collect, str]:
        """Run the tests on one mutant of ``path`` and add its :class:`Result` to ``results``."""
        outcome, sec, collect, diff = run_mutant(
            _module(path),
            src,
            (ROOT / path).read_text(),
            first_failure=first_failure,
            timeout=args.timeout,
            verbose=args.verbose,
        )
        results.append(Result(kind, name, outcome, sec, collect.failed, collect.soundness, diff))
        return outcome, sec, collect, diff

    if args.set in ("named", "both"):
        for path, name, what, src in named_mutants():
            if args.only and name not in args.only:
                continue
            if src is None:
                results.append(Result("named", name, "not-applied", 0.0, [], False, what))
                continue
            outcome, sec, collect, _ = run_and_record(
                "named", name, src, first_failure=False, path=path
            )
            print(
                f"  named {name:<18} {outcome:<8} {sec:5.1f} s  {len(collect.failed):3d} tests "
                f"failed  soundness={'yes' if collect.soundness else 'no'}  ({what})"
            )
    if args.set in ("cosmic-ray", "both"):
        for n, (name, _op, src) in enumerate(cosmic_ray_mutants(original)):
            if args.limit and n >= args.limit:
                break
            if n < args.start:
                continue
            if src is None or (args.only and name not in args.only):
                continue
            try:
                compile(src, str(TARGET), "exec")
            except SyntaxError:
                results.append(
                    Result("cosmic-ray", name, "killed", 0.0, ["SyntaxError"], False, "")
                )
                continue
            outcome, _, _, diff = run_and_record("cosmic-ray", name, src, first_failure=True)
            if outcome != "killed":
                print(f"  {outcome}: {name}\n{diff}")

    print(f"\ntotal wall time {time.perf_counter() - t_start:.0f} s\n")
    print("| set | mutants | killed | survived | timeouts |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for s in ("named", "cosmic-ray"):
        rs = [r for r in results if r.set == s and r.outcome != "not-applied"]
        if rs:
            c = {o: sum(r.outcome == o for r in rs) for o in ("killed", "survived", "timeout")}
            print(f"| {s} | {len(rs)} | {c['killed']} | {c['survived']} | {c['timeout']} |")
    missing = [r.name for r in results if r.outcome == "not-applied"]
    if missing:
        print(f"\nnamed weakenings whose text is no longer in their file: {missing}")
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "verify_mutants.json").write_text(json.dumps([asdict(r) for r in results], indent=1))
    survivors = [r for r in results if r.outcome == "survived"]
    print(f"\n{len(survivors)} surviving mutants:")
    for r in survivors:
        print(f"\n[{r.set}] {r.name}\n{r.diff}")


if __name__ == "__main__":
    main()
