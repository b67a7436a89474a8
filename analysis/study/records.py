"""The study's own stored records: atomic JSON/CSV writes, stage seconds, the input index.

``stages.json`` holds wall seconds per stage; ``extractions.json`` maps each planned input
(:attr:`analysis.study.plan.ExtractionTask.label`) to its stored matrix keys, and each
synthetic matrix of the plan to its key. Both are read once per run and rewritten
atomically after every change, so an interrupted run keeps what it recorded.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd

from analysis.atomic import atomic_write

__all__ = ["ExtractionIndex", "StageClock", "read_json", "write_frame", "write_json"]


def read_json(path: Path, default: Any) -> Any:
    """The JSON in ``path``, or ``default`` when there is no such file.

    Examples
    --------
    >>> from pathlib import Path
    >>> from analysis.study.records import read_json
    >>> read_json(Path("absent.json"), {"runs": 0})
    {'runs': 0}
    >>> _ = Path("present.json").write_text('{"runs": 3}', encoding="utf-8")
    >>> read_json(Path("present.json"), {"runs": 0})
    {'runs': 3}
    """
    if not path.is_file():
        return default
    return json.loads(path.read_text(encoding="utf-8"))


def write_bytes(path: Path, data: bytes) -> None:
    with atomic_write(path) as fh:
        fh.write(data)


def write_json(path: Path, obj: Any) -> None:
    """Sorted, indented JSON, written atomically (non-JSON values as ``str``).

    Examples
    --------
    >>> from pathlib import Path
    >>> from analysis.study.records import write_json
    >>> write_json(Path("record.json"), {"b": 1, "a": Path("x") / "y"})
    >>> print(Path("record.json").read_text(encoding="utf-8"), end="")
    {
      "a": "x/y",
      "b": 1
    }
    """
    text = json.dumps(obj, indent=2, sort_keys=True, default=str) + "\n"
    write_bytes(path, text.encode("utf-8"))


def write_frame(path: Path, df: pd.DataFrame) -> None:
    """A CSV with full float precision, written atomically.

    Examples
    --------
    Every float reads back exactly (17 significant digits), e.g. 0.1 + 0.2:

    >>> from pathlib import Path
    >>> import pandas as pd
    >>> from analysis.study.records import write_frame
    >>> df = pd.DataFrame({"key": ["a", "b"], "x": [0.1 + 0.2, 1 / 3]})
    >>> write_frame(Path("cells.csv"), df)
    >>> pd.read_csv("cells.csv")["x"].tolist() == [0.1 + 0.2, 1 / 3]
    True
    >>> Path("cells.csv").read_text(encoding="utf-8").splitlines()[:2]
    ['key,x', 'a,0.30000000000000004']
    """
    write_bytes(path, df.to_csv(index=False, float_format="%.17g").encode("utf-8"))


class StageClock:
    """Wall seconds per stage, this run and summed over every run of the study.

    Reading the record counts one more run; every :meth:`add` rewrites the file.

    Examples
    --------
    >>> from pathlib import Path
    >>> from analysis.study.records import StageClock, read_json
    >>> clock = StageClock(Path("stages.json"))
    >>> clock.add("brackets", 2.0); clock.add("brackets", 0.5)
    >>> again = StageClock(Path("stages.json"))  # a second run of the study
    >>> again.add("brackets", 1.0)
    >>> record = read_json(Path("stages.json"), None)
    >>> record["runs"], record["total_seconds"], record["last_run_seconds"]
    (2, {'brackets': 3.5}, {'brackets': 1.0})
    """

    def __init__(self, path: Path):
        self.path = path
        self.record = read_json(path, {"total_seconds": {}, "runs": 0})
        self.record["runs"] = int(self.record.get("runs", 0)) + 1
        self.now: dict[str, float] = {}

    def add(self, stage: str, seconds: float) -> None:
        self.now[stage] = self.now.get(stage, 0.0) + seconds
        tot = self.record.setdefault("total_seconds", {})
        tot[stage] = tot.get(stage, 0.0) + seconds
        self.record["last_run_seconds"] = self.now
        write_json(self.path, self.record)


class ExtractionIndex:
    """``extractions.json``, read once: what each planned input and synthetic matrix stored.

    Parameters
    ----------
    path : Path
        The index file (absent until the first extraction).

    Examples
    --------
    >>> from pathlib import Path
    >>> from analysis.study.records import ExtractionIndex
    >>> index = ExtractionIndex(Path("extractions.json"))
    >>> label = "org/tiny|L=16|corpus-seed=0"
    >>> index.entry(label) is None, index.keys(label)
    (True, [])
    >>> index.record_input(label, "corpus:0", ["k1", "k2"])
    >>> index.synthetic()["spherical|n=8|d=2|beta=1.0|seed=0"] = "k3"
    >>> index.save()
    >>> reread = ExtractionIndex(Path("extractions.json"))  # what the file holds
    >>> reread.keys(label), reread.entry(label)
    (['k1', 'k2'], {'input_id': 'corpus:0', 'keys': ['k1', 'k2']})
    >>> reread.synthetic_key("spherical|n=8|d=2|beta=1.0|seed=0"), reread.synthetic_key("ball")
    ('k3', None)
    """

    SYNTHETIC = "synthetic"

    def __init__(self, path: Path):
        self.path = path
        self.data: dict[str, Any] = read_json(path, {})

    def entry(self, label: str) -> dict[str, Any] | None:
        """``{"input_id", "keys"}`` of a planned input, or None when not recorded."""
        return self.data.get(label)

    def keys(self, label: str) -> list[str]:
        """The matrix keys recorded for a planned input ([] when none)."""
        return list(self.data.get(label, {}).get("keys", []))

    def record_input(self, label: str, input_id: str, keys: list[str]) -> None:
        """Record one extracted input and save at once."""
        self.data[label] = {"input_id": input_id, "keys": keys}
        self.save()

    def synthetic(self) -> dict[str, str]:
        """Synthetic label -> matrix key (the live mapping; :meth:`save` after changing it)."""
        return self.data.setdefault(self.SYNTHETIC, {})

    def synthetic_key(self, label: str) -> str | None:
        return self.data.get(self.SYNTHETIC, {}).get(label)

    def save(self) -> None:
        write_json(self.path, self.data)
