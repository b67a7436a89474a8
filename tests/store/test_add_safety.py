"""``store add`` under a failure, a concurrent add, a damaged index or bad arrays (issue 52).

A failed first add removes only what it created; one add holds the index's write lock
from its check to its insert; an index that is not an SQLite file and arrays that are
not numbers are refused in one line naming the file or the array.
"""

from __future__ import annotations

from analysis.cli import main
from analysis.store import Store
from tests.cli.conftest import write_extract


def _interrupt_after_first_array(monkeypatch) -> None:
    """Ctrl-C right after the add's first array file is written (before its index row)."""
    import analysis.store.store as store_module

    def interrupted(path):
        raise KeyboardInterrupt

    monkeypatch.setattr(store_module, "file_sha256", interrupted)


def test_a_failed_first_add_keeps_the_users_arrays_folder(tmp_path, monkeypatch):
    root = tmp_path / "proj"
    (root / "arrays" / "mine").mkdir(parents=True)
    (root / "arrays" / "results.txt").write_text("precious")
    (root / "notes.txt").write_text("mine too")
    before = sorted(p.relative_to(root) for p in root.rglob("*"))
    extract = write_extract(tmp_path / "x.npz")
    _interrupt_after_first_array(monkeypatch)
    assert main(["store", "add", str(root), str(extract)]) == 130
    # the user's folders and files stay; what the add created (index, arrays/<k[:2]>/) goes
    assert sorted(p.relative_to(root) for p in root.rglob("*")) == before
    assert (root / "arrays" / "results.txt").read_text() == "precious"


def test_a_failed_first_add_removes_the_folder_it_created(tmp_path, monkeypatch):
    root = tmp_path / "new" / "store"
    extract = write_extract(tmp_path / "x.npz")
    _interrupt_after_first_array(monkeypatch)
    assert main(["store", "add", str(root), str(extract)]) == 130
    assert not root.exists()
    monkeypatch.undo()
    assert main(["store", "add", str(root), str(extract)]) == 0
    with Store(root) as store:
        assert len(store.matrices()) == 2
