"""Files that ship inside the package, so that an installed wheel has an input to try."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from analysis.validation import ParameterError

__all__ = ["EXAMPLE_FILES", "example_file"]

#: The bundled files (package data of ``analysis.datasets``; pyproject.toml lists them).
EXAMPLE_FILES: tuple[str, ...] = ("minilm_l64_4heads.npy",)


def example_file(name: str = "minilm_l64_4heads.npy") -> Path:
    """The path of a file bundled with the package (it travels in the wheel).

    ``minilm_l64_4heads.npy`` is real, not made up: four 64 x 64 attention matrices of
    all-MiniLM-L6-v2 (the same bytes as the repository's ``data/examples`` copy), the
    input of ``make example``. Unlike the repository's copy it is there after
    ``pip install attnrank-X.whl``.

    Parameters
    ----------
    name : str, default "minilm_l64_4heads.npy"
        One of :data:`EXAMPLE_FILES`.

    Returns
    -------
    pathlib.Path
        The installed file (read it; do not write there).

    Raises
    ------
    ParameterError
        When ``name`` is not a bundled file.

    Examples
    --------
    >>> import numpy as np
    >>> from analysis.datasets import example_file
    >>> A = np.load(example_file())
    >>> A.shape, bool(np.allclose(A.sum(-1), 1.0))
    ((4, 64, 64), True)

    From the shell: ``attnrank bracket "$(python -c 'from analysis.datasets import
    example_file; print(example_file())')" --eps 0.1 --out brackets.json``.
    """
    if name not in EXAMPLE_FILES:
        raise ParameterError("name", f"one of {list(EXAMPLE_FILES)}", name)
    path = Path(str(resources.files("analysis.datasets").joinpath(name)))
    if not path.is_file():  # a wheel built without its package data
        raise FileNotFoundError(f"{path}: the package was installed without its data files")
    return path
