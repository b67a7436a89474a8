"""Re-checking a bracket result file (``OUT.json`` of ``attnrank bracket``) against its input.

Two layers, kept apart. :func:`read_result` and :func:`check_result` read the file and
check that it says what it claims about the input, before any arithmetic: a JSON object
whose ``input_sha256`` is the input's, one entry per matrix, each bound to its matrix by
``index`` (every index once), ``layer``, ``head`` and ``shape``; brackets whose ends are
integers (a fractional end is wrong, never truncated); witnesses of the shapes their rank
or size and the matrix fix, every entry finite. :func:`verify_result` then re-certifies
every reported end by the verifier's float64 arithmetic
(:mod:`analysis.brackets.verify`), which is not touched by these checks.

Each problem is one line; a result with any problem fails (status 1). Status 2 is only for
witnesses that are absent (``"witnesses": null``, or no witness of an end's rank or size).
"""

from __future__ import annotations

import json
import math
import os
import re
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from analysis.brackets.verify import certified_lower_margin, certified_upper_error
from analysis.validation import ParameterError

if TYPE_CHECKING:
    import pandas as pd

# The input is an analysis.brackets.io.MatrixInput (A, layers, heads, sha256); not imported,
# since io imports this module (no import cycle).
MatrixInput = Any

__all__ = [
    "VerifyReport",
    "bracket_frame",
    "check_result",
    "check_result_head",
    "read_result",
    "verify_result",
]

#: How many problems are listed before the rest is counted in one line.
_MAX_LINES = 20


@dataclass(frozen=True)
class VerifyReport:
    """Outcome of re-checking a result file: ``status`` 0 ok, 1 failed, 2 missing.

    ``checked`` counts the witnesses re-certified, ``messages`` says what failed or is
    missing (:func:`verify_result`), one line each.

    Examples
    --------
    >>> from analysis.brackets.results import VerifyReport
    >>> report = VerifyReport(2, 0, ["matrix 0: witnesses are null"])
    >>> report.status == 0, report.messages
    (False, ['matrix 0: witnesses are null'])
    """

    status: int
    checked: int
    messages: list[str]


