"""The order in which ``make test``'s two workers take the test files: the longest first.

``--dist loadfile`` hands each worker whole files, one after another in the queue's order. xdist's own
order (most tests first) left the cluster file (5 tests, ~300 s) and the local-graph file (5 tests, ~110 s)
for last, so one worker ran them alone for minutes while the other sat idle. Longest first (the LPT rule)
leaves only short files for the end. The weights are each file's seconds in a full run
(``file_durations.json``); a file not listed there counts as a short one. Refresh them from a full run's
JUnit report: ``python tests/support/schedule.py report.xml`` (pytest ``--junitxml=report.xml``).
"""
from __future__ import annotations

import json
import sys
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TypeVar

WEIGHTS = Path(__file__).resolve().parents[1] / "file_durations.json"  # beside the test files it weighs
T = TypeVar("T")


def file_of(nodeid: str) -> str:
    """The file a test belongs to: xdist's ``loadfile`` unit (``tests/test_x.py``, ``notebooks/01.ipynb``)."""
    return nodeid.split("::", 1)[0]


def load_weights(path: Path = WEIGHTS) -> dict[str, float]:
    """Seconds per test file; empty when the file is missing or unreadable (the order is then unchanged)."""
    try:
        weights = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return {str(k): float(v) for k, v in weights.items()} if isinstance(weights, dict) else {}


def longest_first(items: Sequence[T], nodeid_of, weights: dict[str, float]) -> list[T]:
    """``items`` with whole files in decreasing weight; within a file, and among equal weights, the
    collection order is kept (files stay contiguous, so a file's module fixtures still start once)."""
    first_seen: dict[str, int] = {}
    for item in items:
        first_seen.setdefault(file_of(nodeid_of(item)), len(first_seen))
    def key(item: T) -> tuple[float, int]:
        f = file_of(nodeid_of(item))
        return -weights.get(f, 0.0), first_seen[f]
    return sorted(items, key=key)


def weights_from_junit(report: Path, root: Path) -> dict[str, float]:
    """Seconds per test file from a JUnit report (the sum of its tests' times), for files under ``root``."""
    totals: dict[str, float] = {}
    for case in ET.parse(report).getroot().iter("testcase"):
        classname = case.get("classname", "")
        folder, _, rest = classname.partition(".")
        if folder == "notebooks":  # nbval: classname "notebooks.01_delta.ipynb"
            name = f"notebooks/{rest}"
        else:  # "tests.test_x" or "tests.test_x.TestClass"
            name = f"{folder}/{rest.split('.')[0]}.py"
        if (root / name).exists():
            totals[name] = totals.get(name, 0.0) + float(case.get("time") or 0)
    return {k: round(v, 1) for k, v in sorted(totals.items(), key=lambda kv: -kv[1])}


def main(argv: Iterable[str]) -> int:
    args = list(argv)
    if len(args) != 1:
        print("usage: python tests/support/schedule.py JUNIT_REPORT.xml  (writes tests/file_durations.json)", file=sys.stderr)
        return 2
    weights = weights_from_junit(Path(args[0]), WEIGHTS.parent.parent)
    WEIGHTS.write_text(json.dumps(weights, indent=1) + "\n")
    print(f"{len(weights)} files, {sum(weights.values()):.0f} s: {WEIGHTS}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
