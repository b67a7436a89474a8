"""``attnrank bracket --workers 2 --witnesses --out``: what it prints and writes is what the
library's ``result_json`` gives, in ``json.dumps``'s own format, and it re-verifies."""

import json

from analysis.brackets import LATEST_ENGINE
from analysis.brackets.io import profile_file, result_json
from analysis.cli import main
from analysis.cli.inputs import load_matrices
from analysis.executor import RunSpec

EPS = (0.05, 0.1, 0.2)


def _without_seconds(res):
    return {**res, "matrices": [{**m, "seconds": None} for m in res["matrices"]]}


def test_bracket_out_json_is_result_json_and_verifies(stack, tmp_path, capsys):
    out = tmp_path / "out.json"
    argv = ["bracket", str(stack), "--eps", *map(str, EPS), "--witnesses", "--out", str(out)]
    assert main([*argv, "--workers", "2", "--batch", "2", "--effort", "fast", "--quiet"]) == 0
    printed = capsys.readouterr().out.splitlines()
    text = out.read_text()
    res = json.loads(text)
    assert text == json.dumps(res)  # json.dumps's default layout, as before
    data = load_matrices(stack)
    profs = profile_file(data, eps=EPS, effort="fast", execution=RunSpec(batch=2, progress=False))
    expected = result_json(
        data, profs, eps=EPS, effort="fast", witnesses=True, engine=LATEST_ENGINE
    )
    assert list(res) == [  # the engine (the default: the newest) right after the effort
        "input_sha256",
        "temperature",
        "renormalized",
        "effort",
        "engine",
        "matrices",
    ]
    assert _without_seconds(res) == _without_seconds(expected)  # seconds are timings
    assert printed == [  # as the command printed them from result_json before
        f"matrix {m['index']}: "
        + "  ".join(f"eps={b['eps']:g}: [{b['lower']}, {b['upper']}]" for b in m["brackets"])
        for m in expected["matrices"]
    ]
    assert not (tmp_path / "out.json.partial").exists()
    assert main(["verify", str(stack), str(out)]) == 0


def test_bracket_without_out_prints_the_brackets_only(stack, tmp_path, capsys):
    assert main(["bracket", str(stack), "--eps", "0.1", "--effort", "fast", "--quiet"]) == 0
    lines = capsys.readouterr().out.splitlines()
    profs = profile_file(
        load_matrices(stack), eps=(0.1,), effort="fast", execution=RunSpec(progress=False)
    )
    assert lines == [
        f"matrix {i}: eps=0.1: [{p.bracket(0.1)[0]}, {p.bracket(0.1)[1]}]"
        for i, p in enumerate(profs)
    ]
    assert list(tmp_path.iterdir()) == [stack]
