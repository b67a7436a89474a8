"""Report stage: tables (md, csv, tex), figures (seaborn, png + pdf), report.md, provenance.

Renders a :class:`StudyResults` and computes no statistic of its own beyond descriptive
summaries (counts, shares, medians, quartiles) of its tables.

>>> files = build_report(results, "reports/offline-minilm")  # doctest: +SKIP
>>> print(files.summary())  # doctest: +SKIP
"""

from analysis.report.build import ReportFiles, build_report
from analysis.report.design import ReportDesign, ReportHypothesis
from analysis.report.results import BRACKET_COLUMNS, StudyResults

__all__ = [
    "BRACKET_COLUMNS",
    "ReportDesign",
    "ReportFiles",
    "ReportHypothesis",
    "StudyResults",
    "build_report",
]
