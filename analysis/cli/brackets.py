"""``attnrank bracket FILE``, ``attnrank verify FILE OUT.json``, ``attnrank approximants FILE``.

``bracket`` certifies the matrices of one file; a store's matrices are bracketed by
``attnrank store bracket`` (:mod:`analysis.cli.store`).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from analysis.atomic import JsonlCheckpoint, atomic_write
from analysis.brackets import EFFORTS, ENGINE_VERSIONS, LATEST_ENGINE, check_engine
from analysis.brackets.approximant_tables import (
    approximants_for_input,
    compare_with_brackets,
    summarize,
)
from analysis.brackets.approximants import METHODS as APPROX_METHODS
from analysis.brackets.io import ResultWriter, profile_file
from analysis.brackets.results import (
    bracket_frame,
    check_result,
    check_result_head,
    read_result,
    verify_result,
)
from analysis.cli.inputs import add_max_size_argument, check_size, load_matrices, load_queries_keys
from analysis.cli.outputs import check_output_file, drop_stash, stash_path, take_stash, write_failed
from analysis.cli.parallel import add_device_argument, add_parallel_arguments, parallel_kwargs
from analysis.executor import BATCH, RunSpec
from analysis.validation import ParameterError, check_eps_grid

#: Printed when the old ``--seed`` is given (``bracket``, ``store bracket``).
SEED_NOTE = "note: --seed is ignored and will be removed: the bracket search is deterministic"


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``bracket``, ``verify`` and ``approximants``."""
    p = sub.add_parser(
        "bracket",
        help="certified brackets [lo, hi] of r_eps for every matrix of one .npy / .npz file",
        description=(
            "Certified brackets lo <= r_eps(A) <= hi, each end backed by a witness, for "
            "every matrix of one file; printed, and written to OUT.json with --out. "
            "(The matrices of a store: `attnrank store bracket STORE`.)"
        ),
    )
    p.add_argument("input", metavar="INPUT", help=".npy (M, N) or (H, M, N), or an extract .npz")
    p.add_argument("--eps", type=float, nargs="+", required=True, help="tolerances (> 0)")
    p.add_argument(
        "--witnesses", action="store_true", help="store the witness of every reported end"
    )
    p.add_argument("--out", type=Path, help="OUT.json (default: print a table only)")
    p.add_argument(
        "--temperature", type=float, default=None, help="logit temperature (.npz only; default 1)"
    )
    p.add_argument("--renormalize", action="store_true", help="divide each row by its sum first")
    p.add_argument(
        "--effort", choices=EFFORTS, default="default", help="time spent searching witnesses"
    )
    add_engine_argument(p)
    # The search is deterministic; --seed did nothing and goes in the next release.
    p.add_argument("--seed", type=int, default=None, help=argparse.SUPPRESS)
    add_parallel_arguments(p)
    add_device_argument(p)
    p.add_argument(
        "--batch",
        type=int,
        default=BATCH,
        help=f"matrices searched side by side per job (default {BATCH}; 1: one at a time)",
    )
    add_max_size_argument(p)
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=run_bracket, param_flags={"path": "INPUT"})

    v = sub.add_parser(
        "verify",
        help="re-check every bracket end of a result file (exit 0 ok, 1 failed, 2 missing witnesses)",
    )
    v.add_argument("input", metavar="INPUT")
    v.add_argument("result", metavar="OUT.json", type=Path)
    v.set_defaults(func=run_verify, param_flags={"path": "INPUT", "result": "OUT.json"})

    a = sub.add_parser(
        "approximants",
        help="least certified rank of efficient-attention approximants (SVD, landmark rows, "
        "Nystromformer, Linformer, Performer), against certified brackets",
        description=(
            "For every matrix and eps, the least rank at which each approximant's certified "
            "max-row-l1 error is <= eps. With --brackets (a result of `attnrank bracket` on the "
            "same INPUT), each rank is set against the certified bracket [lo, hi] of r_eps: the "
            "approximant's overhead rank / r_eps lies in [rank / hi, rank / lo]."
        ),
    )
    a.add_argument("input", metavar="INPUT", help=".npy (A only) or an extract .npz (Q, K)")
    a.add_argument("--eps", type=float, nargs="+", required=True, help="tolerances (> 0)")
    a.add_argument(
        "--methods",
        nargs="+",
        choices=APPROX_METHODS,
        default=None,
        help="default: every method the input allows (Q/K methods need an unmasked .npz)",
    )
    a.add_argument(
        "--brackets",
        type=Path,
        help="OUT.json of `attnrank bracket` on INPUT (checked as `verify` checks it; ends "
        "with witnesses re-certified)",
    )
    a.add_argument(
        "--temperature", type=float, default=None, help="logit temperature (.npz only; default 1)"
    )
    a.add_argument("--renormalize", action="store_true", help="divide each row by its sum first")
    a.add_argument("--seed", type=int, default=0, help="Performer features (per matrix)")
    a.add_argument("--out", type=Path, help="TABLE.csv, one row per (matrix, method, eps)")
    a.add_argument("--quiet", action="store_true", help="no progress bar")
    a.set_defaults(func=run_approximants, param_flags={"path": "INPUT", "result": "--brackets"})


