"""The held-out draw's rule: which unit is held out and what the draw is stratified by.

``[held_out]`` keys (docs/prereg.md, "Held-out draw"; docs/method.md, section 5):
``stratify`` (``["checkpoint"]`` or ``["checkpoint", "layer"]``), ``unit`` (``"head"`` or
``"layer"``), ``estimand`` (``"new heads"`` or ``"new layers"``, the unit's) and
``rule`` (the draw in words, :attr:`HeldOutRule.text`). A design without them draws as
every design written before them did (per checkpoint, whole heads); under top-level
``method = 3`` the default of ``stratify`` is ``["checkpoint", "layer"]``. A stated key
wins over either default.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from analysis.prereg.options import design_method
from analysis.validation import ParameterError

__all__ = [
    "ESTIMANDS",
    "STRATIFICATIONS",
    "UNITS",
    "HeldOutRule",
    "held_out_rule",
]

#: ``[held_out] stratify``: the strata the draw is made in, in sorted order.
STRATIFICATIONS: tuple[tuple[str, ...], ...] = (("checkpoint",), ("checkpoint", "layer"))

#: ``[held_out] unit``: what is held out whole.
UNITS: tuple[str, ...] = ("head", "layer")

#: ``[held_out] estimand``: what the held-out comparison estimates, fixed by the unit.
ESTIMANDS: dict[str, str] = {"head": "new heads", "layer": "new layers"}

_TEXT = {
    (("checkpoint",), "head"): "per checkpoint in sorted order: numpy.random.default_rng(seed)"
    ".choice(n, size=round(fraction * n), replace=False)",
    (("checkpoint", "layer"), "head"): "per (checkpoint, layer) in sorted order with n >= 2 "
    "heads: numpy.random.default_rng(seed).choice(n, size=min(round(fraction * n), n - 1), "
    "replace=False); a layer with one head is a training head",
    (("checkpoint",), "layer"): "per checkpoint in sorted order with L >= 2 layers: "
    "numpy.random.default_rng(seed).choice(L, size=min(round(fraction * L), L - 1), "
    "replace=False) whole layers; a checkpoint with one layer is training only",
}

_SENTENCE = {
    (("checkpoint", "layer"), "head"): "new heads: drawn per (checkpoint, layer), every "
    "held-out head's layer keeps at least one training head (a layer with one head is a "
    "training head)",
    (("checkpoint",), "layer"): "new layers: whole (checkpoint, layer) groups held out, "
    "no held-out head's layer has a training head; every checkpoint keeps a training layer",
}

Group = tuple[str, int]


def _group(head_id: str) -> Group:
    ck, layer, _ = head_id.rsplit(":", 2)
    return ck, int(layer)


@dataclass(frozen=True)
class HeldOutRule:
    """How a design's held-out list is drawn from its population.

    Attributes
    ----------
    stratify : tuple of str
        ``("checkpoint",)`` or ``("checkpoint", "layer")`` (:data:`STRATIFICATIONS`).
    unit : str
        ``"head"`` or ``"layer"`` (:data:`UNITS`).

    Examples
    --------
    >>> from analysis.prereg.held_out import HeldOutRule
    >>> pop = [f"org/a:{la}:{h}" for la in range(3) for h in range(2)] + ["org/a:3:0"]
    >>> HeldOutRule(("checkpoint", "layer"), "head").draw(pop, seed=7, fraction=0.5)  # 1 of 2
    ['org/a:0:1', 'org/a:1:1', 'org/a:2:1']
    >>> HeldOutRule(("checkpoint",), "layer").draw(pop, seed=7, fraction=0.5)  # 2 of 4 layers
    ['org/a:2:0', 'org/a:2:1', 'org/a:3:0']
    >>> HeldOutRule(("checkpoint",), "layer").estimand
    'new layers'
    """

    stratify: tuple[str, ...] = ("checkpoint",)
    unit: str = "head"

    @property
    def legacy(self) -> bool:
        """True for the draw of every design written before these keys (method 2)."""
        return self.stratify == ("checkpoint",) and self.unit == "head"

    @property
    def estimand(self) -> str:
        """``"new heads"`` or ``"new layers"`` (:data:`ESTIMANDS`)."""
        return ESTIMANDS[self.unit]

    @property
    def text(self) -> str:
        """The rule in words: the value ``[held_out] rule`` must have when it is stated."""
        return _TEXT[(self.stratify, self.unit)]

    @property
    def sentence(self) -> str | None:
        """What the report says of the estimand; None for the legacy draw (whose report
        stays as it was)."""
        return _SENTENCE.get((self.stratify, self.unit))

    def describe(self) -> str:
        """One line for ``attnrank prereg``: stratification, unit and estimand.

        Returns
        -------
        str
            E.g. ``stratify ["checkpoint", "layer"], unit "head" (estimand: new heads)``.
        """
        keys = ", ".join(f'"{s}"' for s in self.stratify)
        return f'stratify [{keys}], unit "{self.unit}" (estimand: {self.estimand})'

    def draw(self, population: Sequence[str], *, seed: int, fraction: float) -> list[str]:
        """Draw the held-out heads (docs/prereg.md, "Held-out draw").

        Parameters
        ----------
        population : sequence of str
            Head ids ``"<checkpoint>:<layer>:<head>"`` sorted by (checkpoint, layer, head).
        seed : int, keyword-only
            ``held_out.seed``.
        fraction : float, keyword-only
            ``held_out.fraction``.

        Returns
        -------
        list of str
            The held-out head ids in population order.

        Raises
        ------
        ParameterError
            Named ``held_out.fraction`` when a stratified or layer draw holds out no head.

        Notes
        -----
        One generator, ``rng = numpy.random.default_rng(seed)``; ``round`` is Python's
        (half to even). Its calls, in order:

        - stratify ``["checkpoint"]``, unit ``"head"``: for each checkpoint in sorted
          order with n heads, ``rng.choice(n, size=round(fraction * n), replace=False)``
          picks positions in that checkpoint's sorted heads.
        - stratify ``["checkpoint", "layer"]``, unit ``"head"``: for each (checkpoint,
          layer) in sorted order with n >= 2 heads, ``rng.choice(n, size=min(round(fraction
          * n), n - 1), replace=False)`` picks positions in that layer's sorted heads; a
          layer with one head makes no call and is a training head.
        - stratify ``["checkpoint"]``, unit ``"layer"``: for each checkpoint in sorted order
          with L >= 2 distinct layers, ``rng.choice(L, size=min(round(fraction * L), L - 1),
          replace=False)`` picks positions in its sorted layers, and every head of those
          layers is held out; a checkpoint with one layer makes no call.
        """
        rng = np.random.default_rng(seed)
        frac = float(fraction)
        groups: dict[Any, Any] = {}
        if self.unit == "layer":  # checkpoint -> its layers' heads, by layer
            for hid in population:
                ck, layer = _group(hid)
                groups.setdefault(ck, {}).setdefault(layer, []).append(hid)
        else:
            by_layer = self.stratify == ("checkpoint", "layer")
            for hid in population:
                groups.setdefault(_group(hid) if by_layer else _group(hid)[0], []).append(hid)
        chosen: list[str] = []
        for key in sorted(groups):
            members = groups[key]
            n = len(members)
            if self.legacy:
                idx = rng.choice(n, size=round(frac * n), replace=False)
            elif n < 2:
                continue
            else:
                idx = rng.choice(n, size=min(round(frac * n), n - 1), replace=False)
            if self.unit == "layer":
                layers = sorted(members)
                chosen.extend(h for i in idx for h in members[layers[int(i)]])
            else:
                chosen.extend(members[int(i)] for i in idx)
        if not chosen and not self.legacy:
            raise ParameterError(
                "held_out.fraction",
                f"a fraction that holds out at least one {self.unit} under {self.describe()}",
                frac,
            )
        rank = {hid: i for i, hid in enumerate(population)}
        return sorted(chosen, key=rank.__getitem__)

    def check(self, population: Sequence[str], heads: Sequence[str]) -> None:
        """Check that a held-out list has the shape the rule gives every draw.

        Parameters
        ----------
        population : sequence of str
            The design's real-checkpoint head ids.
        heads : sequence of str
            The held-out list (ids of the population).

        Raises
        ------
        ParameterError
            Named ``held_out.heads``: under stratify ``["checkpoint", "layer"]``, a layer
            whose every head is held out; under unit ``"layer"``, a layer held out in part,
            or a checkpoint whose every layer is. Whether the list is the seeded draw
            itself is checked at the lock (``attnrank prereg lock``).
        """
        held = set(heads)
        layers: dict[Group, list[bool]] = {}
        for hid in population:
            layers.setdefault(_group(hid), []).append(hid in held)
        if self.unit == "head" and self.stratify == ("checkpoint", "layer"):
            full = [f"{ck}:{la}" for (ck, la), h in layers.items() if all(h)]
            if full:
                raise ParameterError(
                    "held_out.heads",
                    "a training head in every (checkpoint, layer) (held_out.stratify = "
                    '["checkpoint", "layer"]; run `attnrank prereg draw`)',
                    full,
                )
        if self.unit == "layer":
            part = [f"{ck}:{la}" for (ck, la), h in layers.items() if any(h) and not all(h)]
            if part:
                raise ParameterError(
                    "held_out.heads",
                    'whole (checkpoint, layer) groups (held_out.unit = "layer")',
                    part,
                )
            checkpoints: dict[str, list[bool]] = {}
            for (ck, _), h in layers.items():
                checkpoints.setdefault(ck, []).append(all(h))
            full = sorted(ck for ck, h in checkpoints.items() if all(h))
            if full:
                raise ParameterError(
                    "held_out.heads",
                    'a training layer in every checkpoint (held_out.unit = "layer")',
                    full,
                )


def held_out_rule(data: Mapping[str, Any]) -> HeldOutRule:
    """The design's held-out rule, from ``[held_out]`` and the top-level ``method``, checked.

    Parameters
    ----------
    data : mapping
        The parsed design (its ``held_out`` table and ``method``).

    Returns
    -------
    HeldOutRule

    Raises
    ------
    ParameterError
        Named ``held_out.stratify`` (not ``["checkpoint"]`` nor ``["checkpoint",
        "layer"]``; or not ``["checkpoint"]`` with unit ``"layer"``), ``held_out.unit``
        (not ``"head"`` nor ``"layer"``), ``held_out.estimand`` (not the unit's, or
        missing with unit ``"layer"``) or ``held_out.rule`` (not :attr:`HeldOutRule.text`).

    Examples
    --------
    >>> from analysis.prereg.held_out import held_out_rule
    >>> held_out_rule({"held_out": {}}).stratify  # method 2: per checkpoint
    ('checkpoint',)
    >>> held_out_rule({"method": 3, "held_out": {}}).stratify
    ('checkpoint', 'layer')
    >>> held_out_rule({"method": 3, "held_out": {"stratify": ["checkpoint"]}}).legacy
    True
    >>> rule = held_out_rule({"held_out": {"unit": "layer", "estimand": "new layers"}})
    >>> rule.stratify, rule.unit
    (('checkpoint',), 'layer')
    >>> held_out_rule({"held_out": {"stratify": ["layer"]}})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    analysis.validation.ParameterError: held_out.stratify: expected ["checkpoint"] or ...
    """
    ho = data.get("held_out") or {}
    unit = ho.get("unit", "head")
    if unit not in UNITS:
        raise ParameterError("held_out.unit", " or ".join(f'"{u}"' for u in UNITS), unit)
    default = ["checkpoint", "layer"] if design_method(data) == 3 and unit == "head" else None
    stratify = ho.get("stratify", default or ["checkpoint"])
    allowed = [list(s) for s in STRATIFICATIONS]
    if not isinstance(stratify, list) or stratify not in allowed:
        raise ParameterError(
            "held_out.stratify",
            " or ".join("[" + ", ".join(f'"{k}"' for k in s) + "]" for s in allowed),
            stratify,
        )
    if unit == "layer" and stratify != ["checkpoint"]:
        raise ParameterError(
            "held_out.stratify", '["checkpoint"] when held_out.unit is "layer"', stratify
        )
    if "estimand" in ho or unit == "layer":
        if ho.get("estimand") != ESTIMANDS[unit]:
            raise ParameterError(
                "held_out.estimand",
                f'"{ESTIMANDS[unit]}" (the estimand of held_out.unit = "{unit}")',
                ho.get("estimand"),
            )
    rule = HeldOutRule(tuple(stratify), unit)
    if "rule" in ho and ho["rule"] != rule.text:
        raise ParameterError(
            "held_out.rule", f'"{rule.text}" (the rule of {rule.describe()})', ho["rule"]
        )
    return rule
