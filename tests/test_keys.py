"""Keys are checked before they are trusted; dqkit's own column names are refused in inputs.

Hostile-input classes of issue 22 (section 7): key repeats and NULL keys, reserved column names. Each
CLI case asserts the exit code, the message, that the input is byte-identical and that nothing was
written. Delta is the documented exception: it compares multisets and pairs only unambiguous keys.
"""
from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import pytest

from dqkit.cli import main
from dqkit.errors import InvalidKeyError, ReservedColumnError

RULES = "zip -> city\n"
DEDUP_CONFIG = "blocking:\n  - [zip]\ncomparisons:\n  - {column: city, method: exact}\n"
REPEATED = "tid,zip,city\n1,10001,NY\n2,10001,NY\n3,10001,LA\n3,90001,CH\n4,90001,CH\n"
NULL_KEY = "tid,zip,city\n1,10001,NY\n,10001,LA\n2,90001,CH\n"


def _digest(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir())}


def _inputs(tmp_path: Path, table: str) -> tuple[Path, Path, Path]:
    src = tmp_path / "in"
    src.mkdir()
    (src / "t.csv").write_text(table)
    (src / "r.txt").write_text(RULES)
    (src / "c.yaml").write_text(DEDUP_CONFIG)
    return src / "t.csv", src / "r.txt", src / "c.yaml"


def _argv(command: str, t: Path, r: Path, c: Path, out: Path, key: str = "tid") -> list[str]:
    if command == "repair":
        return ["repair", str(t), "--rules", str(r), "--key", key, "--out", str(out)]
    if command == "detect":
        return ["detect", str(t), "--rules", str(r), "--key", key, "--out", str(out)]
    if command == "dedup":
        return ["dedup", str(t), "--key", key, "--config", str(c), "--out", str(out)]
    assert command == "query"
    return ["query", "--table", f"t={t}", "--rules", f"t={r}", "--key", f"t={key}", "--state", str(out),
            "SELECT city FROM t WHERE zip = 10001"]


COMMANDS = ["repair", "detect", "dedup", "query"]


# --------------------------------------------------------------------------------- key repeats
@pytest.mark.parametrize("command", COMMANDS)
def test_a_repeated_key_is_refused_with_exit_2_and_nothing_is_written(spark, capsys, tmp_path, command):
    t, r, c = _inputs(tmp_path, REPEATED)
    before = _digest(t.parent)
    out = tmp_path / "out.csv"
    assert main(_argv(command, t, r, c, out)) == 2
    err = capsys.readouterr().err
    assert re.search(rf"{command}: key tid of (table 't' \()?\S+t\.csv\)? is not unique: 1 key value\(s\) repeat, on 2 rows, "
                     r"for example '?3'? \(2 rows\)", err)
    assert "choose a unique key, or" in err and "Traceback" not in err
    assert _digest(t.parent) == before
    assert not out.exists() and list(tmp_path.iterdir()) == [t.parent]


@pytest.mark.parametrize("command", COMMANDS)
def test_a_null_key_is_refused_with_exit_2_and_nothing_is_written(spark, capsys, tmp_path, command):
    t, r, c = _inputs(tmp_path, NULL_KEY)
    before = _digest(t.parent)
    out = tmp_path / "out.csv"
    assert main(_argv(command, t, r, c, out)) == 2
    err = capsys.readouterr().err
    assert "key tid of " in err and "has NULL values: the key is NULL in 1 row(s)" in err
    assert "Empty DataFrame" not in err and "Traceback" not in err
    assert _digest(t.parent) == before
    assert not out.exists() and list(tmp_path.iterdir()) == [t.parent]


def test_repair_refuses_a_repeated_key_instead_of_fixing_the_other_row(spark, capsys, tmp_path):
    """The reported defect: CH became LA on the other tid=3 row, exit 0. Without --key the same table
    is repaired, and only the row in the violation changes."""
    t, r, c = _inputs(tmp_path, REPEATED)
    assert main(_argv("repair", t, r, c, tmp_path / "keyed.csv")) == 2
    out = tmp_path / "plain.csv"
    assert main(["repair", str(t), "--rules", str(r), "--out", str(out)]) == 0
    capsys.readouterr()
    assert out.read_text().splitlines() == ["tid,zip,city", "1,10001,NY", "2,10001,NY", "3,10001,NY",
                                            "3,90001,CH", "4,90001,CH"]


