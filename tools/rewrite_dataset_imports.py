"""Point every reference to the six ``analysis/*/examples.py`` at :mod:`analysis.datasets`.

One-off rewrite of issue 48 (the examples modules became one datasets package), kept so
it can be run again on a tree that still names the old modules::

    python3 tools/rewrite_dataset_imports.py          # from the repository root

It rewrites, in the ``.py`` and ``.md`` files of analysis/, tests/, docs/, benchmarks/,
experiments/ and README.md (not analysis/datasets/ itself):

1. ``from analysis.<stage>.examples import a, b`` (one line or parenthesized) to
   ``from analysis.datasets import a', b'`` with the names of :data:`RENAMES`;
2. a dotted reference ``analysis.<stage>.examples.name`` to ``analysis.datasets.name'``
   and a bare ``analysis.<stage>.examples`` to ``analysis.datasets``;
3. in a file where 1 or 2 named a renamed fixture, every whole-word use of its old name;
4. a line that is only a quoted old module name (an entry of tests/test_doctests.py's
   COVERED) is dropped.

It prints the files it changed and sorts the imports of the changed ``.py`` files outside
docstrings with ``ruff check --select I --fix`` when ruff is installed.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

OLD = r"analysis\.(?:atlas|brackets|compare|prereg|report|study)\.examples"
NEW = "analysis.datasets"
#: Old fixture name -> new name, where one module made a name unclear next to the others.
RENAMES = {
    "example_table": "example_comparison_table",  # compare: next to the study/head tables
    "example_design": "example_report_design",  # report: next to write_example_design
    "example_results": "example_study_results",  # report: a StudyResults
    "example_input": "example_matrix_input",  # brackets: a MatrixInput
    "example_result": "example_bracket_result",  # brackets: an `attnrank bracket` result
}
ROOTS = ("analysis", "tests", "docs", "benchmarks", "experiments", "README.md")
IMPORT = re.compile(rf"from {OLD} import (\([^)]*\)|[^\n]*)")
DOTTED = re.compile(rf"{OLD}(?:\.(\w+))?")
COVERED_ENTRY = re.compile(rf'^[ \t]*"{OLD}",[ \t]*\n', re.MULTILINE)


def _rename(name: str) -> str:
    return RENAMES.get(name, name)


def rewrite(text: str) -> str:
    """``text`` with every reference to an old examples module pointed at the datasets."""
    seen: set[str] = set()

    def imports(m: re.Match) -> str:
        names = m.group(1)
        for name in re.findall(r"\w+", names):
            seen.add(name)
        return f"from {NEW} import " + re.sub(r"\w+", lambda n: _rename(n.group()), names)

    def dotted(m: re.Match) -> str:
        if m.group(1) is None:
            return NEW
        seen.add(m.group(1))
        return f"{NEW}.{_rename(m.group(1))}"

    text = COVERED_ENTRY.sub("", text)
    text = IMPORT.sub(imports, text)
    text = DOTTED.sub(dotted, text)
    for old in sorted(seen & RENAMES.keys()):
        text = re.sub(rf"\b{old}\b", RENAMES[old], text)
    return text


def main() -> int:
    root = Path.cwd()
    files = []
    for top in ROOTS:
        path = root / top
        files += (
            [path] if path.is_file() else sorted(path.rglob("*.py")) + sorted(path.rglob("*.md"))
        )
    changed = []
    for path in files:
        rel = path.relative_to(root)
        if rel.parts[:2] == ("analysis", "datasets") or "__pycache__" in rel.parts:
            continue
        text = path.read_text(encoding="utf-8")
        new = rewrite(text)
        if new != text:
            path.write_text(new, encoding="utf-8")
            changed.append(rel)
    for rel in changed:
        print(rel)
    py = [str(p) for p in changed if p.suffix == ".py"]
    ruff = shutil.which("ruff") or str(Path(sys.executable).with_name("ruff"))
    if py and Path(ruff).exists():
        subprocess.run([ruff, "check", "--select", "I", "--fix", "-q", *py], check=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
