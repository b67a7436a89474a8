"""``attnrank bracket FILE`` / ``attnrank verify`` end to end, including corrupted witnesses."""

import json

import numpy as np
import pytest

from analysis.attention import softmax64
from analysis.cli import main


def run_bracket(stack, tmp_path, *extra):
    out = tmp_path / "out.json"
    rc = main(
        ["bracket", str(stack), "--eps", "0.05", "0.1", "0.2", "--out", str(out), "--quiet", *extra]
    )
    assert rc == 0
    return out, json.loads(out.read_text())


def test_bracket_contract_and_verify(stack, tmp_path, capsys):
    out, res = run_bracket(stack, tmp_path, "--witnesses", "--effort", "fast")
    assert set(res) >= {"input_sha256", "temperature", "renormalized", "effort", "matrices"}
    assert res["temperature"] is None
    m = res["matrices"][1]
    assert m["index"] == 1 and m["layer"] is None and m["head"] is None and m["shape"] == [20, 20]
    assert [b["eps"] for b in m["brackets"]] == [0.05, 0.1, 0.2]
    for b in m["brackets"]:
        ranks = {w["rank"] for w in m["witnesses"]["upper"]}
        sizes = {w["size"] for w in m["witnesses"]["lower"]}
        assert b["upper"] in ranks and (b["lower"] == 0 or b["lower"] in sizes)
    assert main(["verify", str(stack), str(out)]) == 0


def test_verify_rejects_corrupted_upper(stack, tmp_path):
    out, res = run_bracket(stack, tmp_path, "--witnesses", "--effort", "fast")
    w = next(w for w in res["matrices"][0]["witnesses"]["upper"] if w["rank"] > 0)
    W = np.array(w["W"])
    c = int(np.abs(W).sum(0).argmax())  # a column whose W mass makes the change visible
    w["U"][0][c] += 10.0
    out.write_text(json.dumps(res))
    assert main(["verify", str(stack), str(out)]) == 1


def test_verify_rejects_corrupted_lower(stack, tmp_path):
    out, res = run_bracket(stack, tmp_path, "--witnesses", "--effort", "fast")
    w = next(w for w in res["matrices"][0]["witnesses"]["lower"] if w["size"] >= 2)
    Y = np.array(w["Y"])
    i = int(np.abs(Y[0]).argmax())
    w["Y"][1][i] += 10.0 * np.sign(Y[0, i])  # row 1 now leans hard on row 0's test function
    out.write_text(json.dumps(res))
    assert main(["verify", str(stack), str(out)]) == 1


def test_verify_missing_witnesses(stack, tmp_path):
    out, _ = run_bracket(stack, tmp_path, "--effort", "fast")
    assert main(["verify", str(stack), str(out)]) == 2


def test_workers_give_same_brackets(stack, tmp_path):
    _, one = run_bracket(stack, tmp_path, "--effort", "fast")
    _, two = run_bracket(stack, tmp_path, "--effort", "fast", "--workers", "2")
    assert [m["brackets"] for m in one["matrices"]] == [m["brackets"] for m in two["matrices"]]


@pytest.mark.parametrize(
    "args, match",
    [
        (["--eps", "0"], "--eps"),
        (["--eps", "nan"], "--eps"),
        (["--eps", "0.1", "--temperature", "2"], "--temperature"),
        (["--eps", "0.1", "--workers", "0"], "--workers"),
        (["--eps", "0.1", "--batch", "0"], "--batch"),
    ],
)
def test_cli_errors_name_parameter(stack, args, match, capsys):
    assert main(["bracket", str(stack), "--quiet", *args]) == 2
    assert match in capsys.readouterr().err


def test_cli_bad_rows(tmp_path, capsys):
    p = tmp_path / "bad.npy"
    np.save(p, np.array([[0.5, 0.4], [0.5, 0.5]]))
    assert main(["bracket", str(p), "--eps", "0.1", "--quiet"]) == 2
    assert "row 0" in capsys.readouterr().err
    assert main(["bracket", str(p), "--eps", "0.1", "--quiet", "--renormalize"]) == 0


