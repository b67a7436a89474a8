"""Every ``python`` code block of ``docs/guide/*.md`` runs.

The blocks of one page run in order in one namespace (a later block may use what an earlier
one defined), in a temporary folder holding a link to the repository's ``data/``. Blocks
fenced as anything else (``bash``, or no language: commands and printed output) are not
Python and are not run. A ``python`` block that cannot run here (it needs a cluster or a
scheduler) says so on the line just above its fence::

    <!-- not run: needs dask-jobqueue and a SLURM scheduler -->

and is only compiled, so a syntax error in it still fails.
"""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
GUIDE = ROOT / "docs" / "guide"
FENCE = re.compile(
    r"^(?P<indent>[ \t]*)```(?P<lang>[\w-]*)[ \t]*\n(?P<body>.*?)^(?P=indent)```[ \t]*$",
    re.MULTILINE | re.DOTALL,
)
NOT_RUN = re.compile(r"<!--\s*not run:\s*(?P<why>\S.*?)\s*-->\s*$")


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


def _has_python(page: Path) -> bool:
    return any(lang == "python" for _, lang, _, _ in code_blocks(page.read_text()))


PAGES = sorted(p for p in GUIDE.glob("*.md") if _has_python(p))


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


def test_the_guide_has_python_blocks_that_run():
    run = [b for p in PAGES for b in code_blocks(p.read_text()) if b[1] == "python" and not b[3]]
    assert len(run) >= 2
    assert {p.name for p in PAGES} >= {"brackets.md", "study.md"}


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_python_blocks_run(page, tmp_path, monkeypatch):
    (tmp_path / "data").symlink_to(ROOT / "data")
    monkeypatch.chdir(tmp_path)
    namespace: dict = {"__name__": f"docs_{page.stem}"}
    blocks = [b for b in code_blocks(page.read_text()) if b[1] == "python"]
    for line, _, code, why in blocks:
        compiled = compile(code, f"{page.relative_to(ROOT)}:{line}", "exec")
        if why is None:
            exec(compiled, namespace)
    assert blocks  # the page was chosen for its python blocks


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