def add_engine_argument(p: argparse.ArgumentParser) -> None:
    """``--engine N``: the bracket engine version (default: the newest); checked by
    :func:`analysis.brackets.check_engine`, whose error names ``--engine``."""
    versions = ", ".join(map(str, ENGINE_VERSIONS))
    p.add_argument(
        "--engine",
        default=None,
        metavar="N",
        help=f"bracket engine version, one of {versions} (default: the newest, {LATEST_ENGINE})",
    )


def _checkpoint(ck: Path, stash: Path) -> JsonlCheckpoint:
    """The run's checkpoint beside ``--out``: a line that cannot be written there (a full
    disk) goes to the run's stash instead, or stays in memory until it can be written."""
    return JsonlCheckpoint(ck, spill=stash, say=lambda note: print(note, file=sys.stderr))


def run_bracket(args: argparse.Namespace) -> int:
    eps = check_eps_grid(args.eps)
    engine = check_engine(args.engine)
    out = check_output_file("out", args.out)  # before any work: a folder, a read-only place
    workers = args.workers if args.scheduler is None and args.cluster is None else 1
    note = check_size(args.input, args.max_size, workers)  # from the headers alone
    if note is not None:
        print(note, file=sys.stderr)
    if args.seed is not None:
        print(SEED_NOTE, file=sys.stderr)
    data = load_matrices(args.input, temperature=args.temperature, renormalize=args.renormalize)
    # With --out, finished matrices go to a checkpoint beside it, so that an interrupted
    # run resumes (every reused profile re-verified against its matrix first); the
    # checkpoint is removed once OUT.json is written.
    # A final write that fails leaves the checkpoint in a stash named by the run, which
    # the next run of the same input and settings resumes from, whatever its --out.
    ck = out.with_name(out.name + ".partial") if out else None
    stash = None
    if ck is not None:
        run = (data.sha256, data.temperature, data.renormalized, eps, args.effort, engine)
        stash = stash_path("bracket", *run)
        if take_stash(stash, ck):
            print(f"note: resuming from the finished profiles kept in {stash}", file=sys.stderr)
    ckpt = None if ck is None else _checkpoint(ck, stash)
    # OUT.json is encoded matrix by matrix as profiles arrive, while the workers search on.
    writer = (
        ResultWriter(data, eps=eps, effort=args.effort, witnesses=args.witnesses, engine=engine)
        if args.out
        else None
    )
    with parallel_kwargs(args) as parallel:
        profiles = profile_file(
            data,
            eps=eps,
            effort=args.effort,
            checkpoint=ckpt,
            say=lambda note: print(note, file=sys.stderr),
            on_profile=None if writer is None else writer.add,
            engine=engine,
            execution=RunSpec(
                **parallel, batch=args.batch, progress=not args.quiet, device=args.device
            ),
        )
    for i, prof in enumerate(profiles):
        layer, head = data.layers[i], data.heads[i]
        where = f"matrix {i}" if layer is None else f"layer {layer} head {head}"
        cells = "  ".join(
            f"eps={e:g}: [{lo}, {hi}]" for e, (lo, hi) in zip(eps, prof.brackets(eps), strict=True)
        )
        print(f"{where}: {cells}")
    if writer is not None:
        try:
            writer.write(out)
        except OSError as exc:
            raise write_failed("out", out, exc, ckpt, stash) from exc
        ck.unlink(missing_ok=True)
        drop_stash(stash)
        print(f"wrote {out}", file=sys.stderr)
    return 0


