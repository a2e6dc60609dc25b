"""dqkit.io.atomic: the one implementation of atomic outputs (files and folders); no Spark needed."""
from __future__ import annotations

import pytest

from dqkit.io.atomic import atomic_file, atomic_folder


def test_atomic_file_replaces_the_target_whole_and_leaves_no_temporary_sibling(tmp_path):
    target = tmp_path / "state.json"
    target.write_text("old", encoding="utf-8")
    atomic_file(target, lambda tmp: tmp.write_text("new", encoding="utf-8"))
    assert target.read_text(encoding="utf-8") == "new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["state.json"]


def test_atomic_file_leaves_the_target_as_it_was_when_the_write_fails(tmp_path):
    target = tmp_path / "report.html"
    target.write_text("complete", encoding="utf-8")

    def half(tmp):
        tmp.write_text("half", encoding="utf-8")
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        atomic_file(target, half)
    assert target.read_text(encoding="utf-8") == "complete"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.html"]


def test_atomic_folder_leaves_no_half_written_folder_when_the_write_fails(tmp_path):
    def half(tmp):
        (tmp / "part").write_text("x", encoding="utf-8")
        raise RuntimeError("cancelled")

    with pytest.raises(RuntimeError):
        atomic_folder(tmp_path / "out", half)
    assert list(tmp_path.iterdir()) == []


def test_the_state_files_of_tcfc_and_the_report_pages_are_written_by_the_one_atomic_writer():
    """One implementation: the modules that write a file atomically call dqkit.io.atomic, none renames by itself."""
    import inspect

    import dqkit.report
    import dqkit.tcfc.state

    for mod in (dqkit.report, dqkit.tcfc.state):
        src = inspect.getsource(mod)
        assert "atomic_file(" in src and "os.replace(" not in src, mod.__name__
