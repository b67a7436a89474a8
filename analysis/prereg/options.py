"""Design fields of the comparison options: a SESOI per hypothesis, checkpoint effects.

All optional, and a design without them keeps its meaning (no equivalence test, no
checkpoint fixed effects, resampling by head, no refit replicates): ``hypotheses[i].sesoi``,
``[inference] checkpoint_effects``, ``cluster``, ``refit_replicates`` and
``refit_bootstrap`` (under top-level ``method = 3`` the refit bootstrap is on and
confirmatory unless stated); their values and units: docs/prereg.md, sections "Equivalence", "Geometry net of family" and "The
resampling unit and the refit bootstrap".
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from analysis.validation import ParameterError

#: ``[inference] cluster``: the unit the bootstrap resamples (as
#: ``analysis.compare.spec.RESAMPLING_UNITS``; repeated here so that validating a
#: design imports no fitting code).
RESAMPLING_UNITS: tuple[str, ...] = ("head", "kv_group", "checkpoint_layer")
#: ``[inference] extrapolation``: held-out covariates as they are (``"none"``, the default
#: under methods 2 and 3) or clipped to their training range (``"clip"``); as
#: ``analysis.compare.extrapolation.EXTRAPOLATIONS``.
EXTRAPOLATIONS: tuple[str, ...] = ("none", "clip")
#: ``[inference] input_effects``: as ``analysis.compare.inputs.INPUT_EFFECTS``.
INPUT_EFFECTS: tuple[str, ...] = ("none", "fixed")
#: ``[inference] resample``: the allowed lists (heads only, the default; heads and inputs).
RESAMPLES: tuple[tuple[str, ...], ...] = (("head",), ("head", "input"))

__all__ = [
    "METHODS",
    "POWER_FIT_SOURCES",
    "REFIT_BOOTSTRAP_ROLES",
    "REFIT_REPLICATES_V3",
    "check_design_options",
    "design_method",
    "design_options",
    "design_power",
    "design_inputs",
    "design_resampling_unit",
    "design_sesoi",
    "design_sesoi_shares",
]

#: Top-level ``method``: the version of the study method a design follows. 2 (the
#: default, and the meaning of every design written before the key) keeps the rules its
#: locked studies ran under; 3 makes each method-v3 rule the default of its own key
#: (two-sided equivalence, the stratified held-out draw, repeated cross-fitting, ...;
#: docs/method.md). A key the design states explicitly wins over either default.
METHODS: tuple[int, ...] = (2, 3)

#: ``[inference] refit_replicates`` under ``method = 3`` when the design does not state it
#: (under method 2: 0); chosen by measurement, docs/results/crossfit.md.
REFIT_REPLICATES_V3 = 200

#: ``[inference] refit_bootstrap``: whether the refit bootstrap's CI and p are a
#: ``"sensitivity"`` row (the default under method 2) or the ``"confirmatory"`` ones (the
#: default under method 3; the held-out bootstrap with the fits fixed becomes the
#: sensitivity).
REFIT_BOOTSTRAP_ROLES: tuple[str, ...] = ("sensitivity", "confirmatory")

#: ``[power] fit``: what the power simulator's assumptions are fitted to, declared before
#: the lock: ``"none"`` (the default: hand-set assumptions), ``"training"`` (the study's
#: training heads) or ``"pilot"`` (a pilot store on another input seed,
#: ``pilot_input_seed``).
POWER_FIT_SOURCES: tuple[str, ...] = ("none", "training", "pilot")


def design_sesoi(data: Mapping[str, Any]) -> dict[str, dict[str, float]]:
    """Pair (``"M0<M1"``) -> metric -> SESOI, read and checked from the hypotheses.

    Raises
    ------
    ParameterError
        Named ``hypotheses[i].sesoi`` (or ``hypotheses[i].sesoi.METRIC``): not a finite
        number > 0, a metric the design does not compute, or a table without the primary
        metric.

    Examples
    --------
    >>> from analysis.prereg.options import design_sesoi
    >>> data = {
    ...     "metrics": {"primary": "interval_sq_loss", "secondary": ["spearman_mid"]},
    ...     "hypotheses": [
    ...         {"pair": ["M0", "M1"], "sesoi": 0.0007},
    ...         {"pair": ["M0", "M2"], "sesoi": {"interval_sq_loss": 0.001, "spearman_mid": 0.02}},
    ...     ],
    ... }
    >>> design_sesoi(data)
    {'M0<M1': {'interval_sq_loss': 0.0007}, 'M0<M2': {'interval_sq_loss': 0.001, 'spearman_mid': 0.02}}
    >>> data["hypotheses"][0]["sesoi"] = -1.0
    >>> design_sesoi(data)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    analysis.validation.ParameterError: hypotheses[0].sesoi: expected a finite number > 0 ...
    """
    out: dict[str, dict[str, float]] = {}
    design_sesoi_shares(data)  # a share instead of a SESOI: checked, resolved by power
    for i, h in enumerate(data.get("hypotheses", [])):
        if "sesoi" not in h:
            continue
        met = data["metrics"]
        primary = met["primary"]
        known = [primary, *met.get("secondary", [])]
        name, value = f"hypotheses[{i}].sesoi", h["sesoi"]
        is_table = isinstance(value, Mapping)
        table = value if is_table else {primary: value}
        if primary not in table:
            raise ParameterError(name, f"a value for the primary metric {primary}", value)
        per_metric = {}
        for m, v in table.items():
            if m not in known:
                raise ParameterError(name, "metrics among " + ", ".join(known), m)
            ok = isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
            if not ok or v <= 0:
                unit = "" if m != "interval_sq_loss" else " (held-out loss units)"
                raise ParameterError(
                    f"{name}.{m}" if is_table else name, f"a finite number > 0{unit}", v
                )
            per_metric[str(m)] = float(v)
        out["<".join(h["pair"])] = per_metric
    return out


def design_sesoi_shares(data: Mapping[str, Any]) -> dict[str, float]:
    """Pair -> ``hypotheses[i].sesoi_share``: a SESOI declared as a share of the pilot's M0
    held-out loss (primary metric ``interval_sq_loss``), which the power stage turns into
    loss units (share x the pilot's reference M0 loss) and records in the power file.

    Raises
    ------
    ParameterError
        Named ``hypotheses[i].sesoi_share``: given with ``sesoi`` too, not a number in
        (0, 1), or a primary metric other than ``interval_sq_loss``.

    Examples
    --------
    >>> from analysis.prereg.options import design_sesoi_shares
    >>> data = {"metrics": {"primary": "interval_sq_loss"},
    ...         "hypotheses": [{"pair": ["M0", "M1"], "sesoi_share": 0.1}]}
    >>> design_sesoi_shares(data)
    {'M0<M1': 0.1}
    >>> data["hypotheses"][0]["sesoi"] = 0.001
    >>> design_sesoi_shares(data)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    analysis.validation.ParameterError: hypotheses[0].sesoi_share: expected either sesoi or sesoi_share...
    """
    out: dict[str, float] = {}
    for i, h in enumerate(data.get("hypotheses", [])):
        if "sesoi_share" not in h:
            continue
        name, v = f"hypotheses[{i}].sesoi_share", h["sesoi_share"]
        if "sesoi" in h:
            raise ParameterError(name, "either sesoi or sesoi_share, not both", v)
        if data.get("metrics", {}).get("primary") != "interval_sq_loss":
            raise ParameterError(name, "a primary metric interval_sq_loss (a loss)", v)
        ok = isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
        if not ok or not 0 < v < 1:
            raise ParameterError(name, "a share of the pilot's M0 loss in (0, 1)", v)
        out["<".join(h["pair"])] = float(v)
    return out


def check_design_options(data: Mapping[str, Any]) -> None:
    """Validate the SESOIs and ``[inference] checkpoint_effects`` of a parsed design
    (run by :func:`~analysis.prereg.schema.validate_design` after the other sections).

    Examples
    --------
    >>> from analysis.prereg.options import check_design_options
    >>> data = {"metrics": {"primary": "interval_sq_loss"}, "hypotheses": [],
    ...         "inference": {"checkpoint_effects": "yes"}}
    >>> check_design_options(data)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    analysis.validation.ParameterError: inference.checkpoint_effects: expected true or false...
    """
    design_method(data)
    design_sesoi(data)
    inf = data.get("inference", {})
    value = inf.get("checkpoint_effects", False)
    if not isinstance(value, bool):
        raise ParameterError("inference.checkpoint_effects", "true or false", value)
    if inf.get("cluster", "head") not in RESAMPLING_UNITS:
        raise ParameterError("inference.cluster", " or ".join(RESAMPLING_UNITS), inf["cluster"])
    design_resampling_unit(data)
    _refit_settings(data)
    if inf.get("extrapolation", "none") not in EXTRAPOLATIONS:
        raise ParameterError(
            "inference.extrapolation", " or ".join(EXTRAPOLATIONS), inf["extrapolation"]
        )
    design_power(data)
    design_inputs(data)


def design_inputs(data: Mapping[str, Any]) -> dict[str, Any]:
    """``[inference] input_effects`` and ``resample`` as ``ComparisonSpec`` fields
    (``input_effects``, ``resample_inputs``), checked; only the keys the design states.

    Raises
    ------
    ParameterError
        Named ``inference.input_effects`` or ``inference.resample`` for a value outside
        :data:`INPUT_EFFECTS` / :data:`RESAMPLES`, and ``inference.resample`` when inputs
        are resampled with ``bootstrap = "studentized"`` or a confirmatory refit bootstrap
        (the default under ``method = 3``: state ``refit_bootstrap = "sensitivity"``).

    Examples
    --------
    >>> from analysis.prereg.options import design_inputs
    >>> design_inputs({}), design_inputs({"inference": {"resample": ["head", "input"]}})
    ({}, {'resample_inputs': True})
    >>> design_inputs({"inference": {"input_effects": "random"}})
    Traceback (most recent call last):
        ...
    analysis.validation.ParameterError: inference.input_effects: expected none or fixed, got 'random'
    """
    inf = data.get("inference", {})
    out: dict[str, Any] = {}
    if "input_effects" in inf:
        value = inf["input_effects"]
        if not isinstance(value, str) or value not in INPUT_EFFECTS:
            raise ParameterError("inference.input_effects", " or ".join(INPUT_EFFECTS), value)
        out["input_effects"] = value
    if "resample" in inf:
        value = inf["resample"]
        ok = isinstance(value, (list, tuple)) and tuple(value) in RESAMPLES
        if not ok:
            raise ParameterError("inference.resample", '["head"] or ["head", "input"]', value)
        out["resample_inputs"] = tuple(value) == RESAMPLES[1]
        if out["resample_inputs"] and inf.get("bootstrap", "cluster") == "studentized":
            raise ParameterError(
                "inference.resample", 'bootstrap = "cluster" to resample inputs', value
            )
        if out["resample_inputs"] and _refit_settings(data)[1]:
            raise ParameterError(
                "inference.resample",
                'refit_bootstrap = "sensitivity" or refit_replicates = 0 to resample inputs '
                "(the refit bootstrap resamples heads only)",
                value,
            )
    return out


def design_resampling_unit(data: Mapping[str, Any]) -> str:
    """``[inference] cluster``, the unit the bootstrap resamples: ``"head"`` when absent,
    except for a design that holds out whole layers (``[held_out] unit = "layer"``), whose
    default is ``"checkpoint_layer"`` and which may state no other unit.

    Raises
    ------
    ParameterError
        Named ``inference.cluster`` when a layer-unit design states a unit other than
        ``"checkpoint_layer"`` (held-out heads of one layer are not independent draws).

    Examples
    --------
    >>> from analysis.prereg.options import design_resampling_unit
    >>> design_resampling_unit({}), design_resampling_unit({"held_out": {"unit": "layer"}})
    ('head', 'checkpoint_layer')
    >>> design_resampling_unit({"held_out": {"unit": "layer"}, "inference": {"cluster": "head"}})
    Traceback (most recent call last):
        ...
    analysis.validation.ParameterError: inference.cluster: expected "checkpoint_layer" (held_out.unit = "layer" holds out whole layers, the bootstrap resamples them), got 'head'
    """
    inf = data.get("inference", {})
    held = data.get("held_out", {})
    layers = isinstance(held, Mapping) and held.get("unit") == "layer"
    if "cluster" not in inf:
        return "checkpoint_layer" if layers else "head"
    if layers and inf["cluster"] != "checkpoint_layer":
        raise ParameterError(
            "inference.cluster",
            '"checkpoint_layer" (held_out.unit = "layer" holds out whole layers, the '
            "bootstrap resamples them)",
            inf["cluster"],
        )
    return str(inf["cluster"])


def _refit_settings(data: Mapping[str, Any]) -> tuple[int, bool]:
    """``[inference] refit_replicates`` and whether ``refit_bootstrap`` is
    ``"confirmatory"``, each with its method's default, checked (a confirmatory refit
    bootstrap the design states needs replicates)."""
    inf = data.get("inference", {})
    v3 = design_method(data) == 3
    refits = inf.get("refit_replicates", REFIT_REPLICATES_V3 if v3 else 0)
    if isinstance(refits, bool) or not isinstance(refits, int) or refits < 0:
        raise ParameterError("inference.refit_replicates", "an integer >= 0", refits)
    role = inf.get("refit_bootstrap", REFIT_BOOTSTRAP_ROLES[v3])
    if role not in REFIT_BOOTSTRAP_ROLES:
        raise ParameterError("inference.refit_bootstrap", " or ".join(REFIT_BOOTSTRAP_ROLES), role)
    if "refit_bootstrap" in inf and role == "confirmatory" and not refits:
        raise ParameterError(
            "inference.refit_bootstrap", "refit_replicates > 0 for a confirmatory refit", role
        )
    return refits, role == "confirmatory" and refits > 0


def design_method(data: Mapping[str, Any]) -> int:
    """The design's top-level ``method`` (:data:`METHODS`; 2 when absent), checked.

    Examples
    --------
    >>> from analysis.prereg.options import design_method
    >>> design_method({}), design_method({"method": 3})
    (2, 3)
    >>> design_method({"method": "3"})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    analysis.validation.ParameterError: method: expected one of 2, 3, got '3'
    """
    value = data.get("method", 2)
    if isinstance(value, bool) or value not in METHODS:
        raise ParameterError("method", "one of " + ", ".join(map(str, METHODS)), value)
    return int(value)


def design_power(data: Mapping[str, Any]) -> dict[str, Any]:
    """The design's ``[power]`` section, checked: ``fit`` (default ``"none"``) and, for
    ``fit = "pilot"``, ``pilot_input_seed`` (an integer >= 0 other than the design's own
    ``[sampling.inputs] seed``) and optionally ``pilot_design`` (the pilot's design file,
    relative to the study root: the same population on the pilot input seed, run to its
    descriptors; where the power stage of ``attnrank run`` reads the pilot) and
    ``unpiloted = "pooled"`` (a checkpoint of the design the fitted cells do not hold takes
    the pooled fit; without it such a checkpoint is refused).

    Examples
    --------
    >>> from analysis.prereg.options import design_power
    >>> design_power({})
    {'fit': 'none'}
    >>> data = {"sampling": {"inputs": {"seed": 0}},
    ...         "power": {"fit": "pilot", "pilot_input_seed": 0}}
    >>> design_power(data)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    analysis.validation.ParameterError: power.pilot_input_seed: expected an input seed other than the design's (0)...
    """
    section = data.get("power", {})
    if not isinstance(section, Mapping):
        raise ParameterError("power", "a table", section)
    fit = section.get("fit", "none")
    if fit not in POWER_FIT_SOURCES:
        raise ParameterError("power.fit", " or ".join(POWER_FIT_SOURCES), fit)
    out: dict[str, Any] = {"fit": fit}
    if fit == "pilot":
        seed = section.get("pilot_input_seed")
        if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
            raise ParameterError("power.pilot_input_seed", "an integer >= 0", seed)
        own = data.get("sampling", {}).get("inputs", {}).get("seed")
        if seed == own:
            raise ParameterError(
                "power.pilot_input_seed", f"an input seed other than the design's ({own})", seed
            )
        out["pilot_input_seed"] = seed
        pilot = section.get("pilot_design")
        if pilot is not None:
            ok = isinstance(pilot, str) and pilot.endswith(".toml") and not pilot.startswith("/")
            if not ok or ".." in pilot.replace("\\", "/").split("/"):
                raise ParameterError(
                    "power.pilot_design",
                    "a design file path relative to the study root (e.g. "
                    '"preregistration/NAME-pilot.toml")',
                    pilot,
                )
            out["pilot_design"] = pilot
    unpiloted = section.get("unpiloted")
    if unpiloted is not None:
        if fit == "none" or unpiloted != "pooled":
            raise ParameterError(
                "power.unpiloted", '"pooled", with fit = "pilot" or "training"', unpiloted
            )
        out["unpiloted"] = unpiloted
    return out


def design_options(data: Mapping[str, Any]) -> dict[str, Any]:
    """The optional ``analysis.compare.ComparisonSpec`` fields a validated design fixes.

    Examples
    --------
    >>> from analysis.prereg.options import design_options
    >>> data = {"metrics": {"primary": "interval_sq_loss"}, "inference": {},
    ...         "hypotheses": [{"pair": ["M0", "M1"], "sesoi": 0.0007}]}
    >>> opts = design_options(data)
    >>> opts["sesoi"], opts["checkpoint_effects"], opts["method"]
    ({'M0<M1': {'interval_sq_loss': 0.0007}}, False, 2)
    >>> opts["refit_replicates"], opts["refit_confirmatory"]
    (0, False)
    >>> opts = design_options({**data, "method": 3})  # the refit bootstrap is confirmatory
    >>> opts["refit_replicates"], opts["refit_confirmatory"]
    (200, True)
    """
    inf = data.get("inference", {})
    refits, confirmatory = _refit_settings(data)
    return {
        "method": design_method(data),
        "sesoi": design_sesoi(data),
        "checkpoint_effects": bool(inf.get("checkpoint_effects", False)),
        "resampling_unit": design_resampling_unit(data),
        "refit_replicates": refits,
        "refit_confirmatory": confirmatory,
        # "none" under method 2 and 3 alike: method 3 reports extrapolation instead
        "extrapolation": str(inf.get("extrapolation", "none")),
        **design_inputs(data),
    }
