"""TCFC (dqkit.tcfc): spec model, engines, comparison semantics, budget, reuse, result, CLI.

Most tests run SQLite/DuckDB sides (no Spark job) and a real PostgreSQL started once for the module
by ``pgserver``; Spark is used where the requirement is about Spark (Table 2's star schema, the hash
aggregate, cancelling a slow Spark job).
"""
from __future__ import annotations

import datetime as dt
import json
import os
import threading
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dqkit.errors import SourceError, UnknownColumnError, UnsupportedTypeError
from dqkit.tcfc import (COMPLETED, GRACE_S, UNCOMPLETED, SpecError, dump_spec, load_spec, mask_url, parse_spec,
                        tcfc)

from support.tables import sqlite_table

# ------------------------------------------------------------------------------------------ fixtures
EXAM_SRC = [(101, 36, "2013-01-01", 1), (101, 37, "2012-01-01", 0), (102, 36, "2013-02-02", 1),
            (101, 38, "2013-03-03", 1), (102, 38, "2012-06-06", 0)]
A_TABLE2 = [["sum", "has_passed", "sumPassed"], ["avg", "has_passed", "avgPassed"], ["count", "has_passed", "recCount"]]
LEVELS_TABLE2 = [[], ["course_id"], ["course_id", "student_id"], ["course_id", "student_id", "exam_date"]]


@pytest.fixture(scope="module")
def pg(tmp_path_factory):
    """A real PostgreSQL 16 (pgserver) for this module; its URL, with the exam source loaded."""
    pgserver = pytest.importorskip("pgserver", reason="pgserver is not installed (pip install pgserver)")
    import psycopg

    import shutil
    import tempfile

    # a folder the server's own (non-root) user can reach: pytest's tmp folders are private to root
    folder = Path(tempfile.mkdtemp(prefix="dqkit-tcfc-pg-"))
    os.environ.setdefault("XDG_RUNTIME_DIR", tempfile.mkdtemp(prefix="dqkit-xdg-"))
    try:
        srv = pgserver.get_server(folder, cleanup_mode="stop")
    except Exception as exc:  # pragma: no cover - depends on the machine
        pytest.skip(f"pgserver could not start PostgreSQL in {folder} ({type(exc).__name__}: {exc}); "
                    f"its log is in that folder")
    url = srv.get_uri()
    with psycopg.connect(url, autocommit=True) as c:
        c.execute("CREATE TABLE exam (course_id int, student_id int, exam_date date, has_passed int)")
        with c.cursor() as cur:
            cur.executemany("INSERT INTO exam VALUES (%s, %s, %s, %s)", EXAM_SRC)
        c.execute("CREATE TABLE odd_dates (k int, d date)")
        c.execute("INSERT INTO odd_dates VALUES (1, '2020-01-01'), (2, '20000-01-01'), (3, 'infinity')")
    yield url
    srv.cleanup()
    shutil.rmtree(folder, ignore_errors=True)


def _duckdb(path: Path, tables: dict[str, tuple[str, list[tuple]]]) -> str:
    import duckdb

    c = duckdb.connect(str(path))
    for name, (ddl, rows) in tables.items():
        c.execute(f"CREATE OR REPLACE TABLE {name} ({ddl})")
        if rows:
            c.executemany(f"INSERT INTO {name} VALUES ({','.join('?' * len(rows[0]))})", rows)
    c.close()
    return f"duckdb:///{path.as_posix()}"


# Figure 2: yearEnroll at a HEI; the staging copy lost one row of (HEI1, 09/10, 1st)
YEAR_ENROLL = ([("HEI1", "09/10", "1st", f"s{i}") for i in range(1, 4)]
               + [("HEI1", "09/10", "2nd", f"s{i}") for i in range(4, 6)]
               + [("HEI1", "10/11", "1st", f"s{i}") for i in range(6, 8)]
               + [("HEI1", "10/11", "2nd", f"s{i}") for i in range(8, 11)]
               + [("HEI2", "09/10", "1st", f"t{i}") for i in range(1, 5)]
               + [("HEI3", "10/11", "5th", f"u{i}") for i in range(1, 4)])
LEVELS_FIG2 = [["HEI_id"], ["HEI_id", "acdmYear"], ["HEI_id", "acdmYear", "yearOfStudy"],
               ["HEI_id", "acdmYear", "yearOfStudy", "student_id"]]


def _fig2(tmp_path: Path, target_rows: list[tuple], name: str = "t") -> dict:
    ddl = "HEI_id text, acdmYear text, yearOfStudy text, student_id text"
    src = sqlite_table(tmp_path / f"{name}_src.db", "yearEnroll", ddl, YEAR_ENROLL)
    tgt = _duckdb(tmp_path / f"{name}_tgt.duckdb", {"yearEnroll": (ddl.replace("text", "varchar"), target_rows)})
    return {"pairs": [{"name": "yearEnroll", "healthy_depth": 2, "source": {"url": src, "table": "yearEnroll"},
                       "target": {"url": tgt, "table": "yearEnroll"}, "aggregates": [["count", "*", "cnt"]],
                       "levels": LEVELS_FIG2}]}


# ------------------------------------------------------------------------------- spec model (M1-M7)
def _pair(**over):
    base = {"name": "p", "source": "a.parquet", "target": "b.parquet", "aggregates": [["count", "*", "n"]],
            "levels": [{"X": [], "A": [["count", "*", "n"]]}, {"X": ["k"], "A": [["count", "*", "n"]]}]}
    base.update(over)
    return {"pairs": [base]}


def test_spec_round_trips_through_yaml_and_checks_levels_up_front(tmp_path):
    spec = parse_spec({"budget": 30, "pairs": [{
        "name": "exam", "priority": 3, "healthy_depth": 2, "source": {"url": "sqlite:///x.db", "table": "exam"},
        "target": {"tables": {"fExam": "f.parquet"}, "query": "SELECT * FROM fExam", "columns": {"a": "b"}},
        "aggregates": A_TABLE2, "levels": LEVELS_TABLE2}]})
    f = tmp_path / "spec.yaml"
    f.write_text(dump_spec(spec))
    again = load_spec(f)
    assert again == spec and again.pairs[0].full_depth == 4 and again.budget == 30  # M1, M7
    assert again.pairs[0].levels[1].A[2].to_list() == ["count", "has_passed", "recCount"]


