"""Report tables: the :class:`Table` record, cell selections and writers (md, csv, tex).

The per-section table builders (``StudyResults -> DataFrame``) and
:func:`~analysis.report.study_tables.build_tables` are in
:mod:`analysis.report.study_tables`; this module holds what they and the report text
share (:func:`real_cells`, :func:`synthetic_cells`, :func:`hypotheses`,
:func:`summary_columns`) and the formatting of a finished frame.

Writers stamp the provenance block (:func:`analysis.report.provenance.provenance_lines`)
on every file:

- Markdown: the table, then a ``Provenance`` list under it.
- LaTeX: ``% key: value`` comment lines at the top, then a ``table`` environment with a
  caption.
- CSV: ``# key: value`` lines at the top, then the table with a header row. The file
  reads back with ``pandas.read_csv(path, comment="#")`` (floats are written with
  ``repr`` precision and read back exactly by pandas >= 3; older pandas needs
  ``float_precision="round_trip"``). Cells never contain ``#``
  (:func:`write_csv` refuses such a frame), so the comment marker cannot cut a row.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from analysis.atomic import atomic_write
from analysis.report.design import ReportDesign
from analysis.report.provenance import provenance_lines
from analysis.report.results import BRACKET_COLUMNS, StudyResults
from analysis.validation import ParameterError

__all__ = [
    "PER_R",
    "Table",
    "format_value",
    "hypotheses",
    "latex_table",
    "markdown_table",
    "number_text",
    "p_text",
    "real_cells",
    "summary_columns",
    "synthetic_cells",
    "write_csv",
    "write_latex",
    "write_markdown",
]

#: Per-r diagnostic feature columns (``intrinsic__q_r3``): left out of the summaries.
PER_R = re.compile(r"_r\d+$")


@dataclass(frozen=True)
class Table:
    """One report table before writing.

    Attributes
    ----------
    name : str
        File stem (``brackets`` -> ``tables/brackets.md``, ``.csv``, ``.tex``).
    title : str
        Caption.
    frame : pandas.DataFrame
    note : str
        One sentence on what the table shows and where its numbers come from.

    Examples
    --------
    >>> import pandas as pd
    >>> t = Table("brackets", "Rank brackets", pd.DataFrame({"lo": [2]}))
    >>> t.name, t.note, t.frame.shape
    ('brackets', '', (1, 1))
    """

    name: str
    title: str
    frame: pd.DataFrame
    note: str = ""


# -- selections -------------------------------------------------------------------


def check_results(results: Any) -> StudyResults:
    """Raise :class:`ParameterError` unless ``results`` is a usable :class:`StudyResults`."""
    if not isinstance(results, StudyResults):
        raise ParameterError("results", "a StudyResults", type(results).__name__)
    if not isinstance(results.brackets, pd.DataFrame):
        raise ParameterError("results.brackets", "a pandas DataFrame", type(results.brackets))
    missing = [c for c in BRACKET_COLUMNS if c not in results.brackets.columns]
    if missing:
        raise ParameterError(
            "results.brackets", "the columns BRACKET_COLUMNS", f"missing {missing}"
        )
    if not isinstance(results.features, pd.DataFrame) or (
        len(results.features.columns) and "cell_key" not in results.features.columns
    ):
        raise ParameterError("results.features", "a DataFrame with a cell_key column", "other")
    for name in (
        "comparison",
        "comparison_ols",
        "head_level",
        "lr_tests",
        "by_checkpoint",
        "by_length",
        "held_out_predictions",
    ):
        value = getattr(results, name)
        if value is not None and not isinstance(value, pd.DataFrame):
            raise ParameterError(f"results.{name}", "a DataFrame or None", type(value).__name__)
    return results


def real_cells(results: StudyResults) -> pd.DataFrame:
    """A copy of the real-checkpoint rows of ``results.brackets``.

    Examples
    --------
    The toy study of :mod:`analysis.datasets` has four real cells and three synthetic:

    >>> from analysis.datasets import example_table_results
    >>> real_cells(example_table_results())["cell_key"].tolist()
    ['r0', 'r1', 'r2', 'r3']
    """
    b = results.brackets
    return b.loc[b["source"] == "checkpoint"].copy()


def synthetic_cells(results: StudyResults) -> pd.DataFrame:
    """A copy of the synthetic rows of ``results.brackets`` (exploratory only).

    Examples
    --------
    >>> from analysis.datasets import example_table_results
    >>> synthetic_cells(example_table_results())["cell_key"].tolist()
    ['s0', 's1', 's2']
    """
    b = results.brackets
    return b.loc[b["source"] == "synthetic"].copy()


def hypotheses(design: ReportDesign) -> list[dict[str, str]]:
    """The design's hypotheses as ``id``, ``kind``, ``pair`` (``"M0<M1"``), ``statement``.

    Examples
    --------
    >>> from analysis.report.design import ReportHypothesis as H
    >>> hypotheses(ReportDesign(hypotheses=(H("H1", "confirmatory", "M0", "M1", "x helps"),)))
    [{'id': 'H1', 'kind': 'confirmatory', 'pair': 'M0<M1', 'statement': 'x helps'}]
    """
    return [
        {"id": h.id, "kind": h.kind, "pair": h.pair, "statement": h.statement}
        for h in design.hypotheses
    ]


def summary_columns(features: pd.DataFrame) -> tuple[list[str], list[str]]:
    """Feature columns to summarise, and the per-r diagnostics left out.

    Examples
    --------
    Columns without a ``BLOCK__`` prefix are not features; ``_r<digits>`` ends a per-r
    diagnostic:

    >>> feats = pd.DataFrame(columns=["cell_key", "native__kappa", "intrinsic__q_r3", "note"])
    >>> summary_columns(feats)
    (['native__kappa'], ['intrinsic__q_r3'])
    """
    cols = [c for c in features.columns if c != "cell_key" and "__" in c]
    per_r = [c for c in cols if PER_R.search(c)]
    return [c for c in cols if c not in set(per_r)], per_r


# -- formatting -------------------------------------------------------------------


def format_value(value: Any, *, digits: int = 4) -> str:
    """Cell text: integers as is, floats to ``digits`` significant digits, NaN as ``–``.

    Booleans print as ``yes`` / ``no``; numbers in ``[1e-4, 1e6)`` never use exponents.

    Examples
    --------
    >>> [format_value(v) for v in (3, 2.0, 3.14159, 12345.6, 1.5e-7, float("nan"), True)]
    ['3', '2', '3.142', '12346', '1.500e-07', '–', 'yes']
    """
    if value is None:
        return "–"
    if isinstance(value, (bool, np.bool_)):
        return "yes" if value else "no"
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (float, np.floating)):
        x = float(value)
        if math.isnan(x):
            return "–"
        if math.isinf(x):
            return "inf" if x > 0 else "-inf"
        if x == int(x) and abs(x) < 1e15:
            return str(int(x))
        if 1e-4 <= abs(x) < 1e6:
            text = f"{x:.{digits}g}"
            if "e" in text:  # e.g. 12345.6 with 4 digits
                text = f"{x:.0f}"
            return text
        return f"{x:.{digits - 1}e}"
    return str(value)


def number_text(x: Any, digits: int = 3) -> str:
    """:func:`format_value` to ``digits`` digits with a true minus sign; None as ``–``.

    Examples
    --------
    >>> number_text(-0.012345), number_text(None)
    ('−0.0123', '–')
    """
    return format_value(x, digits=digits).replace("-", "−") if x is not None else "–"


def p_text(x: Any) -> str:
    """A p-value to 3 significant digits (an exponent below 0.001); None or NaN as ``–``.

    Examples
    --------
    >>> p_text(0.04321), p_text(2e-5), p_text(None)
    ('0.0432', '2.0e-05', '–')
    """
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "–"
    return f"{x:.3g}" if x >= 1e-3 else f"{x:.1e}"


def _text_frame(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.apply(lambda col: col.map(format_value)).astype(str)


def markdown_table(frame: pd.DataFrame) -> str:
    """A GitHub pipe table of ``frame`` (no index); numbers right-aligned.

    Examples
    --------
    >>> print(markdown_table(pd.DataFrame({"pair": ["M0<M1"], "p": [0.01234]})))
    | pair | p |
    | :--- | ---: |
    | M0<M1 | 0.01234 |
    """
    text = _text_frame(frame)

    def esc(s: str) -> str:
        return s.replace("|", "\\|")

    header = "| " + " | ".join(esc(str(c)) for c in frame.columns) + " |"
    align = []
    for c in frame.columns:
        numeric = pd.api.types.is_numeric_dtype(frame[c]) and not pd.api.types.is_bool_dtype(
            frame[c]
        )
        align.append("---:" if numeric else ":---")
    lines = [header, "| " + " | ".join(align) + " |"]
    for row in text.itertuples(index=False):
        lines.append("| " + " | ".join(esc(v) for v in row) + " |")
    return "\n".join(lines)


def _latex_escape(s: str) -> str:
    repl = {
        "\\": r"\textbackslash{}",
        "&": r"\&",
        "%": r"\%",
        "$": r"\$",
        "#": r"\#",
        "_": r"\_",
        "{": r"\{",
        "}": r"\}",
        "~": r"\textasciitilde{}",
        "^": r"\textasciicircum{}",
        "<": r"\textless{}",
        ">": r"\textgreater{}",
        "|": r"\textbar{}",
        "–": "--",
        "−": "-",
    }
    return "".join(repl.get(ch, ch) for ch in s)


def latex_table(frame: pd.DataFrame, *, caption: str, label: str) -> str:
    """A LaTeX ``table`` (booktabs rules) of ``frame`` via :meth:`pandas.io.formats.style.Styler.to_latex`.

    Examples
    --------
    >>> tex = latex_table(pd.DataFrame({"a_b": [1.5]}), caption="50% of x", label="tab:x")
    >>> for line in tex.splitlines()[2:7]:  # escaped text; a number column is right-aligned
    ...     print(line)
    \\caption{50\\% of x}
    \\label{tab:x}
    \\begin{tabular}{r}
    \\toprule
    a\\_b \\\\
    """
    text = _text_frame(frame).apply(lambda col: col.map(_latex_escape))
    text.columns = [_latex_escape(str(c)) for c in frame.columns]
    styler = text.style.hide(axis="index")
    col_format = "".join(
        "r"
        if pd.api.types.is_numeric_dtype(frame[c]) and not pd.api.types.is_bool_dtype(frame[c])
        else "l"
        for c in frame.columns
    )
    return styler.to_latex(
        caption=_latex_escape(caption),
        label=label,
        hrules=True,
        column_format=col_format,
        position_float="centering",
    )


def _check_frame(frame: Any) -> pd.DataFrame:
    if not isinstance(frame, pd.DataFrame):
        raise ParameterError("frame", "a pandas DataFrame", type(frame).__name__)
    return frame


def write_markdown(
    frame: pd.DataFrame,
    path: str | Path,
    *,
    title: str,
    provenance: Sequence[tuple[str, str]],
    note: str = "",
) -> Path:
    """Write ``frame`` as a Markdown table with a title, a note and the provenance list.

    Examples
    --------
    >>> path = write_markdown(pd.DataFrame({"n": [1]}), "t.md", title="T", provenance=[("k", "v")])
    >>> path.read_text().splitlines()[0], path.read_text().splitlines()[-1]
    ('# T', '- k: `v`')
    """
    frame = _check_frame(frame)
    parts = [f"# {title}", ""]
    if note:
        parts += [note, ""]
    parts += [markdown_table(frame), "", "**Provenance**", ""]
    parts += [f"- {k}: `{v}`" for k, v in provenance]
    with atomic_write(path, mode="w") as fh:
        fh.write("\n".join(parts) + "\n")
    return Path(path)


def write_latex(
    frame: pd.DataFrame,
    path: str | Path,
    *,
    title: str,
    label: str,
    provenance: Sequence[tuple[str, str]],
) -> Path:
    """Write ``frame`` as a LaTeX table preceded by ``% key: value`` provenance comments.

    Needs ``\\usepackage{booktabs}`` in the including document.

    Examples
    --------
    >>> path = write_latex(pd.DataFrame({"n": [1]}), "t.tex", title="T", label="tab:t",
    ...                    provenance=[("k", "v")])
    >>> path.read_text().splitlines()[:2]
    ['% provenance', '% k: v']
    """
    frame = _check_frame(frame)
    head = ["% provenance"] + [f"% {k}: {v}" for k, v in provenance]
    body = latex_table(frame, caption=title, label=label)
    with atomic_write(path, mode="w") as fh:
        fh.write("\n".join(head) + "\n" + body)
    return Path(path)


def write_csv(
    frame: pd.DataFrame, path: str | Path, *, provenance: Sequence[tuple[str, str]]
) -> Path:
    """Write ``# key: value`` provenance lines, then ``frame`` as CSV (no index).

    Read it back with ``pandas.read_csv(path, comment="#")`` (bit-exact floats with
    pandas >= 3; older pandas needs ``float_precision="round_trip"``).

    Raises
    ------
    ParameterError
        A column name or string cell contains ``#`` (the comment marker would cut it).

    Examples
    --------
    >>> frame = pd.DataFrame({"x": [0.1, 1 / 3]})
    >>> path = write_csv(frame, "t.csv", provenance=[("study", "toy")])
    >>> path.read_text().splitlines()[:2]
    ['# study: toy', 'x']
    >>> back = pd.read_csv(path, comment="#")  # pandas >= 3: bit-exact
    >>> bool((back["x"] == frame["x"]).all())
    True
    >>> write_csv(pd.DataFrame({"a#b": [1]}), "u.csv", provenance=[])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    analysis.validation.ParameterError: frame: expected column names without '#', got 'a#b'
    """
    frame = _check_frame(frame)
    for c in frame.columns:
        if "#" in str(c):
            raise ParameterError("frame", "column names without '#'", c)
        col = frame[c]
        if (
            not pd.api.types.is_numeric_dtype(col)
            and col.map(lambda v: isinstance(v, str) and "#" in v).any()
        ):
            raise ParameterError("frame", f"cells of {c!r} without '#'", "a cell with '#'")
    head = "".join(f"# {k}: {v}\n" for k, v in provenance)
    with atomic_write(path, mode="w") as fh:
        fh.write(head + frame.to_csv(index=False, lineterminator="\n"))
    return Path(path)


#: Provenance keys that report.md states but the table files do not carry (the table
#: files' provenance block is kept as it was before they existed).
REPORT_ONLY_KEYS = frozenset({"store_outcome"})


def table_provenance(results: StudyResults, name: str) -> list[tuple[str, str]]:
    """The provenance block of one table (without :data:`REPORT_ONLY_KEYS`)."""
    prov = {k: v for k, v in results.provenance.items() if k not in REPORT_ONLY_KEYS}
    return provenance_lines(prov, study=results.study, table=name)
