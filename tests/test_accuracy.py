"""Repair accuracy against ground truth (BigDansing §6.6, R38), the BART-style tax errors it is measured on,
and the acceptance run: Tax data with 5 % of city and state cells corrupted, repaired with the FDs."""
from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyspark.sql import functions as F
from pyspark.sql import types as T

from dqkit.repair.accuracy import RepairAccuracy, repair_accuracy
from dqkit.errors import DqkitError, ParameterError, SchemaMismatchError, UnknownColumnError

SCHEMA = T.StructType([T.StructField("id", T.LongType()), T.StructField("a", T.StringType()),
                       T.StructField("x", T.DoubleType())])
# hand-computed golden case: a is text, x is numeric
DIRTY = [(1, "p", 1.0), (2, "q", 2.0), (3, "r", 3.0), (4, None, 4.0)]
CLEAN = [(1, "p", 1.0), (2, "Q", 2.0), (3, "R", 3.5), (4, "s", 4.0)]
REPAIRED = [(1, "z", 1.0), (2, "Q", 2.0), (3, "r", 3.0), (4, "s", 5.0)]


def _df(spark, rows, schema=SCHEMA):
    return spark.createDataFrame(rows, schema)


# ------------------------------------------------------------------------------------------- goldens
def test_golden_counts_precision_recall_and_distance(spark):
    acc = repair_accuracy(_df(spark, DIRTY), _df(spark, REPAIRED), _df(spark, CLEAN), key="id")
    # a: row 1 changed wrongly, rows 2 and 4 (NULL -> s) changed correctly, row 3 an error left alone
    # x: row 3 an error left alone (3.0 vs 3.5), row 4 changed wrongly (4.0 -> 5.0)
    assert acc.per_attribute == {"a": {"changes": 3, "correct_changes": 2, "errors": 3, "mismatches": 2},
                                 "x": {"changes": 1, "correct_changes": 0, "errors": 1, "mismatches": 2}}
    assert (acc.changes, acc.correct_changes, acc.errors, acc.rows, acc.cells) == (4, 2, 4, 4, 8)
    assert (acc.precision, acc.recall, acc.f1) == (0.5, 0.5, 0.5)
    assert acc.distance == pytest.approx(math.sqrt(0.5 ** 2 + 1.0 ** 2))
    assert acc.mismatches == 2  # the text cells where repaired != clean
    assert acc.distance_per_error == pytest.approx(math.sqrt(1.25) / 4) and acc.mismatches_per_error == 0.5
    assert acc.numeric_attributes == ("x",) and acc.attributes == ("a", "x")
    d = acc.to_dict()
    assert d["precision"] == 0.5 and d["per_attribute"]["a"]["errors"] == 3 and d["cells"] == 8
    assert "precision 0.500 (2/4 changes correct)" in acc.summary()


def test_golden_is_the_same_for_any_row_order_and_partitioning(spark):
    acc = repair_accuracy(_df(spark, DIRTY[::-1]).repartition(3), _df(spark, REPAIRED).coalesce(1),
                          _df(spark, CLEAN[2:] + CLEAN[:2]).repartition(2), key="id")
    assert (acc.changes, acc.correct_changes, acc.errors, acc.mismatches) == (4, 2, 4, 2)


def test_attributes_choose_the_cells_scored(spark):
    acc = repair_accuracy(_df(spark, DIRTY), _df(spark, REPAIRED), _df(spark, CLEAN), key="id", attributes=["a"])
    assert (acc.changes, acc.correct_changes, acc.errors) == (3, 2, 3)
    assert acc.precision == pytest.approx(2 / 3) and acc.recall == pytest.approx(2 / 3)
    assert acc.distance == 0.0 and acc.numeric_attributes == ()


def test_nothing_changed_gives_precision_one_and_recall_zero(spark):
    dirty = _df(spark, DIRTY)
    acc = repair_accuracy(dirty, dirty, _df(spark, CLEAN), key="id")
    assert (acc.changes, acc.errors, acc.precision, acc.recall, acc.f1) == (0, 4, 1.0, 0.0, 0.0)


