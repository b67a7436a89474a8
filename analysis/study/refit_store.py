"""Finished refits of a compare stage kept on disk, so a stopped stage resumes.

The compare stage of a design with a refit bootstrap runs thousands of refits
(:mod:`analysis.compare.refit_runner`); each is kept here as a small JSON file named by its
key as soon as it is done (written atomically), and a rerun of the stage reads it instead of
refitting. The folder is removed once the stage has written its results: it is a resume
aid, not an output.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from analysis.compare.refit_runner import RefitRows
from analysis.study.records import write_bytes

__all__ = ["RefitFiles"]


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
