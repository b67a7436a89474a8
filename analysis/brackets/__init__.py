"""Certified brackets for the max-row-l1 approximation rank ``r_eps(A)``.

Takes arrays, returns profiles and witnesses; knows nothing of models, stores or studies.
:mod:`analysis.brackets.profile` holds the profiles, :mod:`analysis.brackets.search` the
search that computes them, :mod:`analysis.brackets.settings` the search's frozen settings.
The search has versions (:data:`ENGINE_VERSIONS`, the default the newest,
:data:`LATEST_ENGINE`; :mod:`analysis.brackets.versions`, log in docs/results/engine.md).
"""

from analysis.brackets.profile import Bracket, LowerWitness, Profile, UpperWitness
from analysis.brackets.search import (
    close_brackets,
    profile_matrices,
    profile_matrix,
    profile_temperatures,
)
from analysis.brackets.settings import EFFORTS, SearchSettings, search_settings, settings_sha256
from analysis.brackets.verify import certified_lower_margin, certified_upper_error
from analysis.brackets.versions import (
    ENGINE_VERSIONS,
    LATEST_ENGINE,
    EngineSpec,
    check_engine,
    engine_spec,
)

__all__ = [
    "EFFORTS",
    "ENGINE_VERSIONS",
    "LATEST_ENGINE",
    "Bracket",
    "EngineSpec",
    "LowerWitness",
    "Profile",
    "SearchSettings",
    "UpperWitness",
    "certified_lower_margin",
    "certified_upper_error",
    "check_engine",
    "close_brackets",
    "engine_spec",
    "profile_matrices",
    "profile_matrix",
    "profile_temperatures",
    "search_settings",
    "settings_sha256",
]
