"""How to cite and what changed (issue 53): CITATION.cff, the README's BibTeX and the
changelog agree with the package's one version."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

import analysis

ROOT = Path(__file__).resolve().parents[1]


def test_citation_file_cites_this_software():
    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text(encoding="utf-8"))
    assert cff["cff-version"] == "1.2.0" and cff["type"] == "software"
    assert cff["title"].startswith("attnrank")
    assert cff["authors"] == [{"name": "attnrank developers"}]
    assert cff["version"] == analysis.__version__
    assert cff["license"] == "MIT"


def test_readme_bibtex_matches_the_citation_file():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    (block,) = re.findall(r"```bibtex\n(.*?)```", readme, flags=re.DOTALL)
    assert block.startswith("@software{attnrank,")
    assert re.search(r"author\s*=\s*\{\{attnrank developers\}\}", block)
    assert re.search(rf"version\s*=\s*\{{{re.escape(analysis.__version__)}\}}", block)


def test_changelog_has_a_section_for_this_version():
    text = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    versions = re.findall(r"^## \[([^\]]+)\]", text, flags=re.MULTILINE)
    assert versions[0] == "Unreleased" and analysis.__version__ in versions
    assert "keepachangelog.com" in text
