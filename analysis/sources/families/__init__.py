"""Loaders for checkpoints that are not a transformers folder on disk.

Each module turns the verified files of one kind of packaged checkpoint
(:mod:`analysis.sources.packaged`) into a :class:`~analysis.sources.checkpoints.Checkpoint`
whose model runs eager attention, so the capture in :mod:`analysis.sources.checkpoints`
works on it unchanged.
"""