@pytest.mark.parametrize("over, words", [
    ({"levels": [["k"], ["j"]]}, "not nested"),
    ({"levels": [["k"], ["k"]]}, "not nested"),
    ({"levels": [{"X": ["k"], "A": [["sum", "k", "s"]]}]}, "fragmentation column"),
    ({"levels": [{"X": ["k"], "A": [["count", "*", "k"]]}]}, "collides"),
    ({"levels": [{"X": [], "A": [["median", "v", "m"]]}]}, "unknown aggregate"),
    ({"healthy_depth": 3}, "healthy_depth"),
    ({"levels": [{"X": [], "A": [["hash", "*", "h"]]}], "source": {"url": "sqlite:///a.db", "table": "t"}},
     "same engine"),
    ({"source": {"url": "mysql://h/db", "table": "t"}}, "unknown database URL"),
    ({"source": {"url": "sqlite:///a.db"}}, "exactly one of table"),
])
def test_bad_specs_are_refused_before_any_engine(over, words):
    with pytest.raises(SpecError, match=words):
        parse_spec(_pair(**over))


@pytest.mark.parametrize("budget", [0, -5, "soon"])
def test_a_budget_that_is_not_positive_is_refused(budget):
    with pytest.raises(SpecError, match="budget"):
        tcfc(_pair(), budget=budget)
    with pytest.raises(SpecError, match="budget"):
        parse_spec({**_pair(), "budget": budget})


def test_passwords_are_masked_in_urls():
    assert mask_url("postgresql://bob:s3cret@db.example:5433/dw") == "postgresql://bob:***@db.example:5433/dw"
    assert "s3cret" not in mask_url("postgresql://h/dw?user=bob&password=s3cret")


def test_unknown_column_is_named_with_the_side_and_the_attribute_map(tmp_path):
    url = sqlite_table(tmp_path / "a.db", "t", "k int, v int", [(1, 2)])
    src = sqlite_table(tmp_path / "b.db", "t", "k int, w int", [(1, 2)])
    spec = {"pairs": [{"name": "p", "source": {"url": src, "table": "t"},
                       "target": {"url": url, "table": "t", "columns": {"w": "nope"}},
                       "levels": [{"X": ["k"], "A": [["sum", "w", "s"]]}]}]}
    with pytest.raises(UnknownColumnError, match="target .* no column 'w'.*attribute map"):
        tcfc(spec)


def test_unreachable_database_fails_fast_with_a_masked_url(wall_clock):
    spec = {"pairs": [{"name": "p", "source": {"url": "postgresql://bob:s3cret@10.255.255.1:5432/dw", "table": "t"},
                       "target": {"url": "sqlite:///nowhere.db", "table": "t"},
                       "levels": [{"X": [], "A": [["count", "*", "n"]]}]}]}
    with wall_clock.within(8, "connecting with a 1 s timeout"), pytest.raises(SourceError) as err:
        tcfc(spec, connect_timeout=1)
    assert "cannot connect" in str(err.value) and "s3cret" not in str(err.value) and "***" in str(err.value)


def test_types_that_cannot_be_compared_across_engines_are_refused(tmp_path):
    src = sqlite_table(tmp_path / "a.db", "t", "k int, d date", [(1, "2020-01-01")])
    tgt = _duckdb(tmp_path / "b.duckdb", {"t": ("k int, d int", [(1, 5)])})
    spec = {"pairs": [{"name": "p", "source": {"url": src, "table": "t"}, "target": {"url": tgt, "table": "t"},
                       "levels": [{"X": ["k"], "A": [["max", "d", "m"]]}]}]}
    with pytest.raises(UnsupportedTypeError, match="'d' cannot be compared across engines"):
        tcfc(spec)


# ------------------------------------------------------------------------------ goldens C10 and C11
def test_table2_star_schema_postgresql_vs_spark_finds_the_missing_and_excess_exam(spark, pg, tmp_path):
    """C10: exam in PostgreSQL vs fExam + dimensions in Spark through tau^-1 (Table 2); P1 batching."""
    fexam = [(1, 2, 11, 0), (1, 2, 12, 0), (2, 1, 13, 1), (1, 3, 14, 1), (2, 3, 15, 0)]
    dims = {"fExam": (fexam, "courseId int, studentId int, dateId int, hasPassed int"),
            "dCourse": ([(1, 101), (2, 102)], "courseId int, course_id int"),
            "dStudent": ([(1, 36), (2, 37), (3, 38)], "studentId int, student_id int"),
            "dDate": ([(10, dt.date(2013, 1, 2)), (11, dt.date(2012, 1, 1)), (12, dt.date(2012, 2, 2)),
                       (13, dt.date(2013, 2, 2)), (14, dt.date(2013, 3, 3)), (15, dt.date(2012, 6, 6))],
                      "dateId int, date date")}
    # the DW lost (101, 36, 2013-01-01) and holds an extra (101, 37, 2012-02-02)
    tables = {name: spark.createDataFrame(rows, schema) for name, (rows, schema) in dims.items()}
    tau = ("SELECT c.course_id, s.student_id, d.date AS exam_date, f.hasPassed FROM fExam f "
           "JOIN dCourse c ON f.courseId = c.courseId JOIN dStudent s ON f.studentId = s.studentId "
           "JOIN dDate d ON f.dateId = d.dateId")
    spec = {"pairs": [{"name": "exam", "source": {"url": pg, "table": "exam"},
                       "target": {"tables": tables, "query": tau, "columns": {"has_passed": "hasPassed"}},
                       "aggregates": A_TABLE2, "levels": LEVELS_TABLE2}]}
    r = tcfc(spec)
    try:
        assert r.status == COMPLETED and r.exit_code == 1
        last = {(d.kind, d.values) for d in r.differences if d.level == 4}
        assert (("MISSING", (101, 36, dt.date(2013, 1, 1))) in last and ("EXCESS", (101, 37, dt.date(2012, 2, 2))) in last)
        assert len(last) == 2
        jobs = r.jobs()
        assert list(jobs.level) == [1, 2, 3, 4] and list(jobs.kind) == ["ROOT", "ERROR", "ERROR", "ERROR"]
        assert jobs.fragments_in_filter.iloc[3] == 2  # Table 2 depth 4: both students in ONE query per side
        rec = r.state.records[3]
        assert '"student_id" = %s' in rec.source_sql and "36" not in rec.source_sql  # values bound, not pasted
        assert r.queries == 8 and r.bytes_crossed > 0
        d = r.to_dict()
        json.dumps(d)
        assert d["pairs"][0]["state"] == "differences" and d["pairs"][0]["complete"]
        fig = r.plot_tree("exam")
        assert len(fig.axes[0].texts) >= 6
    finally:
        r.close()


