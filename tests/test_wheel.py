"""The wheel a user builds (issue 53, item 8): ``python -m build`` makes attnrank-X.whl with
``py.typed`` and every data file of the package, and the wheel, installed into a fresh
virtual environment outside the repository, runs ``attnrank --help``, ``import analysis``
and ``attnrank bracket`` on the bundled example."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

import analysis
from analysis.datasets import EXAMPLE_FILES, example_file

ROOT = Path(__file__).resolve().parents[1]
#: What a wheel is built from: the sdist's inputs, not the checkout's other folders.
SOURCES = ("pyproject.toml", "README.md", "LICENSE", "analysis")


def data_files() -> list[str]:
    """Every non-Python file under analysis/ in the checkout (wheel paths)."""
    return sorted(
        p.relative_to(ROOT).as_posix()
        for p in (ROOT / "analysis").rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and p.suffix not in {".py", ".pyc"}
    )


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    # built from a copy: a stale build/ folder in the checkout cannot leak into the wheel,
    # and the checkout gets no build/ or egg-info of its own
    src = tmp_path_factory.mktemp("src")
    for name in SOURCES:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, src / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(ROOT / name, src / name)
    out = tmp_path_factory.mktemp("dist")
    # --no-isolation: the setuptools and build of the dev extra, nothing downloaded
    cmd = [sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(out)]
    subprocess.run([*cmd, str(src)], check=True, capture_output=True, text=True)
    (found,) = out.glob("*.whl")
    return found


@pytest.mark.slow
def test_wheel_carries_py_typed_and_the_package_data(wheel):
    assert wheel.name == f"attnrank-{analysis.__version__}-py3-none-any.whl"
    names = set(zipfile.ZipFile(wheel).namelist())
    wanted = data_files()
    assert "analysis/py.typed" in wanted
    assert {f"analysis/datasets/{n}" for n in EXAMPLE_FILES} <= set(wanted)
    assert [f for f in wanted if f not in names] == []
    assert not any(n.startswith(("tests/", "benchmarks/", "experiments/", "data/")) for n in names)


@pytest.mark.slow
def test_wheel_runs_outside_the_repository(wheel, tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    py = venv / "bin" / "python"
    site = Path(
        subprocess.run(
            [str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
    )
    # the dependencies from this environment (its path only: not its editable attnrank)
    (site / "deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n", encoding="utf-8")
    pip = [sys.executable, "-m", "pip", "--python", str(py), "install", "-q", "--no-deps"]
    subprocess.run([*pip, "--no-index", str(wheel)], check=True)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    home = tmp_path / "elsewhere"
    home.mkdir()

    def run(*args: str) -> str:
        done = subprocess.run(args, cwd=home, env=env, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        return done.stdout

    assert "attnrank bracket FILE" in run(str(venv / "bin" / "attnrank"), "--help")
    code = "import analysis; print(analysis.__version__); print(analysis.__file__)"
    version, where = run(str(py), "-c", code).split()
    assert version == analysis.__version__
    assert Path(where).resolve().is_relative_to(venv.resolve())  # the wheel's, not ours
    code = "from analysis.datasets import example_file; print(example_file())"
    example = run(str(py), "-c", code).strip()
    assert Path(example).resolve().is_relative_to(venv.resolve())
    out = home / "brackets.json"
    bracket = ("bracket", example, "--eps", "0.2", "--effort", "fast", "--quiet", "--out")
    run(str(venv / "bin" / "attnrank"), *bracket, str(out))
    assert len(json.loads(out.read_text())["matrices"]) == 4


def test_bundled_example_is_the_repository_copy():
    bundled = example_file().read_bytes()
    assert bundled == (ROOT / "data" / "examples" / "minilm_l64_4heads.npy").read_bytes()
