"""Text and HTML snapshots of every registered system's result on its bundled example.

Each result is rendered as a person reads it (``to_text()``; ``to_html(charts=False)``) and compared,
after masking what changes from run to run (timings, absolute paths, temporary names), with
tests/snapshots/<system>.txt and .html. A snapshot is rewritten only when asked for explicitly:
``pytest tests/test_snapshots.py --update-snapshots`` (or ``DQKIT_UPDATE_SNAPSHOTS=1``); a missing one
fails with that command. The results come from the session's ``example_result`` fixture, shared with
the registry contract tests (tests/support/snapshot_plugin.py).
"""
from __future__ import annotations

import dataclasses
import difflib
import re
import tempfile
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from dqkit.contract.result import Facts, Result, Table
from dqkit.systems import all_systems

ROOT = Path(__file__).resolve().parent.parent
SNAPSHOTS = Path(__file__).resolve().parent / "snapshots"
UPDATE = "python -m pytest tests/test_snapshots.py --update-snapshots"

_MASKS = [
    # durations a run reports: "3.2 s", "0.41 seconds", "120 ms", "took 1:02"
    (re.compile(r"\b\d+(?:\.\d+)?(?:e-?\d+)?\s?(?:s|ms|sec|secs|seconds?|minutes?)\b"), "<DURATION>"),
    # wall-clock moments of the run (dates alone are data and stay)
    (re.compile(r"\b\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:\.\d+)?(?:[+-]\d\d:?\d\d|Z)?"), "<MOMENT>"),
    # temporary names: dqkit's atomic siblings, uuids
    (re.compile(r"\.tmp-[0-9a-f]{8}|\.old-[0-9a-f]{8}|\.(?:tmp|old|ckpt)\+[^+/\s]+\+\d+\+\d+\+[0-9a-f]{8}"), ".<TMP>"),
    (re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b"), "<UUID>"),
]


#: table columns and fact names that hold measured times (or costs in seconds): their values are masked
TIMED = re.compile(r"^(seconds|time|time \(s\)|cumulative incremental cost|full cleaning of the rest \(predicted\))$")


def _steady(block: Any) -> Any:
    """A section with its measured times replaced by ``<SECONDS>``; everything else as the result made it."""
    if isinstance(block, Table) and any(TIMED.match(str(c)) for c in block.frame.columns):
        frame = block.frame.copy()
        for c in frame.columns:
            if TIMED.match(str(c)):
                frame[c] = "<SECONDS>"
        return dataclasses.replace(block, frame=frame)
    if isinstance(block, Facts) and any(TIMED.match(str(k)) for k in block.items):
        return dataclasses.replace(block, items={k: "<SECONDS>" if TIMED.match(str(k)) else v
                                                 for k, v in block.items.items()})
    return block


def rendered(result: Result, kind: str) -> str:
    """The text or HTML of ``result`` through the result base's own ``to_text``/``to_html`` (charts left
    out), its timed values steadied and the rest masked; HTML broken after closing tags so diffs read."""
    view = SimpleNamespace(system=result.system,
                           sections=lambda sample_rows=10: [_steady(b) for b in result.sections(sample_rows=sample_rows)])
    if kind == "txt":
        return mask(Result.to_text(view))
    return mask(re.sub(r"(</(?:tr|h\d|table|div|p|li|ul|pre|summary|details)>)", r"\1\n", Result.to_html(view, charts=False)))


def mask(text: str) -> str:
    """``text`` with what differs between runs and machines replaced by stable markers."""
    for path, marker in ((str(ROOT), "<ROOT>"), (tempfile.gettempdir(), "<TMPDIR>")):
        text = text.replace(path, marker)
    for pattern, marker in _MASKS:
        text = pattern.sub(marker, text)
    return "\n".join(line.rstrip() for line in text.splitlines()) + "\n"


def _shown(path: Path) -> str:
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def check_snapshot(path: Path, actual: str, update: bool) -> None:
    """Compare ``actual`` with the snapshot at ``path``; write it only when ``update`` is set."""
    if update:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(actual, encoding="utf-8")
        return
    if not path.exists():
        pytest.fail(f"no snapshot {_shown(path)}: create it with `{UPDATE} -k {path.stem}` "
                    "and review the file before committing it")
    expected = path.read_text(encoding="utf-8")
    if actual != expected:
        diff = "".join(difflib.unified_diff(expected.splitlines(True), actual.splitlines(True),
                                            f"{path.name} (snapshot)", f"{path.name} (now)", n=2))
        pytest.fail(f"{_shown(path)} differs from the result now:\n{diff[:6000]}\n"
                    f"if the change is intended: `{UPDATE} -k {path.stem}`")


SYSTEMS = [s.name for s in all_systems()]


@pytest.mark.parametrize("name", SYSTEMS)
def test_the_text_of_each_systems_example_result_matches_its_snapshot(name, example_result, update_snapshots):
    check_snapshot(SNAPSHOTS / f"{name}.txt", rendered(example_result(name), "txt"), update_snapshots)


@pytest.mark.parametrize("name", SYSTEMS)
def test_the_html_of_each_systems_example_result_matches_its_snapshot(name, example_result, update_snapshots):
    check_snapshot(SNAPSHOTS / f"{name}.html", rendered(example_result(name), "html"), update_snapshots)


# ------------------------------------------------------------------ the snapshot machinery itself (no Spark)
def test_masking_hides_timings_paths_and_temporary_names_but_keeps_data():
    text = (f"ran in 3.25 s (0.4 seconds of it binding) at 2026-01-02 03:04:05 from {ROOT}/data/users/old; "
            "birthday 1979-11-02, 12 rows, out .x.tmp-0a1b2c3d")
    assert mask(text) == ("ran in <DURATION> (<DURATION> of it binding) at <MOMENT> from <ROOT>/data/users/old; "
                          "birthday 1979-11-02, 12 rows, out .x.<TMP>\n")


def test_measured_times_are_steadied_in_tables_and_facts_but_counts_stay():
    import pandas as pd

    from dqkit.contract.result import Verdict

    class Toy(Result):
        system = "dqkit toy"

        def sections(self, sample_rows: int = 10) -> list[Any]:
            return [Verdict(False, "LATE", "2 jobs in 3.5 s"), Facts("Run", {"seconds": 8.32, "queries": 2}),
                    Table("Jobs", pd.DataFrame({"job_id": [1, 2], "seconds": [2.49471, 3.58016]}))]

    text = rendered(Toy.__new__(Toy), "txt")
    assert "8.32" not in text and "2.49471" not in text and "3.5 s" not in text
    assert "queries  2" in text and "<SECONDS>" in text and "job_id" in text
    html = rendered(Toy.__new__(Toy), "html")
    assert "8.32" not in html and "</tr>\n" in html


def test_a_missing_snapshot_fails_with_the_command_that_creates_it_and_writes_nothing(tmp_path):
    path = tmp_path / "toy.txt"
    with pytest.raises(pytest.fail.Exception, match=r"--update-snapshots -k toy"):
        check_snapshot(path, "x\n", update=False)
    assert not path.exists()


def test_a_changed_result_fails_with_a_diff_and_leaves_the_snapshot_as_it_was(tmp_path):
    path = tmp_path / "toy.txt"
    path.write_text("verdict: SAME\n", encoding="utf-8")
    with pytest.raises(pytest.fail.Exception, match=r"-verdict: SAME\n\+verdict: DIFFERENT"):
        check_snapshot(path, "verdict: DIFFERENT\n", update=False)
    assert path.read_text(encoding="utf-8") == "verdict: SAME\n"


def test_a_snapshot_is_rewritten_only_with_the_explicit_flag(tmp_path):
    path = tmp_path / "toy.txt"
    path.write_text("old\n", encoding="utf-8")
    check_snapshot(path, "new\n", update=True)
    assert path.read_text(encoding="utf-8") == "new\n"
