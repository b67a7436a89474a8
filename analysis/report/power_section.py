"""The report's power texts: the simulated power and MDE of each decision, per hypothesis
and as the "Power of each decision (simulated)" section; for a method-3 power record, the
power and sizes of its decisions per hypothesis and scenario, and their SESOI
sensitivity."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from analysis.report.results import StudyResults
from analysis.report.tables import hypotheses
from analysis.report.tables import number_text as _n

__all__ = ["decision_power_lines", "hypothesis_power", "power_section", "power_sentences"]


def _rate(r: Mapping[str, Any]) -> str:
    return f"{_n(r['rate'])} [{_n(r['ci_low'])}, {_n(r['ci_high'])}]"


def _mde(h: Mapping[str, Any]) -> str:
    if h.get("mde") is None or not math.isfinite(float(h["mde"])):
        return f"above {_n(h.get('mde_low'))} (power {_n(h.get('mde_target', 0.8))} not reached)"
    return f"{_n(h['mde'])} (search bracket [{_n(h['mde_low'])}, {_n(h['mde_high'])}])"


def hypothesis_power(results: StudyResults) -> dict[str, dict[str, str]]:
    """Hypothesis id -> ``{"power": text, "mde": text}`` from the simulated error rates.

    Hypotheses that were not simulated get the reason (``"not simulated: ..."``); with no
    simulation at all, every hypothesis gets the stage's reason.

    Examples
    --------
    >>> from analysis.datasets import example_report_design
    >>> d = example_report_design()
    >>> sim = {"hypothesis": "H1", "power": {"rate": 0.81234, "share": 0.1}, "mde": 0.4}
    >>> hypothesis_power(StudyResults("t", "T", d, None, None, power={"hypotheses": [sim]}))
    {'H1': {'power': '0.812 at effect share 0.1', 'mde': '0.4'}}
    """
    power = results.power or {}
    out: dict[str, dict[str, str]] = {}
    for h in power.get("hypotheses", []):
        out[h["hypothesis"]] = {
            "power": f"{_n(h['power']['rate'])} at effect share {_n(h['power']['share'])}",
            "mde": _n(h["mde"]) if h.get("mde") is not None else "–",
        }
    reason = power.get("skipped") if isinstance(power.get("skipped"), str) else None
    skipped = power.get("skipped") if isinstance(power.get("skipped"), dict) else {}
    for h in hypotheses(results.design):
        if h["id"] not in out:
            why = skipped.get(h["id"]) or reason or "the power stage has not run"
            out[h["id"]] = {"power": f"not simulated: {why}", "mde": "–"}
    return out


def power_sentences(results: StudyResults) -> list[str]:
    """One sentence per design hypothesis: simulated power at the design's size and MDE.

    E.g. ``"H1 (M0<M1): simulated power 0.08 [0.06, 0.11] at effect share 0.1 at the
    design's size (alpha 0.05); minimum detectable effect 0.41 (search bracket [0.39,
    0.42]); size 0 [0, 0.009] at the simple null, 0.045 [0.03, 0.07] at the boundary
    null (share 0.063)."``

    Examples
    --------
    >>> from analysis.datasets import example_report_design, example_study_results
    >>> results = example_study_results(design=example_report_design(), power={"skipped": "no widths"})
    >>> power_sentences(results)
    ['**H1** (M0<M1): not simulated: no widths.']
    """
    power = results.power or {}
    by_id = {h["hypothesis"]: h for h in power.get("hypotheses", [])}
    info = hypothesis_power(results)
    alpha = power.get("alpha", results.design.alpha)
    out = []
    for h in hypotheses(results.design):
        head = f"**{h['id']}** ({h['pair']})"
        sim = by_id.get(h["id"])
        if sim is None:
            out.append(f"{head}: {info[h['id']]['power']}.")
            continue
        sb = sim.get("size_boundary")
        boundary = (
            f"{_rate(sb)} at the boundary null (share {_n(sim['boundary_share'])})"
            if sb
            else "boundary null not reached below share 0.95"
        )
        out.append(
            f"{head}: simulated power {_rate(sim['power'])} at effect share "
            f"{_n(sim['power']['share'])} at the design's size (alpha {_n(alpha)}); minimum "
            f"detectable effect {_mde(sim)}; size {_rate(sim['size_simple'])} at the simple "
            f"null, {boundary}."
        )
    return out


def power_section(results: StudyResults) -> list[str]:
    """Markdown lines of "Power of each decision (simulated)".

    Examples
    --------
    >>> from analysis.datasets import example_report_design, example_study_results
    >>> results = example_study_results(design=example_report_design(), power={"skipped": "no widths"})
    >>> power_section(results)[2]
    'Not simulated: no widths.'
    """
    power = results.power or {}
    L = ["### Power of each decision (simulated)", ""]
    if "hypotheses" not in power:
        why = power.get("skipped") if isinstance(power.get("skipped"), str) else None
        return L + [f"Not simulated: {why or 'the power stage has not run'}.", ""]
    a = power.get("assumptions", {})
    feats = ", ".join(f"{b} {n}" for b, n in (power.get("features") or {}).items())
    L += [
        f"`attnrank validate-comparison` on this design: {power.get('simulations')} simulated "
        "studies per scenario with the design's sizes, held-out draw per checkpoint, B, "
        f"alpha, Holm family and bootstrap ({power.get('bootstrap', 'cluster')}); the "
        "signal sits in the block the rich model adds and "
        f"explains a share of the variance M0 leaves; ICC {_n(a.get('icc'))}, residual SD "
        f"{_n(a.get('residual_sd'))}, head share {_n(a.get('native_head_share'))}, truth in "
        f"its bracket Beta({', '.join(_n(x) for x in a.get('truth_position', []))}), "
        f"widths resampled per eps in {a.get('width_bins')} midpoint bins; covariates "
        f"simulated: {feats} ({power.get('features_note', '')}). Intervals are "
        "Clopper-Pearson 95%. These are properties of the test under these assumptions, "
        "not of the data.",
        "",
    ]
    stored = results.provenance.get("power") or {}
    under, lock = stored.get("computed_under_lock"), results.provenance.get("lock_sha256")
    if under and lock and under != lock:
        L += [
            f"Computed under lock `{str(under)[:12]}`, before later amendments of the design "
            f"(see *Amendments*); `{stored.get('command')}` recomputes it for the design as "
            "it is now.",
            "",
        ]
    L += [f"- {s}" for s in power_sentences(results)] + [""]
    return L + decision_power_lines(power)


def _cell(r: Mapping[str, Any] | None) -> str:
    return "not reached" if r is None else _rate(r)


#: The method-3 columns: (table, key in the scenario's record, column title).
_DECISION_COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("power", "superiority_at_sesoi", 'power: "adds information" at +SESOI'),
    ("power", "tost_at_zero", 'power: "equivalent within SESOI" at 0'),
    ("size", "adds_information_at_zero", 'size: "adds information" at 0'),
    ("size", "equivalent_at_plus_sesoi", 'size: "equivalent" at +SESOI'),
    ("size", "equivalent_at_minus_sesoi", 'size: "equivalent" at -SESOI'),
)
_SENSITIVITY_COLUMNS: tuple[tuple[str, str], ...] = (
    ("superiority_at_half_sesoi", '"adds information" at +SESOI/2'),
    ("superiority_at_twice_sesoi", '"adds information" at +2 SESOI'),
    ("tost_at_zero_half_sesoi", '"equivalent within SESOI/2" at 0'),
    ("tost_at_zero_twice_sesoi", '"equivalent within 2 SESOI" at 0'),
    ("equivalent_at_plus_half_sesoi", 'size: "equivalent within SESOI/2" at +SESOI/2'),
    ("equivalent_at_plus_twice_sesoi", 'size: "equivalent within 2 SESOI" at +2 SESOI'),
)


#: How the placement table names a placed effect (:data:`analysis.power.decisions.DECISION_TARGETS`).
_POINT_LABELS: Mapping[str, str] = {
    "zero": "0",
    "plus_sesoi": "+SESOI",
    "minus_sesoi": "-SESOI",
    "half_sesoi": "+SESOI/2",
    "twice_sesoi": "+2 SESOI",
}


def _placement_row(h: Mapping[str, Any], scen: str, p: Mapping[str, Any]) -> str:
    """One placed effect: target, share, calibration mean and the realised mean ± SE."""
    head = f"| {h['hypothesis']} | {scen} | {_POINT_LABELS.get(p['point'], p['point'])} | "
    head += f"{_n(p.get('target_effect'))} | "
    if not p.get("reached"):
        return head + "not reached | – | – | – |"
    se = p.get("calibration_mean_effect_se")
    calib = _n(p.get("calibration_mean_effect"))
    if se is not None and math.isfinite(float(se)):
        calib += f" ± {_n(se)}"
    mean, mean_se = p.get("mean_effect"), p.get("mean_effect_se")
    realised = f"{_n(mean)} ± {_n(mean_se)}"
    off = "–"
    if mean_se is not None and math.isfinite(float(mean_se)) and float(mean_se) > 0:
        off = f"{_n((float(mean) - float(p['target_effect'])) / float(mean_se), 2)} SE"
    return head + f"{_n(p.get('share'))} | {calib} | {realised} | {off} |"


def _placement_lines(dec: Mapping[str, Any]) -> list[str]:
    """The placed effects of every hypothesis and scenario: target beside realised."""
    rows = [
        _placement_row(h, scen, p)
        for h in dec.get("hypotheses", [])
        for scen, s in h.get("scenarios", {}).items()
        for p in s.get("points", [])
    ]
    if not rows:
        return []
    n_a = dec.get("placement_simulations")
    calib = f"{n_a} calibration studies" if n_a else "the calibration studies (as many)"
    return [
        "Placed effects: the target held-out effect (loss units), the share at which the "
        f"mean effect of {calib} reaches it, and the realised mean effect ± SE of the "
        f"{dec.get('simulations')} studies counted there (the rates above are read at "
        "these effects, not at the targets exactly); the last column is realised minus "
        "target in SEs.",
        "",
        "| hypothesis | scenario | placed at | target effect | share | calibration mean ± SE "
        "| realised mean effect ± SE | realised − target |",
        "|---" * 8 + "|",
        *rows,
        "",
    ]


def decision_power_lines(power: Mapping[str, Any]) -> list[str]:
    """Markdown lines of the method-3 decisions' power (``power["decisions"]``, written by
    :func:`analysis.power.decisions.decision_powers`); ``[]`` for a method-2 record.

    One table row per hypothesis and scenario: the power of "adds information" with the
    true held-out effect at +SESOI, of "equivalent within SESOI" at 0, and the sizes
    ("adds information" at 0, "equivalent" at +SESOI and -SESOI); a second table repeats
    them with the SESOI halved and doubled. Every rate has its Clopper-Pearson 95%
    interval. A third table puts each placed effect's target beside the realised mean
    effect (± SE) of the studies counted there, and the calibration mean that placed it.

    Parameters
    ----------
    power : mapping
        The stored power record's ``result``.

    Returns
    -------
    list of str

    Examples
    --------
    >>> decision_power_lines({"hypotheses": []})
    []
    >>> r = {"rate": 0.5, "k": 1, "n": 2, "ci_low": 0.01, "ci_high": 0.99}
    >>> scen = {"power": {"superiority_at_sesoi": r, "tost_at_zero": None},
    ...         "size": {}, "sensitivity": {}}
    >>> h = {"hypothesis": "H1", "pair": "M0<M1", "sesoi": 0.002,
    ...      "scenarios": {"normal": scen}}
    >>> lines = decision_power_lines({"decisions": {"simulations": 2, "hypotheses": [h],
    ...                                             "skipped": {}}})
    >>> lines[0], lines[6][:45]
    ('#### Power of the method-3 decisions (simulated)', '| H1 | M0<M1 | 0.002 | normal | 0.5 [0.01, 0.')
    """
    dec = power.get("decisions")
    if not isinstance(dec, Mapping):
        return []
    L = [
        "#### Power of the method-3 decisions (simulated)",
        "",
        f"Each rate is the share of {dec.get('simulations')} simulated studies per placed "
        "effect decided as named (the first rule that applies, the design's own), with the "
        "true held-out effect placed at 0, +SESOI or -SESOI (loss units) and the "
        "Clopper-Pearson 95% interval; scenarios as the power file declares them.",
        "",
        "| hypothesis | pair | SESOI | scenario | "
        + " | ".join(t for _, _, t in _DECISION_COLUMNS)
        + " |",
        "|---" * (4 + len(_DECISION_COLUMNS)) + "|",
    ]
    sens = [
        "| hypothesis | scenario | " + " | ".join(t for _, t in _SENSITIVITY_COLUMNS) + " |",
        "|---" * (2 + len(_SENSITIVITY_COLUMNS)) + "|",
    ]
    for h in dec.get("hypotheses", []):
        for scen, s in h.get("scenarios", {}).items():
            cells = [_cell(s.get(t, {}).get(k)) for t, k, _ in _DECISION_COLUMNS]
            L.append(
                f"| {h['hypothesis']} | {h['pair']} | {_n(h['sesoi'])} | {scen} | "
                + " | ".join(cells)
                + " |"
            )
            more = [_cell(s.get("sensitivity", {}).get(k)) for k, _ in _SENSITIVITY_COLUMNS]
            sens.append(f"| {h['hypothesis']} | {scen} | " + " | ".join(more) + " |")
    L += ["", "SESOI sensitivity: the same decisions with the SESOI halved and doubled.", ""]
    L += sens + [""]
    L += _placement_lines(dec)
    L += [f"- {k}: decisions not simulated: {v}." for k, v in dec.get("skipped", {}).items()]
    return L + ([""] if dec.get("skipped") else [])
