"""Scripted break-it replay (issue 52): one trial per category, as a hostile or careless user.

Each trial builds its inputs in a fresh temporary folder, runs the ``attnrank`` command line
as a user does (``python -m analysis.cli`` in a subprocess, this checkout first on the
path) and prints ``held`` or ``failed`` with one line of why. Items 2 and 7 draw, lock and
run (to its brackets) a tiny MiniLM design with the CLI, then delete the outcome record
and amend, or edit the lock's times (:mod:`benchmarks.breakit_runs`). Items 4 and 5 put a
``sitecustomize`` in the trial's folder, first on the subprocess's path, that makes a
write fail with ENOSPC (a full disk, without a mount) and point ``TMPDIR`` at a sticky
folder of the trial; item 5 plants links and opens the stash folder as this user (as root
also gives it to uid 65534): a second user's own plant is not replayed. A trial whose
setting cannot be made here prints ``not replayed`` and says why (the MiniLM weights
missing, no ``/proc/self/fd``). A trial of a race (two concurrent ``store add``) that
prints ``held`` may have been lucky.

Run from the repository root::

    python -m benchmarks.breakit            # every trial (about 2.5 min on 2 cores)
    python -m benchmarks.breakit 8 12 H1    # some of them, by id

Exit status 0 when every replayed trial held, 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import stat
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Callable
from pathlib import Path

import numpy as np

from benchmarks.breakit_cli import (
    DESIGN,
    ROOT,
    Outcome,
    _no_traceback,
    _one_line,
    cli,
    write_extract,
    write_stack,
)
from benchmarks.breakit_runs import (
    t2_freeze_bypass,
    t4_full_disk,
    t5_stash_of_another_user,
    t7_lock_time_unparseable,
)

# --- the twelve items of issue 52 ---------------------------------------------------------


def t1_store_add_keeps_user_folder(w: Path) -> Outcome:
    (w / "proj" / "arrays").mkdir(parents=True)
    (w / "proj" / "arrays" / "results.txt").write_text("precious\n")
    (w / "bad.npz").write_bytes(b"not an npz")
    rc, _, err = cli(w, "store", "add", "proj", "bad.npz")
    if not (w / "proj" / "arrays" / "results.txt").is_file():
        return "failed", f"a failed first add removed proj/arrays/results.txt (exit {rc})"
    return "held", f"proj/arrays/results.txt kept (exit {rc})"


def t3_out_onto_fifo_and_symlink(w: Path) -> Outcome:
    write_stack(w / "A.npy")
    os.mkfifo(w / "fifo")
    rc, _, err = cli(w, "bracket", "A.npy", "--eps", "0.5", "--quiet", "--out", "fifo", timeout=60)
    if not stat.S_ISFIFO(os.lstat(w / "fifo").st_mode):
        return "failed", f"--out replaced a FIFO with a file (exit {rc})"
    if rc is None:
        return "failed", "--out onto a FIFO hung (blocked opening it)"
    (w / "target.json").write_text("{}")
    os.symlink("target.json", w / "link.json")
    rc2, _, _ = cli(w, "bracket", "A.npy", "--eps", "0.5", "--quiet", "--out", "link.json")
    if not os.path.islink(w / "link.json"):
        return "failed", f"--out replaced a symlink with a file (exit {rc2})"
    return "held", f"FIFO kept (exit {rc}), symlink kept (exit {rc2})"


def t6_concurrent_store_add(w: Path) -> Outcome:
    # one key (same checkpoint, input id, length, layer, head), different arrays
    write_extract(w / "a.npz", seed=0, input_id="same")
    write_extract(w / "b.npz", seed=1, input_id="same")
    cli(w, "store", "add", "st", "a.npz")  # the store exists first; then two at once
    for f in ("a.npz", "b.npz"):
        write_extract(w / f, seed={"a.npz": 2, "b.npz": 3}[f], input_id="same2")
    path = os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
    env = {**os.environ, "PYTHONPATH": path}
    cmd = [sys.executable, "-m", "analysis.cli", "store", "add", "st"]
    procs = [
        subprocess.Popen([*cmd, f], cwd=w, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        for f in ("a.npz", "b.npz")
    ]
    rcs = [p.wait(timeout=120) for p in procs]
    from analysis.store import Store

    bad = []
    with Store(w / "st") as store:
        for m in store.matrices():
            try:
                store.arrays(m.key, verify=True)
            except Exception as exc:  # noqa: BLE001 - any failure to read back is the finding
                bad.append(f"{m.key[:8]}: {type(exc).__name__}")
    if bad:
        return "failed", f"both adds exit {rcs}; rows naming a missing or other file: {bad[:2]}"
    return "held", f"adds exit {rcs}; every row reads back its own arrays (a race: may be luck)"


def _bracket_result(w: Path) -> dict:
    write_stack(w / "A.npy")
    rc, _, err = cli(w, "bracket", "A.npy", "--eps", "0.2", "--quiet", "--out", "r.json")
    if rc != 0:
        raise RuntimeError(f"bracket failed: {_one_line(err)}")
    return json.loads((w / "r.json").read_text())


def t8_impossible_ends(w: Path) -> Outcome:
    res = _bracket_result(w)
    res["matrices"][0]["brackets"][0]["lower"] = 25  # N = 12
    res["matrices"][1]["brackets"][0]["upper"] = 10**40
    (w / "bad.json").write_text(json.dumps(res))
    rc, _, err = cli(w, "verify", "A.npy", "bad.json")
    rc2, _, err2 = cli(w, "approximants", "A.npy", "--eps", "0.2", "--methods", "svd",
                       "--quiet", "--brackets", "bad.json")  # fmt: skip
    if rc != 1:
        return "failed", f"verify exit {rc}: {_one_line(err)}"
    if rc2 == 0 or "Traceback" in err2:
        return "failed", f"approximants --brackets exit {rc2}: {_one_line(err2)}"
    return "held", f"verify exit 1, approximants exit {rc2}: {_one_line(err2)}"


def t9_zero_byte_index(w: Path) -> Outcome:
    (w / "st").mkdir()
    (w / "st" / "index.sqlite").write_bytes(b"")
    rc, _, err = cli(w, "store", "bracket", "st", "--eps", "0.5", "--quiet")
    if rc == 0:
        return "failed", "a 0-byte index.sqlite read as an empty store (exit 0)"
    if "Traceback" in err or "index.sqlite" not in err:
        return "failed", f"exit {rc}, not a line naming the file: {_one_line(err)}"
    return "held", f"exit {rc}: {_one_line(err)}"


def t10_tracebacks(w: Path) -> Outcome:
    write_extract(w / "x.npz")
    with np.load(w / "x.npz") as z:
        arrays = dict(z)
    arrays["Q"] = arrays["Q"].astype(str)
    np.savez(w / "strq.npz", **arrays)
    rc, _, err = cli(w, "store", "add", "st", "strq.npz")
    if rc == 0:
        rc, _, err = cli(w, "store", "bracket", "st", "--eps", "0.5", "--quiet")
    first = _no_traceback(rc, err, "string-dtype Q")
    (w / "plug_boom.py").write_text(PLUGIN_RAISES)
    write_extract(w / "y.npz")
    rc, _, err = cli(w, "describe", "y.npz", "--eps", "0.1", "--plugin", "plug_boom",
                     "--blocks", "boom", "--quiet", "--out", "d.csv")  # fmt: skip
    second = _no_traceback(rc, err, "plugin that raises in describe")
    status = "held" if first[0] == second[0] == "held" else "failed"
    return status, f"{first[1]}; {second[1]}"


PLUGIN_RAISES = textwrap.dedent("""
    from analysis.descriptors import descriptor

    @descriptor("boom")
    def boom(cell):
        raise RuntimeError("a plugin's bug")

    BLOCKS = [boom]