def test_no_errors_gives_recall_one_and_undefined_per_error_distances(spark):
    clean = _df(spark, CLEAN)
    perfect = repair_accuracy(clean, clean, clean, key="id")
    assert (perfect.precision, perfect.recall, perfect.f1) == (1.0, 1.0, 1.0)
    assert perfect.distance_per_error is None and perfect.mismatches_per_error is None
    meddled = repair_accuracy(clean, _df(spark, REPAIRED), clean, key="id")
    assert (meddled.errors, meddled.precision, meddled.recall, meddled.f1) == (0, 0.0, 1.0, 0.0)
    assert meddled.to_dict()["distance_per_error"] is None


def test_empty_tables_score_as_nothing_to_do(spark):
    empty = _df(spark, [])
    acc = repair_accuracy(empty, empty, empty, key="id")
    assert (acc.rows, acc.changes, acc.errors, acc.precision, acc.recall, acc.distance) == (0, 0, 0, 1.0, 1.0, 0.0)


def test_a_numeric_cell_null_on_one_side_counts_as_a_mismatch_not_a_distance(spark):
    dirty = _df(spark, [(1, "p", 1.0)])
    acc = repair_accuracy(dirty, _df(spark, [(1, "p", None)]), dirty, key="id")
    assert (acc.changes, acc.errors, acc.distance, acc.mismatches) == (1, 0, 0.0, 1)


def test_tables_given_as_paths_and_a_repair_result(spark, tmp_path):
    paths = {}
    for name, rows in (("dirty", DIRTY), ("repaired", REPAIRED), ("clean", CLEAN)):
        paths[name] = str(tmp_path / f"{name}.parquet")
        _df(spark, rows).write.parquet(paths[name])

    class Result:  # what repair() returns, as far as the accuracy is concerned
        repaired = _df(spark, REPAIRED)
        changes = None

    by_path = repair_accuracy(paths["dirty"], paths["repaired"], paths["clean"], key="id")
    by_result = repair_accuracy(paths["dirty"], Result(), paths["clean"], key="id")
    assert by_path == by_result and by_path.correct_changes == 2


def test_accuracy_renders_as_sections(spark):
    acc = repair_accuracy(_df(spark, DIRTY), _df(spark, REPAIRED), _df(spark, CLEAN), key="id")
    html = acc._repr_html_()
    assert "Repair accuracy" in html and "0.5000" in html and "Per attribute" in html


# ----------------------------------------------------------------------------------------- bad input
def _exploding(spark):
    """A table whose every Spark job fails: an error about it proves the check ran before any job."""
    return spark.range(2).select(F.col("id"), F.raise_error(F.lit("a Spark job ran")).cast("string").alias("a"),
                                 F.lit(1.0).alias("x"))


def test_a_missing_key_is_named_with_its_table_before_any_job(spark):
    ok = _df(spark, DIRTY)
    with pytest.raises(UnknownColumnError, match="key column 'tid' is not in the dirty table"):
        repair_accuracy(_exploding(spark), ok, ok, key="tid")
    with pytest.raises(UnknownColumnError, match="not in the repaired table"):
        repair_accuracy(ok.withColumnRenamed("id", "tid"), ok, ok.withColumnRenamed("id", "tid"), key="tid")
    with pytest.raises(ParameterError, match="key column is needed"):
        repair_accuracy(ok, ok, ok, key="")


def test_schema_mismatch_between_the_three_tables_is_refused_before_any_job(spark):
    boom = _exploding(spark)
    with pytest.raises(SchemaMismatchError, match=r"same columns: y \(missing from dirty, repaired\)"):
        repair_accuracy(boom, boom, boom.withColumn("y", F.lit(1)), key="id")
    with pytest.raises(SchemaMismatchError, match=r"different types: x \(dirty double, repaired double, clean string\)"):
        repair_accuracy(boom, boom, boom.withColumn("x", F.lit("1")), key="id")
    # nullability is not a difference, and an all-NULL (void) column matches any type
    ok = _df(spark, DIRTY)
    voided = ok.select("id", "a", F.lit(None).alias("x"))
    acc = repair_accuracy(ok, voided, ok, key="id")
    assert acc.per_attribute["x"]["changes"] == 4 and acc.mismatches == 4