def test_the_refusal_shows_at_most_five_examples_and_names_every_key_column(spark):
    from dqkit.primitives.keys import check_key

    rows = [(i % 7, "x" if i % 2 else None, i) for i in range(40)]
    df = spark.createDataFrame(rows, "a int, b string, v int")
    with pytest.raises(InvalidKeyError) as info:
        check_key(df, ["a", "b"], table="T", command="detect")
    e = info.value
    assert e.columns == ("a", "b") and e.null_rows == 20 and e.repeated == 7 and len(e.examples) == 5
    assert "key (a, b) of T is not unique and has NULL values: 7 key value(s) repeat, on 20 rows" in e.message
    assert "(0, 'x') (" in e.message and "NULL in 20 row(s)" in e.message
    assert check_key(df, "v", table="T", command="detect") == 40  # a sound key: the row count


def test_a_composite_key_that_is_unique_is_accepted_by_detect(spark):
    from dqkit.detect import detect

    df = spark.createDataFrame([(1, 1, "a", "x"), (1, 2, "a", "y")], "k1 int, k2 int, z string, c string")
    with pytest.raises(InvalidKeyError, match="key k1 of t is not unique"):
        detect(df, "z -> c", key="k1", name="t")


# ------------------------------------------------------- delta: a documented multiset comparison
def test_delta_compares_repeated_and_null_keys_as_multisets_and_counts_them(spark, capsys, tmp_path):
    old, new = tmp_path / "old", tmp_path / "new"
    old.mkdir(), new.mkdir()
    (old / "t.csv").write_text("tid,city\n3,LA\n3,CH\n4,NY\n,SF\n")
    (new / "t.csv").write_text("tid,city\n3,LB\n3,CI\n4,NZ\n,SG\n")
    before = _digest(old), _digest(new)
    code = main(["delta", str(old), str(new), "--key", "t=tid", "--format", "json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 1  # different, never refused
    pairing = out["tables"]["t"]["pairing"]
    assert pairing["paired"] == 2 and pairing["ambiguous_key_rows"] == 4  # tid 4 and NULL paired; tid 3 not
    assert any("not unique among its changed rows; 4 records were left unpaired" in m for m in out["messages"])
    assert (_digest(old), _digest(new)) == before


def test_delta_help_states_the_multiset_behaviour(capsys):
    assert main(["delta", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "It need not be unique: tables are compared as multisets of rows" in text
    assert "ambiguous_key_rows" in text and "NULL keys pair with NULL" in text


# ---------------------------------------------------------------------------- reserved names
RESERVED_TABLE = "tid,zip,{name}\n1,10001,NY\n2,10001,LA\n"


@pytest.mark.parametrize("name", ["_dq_tid", "__dqkit_tid", "__dqkit_pos", "_dq_t"])
@pytest.mark.parametrize("command", COMMANDS)
def test_a_column_named_like_dqkits_own_is_refused(spark, capsys, tmp_path, command, name):
    t, r, c = _inputs(tmp_path, RESERVED_TABLE.format(name=name))
    r.write_text(f"zip -> {name}\n")
    c.write_text(f"blocking:\n  - [zip]\ncomparisons:\n  - {{column: {name}, method: exact}}\n")
    before = _digest(t.parent)
    out = tmp_path / "out.csv"
    assert main(_argv(command, t, r, c, out)) == 2
    err = capsys.readouterr().err
    assert f"'{name}'" in err and "clash" in err and "rename" in err and "Traceback" not in err
    assert _digest(t.parent) == before
    assert not out.exists() and list(tmp_path.iterdir()) == [t.parent]


@pytest.mark.parametrize("name", ["_dq_fp_hi", "_dq_o0", "__dqkit_tid"])
def test_delta_refuses_its_own_column_names_and_compares_the_others(spark, capsys, tmp_path, name):
    old, new = tmp_path / "old", tmp_path / "new"
    old.mkdir(), new.mkdir()
    (old / "t.csv").write_text(f"tid,{name}\n1,a\n2,b\n")
    (new / "t.csv").write_text(f"tid,{name}\n1,a\n2,c\n")
    before = _digest(old), _digest(new)
    out = tmp_path / "v"
    code = main(["delta", str(old), str(new), "--key", "t=tid", "--format", "json", "--out", str(out)])
    captured = capsys.readouterr()
    assert (_digest(old), _digest(new)) == before
    if name.startswith("_dq_"):  # delta's own prefix: refused, nothing written
        assert code == 2 and not out.exists()
        assert f"table t has a column named '{name}', which dqkit adds to its outputs" in captured.err
    else:  # another command's hidden name is an ordinary column to delta
        assert code == 1 and json.loads(captured.out)["tables"]["t"]["pairing"]["paired"] == 1


def test_check_reserved_needs_no_spark():
    from dqkit.primitives.keys import check_reserved

    check_reserved(["tid", "city", "dq_x"], table="T", command="repair")
    with pytest.raises(ReservedColumnError, match=r"repair: column\(s\) '_dq_x' of T clash"):
        check_reserved(["tid", "_dq_x"], table="T", command="repair")