""")

PLUGIN_SHIFTY = textwrap.dedent("""
    from analysis.descriptors import descriptor

    @descriptor("shifty")
    def shifty(cell):
        return {"x": 1.0} if cell.eps < 0.15 else {"y": 1.0}

    BLOCKS = [shifty]
""")


def t11_misspelled_design_key(w: Path) -> Outcome:
    text = DESIGN.read_text(encoding="utf-8")
    if "bootstrap_replicates" not in text:
        return "not replayed", f"{DESIGN.name} has no bootstrap_replicates to misspell"
    (w / "preregistration").mkdir()
    design = w / "preregistration" / "typo.toml"
    design.write_text(text.replace("bootstrap_replicates", "bootstrp_replicates", 1))
    rc, _, err = cli(w, "prereg", "draw", str(design))
    if rc == 0:
        return "failed", "prereg draw accepted bootstrp_replicates (the default taken)"
    if "bootstrp_replicates" not in err or "Traceback" in err:
        return "failed", f"exit {rc}, the key not named: {_one_line(err)}"
    return "held", f"exit {rc}: {_one_line(err)}"


def t12_names_differ_between_cells(w: Path) -> Outcome:
    (w / "plug_shifty.py").write_text(PLUGIN_SHIFTY)
    write_extract(w / "x.npz")
    rc, _, err = cli(w, "describe", "x.npz", "--eps", "0.1", "0.2", "--plugin", "plug_shifty",
                     "--blocks", "shifty", "--quiet", "--out", "d.csv")  # fmt: skip
    if rc == 0:
        return "failed", "describe wrote the union of the names with blanks (exit 0)"
    if "shifty" not in _one_line(err) or "Traceback" in err:
        return "failed", f"exit {rc}, the block not named: {_one_line(err)}"
    return "held", f"exit {rc}: {_one_line(err)}"


# --- categories that held in the second round ----------------------------------------------


def h1_path_traversal(w: Path) -> Outcome:
    write_extract(w / "x.npz")
    rc, _, err = cli(w, "store", "add", "st", "x.npz")
    if rc != 0:
        return "failed", f"store add failed: {_one_line(err)}"
    (w / "outside.npz").write_bytes((w / "x.npz").read_bytes())
    with sqlite3.connect(w / "st" / "index.sqlite") as con:
        con.execute("UPDATE matrices SET array_file = '../outside.npz'")
    con.close()
    rc, _, err = cli(w, "store", "bracket", "st", "--eps", "0.5", "--quiet")
    if rc == 0 or "outside the store" not in err or "Traceback" in err:
        return "failed", f"exit {rc}: {_one_line(err)}"
    return "held", f"exit {rc}: {_one_line(err)}"


def h2_edited_result_refused(w: Path) -> Outcome:
    write_stack(w / "A.npy")
    rc, _, err = cli(w, "bracket", "A.npy", "--eps", "0.2", "--witnesses", "--quiet",
                     "--out", "r.json")  # fmt: skip
    if rc != 0:
        return "failed", f"bracket failed: {_one_line(err)}"
    res = json.loads((w / "r.json").read_text())
    m = res["matrices"][0]
    hi = m["brackets"][0]["upper"]
    m["brackets"][0]["upper"] = max(hi - 1, 0)  # claim a lower rank, same witnesses
    (w / "edited.json").write_text(json.dumps(res))
    rc, _, err = cli(w, "verify", "A.npy", "edited.json")
    if rc != 1:
        return "failed", f"verify of an edited upper end: exit {rc}: {_one_line(err)}"
    return "held", f"verify exit 1: {_one_line(err)}"


def h3_relock_after_outcomes(w: Path) -> Outcome:
    pre = w / "preregistration"
    pre.mkdir()
    for suffix in ("", ".lock", ".outcomes.json"):
        src = DESIGN.with_name(DESIGN.name + suffix)
        if not src.is_file():
            return "not replayed", f"{src.name} is not shipped"
        (pre / src.name).write_bytes(src.read_bytes())
    (pre / (DESIGN.name + ".lock")).unlink()  # delete the lock, then lock again
    rc, _, err = cli(w, "prereg", "lock", str(pre / DESIGN.name))
    if rc == 0:
        return "failed", "re-lock after outcomes accepted"
    return "held", f"exit {rc}: {_one_line(err)}"


TRIALS: dict[str, tuple[str, Callable[[Path], Outcome]]] = {
    "1": ("a failed first store add keeps a folder the user made", t1_store_add_keeps_user_folder),
    "2": ("amending a frozen section after deleting FILE.outcomes.json", t2_freeze_bypass),
    "3": ("--out onto a FIFO or a symlink", t3_out_onto_fifo_and_symlink),
    "4": ("a full disk during a run keeps its work", t4_full_disk),
    "5": ("a stash another user can plant", t5_stash_of_another_user),
    "6": ("two concurrent store add of one key", t6_concurrent_store_add),
    "7": ("lock times null or garbage", t7_lock_time_unparseable),
    "8": ("impossible bracket ends without witnesses", t8_impossible_ends),
    "9": ("a 0-byte index.sqlite", t9_zero_byte_index),
    "10": ("one line, not a traceback (string Q; a raising plugin)", t10_tracebacks),
    "11": ("a misspelled design key", t11_misspelled_design_key),
    "12": ("a block whose names differ between cells", t12_names_differ_between_cells),
    "H1": ("an array path outside the store", h1_path_traversal),
    "H2": ("an edited result file refused by verify", h2_edited_result_refused),
    "H3": ("re-lock after outcomes refused", h3_relock_after_outcomes),
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("ids", nargs="*", help=f"trials to run (default all: {' '.join(TRIALS)})")
    args = parser.parse_args(argv)
    unknown = [i for i in args.ids if i not in TRIALS]
    if unknown:
        parser.error(f"unknown trial ids {unknown}; known: {' '.join(TRIALS)}")
    print(f"$ python -m benchmarks.breakit {' '.join(args.ids)}".rstrip())
    failed = 0
    for tid in args.ids or list(TRIALS):
        title, trial = TRIALS[tid]
        with tempfile.TemporaryDirectory(prefix=f"breakit-{tid}-") as tmp:
            try:
                status, why = trial(Path(tmp))
            except Exception as exc:  # noqa: BLE001 - a trial that cannot be set up fails
                status, why = "failed", f"the trial itself raised {type(exc).__name__}: {exc}"
        failed += status == "failed"
        print(f"{tid:>3} {status:<12} {title}: {why}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