def test_figure2_drills_only_the_erroneous_branch_and_stops_healthy_pairs_at_healthy_depth(tmp_path):
    """C11: HEI1 10 <> 9 -> (HEI1, 09/10) -> (HEI1, 09/10, 1st) -> the tuple; (HEI1, 10/11) never queried."""
    lost = ("HEI1", "09/10", "1st", "s2")
    r = tcfc(_fig2(tmp_path, [t for t in YEAR_ENROLL if t != lost]))
    recs = r.state.records
    assert [(j.level, j.kind, j.filter_values) for j in recs] == [
        (1, "ROOT", ()), (2, "ERROR", (("HEI1",),)), (3, "ERROR", (("HEI1", "09/10"),)),
        (4, "ERROR", (("HEI1", "09/10", "1st"),))]
    assert all("10/11" not in str(j.filter_values) for j in recs)
    assert [(d.level, d.kind, d.values, d.source, d.target) for d in r.differences] == [
        (1, "DIFF", ("HEI1",), (10,), (9,)), (2, "DIFF", ("HEI1", "09/10"), (5,), (4,)),
        (3, "DIFF", ("HEI1", "09/10", "1st"), (3,), (2,)), (4, "MISSING", lost, (1,), None)]
    cov = r.coverage().iloc[0]
    assert cov.rows_differing_at_least == 1 and cov.deepest_level == 4
    g = r.tree("yearEnroll")
    red = [n for n, a in g.nodes(data=True) if a["kind"] in ("DIFF", "MISSING")]
    assert len(red) == 4 and any(a["kind"] == "EQUAL" and "10/11" in a["label"] for _, a in g.nodes(data=True))
    # no differences: stopped at {HEI_id, acdmYear} (healthy depth 2)
    same = tcfc(_fig2(tmp_path, list(YEAR_ENROLL), "same"))
    assert same.status == COMPLETED and same.exit_code == 0
    assert [(j.level, j.kind) for j in same.state.records] == [(1, "ROOT"), (2, "HEALTHY")]
    assert same.coverage().iloc[0].state == "no differences found"


# ------------------------------------------------------------------------------ properties C8, C9
KEYS = st.tuples(st.one_of(st.none(), st.integers(0, 3)), st.integers(0, 5))
ROWS = st.dictionaries(KEYS, st.tuples(st.one_of(st.none(), st.integers(-3, 3)),
                                       st.one_of(st.none(), st.sampled_from(["", "a", "b", "NULL"]))),
                       max_size=14)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(src=ROWS, changes=st.lists(st.tuples(st.sampled_from(["ins", "del", "upd"]), KEYS,
                                            st.tuples(st.one_of(st.none(), st.integers(-3, 3)),
                                                      st.sampled_from([None, "", "a", "c"]))), max_size=6))
def test_key_level_report_equals_the_anti_joins_of_a_full_outer_join(tmp_path_factory, src, changes):
    """C8/C9 (H1 in DuckDB): inserts, deletes and updates, NULL fragment values, NULL vs '' in the data."""
    tgt = dict(src)
    for op, key, val in changes:
        if op == "del":
            tgt.pop(key, None)
        else:
            tgt[key] = val
    missing = {k for k in src if k not in tgt}
    excess = {k for k in tgt if k not in src}
    diff = {k for k in src if k in tgt and src[k] != tgt[k]}
    folder = tmp_path_factory.mktemp("prop")
    ddl = "k1 int, k2 int, v int, w varchar"
    url = _duckdb(folder / "x.duckdb", {"s": (ddl, [(*k, *v) for k, v in sorted(src.items(), key=str)]),
                                        "t": (ddl, [(*k, *v) for k, v in sorted(tgt.items(), key=str)])})
    levels = [{"X": ["k1"], "A": [["count", "*", "n"], ["hash", "*", "h"]]},
              {"X": ["k1", "k2"], "A": [["count", "*", "n"], ["sum", "v", "sv"], ["count", "v", "nv"],
                                        ["min", "w", "w"], ["count", "w", "nw"]]}]
    r = tcfc({"pairs": [{"name": "p", "source": {"url": url, "table": "s"}, "target": {"url": url, "table": "t"},
                         "levels": levels}]})
    got = {kind: {d.values for d in r.differences if d.level == 2 and d.kind == kind}
           for kind in ("MISSING", "EXCESS", "DIFF")}
    r.close()
    assert r.status == COMPLETED
    assert got == {"MISSING": missing, "EXCESS": excess, "DIFF": diff}
    assert r.exit_code == (1 if missing or excess or diff else 0)


def test_cross_engine_key_level_matches_null_safely_and_compares_floats_with_tolerance(tmp_path, pg):
    """C3, C4, X1: PostgreSQL numeric/date vs SQLite text dates and reals; NULL fragments drill."""
    import psycopg

    with psycopg.connect(pg, autocommit=True) as c:
        c.execute("CREATE TABLE m (g int, k int, d date, x numeric(10,2), f double precision)")
        c.execute("INSERT INTO m VALUES (NULL, 1, '2020-01-01', 1.50, 0.1), (NULL, 2, NULL, 2.00, 0.2), "
                  "(1, 3, '2020-01-03', 3.25, 0.3), (1, 4, '2020-01-04', 4.00, 0.7)")
    rows = [(None, 1, "2020-01-01", 1.5, 0.1), (None, 2, None, 2.0, 0.2),
            (1, 3, "2020-01-03", 3.25, 0.1 + 0.2), (1, 4, "2020-01-05", 4.0, 0.7)]
    url = sqlite_table(tmp_path / "m.db", "m", "g int, k int, d date, x real, f real", rows)
    spec = {"pairs": [{"name": "m", "source": {"url": pg, "table": "m"}, "target": {"url": url, "table": "m"},
                       "aggregates": [["count", "*", "n"], ["max", "d", "md"], ["sum", "f", "sf"], ["avg", "x", "ax"]],
                       "levels": [["g"], ["g", "k"]]}]}
    r = tcfc(spec)
    r.close()
    assert [(d.level, d.kind, d.values) for d in r.differences] == [(1, "DIFF", (1,)), (2, "DIFF", (1, 4))]
    assert r.differences[1].source[1] == dt.date(2020, 1, 4) and r.differences[1].target[1] == dt.date(2020, 1, 5)


