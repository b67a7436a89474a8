"""Stages 1 and 2: extract the design's inputs and synthetic matrices, bracket them.

Each stage takes the :class:`~analysis.study.core.Study` and the open store, skips what is
stored, and returns what the next stage needs.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from analysis.executor import RunSpec
from analysis.progress import CostBar
from analysis.study.core import Study
from analysis.study.plan import DEFAULT_TEXT_CORPUS, ExtractionTask, SyntheticTask
from analysis.validation import ParameterError

__all__ = ["bracket_stage", "extract_input", "extract_stage", "synthetic_matrix", "synthetic_stage"]


def _extraction_done(entry: Any, store: Any) -> bool:
    return bool(entry) and all(store.has_matrix(k) for k in entry["keys"])


def extract_stage(
    study: Study,
    store: Any,
    checkpoint_paths: Mapping[str, Any],
    progress: bool,
    say: Callable[[str], None],
) -> list[str]:
    """Extract what is not stored yet; return every real matrix key of the plan.

    Examples
    --------
    An extraction runs a checkpoint's forward passes (its weights, seconds to minutes), so
    this example shows only the contract on a checkpoint that is not on disk: the stage
    stops before it stores anything (``Study.check_checkpoints`` says so earlier, for
    every checkpoint at once).

    >>> from analysis.store import Store
    >>> from analysis.study.stages import extract_stage
    >>> from analysis.datasets import open_example_study
    >>> study = open_example_study("studies/extract.toml")
    >>> with Store(study.paths.store, create=True) as store:
    ...     extract_stage(study, store, {}, progress=False, say=print)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    analysis.validation.ParameterError: checkpoint: expected a local directory with config.json and weights; ...; or a Hugging Face id in the local cache ... (offline, and not in the cache) ..., got ...
    >>> study.extractions.entry("org/tiny|L=16|corpus-seed=0") is None
    True
    """
    from analysis.sources.checkpoints import load_checkpoint

    plan, index = study.plan, study.extractions
    keys: list[str] = []
    todo = [t for t in plan.extractions if not _extraction_done(index.entry(t.label), store)]
    for t in plan.extractions:
        if t not in todo:
            keys.extend(index.entry(t.label)["keys"])
    if not todo:
        return keys
    by_ckpt: dict[str, list[ExtractionTask]] = {}
    for t in todo:
        by_ckpt.setdefault(t.checkpoint, []).append(t)
    # an input's forward pass ~ its length (one pass; the weights loaded once per checkpoint)
    bar = CostBar(
        [float(max(t.length, 1)) for t in todo], desc="extract", unit="inputs", disable=not progress
    )
    try:
        for ck, tasks in by_ckpt.items():
            bar.note(f"loading {ck}")
            model = load_checkpoint(checkpoint_paths.get(ck, ck))
            for t in tasks:
                ex = extract_input(model, t, stand_in=ck in checkpoint_paths)
                new = store.add_extraction(ex, heads=t.heads)
                index.record_input(t.label, ex.input_id, new)
                keys.extend(new)
                bar.advance(float(max(t.length, 1)), note="")
            del model
    finally:
        bar.close()
    say(f"extract: {len(todo)} inputs extracted, {len(plan.extractions) - len(todo)} stored")
    return keys


def extract_input(model: Any, task: ExtractionTask, *, stand_in: bool = False) -> Any:
    """The extraction of one planned input: ``model`` (a loaded checkpoint) on the
    corpus input of ``task``'s seed and length (a speech encoder's generated clip, an
    image for a vision model, text otherwise).

    The extract stage stores what it returns; the atlas re-derives a cell's matrix from
    the sources with it (:func:`analysis.atlas.reverify_rows`), so both run one path.

    Parameters
    ----------
    model : analysis.sources.checkpoints.Checkpoint
        The checkpoint of ``task`` (or a stand-in for it), loaded.
    task : ExtractionTask
    stand_in : bool, keyword-only
        ``model`` was loaded from a local folder standing in for ``task.checkpoint``: its
        records carry the design's id (the folder's own in ``meta["stand_in"]``).

    Returns
    -------
    analysis.sources.checkpoints.Extraction

    Raises
    ------
    ParameterError
        Naming ``checkpoint`` when ``model`` is another checkpoint than the task's and
        not a stand-in.

    Examples
    --------
    A forward pass needs a checkpoint's weights (:func:`extract_stage` runs it on every
    planned input); here only the refusal of another checkpoint, given a stand-in
    object whose extraction names another id:

    >>> from types import SimpleNamespace
    >>> from unittest import mock
    >>> from analysis.study.plan import ExtractionTask, SyntheticTask
    >>> from analysis.study.stages import extract_input
    >>> task = ExtractionTask("org/tiny", 16, 0, ((0, 0),))
    >>> other = SimpleNamespace(checkpoint_id="org/other", meta={"checkpoint": "org/other"})
    >>> with mock.patch("analysis.sources.inputs.corpus_text"), mock.patch(
    ...     "analysis.sources.checkpoints.extract_from_model", return_value=other
    ... ):
    ...     text_model = SimpleNamespace(forward=lambda input_ids: None)  # not a speech encoder
    ...     extract_input(SimpleNamespace(is_vision=False, model=text_model), task)
    Traceback (most recent call last):
        ...
    analysis.validation.ParameterError: checkpoint: expected a checkpoint resolving to org/tiny, got 'org/other'
    """
    from analysis.sources import audio, inputs
    from analysis.sources.checkpoints import extract_from_model

    ck = task.checkpoint
    if audio.is_audio(model):  # a speech encoder: the seed's clip of its speech corpus
        mi = audio.corpus_audio(model, task.corpus_seed, task.length, corpus=task.speech_corpus)
    elif model.is_vision:
        mi = inputs.corpus_image(
            model,
            task.corpus_seed,
            task.length,
            crop=task.image_crop,
            corpus=task.image_corpus,
        )
    elif task.text_corpus != DEFAULT_TEXT_CORPUS:  # a packaged corpus: document seed mod n
        from analysis.sources.corpora import packaged_text

        mi = packaged_text(model, task.corpus_seed, task.length, corpus=task.text_corpus)
    else:
        mi = inputs.corpus_text(model, task.corpus_seed, task.length)
    ex = extract_from_model(model, mi)
    if ex.checkpoint_id != ck and stand_in:
        # a stand-in folder: its records carry the design's id
        meta = {**ex.meta, "checkpoint": ck, "stand_in": ex.meta.get("checkpoint")}
        ex = dataclasses.replace(ex, meta=meta)
    elif ex.checkpoint_id != ck:
        raise ParameterError("checkpoint", f"a checkpoint resolving to {ck}", ex.checkpoint_id)
    return ex


def synthetic_matrix(task: SyntheticTask) -> Any:
    """The synthetic matrix of a planned task, generated from its family and parameters.

    The synthetic stage stores it; the atlas re-derives a synthetic cell's matrix with it.

    Examples
    --------
    The generator is seeded, so the same task gives the same matrix:

    >>> import numpy as np
    >>> from analysis.study.plan import SyntheticTask
    >>> from analysis.study.stages import synthetic_matrix
    >>> task = SyntheticTask("ball", n=8, d=2, beta=4.0, seed=1)
    >>> m = synthetic_matrix(task)
    >>> m.family, m.params, bool(np.array_equal(m.A, synthetic_matrix(task).A))
    ('ball', {'n': 8, 'd': 2, 'beta': 4.0, 'seed': 1}, True)
    """
    from analysis.sources import synthetic

    make = {"spherical": synthetic.spherical, "ball": synthetic.full_ball}
    if task.family not in make:
        raise ParameterError("family", f"one of {sorted(make)}", task.family)
    return make[task.family](task.n, task.d, task.beta, random_state=task.seed)


def synthetic_stage(study: Study, store: Any) -> list[str]:
    """Store the design's synthetic matrices not stored yet; return every synthetic key.

    Examples
    --------
    A design with two synthetic matrices (the ball family, n = 8, d = 2, beta 1 and 4):

    >>> from analysis.store import Store
    >>> from analysis.study.stages import synthetic_stage
    >>> from analysis.datasets import open_example_study
    >>> study = open_example_study("studies/synthetic.toml", synthetic=True)
    >>> with Store(study.paths.store, create=True) as store:
    ...     keys = synthetic_stage(study, store)
    ...     again = synthetic_stage(study, store)  # all stored: nothing added
    ...     records = [store.matrix(k) for k in keys]
    >>> len(keys), again == keys
    (2, True)
    >>> [(r.meta["family"], r.meta["params"]) for r in records]
    [('ball', {'beta': 1.0, 'd': 2, 'n': 8, 'seed': 0}),
     ('ball', {'beta': 4.0, 'd': 2, 'n': 8, 'seed': 0})]
    >>> study.extractions.synthetic_key("ball|n=8|d=2|beta=4.0|seed=0") == keys[1]
    True
    """
    known = study.extractions.synthetic()
    keys, changed = [], False
    for t in study.plan.synthetic:
        key = known.get(t.label)
        if key is None or not store.has_matrix(key):
            key = store.add_synthetic(synthetic_matrix(t))
            known[t.label] = key
            changed = True
        keys.append(key)
    if changed:
        study.extractions.save()
    return keys


def bracket_stage(
    study: Study,
    store: Any,
    real_keys: Sequence[str],
    synth_keys: Sequence[str],
    *,
    engine: Any,
    run: RunSpec,
    say: Callable[[str], None] = print,
) -> int:
    """Profile real matrices at every design temperature, synthetic ones at t = 1.

    Every stored profile of the plan is re-verified against its matrix before it is kept
    (:func:`analysis.store.run_brackets`), so the brackets the study reads next are
    certified; those that fail are recomputed, and their number goes to ``say``.

    Before the first bracket, the store records that outcomes exist and the lock hash
    they are computed under (:meth:`analysis.store.Store.record_outcomes`; the first
    record is kept).

    ``run`` (:class:`analysis.executor.RunSpec`) says where the profiles are computed (a
    caller's executor, processes, a device). ``engine`` (an
    :class:`analysis.store.engine.BracketEngine`; None: the package's engine of the
    version the design pins, :meth:`Study.bracket_engine`) is passed to the store; the
    package's engine of another version is refused (a ParameterError naming ``engine``):
    a study's profiles are its pinned engine's, never another's.

    Returns the number of profiles computed or extended.

    Examples
    --------
    The two synthetic matrices of a small design, bracketed at t = 1 (no real matrix is
    extracted here):

    >>> from analysis.store import Store
    >>> from analysis.study.stages import bracket_stage, synthetic_stage
    >>> from analysis.datasets import open_example_study
    >>> study = open_example_study("studies/brackets.toml", synthetic=True)
    >>> from analysis.executor import RunSpec
    >>> kw = dict(engine=None, run=RunSpec(progress=False))
    >>> with Store(study.paths.store, create=True) as store:
    ...     keys = synthetic_stage(study, store)
    ...     computed = bracket_stage(study, store, [], keys, **kw)
    ...     again = bracket_stage(study, store, [], keys, **kw)  # stored and re-verified
    ...     cells = store.cells()
    ...     outcomes = store.outcome_record()
    >>> computed, again  # one profile per matrix, then none
    (2, 0)
    >>> len(cells), sorted(set(cells["eps"])), bool((cells["lo"] <= cells["hi"]).all())
    (4, [0.1, 0.2], True)
    >>> outcomes["lock_sha256"] == study.lock.sha256, outcomes["design"]
    (True, 'brackets.toml')
    """
    from analysis.brackets.engine import Engine
    from analysis.store.run import reverify_note, run_brackets, stale_note

    engine = study.bracket_engine() if engine is None else engine
    if isinstance(engine, Engine) and engine.number != study.engine:
        raise ParameterError(
            "engine",
            f"the engine the design pins ({study.engine}); changing it is an amendment "
            f"(`attnrank prereg amend {study.design.path} --reason ... --numbers ...`)",
            engine.number,
        )
    plan = study.plan
    if real_keys or synth_keys:
        # before the first bracket: from now on outcomes exist, and the lock they are
        # computed under can be neither reset nor amended in its core (prereg lock/amend)
        from analysis.study.outcomes import bind_outcomes

        design = study.design
        record = store.record_outcomes(
            lock_sha256=study.lock.sha256,
            design=design.path.name,
            design_path=str(design.path.resolve()),
            design_sha256=design.sha256,
        )
        bind_outcomes(design.path, record)  # FILE.outcomes.json: seen whatever --root says
    n = dropped = stale = 0
    for keys, temps in ((real_keys, plan.temperatures), (synth_keys, (1.0,))):
        if keys:
            s = run_brackets(
                store,
                plan.eps,
                temperatures=temps,
                effort=plan.effort,
                engine=engine,
                matrix_keys=keys,
                run=run,
            )
            n += s.computed + s.extended
            dropped += s.dropped
            stale += s.stale
    for note in (reverify_note(dropped), stale_note(stale)):
        if note:
            say(f"brackets: {note}")
    return n