def test_npz_input_with_temperature(tmp_path):
    rng = np.random.default_rng(4)
    Q = rng.normal(size=(2, 2, 10, 4)).astype(np.float32)
    K = rng.normal(size=(2, 2, 10, 4)).astype(np.float32)
    scale = np.full((2, 2), 0.5, dtype=np.float32)
    mask = np.tril(np.ones((10, 10), dtype=bool))
    p = tmp_path / "x.npz"
    np.savez(p, Q=Q, K=K, scale=scale, mask=mask, A=softmax64(Q, K, scale, mask).astype(np.float32))
    out = tmp_path / "o.json"
    assert (
        main(
            [
                "bracket",
                str(p),
                "--eps",
                "0.1",
                "--temperature",
                "2",
                "--witnesses",
                "--quiet",
                "--effort",
                "fast",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    res = json.loads(out.read_text())
    assert res["temperature"] == 2.0
    assert [(m["layer"], m["head"]) for m in res["matrices"]] == [(0, 0), (0, 1), (1, 0), (1, 1)]
    assert main(["verify", str(p), str(out)]) == 0


def test_batch_one_is_profile_matrix_one_at_a_time(stack, tmp_path):
    from analysis.brackets import profile_matrix
    from analysis.cli.inputs import load_matrices

    _, res = run_bracket(stack, tmp_path, "--batch", "1")
    A = load_matrices(stack).A
    grid = (0.05, 0.1, 0.2)
    alone = [profile_matrix(a, eps=grid).to_frame(grid).to_dict("records") for a in A]
    assert [m["brackets"] for m in res["matrices"]] == alone


def test_bracket_resume_recomputes_a_tampered_checkpoint_line(stack, tmp_path, capsys):
    """``OUT.json.partial`` lines are re-verified on resume; a failed one is recomputed and
    the count goes to stderr."""
    from analysis.brackets.io import profile_file
    from analysis.cli.inputs import load_matrices
    from analysis.executor import RunSpec
    from tests.fixtures.tamper import set_margin

    clean, expected = run_bracket(stack, tmp_path / "clean", "--effort", "fast")
    capsys.readouterr()
    out = tmp_path / "out.json"
    ck = tmp_path / "out.json.partial"
    profs = profile_file(
        load_matrices(stack),
        eps=(0.05, 0.1, 0.2),
        effort="fast",
        checkpoint=ck,
        execution=RunSpec(progress=False),
    )
    lines = [json.loads(line) for line in ck.read_text().splitlines()]
    lines[1]["profile"] = set_margin(lines[1]["profile"], max(profs[1].lower), 0.95)
    ck.write_text("".join(json.dumps(rec) + "\n" for rec in lines))
    _, res = run_bracket(stack, tmp_path, "--effort", "fast")
    err = capsys.readouterr().err
    assert "1 stored profile failed re-verification and was recomputed" in err
    assert [m["brackets"] for m in res["matrices"]] == [m["brackets"] for m in expected["matrices"]]
    assert not ck.exists() and out.is_file()


def test_device_flag_runs_on_the_cpu_and_names_a_missing_gpu(stack, tmp_path, capsys):
    import torch

    _, cpu = run_bracket(stack, tmp_path, "--effort", "fast", "--device", "cpu")
    _, default = run_bracket(stack, tmp_path, "--effort", "fast")
    assert [m["brackets"] for m in cpu["matrices"]] == [m["brackets"] for m in default["matrices"]]
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU: the missing-device message cannot be checked")
    rc = main(["bracket", str(stack), "--eps", "0.1", "--device", "cuda", "--quiet"])
    assert rc == 2
    err = capsys.readouterr().err
    assert "--device: expected" in err and "no CUDA device" in err
