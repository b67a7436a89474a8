"""The schema table of docs/guide/atlas.md is the module's (analysis.atlas.COLUMNS)."""

from __future__ import annotations

import re
from pathlib import Path

from analysis.atlas import COLUMNS, SCHEMA_VERSION

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "guide" / "atlas.md"
ROW = re.compile(r"^\| `(?P<column>[a-z0-9_]+)` \| (?P<dtype>\S+) \| (?P<meaning>.*) \|$")


def test_the_guides_schema_table_is_the_modules():
    text = GUIDE.read_text(encoding="utf-8")
    rows = [m.groupdict() for line in text.splitlines() if (m := ROW.match(line))]
    assert [(r["column"], r["dtype"], r["meaning"]) for r in rows] == [
        (name, dtype, meaning) for name, (dtype, meaning) in COLUMNS.items()
    ]
    assert f"## Schema (version {SCHEMA_VERSION})" in text
