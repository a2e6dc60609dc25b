"""The one change-detection primitive (``dqkit.primitives.changes``) that ``detect --since`` and
``dedup --since`` share: per key, inserted / deleted / updated (Diftong's words), each side's row count
and the carried columns, checked against a brute-force comparison of the two versions."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from dqkit.primitives import changes
from dqkit.primitives.fingerprint import FP_HI, FP_LO

ROOT = Path(__file__).resolve().parent.parent

# key -> (fingerprint hi, lo[, carried hash]); NEW has 1 updated (lo differs), 2 unchanged, 3 inserted,
# a repeated key 5 and a NULL key; OLD has 4 deleted
NEW = [(1, 10, 11, 100), (2, 20, 21, 200), (3, 30, 31, 300), (5, 50, 51, 500), (5, 50, 52, 501), (None, 7, 7, 700)]
OLD = [(1, 10, 99), (2, 20, 21), (4, 40, 41), (5, 50, 51)]


def _oracle(new: list[tuple], old: list[tuple]) -> dict[object, tuple[int, int, str | None]]:
    """Per key: (rows in NEW, rows in OLD, the change), by plain Python."""
    out = {}
    for k in {r[0] for r in new} | {r[0] for r in old}:
        n = [r[1:3] for r in new if r[0] == k]
        o = [r[1:3] for r in old if r[0] == k]
        if not o:
            kind = "inserted"
        elif not n:
            kind = "deleted"
        elif len(n) == len(o) == 1:
            kind = "updated" if n != o else None
        else:
            kind = "skip"  # a repeated key: the caller refuses it, the kind is not asked for
        out[k] = (len(n), len(o), kind)
    return out


def test_by_key_names_each_keys_change_and_counts_its_rows_on_each_side(spark):
    new = spark.createDataFrame(NEW, f"id int, {FP_HI} long, {FP_LO} long, h long")
    old = spark.createDataFrame(OLD, f"id int, {FP_HI} long, {FP_LO} long")
    rows = changes.by_key(new, old, "id", carry=["h"]).collect()
    got = {r["id"]: (r[changes.NEW_ROWS], r[changes.OLD_ROWS], r[changes.CHANGE]) for r in rows}
    want = _oracle(NEW, OLD)
    assert {k: v for k, v in got.items() if want[k][2] != "skip"} == {k: v for k, v in want.items() if v[2] != "skip"}
    assert {k: v[:2] for k, v in got.items()} == {k: v[:2] for k, v in want.items()}
    carried = {r["id"]: (r[changes.carried("h", 1)], r[changes.carried("h", 0)]) for r in rows}
    assert carried[1] == (100, None) and carried[4] == (None, None) and carried[5] == (501, None)
    assert changes.change_counts([r for r in rows if r["id"] != 5]) == {"inserted": 2, "deleted": 1, "updated": 1}


def test_detect_and_dedup_since_say_what_changed_in_the_same_words():
    """Both systems count the change kinds of the one primitive, and its words need no Spark."""
    code = ("import sys\nfrom dqkit.primitives.changes import CHANGE_KINDS\n"
            "print(CHANGE_KINDS, 'pyspark' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60).stdout
    assert out.strip() == "('inserted', 'deleted', 'updated') False"
    for module in ("dqkit/detect/since.py", "dqkit/dedup/since.py", "dqkit/dedup/_since_scan.py",
                   "dqkit/dedup/_since_driver.py"):
        text = (ROOT / module).read_text()
        assert "dqkit.primitives" in text and "changes" in text
        assert not any(f'"{w}"' in text for w in ("added", "removed", "changed", "inserted", "deleted", "updated")), module
