"""attnrank: certified max-row-l1 approximation ranks of softmax attention.

Stages (each a subpackage with one job): ``sources`` -> ``store`` -> ``brackets`` ->
``descriptors`` -> ``prereg`` / ``compare`` -> ``report``.
"""

__version__ = "0.1.0"
