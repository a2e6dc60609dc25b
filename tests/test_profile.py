"""The profile system: one aggregation job (plus one small top-k job), every statistic against a pandas
oracle, metrics for the history, and a bad column refused before Spark."""
from __future__ import annotations

import datetime as dt
import json

import numpy as np
import pandas as pd
import pytest

from dqkit.cli import main
from support.sparkjobs import spark_jobs

PDF = pd.DataFrame({
    "amount": [1.0, 2.0, 2.0, None, 5.0, 2.0, 40.0, 3.5],
    "code": ["a", "bb", "bb", None, "12", "bb", "7", "ccc"],
    "day": [dt.date(2026, 1, i) for i in (1, 2, 2, 3, 4, 2, 9, 5)],
    "flag": [True, False, False, None, True, False, True, True],
    "n": ["1", "2", "2", "x", "3.5", "2", "10", "11"],
})


@pytest.fixture(scope="module")
def frame(spark):
    return spark.createDataFrame(PDF)


@pytest.fixture(scope="module")
def result(spark, frame):
    from dqkit.profile import profile

    return profile(frame, spark=spark)


def test_a_profile_is_one_aggregation_job_plus_one_top_values_job(spark, frame, result):
    from dqkit.profile import profile

    with spark_jobs(spark) as jobs:
        profile(frame, spark=spark)
    assert jobs.n == 2
    with spark_jobs(spark) as jobs:
        profile(frame, spark=spark, top_k=0)
    assert jobs.n == 1


def test_counts_moments_and_lengths_match_pandas(result):
    assert result.rows == 8 and result.duplicate_rows == 2  # (2.0, bb, 2026-01-02, False, 2) three times
    a, oracle = result.column("amount"), PDF["amount"].dropna()
    assert (a.nulls, a.distinct) == (1, oracle.nunique())
    assert (a.min, a.max) == (oracle.min(), oracle.max())
    assert a.mean == pytest.approx(oracle.mean()) and a.stddev == pytest.approx(oracle.std())
    assert a.quantiles["p50"] == 2.0 and a.quantiles["p95"] == 40.0  # exact on so few rows
    c = result.column("code")
    lengths = PDF["code"].dropna().str.len()
    assert (c.len_min, c.len_max) == (lengths.min(), lengths.max()) and c.len_mean == pytest.approx(lengths.mean())
    d = result.column("day")
    assert d.min == (dt.date(2026, 1, 1) - dt.date(1970, 1, 1)).days and d.kind == "date"


def test_top_values_with_counts_and_the_apparent_type_share(result):
    assert result.column("code").top[:2] == [("bb", 3), ("12", 1)]
    assert result.column("flag").top == [("true", 4), ("false", 3)]
    n = result.column("n")
    assert n.apparent_type == "number" and n.type_share == pytest.approx(7 / 8)
    assert result.column("code").apparent_type == "text"


def test_metrics_name_every_column_statistic(result):
    m = result.metrics()
    assert m["rows"] == 8 and m["duplicate_rows"] == 2
    assert m["amount.null_share"] == pytest.approx(1 / 8) and m["amount.p25"] == 2.0
    assert m["code.top[bb]"] == pytest.approx(3 / 7) and m["n.type_share"] == pytest.approx(7 / 8)
    assert {"code.len_mean", "code.len_p50", "day.max", "flag.mean", "amount.stddev"} <= set(m)
    assert all(np.isfinite(v) for v in m.values())


def test_the_sections_state_the_sketch_errors_and_draw_quartiles_with_bxp(result):
    text = result.to_text()
    assert "relative standard deviation 0.02" in text and "accuracy 10000" in text
    fig = result.figures()[0][1]
    assert fig.axes and any(a.patches for a in fig.axes)  # boxes from Axes.bxp


def test_the_cli_profiles_a_file_and_records_its_metrics_in_a_history(spark, tmp_path, capsys):
    table = tmp_path / "t.csv"
    PDF.to_csv(table, index=False)
    hist = tmp_path / "hist"
    code = main(["profile", str(table), "--columns", "amount,code", "--format", "json", "--history", str(hist),
                 "--as-of", "2026-01-10"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["rows"] == 8 and set(out["columns"]) == {"amount", "code"}
    assert out["history"]["judged"] == 0
    from dqkit.history.store import History

    frame = History(hist).read()
    assert set(frame["system"]) == {"profile"} and "amount.mean" in set(frame["metric"])


def test_an_unknown_column_is_refused_before_spark(tmp_path, capsys):
    table = tmp_path / "t.csv"
    PDF.to_csv(table, index=False)
    assert main(["profile", str(table), "--columns", "nope"]) == 2
    assert "nope" in capsys.readouterr().err


def test_a_catalog_history_appends_rows_and_reads_them_back(spark):
    from dqkit.history.series import series_of
    from dqkit.history.store import History, new_run

    spark.sql("DROP TABLE IF EXISTS dq_hist_test.h")
    h = History("catalog:dq_hist_test.h")
    for i in range(2):
        h.append(new_run("profile", "t", "d", {"rows": 10.0 + i}, dt.date(2026, 1, 1 + i)), spark)
    (s,) = series_of(h.read(spark)).values()
    assert [r[3]["rows"] for r in s.runs] == [10.0, 11.0]
