"""A small hand-made atlas for the documentation of :mod:`analysis.atlas`.

Real atlases come from :func:`analysis.atlas.build_atlas` on a study's store; this one has
the atlas's columns and made-up brackets, so the examples of the loader and the query run
without a study.
"""

from __future__ import annotations

import json

import pandas as pd

from analysis.atlas.schema import conform

__all__ = ["example_atlas"]


def example_atlas() -> pd.DataFrame:
    """12 cells at t = 1, eps = 0.1: ``org/a`` (2 layers) and ``org/b`` (4 layers), 2 heads each.

    The lower ends are chosen so that the lowest-rank layer is ``org/a``'s last (median
    lower end 2) and ``org/b``'s third (1.5); every other upper end is one above its
    lower end. Hashes are placeholders: these rows do not re-verify.

    Returns
    -------
    pandas.DataFrame
        The atlas's fixed columns and one feature column, ``native__kappa``.

    Examples
    --------
    >>> from analysis.datasets import example_atlas
    >>> atlas = example_atlas()
    >>> atlas.groupby("checkpoint")["layer"].nunique().to_dict()
    {'org/a': 2, 'org/b': 4}
    >>> atlas["lower"].tolist()
    [4, 6, 2, 2, 3, 5, 4, 4, 1, 2, 6, 8]
    """
    lowers = {("org/a", 2): [[4, 6], [2, 2]], ("org/b", 4): [[3, 5], [4, 4], [1, 2], [6, 8]]}
    rows = []
    for (ck, n_layers), layers in lowers.items():
        for layer, heads in enumerate(layers):
            for head, lo in enumerate(heads):
                i = len(rows)
                rows.append(
                    {
                        "design": "example",
                        "design_sha256": "d" * 64,
                        "lock_sha256": "l" * 64,
                        "cell_key": f"cell{i:02d}",
                        "matrix_key": f"matrix{i:02d}",
                        "source": "checkpoint",
                        "checkpoint": ck,
                        "synthetic_params": "",
                        "head_id": f"{ck}:{layer}:{head}",
                        "layer": layer,
                        "head": head,
                        "n_layers": n_layers,
                        "input_id": "corpus:example",
                        "corpus_seed": 0,
                        "length": 16,
                        "n_queries": 16,
                        "temperature": 1.0,
                        "eps": 0.1,
                        "lower": lo,
                        "upper": lo + i % 2,
                        "closed": i % 2 == 0,
                        "lower_method": "ascent",
                        "upper_method": "adam",
                        "engine": "analysis.brackets 4",
                        "engine_version": 4,
                        "effort": "fast",
                        "profile_eps": json.dumps([0.1]),
                        "search_temperatures": json.dumps([1.0]),
                        "profile_revision": 1,
                        "extract_threads": 1,
                        "array_sha256": "a" * 64,
                        "matrix_sha256": "m" * 64,
                        "held_out": head == 1 and layer == 0,
                        "in_comparison": True,
                        "native__kappa": 1.0 + 0.5 * lo,
                    }
                )
    return conform(pd.DataFrame(rows))