def run_verify(args: argparse.Namespace) -> int:
    # The file is checked for what it says about INPUT before INPUT is read with its
    # temperature and renormalization; a file that is not a result fails (exit 1).
    result, problems = read_result(args.result)
    if result is not None:
        problems = check_result_head(result)
    if problems:
        return _verify_failed(problems)
    data = load_matrices(
        args.input,
        temperature=result.get("temperature"),
        renormalize=bool(result.get("renormalized")),
    )
    problems = check_result(data, result)
    if problems:
        return _verify_failed(problems)
    rep = verify_result(data, result)
    for msg in rep.messages:
        print(msg, file=sys.stderr)
    if rep.status == 0:
        print(f"ok: {rep.checked} witnesses re-checked, every reported end is certified")
    elif rep.status == 2:
        print(
            "missing witnesses: nothing failed, but some reported ends cannot be checked",
            file=sys.stderr,
        )
    else:
        print("FAILED: at least one reported end is not certified by its witness", file=sys.stderr)
    return rep.status


def _verify_failed(problems: list[str]) -> int:
    for msg in problems:
        print(msg, file=sys.stderr)
    print("FAILED: OUT.json is not a result of `attnrank bracket` on INPUT", file=sys.stderr)
    return 1


def run_approximants(args: argparse.Namespace) -> int:
    eps = check_eps_grid(args.eps)
    out = check_output_file("out", args.out)
    data = load_matrices(args.input, temperature=args.temperature, renormalize=args.renormalize)
    brackets = None
    if args.brackets is not None:
        # checked as `verify` checks it: bound to INPUT's matrices, well formed, and every
        # end with a witness re-certified; any problem is one line naming --brackets
        result, problems = read_result(args.brackets)
        if problems:
            raise ParameterError("result", "a JSON result of `attnrank bracket`", problems[0])
        brackets = bracket_frame(
            result, data, say=lambda note: print(f"note: --brackets: {note}", file=sys.stderr)
        )
    if brackets is not None:
        missing = sorted(set(eps) - set(brackets["eps"]))
        if missing:
            print(
                f"note: --brackets has no bracket at eps {missing}: overheads left empty",
                file=sys.stderr,
            )
    qk = load_queries_keys(args.input, data)
    # With --out, finished matrices go to a checkpoint beside it (removed once written);
    # a final write that fails leaves it in a stash named by the run, which the next run
    # of the same input and settings resumes from, whatever its --out (as `bracket`).
    ck = out.with_name(out.name + ".partial") if out else None
    stash = None
    if ck is not None:
        methods = None if args.methods is None else tuple(args.methods)
        run = (data.sha256, data.temperature, data.renormalized, eps, methods, args.seed)
        stash = stash_path("approximants", *run)
        if take_stash(stash, ck):
            print(f"note: resuming from the finished tables kept in {stash}", file=sys.stderr)
    ckpt = None if ck is None else _checkpoint(ck, stash)
    table, left_out = approximants_for_input(
        data,
        qk,
        eps=eps,
        methods=args.methods,
        seed=args.seed,
        progress=not args.quiet,
        checkpoint=ckpt,
        say=lambda note: print(note, file=sys.stderr),
    )
    if brackets is not None:
        table = compare_with_brackets(table, brackets)
    for note in left_out:
        print(f"note: {note}", file=sys.stderr)
    print(summarize(table).to_string(index=False, float_format=lambda x: f"{x:.3g}"))
    if out:
        try:
            with atomic_write(out, mode="w") as fh:
                table.to_csv(fh, index=False)
        except OSError as exc:
            raise write_failed("out", out, exc, ckpt, stash) from exc
        ck.unlink(missing_ok=True)
        drop_stash(stash)
        print(f"wrote {out}", file=sys.stderr)
    return 0
