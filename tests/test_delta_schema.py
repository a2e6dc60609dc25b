"""Delta on evolving schemas (issue 47): the schema delta, common columns compared with aligned types,
renames, per-column tolerances, and the bad input refused before Spark starts."""
from __future__ import annotations

import json
from collections import Counter

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dqkit.delta import preflight as schemas
from dqkit.cli import _derive, main
from dqkit.delta import delta
from dqkit.delta import schema as sd
from dqkit.errors import ParameterError, UnknownColumnError, UnsupportedTypeError


# ---------------------------------------------------------------- the schema delta, without Spark

def test_the_schema_delta_lists_added_dropped_retyped_and_renamed_columns():
    old = {"id": "int", "a": "int", "m": "string", "d": "date", "gone": "string"}
    new = {"id": "int", "a": "double", "mail": "string", "d": "string", "b": "string"}
    t = sd.table_schema_delta("t", old, new, {"m": "mail"})
    assert t.status == "changed"
    assert t.added == (("b", "string"),) and t.dropped == (("gone", "string"),)
    assert t.retyped == (("a", "int", "double", "widened"), ("d", "date", "string", "text"))
    assert t.renamed == (("m", "mail"),)
    assert sd.table_schema_delta("t", old, old).status == "same"
    # an excluded column, by either name, is no change
    assert sd.table_schema_delta("t", old, new, {"m": "mail"}, ["gone", "b", "a", "d", "mail"]).status == "same"


def test_a_table_dropped_or_added_entirely_is_reported_as_such():
    delta_ = sd.schema_delta({"t": {"id": "int"}, "gone": {"x": "int"}}, {"t": {"id": "int"}, "fresh": None})
    assert {n: t.status for n, t in delta_.tables.items()} == {"fresh": "added", "gone": "dropped", "t": "same"}
    assert delta_.lines() == ["table fresh added: it is only in the new version",
                              "table gone dropped: it is only in the old version"]


@pytest.mark.parametrize("old, new, common, kind", [
    ("int", "bigint", "bigint", "widened"), ("tinyint", "int", "int", "widened"),
    ("int", "double", "double", "widened"), ("float", "double", "double", "widened"),
    ("decimal(10,2)", "decimal(12,2)", "decimal(12,2)", "widened"),
    ("decimal(10,2)", "decimal(11,3)", "decimal(11,3)", "widened"),
    ("int", "decimal(12,2)", "decimal(12,2)", "widened"),
    ("bigint", "int", "bigint", "narrowed"), ("decimal(12,3)", "decimal(10,2)", "decimal(12,3)", "narrowed"),
    ("int", "string", "string", "text"), ("string", "double", "string", "text"),
    ("date", "string", "string", "text"), ("void", "int", "int", "same"), ("int", None, None, "unknown"),
])
def test_widened_numbers_are_compared_by_value_and_other_changes_as_text(old, new, common, kind):
    assert sd.compare_as(old, new) == (common, kind)


def _parquet(folder, name, table):
    folder.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, folder / f"{name}.parquet")


def test_the_preflight_reads_types_from_parquet_footers_and_names_from_csv_headers(tmp_path):
    _parquet(tmp_path, "t", pa.table({"id": pa.array([1], pa.int32()), "x": pa.array([1.5]),
                                      "d": pa.array([pa.scalar(1, pa.decimal128(10, 2)).as_py()], pa.decimal128(10, 2)),
                                      "s": ["a"]}))
    (tmp_path / "c.csv").write_text("id,name\n1,a\n")
    assert schemas.table_types(tmp_path / "t.parquet") == {"id": "int", "x": "double", "d": "decimal(10,2)",
                                                             "s": "string"}
    assert schemas.table_types(tmp_path / "c.csv") == {"id": None, "name": None}


# ---------------------------------------------------------------- options, parsed without Spark

@pytest.mark.parametrize("items, message", [
    (["t.a=b", "t.a=c"], "names t.a twice"),
    (["t.a=c", "t.b=c"], "maps two columns to t.c"),
    (["t.a=b", "t.b=a"], "form a cycle"),
    (["t.a=b", "t.b=c"], "form a chain"),
    (["t.a=a"], "to itself"),
    (["a=b"], "expected TABLE.OLD=NEW"),
    (["t.a"], "expected TABLE.OLD=NEW"),
])
def test_a_rename_given_twice_chained_cyclic_or_malformed_is_refused(items, message):
    with pytest.raises(ParameterError, match=message):
        sd.parse_renames(items)