def test_values_postgresql_holds_but_python_cannot_are_reported_not_dropped(tmp_path, pg):
    url = sqlite_table(tmp_path / "d.db", "odd_dates", "k int, d date", [(1, "2020-01-01")])
    spec = {"pairs": [{"name": "d", "source": {"url": pg, "table": "odd_dates"}, "target": {"url": url, "table": "odd_dates"},
                       "levels": [{"X": ["d"], "A": [["count", "*", "n"]]}]}]}
    r = tcfc(spec)
    r.close()
    missing = [d.values[0] for d in r.differences if d.kind == "MISSING"]
    assert len(missing) == 2 and {m.text for m in missing} == {"20000-01-01", "infinity"}
    assert len(r.state.unrepresentable) == 2 and "cannot be represented" in r.to_text()


# ----------------------------------------------------------------------------------- hashing (H2)
def test_hash_aggregate_catches_offsetting_changes_and_duplicates_that_count_and_sum_miss(spark):
    src = spark.createDataFrame([(1, "a", 5), (1, "b", 5), (2, "c", 1), (2, "d", 3), (3, "e", 7), (3, "f", 7)],
                                "g int, k string, v int")
    tgt = spark.createDataFrame([(1, "a", 5), (1, "a", 5),   # g=1: a duplicated, b missing (count, sum equal)
                                 (2, "c", 2), (2, "d", 2),   # g=2: +1 / -1 offsetting value changes
                                 (3, "e", 7), (3, "x", 7)],  # g=3: a missing + an excess row in one fragment
                                "g int, k string, v int")
    native = [["count", "*", "n"], ["sum", "v", "s"], ["count", "k", "nk"]]
    base = {"name": "h", "source": {"frame": src}, "target": {"frame": tgt}}
    weak = tcfc({"pairs": [{**base, "levels": [{"X": ["g"], "A": native}]}]})
    strong = tcfc({"pairs": [{**base, "levels": [{"X": ["g"], "A": [*native, ["hash", "*", "h"]]}]}]})
    assert weak.status == strong.status == COMPLETED
    assert weak.differences == [] and weak.exit_code == 0
    assert [d.values for d in strong.differences] == [(1,), (2,), (3,)]
    # both sides in one Spark session are compared in Spark (only differing fragments fetched); the
    # driver-side comparison gives the same report
    driver = tcfc({"pairs": [{**base, "levels": [{"X": ["g"], "A": [*native, ["hash", "*", "h"]]}]}]},
                  compare_in_spark=False)
    assert [(d.values, d.kind, d.source, d.target) for d in driver.differences] == \
        [(d.values, d.kind, d.source, d.target) for d in strong.differences]
    assert strong.state.records[0].source_rows == 3 and driver.state.records[0].source_rows == 3
    assert strong.queries == 1 and driver.queries == 2


# ---------------------------------------------------------------------------- scheduling (T1, T2, T6)
def _many_pairs(tmp_path: Path, n: int = 3) -> dict:
    pairs = []
    for i in range(n):
        s = sqlite_table(tmp_path / f"s{i}.db", "t", "g int, k int", [(g, k) for g in range(3) for k in range(3)])
        t = sqlite_table(tmp_path / f"t{i}.db", "t", "g int, k int", [(g, k) for g in range(3) for k in range(3) if (g, k) != (i, i)])
        pairs.append({"name": f"p{i}", "priority": i, "source": {"url": s, "table": "t"}, "target": {"url": t, "table": "t"},
                      "aggregates": [["count", "*", "n"]], "levels": [[], ["g"], ["g", "k"]]})
    return {"pairs": pairs}


def test_roots_of_every_pair_run_first_and_the_order_is_deterministic(tmp_path):
    spec = _many_pairs(tmp_path)
    one, two = tcfc(spec), tcfc(spec, max_batch=1)
    order = [(j.pair, j.level, j.kind) for j in one.state.records]
    assert order[:3] == [("p2", 1, "ROOT"), ("p1", 1, "ROOT"), ("p0", 1, "ROOT")]  # T1; priority breaks ties
    assert [lvl for _, lvl, _ in order] == sorted(lvl for _, lvl, _ in order)   # breadth-first error pursuit
    again = tcfc(spec)
    strip = lambda r: [(d.pair, d.level, d.values, d.kind, d.source, d.target) for d in r.differences]  # noqa: E731
    assert strip(again) == strip(one) == strip(two)  # T6 (and P1: batching does not change the report)
    assert [(j.pair, j.level, j.kind) for j in again.state.records] == order
    bfs = tcfc(spec, order="breadth_first")
    assert strip(bfs) == strip(one)


# ------------------------------------------------------------------------------------ budget (T3-T5)
SLOW_PG = "SELECT g AS k, 1 AS v FROM generate_series(1, 400) AS g WHERE CAST(pg_sleep(0.02) AS text) = ''"


def test_budget_expiry_cancels_postgresql_and_returns_a_coarse_answer(pg, tmp_path, wall_clock):
    """T3-T5, E1, E2 on PostgreSQL: the slow query is cancelled; nothing is left running on the server."""
    import psycopg

    fast = sqlite_table(tmp_path / "f.db", "t", "k int, v int", [(1, 1), (2, 2)])
    fast2 = sqlite_table(tmp_path / "f2.db", "t", "k int, v int", [(1, 1)])
    spec = {"pairs": [
        {"name": "fast", "priority": 9, "source": {"url": fast, "table": "t"}, "target": {"url": fast2, "table": "t"},
         "aggregates": [["count", "*", "n"]], "levels": [[], ["k"]]},
        {"name": "slow", "priority": 5, "source": {"url": pg, "query": SLOW_PG}, "target": {"url": fast, "table": "t"},
         "aggregates": [["count", "*", "n"]], "levels": [[], ["k"]]},
        {"name": "never", "priority": 1, "source": {"url": fast, "table": "t"}, "target": {"url": fast, "table": "t"},
         "aggregates": [["count", "*", "n"]], "levels": [[], ["k"]]}]}
    budget = 2.0
    with wall_clock.within(budget + GRACE_S + 0.5, "a 2 s budget over a slow PostgreSQL query"):
        r = tcfc(spec, budget=budget)
    try:
        assert r.status == UNCOMPLETED
        cov = r.coverage().set_index("pair")
        assert cov.loc["fast", "state"] == "differences" and cov.loc["fast", "rows_differing_at_least"] == 1
        assert cov.loc["slow", "state"] == "not examined" and cov.loc["never", "state"] == "not examined"
        assert {j.pair for j in r.pending} >= {"slow", "never"} and r.exit_code == 1
        assert [rec.status for rec in r.state.records if rec.pair == "slow"] == ["interrupted"]
        with psycopg.connect(pg, autocommit=True) as c:
            for _ in range(20):
                busy = c.execute("SELECT count(*) FROM pg_stat_activity WHERE state = 'active' "
                                 "AND pid <> pg_backend_pid() AND query LIKE '%pg_sleep%'").fetchone()[0]
                if busy == 0:
                    break
                time.sleep(0.1)
        assert busy == 0
    finally:
        r.close()