def test_unknown_or_key_attributes_are_refused(spark):
    boom = _exploding(spark)
    with pytest.raises(UnknownColumnError, match="unknown attribute.*'city'"):
        repair_accuracy(boom, boom, boom, key="id", attributes=["a", "city"])
    with pytest.raises(ParameterError, match="key 'id' cannot be scored"):
        repair_accuracy(boom, boom, boom, key="id", attributes=["id"])
    only_key = spark.range(2)
    with pytest.raises(ParameterError, match="no attribute to score"):
        repair_accuracy(only_key, only_key, only_key, key="id")


def test_a_key_that_is_not_unique_is_named_with_an_example(spark):
    ok = _df(spark, DIRTY)
    twice = _df(spark, CLEAN + [(3, "R", 3.5)])
    with pytest.raises(ParameterError, match=r"not unique in the clean table: 1 value\(s\) repeat, for example '3'"):
        repair_accuracy(ok, ok, twice, key="id")


def test_null_keys_and_rows_missing_from_a_version_are_refused(spark):
    ok = _df(spark, DIRTY)
    with pytest.raises(ParameterError, match="NULL in 1 row"):
        repair_accuracy(ok, ok, _df(spark, CLEAN[:3] + [(None, "s", 4.0)]), key="id")
    with pytest.raises(DqkitError, match=r"same rows: 1 key\(s\) of the others missing from the repaired table "
                                         r"\(for example '4'\)"):
        repair_accuracy(ok, _df(spark, REPAIRED[:3]), _df(spark, CLEAN), key="id")


# ------------------------------------------------------------------------- property: a pandas oracle
_TEXT = st.one_of(st.none(), st.sampled_from(["a", "b", "c"]))
_NUM = st.one_of(st.none(), st.integers(-3, 3))
_ROW = st.tuples(_TEXT, _NUM)


def _oracle(dirty, repaired, clean):
    """Brute force over Python tuples: NULL-safe equality is plain ``==`` with None."""
    changes = correct = errors = mism = 0
    sq = 0.0
    for d, r, g in zip(dirty, repaired, clean):
        for j in range(2):
            changes += r[j] != d[j]
            correct += r[j] != d[j] and r[j] == g[j]
            errors += d[j] != g[j]
        mism += r[0] != g[0]
        if r[1] is None or g[1] is None:
            mism += (r[1] is None) != (g[1] is None)
        else:
            sq += (r[1] - g[1]) ** 2
    p = 1.0 if changes == 0 else correct / changes
    rc = 1.0 if errors == 0 else correct / errors
    return changes, correct, errors, mism, math.sqrt(sq), p, rc


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.integers(0, 6).flatmap(lambda n: st.tuples(*[st.lists(_ROW, min_size=n, max_size=n)] * 3)))
def test_accuracy_equals_a_brute_force_oracle(spark, tables):
    schema = T.StructType([T.StructField("k", T.IntegerType()), T.StructField("s", T.StringType()),
                           T.StructField("v", T.IntegerType())])
    frames = [spark.createDataFrame([(i, *row) for i, row in enumerate(t)], schema) for t in tables]
    acc = repair_accuracy(*frames, key="k")
    changes, correct, errors, mism, dist, p, r = _oracle(*tables)
    assert (acc.changes, acc.correct_changes, acc.errors, acc.mismatches) == (changes, correct, errors, mism)
    assert acc.distance == pytest.approx(dist) and acc.precision == pytest.approx(p) and acc.recall == pytest.approx(r)
    assert acc.f1 == pytest.approx(0.0 if p + r == 0 else 2 * p * r / (p + r))


