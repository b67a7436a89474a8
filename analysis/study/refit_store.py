"""Finished refits of a compare stage kept on disk, so a stopped stage resumes.

The compare stage of a design with a refit bootstrap runs thousands of refits
(:mod:`analysis.compare.refit_runner`); each is kept here as a small JSON file named by its
key as soon as it is done (written atomically), and a rerun of the stage reads it instead of
refitting. The folder is removed once the stage has written its results: it is a resume
aid, not an output.
"""

from __future__ import annotations

import contextlib
import json
import shutil
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from analysis.compare.refit_runner import RefitRows, RefitRunner, refit_runner
from analysis.study.records import write_bytes

__all__ = ["RefitFiles", "discard", "stage_refits"]


class RefitFiles:
    """:class:`analysis.compare.refit_runner.RefitStore` in a folder, one file a refit.

    Examples
    --------
    >>> from pathlib import Path
    >>> from analysis.study.refit_store import RefitFiles
    >>> store = RefitFiles(Path("refits"))
    >>> store.get("ab12"), len(store)
    (None, 0)
    >>> store.put("ab12", [("M0", "M1", "interval_sq_loss", 0.5, "ok")])
    >>> store.get("ab12"), len(store)
    ([('M0', 'M1', 'interval_sq_loss', 0.5, 'ok')], 1)
    >>> store.clear(); Path("refits").exists()
    False
    """

    def __init__(self, folder: Path) -> None:
        self.folder = Path(folder)

    def _path(self, key: str) -> Path:
        return self.folder / key[:2] / f"{key}.json"

    def get(self, key: str) -> RefitRows | None:
        path = self._path(key)
        if not path.is_file():
            return None
        rows = json.loads(path.read_text(encoding="utf-8"))
        return [(str(b), str(r), str(m), float(e), str(s)) for b, r, m, e, s in rows]

    def put(self, key: str, rows: RefitRows) -> None:
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        # json writes a float's repr (NaN as NaN): it reads back to the same float
        write_bytes(path, json.dumps([list(r) for r in rows]).encode("utf-8"))

    def __len__(self) -> int:
        return sum(1 for _ in self.folder.glob("*/*.json")) if self.folder.is_dir() else 0

    def clear(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)


@contextlib.contextmanager
def stage_refits(
    results: Path,
    table: pd.DataFrame,
    kwargs: Mapping[str, Any],
    *,
    executor: Any,
    workers: int,
    say: Callable[[str], None],
    progress: bool,
) -> Iterator[RefitFiles]:
    """Inside the block, the comparisons' refits run on the stage's pool (when the design
    refits: ``kwargs["refit_replicates"]``) and are kept in ``results/refits/<code>/``.

    ``<code>`` is the first 16 hex digits of the analysis code's SHA-256: a stage resumed
    after the code changed refits anew instead of reading refits of other code. Yields the
    store (:func:`discard` it once the results are written).
    """
    from analysis.executor import task_pool
    from analysis.prereg.code_hash import code_sha256
    from analysis.worker_setup import prepare_worker

    store = RefitFiles(Path(results) / "refits" / code_sha256()[:16])
    replicates = int(kwargs.get("refit_replicates", 0) or 0)
    if not replicates:
        yield store
        return
    column = next((c for c in ("family", "stratum") if c in table.columns), None)
    families = 0 if column is None else table[column].nunique()
    say(
        f"compare: {replicates} refits a comparison; with the leave-one-family-out "
        f"refits and the OLS refit up to {(2 + families) * replicates} refits "
        f"({len(store)} stored by an earlier run, reused)"
    )

    def bar(total: int) -> Any:
        from tqdm.auto import tqdm

        return tqdm(total=total, desc="refits", unit="refit", disable=not progress, leave=False)

    with task_pool(executor, workers, initializer=prepare_worker) as pool:
        with refit_runner(RefitRunner(pool=pool, store=store, progress=bar)):
            yield store


def discard(store: RefitFiles) -> None:
    """Remove a stage's refits, and ``refits/`` itself unless other code's are left there."""
    store.clear()
    with contextlib.suppress(OSError):
        store.folder.parent.rmdir()
