"""Descriptor blocks: registry, baseline, native and intrinsic geometry, plugins."""
