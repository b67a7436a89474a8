"""Certified brackets for the max-row-l1 approximation rank ``r_eps(A)``.

Takes arrays, returns profiles and witnesses; knows nothing of models, stores or studies.
:mod:`analysis.brackets.profile` holds the profiles, :mod:`analysis.brackets.search` the
search that computes them, :mod:`analysis.brackets.settings` the search's frozen settings.
"""

# Version of the witness search (not of the certificates, which the verifier fixes). The
# store records "analysis.brackets <version>" with every profile, so profiles from
# different searches are never mistaken for one another. 2: per-size ascent step,
# stall stop, exact LP polish of small lower witnesses, lower-search resolution.
# 3: closing pass on nearly closed brackets (multi-start lower witnesses, longer upper run).
# 4: temperatures of a head searched side by side (profile_temperatures; the store profiles
# a matrix's temperatures as one batch), optimizers on a torch device; see the log in
# docs/results/engine.md. Since engine 5 the search runs several versions side by side
# (analysis.brackets.versions: ENGINE_VERSIONS, engine_spec); this label still names
# engine 4, the one the store has recorded profiles of.
__version__ = "4"

__all__ = ["__version__"]

from analysis.brackets.profile import Bracket, LowerWitness, Profile, UpperWitness  # noqa: E402
from analysis.brackets.search import (  # noqa: E402
    close_brackets,
    profile_matrices,
    profile_matrix,
    profile_temperatures,
)
from analysis.brackets.settings import (  # noqa: E402
    EFFORTS,
    SearchSettings,
    search_settings,
    settings_sha256,
)
from analysis.brackets.verify import certified_lower_margin, certified_upper_error  # noqa: E402
from analysis.brackets.versions import (  # noqa: E402
    ENGINE_VERSIONS,
    LATEST_ENGINE,
    EngineSpec,
    check_engine,
    engine_spec,
)

__all__ += [
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
