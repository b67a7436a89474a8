"""The stages' progress bars: cost-weighted, so that their ETA holds still.

A stage's items are not equal units of work: a bracket profile or a matrix's descriptors
at N = 64 costs more than at N = 32, and the items arrive in the store's order (by input,
then length, layer and head), not shuffled. A bar that counts items and estimates its rate
from the last few updates (tqdm's default, ``smoothing=0.3``) then swings with every run of
cheap or dear items, and with the bursts in which a pool's results arrive (a matrix's
temperatures together, two workers' results at once). A :class:`CostBar` instead

* counts each item as its estimated cost (:func:`matrix_cost`: ``N ** exponent``, the
  exponent measured per stage), so that its total is the summed cost of the stage's items;
* estimates the rate over the whole stage since its first completion (``smoothing=0``:
  cost done since then / time since then), which bursts barely move and a pool's start-up
  (workers spawning and importing before any item is done) does not skew;
* shows the item count (``12/96 profiles``) in its postfix, not the cost units.

What the bars show never changes what a stage computes or stores. The measurements behind
the exponents and the ETA's spread before and after: docs/results/progress.md
(``python -m benchmarks.bench_eta``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import IO, Any

from analysis.validation import ParameterError

__all__ = [
    "DESCRIBE_EXPONENT",
    "PROFILE_EXPONENT",
    "SMOOTHING",
    "CostBar",
    "matrix_cost",
]

#: tqdm's ``smoothing``: 0 estimates the rate as done cost / elapsed over the whole stage.
SMOOTHING = 0.0
#: CPU of a matrix's bracket profile ~ ``N ** PROFILE_EXPONENT`` at the study's lengths
#: (MiniLM, N = 32 and 64, engine 4, 3 temperatures: 1.97 and 2.78 CPU-s per matrix, a
#: median, ``python -m experiments.eta_costs``; 1.44 times per profile inside the stage).
PROFILE_EXPONENT = 0.6
#: CPU of a matrix's descriptors ~ ``N ** DESCRIBE_EXPONENT`` (the same matrices: a median
#: 0.24 and 0.34 CPU-s, means 0.29 and 0.45, at N = 32 and 64).
DESCRIBE_EXPONENT = 0.6

#: Percent and bar, then elapsed < remaining and the postfix (the item count): never the
#: cost units, which mean nothing to a reader.
BAR_FORMAT = "{l_bar}{bar}| [{elapsed}<{remaining}{postfix}]"


#: Completions within this many seconds of the first one are its burst (a matrix's
#: temperatures arrive together): the rate is counted from the last of them.
BURST_S = 0.1


def _bar_class() -> type:
    """tqdm's bar whose rate, once an item has completed, is the cost done since the first
    completion over the time since then (``anchor``: that time and the cost done by then)."""
    from tqdm.auto import tqdm

    class _AnchoredBar(tqdm):  # type: ignore[misc, valid-type]
        anchor: tuple[float, float] | None = None

        @property
        def format_dict(self) -> dict[str, Any]:
            d = super().format_dict
            a = self.anchor
            if a is not None and d["elapsed"] > a[0] and d["n"] > a[1]:
                d["rate"] = (d["n"] - a[1]) / (d["elapsed"] - a[0])
            return d

    return _AnchoredBar


def matrix_cost(n: int, exponent: float) -> float:
    """The estimated cost of one item of an ``n`` x ``n`` matrix: ``n ** exponent``.

    Parameters
    ----------
    n : int
        The matrix's side (its number of keys), at least 1.
    exponent : float
        The stage's exponent (:data:`PROFILE_EXPONENT`, :data:`DESCRIBE_EXPONENT`), >= 0.

    Returns
    -------
    float

    Examples
    --------
    >>> from analysis.progress import matrix_cost
    >>> matrix_cost(64, 1.0) / matrix_cost(32, 1.0)
    2.0
    >>> matrix_cost(0, 1.0)
    Traceback (most recent call last):
    ...
    analysis.validation.ParameterError: n: expected an integer >= 1, got 0
    """
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ParameterError("n", "an integer >= 1", n)
    if not isinstance(exponent, int | float) or not exponent >= 0:
        raise ParameterError("exponent", "a number >= 0", exponent)
    return float(n) ** float(exponent)


class CostBar:
    """A tqdm bar over a stage's items, each counted as its estimated cost.

    Parameters
    ----------
    costs : sequence of float
        The estimated cost of each item still to do (> 0 each).
    desc : str, keyword-only
        The bar's label (``"profiles (default)"``).
    unit : str, keyword-only
        What an item is, plural (``"profiles"``), shown with the count.
    done : int, keyword-only
        Items already done before the stage started (stored by an earlier run).
    done_cost : float, keyword-only
        Their summed cost: the bar starts there.
    disable : bool, keyword-only
        No bar (:meth:`advance` still counts).
    file : file-like, optional, keyword-only
        Where the bar is written (tqdm's default: standard error).

    Examples
    --------
    Two cheap items and a dear one: the bar's total is their summed cost, the count is in
    the postfix.

    >>> import io
    >>> from analysis.progress import CostBar
    >>> out = io.StringIO()
    >>> with CostBar([1.0, 1.0, 2.0], desc="profiles", unit="profiles", file=out) as bar:
    ...     bar.advance(1.0)
    ...     bar.advance(1.0)
    ...     half = bar.format_dict["n"] / bar.format_dict["total"]
    >>> half, bar.items, bar.items_total
    (0.5, 2, 3)
    >>> "2/3 profiles" in out.getvalue()
    True
    """

    def __init__(
        self,
        costs: Sequence[float],
        *,
        desc: str,
        unit: str,
        done: int = 0,
        done_cost: float = 0.0,
        disable: bool = False,
        file: IO[str] | None = None,
    ) -> None:
        costs = [float(c) for c in costs]
        if any(not c > 0 for c in costs):  # also NaN
            raise ParameterError("costs", "positive numbers", [c for c in costs if not c > 0][:3])
        if not isinstance(done, int) or done < 0:
            raise ParameterError("done", "an integer >= 0", done)
        if not float(done_cost) >= 0:
            raise ParameterError("done_cost", "a number >= 0", done_cost)
        self.items = done
        self.items_total = done + len(costs)
        self.desc = desc
        self.unit = unit
        self._note = ""
        self.bar = _bar_class()(
            total=float(done_cost) + sum(costs),
            initial=float(done_cost),
            desc=desc,
            smoothing=SMOOTHING,
            bar_format=BAR_FORMAT,
            disable=disable,
            file=file,
            postfix=self._postfix(),
        )

    def _postfix(self) -> str:
        count = f"{self.items}/{self.items_total} {self.unit}"
        return f"{count}, {self._note}" if self._note else count

    def note(self, text: str) -> None:
        """Show ``text`` after the item count (``"t=0.5"``, ``"loading org/model"``)."""
        self._note = text
        self.bar.set_postfix_str(self._postfix())

    def advance(self, cost: float, *, note: str | None = None) -> None:
        """One item done, of estimated cost ``cost``; ``note`` replaces the shown note."""
        self.items += 1
        if note is not None:
            self._note = note
        bar = self.bar
        if not bar.disable:
            # the rate is counted from the first completion: the time before it (a pool's
            # workers starting, importing, taking their first items) is no item's cost
            now = bar._time() - bar.start_t
            if bar.anchor is None or now - bar.anchor[0] <= BURST_S:
                t0 = now if bar.anchor is None else bar.anchor[0]
                bar.anchor = (t0, bar.n + float(cost))  # the first burst's items, all
        step = float(cost)
        if not bar.disable and bar.n + step > bar.total:  # summed in another order: rounding
            step = max(0.0, bar.total - bar.n)
        bar.set_postfix_str(self._postfix(), refresh=False)
        bar.update(step)

    @property
    def format_dict(self) -> dict[str, Any]:
        """tqdm's ``format_dict`` of the bar (``n`` and ``total`` in cost units)."""
        return self.bar.format_dict

    def close(self) -> None:
        """Close the bar."""
        self.bar.close()

    def __enter__(self) -> CostBar:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
