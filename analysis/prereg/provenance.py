"""Provenance of a lock: the git commit checked out where the design lives, and the hash of
the design's stored power file.

Recorded in every lock (``provenance.git_commit``, ``power_sha256``) and outside its hash.
The lock only hashes the power file beside the design; :mod:`analysis.power.file` reads and
writes it.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from analysis.hashing import file_sha256

__all__ = ["git_commit", "power_path", "power_sha256"]


def git_commit(where: Path) -> str | None:
    """The commit checked out at ``where`` (None outside a git checkout or without git).

    Parameters
    ----------
    where : Path
        A folder.

    Returns
    -------
    str or None
        The full commit hash (``git rev-parse HEAD``).

    Examples
    --------
    A new repository with one empty commit:

    >>> import subprocess
    >>> from pathlib import Path
    >>> from analysis.prereg.provenance import git_commit
    >>> repo = Path("repository")
    >>> git = ["git", "-C", str(repo), "-c", "user.name=x", "-c", "user.email=x@x"]
    >>> _ = subprocess.run(["git", "init", "-q", str(repo)], check=True)
    >>> _ = subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", "m"], check=True)
    >>> log = subprocess.run([*git, "log", "--format=%H"], capture_output=True, text=True)
    >>> git_commit(repo) == log.stdout.strip(), len(git_commit(repo))
    (True, 40)
    >>> git_commit(Path("no such folder")) is None
    True
    """
    try:
        out = subprocess.run(
            ["git", "-C", str(where), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return (out.stdout.strip() or None) if out.returncode == 0 else None


def power_path(design_path: str | os.PathLike) -> Path:
    """``<stem>.power.json`` beside the design.

    Examples
    --------
    >>> power_path("preregistration/offline-minilm.toml").as_posix()
    'preregistration/offline-minilm.power.json'
    """
    p = Path(design_path)
    return p.with_name(p.stem + ".power.json")


def power_sha256(design_path: str | os.PathLike) -> str | None:
    """SHA-256 of the design's stored power file (its bytes); None when there is none.

    Examples
    --------
    >>> import hashlib
    >>> power_sha256("pf-none.toml") is None
    True
    >>> _ = power_path("pf-sha.toml").write_bytes(b"{}")
    >>> power_sha256("pf-sha.toml") == hashlib.sha256(b"{}").hexdigest()
    True
    """
    p = power_path(design_path)
    if not p.is_file():
        return None
    return file_sha256(p)
