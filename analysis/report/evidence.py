"""Every locked study side by side: H1 and H2 as shares of each study's M0 loss.

:func:`find_studies` finds the locked studies whose stored comparison table ships: every
``docs/results/*/tables/comparisons.csv`` whose provenance line ``# design:`` names (by
its file name) a design in ``preregistration/`` with a lock beside it (a new study, the replication
included, is picked up once its tables are written there). :func:`evidence_table` reads
them, nothing is re-run, into one tidy row per (study, hypothesis) of the primary metric:
the effect, its CI and the SESOI as shares of the study's held-out M0 loss, the decision
under the study's own method and under method 3's rules ("v3"), and where that v3
decision comes from. :func:`locked_without_tables` lists the locked designs left out.

The v3 decision of a row, first match wins: the study's own decision when it ran under
method 3; the stored re-analysis ``tables/reanalysis_v3.csv``, variant
:data:`V3_VARIANT` (the locked numbers under method 3's decision words); for a row without
a SESOI, :func:`analysis.compare.decisions.decide` on its stored CI and Holm p (without a
SESOI method 3 decides by these alone); otherwise none (the TOST's lower half needs the
bootstrap replicates, which the tables do not hold).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

try:
    import tomllib
except ModuleNotFoundError:  # pragma: no cover - Python 3.10 with the tomli backport
    import tomli as tomllib  # type: ignore[no-redef]

from analysis.compare.decisions import decide
from analysis.compare.equivalence import NO_SESOI
from analysis.validation import ParameterError

__all__ = [
    "COLUMNS",
    "V3_VARIANT",
    "evidence_table",
    "find_studies",
    "locked_without_tables",
    "read_stored_table",
]

#: The tidy table's columns, in order.
COLUMNS: tuple[str, ...] = (
    "study",
    "design",
    "hypothesis",
    "kind",
    "pair",
    "metric",
    "n_heads_held_out",
    "n_cells_held_out",
    "base_loss",
    "effect",
    "ci_low",
    "ci_high",
    "effect_share",
    "ci_low_share",
    "ci_high_share",
    "sesoi_share",
    "p_holm",
    "method_own",
    "decision_own",
    "decision_v3",
    "v3_source",
    "table",
)
#: The variant of a stored ``reanalysis_v3.csv`` that is the locked study under method 3's
#: decision rules alone (same cells, split, calibration and bootstrap).
V3_VARIANT = "(a) v3 decisions"
_V3_TABLE = "reanalysis_v3.csv"
_NOT_ADDED = "no incremental information detected"


def read_stored_table(path: str | Path) -> tuple[pd.DataFrame, dict[str, str]]:
    """A stored table and its ``# key: value`` provenance lines (the leading ``#`` lines).

    Parameters
    ----------
    path : str or Path
        A CSV written by the report (``tables/*.csv``) or a re-analysis.

    Returns
    -------
    (pandas.DataFrame, dict)
        The table and the provenance lines as ``{key: value}``.

    Examples
    --------
    >>> import io, tempfile, pathlib
    >>> from analysis.report.evidence import read_stored_table
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "t.csv"
    >>> _ = p.write_text("# design: preregistration/x.toml\\npair,effect\\nM0<M1,0.5\\n")
    >>> frame, prov = read_stored_table(p)
    >>> prov["design"], frame["effect"].tolist()
    ('preregistration/x.toml', [0.5])
    """
    path = Path(path)
    lines = path.read_text(encoding="utf-8").splitlines()
    prov: dict[str, str] = {}
    n = 0
    for line in lines:
        if not line.startswith("#"):
            break
        key, _, value = line[1:].strip().partition(":")
        prov.setdefault(key.strip(), value.strip())
        n += 1
    return pd.read_csv(path, skiprows=n), prov


def _locked_designs(root: Path) -> dict[str, Path]:
    """``{"preregistration/X.toml": path}`` for every design with a lock beside it."""
    folder = root / "preregistration"
    if not folder.is_dir():
        raise ParameterError("root", "the repository's folder (with preregistration/)", str(root))
    return {
        f"preregistration/{p.name}": p
        for p in sorted(folder.glob("*.toml"))
        if p.with_name(p.name + ".lock").is_file()
    }


def find_studies(root: str | Path) -> list[tuple[str, Path, Path]]:
    """The locked studies whose comparison table ships, sorted by their first lock time.

    Parameters
    ----------
    root : str or Path
        The repository's folder.

    Returns
    -------
    list of (design, design_path, tables_folder)
        ``design`` is ``preregistration/X.toml``, X the file name the table's provenance
        line ``# design:`` ends with (the run may have named it relative or absolute).

    Raises
    ------
    ParameterError
        ``root`` without ``preregistration/``.

    Examples
    --------
    >>> from pathlib import Path
    >>> import analysis
    >>> from analysis.report.evidence import find_studies
    >>> root = Path(analysis.__file__).resolve().parents[1]
    >>> "preregistration/paper-lengths.toml" in [d for d, _, _ in find_studies(root)]
    True
    """
    root = Path(root)
    locked = _locked_designs(root)
    found = []
    for table in sorted((root / "docs" / "results").glob("*/tables/comparisons.csv")):
        _, prov = read_stored_table(table)
        # the run names the design as it was given (relative or absolute): match its name
        design = "preregistration/" + Path(prov.get("design", "")).name
        if design in locked:
            when = prov.get("first_locked_at") or prov.get("locked_at") or ""
            found.append((when, design, locked[design], table.parent))
    found.sort(key=lambda t: (t[0], t[1]))
    return [(d, p, t) for _, d, p, t in found]


def locked_without_tables(root: str | Path) -> list[tuple[str, str]]:
    """The locked designs :func:`find_studies` leaves out, each with why.

    Returns
    -------
    list of (design, reason)

    Examples
    --------
    >>> from pathlib import Path
    >>> import analysis
    >>> from analysis.report.evidence import locked_without_tables
    >>> root = Path(analysis.__file__).resolve().parents[1]
    >>> dict(locked_without_tables(root))["preregistration/paper-checkpoints.toml"]
    'locked, no outcomes recorded: not run'
    """
    root = Path(root)
    have = {d for d, _, _ in find_studies(root)}
    out = []
    for design, path in _locked_designs(root).items():
        if design in have:
            continue
        if path.with_name(path.name + ".outcomes.json").is_file():
            why = "locked, outcomes recorded, but no comparison table ships in docs/results/"
        else:
            why = "locked, no outcomes recorded: not run"
        out.append((design, why))
    return out


def _design_settings(path: Path) -> tuple[int, float]:
    """The design's method (default 2) and ``[inference] alpha``."""
    with open(path, "rb") as fh:
        design = tomllib.load(fh)
    alpha = design.get("inference", {}).get("alpha")
    if not isinstance(alpha, (int, float)):
        raise ParameterError("design", f"[inference] alpha in {path}", alpha)
    return int(design.get("method", 2)), float(alpha)


def _finite(v: object) -> bool:
    try:
        return math.isfinite(float(v))  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return False


def _own_decision(row: pd.Series) -> str:
    """The decision the study's report states (method 2 without a SESOI: superiority)."""
    if "decision" in row.index and isinstance(row["decision"], str) and row["decision"]:
        if row["decision"] == NO_SESOI:  # not detected, and no equivalence test was made
            return f"{_NOT_ADDED} (no SESOI set)"
        return row["decision"]
    return "adds information" if bool(row["adds_information"]) else _NOT_ADDED


def _v3_decision(
    row: pd.Series, *, method3: bool, stored: pd.DataFrame | None, alpha: float
) -> tuple[str, str]:
    """(decision_v3, v3_source) of one comparison row; see the module's docstring."""
    if method3:
        return _own_decision(row), "as run (method 3)"
    if stored is not None:
        hit = stored[(stored["variant"] == V3_VARIANT) & (stored["pair"] == row["pair"])]
        if len(hit) == 1:
            return str(hit["decision"].iloc[0]), f"stored: tables/{_V3_TABLE}, {V3_VARIANT}"
    if not _finite(row.get("sesoi")):
        word = decide(
            ci_low=float(row["ci_low"]),
            ci_high=float(row["ci_high"]),
            p_holm=float(row["p_holm"]),
            tost_p_holm=None,
            non_superiority_p_holm=None,
            alpha=alpha,
        )
        return word, "method-3 rule on the stored CI and Holm p (no SESOI)"
    return "", "none: no stored v3 re-analysis (its TOST needs the bootstrap replicates)"


def _study_rows(
    design: str, path: Path, tables: Path, hypotheses: Sequence[str]
) -> list[dict[str, object]]:
    frame, prov = read_stored_table(tables / "comparisons.csv")
    method, alpha = _design_settings(path)
    method3 = "non_superiority_p" in frame.columns or method == 3
    v3_path = tables / _V3_TABLE
    stored = read_stored_table(v3_path)[0] if v3_path.is_file() else None
    metric = str(frame["metric"].iloc[0])  # the report writes the primary metric first
    rows = []
    for _, r in frame[
        (frame["metric"] == metric) & frame["hypothesis"].isin(hypotheses)
    ].iterrows():
        base = float(r["base_value"])
        if not (_finite(base) and base > 0):
            raise ParameterError(
                "base_value", f"a positive M0 loss in {tables / 'comparisons.csv'}", base
            )
        decision_v3, source = _v3_decision(r, method3=method3, stored=stored, alpha=alpha)
        sesoi = r.get("sesoi")
        rows.append(
            {
                "study": prov.get("study", path.stem),
                "design": design,
                "hypothesis": r["hypothesis"],
                "kind": r.get("kind", ""),
                "pair": r["pair"],
                "metric": metric,
                "n_heads_held_out": int(r["n_heads"]),
                "n_cells_held_out": int(r["n_cells"]),
                "base_loss": base,
                "effect": float(r["effect"]),
                "ci_low": float(r["ci_low"]),
                "ci_high": float(r["ci_high"]),
                "effect_share": float(r["effect"]) / base,
                "ci_low_share": float(r["ci_low"]) / base,
                "ci_high_share": float(r["ci_high"]) / base,
                "sesoi_share": float(sesoi) / base if _finite(sesoi) else np.nan,
                "p_holm": float(r["p_holm"]),
                "method_own": 3 if method3 else 2,
                "decision_own": _own_decision(r),
                "decision_v3": decision_v3,
                "v3_source": source,
                "table": (tables / "comparisons.csv").as_posix(),
            }
        )
    return rows


def evidence_table(root: str | Path, *, hypotheses: Sequence[str] = ("H1", "H2")) -> pd.DataFrame:
    """One row per (locked study, hypothesis): effect as a share of M0's loss, decisions.

    Parameters
    ----------
    root : str or Path
        The repository's folder (its ``preregistration/`` and ``docs/results/``).
    hypotheses : sequence of str, keyword-only
        The hypothesis ids to keep (default H1 and H2).

    Returns
    -------
    pandas.DataFrame
        :data:`COLUMNS`; studies in the order of their first lock, hypotheses in the
        given order. Shares are ``effect / base_loss`` (``base_loss``: M0's held-out
        loss on the primary metric), the CI's ends and the SESOI alike; ``table`` is the
        comparison table's path relative to ``root``.

    Examples
    --------
    >>> from pathlib import Path
    >>> import analysis
    >>> from analysis.report.evidence import evidence_table
    >>> t = evidence_table(Path(analysis.__file__).resolve().parents[1])
    >>> row = t[(t.study == "paper-lengths") & (t.hypothesis == "H2")].iloc[0]
    >>> bool(row.effect_share == row.effect / row.base_loss), row.decision_v3
    (True, 'equivalent within SESOI')
    """
    root = Path(root)
    if isinstance(hypotheses, str) or not hypotheses:
        raise ParameterError("hypotheses", "a sequence of ids", hypotheses)
    rows: list[dict[str, object]] = []
    for design, path, tables in find_studies(root):
        rows += _study_rows(design, path, tables, list(hypotheses))
    out = pd.DataFrame(rows, columns=list(COLUMNS))
    if len(out):
        out["table"] = [Path(t).relative_to(root).as_posix() for t in out["table"]]
        order = {h: i for i, h in enumerate(hypotheses)}
        studies = {s: i for i, s in enumerate(dict.fromkeys(out["study"]))}
        out = out.sort_values(
            ["study", "hypothesis"], key=lambda c: c.map(studies if c.name == "study" else order)
        ).reset_index(drop=True)
    return out