@pytest.mark.parametrize("items, message", [
    (["t.x=-1"], "non-negative"), (["t.x=nan"], "non-negative"), (["t.x=abc"], "non-negative"),
    (["t.x=1", "t.x=2%"], "twice"), (["x=1"], "TABLE.COL"),
])
def test_a_bad_tolerance_is_refused(items, message):
    with pytest.raises(ParameterError, match=message):
        sd.parse_tolerances(items)


def test_tolerances_read_absolute_and_relative_values():
    tol = sd.parse_tolerances(["t.x=0.01", "t.y=5%", {"u": {"z": "2"}}][:2]) | sd.parse_tolerances({"u": {"z": "2"}})
    assert tol == {"t": {"x": sd.Tolerance(0.01, 0.0), "y": sd.Tolerance(0.0, 0.05)}, "u": {"z": sd.Tolerance(2.0, 0.0)}}


# ---------------------------------------------------------------- the CLI refuses before Spark

@pytest.fixture
def versions(tmp_path):
    """old: t(id int, a int, m string, s string); new: t(id int, a double, mail string, s string, b string)."""
    _parquet(tmp_path / "old", "t", pa.table({"id": pa.array([1, 2, 3], pa.int32()), "a": pa.array([1, 2, 3], pa.int32()),
                                              "m": ["x", "y", "z"], "s": ["p", "q", "r"]}))
    _parquet(tmp_path / "new", "t", pa.table({"id": pa.array([1, 2, 3], pa.int32()), "a": [1.0, 2.0, 3.0],
                                              "mail": ["x", "y", "z"], "s": ["p", "q", "r"], "b": ["n", "n", "n"]}))
    return tmp_path / "old", tmp_path / "new"


@pytest.fixture
def no_spark(monkeypatch):
    """The CLI's session start, recorded: a refused command never reaches it."""
    started: list = []
    monkeypatch.setattr(_derive, "start_session", lambda args: started.append(args))
    return started


@pytest.mark.parametrize("flags, message", [
    (["--schema-changes", "fail"], "schemas changed between the two versions"),
    (["--rename", "t.nope=mail"], "t.nope is not a column of the old version"),
    (["--rename", "t.m=nope"], "t.nope is not a column of the new version"),
    (["--rename", "t.m=mail", "--rename", "t.m=b"], "names t.m twice"),
    (["--rename", "t.m=mail", "--rename", "t.mail=m"], "form a cycle"),
    (["--tolerance", "t.s=0.1"], "t.s: the column is string, not a number"),
    (["--tolerance", "t.nope=1%"], "t.nope: no such column"),
])
def test_hostile_schema_options_exit_2_before_spark_starts(versions, no_spark, capsys, flags, message):
    old, new = versions
    assert main(["delta", str(old), str(new), *flags]) == 2
    err = capsys.readouterr().err
    assert message in err, err
    assert no_spark == []


def test_schema_changes_fail_lists_every_change(versions, no_spark, capsys):
    old, new = versions
    assert main(["delta", str(old), str(new), "--schema-changes", "fail", "--rename", "t.m=mail"]) == 2
    err = capsys.readouterr().err
    for line in ("t.b added (string)", "t.a retyped int \u2192 double (compared by value)", "t.m renamed to mail"):
        assert line in err, err
    assert no_spark == []


# ---------------------------------------------------------------- comparing evolving schemas

