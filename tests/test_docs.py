"""Every code block of ``docs/**/*.md`` is run or says why not.

``python`` blocks run: the blocks of one page in order in one namespace (a later block may
use what an earlier one defined), in a temporary folder holding a link to the repository's
``data/`` and a copy of ``docs/`` (a block that writes a shipped table or figure writes the
copy; a written ``.csv``, ``.json`` or ``.md`` must then equal the shipped file). A block
whose first line is a comment naming a Python file (``# my_descriptors.py ...``) is also
written to that file in the folder, which is on ``sys.path``, so a later block can import
it. ``bash`` blocks run too, each on its own (``bash -e -o pipefail``, at most
:data:`BASH_TIMEOUT` seconds) in such a folder, with the package's command line first on
``PATH`` (the ``attnrank`` entry point of the interpreter's ``bin``, running this checkout's
``analysis``); what they write under ``docs/`` is compared the same way. A block that cannot
run here (a template whose file names stand for the reader's own, a study or benchmark of
minutes to hours, a GPU, optional weights, a cluster) says why on the line just above its
fence and is only checked (``bash -n``; a ``python`` block is compiled), so a syntax error
still fails::

    <!-- not run: needs dask-jobqueue and a SLURM scheduler -->

Blocks fenced with no language are printed output or file trees, not code.
"""

from __future__ import annotations

import filecmp
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
FENCE = re.compile(
    r"^(?P<indent>[ \t]*)```(?P<lang>[\w-]*)[ \t]*\n(?P<body>.*?)^(?P=indent)```[ \t]*$",
    re.MULTILINE | re.DOTALL,
)
NOT_RUN = re.compile(r"<!--\s*not run:\s*(?P<why>\S.*?)\s*-->\s*$")
FILE_BLOCK = re.compile(r"\A#\s*(?P<name>\w+\.py)\b")
#: Files a page's blocks may write over in the docs copy only if they come out the same.
COMPARED = (".csv", ".json", ".md")
#: Seconds a run ``bash`` block may take: each takes 5-20 s on an idle core (an extraction
#: of packaged weights, a fast bracket); the margin is for a loaded host (at load average 8
#: on 2 cores they took 90 s to over 3 minutes). A hang still fails.
BASH_TIMEOUT = 600


def code_blocks(text: str) -> list[tuple[int, str, str, str | None]]:
    """``(line, language, code, reason not run or None)`` of each fenced block."""
    out = []
    for m in FENCE.finditer(text):
        line = text.count("\n", 0, m.start()) + 1
        before = text[: m.start()].rstrip("\n").rsplit("\n", 1)[-1]
        skip = NOT_RUN.search(before)
        code = textwrap.dedent(m["body"])
        out.append((line, m["lang"], code, skip["why"] if skip else None))
    return out


def _blocks(lang: str) -> list[tuple[Path, int, str, str | None]]:
    return [
        (page, line, code, why)
        for page in sorted(DOCS.rglob("*.md"))
        for line, language, code, why in code_blocks(page.read_text(encoding="utf-8"))
        if language == lang
    ]


PAGES = sorted({page for page, *_ in _blocks("python")})
BASH = _blocks("bash")


def _id(page: Path, line: int | None = None) -> str:
    rel = str(page.relative_to(DOCS))
    return rel if line is None else f"{rel}:{line}"


def test_the_parser_sees_fences_languages_and_markers():
    text = (
        "x\n```python\na = 1\n```\n\n1. item\n\n   ```python\n   b = a + 1\n   ```\n"
        "<!-- not run: needs a cluster -->\n```python\nc = 3\n```\n```bash\nls\n```\n"
    )
    blocks = code_blocks(text)
    assert [(b[1], b[2], b[3]) for b in blocks] == [
        ("python", "a = 1\n", None),
        ("python", "b = a + 1\n", None),
        ("python", "c = 3\n", "needs a cluster"),
        ("bash", "ls\n", None),
    ]
    assert [b[0] for b in blocks] == [2, 8, 12, 15]


