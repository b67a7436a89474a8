"""Which version of each built-in descriptor block a design uses: ``[descriptors] versions``.

A built-in block may have several numbered versions (``native``: 1 and 2, version 2 over
the numerical ranks of Q and K; docs/method.md, "Native geometry"). A design names the
versions it uses in the optional table ``[descriptors] versions = {native = 2}``; a block
it does not name is at its method's default: version 1 for every block under method 2
(every design written before the key, the locked ones among them), ``native = 2`` under
``method = 3``. The lock pins each block's version hash as before, so a design on version
2 locks version 2's hash. The numbers are mirrored here from
``analysis.descriptors.builtin.BLOCK_VERSIONS`` so that validating a design imports no
descriptor code.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from analysis.prereg.options import design_method
from analysis.validation import ParameterError

__all__ = ["BLOCK_VERSIONS", "METHOD_DEFAULTS", "design_block_versions"]

#: Built-in block -> the versions it has (``analysis.descriptors.builtin.BLOCK_VERSIONS``).
BLOCK_VERSIONS: dict[str, tuple[int, ...]] = {
    "baseline": (1,),
    "baseline_plus": (1,),
    "native": (1, 2),
    "intrinsic": (1, 2, 3),
}

#: Design ``method`` -> the versions other than 1 its designs use unless they say.
METHOD_DEFAULTS: dict[int, dict[str, int]] = {2: {}, 3: {"native": 2}}


def design_block_versions(data: Mapping[str, Any]) -> dict[str, int]:
    """Built-in block -> the version the design uses, its ``[descriptors] versions`` checked.

    Parameters
    ----------
    data : mapping
        A parsed design (its ``method`` and ``[descriptors]`` are read).

    Returns
    -------
    dict
        Every built-in block, in :data:`BLOCK_VERSIONS` order: the design's version where
        it names one, else the default of its method (:data:`METHOD_DEFAULTS`), else 1.

    Raises
    ------
    ParameterError
        Naming ``descriptors.versions`` when it is not a table or names a block that is
        not built in, ``descriptors.versions.NAME`` for a version the block does not have.

    Examples
    --------
    >>> from analysis.prereg.descriptor_versions import design_block_versions
    >>> design_block_versions({})["native"], design_block_versions({"method": 3})["native"]
    (1, 2)
    >>> design_block_versions({"method": 3, "descriptors": {"versions": {"native": 1}}})
    {'baseline': 1, 'baseline_plus': 1, 'native': 1, 'intrinsic': 1}
    >>> design_block_versions({"descriptors": {"versions": {"native": 3}}})
    Traceback (most recent call last):
        ...
    analysis.validation.ParameterError: descriptors.versions.native: expected 1 or 2, got 3
    >>> design_block_versions({"descriptors": {"versions": {"intrinsic": 3}}})["intrinsic"]
    3
    >>> design_block_versions({"descriptors": {"versions": {"intrinsic": 4}}})
    Traceback (most recent call last):
        ...
    analysis.validation.ParameterError: descriptors.versions.intrinsic: expected 1 or 2 or 3, got 4
    """
    desc = data.get("descriptors", {})
    given = desc.get("versions", {}) if isinstance(desc, Mapping) else {}
    if not isinstance(given, Mapping):
        raise ParameterError(
            "descriptors.versions", "a table of built-in block versions {native = 2}", given
        )
    for name, version in given.items():
        if name not in BLOCK_VERSIONS:
            raise ParameterError(
                "descriptors.versions",
                "built-in block names (" + ", ".join(BLOCK_VERSIONS) + ")",
                name,
            )
        known = BLOCK_VERSIONS[name]
        if isinstance(version, bool) or not isinstance(version, int) or version not in known:
            raise ParameterError(
                f"descriptors.versions.{name}", " or ".join(map(str, known)), version
            )
    defaults = METHOD_DEFAULTS[design_method(data)]
    return {b: int(given.get(b, defaults.get(b, 1))) for b in BLOCK_VERSIONS}