def test_schema_changes_alone_are_a_difference_reported_first(spark, versions, capsys):
    old, new = versions
    code = main(["delta", str(old), str(new), "--key", "t=id", "--rename", "t.m=mail", "--format", "json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 1
    assert list(out)[0] == "schema" and out["identical"] is False
    t = out["schema"]["tables"]["t"]
    assert t["added"] == [{"column": "b", "type": "string"}] and t["dropped"] == []
    assert t["retyped"] == [{"column": "a", "old": "int", "new": "double", "compared": "widened"}]
    assert t["renamed"] == [{"old": "m", "new": "mail"}]
    # the common columns hold the same values: int 1 and double 1.0 are equal, m is mail
    assert out["tables"]["t"]["row_stats"]["differences"] == 0
    res = delta(old, new, keys={"t": "id"}, renames=["t.m=mail"], spark=spark)
    blocks = res.sections()
    assert blocks[1].title == "Schema changes"
    text, html = res.to_text(), res.to_html(charts=False)
    assert text.index("Schema changes") < text.index("What was compared") < text.index("Row statistics")
    assert html.index("Schema changes") < html.index("What was compared")
    assert "schema changed: t" in res.verdict.summary


def test_unchanged_schemas_say_so_first(spark):
    df = spark.createDataFrame([(1, "a")], "id int, v string")
    res = delta({"t": df}, {"t": df}, spark=spark)
    assert res.identical and res.to_dict()["schema"] == {"changed": False, "tables": {}}
    assert res.sections()[1].title == "Schema changes" and "no schema change" in res.to_text()


def test_widened_types_compare_by_value_so_unchanged_rows_match(spark):
    from decimal import Decimal as D

    old = spark.createDataFrame([(1, 10, 5, D("1.25")), (2, 20, 6, D("2.5")), (3, 30, 7, D("3.75"))],
                                "id int, i int, s smallint, d decimal(10,2)")
    new = spark.createDataFrame([(1, 10, 5.0, D("1.25")), (2, 20, 6.0, D("2.5")), (3, 31, 7.0, D("3.75"))],
                                "id int, i bigint, s double, d decimal(14,3)")
    res = delta({"t": old}, {"t": new}, keys={"t": "id"}, spark=spark)
    s = res.tables["t"].row_stats
    assert (s["differences"], s["deletes"], s["inserts"]) == (2, 1, 1)  # only id 3 changed
    assert res.tables["t"].column_stats["i"]["count"] == 1 and res.tables["t"].column_stats["i"]["max"] == 1
    assert {c for c, *_ in res.schema.tables["t"].retyped} == {"i", "s", "d"}
    assert res.tables["t"].plan.types["d"].simpleString() == "decimal(14,3)"
    assert not any("compared as text" in m for m in res.messages)


def test_other_type_changes_compare_as_text_with_a_warning_or_are_excluded(spark):
    import datetime as dt

    old = spark.createDataFrame([(1, 7, dt.date(2024, 1, 2)), (2, 8, dt.date(2024, 1, 3))], "id int, n int, d date")
    new = spark.createDataFrame([(1, "7", "2024-01-02"), (2, "8x", "2024-01-03")], "id int, n string, d string")
    res = delta({"t": old}, {"t": new}, keys={"t": "id"}, spark=spark)
    warned = [m for m in res.messages if "compared as text" in m]
    assert any("t.n is int in the old version but string" in m for m in warned)
    assert any("t.d is date" in m for m in warned)
    assert res.tables["t"].row_stats["differences"] == 2  # only id 2: '8' -> '8x'
    assert res.tables["t"].column_stats["n"]["count"] == 1 and res.tables["t"].column_stats["d"]["count"] == 0
    quiet = delta({"t": old}, {"t": new}, keys={"t": "id"}, exclude=["t.n", "t.d"], spark=spark)
    assert quiet.identical and not any("compared as text" in m for m in quiet.messages)


def test_a_dropped_table_is_reported_as_dropped(spark):
    df = spark.createDataFrame([(1,)], "id int")
    res = delta({"t": df, "gone": df}, {"t": df}, spark=spark)
    assert res.to_dict()["schema"]["tables"] == {"gone": {
        "status": "dropped", "added": [], "dropped": [], "retyped": [], "renamed": [], "proposed_renames": []}}
    assert "table gone dropped" in res.schema_frame().to_string() or "table dropped" in res.schema_frame().to_string()
    assert res.exit_code == 1


def test_renames_are_proposed_with_their_evidence_and_never_applied(spark):
    old = spark.createDataFrame([(1, "a@x", 5), (2, "b@x", 6), (3, "c@x", 7)], "id int, mail string, n int")
    new = spark.createDataFrame([(1, "a@x", 5.0, "k"), (2, "b@x", 6.0, "k"), (3, "c@y", 7.0, "k")],
                                "id int, email string, count double, tag string")
    new = new.drop("n")
    old = old.withColumnRenamed("n", "num")
    for keys, evidence in (({"t": "id"}, "3 of 3 key-paired rows agree"), (None, "3 of 3 distinct values agree")):
        res = delta({"t": old}, {"t": new}, keys=keys, spark=spark)
        proposed = res.to_dict()["schema"]["tables"]["t"]["proposed_renames"]
        by_old = {p["old"]: p for p in proposed}
        assert by_old["num"]["new"] == "count" and by_old["num"]["agreeing"] == 1.0
        assert by_old["num"]["accept"] == "--rename t.num=count" and by_old["num"]["evidence"] == evidence
        assert "mail" not in by_old  # 2 of 3 rows (2 of 4 distinct values) agree: below the threshold
        # never applied: still a dropped and an added column
        assert {c for c, _ in res.schema.tables["t"].dropped} == {"mail", "num"}
        assert any("proposed rename t.num" in m and "--rename t.num=count" in m for m in res.messages)
        assert res.sections()[2].title == "Proposed renames"
    accepted = delta({"t": old}, {"t": new}, keys={"t": "id"}, renames=["t.num=count"], spark=spark)
    assert accepted.schema.tables["t"].renamed == (("num", "count"),)
    assert accepted.tables["t"].row_stats["differences"] == 0  # 5 = 5.0: count compared with num by value


def test_a_per_column_tolerance_counts_close_values_as_equal_and_says_how_many(spark):
    old = spark.createDataFrame([(1, 100, 10.0), (2, 200, 20.0), (3, 300, 30.0)], "id int, n int, x double")
    new = spark.createDataFrame([(1, 101, 10.4), (2, 210, 20.0), (3, 300, 36.0)], "id int, n int, x double")
    res = delta({"t": old}, {"t": new}, keys={"t": "id"}, tolerances=["t.n=2", "t.x=10%"], spark=spark)
    stats = res.tables["t"].column_stats
    assert (stats["n"]["count"], stats["n"]["within_tolerance"]) == (1, 1)  # 100->101 within 2, 200->210 not
    assert (stats["x"]["count"], stats["x"]["within_tolerance"]) == (1, 1)  # 10.4 within 10 %, 36 not
    assert res.tables["t"].row_stats["differences"] == 6  # row validation stays exact
    assert json.loads(json.dumps(res.to_dict()))["tables"]["t"]["column_stats"]["n"]["within_tolerance"] == 1
    with pytest.raises(UnsupportedTypeError, match="not a number"):
        delta({"t": old.withColumn("s", old.n.cast("string"))}, {"t": new.withColumn("s", new.n.cast("string"))},
              tolerances=["t.s=1"], spark=spark)
    with pytest.raises(UnknownColumnError, match="no such column"):
        delta({"t": old}, {"t": new}, tolerances=["t.nope=1"], spark=spark)


# ---------------------------------------------------------------- property: a pandas oracle

_ROW = st.tuples(st.integers(0, 3), st.sampled_from(["p", "q", None]), st.integers(0, 2))


@st.composite
def _versions(draw):
    """Two versions of t(id, a int, b string, c int) with random schema edits and row edits."""
    ids = draw(st.lists(st.integers(0, 7), min_size=0, max_size=6, unique=True))
    old = [(i, *draw(_ROW)) for i in ids]
    new = [r for r in old if draw(st.booleans()) or draw(st.booleans())]  # some rows deleted
    new = [(r[0], draw(st.integers(0, 3)) if draw(st.booleans()) else r[1], r[2], r[3]) for r in new]  # edits
    new += [(i, *draw(_ROW)) for i in draw(st.lists(st.integers(8, 10), max_size=2, unique=True))]  # inserts
    if new and draw(st.booleans()):
        new.append(new[0])  # a duplicate
    edits = draw(st.fixed_dictionaries({
        "widen": st.sampled_from([None, "bigint", "double"]), "rename": st.sampled_from([None, "given", "silent"]),
        "drop": st.booleans(), "add": st.booleans(), "retype": st.booleans()}))
    return old, new, edits


def _oracle(old, new, edits):
    """Counts of the delta by brute force in pandas, over the common columns with aligned types."""
    import pandas as pd

    o = pd.DataFrame(old, columns=["id", "a", "b", "c"], dtype=object)
    n = pd.DataFrame(new, columns=["id", "a", "b", "c"], dtype=object)
    common = ["id", "a"]
    if edits["rename"] != "silent":
        common.append("b")  # compared under its new name, or not renamed at all
    if not edits["drop"]:
        common.append("c")
        if edits["retype"]:  # int -> string: compared as text
            o["c"], n["c"] = o["c"].map(str), n["c"].map(str)
    rows_o = Counter(tuple(r) for r in o[common].itertuples(index=False))
    rows_n = Counter(tuple(r) for r in n[common].itertuples(index=False))
    deletes = [r for r, k in rows_o.items() if rows_n.get(r) != k]
    inserts = [r for r, k in rows_n.items() if rows_o.get(r) != k]
    by_key_o, by_key_n = Counter(r[0] for r in deletes), Counter(r[0] for r in inserts)
    pairs = [(d, i) for d in deletes for i in inserts if d[0] == i[0] and by_key_o[d[0]] == 1 and by_key_n[i[0]] == 1]
    counts = {c: sum(1 for d, i in pairs if d[k] != i[k]) for k, c in enumerate(common) if c != "id"}
    counts["row_count"] = sum(1 for d, i in pairs if rows_o[d] != rows_n[i])
    return {"rows_old": len(old), "rows_new": len(new), "dedup_rows_old": len(rows_o),
            "dedup_rows_new": len(rows_n), "differences": len(deletes) + len(inserts), "deletes": len(deletes),
            "inserts": len(inserts), "paired": len(pairs), "column_counts": counts,
            "added": int(edits["add"]) + (edits["rename"] == "silent"), "dropped": int(edits["drop"])
            + (edits["rename"] == "silent"), "retyped": int(edits["widen"] is not None)
            + int(edits["retype"] and not edits["drop"]), "renamed": int(edits["rename"] == "given")}


def _spark_versions(spark, old, new, edits):
    old_df = spark.createDataFrame(old, "id int, a int, b string, c int")
    new_df = spark.createDataFrame(new, "id int, a int, b string, c int")
    if edits["widen"]:
        new_df = new_df.withColumn("a", new_df.a.cast(edits["widen"]))
    if edits["rename"]:
        new_df = new_df.withColumnRenamed("b", "b2")
    if edits["drop"]:
        new_df = new_df.drop("c")
    elif edits["retype"]:
        new_df = new_df.withColumn("c", new_df.c.cast("string"))
    if edits["add"]:
        new_df = new_df.withColumn("z", new_df.id * 2)
    return old_df, new_df


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(_versions())
def test_every_count_of_a_delta_on_evolving_schemas_equals_a_pandas_oracle(spark, case):
    old, new, edits = case
    old_df, new_df = _spark_versions(spark, old, new, edits)
    res = delta({"t": old_df}, {"t": new_df}, keys={"t": "id"},
                renames=["t.b=b2"] if edits["rename"] == "given" else None, spark=spark)
    want = _oracle(old, new, edits)
    s = res.tables["t"].row_stats
    for k in ("rows_old", "rows_new", "dedup_rows_old", "dedup_rows_new", "differences", "deletes", "inserts"):
        assert s[k] == want[k], (k, s, want)
    sch = res.schema.tables["t"]
    assert (len(sch.added), len(sch.dropped), len(sch.retyped), len(sch.renamed)) == \
        (want["added"], want["dropped"], want["retyped"], want["renamed"]), sch
    assert res.identical == (want["differences"] == 0 and s["rows_old"] == s["rows_new"] and not sch.changed)
    if want["differences"]:
        assert res.tables["t"].pairing["paired"] == want["paired"]
        got = {c: v["count"] for c, v in res.tables["t"].column_stats.items()}
        want_counts = {("b2" if c == "b" and edits["rename"] == "given" else c): v
                       for c, v in want["column_counts"].items()}
        assert got == want_counts, (got, want_counts)


def test_the_text_and_html_of_a_night_whose_schema_changed_match_their_snapshots(spark, update_snapshots):
    from test_snapshots import SNAPSHOTS, check_snapshot, rendered

    res = delta("data/users/new", "data/users/evolved", keys={"users": "id"}, spark=spark)
    check_snapshot(SNAPSHOTS / "delta-schema.txt", rendered(res, "txt"), update_snapshots)
    check_snapshot(SNAPSHOTS / "delta-schema.html", rendered(res, "html"), update_snapshots)
