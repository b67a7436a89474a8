"""The package's public surface: what benchmarks, docs and the CLI import."""

import importlib

import analysis.laws as laws
from analysis.cli import GROUPS


def test_every_public_name_resolves():
    assert all(hasattr(laws, name) for name in laws.__all__)
    for mod in ("sweep", "fit", "theory", "render"):
        m = importlib.import_module(f"analysis.laws.{mod}")
        assert all(hasattr(m, name) for name in m.__all__), mod


def test_names_the_benchmarks_use():
    from analysis.laws import (  # noqa: F401
        DEFAULT_BETAS,
        QUICK_TOLERANCE,
        harmonic_rank,
        make_config,
        run_laws,
    )


def test_the_subcommand_module_is_registered():
    assert "analysis.cli.laws" in GROUPS
    assert hasattr(importlib.import_module("analysis.cli.laws"), "register")
