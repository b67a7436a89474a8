"""``attnrank prereg draw|lock|check|amend|outcomes FILE``.

What each command records, checks and refuses: docs/prereg.md, "Lock, check, amend" and
its sections on descriptor blocks, the pinned bracket engine, and the code, the first
lock time and outcomes. The pieces it calls: :func:`analysis.study.block_facts` (each
block's covariate names and version, from the design's plugins and the registry),
:func:`analysis.descriptors.check_block` (the block kit, before ``lock`` and ``amend``),
:func:`analysis.study.outcomes.study_outcomes` (the first outcome record, for ``draw``,
``lock``, ``amend`` and ``outcomes``) and ``analysis.brackets.ENGINE_VERSIONS`` (the engine
versions the package runs, passed to ``lock``, ``check`` and ``amend``).
"""

from __future__ import annotations

import argparse
import functools
import sys
from collections.abc import Callable
from pathlib import Path

from analysis.prereg.amend import amend_design
from analysis.prereg.amended_comments import strip_amendment_comments
from analysis.prereg.code_hash import code_drift
from analysis.prereg.design import draw_held_out, load_design, write_held_out
from analysis.prereg.lock import (
    PreregistrationError,
    check_design,
    lock_design,
    lock_path,
    read_lock,
)
from analysis.prereg.writable import writes_beside
from analysis.validation import ParameterError


def _block_facts(args: argparse.Namespace, refused: str = "") -> dict:
    """Each design block's covariate names and version, from the registry (plugins loaded),
    the engine versions the package runs (``engines``) and the packaged corpora the design
    reads with their digests (``corpora``, :func:`analysis.study.inputs.design_corpora`).

    The design's plugins are imported from the study root (``--root``, default the parent
    of the design's folder), as ``attnrank run`` does. With ``refused`` (what a failed
    check refuses: ``"lock"``, ``"amendment"``), each plugin block of the design's models
    must first pass the block kit (:func:`analysis.descriptors.check_block`).
    """
    from analysis.study.core import block_facts, engine_versions
    from analysis.study.inputs import design_corpora
    from analysis.study.paths import study_paths

    design = load_design(args.file)
    root = study_paths(args.file, root=args.root).root
    try:
        facts = block_facts(design, root=root, kit=bool(refused))
    except ParameterError as exc:
        if not refused or exc.name != "blocks":
            raise
        raise PreregistrationError(
            f"{args.file}: {refused} refused: {exc}", name="blocks"
        ) from None
    return {**facts, "engines": engine_versions(), "corpora": design_corpora(design)}


def _numbers(items: list[str] | None) -> dict[str, tuple[float, float]] | None:
    """``NAME=BEFORE:AFTER`` items as ``{NAME: (BEFORE, AFTER)}`` (errors name --numbers)."""
    if not items:
        return None
    out = {}
    for item in items:
        name, _, pair = item.rpartition("=")
        before, _, after = pair.partition(":")
        try:
            out[name.strip()] = (float(before), float(after))
        except ValueError:
            raise ParameterError("numbers", "NAME=BEFORE:AFTER (two numbers)", item) from None
        if not name.strip():
            raise ParameterError("numbers", "NAME=BEFORE:AFTER (a name)", item)
    return out


def _outcomes(args: argparse.Namespace) -> dict | None:
    """The design's first outcome record, wherever its store is (None before any)."""
    from analysis.study.outcomes import study_outcomes

    return study_outcomes(args.file, root=args.root)


def _check_shapes(data: dict) -> None:
    """Layers and heads the checkpoints lack are refused before a draw or a lock; a
    config that cannot be read offline is said on stderr and skipped."""
    from analysis.sources.config_shape import check_source_shapes

    for note in check_source_shapes(data):
        print(f"note: {note}", file=sys.stderr)


def _beside(*, probe: bool = True) -> Callable:
    """Run a command that writes beside the design (the lock, the deviations log, the
    draw, the outcome record): an unwritable folder is one line naming it."""

    def wrap(fn: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
        @functools.wraps(fn)
        def run(args: argparse.Namespace) -> int:
            with writes_beside(args.file, probe=probe):
                return fn(args)

        return run

    return wrap


@_beside()
def _draw(args: argparse.Namespace) -> int:
    design = load_design(args.file, require_held_out=False)
    if lock_path(args.file).exists():
        raise ParameterError("FILE", "a design without a lock (use `prereg amend`)", args.file)
    outcomes = _outcomes(args)
    if outcomes is not None:
        raise PreregistrationError(
            f"{args.file}: outcomes exist since {outcomes.get('time')} under lock "
            f"{outcomes.get('lock_sha256')} (recorded in {outcomes.get('store')}); a new "
            "held-out draw is refused. Restore the lock those outcomes were computed under.",
            name="held_out",
        )
    _check_shapes(design.data)
    heads = draw_held_out(design.data)
    # before the first lock a design has no amendments: its "# amended" comments were
    # copied from the design it started from, and describe that study's history
    path = Path(args.file)
    text, n_amended = strip_amendment_comments(path.read_text(encoding="utf-8"))
    if n_amended:
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)
        print(f"removed {n_amended} amendment comment(s) copied from the source design")
    write_held_out(args.file, heads)
    load_design(args.file)  # re-validate what was written
    print(
        f"held_out.heads: {len(heads)} of {len(design.population())} heads written to {args.file}"
    )
    print(f"held-out draw: {design.held_out_rule.describe()}")
    return 0