def test_budget_expiry_cancels_a_slow_spark_job(spark, wall_clock):
    """T3 on Spark: a deliberately slow job (a sleeping UDF) is cancelled through its job tag."""
    from pyspark.sql import functions as F

    slow = F.udf(lambda x: (time.sleep(0.2), x)[1], "long")
    src = spark.range(0, 200, numPartitions=2).select(slow("id").alias("k"))
    tgt = spark.range(0, 200, numPartitions=2).select(F.col("id").alias("k"))
    spec = {"pairs": [{"name": "s", "source": {"frame": src}, "target": {"frame": tgt},
                       "levels": [{"X": [], "A": [["count", "k", "n"]]}]}]}  # count(k) evaluates the UDF
    with wall_clock.within(3.0 + GRACE_S + 0.5, "a 3 s budget over a slow Spark job"):
        r = tcfc(spec, budget=3.0)
    assert r.status == UNCOMPLETED and r.exit_code == 3
    eng = r.bound["s"].source.engine
    for _ in range(50):
        if not eng.running_jobs():
            break
        time.sleep(0.1)
    assert eng.running_jobs() == []


# ------------------------------------------------------------------------------------- reuse (U1-U4)
def test_stored_leaves_prune_accounted_branches_and_drill_only_new_ones(tmp_path):
    """U2, the paper's HEI example: after a run found the (HEI1, 09/10, 1st) leaf, a row added to
    (HEI3, 10/11, 5th) makes HEI1 and HEI3 differ; HEI1 is pruned by the stored leaf, HEI3 is drilled."""
    lost = ("HEI1", "09/10", "1st", "s2")
    reuse = tmp_path / "reuse"
    spec = _fig2(tmp_path, [t for t in YEAR_ENROLL if t != lost], "one")
    first = tcfc(spec, reuse=str(reuse))
    first.close()
    assert (reuse / "tcfc_state.json").is_file()
    stored = json.loads((reuse / "tcfc_state.json").read_text())["pairs"]["yearEnroll"]
    assert [lf["level"] for lf in stored["leaves"]] == [4] and first.status == COMPLETED
    added = ("HEI3", "10/11", "5th", "u9")
    import duckdb

    with duckdb.connect(str(tmp_path / "one_tgt.duckdb")) as c:  # the next ETL cycle loads one more row
        c.execute("INSERT INTO yearEnroll VALUES (?, ?, ?, ?)", list(added))
    second = tcfc(spec, reuse=str(reuse))
    second.close()
    kinds = [(j.level, j.kind, j.filter_values) for j in second.state.records]
    assert kinds[0] == (1, "ROOT", ()) and kinds[1] == (4, "REUSE", (lost,))
    assert all("HEI1" not in str(f) for lvl, k, f in kinds if k == "ERROR")
    assert {d.values for d in second.differences if d.level == 4} == {lost, added}
    assert any("pruned" in n for n in second.state.notes)


def test_an_interrupted_run_resumes_from_the_persisted_queue(tmp_path):
    """U3: cancel after the first job; resuming finishes with the same report as an uninterrupted run."""
    lost = ("HEI1", "09/10", "1st", "s2")
    spec = _fig2(tmp_path, [t for t in YEAR_ENROLL if t != lost])
    stop = threading.Event()
    part = tcfc(spec, reuse=str(tmp_path / "r"), cancel=stop, on_job=lambda rec, diffs: stop.set())
    assert part.status == UNCOMPLETED and part.state.cancelled_by_user and len(part.pending) == 1
    rest = tcfc(spec, reuse=str(tmp_path / "r"), reuse_mode="resume")
    full = tcfc(spec)
    assert rest.status == COMPLETED and rest.state.records[0].level == 2
    assert [(d.level, d.values, d.kind) for d in rest.differences] == [(d.level, d.values, d.kind) for d in full.differences]


# ---------------------------------------------------------------------------------- result and CLI
def test_cli_exit_codes_and_json(tmp_path, capsys, wall_clock):
    import yaml

    from dqkit.cli import main

    lost = ("HEI1", "09/10", "1st", "s2")
    diff_spec = tmp_path / "diff.yaml"
    diff_spec.write_text(yaml.safe_dump(_fig2(tmp_path, [t for t in YEAR_ENROLL if t != lost], "c1")))
    same_spec = tmp_path / "same.yaml"
    same_spec.write_text(yaml.safe_dump(_fig2(tmp_path, list(YEAR_ENROLL), "c2")))
    slow = sqlite_table(tmp_path / "slow.db", "t", "k int", [(1,)])
    slow_spec = tmp_path / "slow.yaml"
    slow_spec.write_text(yaml.safe_dump({"pairs": [{"name": "s", "source": {"url": slow, "query":
        "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 50000000) SELECT x AS k FROM c"},
        "target": {"url": slow, "table": "t"}, "levels": [{"X": [], "A": [["count", "*", "n"]]}]}]}))
    assert main(["tcfc", "--spec", str(same_spec)]) == 0
    assert "IDENTICAL" in capsys.readouterr().out
    assert main(["tcfc", "--spec", str(diff_spec), "--format", "json", "--out", str(tmp_path / "out")]) == 1
    assert json.loads(capsys.readouterr().out)["exit_code"] == 1
    assert (tmp_path / "out" / "summary.json").is_file() and (tmp_path / "out" / "report.html").is_file()
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["status"] == COMPLETED and summary["differing_pairs"] == ["yearEnroll"]
    with wall_clock.within(1 + GRACE_S + 1.5, "dqkit tcfc --budget 1 over a slow query"):
        assert main(["tcfc", "--spec", str(slow_spec), "--budget", "1"]) == 3
    assert main(["tcfc", "--spec", str(slow_spec), "--budget", "0"]) == 2
    capsys.readouterr()
    assert main(["tcfc", "--spec", str(tmp_path / "missing.yaml")]) == 2
    assert "no such spec file" in capsys.readouterr().err


