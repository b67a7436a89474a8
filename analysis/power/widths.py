"""Reference bracket widths, resampled conditionally on eps and on where a cell's rank lies.

:func:`load_widths` reads measured integer brackets, :class:`WidthModel` resamples them
(per checkpoint: :class:`StratumWidths`) for :mod:`analysis.power.simulate`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from analysis.validation import ParameterError, check_int

if TYPE_CHECKING:
    from analysis.power.inputs import PowerAssumptions, StudySizes

__all__ = ["DEFAULT_WIDTHS", "StratumWidths", "WidthModel", "load_widths"]

#: Where ``attnrank reference-widths`` writes MiniLM bracket widths (relative to a study root).
DEFAULT_WIDTHS = Path("data/reference/minilm_bracket_widths.csv")


def load_widths(path: str | Path) -> pd.DataFrame:
    """Read integer brackets (``eps``, ``lower``, ``upper``); add ``width`` and ``midpoint``
    (log2).

    Raises
    ------
    FileNotFoundError
        When the file is missing: widths are never invented.
    ParameterError
        On missing columns or brackets that are not ``1 <= lower <= upper`` integers.

    Examples
    --------
    >>> from pathlib import Path
    >>> from analysis.power.widths import load_widths
    >>> _ = Path("widths.csv").write_text("eps,lower,upper\\n0.1,4,8\\n0.1,16,16\\n")
    >>> print(load_widths("widths.csv").to_string(index=False))
     eps  lower  upper  width  midpoint
     0.1      4      8    1.0       2.5
     0.1     16     16    0.0       4.0
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(
            f"bracket widths file not found: {path}. It holds benchmark MiniLM brackets "
            "(columns eps, lower, upper) written by `attnrank reference-widths`; pass "
            "--widths FILE. Widths are never invented."
        )
    df = pd.read_csv(path)
    for c in ("eps", "lower", "upper"):
        if c not in df.columns:
            raise ParameterError("widths", f"a CSV with a column {c}", list(df.columns))
    lo = df["lower"].to_numpy(float)
    up = df["upper"].to_numpy(float)
    if (
        len(df) == 0
        or np.any(lo != np.round(lo))
        or np.any(up != np.round(up))
        or np.any(lo < 1)
        or np.any(up < lo)
    ):
        raise ParameterError("widths", "integer brackets with 1 <= lower <= upper", str(path))
    out = df.loc[:, ["eps", "lower", "upper"]].copy()
    out["width"] = np.log2(up) - np.log2(lo)
    out["midpoint"] = 0.5 * (np.log2(up) + np.log2(lo))
    return out


@dataclass(frozen=True)
class WidthModel:
    """Reference widths per eps, split into quantile bins of their bracket midpoints.

    Build it with :meth:`from_frame`; :meth:`draw` resamples a width for each simulated
    cell from the bin of its eps that matches the cell's position in the study.

    Attributes
    ----------
    bins : tuple of (eps, tuple of width arrays)
        Per eps, the reference widths of each midpoint bin, lowest midpoints first.

    Examples
    --------
    Three reference brackets at eps 0.1 in two midpoint bins, one at eps 0.2:

    >>> import numpy as np
    >>> import pandas as pd
    >>> from analysis.power.widths import WidthModel
    >>> widths = pd.DataFrame({"eps": [0.1, 0.1, 0.1, 0.2], "lower": [4, 16, 2, 1],
    ...                        "upper": [8, 16, 8, 2]})
    >>> widths["width"] = np.log2(widths["upper"]) - np.log2(widths["lower"])
    >>> model = WidthModel.from_frame(widths, [0.1, 0.2], n_bins=2)
    >>> [(eps, [part.tolist() for part in parts]) for eps, parts in model.bins]
    [(0.1, [[2.0, 1.0], [0.0]]), (0.2, [[1.0]])]

    The higher of two cells at eps 0.1 draws from the upper bin, the lower one from the
    lower bin (``u = 0.9`` picks its second width):

    >>> eps, y, u = np.array([0.1, 0.1, 0.2]), np.array([5.0, 1.0, 3.0]), np.array([0.0, 0.9, 0.5])
    >>> model.draw(eps, y, u).tolist()
    [0.0, 1.0, 1.0]
    """

    bins: tuple[tuple[float, tuple[np.ndarray, ...]], ...] = field(repr=False)

    @classmethod
    def from_frame(
        cls, widths: pd.DataFrame, eps: Sequence[float], *, n_bins: int = 4
    ) -> WidthModel:
        """Split each eps's reference rows (sorted by midpoint) into ``n_bins`` bins of
        equal size (``numpy.array_split``; fewer when an eps has fewer rows)."""
        n_bins = check_int("width_bins", n_bins, minimum=1)
        if "midpoint" not in widths.columns:
            widths = widths.assign(
                midpoint=0.5 * (np.log2(widths["lower"]) + np.log2(widths["upper"]))
            )
        out = []
        for e in eps:
            sel = np.isclose(widths["eps"].to_numpy(float), e)
            if not sel.any():
                raise ParameterError(
                    "eps", f"values present in the widths file ({sorted(set(widths['eps']))})", e
                )
            g = widths.loc[sel].sort_values(["midpoint", "width"], kind="stable")
            w = g["width"].to_numpy(float)
            parts = tuple(p for p in np.array_split(w, min(n_bins, w.size)) if p.size)
            out.append((float(e), parts))
        return cls(bins=tuple(out))

    def draw(self, eps: np.ndarray, y: np.ndarray, u: np.ndarray) -> np.ndarray:
        """Widths for cells at ``eps`` with true values ``y``, from uniforms ``u``.

        Notes
        -----
        Within each eps, a cell's quantile ``q = rank(y) / n`` among the study's cells at
        that eps picks the bin ``floor(q * n_bins)``: the reference midpoints stand in for
        the unknown true ranks, and quantiles make the match free of the simulated
        outcome's scale. ``u`` (one uniform per cell) picks a width in the bin, so the
        random numbers used do not depend on the outcome (common random numbers across
        effect shares).
        """
        out = np.empty(eps.size)
        for val, parts in self.bins:
            sel = np.flatnonzero(np.isclose(eps, val))
            if sel.size == 0:
                continue
            k = len(parts)
            q = (np.argsort(np.argsort(y[sel], kind="stable"), kind="stable") + 0.5) / sel.size
            b = np.minimum((q * k).astype(int), k - 1)
            for j, ws in enumerate(parts):
                hit = sel[b == j]
                idx = np.minimum((u[hit] * ws.size).astype(int), ws.size - 1)
                out[hit] = ws[idx]
        return out