def test_the_docs_have_python_blocks_that_run():
    run = [b for b in _blocks("python") if not b[3]]
    assert len(run) >= 10
    assert {_id(p) for p in PAGES} >= {"guide/brackets.md", "guide/study.md", "descriptors.md"}


def _sandbox(tmp_path: Path) -> None:
    (tmp_path / "data").symlink_to(ROOT / "data")
    shutil.copytree(DOCS, tmp_path / "docs")


def _changed(tmp_path: Path) -> list[str]:
    """Files of the docs copy that differ from the shipped ones (of :data:`COMPARED` kinds)."""
    return [
        str(path.relative_to(tmp_path))
        for path in (tmp_path / "docs").rglob("*")
        if path.suffix in COMPARED
        and (ROOT / path.relative_to(tmp_path)).is_file()
        and not filecmp.cmp(path, ROOT / path.relative_to(tmp_path), shallow=False)
    ]


def _cli_env(tmp_path: Path) -> dict[str, str]:
    """The environment of a run bash block: the interpreter's ``bin`` (its ``attnrank``
    entry point, or a stand-in running ``python -m analysis.cli``) first on ``PATH``, and
    this checkout first on ``PYTHONPATH``."""
    dirs = [str(Path(sys.executable).parent)]
    if shutil.which("attnrank", path=dirs[0]) is None:  # not installed: a stand-in
        shim = tmp_path / ".bin" / "attnrank"
        shim.parent.mkdir()
        shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m analysis.cli "$@"\n')
        shim.chmod(0o755)
        dirs.insert(0, str(shim.parent))
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([*dirs, env.get("PATH", "")])
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [env.get("PYTHONPATH")])])
    return env


@pytest.mark.parametrize("page", PAGES, ids=[_id(p) for p in PAGES])
def test_python_blocks_run(page, tmp_path, monkeypatch):
    _sandbox(tmp_path)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    namespace: dict = {"__name__": f"docs_{page.stem}"}
    blocks = [b for b in code_blocks(page.read_text(encoding="utf-8")) if b[1] == "python"]
    for line, _, code, why in blocks:
        compiled = compile(code, f"{page.relative_to(ROOT)}:{line}", "exec")
        if why is not None:
            continue
        if file := FILE_BLOCK.match(code):
            (tmp_path / file["name"]).write_text(code, encoding="utf-8")
        exec(compiled, namespace)
    assert _changed(tmp_path) == [], "the blocks wrote files that differ from the shipped ones"


def test_the_docs_have_bash_blocks_that_run():
    assert len([b for b in BASH if not b[3]]) >= 4


@pytest.mark.parametrize(
    ("page", "line", "code", "why"), BASH, ids=[_id(p, line) for p, line, _, _ in BASH]
)
def test_bash_blocks_run_or_say_why_not(page, line, code, why, tmp_path):
    res = subprocess.run(["bash", "-n"], input=code, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    if why is not None:
        return
    _sandbox(tmp_path)
    res = subprocess.run(
        ["bash", "-e", "-o", "pipefail", "-c", code],
        cwd=tmp_path,
        env=_cli_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=BASH_TIMEOUT,
    )
    assert res.returncode == 0, f"{_id(page, line)} exited {res.returncode}:\n{res.stderr[-3000:]}"
    assert _changed(tmp_path) == [], "the block wrote files that differ from the shipped ones"


@pytest.mark.slow
def test_readme_python_example_runs(tmp_path, monkeypatch):
    """The README's Python example (a doctest: the import name and one bracket) runs as
    written and prints what it shows."""
    import doctest

    (tmp_path / "data").symlink_to(ROOT / "data")
    monkeypatch.chdir(tmp_path)
    result = doctest.testfile(
        str(ROOT / "README.md"), module_relative=False, optionflags=doctest.ELLIPSIS
    )
    assert result.attempted >= 4
    assert result.failed == 0
