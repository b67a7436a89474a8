"""Sentences of the report's methods paragraph that are read from what a run did.

:func:`calibration_sentence` says how the isotonic calibration maps met the training
cells (in-sample, cross-fitted with K folds and R repeats, or leave one head out).
"""

from __future__ import annotations

import pandas as pd

from analysis.report.results import StudyResults
from analysis.report.tables import format_value

__all__ = ["calibration_sentence"]


def calibration_sentence(results: StudyResults) -> str:
    """The methods sentence on how the calibration maps met the training cells.

    Read from what the comparison ran with (``provenance["calibration"]``, else the
    comparison frame's ``calibration`` columns); before the comparison has run, the
    design's ``[descriptors] calibration`` text is quoted.

    Examples
    --------
    >>> import pandas as pd
    >>> from analysis.report.design import ReportDesign
    >>> cal = {"calibration": {"mode": "cross-fitted", "folds": 5, "seed": 3}}
    >>> r = StudyResults("t", "T", ReportDesign(), pd.DataFrame(), pd.DataFrame(), provenance=cal)
    >>> calibration_sentence(r)[:48]
    'Calibration: cross-fitted by head, 5 folds (seed'
    >>> loo = {"calibration": {"mode": "cross-fitted", "leave_one_out": True}}
    >>> r = StudyResults("t", "T", ReportDesign(), pd.DataFrame(), pd.DataFrame(), provenance=loo)
    >>> calibration_sentence(r)[:52]
    'Calibration: cross-fitted by head, leave one head ou'
    """
    cal = dict(results.provenance.get("calibration") or {})
    frame = results.comparison
    if not cal and frame is not None and "calibration" in frame.columns and len(frame):
        r = frame.iloc[0]
        cal = {"mode": r["calibration"]}
        if not pd.isna(r.get("calibration_folds")):
            cal["folds"] = int(r["calibration_folds"])
            cal["seed"] = int(r["calibration_seed"])
        elif cal["mode"] == "cross-fitted":  # no K in the frame: leave one head out
            cal["leave_one_out"] = True
    mode = cal.get("mode")
    if mode == "cross-fitted":
        repeats = int(cal.get("repeats", 1))
        how, others = (
            ("leave one head out", "all other training heads (no fold seed)")
            if cal.get("leave_one_out")
            else (
                f"{format_value(cal.get('folds'))} folds"
                + (f", {repeats} repeats" if repeats > 1 else "")
                + f" (seed {format_value(cal.get('seed'))})",
                "the training heads of the other folds"
                + (f" (the mean over {repeats} fold assignments)" if repeats > 1 else ""),
            )
        )
        return (
            f"Calibration: cross-fitted by head, {how}: each training cell's calibrated "
            f"covariates come from isotonic maps fitted on {others}, so no training head is "
            "calibrated with its own outcomes; held-out cells use the maps fitted on all "
            "training heads."
        )
    if mode == "in-sample":
        return (
            "Calibration: in-sample: the isotonic maps are fitted on all training cells and "
            "applied to those same cells (and to the held-out cells), so they can absorb "
            "part of each training head's own effect."
        )
    text = results.design.calibration
    return (
        f'Calibration as the design states it: "{text}" (the comparison has not run).'
        if text
        else "Calibration: not stated in the design (in-sample)."
    )
