"""Small made-up inputs for the documentation, like :mod:`sklearn.datasets`.

The ``Examples`` sections of the package start from these fixtures, so each example states
only what it shows: attention matrices (brackets), tidy tables of cells (compare, study),
design files and power inputs (prereg), study results (report) and an atlas. They are toys,
nothing here is a result (but for :func:`example_file`, real MiniLM heads bundled
with the package), and no stage imports them: the package sits on top of every
stage, as :mod:`analysis.study` does.
"""

from analysis.datasets import _designs, _files, _matrices, _results, _tables
from analysis.datasets._designs import *  # noqa: F403
from analysis.datasets._files import *  # noqa: F403
from analysis.datasets._matrices import *  # noqa: F403
from analysis.datasets._results import *  # noqa: F403
from analysis.datasets._tables import *  # noqa: F403

__all__ = sorted(
    _designs.__all__ + _files.__all__ + _matrices.__all__ + _results.__all__ + _tables.__all__
)