def test_html_escapes_fragment_values(tmp_path):
    evil = "<script>alert(1)</script>"
    s = sqlite_table(tmp_path / "e1.db", "t", "k text", [(evil,)])
    t = sqlite_table(tmp_path / "e2.db", "t", "k text", [])
    r = tcfc({"pairs": [{"name": "e", "source": {"url": s, "table": "t"}, "target": {"url": t, "table": "t"},
                         "levels": [{"X": ["k"], "A": [["count", "*", "n"]]}]}]})
    html = r.to_html(charts=False)
    r.close()
    assert evil not in html and "&lt;script&gt;" in html


def test_the_tcfc_declaration_offers_the_kernels_own_orders_and_grace():
    """The declaration imports the job orders and GRACE_S from the kernel's Spark-free model: one spelling."""
    from dqkit.systems.tcfc import GRACE_TEXT, ORDERS, TcfcParams
    from dqkit.tcfc.compare import ORDER_FUNCTIONS
    from dqkit.tcfc.model import ORDERS as KERNEL_ORDERS

    assert ORDERS is KERNEL_ORDERS and tuple(ORDER_FUNCTIONS) == ORDERS and GRACE_TEXT == f"{GRACE_S:g} s"
    assert TcfcParams.spec("order").choices == ORDERS


def test_tcfc_cli_options_and_report_parameters_come_from_one_declaration(tmp_path, capsys):
    from dqkit.cli import build_parser, main
    from dqkit.systems import get

    assert main(["report", "tcfc", "--list-parameters"]) == 0
    listing = capsys.readouterr().out
    names = ["spec", "budget", "reuse", "resume", "order", "connect_timeout", "statistics", "sample_rows"]
    assert all(f"{n} =" in listing for n in names + ["output"]), listing
    spec = tmp_path / "s.yaml"
    spec.write_text(yaml_dump(_fig2(tmp_path, list(YEAR_ENROLL), "decl")))
    argv = ["--spec", str(spec), "--budget", "7.5", "--reuse", str(tmp_path / "r"), "--resume", "--order",
            "breadth_first", "--connect-timeout", "3", "--statistics", "--sample-rows", "4"]
    args = build_parser().parse_args(["tcfc", *argv])
    tcfc_system = get("tcfc")
    params = tcfc_system.prepare({s.name: getattr(args, s.name) for s in tcfc_system.params.specs()})
    assert (params.budget, params.resume, params.order, params.connect_timeout, params.statistics,
            params.sample_rows) == (7.5, True, "breadth_first", 3.0, True, 4)
    assert tcfc_system.params.parse(params.to_parameters()) == params
    assert str(spec) in params.inputs() and any(p.endswith("decl_src.db") for p in map(str, params.inputs()))


@pytest.mark.parametrize("pairs, words", [
    ([("budget", "0")], "more than 0 seconds"), ([("budget", "nan")], "finite number"),
    ([("resume", "true")], "--resume needs --reuse"), ([("order", "sideways")], "--order must be one of"),
    ([("connect_timeout", "0")], "--connect-timeout must be more than 0"), ([("sample_rows", "-1")], "--sample-rows")])
def test_tcfc_report_refuses_bad_parameters_before_a_kernel_and_writes_nothing(tmp_path, capsys, pairs, words):
    from dqkit.cli import main

    spec = tmp_path / "s.yaml"
    spec.write_text(yaml_dump(_fig2(tmp_path, list(YEAR_ENROLL), "bad")))
    argv = ["report", "tcfc", "-p", "spec", str(spec)]
    for name, value in pairs:
        argv += ["-p", name, value]
    assert main([*argv, "-o", str(tmp_path / "rep")]) == 2
    err = capsys.readouterr().err
    assert words in err and "Traceback" not in err, err
    assert not (tmp_path / "rep").exists()


def yaml_dump(doc: dict) -> str:
    import yaml

    return yaml.safe_dump(doc)


def test_tcfc_report_renders_the_sections_escaped_and_fails_with_exit_2_on_a_bad_spec(tmp_path, capsys):
    import yaml

    from dqkit.cli import main

    lost = ("HEI1", "09/10", "1st", "s2")
    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump(_fig2(tmp_path, [t for t in YEAR_ENROLL if t != lost] + [("<b>HEI9</b>", "x", "y", "z")],
                                         "rep")))
    out = tmp_path / "report"
    assert main(["report", "tcfc", "-p", "spec", str(spec), "-p", "budget", "60", "-o", str(out)]) == 0, \
        capsys.readouterr().err
    html = (out / "tcfc_report.html").read_text()
    assert "DIFFERENT" in html and "Coverage per pair" in html and "Drill-down tree: yearEnroll" in html
    assert "&lt;b&gt;HEI9&lt;/b&gt;" in html and "<b>HEI9" not in html and "<script" not in html.lower()
    assert "dqkit report tcfc" in html and "data:image/png;base64," in html
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump({"pairs": [{"name": "p", "source": "a", "target": "b",
                                              "aggregates": [["count", "*", "n"]], "levels": [["k"], ["j"]]}]}))
    assert main(["report", "tcfc", "-p", "spec", str(bad), "-o", str(tmp_path / "bad_report")]) == 2
    assert "not nested" in capsys.readouterr().err


def test_explorer_edits_levels_checks_them_runs_grows_the_tree_and_shows_fragment_rows(spark, tmp_path):
    from dqkit.widgets import TcfcExplorer

    lost = ("HEI1", "09/10", "1st", "s2")
    ex = TcfcExplorer(_fig2(tmp_path, [t for t in YEAR_ENROLL if t != lost], "w"), spark=spark)
    assert ex.pairs.value == ("yearEnroll",) and ex.levels_text.value.splitlines()[0] == "HEI_id"
    assert not ex.set_levels("HEI_id\nacdmYear") and "not nested" in ex.notes.value
    assert not ex.set_levels("HEI_id\nHEI_id, nope") and "nope" in ex.notes.value
    assert ex.set_levels("HEI_id\nHEI_id, student_id\nHEI_id, student_id, acdmYear")
    warnings = ex.check()  # M4: level 2 is already unique, and it determines level 3
    assert len(warnings) == 2 and "already unique" in ex.notes.value and "superfluous" in ex.notes.value
    assert ex.set_levels("HEI_id\nHEI_id, acdmYear\nHEI_id, acdmYear, yearOfStudy, student_id")
    warnings = ex.check()
    assert warnings == [] and ex.notes.value == ""
    ex.budget.value = "30"  # the declared budget field: text, blank for none
    result = ex.run(timeout=60)
    assert ex.status == "done" and result.status == COMPLETED
    assert [rec.level for rec, _ in ex.controller.tree] == [1, 2, 3] and "job 3" in ex.tree_box.value
    leaf = [v for label, v in ex.leaves.options if "MISSING" in label]
    ex.leaves.value = leaf[0]
    sample = ex.show_fragment()
    assert len(sample["source"]) == 1 and sample["target"].empty and "s2" in ex.rows_box.value
    result.close()