def read_result(path: str | os.PathLike) -> tuple[dict[str, Any] | None, list[str]]:
    """Parse a result file: ``(result, [])``, or ``(None, [one line])`` when it is not a
    JSON object.

    Raises
    ------
    FileNotFoundError
        Naming ``result`` when there is no such file.

    Examples
    --------
    >>> from pathlib import Path
    >>> from analysis.brackets.results import read_result
    >>> _ = Path("r.json").write_text('{"matrices": [')
    >>> read_result("r.json")[1]
    ['r.json is not JSON (Expecting value: line 1 column 15 (char 14))']
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"result: no such file: {path}")
    try:
        result = json.loads(path.read_bytes())
    except (ValueError, RecursionError) as exc:  # JSONDecodeError, UnicodeDecodeError
        return None, [f"{path.name} is not JSON ({_first_line(exc)})"]
    if not isinstance(result, dict):
        return None, [f"{path.name} holds a JSON {type(result).__name__}, not an object"]
    return result, []


def _first_line(exc: BaseException) -> str:
    return (str(exc).splitlines() or [type(exc).__name__])[0][:160]


def _is_int(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _is_number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def _show(x: Any) -> str:
    text = repr(x)
    return text if len(text) <= 60 else text[:57] + "..."


def check_result_head(result: dict[str, Any]) -> list[str]:
    """Problems of the keys that say how the input is read (``temperature``,
    ``renormalized``), one line each; checked before the input is loaded with them.

    Examples
    --------
    >>> from analysis.brackets.results import check_result_head
    >>> check_result_head({"temperature": None, "renormalized": False})
    []
    >>> check_result_head({"temperature": "hot", "renormalized": 1})
    ["temperature is 'hot', not null or a number > 0", 'renormalized is 1, not true or false']
    """
    out = []
    t = result.get("temperature")
    if t is not None and not (_is_number(t) and t > 0):
        out.append(f"temperature is {_show(t)}, not null or a number > 0")
    r = result.get("renormalized", False)
    if not isinstance(r, bool):
        out.append(f"renormalized is {_show(r)}, not true or false")
    return out


def check_result(data: MatrixInput, result: dict[str, Any]) -> list[str]:
    """Problems of ``result`` as a result file of ``data``, one line each (none: well formed).

    Checks the binding (``input_sha256``, one entry per matrix, each ``index`` once and in
    range, ``layer``, ``head`` and ``shape`` those of the matrix), the brackets (a finite
    ``eps`` > 0 once per matrix, integer ends in ``[0, min(M, N)]``, the lower end at most
    the upper; no other value is possible for ``r_eps`` of an ``M x N`` matrix) and the witnesses (``null``, or an
    object with ``upper`` and ``lower`` lists of integer ranks / sizes, each once, whose
    arrays are finite numbers of shapes ``U (M, rank)``, ``W (N, rank)``, ``R (N, size)``,
    ``Y (size, M)``). Whether a witness certifies its end is :func:`verify_result`'s.

    Examples
    --------
    >>> import copy
    >>> from analysis.datasets import example_bracket_result
    >>> from analysis.brackets.results import check_result
    >>> data, result = example_bracket_result()  # the identity and the uniform matrix, eps = 0.5
    >>> check_result(data, result)
    []
    >>> bad = copy.deepcopy(result)
    >>> bad["matrices"][1] = copy.deepcopy(bad["matrices"][0])  # matrix 0's entry twice
    >>> check_result(data, bad)
    ['matrix entry 1: index 0 appears twice', 'no entry for matrix 1']
    >>> bad = copy.deepcopy(result)
    >>> bad["matrices"][0]["brackets"][0]["lower"] = 25.9
    >>> check_result(data, bad)
    ['matrix 0 bracket 0: lower end 25.9 is not an integer']
    """
    out = check_result_head(result)
    if result.get("input_sha256") != data.sha256:
        out.append("input_sha256 does not match INPUT: the result is for another file")
    mats = result.get("matrices")
    if not isinstance(mats, list):
        out.append(
            "matrices is missing or not a list"
            if mats is None
            else f"matrices is a {type(mats).__name__}, not a list"
        )
        return out
    n = data.A.shape[0]
    if len(mats) != n:
        out.append(f"result has {len(mats)} matrices, INPUT has {n}")
    seen: set[int] = set()
    for j, mat in enumerate(mats):
        if not isinstance(mat, dict):
            out.append(f"matrix entry {j} is a {type(mat).__name__}, not an object")
            continue
        i = mat.get("index")
        if not _is_int(i) or not 0 <= i < n:
            out.append(f"matrix entry {j}: index {_show(i)} is not an integer in [0, {n})")
            continue
        if i in seen:
            out.append(f"matrix entry {j}: index {i} appears twice")
            continue
        seen.add(i)
        out += _check_matrix(data, i, mat)
    out += [f"no entry for matrix {i}" for i in range(n) if i not in seen and len(mats) == n]
    if len(out) > _MAX_LINES:
        out = [*out[:_MAX_LINES], f"... and {len(out) - _MAX_LINES} more problems"]
    return out


def _check_matrix(data: MatrixInput, i: int, mat: dict[str, Any]) -> list[str]:
    out = []
    M, N = data.A.shape[1:]
    for key, want in (("layer", data.layers[i]), ("head", data.heads[i])):
        if mat.get(key) != want or isinstance(mat.get(key), bool):
            out.append(f"matrix {i}: {key} {_show(mat.get(key))}, INPUT's is {_show(want)}")
    if mat.get("shape") != [M, N]:
        out.append(f"matrix {i}: shape {_show(mat.get('shape'))}, INPUT's is {[M, N]}")
    brackets = mat.get("brackets")
    if not isinstance(brackets, list):
        out.append(f"matrix {i}: brackets is {_show(brackets)}, not a list")
        brackets = []
    seen: set[float] = set()
    for k, b in enumerate(brackets):
        where = f"matrix {i} bracket {k}"
        if not isinstance(b, dict):
            out.append(f"{where} is {_show(b)}, not an object")
            continue
        eps = b.get("eps")
        if not (_is_number(eps) and eps > 0):
            out.append(f"{where}: eps {_show(eps)} is not a finite number > 0")
        elif eps in seen:
            out.append(f"{where}: eps {eps!r} appears twice")
        else:
            seen.add(eps)
        ends = {}
        for end in ("lower", "upper"):
            v = b.get(end)
            if not _is_int(v):
                out.append(f"{where}: {end} end {_show(v)} is not an integer")
            elif not 0 <= v <= min(M, N):  # r_eps of an M x N matrix is in [0, min(M, N)]
                out.append(f"{where}: {end} end {_show(v)} is outside [0, {min(M, N)}]")
            else:
                ends[end] = v
        if len(ends) == 2 and ends["lower"] > ends["upper"]:
            out.append(f"{where}: lower {ends['lower']} > upper {ends['upper']}")
    wit = mat.get("witnesses")
    if wit is not None:
        out += _check_witnesses(f"matrix {i}", wit, M, N)
    return out


#: Per kind of witness: its integer key and its two arrays with their shapes, given
#: (M, N, k) of the matrix and the key's value.
_WITNESS = {
    "upper": ("rank", (("U", lambda M, N, k: (M, k)), ("W", lambda M, N, k: (N, k)))),
    "lower": ("size", (("R", lambda M, N, k: (N, k)), ("Y", lambda M, N, k: (k, M)))),
}


def _check_witnesses(where: str, wit: Any, M: int, N: int) -> list[str]:
    if not isinstance(wit, dict):
        return [f"{where}: witnesses is {_show(wit)}, not null or an object"]
    out = []
    for kind, (key, arrays) in _WITNESS.items():
        ws = wit.get(kind)
        if not isinstance(ws, list):
            out.append(f"{where}: witnesses.{kind} is {_show(ws)}, not a list")
            continue
        seen: set[int] = set()
        for j, w in enumerate(ws):
            at = f"{where} {kind} witness {j}"
            if not isinstance(w, dict):
                out.append(f"{at} is {_show(w)}, not an object")
                continue
            k = w.get(key)
            if not _is_int(k) or k < (0 if kind == "upper" else 1):
                out.append(f"{at}: {key} {_show(k)} is not an integer >= {int(kind == 'lower')}")
                continue
            if k in seen:
                out.append(f"{at}: {key} {k} appears twice")
                continue
            seen.add(k)
            for name, shape in arrays:
                problem = _array_problem(w.get(name), shape(M, N, k))
                if problem:
                    out.append(f"{at} ({key} {k}): {name} {problem}")
    return out


def _array_problem(x: Any, shape: tuple[int, int]) -> str | None:
    """Why ``x`` (parsed JSON) is not a finite float array of ``shape`` (None: it is)."""
    if not isinstance(x, list):
        return f"is {_show(x)}, not a list of rows"
    try:
        a = np.array(x)
    except ValueError:  # ragged
        return "has rows of different lengths"
    if a.dtype.kind not in "iuf":
        return "holds entries that are not numbers"
    if a.size == 0 and shape[0] * shape[1] == 0 and a.shape[0] == shape[0]:
        return None  # a rank-0 witness: M empty rows
    if a.shape != shape:
        return f"has shape {'x'.join(map(str, a.shape))}, not {shape[0]}x{shape[1]}"
    if not np.isfinite(a.astype(np.float64)).all():
        return "holds entries that are not finite"
    return None


def verify_result(data: MatrixInput, result: dict[str, Any]) -> VerifyReport:
    """Re-check every reported bracket end of ``result`` against ``data``'s matrices.

    First :func:`check_result`: any problem fails the result (status 1) with its lines, and
    no witness is re-checked (ends outside ``[0, min(M, N)]`` or a lower end above its upper
    end among them). Then every end's witness is re-certified in float64
    (:func:`~analysis.brackets.verify.certified_upper_error`,
    :func:`~analysis.brackets.verify.certified_lower_margin`). Rank 0 needs no witness, so
    with or without witnesses an upper end 0 is certified from ``B = 0``, and a lower end
    >= 1 fails wherever ``B = 0`` is certified within eps (then ``r_eps = 0``).

    Returns
    -------
    VerifyReport
        ``status`` 1 when the result is malformed or not bound to ``data``'s matrices, or
        a witness fails to certify its end; else 2 when a witness is absent; else 0.

    Examples
    --------
    Two ends per matrix, each re-certified; a damaged witness (the identity's rank-4
    witness ``U W^T = I`` scaled to ``0.3 I``, off by 0.7 in every row) fails:

    >>> from analysis.datasets import example_bracket_result
    >>> data, result = example_bracket_result()  # the identity and the uniform matrix, eps = 0.5
    >>> from analysis.brackets.results import verify_result
    >>> verify_result(data, result)
    VerifyReport(status=0, checked=4, messages=[])
    >>> U = result["matrices"][0]["witnesses"]["upper"][0]["U"]
    >>> U[:] = [[0.3 * u for u in row] for row in U]
    >>> report = verify_result(data, result)
    >>> report.status, report.messages
    (1, ['matrix 0 eps=0.5: upper witness rank 4 has certified error 0.7 > eps'])

    Without witnesses, an end that no matrix of its size can have fails, and so does an
    upper end 0 that ``B = 0`` does not certify (the identity's rows have l1 norm 1):

    >>> data, result = example_bracket_result()
    >>> for m in result["matrices"]:
    ...     m["witnesses"] = None
    >>> result["matrices"][0]["brackets"][0]["lower"] = 25
    >>> verify_result(data, result).messages
    ['matrix 0 bracket 0: lower end 25 is outside [0, 4]']
    >>> result["matrices"][0]["brackets"][0].update(lower=0, upper=0)
    >>> verify_result(data, result).messages[0]
    'matrix 0 eps=0.5: upper end 0 (B = 0) has certified error 1 > eps'
    """
    problems = check_result(data, result)
    if problems:
        return VerifyReport(1, 0, problems)
    msgs: list[str] = []
    checked = 0
    missing = failed = False
    for mat in result["matrices"]:
        i = mat["index"]
        A = data.A[i]
        M, N = A.shape
        # Rank 0 (B = 0) needs no witness: its certified error, a bound on the largest row
        # l1 norm, decides an upper end 0 and refutes a lower end >= 1 wherever it is <= eps.
        zero = certified_upper_error(A, np.zeros((M, 0)), np.zeros((N, 0)))
        for b in mat["brackets"]:
            eps, lo, hi = float(b["eps"]), b["lower"], b["upper"]
            if hi == 0:
                checked += 1
                if not zero <= eps:
                    failed = True
                    msgs.append(
                        f"matrix {i} eps={eps}: upper end 0 (B = 0) has certified error "
                        f"{zero:.6g} > eps"
                    )
            if lo >= 1 and zero <= eps:
                failed = True
                msgs.append(
                    f"matrix {i} eps={eps}: lower end {lo} is impossible: B = 0 is within eps "
                    f"(certified error {zero:.6g}), so r_eps = 0"
                )
        wit = mat.get("witnesses")
        if wit is None:
            if any(b["upper"] >= 1 or b["lower"] >= 1 for b in mat["brackets"]):
                missing = True
                msgs.append(f"matrix {i}: witnesses are null (re-run bracket with --witnesses)")
            continue
        ups = {w["rank"]: w for w in wit["upper"]}
        lows = {w["size"]: w for w in wit["lower"]}
        for b in mat["brackets"]:
            eps, lo, hi = float(b["eps"]), b["lower"], b["upper"]
            w = ups.get(hi)
            if hi == 0:
                pass  # certified above, with or without a witness
            elif w is None:
                missing = True
                msgs.append(f"matrix {i} eps={eps}: no upper witness of rank {hi}")
            else:
                U = np.asarray(w["U"], dtype=np.float64).reshape(M, hi)
                W = np.asarray(w["W"], dtype=np.float64).reshape(N, hi)
                e = certified_upper_error(A, U, W)
                checked += 1
                if not e <= eps:
                    failed = True
                    msgs.append(
                        f"matrix {i} eps={eps}: upper witness rank {hi} has certified error "
                        f"{e:.6g} > eps"
                    )
            if lo >= 1:
                w = lows.get(lo)
                if w is None:
                    missing = True
                    msgs.append(f"matrix {i} eps={eps}: no lower witness of size {lo}")
                else:
                    R = np.asarray(w["R"], dtype=np.float64).reshape(N, lo)
                    Y = np.asarray(w["Y"], dtype=np.float64).reshape(lo, M)
                    mu = certified_lower_margin(A, R, Y)
                    checked += 1
                    if not mu > eps:
                        failed = True
                        msgs.append(
                            f"matrix {i} eps={eps}: lower witness size {lo} has certified "
                            f"margin {mu:.6g} <= eps"
                        )
    status = 1 if failed else (2 if missing else 0)
    return VerifyReport(status, checked, msgs)


def bracket_frame(
    result: dict[str, Any],
    data: MatrixInput,
    *,
    recheck: bool = True,
    say: Callable[[str], None] | None = None,
) -> pd.DataFrame:
    """``index``, ``eps``, ``lower``, ``upper`` of a bracket result file of the same input,
    once the file is checked as ``attnrank verify`` checks it.

    Parameters
    ----------
    result : dict
        A parsed ``OUT.json`` of ``attnrank bracket``
        (:func:`read_result`).
    data : MatrixInput
        The matrices it must be a result of.
    recheck : bool, default True, keyword-only
        Re-certify every end of every matrix that has witnesses (:func:`verify_result`,
        float64; cheap next to the search) and refuse the file when one fails or has no
        witness. The brackets of matrices whose witnesses are null (a result written
        without ``--witnesses``) are taken as the file reports them, and ``say`` is told
        how many.
    say : callable, optional, keyword-only
        Receives that one line (default: a :class:`UserWarning`).

    Raises
    ------
    ParameterError
        Naming ``result``, in one line: when it is for another input, temperature or
        renormalization; when it is not bound to ``data``'s matrices or is malformed
        (:func:`check_result`: every index once, layer, head
        and shape those of the matrix, integer ends, well-formed witnesses); when a
        lower end exceeds its upper end; when ``recheck`` and, in a matrix with
        witnesses, an end has none or its witness fails to certify it. The first
        problem is named, and how many more there are.

    Examples
    --------
    >>> from analysis.datasets import example_bracket_result
    >>> data, result = example_bracket_result()  # the identity and the uniform matrix, eps = 0.5
    >>> from analysis.brackets.results import bracket_frame
    >>> bracket_frame(result, data)
       index  eps  lower  upper
    0      0  0.5      4      4
    1      1  0.5      1      1
    >>> import dataclasses
    >>> bracket_frame(result, dataclasses.replace(data, sha256="another file"))
    Traceback (most recent call last):
    ...
    analysis.validation.ParameterError: result: expected a result of `attnrank bracket` ...

    A relabelled entry (matrix 1's entry claiming to be matrix 0's) is refused:

    >>> result["matrices"][1]["index"] = 0
    >>> bracket_frame(result, data)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    analysis.validation.ParameterError: result: expected ..., got 'matrix entry 1: index 0 appears twice (and 1 more problem)'
    """
    import pandas as pd

    same = (
        result.get("input_sha256") == data.sha256
        and result.get("temperature") == data.temperature
        and bool(result.get("renormalized")) == data.renormalized
    )
    if not same:
        raise ParameterError(
            "result",
            "a result of `attnrank bracket` on the same INPUT, temperature and renormalization",
            {k: result.get(k) for k in ("input_sha256", "temperature", "renormalized")},
        )
    problems = check_result(data, result)
    if problems:
        _refuse_result("a result of `attnrank bracket` bound to INPUT's matrices", problems)
    if recheck:
        report = verify_result(data, result)
        # `bracket --witnesses` stores the witness of every end it reports: in a matrix
        # with witnesses, an end without one (a raised lower end, say) is not certified
        unbacked = [p for p in report.messages if re.search(r": no \w+ witness of", p)]
        if unbacked:
            _refuse_result("brackets whose every end has its witness", unbacked)
        if report.status != 0 and report.status != 2:
            absent_lines = re.compile(r": witnesses are null |: no \w+ witness of")
            failed = [p for p in report.messages if not absent_lines.search(p)]
            _refuse_result("brackets whose witnesses certify them", failed)
        absent = sum(1 for m in result["matrices"] if m.get("witnesses") is None)
        if absent:
            _tell(
                f"{absent} of {len(result['matrices'])} matrices have no witnesses: their "
                "brackets are taken as the file reports them, not re-certified (bracket "
                "with --witnesses to check them)",
                say,
            )
    rows = [
        {"index": m["index"], "eps": b["eps"], "lower": b["lower"], "upper": b["upper"]}
        for m in sorted(result["matrices"], key=lambda m: m["index"])
        for b in m["brackets"]
    ]
    return pd.DataFrame(rows, columns=["index", "eps", "lower", "upper"])


def _refuse_result(allowed: str, problems: list[str]) -> None:
    """Raise the one-line :class:`ParameterError` naming ``result`` for ``problems``."""
    more = len(problems) - 1
    got = problems[0] + (f" (and {more} more problem{'s' * (more != 1)})" if more else "")
    raise ParameterError(
        "result", f"{allowed} (`attnrank verify INPUT RESULT` lists every problem)", got
    )


def _tell(note: str, say: Callable[[str], None] | None, stacklevel: int = 3) -> None:
    """Pass ``note`` to ``say``, or warn it (a :class:`UserWarning` to the caller's caller)."""
    if say is None:
        warnings.warn(note, UserWarning, stacklevel=stacklevel)
    else:
        say(note)


def report_dropped(n: int, what: str, say: Callable[[str], None] | None) -> None:
    """Tell ``say`` (default: a :class:`UserWarning` to the caller's caller) that ``n``
    stored items of kind ``what`` failed re-verification and were recomputed (nothing if
    ``n`` is 0)."""
    if not n:
        return
    if n == 1:
        note = f"1 stored {what} failed re-verification and was recomputed"
    else:
        note = f"{n} stored {what}s failed re-verification and were recomputed"
    _tell(note, say, 4)