@dataclass(frozen=True)
class StratumWidths:
    """One :class:`WidthModel` per checkpoint stratum: each family's own bracket widths.

    Build it with :meth:`from_frame` from measured brackets that carry a ``stratum``
    column (e.g. the training heads of a study, :mod:`analysis.power.fit`).

    Examples
    --------
    >>> import pandas as pd
    >>> from analysis.power.widths import StratumWidths
    >>> widths = pd.DataFrame({"stratum": ["a", "a", "b"], "eps": 0.1,
    ...                        "lower": [4, 2, 8], "upper": [8, 2, 32]})
    >>> model = StratumWidths.from_frame(widths, [0.1], n_bins=1)
    >>> [(label, [p.tolist() for p in m.bins[0][1]]) for label, m in model.models]
    [('a', [[0.0, 1.0]]), ('b', [[2.0]])]
    """

    models: tuple[tuple[str, WidthModel], ...] = field(repr=False)

    @classmethod
    def from_frame(
        cls, widths: pd.DataFrame, eps: Sequence[float], *, n_bins: int = 4
    ) -> StratumWidths:
        """A :meth:`WidthModel.from_frame` per value of the ``stratum`` column."""
        if "stratum" not in widths.columns:
            raise ParameterError("widths", "brackets with a stratum column", list(widths.columns))
        if "width" not in widths.columns:
            widths = widths.assign(
                width=np.log2(widths["upper"].astype(float))
                - np.log2(widths["lower"].astype(float))
            )
        return cls(
            tuple(
                (str(label), WidthModel.from_frame(g, eps, n_bins=n_bins))
                for label, g in widths.groupby("stratum", sort=True)
            )
        )

    def for_stratum(self, label: str) -> WidthModel:
        """The width model of one stratum (ParameterError ``widths`` when it has none)."""
        for name, model in self.models:
            if name == label:
                return model
        raise ParameterError(
            "widths", f"widths measured on stratum {label!r}", [m[0] for m in self.models]
        )

    def draw(self, eps: np.ndarray, y: np.ndarray, u: np.ndarray, strata: np.ndarray) -> np.ndarray:
        """:meth:`WidthModel.draw` within each stratum, from that stratum's widths."""
        out = np.empty(eps.size)
        for label in np.unique(strata):
            sel = strata == label
            out[sel] = self.for_stratum(str(label)).draw(eps[sel], y[sel], u[sel])
        return out


def _width_model(
    sizes: StudySizes,
    widths: pd.DataFrame | WidthModel | StratumWidths,
    assumptions: PowerAssumptions,
) -> WidthModel | StratumWidths:
    if isinstance(widths, (WidthModel, StratumWidths)):
        return widths
    if not isinstance(widths, pd.DataFrame):
        raise ParameterError("widths", "a DataFrame from load_widths or a WidthModel", widths)
    return WidthModel.from_frame(widths, sizes.eps, n_bins=assumptions.width_bins)