def test_explorer_cancel_keeps_the_uncompleted_report(spark, tmp_path, wall_clock):
    from dqkit.widgets import TcfcExplorer

    slow = sqlite_table(tmp_path / "slow.db", "t", "k int", [(1,)])
    spec = {"pairs": [{"name": "s", "source": {"url": slow, "query":
            "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 80000000) SELECT x AS k FROM c"},
            "target": {"url": slow, "table": "t"}, "levels": [{"X": [], "A": [["count", "*", "n"]]}]}]}
    ex = TcfcExplorer(spec, spark=spark)
    ex.start()
    time.sleep(0.5)
    with wall_clock.within(3, "Cancel in the TCFC explorer"):
        ex.progress.cancel_button.click()
        assert ex.controller.wait(60)
    assert ex.status == "done"
    assert ex.result.status == UNCOMPLETED and ex.result.state.cancelled_by_user and ex.result.exit_code == 3
    ex.result.close()


def test_a_level_reads_only_its_columns_and_pushes_the_fragment_filter_to_parquet(spark, tmp_path):
    """M5 and P3, from the plan (no job): ReadSchema holds X and the aggregated attribute only, and the
    null-safe fragment filter reaches the Parquet scan as PushedFilters."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from dqkit.runtime.sparkutil import spark_plan
    from dqkit.tcfc.engines import EnginePool, bind_pair
    from dqkit.tcfc.spec import parse_spec

    path = tmp_path / "exam.parquet"
    pq.write_table(pa.table({"student_id": [1, 2], "course_id": [3, 4], "note": ["a", "b"], "has_passed": [1, 0]}), path)
    spec = parse_spec({"pairs": [{"name": "e", "source": str(path), "target": str(path),
                                  "aggregates": [["count", "has_passed", "n"]],
                                  "levels": [["student_id"], ["student_id", "course_id"]]}]})
    bp = bind_pair(spec.pairs[0], EnginePool(spark))
    lv = spec.pairs[0].levels[1]
    plan = spark_plan(bp.source.engine.aggregate_frame(bp.source, lv.X, lv.A, ("student_id",), [(1,)]))
    assert "PushedFilters: [EqualNullSafe(student_id,1)]" in plan
    assert "ReadSchema: struct<student_id:bigint,course_id:bigint,has_passed:bigint>" in plan and "note" not in plan


# --------------------------------------------------------------------- P4: roots from exact statistics
def _p4_tables(tmp_path: Path) -> tuple[Path, Path]:
    """A two-file Parquet source and a one-file target with one row deleted (NULLs in v and in sid)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    t = pa.table({"sid": [1, 1, 2, 2, 3, None], "k": [1, 2, 3, 4, 5, 6], "v": [1, None, 3, 4, 5, 6]})
    src = tmp_path / "p4_src"
    src.mkdir()
    pq.write_table(t.slice(0, 3), src / "part-0.parquet")
    pq.write_table(t.slice(3), src / "part-1.parquet")
    (src / "_SUCCESS").touch()
    tgt = tmp_path / "p4 tgt.parquet"
    pq.write_table(t.filter(pa.array([True, True, True, False, True, True])), tgt)
    return src, tgt


def _p4_spec(src, tgt, levels=([], ["sid"]), **top) -> dict:
    return {**top, "pairs": [{"name": "p", "source": {"table": str(src)}, "target": {"table": str(tgt)},
                              "aggregates": [["count", "*", "n"], ["count", "v", "nv"]], "levels": list(levels)}]}


def _outcome(res) -> list:
    return [(d.level, d.kind, d.values, d.source, d.target) for d in res.differences]


def test_p4_count_roots_from_parquet_footers_give_the_same_outcome_without_a_query_and_are_off_by_default(
        spark, tmp_path, capsys):
    import yaml

    from dqkit.cli import main

    src, tgt = _p4_tables(tmp_path)
    spec = _p4_spec(src, tgt)
    off = tcfc(spec, spark=spark)                       # default: off
    on = tcfc(spec, spark=spark, statistics=True)
    from_spec = tcfc(_p4_spec(src, tgt, levels=[[]], statistics=True), spark=spark)  # no Spark job at all
    assert _outcome(on) == _outcome(off) and _outcome(from_spec) == _outcome(on)[:1]
    assert _outcome(on)[0] == (1, "DIFF", (), (6, 5), (5, 4))           # count(*), count(v) with a NULL v
    assert (off.status, on.status) == (COMPLETED, COMPLETED)
    off_root, on_root = off.jobs().iloc[0], on.jobs().iloc[0]
    assert off_root["statistics"] == "" and off_root["queries"] >= 1
    assert on_root["queries"] == 0 and "source: Parquet footers of 2 file(s)" in on_root["statistics"] \
        and "target: Parquet footers of 1 file(s)" in on_root["statistics"]
    assert on.queries == off.queries - off_root["queries"]
    assert from_spec.jobs().iloc[0]["queries"] == 0
    assert on.to_dict()["jobs"][0]["statistics"].startswith("source:")
    assert parse_spec(yaml.safe_load(dump_spec(load_spec(_p4_spec(src, tgt, statistics=True))))).statistics is True
    with pytest.raises(SpecError, match="statistics must be true or false"):
        parse_spec(_p4_spec(src, tgt, statistics="yes"))
    path = tmp_path / "p4.yaml"
    path.write_text(yaml.safe_dump(spec))
    assert main(["tcfc", "--spec", str(path), "--statistics", "--format", "json"]) == 1
    assert json.loads(capsys.readouterr().out)["jobs"][0]["queries"] == 0
    for r in (off, on, from_spec):
        r.close()


