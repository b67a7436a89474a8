"""The engine conformance kit: every shipped engine passes it, broken engines fail it by name."""

from __future__ import annotations

import dataclasses
import itertools

import numpy as np
import pytest

from analysis.brackets.check import CHECKS, EngineCheckError, check_bracket_engine
from analysis.brackets.engine import Engine, engine_for
from analysis.brackets.versions import ENGINE_VERSIONS
from analysis.validation import ParameterError


@pytest.mark.parametrize("version", ENGINE_VERSIONS)
def test_every_shipped_engine_passes_the_kit(version):
    assert check_bracket_engine(engine_for(version)) == CHECKS


# -- broken engines (module level, so that they pickle) ---------------------------------------
@dataclasses.dataclass
class Shifted:
    """A profile whose read-off claims ``hi - 1`` (or ``lo = 0`` with ``lo_only``)."""

    prof: object
    lo_only: bool = False

    def bracket(self, eps):
        lo, hi = self.prof.bracket(eps)
        return (0, hi) if self.lo_only else (min(lo, hi - 1), hi - 1)

    def reverify(self, A):
        return self.prof.reverify(A)

    def to_dict(self, **kw):
        return self.prof.to_dict(**kw)


class Wrapped:
    """Engine 5 with its profiles passed through :meth:`wrap`."""

    name, efforts = "broken", ("fast",)

    def __init__(self):
        self.inner, self.version = engine_for(5), "0"

    def wrap(self, prof, A):
        return prof

    def profile_batch(self, matrices, temperatures, **kw):
        profs = self.inner.profile_batch(matrices, temperatures, **kw)
        return [self.wrap(p, A) for p, A in zip(profs, matrices, strict=True)]

    def load_profile(self, d):
        return self.inner.load_profile(d)


class UpperTooSmall(Wrapped):
    def wrap(self, prof, A):
        return Shifted(prof)

    def load_profile(self, d):
        return Shifted(self.inner.load_profile(d))


class LoadsAnother(Wrapped):
    def load_profile(self, d):
        return Shifted(self.inner.load_profile(d))


class NotPicklable(Wrapped):
    def __init__(self):
        super().__init__()
        self.hook = lambda prof: prof


class Drifting(Wrapped):
    """Forgets its lower witnesses from the second call on."""

    def __init__(self):
        super().__init__()
        self.calls = itertools.count()

    def __getstate__(self):
        return {"inner": self.inner, "version": self.version}

    def __setstate__(self, state):
        self.__dict__ |= state
        self.calls = itertools.count()

    def wrap(self, prof, A):
        if next(self.calls):
            prof.lower.clear()
        return prof


class Float32Blind(Wrapped):
    def wrap(self, prof, A):
        if np.asarray(A).dtype == np.float32:
            prof.lower.pop(max(prof.lower))
        return prof


class Timid(Wrapped):
    """Sound but weak: never claims a lower end."""

    def wrap(self, prof, A):
        return Shifted(prof, lo_only=True)

    def load_profile(self, d):
        return Shifted(self.inner.load_profile(d), lo_only=True)


class Crashing(Wrapped):
    def profile_batch(self, matrices, temperatures, **kw):
        raise RuntimeError("out of memory")


class LoadFails(Wrapped):
    def load_profile(self, d):
        raise KeyError("upper")


class Nameless:
    version, efforts = "1", ("fast",)

    def profile_batch(self, *a, **kw):
        raise NotImplementedError

    def load_profile(self, d):
        raise NotImplementedError


@pytest.mark.parametrize(
    "engine, check, detail",
    [
        (Nameless(), "interface", "lacks name"),
        (Crashing(), "interface", "RuntimeError: out of memory"),
        (LoadFails(), "load_profile", "KeyError: 'upper'"),
        (NotPicklable(), "pickle", "PicklingError|AttributeError"),
        (Drifting(), "determinism", "two runs"),
        (UpperTooSmall(), "reverify", "no stored upper witness of rank <= "),
        (LoadsAnother(), "load_profile", "other brackets"),
        (Float32Blind(), "float32", "float32 input"),
        (Timid(), "known-answer", r"brackets \[\(0, 3\)"),
    ],
)
def test_a_broken_engine_fails_the_kit_naming_the_check(engine, check, detail):
    with pytest.raises(
        EngineCheckError, match=rf"check '{check}' failed for engine .*({detail})"
    ) as info:
        check_bracket_engine(engine)
    assert info.value.check == check
    assert isinstance(info.value, AssertionError)


def test_an_effort_the_engine_lacks_is_a_parameter_error():
    with pytest.raises(ParameterError, match=r"^effort: expected one of the engine's efforts"):
        check_bracket_engine(Engine(4), effort="quick")
