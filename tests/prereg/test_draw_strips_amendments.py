"""``prereg draw`` removes the amendment comments a design copied from a shipped one
carries (issue 53, item 10); keys and values stay as they were."""

from __future__ import annotations

import re
from pathlib import Path

from analysis.cli import main
from analysis.prereg.design import tomllib

SHIPPED = Path(__file__).resolve().parents[2] / "preregistration" / "offline-minilm.toml"


def test_draw_on_a_copied_small_design_strips_the_sources_amendment_comments(tmp_path, capsys):
    text = SHIPPED.read_text(encoding="utf-8")
    assert "# amended" in text
    # the study recipe's small design: three layers, four heads, one length, one eps
    text = re.sub(r"(?m)^heads = \[\"sentence.*\n", "", text, count=1)
    text = text.replace("layers = 6 ", "layers = [3, 4, 5] ").replace(
        "heads = 12 ", "heads = [0, 1, 2, 3] "
    )
    text = re.sub(r"(?m)^lengths = \[32, 64\]", "lengths = [32]", text)
    text = re.sub(r"(?m)^eps = \[0.05, 0.1, 0.2\]", "eps = [0.1]", text)
    path = tmp_path / "study" / "preregistration" / "small.toml"
    path.parent.mkdir(parents=True)
    path.write_text(text, encoding="utf-8")
    before = tomllib.loads(text)
    assert main(["prereg", "draw", str(path)]) == 0
    assert "removed 2 amendment comment(s)" in capsys.readouterr().out
    after_text = path.read_text(encoding="utf-8")
    assert "amended" not in after_text.lower()
    after = tomllib.loads(after_text)
    assert after["sampling"]["lengths"] == [32] and after["sampling"]["inputs"]["per_length"] == 2
    heads = after["held_out"].pop("heads")
    assert len(heads) == 3 and all(h.split(":")[1] in {"3", "4", "5"} for h in heads)
    assert after == before  # only the comments and the drawn heads changed
    assert main(["prereg", "lock", str(path)]) == 0