def test_p4_a_side_without_an_exact_statistic_falls_back_to_its_query(spark, pg, tmp_path):
    """CSV (no footer), Parquet without null counts (count(v) is not exact from it), a footer gone since the
    scan was listed, and PostgreSQL, whose reltuples is a stale estimate here: each side runs its query."""
    import psycopg
    import pyarrow as pa
    import pyarrow.parquet as pq

    from dqkit.tcfc.engines import parquet_footer_counts

    src, tgt = _p4_tables(tmp_path)
    csv = tmp_path / "p4.csv"
    csv.write_text("sid,k,v\n1,1,1\n1,2,\n2,3,3\n2,4,4\n3,5,5\n,6,6\n")
    res = tcfc(_p4_spec(csv, tgt), spark=spark, statistics=True)
    root = res.jobs().iloc[0]
    assert root["queries"] == 1 and root["statistics"].startswith("target:") and "source" not in root["statistics"]
    assert _outcome(res)[0] == (1, "DIFF", (), (6, 5), (5, 4))
    res.close()
    bare = tmp_path / "p4_nostats.parquet"
    pq.write_table(pq.read_table(tgt), bare, write_statistics=False)
    assert parquet_footer_counts([str(bare)], ["v"]) is None           # no null count: count(v) not exact
    assert parquet_footer_counts([str(bare)], []) == (5, {})            # the row count always is
    assert parquet_footer_counts([str(tmp_path / "gone.parquet")], []) is None
    res = tcfc(_p4_spec(src, bare), spark=spark, statistics=True)
    assert res.jobs().iloc[0]["queries"] == 1 and _outcome(res)[0] == (1, "DIFF", (), (6, 5), (5, 4))
    res.close()
    with psycopg.connect(pg, autocommit=True) as c:
        c.execute("CREATE TABLE p4 (sid int, k int, v int)")
        c.execute("INSERT INTO p4 SELECT g % 7, g, g FROM generate_series(1, 1000) AS g")
        c.execute("ANALYZE p4")
        c.execute("DELETE FROM p4 WHERE k > 995")                      # reltuples still says 1000
        assert c.execute("SELECT reltuples FROM pg_class WHERE relname = 'p4'").fetchone()[0] == 1000
    full = tmp_path / "p4_995.parquet"
    pq.write_table(pa.table({"sid": [g % 7 for g in range(1, 996)], "k": list(range(1, 996)),
                             "v": list(range(1, 996))}), full)
    spec = {"pairs": [{"name": "pg", "source": {"url": pg, "table": "p4"}, "target": {"table": str(full)},
                       "aggregates": [["count", "*", "n"]], "levels": [[], ["sid"]]}]}
    res = tcfc(spec, spark=spark, statistics=True)
    root = res.jobs().iloc[0]
    assert res.status == COMPLETED and not res.differences                # 995 = 995: the query, not reltuples
    assert root["queries"] == 1 and root["statistics"].startswith("target:")
    res.close()


def test_spark_pairs_compared_in_one_stacked_group_by_equal_the_per_side_classification(spark):
    """Both sides in Spark: the stacked GROUP BY (same column types) and the null-safe join of aggregates
    (types differ: int vs bigint) report exactly what aggregating each side and classifying in Python does:
    NULL fragments, a NULL sum, float tolerance, min/max of strings, an empty side at X = []."""
    src = spark.createDataFrame([(1, 1, 1.0, "a"), (1, 2, None, "b"), (None, 3, 3.0, None), (2, 4, 4.0, "d"),
                                 (3, 5, 5.0, "e"), (None, None, 1.0, "z")], "g int, k int, f double, s string")
    tgt = spark.createDataFrame([(1, 1, 1.0 + 1e-12, "a"), (1, 2, 2.0, "b"), (None, 3, 3.0, None), (2, 4, 4.0, "D"),
                                 (4, 6, 6.0, "f"), (None, None, 1.0, "z"), (2, 7, None, None)],
                                "g int, k int, f double, s string")
    aggs = [["count", "*", "n"], ["sum", "f", "sf"], ["avg", "f", "af"], ["min", "s", "ms"], ["max", "s", "xs"],
            ["count", "s", "cs"]]

    def outcome(t, levels, **kw):
        r = tcfc({"pairs": [{"name": "p", "source": {"frame": src}, "target": {"frame": t}, "aggregates": aggs,
                             "levels": levels}]}, spark=spark, **kw)
        out = sorted((d.level, d.kind, repr(d.values), repr(d.source), repr(d.target)) for d in r.differences)
        r.close()
        return out

    cases = [(tgt, [["g"], ["g", "k"]]), (tgt.selectExpr("CAST(g AS bigint) AS g", "k", "f", "s"), [["g"]]),
             (spark.createDataFrame([], "g int, k int, f double, s string"), [[]])]
    for t, levels in cases:
        got = outcome(t, levels)
        assert got and got == outcome(t, levels, compare_in_spark=False)
        if t is tgt:
            assert (2, "DIFF", "(1, 2)", "(1, None, None, 'b', 'b', 1)", "(1, 2.0, 2.0, 'b', 'b', 1)") in got
            assert (2, "MISSING", "(None, None)", "(1, 1.0, 1.0, 'z', 'z', 1)", "None") not in got  # NULL key matched
            assert not any(v[2] == "(1, 1)" for v in got)                 # 1.0 vs 1.0 + 1e-12: within tolerance


def test_postgresql_filters_one_fragment_column_with_one_array_parameter_null_safely(pg, tmp_path):
    """P1 on PostgreSQL: a batch of parents on one column is ``c = ANY(%s)`` (+ ``OR c IS NULL``), for dates too."""
    import psycopg

    with psycopg.connect(pg, autocommit=True) as c:
        c.execute("CREATE TABLE dd (d date, k int, v int)")
        c.execute("INSERT INTO dd VALUES ('2020-01-01', 1, 1), ('2020-01-01', 2, 2), (NULL, 3, 3), (NULL, 4, 4), "
                  "('2020-01-02', 5, 5), ('2020-01-03', 6, 6)")
    rows = [("2020-01-01", 1, 1), ("2020-01-01", 2, 9), (None, 3, 3), ("2020-01-02", 5, 5), ("2020-01-03", 6, 6)]
    url = sqlite_table(tmp_path / "dd.db", "dd", "d date, k int, v int", rows)
    r = tcfc({"pairs": [{"name": "dd", "source": {"url": pg, "table": "dd"}, "target": {"url": url, "table": "dd"},
                         "aggregates": [["count", "*", "n"], ["sum", "v", "sv"]], "levels": [["d"], ["d", "k"]]}]})
    sql = r.state.records[-1].source_sql
    r.close()
    assert [(d.level, d.kind, d.values) for d in r.differences] == [
        (1, "DIFF", (None,)), (1, "DIFF", (dt.date(2020, 1, 1),)), (2, "MISSING", (None, 4)),
        (2, "DIFF", (dt.date(2020, 1, 1), 2))]
    assert '"d" = ANY(CAST(%s AS DATE[])) OR "d" IS NULL' in sql
