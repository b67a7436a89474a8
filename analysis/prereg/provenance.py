"""Provenance of a lock: the git commit checked out where the design lives.

Recorded in every lock (``provenance.git_commit``) and outside its hash: provenance only.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

__all__ = ["git_commit"]


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