# ------------------------------------------------------------------- the BART-style tax errors
def test_bart_errors_hit_only_the_chosen_attributes_at_the_chosen_rate(spark):
    from data.tax import clean_tax, inject_errors

    clean = clean_tax(2000, seed=5, spark=spark).localCheckpoint()
    dirty = inject_errors(clean, ["city", "state"], error_rate=0.1, seed=5)
    assert [(f.name, f.dataType) for f in dirty.schema] == [(f.name, f.dataType) for f in clean.schema]
    good, bad = clean.toPandas().set_index("tid").sort_index(), dirty.toPandas().set_index("tid").sort_index()
    assert good.drop(columns=["city", "state"]).equals(bad.drop(columns=["city", "state"]))
    hits = {a: list(good.index[good[a] != bad[a]]) for a in ("city", "state")}
    assert all(150 < len(h) < 250 for h in hits.values())  # 10 % of 2000 cells each
    # each error is a typo (one character of the same class changed) or another value of the domain
    typos = in_domain = total = 0
    for attr, tids in hits.items():
        domain = set(good[attr])
        for g, b in zip(good.loc[tids, attr], bad.loc[tids, attr]):
            total += 1
            in_domain += b in domain
            if len(g) == len(b) and sum(x != y for x, y in zip(g, b)) == 1:
                i = next(i for i, (x, y) in enumerate(zip(g, b)) if x != y)
                assert g[i].isdigit() == b[i].isdigit() and g[i].isupper() == b[i].isupper()
                typos += 1
            else:
                assert b in domain
    assert typos > 0.3 * total and in_domain > 0.3 * total
    # seeded and independent of partitioning; another seed corrupts other cells
    again = inject_errors(clean.repartition(5), ["city", "state"], error_rate=0.1, seed=5)
    assert again.toPandas().set_index("tid").sort_index().equals(bad)
    other = inject_errors(clean, ["city"], error_rate=0.1, seed=6).toPandas().set_index("tid").sort_index()
    assert list(good.index[good.city != other.city]) != hits["city"]


def test_bart_errors_on_numbers_and_nulls_take_another_domain_value(spark):
    from data.tax import errors_of, inject_errors

    df = spark.createDataFrame([(i, None if i % 4 == 0 else i % 3, "") for i in range(40)],
                               "tid long, n long, t string")
    dirty = inject_errors(df, ["n", "t"], error_rate=1.0, seed=1)
    errs = errors_of(dirty, df).toPandas()
    n = errs[errs.attribute == "n"]
    assert len(n) == 40 and set(n.dirty_value) <= {"0", "1", "2"}
    assert set(errs[errs.attribute == "t"].tid) == set()  # an empty text with no other domain value stays clean
    with pytest.raises(ValueError, match="key 'tid' cannot be corrupted"):
        inject_errors(df, ["tid"])


def test_tax_bart_variant_writes_dirty_clean_and_errors(spark, tmp_path):
    from data.tax import generate_tax, write_tax

    dirty, clean = generate_tax(300, "BART", error_rate=0.05, seed=2, spark=spark, attributes=["city"])
    assert {r["city"] for r in dirty.exceptAll(clean).collect()} and \
        dirty.drop("city").exceptAll(clean.drop("city")).count() == 0
    path = write_tax(str(tmp_path / "tax"), 300, "bart", error_rate=0.05, seed=2, spark=spark)
    assert sorted(p.name for p in (tmp_path / "tax").iterdir()) == ["clean", "dirty", "errors"]
    assert path.endswith("dirty")


# ------------------------------------------------------------------------------------- acceptance
ROWS, ZIP_SIZE, ERROR_RATE = 4000, 50, 0.05


def test_acceptance_fd_repair_of_tax_with_5_percent_bart_errors(spark, record_property):
    """Tax data, 5 % of city and state cells corrupted; FDs zipcode -> city, zipcode -> state:
    the equivalence-class repair reaches precision >= 0.95 and recall >= 0.90."""
    from data.tax import generate_tax
    from dqkit.repair import repair

    dirty, clean = generate_tax(ROWS, "BART", error_rate=ERROR_RATE, seed=42, spark=spark, zip_size=ZIP_SIZE)
    dirty, clean = dirty.localCheckpoint(), clean.localCheckpoint()
    rules = ["phi_city: zipcode -> city", "phi_state: zipcode -> state"]
    result = repair(dirty, rules, key="tid")
    acc = repair_accuracy(dirty, result, clean, key="tid", attributes=["city", "state"])
    line = (f"tax {ROWS} rows, {ERROR_RATE:.0%} BART errors in city and state: {acc.errors} errors, "
            f"{acc.changes} changes, {acc.correct_changes} correct; precision {acc.precision:.4f}, "
            f"recall {acc.recall:.4f}, F1 {acc.f1:.4f}; {result.iterations} iteration(s), "
            f"{result.remaining} violations remain")
    print(line)
    record_property("tax_accuracy", line)
    assert isinstance(acc, RepairAccuracy) and acc.rows == ROWS
    assert 0.03 * 2 * ROWS < acc.errors < 0.07 * 2 * ROWS
    assert acc.precision >= 0.95 and acc.recall >= 0.90
    assert result.remaining == 0
