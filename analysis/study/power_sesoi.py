"""The loss-unit SESOI of a hypothesis declared as ``sesoi_share``, read from the locked
power file, for the confirmatory comparison.

``hypotheses[i].sesoi_share`` (:func:`analysis.prereg.options.design_sesoi_shares`) is a
share of the pilot's reference M0 held-out loss; the method-3 power stage turns it into
loss units before outcomes and records it in ``<stem>.power.json`` (``inputs.sesoi[pair]
["sesoi"]``), which the lock hashes (``power_sha256``). The comparison's equivalence test
needs that number: :func:`confirmatory_kwargs` adds it to
:meth:`analysis.prereg.Design.comparison_kwargs`, and refuses when the power file is
missing, is not the one the lock hashes, is exploratory, or does not resolve the share.
A design without ``sesoi_share`` gets ``comparison_kwargs()`` unchanged.
"""

from __future__ import annotations

import math
from typing import Any

from analysis.prereg.lock import PreregistrationError
from analysis.prereg.options import design_sesoi_shares
from analysis.prereg.provenance import power_path, power_sha256
from analysis.study.core import Study
from analysis.validation import ParameterError

__all__ = ["confirmatory_kwargs", "locked_sesoi"]


def _hypothesis_names(data: dict) -> dict[str, str]:
    """Pair -> ``"H1 (hypotheses[0].sesoi_share)"`` for the messages."""
    out = {}
    for i, h in enumerate(data.get("hypotheses", [])):
        if "sesoi_share" in h:
            out["<".join(h["pair"])] = f"{h.get('id', f'#{i}')} (hypotheses[{i}].sesoi_share)"
    return out


def locked_sesoi(study: Study) -> dict[str, dict[str, float]]:
    """Pair -> ``{primary metric: SESOI}`` for each hypothesis declared with
    ``sesoi_share``, from the locked power file; ``{}`` when there is none.

    Parameters
    ----------
    study : Study
        The opened (locked) study.

    Returns
    -------
    dict
        As :func:`analysis.prereg.options.design_sesoi`, for the ``sesoi_share`` pairs.

    Raises
    ------
    analysis.prereg.PreregistrationError
        Naming the hypothesis, when the power file does not exist, its SHA-256 is not the
        lock's ``power_sha256``, or it is exploratory.
    ParameterError
        Named ``hypotheses[i].sesoi_share`` when the power file records no loss-unit SESOI
        for the pair (unresolved: no pilot M0 loss) or another share than the design's.

    Examples
    --------
    A design without ``sesoi_share`` needs no power file:

    >>> from analysis.datasets import open_example_study
    >>> locked_sesoi(open_example_study("studies/no-share.toml"))
    {}
    """
    from analysis.power.file import read_power_file

    data = study.design.data
    shares = design_sesoi_shares(data)
    if not shares:
        return {}
    design_path = study.paths.design
    names = _hypothesis_names(data)
    file = power_path(design_path).name
    first = names[next(iter(shares))]
    key = first.split(" (", 1)[1].rstrip(")")
    locked = study.lock.record.get("power_sha256")
    if not power_path(design_path).is_file():
        raise PreregistrationError(
            f"{first} declares its SESOI as a share of the pilot's M0 loss; its loss-unit "
            f"SESOI is read from the locked power file {file}, which does not exist. Compute "
            f"it before outcomes: attnrank validate-comparison --design {design_path.name} "
            "--simulations N --write-power-file (then attnrank prereg lock)",
            name=key,
        )
    if locked is None or power_sha256(design_path) != locked:
        raise PreregistrationError(
            f"{first} declares its SESOI as a share of the pilot's M0 loss, but {file} is not "
            "the power file the lock hashes (power_sha256 "
            f"{'none' if locked is None else str(locked)[:12]}); its loss-unit SESOI cannot "
            "be trusted",
            name=key,
        )
    record = read_power_file(design_path)
    if record is None or record.get("exploratory"):
        raise PreregistrationError(
            f"{first}: {file} is exploratory (computed after outcomes), not the design's "
            "pre-registered power; its SESOI is not used",
            name=key,
        )
    primary = data["metrics"]["primary"]
    table = record.get("inputs", {}).get("sesoi") or {}
    out: dict[str, dict[str, float]] = {}
    for pair, share in shares.items():
        name = names[pair].split(" (", 1)[1].rstrip(")")
        entry = table.get(pair) or {}
        value = entry.get("sesoi")
        ok = isinstance(value, (int, float)) and math.isfinite(value) and value > 0
        if not ok or entry.get("sesoi_share") != share:
            raise ParameterError(
                name,
                f"a share resolved to loss units in the locked power file {file} "
                f"(inputs.sesoi[{pair!r}] with sesoi_share {share})",
                entry or None,
            )
        out[pair] = {primary: float(value)}
    return out


def confirmatory_kwargs(study: Study) -> dict[str, Any]:
    """:meth:`analysis.prereg.Design.comparison_kwargs` with the ``sesoi_share``
    hypotheses' loss-unit SESOIs from the locked power file (:func:`locked_sesoi`) added
    to ``sesoi``; the design's own kwargs when it declares no ``sesoi_share``.

    Parameters
    ----------
    study : Study

    Returns
    -------
    dict

    Examples
    --------
    >>> from analysis.datasets import open_example_study
    >>> study = open_example_study("studies/kwargs.toml")
    >>> confirmatory_kwargs(study)["sesoi"] == study.design.comparison_kwargs()["sesoi"]
    True
    """
    kwargs = study.design.comparison_kwargs()
    extra = locked_sesoi(study)
    if extra:
        kwargs["sesoi"] = {**kwargs.get("sesoi", {}), **extra}
    return kwargs
