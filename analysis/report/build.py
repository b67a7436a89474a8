"""Write a whole report folder from a :class:`StudyResults`."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from tqdm.auto import tqdm

from analysis.atomic import atomic_write
from analysis.report.figures import FORMATS, figures_for, save_figure
from analysis.report.markdown import render_report
from analysis.report.provenance import write_json
from analysis.report.results import StudyResults
from analysis.report.study_tables import build_tables
from analysis.report.tables import (
    check_results,
    table_provenance,
    write_csv,
    write_latex,
    write_markdown,
)
from analysis.validation import ParameterError

__all__ = ["ReportFiles", "build_report"]


@dataclass(frozen=True)
class ReportFiles:
    """Every file :func:`build_report` wrote.

    Attributes
    ----------
    out_dir : Path
    report : Path
        ``report.md``.
    provenance : Path
        ``provenance.json``.
    tables : dict
        Table name -> ``{"md": Path, "csv": Path, "tex": Path}`` under ``tables/``.
    figures : dict
        Figure name -> ``{"png": Path, "pdf": Path}`` under ``figures/`` (the formats
        asked for).
    skipped_figures : dict
        Figure name -> why it was not drawn (nothing to draw).
    seconds : float
        Wall time of the report stage.

    Examples
    --------
    >>> from pathlib import Path
    >>> f = ReportFiles(Path("r"), Path("r/report.md"), Path("r/provenance.json"),
    ...                 tables={"data": {"md": Path("r/tables/data.md")}})
    >>> [p.as_posix() for p in f.paths()]
    ['r/report.md', 'r/provenance.json', 'r/tables/data.md']
    >>> print(f.summary().splitlines()[2])
      tables (1, md/csv/tex): data
    """

    out_dir: Path
    report: Path
    provenance: Path
    tables: dict[str, dict[str, Path]] = field(default_factory=dict)
    figures: dict[str, dict[str, Path]] = field(default_factory=dict)
    skipped_figures: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0

    def paths(self) -> list[Path]:
        """All written paths: report, provenance, tables, figures."""
        out = [self.report, self.provenance]
        for files in (*self.tables.values(), *self.figures.values()):
            out.extend(files.values())
        return out

    def summary(self) -> str:
        """A few lines naming what was written."""
        lines = [
            f"Report in {self.out_dir} ({self.seconds:.1f} s)",
            f"  {self.report.name}, {self.provenance.name}",
            f"  tables ({len(self.tables)}, md/csv/tex): " + ", ".join(self.tables),
            f"  figures ({len(self.figures)}, "
            + "/".join(dict.fromkeys(f for d in self.figures.values() for f in d))
            + "): "
            + ", ".join(self.figures),
        ]
        if self.skipped_figures:
            lines.append(
                "  not drawn: " + "; ".join(f"{k} ({v})" for k, v in self.skipped_figures.items())
            )
        return "\n".join(lines)


def build_report(
    results: StudyResults,
    out_dir: str | Path,
    *,
    figure_formats: Sequence[str] = FORMATS,
    progress: bool = False,
) -> ReportFiles:
    """Render ``results`` into ``out_dir``: tables, figures, ``report.md``, ``provenance.json``.

    Parameters
    ----------
    results : StudyResults
        Read only; never modified.
    out_dir : str or Path
        Created if needed. Files: ``report.md``, ``provenance.json``,
        ``tables/NAME.{md,csv,tex}``, ``figures/NAME.{png,pdf}``. Existing files of the
        same names are replaced atomically; others are left alone.
    figure_formats : sequence of {"png", "pdf"}, keyword-only
        Figure files to write (both by default; report.md embeds the PNG, so "png"
        must be among them).
    progress : bool, keyword-only
        Show a tqdm bar over the steps.

    Returns
    -------
    ReportFiles

    Raises
    ------
    ParameterError
        ``results`` is not a StudyResults with the columns of ``BRACKET_COLUMNS``, or
        ``out_dir`` exists and is not a folder.

    Notes
    -----
    The report computes no statistic of its own: tables summarise stored rows (counts,
    shares, medians, quartiles) and copy every effect, CI and p-value from the
    comparison frames.

    Examples
    --------
    Two synthetic cells and no real ones (a whole study needs model weights): the
    synthetic table and figure are written, the figures of real cells are skipped.

    >>> import pandas as pd
    >>> from analysis.report.design import ReportDesign
    >>> from analysis.report.results import BRACKET_COLUMNS
    >>> rows = [dict(cell_key=f"c{i}", matrix_key=f"m{i}", source="synthetic",
    ...              checkpoint="ball", family="ball", head_id="", layer=0, head=0,
    ...              input_id="x", length=8, temperature=1.0, eps=0.1, lo=2 + i, hi=3 + i,
    ...              closed=False, held_out=False, d=2.0, beta=1.0 + i, seed=0.0)
    ...         for i in range(2)]
    >>> results = StudyResults("toy", "Toy", ReportDesign(),
    ...                        pd.DataFrame(rows, columns=list(BRACKET_COLUMNS)), pd.DataFrame())
    >>> files = build_report(results, "build-out", figure_formats=("png",))
    >>> "synthetic" in files.tables, list(files.figures), "rank_vs_eps" in files.skipped_figures
    (True, ['synthetic_rank_vs_beta'], True)
    >>> all(p.is_file() for p in files.paths()), files.report.name
    (True, 'report.md')
    """
    t0 = time.perf_counter()
    check_results(results)
    formats = tuple(dict.fromkeys(figure_formats))
    if "png" not in formats or any(f not in FORMATS for f in formats):
        raise ParameterError("figure_formats", "png, optionally with pdf", figure_formats)
    out_dir = Path(out_dir)
    if out_dir.exists() and not out_dir.is_dir():
        raise ParameterError("out_dir", "a folder (or a path to create)", str(out_dir))
    (out_dir / "tables").mkdir(parents=True, exist_ok=True)
    (out_dir / "figures").mkdir(parents=True, exist_ok=True)

    tables = build_tables(results)
    figures = figures_for(results)
    steps = len(tables) + len(figures) + 2
    bar = tqdm(total=steps, desc="report", disable=not progress, leave=False)
    table_files: dict[str, dict[str, Path]] = {}
    for t in tables:
        prov = table_provenance(results, t.name)
        stem = out_dir / "tables" / t.name
        table_files[t.name] = {
            "md": write_markdown(
                t.frame, stem.with_suffix(".md"), title=t.title, provenance=prov, note=t.note
            ),
            "csv": write_csv(t.frame, stem.with_suffix(".csv"), provenance=prov),
            "tex": write_latex(
                t.frame,
                stem.with_suffix(".tex"),
                title=t.title,
                label=f"tab:{results.study}-{t.name}",
                provenance=prov,
            ),
        }
        bar.update()

    figure_files: dict[str, dict[str, Path]] = {}
    figure_caps: dict[str, tuple[Path, Path | None, str]] = {}
    skipped: dict[str, str] = {}
    for name, (func, caption) in figures.items():
        fig = func(results)
        if fig is None:
            skipped[name] = "nothing to draw"
        else:
            written = save_figure(fig, out_dir / "figures" / name, formats=formats)
            figure_files[name] = written
            figure_caps[name] = (written["png"], written.get("pdf"), caption)
            fig.clear()
        bar.update()

    text = render_report(
        results, out_dir=out_dir, tables=tables, table_files=table_files, figures=figure_caps
    )
    report = out_dir / "report.md"
    with atomic_write(report, mode="w") as fh:
        fh.write(text)
    bar.update()

    seconds = time.perf_counter() - t0
    stage_seconds = dict(results.provenance.get("stage_seconds", {}) or {})
    stage_seconds["report"] = seconds
    files = [report] + [
        p for d in (*table_files.values(), *figure_files.values()) for p in d.values()
    ]
    payload = {
        "study": results.study,
        "title": results.title,
        **{k: v for k, v in results.provenance.items() if k != "stage_seconds"},
        "stage_seconds": stage_seconds,
        "report": {
            "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "files": sorted(p.relative_to(out_dir).as_posix() for p in files),
            "figures_not_drawn": skipped,
            "results_not_run": dict(results.skipped),
        },
    }
    prov_path = write_json(out_dir / "provenance.json", payload)
    bar.update()
    bar.close()
    return ReportFiles(
        out_dir=out_dir,
        report=report,
        provenance=prov_path,
        tables=table_files,
        figures=figure_files,
        skipped_figures=skipped,
        seconds=seconds,
    )
