"""The test files' order for ``make test``'s workers (tests/support/schedule.py): longest first, files kept whole."""
from __future__ import annotations

from pathlib import Path

from support.schedule import WEIGHTS, file_of, load_weights, longest_first, weights_from_junit

ROOT = Path(__file__).parent.parent


def test_files_go_longest_first_each_kept_whole_in_its_own_order_and_unknown_files_last():
    ids = ["tests/test_a.py::one", "tests/test_a.py::two", "tests/test_b.py::one", "notebooks/n.ipynb::Cell 0",
           "tests/test_c.py::one", "tests/test_b.py::two", "notebooks/n.ipynb::Cell 1", "tests/test_d.py::x"]
    weights = {"tests/test_b.py": 30.0, "notebooks/n.ipynb": 20.0, "tests/test_a.py": 20.0}
    assert longest_first(ids, str, weights) == [
        "tests/test_b.py::one", "tests/test_b.py::two",  # heaviest, its tests in collection order
        "tests/test_a.py::one", "tests/test_a.py::two",  # a tie: the file collected first goes first
        "notebooks/n.ipynb::Cell 0", "notebooks/n.ipynb::Cell 1",
        "tests/test_c.py::one", "tests/test_d.py::x"]  # not in the weights: last, in collection order
    assert longest_first(ids, str, {}) == sorted(ids, key=lambda i: [file_of(j) for j in ids].index(file_of(i)))


def test_weights_are_summed_per_file_from_a_junit_report(tmp_path):
    (tmp_path / "tests").mkdir()
    (tmp_path / "notebooks").mkdir()
    for name in ("tests/test_x.py", "notebooks/01_a.ipynb"):
        (tmp_path / name).write_text("")
    report = tmp_path / "r.xml"
    report.write_text('<testsuites><testsuite>'
                      '<testcase classname="tests.test_x" name="a" time="1.5"/>'
                      '<testcase classname="tests.test_x.TestGroup" name="b" time="2"/>'
                      '<testcase classname="notebooks.01_a.ipynb" name="Cell 0" time="4.5"/>'
                      '<testcase classname="tests.test_gone" name="c" time="9"/>'
                      '</testsuite></testsuites>')
    assert weights_from_junit(report, tmp_path) == {"notebooks/01_a.ipynb": 4.5, "tests/test_x.py": 3.5}


def test_the_bundled_weights_name_only_files_that_exist():
    weights = load_weights()
    assert len(weights) > 20, WEIGHTS
    assert [name for name in weights if not (ROOT / name).is_file()] == []
    assert load_weights(ROOT / "no-such-file.json") == {}