@_beside()
def _lock(args: argparse.Namespace) -> int:
    _check_shapes(load_design(args.file).data)
    record = lock_design(args.file, outcomes=_outcomes(args), **_block_facts(args, "lock"))
    print(f"locked {args.file} -> {lock_path(args.file)}")
    print(f"design sha256:   {record['design_sha256']}")
    print(f"held-out sha256: {record['held_out']['sha256']} ({record['held_out']['n']} heads)")
    print(f"held-out draw:   {load_design(args.file).held_out_rule.describe()}")
    print(f"lock sha256:     {record['lock_sha256']}")
    print(f"engine:          {record.get('engine')}")
    print(record["features_note"])
    return 0


def _check(args: argparse.Namespace) -> int:
    changes = check_design(args.file, **_block_facts(args))
    record = read_lock(args.file)
    drift = code_drift(record, design_path=args.file)
    if drift:
        print(f"warning: {drift}", file=sys.stderr)
    if changes:
        for c in changes:
            print(f"{args.file}: {c}", file=sys.stderr)
        return 1
    print(f"{args.file}: matches its lock")
    print(f"held-out draw: {load_design(args.file).held_out_rule.describe()}")
    return 0


@_beside()
def _amend(args: argparse.Namespace) -> int:
    record = amend_design(
        args.file,
        reason=args.reason,
        outcomes=_outcomes(args),
        numbers=_numbers(args.numbers),
        code=args.code,
        **_block_facts(args, "amendment"),
    )
    last = record["amendments"][-1]
    print(f"amendment {len(record['amendments'])} recorded; re-locked {args.file}")
    print(f"sections changed: {', '.join(last['sections']) or 'none'}")
    for c in last["changes"]:
        print(f"- {c}")
    eng = last.get("engine") or {}
    if eng.get("before") != eng.get("after"):
        print(f"engine: {eng.get('before')} -> {eng.get('after')}")
    print(f"lock sha256: {last['previous_lock_sha256']} -> {last['new_lock_sha256']}")
    if last.get("previous_code_sha256") != last.get("new_code_sha256"):
        print(f"code sha256: {last['previous_code_sha256']} -> {last['new_code_sha256']}")
    return 0


@_beside(probe=False)  # writes only when a store is at hand
def _outcomes_cmd(args: argparse.Namespace) -> int:
    from analysis.study.outcomes import bind_outcomes, outcomes_path

    outcomes = _outcomes(args)
    if outcomes is None:
        print(f"{args.file}: no outcome exists (no store holds an outcome record)")
        return 0
    print(f"first outcome: {outcomes['time']} under lock {outcomes.get('lock_sha256')}")
    for where in outcomes["found_in"]:
        print(f"recorded in:   {where}")
    if outcomes.get("store") and Path(str(outcomes["store"])).is_absolute():
        print(f"wrote {bind_outcomes(args.file, outcomes)}")
    elif not outcomes_path(args.file).exists():
        print(f"{outcomes_path(args.file)}: not written (no store at hand)")
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("prereg", help="preregistration: draw, lock, check, amend")
    sub = p.add_subparsers(dest="prereg_command", metavar="ACTION")
    sub.required = True
    d = sub.add_parser(
        "draw",
        help="draw the held-out heads into a design (before locking); removes the "
        "'# amended ...' comments a copied design carries from its source",
    )
    d.add_argument("file")
    d.add_argument("--root", help="study root whose store is consulted too (outcomes)")
    d.set_defaults(func=_draw)
    for name, func, text in (
        ("lock", _lock, "write FILE.lock (refuses when one exists)"),
        ("check", _check, "exit 0 when FILE matches its lock, 1 naming what changed"),
        ("amend", _amend, "log a deliberate change beside FILE and re-lock"),
        ("outcomes", _outcomes_cmd, "print the first outcome record; write FILE.outcomes.json"),
    ):
        s = sub.add_parser(name, help=text)
        s.add_argument("file")
        s.add_argument(
            "--root",
            help="study root: its plugins and its store (outcomes) (default: the parent "
            "of the design's folder)",
        )
        if name == "amend":
            s.add_argument("--reason", required=True, help="why the design changed")
            s.add_argument(
                "--code",
                action="store_true",
                help="record the analysis code now as the locked code (code_sha256)",
            )
            s.add_argument(
                "--numbers",
                nargs="+",
                metavar="NAME=BEFORE:AFTER",
                help="numbers under the old and the new engine (required to change the "
                "design's engine once outcomes exist), e.g. median_hi_lo=2.57:2.05",
            )
        s.set_defaults(func=func)
