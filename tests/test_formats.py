"""Files real users have are read: pandas' and DuckDB's Parquet (nanosecond timestamps), Spark folders,
CSV with a BOM, quoted newlines or ``;`` separators; each written by the real writer, then run through
at least one command."""
from __future__ import annotations

import json
import warnings
from pathlib import Path

import pandas as pd
import pytest

from dqkit.cli import main
from dqkit.errors import SourceError
from dqkit.io.sources import SourceWarning, read_table

RULES = Path(__file__).resolve().parent.parent / "data" / "bigdansing_table1_rules.yaml"


def _stamps(*texts: str) -> pd.Series:
    return pd.to_datetime(list(texts), format="ISO8601")


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


# ---------------------------------------------------------------- pandas' default Parquet
def test_pandas_nanosecond_timestamps_are_read_at_microseconds_with_spark_types(spark, tmp_path):
    df = pd.DataFrame({"id": [1, 2, 3], "ts": _stamps("2024-01-01 10:00:00", "1969-12-31 23:59:59.5", "NaT"),
                       "tz": _stamps("2024-01-01 10:00:00", "2024-01-02", "2024-01-03").tz_localize("Europe/Berlin")})
    df.to_parquet(tmp_path / "t.parquet")  # pandas' defaults: INT64 TIMESTAMP(NANOS)
    with warnings.catch_warnings():
        warnings.simplefilter("error", SourceWarning)  # no digit lost: no warning
        got = read_table(tmp_path / "t.parquet", spark)
    assert [(f.name, f.dataType.simpleString()) for f in got.schema.fields] == [
        ("id", "bigint"), ("ts", "timestamp_ntz"), ("tz", "timestamp")]
    rows = got.orderBy("id").collect()
    assert [str(r.ts) for r in rows] == ["2024-01-01 10:00:00", "1969-12-31 23:59:59.500000", "None"]
    assert rows[0].tz.timestamp() == pd.Timestamp("2024-01-01 09:00:00", tz="UTC").timestamp()


def test_truncated_nanoseconds_are_floored_and_said(spark, tmp_path):
    pd.DataFrame({"id": [1, 2], "ts": _stamps("2024-01-02 11:00:00.123456789", "1969-12-31 23:59:59.999999999")}) \
        .to_parquet(tmp_path / "t.parquet")
    with pytest.warns(SourceWarning, match=r"t\.parquet: nanosecond timestamps read at microsecond precision; "
                                           r"truncated 2 value\(s\) of 'ts'"):
        got = read_table(tmp_path / "t.parquet", spark)
    assert [str(r.ts) for r in got.orderBy("id").collect()] == ["2024-01-02 11:00:00.123456",
                                                               "1969-12-31 23:59:59.999999"]


def _pandas_versions(tmp_path: Path, new_city: str = "LA") -> tuple[Path, Path]:
    for side, city in (("old", "NY"), ("new", new_city)):
        (tmp_path / side).mkdir()
        pd.DataFrame({"id": [1, 2], "city": ["NY", city],
                      "seen": _stamps("2024-01-01 10:00:00.000000001", "2024-01-02")}) \
            .to_parquet(tmp_path / side / "users.parquet")
    return tmp_path / "old", tmp_path / "new"


def test_delta_compares_pandas_written_versions_and_warns_on_stderr(spark, tmp_path, capsys):
    old, new = _pandas_versions(tmp_path)
    before = _snapshot(tmp_path)
    code = main(["delta", str(old), str(new), "--key", "users=id", "--format", "json"])
    out, err = capsys.readouterr()
    assert code == 1, err
    assert json.loads(out)["tables"]["users"]["row_stats"]["differences"] == 2
    assert "dqkit: warning:" in err and "truncated 1 value(s) of 'seen'" in err
    assert _snapshot(tmp_path) == before


def test_detect_reads_a_pandas_written_table_with_a_datetime_column(spark, tmp_path, capsys):
    t = pd.read_csv(RULES.parent / "bigdansing_table1.csv")
    t["seen"] = pd.Timestamp("2024-01-01")
    t.to_parquet(tmp_path / "t.parquet")
    code = main(["detect", str(tmp_path / "t.parquet"), "--rules", str(RULES), "--key", "tid", "--format", "json"])
    out, err = capsys.readouterr()
    assert code == 1, err
    assert "PARQUET_TYPE_ILLEGAL" not in err


def test_a_lake_of_pandas_files_reads_every_table_and_finds_the_containment(spark, tmp_path):
    from dqkit.lake import find_containment

    rows = {"id": [1, 2, 3], "at": _stamps("2024-01-01", "2024-01-02", "2024-01-03")}
    pd.DataFrame(rows).to_parquet(tmp_path / "big.parquet")
    pd.DataFrame(rows).head(2).to_parquet(tmp_path / "small.parquet")
    res = find_containment(tmp_path, verify=True, spark=spark)
    assert res.skipped == () and res.complete
    assert ("big", "small") in res.contained and res.exit_code == 1


# ---------------------------------------------------------------- a lake that skips tables
def test_a_lake_that_skips_a_table_is_incomplete_exit_2_and_counts_it(spark, tmp_path, capsys):
    pd.DataFrame({"id": [1, 2]}).to_parquet(tmp_path / "a.parquet")
    pd.DataFrame({"id": [7, 8]}).to_parquet(tmp_path / "b.parquet")
    (tmp_path / "broken.parquet").write_bytes(b"PAR1 not really parquet PAR1")
    before = _snapshot(tmp_path)
    code = main(["lake", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 2
    assert "INCOMPLETE: 1 of 3 tables skipped (unreadable, not checked); no containment among the 2 read" in out
    assert "broken" in out
    code = main(["lake", str(tmp_path), "--format", "json"])
    got = json.loads(capsys.readouterr().out)
    assert code == 2 and got["verdict"] == "INCOMPLETE" and got["skipped_count"] == 1 and not got["complete"]
    assert [s["table"] for s in got["skipped"]] == ["broken"]
    assert _snapshot(tmp_path) == before


# ---------------------------------------------------------------- CSV as pandas writes it
def test_a_csv_with_a_utf8_bom_has_a_clean_first_column_name(spark, tmp_path, capsys):
    for side, v in (("old", "a"), ("new", "b")):
        (tmp_path / side).mkdir()
        pd.DataFrame({"id": [1, 2], "v": ["x", v]}).to_csv(tmp_path / side / "t.csv", index=False,
                                                            encoding="utf-8-sig")
    assert (tmp_path / "old" / "t.csv").read_bytes().startswith(b"\xef\xbb\xbfid,")
    assert read_table(tmp_path / "old" / "t.csv", spark).columns == ["id", "v"]
    code = main(["delta", str(tmp_path / "old"), str(tmp_path / "new"), "--key", "t=id", "--format", "json"])
    assert code == 1
    assert json.loads(capsys.readouterr().out)["tables"]["t"]["row_stats"]["differences"] == 2


def test_quoted_newlines_inside_csv_fields_stay_in_their_row(spark, tmp_path, capsys):
    t = pd.read_csv(RULES.parent / "bigdansing_table1.csv")
    t.loc[0, "name"] = "Annie\nSecond line, with a comma"
    t.to_csv(tmp_path / "t.csv", index=False)
    got = read_table(tmp_path / "t.csv", spark)
    assert got.count() == len(t) and got.filter("tid = 't1'").first().name == "Annie\nSecond line, with a comma"
    code = main(["detect", str(tmp_path / "t.csv"), "--rules", str(RULES), "--key", "tid", "--format", "json"])
    assert code == 1, capsys.readouterr().err


def test_a_semicolon_separated_csv_is_detected_from_its_header(spark, tmp_path, capsys):
    for side, v in (("old", 1), ("new", 2)):
        (tmp_path / side).mkdir()
        pd.DataFrame({"id": [1, 2], "v": [1, v], "note": ["a,b", "c"]}).to_csv(tmp_path / side / "t.csv",
                                                                                index=False, sep=";")
    got = read_table(tmp_path / "old" / "t.csv", spark)
    assert got.columns == ["id", "v", "note"] and got.orderBy("id").first().note == "a,b"
    code = main(["delta", str(tmp_path / "old"), str(tmp_path / "new"), "--key", "t=id", "--format", "json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 1 and out["tables"]["t"]["row_stats"]["differences"] == 2


def test_csv_files_of_one_table_with_different_separators_are_refused(spark, tmp_path):
    (tmp_path / "t").mkdir()
    pd.DataFrame({"id": [1], "v": [2]}).to_csv(tmp_path / "t" / "a.csv", index=False)
    pd.DataFrame({"id": [3], "v": [4]}).to_csv(tmp_path / "t" / "b.csv", index=False, sep=";")
    with pytest.raises(SourceError, match="different separators"):
        read_table(tmp_path / "t", spark)


# ---------------------------------------------------------------- DuckDB and Spark writers
def test_duckdb_parquet_with_nanosecond_and_nested_columns_compares_identical(spark, tmp_path, capsys):
    duckdb = pytest.importorskip("duckdb")
    for side in ("old", "new"):
        (tmp_path / side).mkdir()
        duckdb.sql(f"""COPY (SELECT i AS id, TIMESTAMP '2024-01-01 10:00:00.123456' + to_seconds(i) AS ts,
                       TIMESTAMP_NS '2024-01-01 10:00:00.123456789' AS tns, 1.5::DECIMAL(10, 2) AS d,
                       {{'a': i}} AS st, 'x' || i AS s FROM range(3) t(i))
                       TO '{tmp_path / side / "t.parquet"}' (FORMAT parquet)""")
    code = main(["delta", str(tmp_path / "old"), str(tmp_path / "new"), "--key", "t=id"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "IDENTICAL" in out and "truncated 3 value(s) of 'tns'" in err


def test_a_duckdb_uuid_column_is_refused_naming_it(spark, tmp_path, capsys):
    duckdb = pytest.importorskip("duckdb")
    for side in ("old", "new"):
        (tmp_path / side).mkdir()
        duckdb.sql(f"COPY (SELECT 1 AS id, uuid() AS u) TO '{tmp_path / side / 't.parquet'}' (FORMAT parquet)")
    code = main(["delta", str(tmp_path / "old"), str(tmp_path / "new")])
    err = capsys.readouterr().err
    assert code == 2
    assert "Spark has no type for the Parquet column(s) 'u' (UUID)" in err and "VARCHAR" in err


def test_spark_written_folders_with_success_and_crc_files_are_tables(spark, tmp_path, capsys):
    df = spark.createDataFrame([(1, "a"), (2, "b")], "id int, v string")
    df.coalesce(1).write.parquet(str(tmp_path / "lake" / "big"))
    df.limit(1).coalesce(1).write.parquet(str(tmp_path / "lake" / "small"))
    names = {p.name for p in (tmp_path / "lake" / "big").iterdir()}
    assert "_SUCCESS" in names and any(n.endswith(".crc") for n in names)
    code = main(["lake", str(tmp_path / "lake"), "--verify", "--format", "json"])
    got = json.loads(capsys.readouterr().out)
    assert code == 1 and got["skipped"] == [] and {"parent": "big", "child": "small"}.items() <= got["contained"][0].items()


# ---------------------------------------------------------------- zero-column, header-only, empty tables
TABLE1_COLUMNS = ["tid", "name", "zipcode", "city", "state", "salary", "rate"]


def _write_class(kind: str, folder: Path, name: str = "t") -> Path:
    """One table of a hostile-input class, written by its real writer."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder.mkdir(parents=True, exist_ok=True)
    if kind == "zero-column parquet":
        pd.DataFrame(index=range(3)).to_parquet(folder / f"{name}.parquet", index=False)
        return folder / f"{name}.parquet"
    if kind == "zero-column pyarrow":
        pq.write_table(pa.table({}), folder / f"{name}.parquet")
        return folder / f"{name}.parquet"
    if kind == "empty csv":
        (folder / f"{name}.csv").write_text("")
        return folder / f"{name}.csv"
    if kind == "header-only csv":
        pd.DataFrame(columns=TABLE1_COLUMNS).to_csv(folder / f"{name}.csv", index=False)
        return folder / f"{name}.csv"
    assert kind == "empty parquet"
    pd.DataFrame({c: pd.Series([], dtype="int64" if c in ("salary", "rate") else "string")
                  for c in TABLE1_COLUMNS}).to_parquet(folder / f"{name}.parquet")
    return folder / f"{name}.parquet"


NO_COLUMNS = ["zero-column parquet", "zero-column pyarrow", "empty csv"]
EMPTY = ["header-only csv", "empty parquet"]


def _run(argv: list[str], capsys) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("kind", NO_COLUMNS)
def test_a_table_with_no_columns_is_refused_by_delta_and_detect(spark, tmp_path, capsys, kind):
    old = _write_class(kind, tmp_path / "old")
    _write_class(kind, tmp_path / "new")
    before = _snapshot(tmp_path)
    for argv in (["delta", str(tmp_path / "old"), str(tmp_path / "new"), "--out", str(tmp_path / "o1")],
                 ["detect", str(old), "--rules", str(RULES), "--out", str(tmp_path / "o2")]):
        code, out, err = _run(argv, capsys)
        assert code == 2 and out == ""
        assert f"{old} has no columns" in err and "Hint: a table needs at least one column" in err
        assert "Traceback" not in err
    assert _snapshot(tmp_path) == before  # nothing written, no --out folder


@pytest.mark.parametrize("kind", NO_COLUMNS)
def test_a_lake_with_a_table_without_columns_skips_it_and_is_incomplete(spark, tmp_path, capsys, kind):
    _write_class(kind, tmp_path, "nocols")
    pd.DataFrame({"id": [1, 2]}).to_parquet(tmp_path / "a.parquet")
    pd.DataFrame({"id": [1]}).to_parquet(tmp_path / "b.parquet")
    code, out, _ = _run(["lake", str(tmp_path), "--format", "json"], capsys)
    got = json.loads(out)
    assert code == 2 and got["verdict"] == "INCOMPLETE" and got["skipped_count"] == 1
    assert got["skipped"][0]["table"] == "nocols" and "has no columns" in got["skipped"][0]["reason"]
    assert [(e["parent"], e["child"]) for e in got["contained"]] == [("a", "b")]  # the rest is still analysed


@pytest.mark.parametrize("kind", EMPTY)
def test_two_empty_versions_are_identical_and_an_empty_table_has_no_violations(spark, tmp_path, capsys, kind):
    old = _write_class(kind, tmp_path / "old")
    _write_class(kind, tmp_path / "new")
    code, out, err = _run(["delta", str(tmp_path / "old"), str(tmp_path / "new"), "--key", "t=tid"], capsys)
    assert code == 0 and "IDENTICAL" in out, err
    code, out, err = _run(["detect", str(old), "--rules", str(RULES), "--key", "tid"], capsys)
    assert code == 0 and "NO VIOLATIONS" in out, err


@pytest.mark.parametrize("kind", EMPTY)
def test_an_empty_table_in_a_lake_is_contained_in_a_table_with_its_columns(spark, tmp_path, capsys, kind):
    _write_class(kind, tmp_path, "empty")
    pd.read_csv(RULES.parent / "bigdansing_table1.csv").to_parquet(tmp_path / "full.parquet")
    code, out, err = _run(["lake", str(tmp_path), "--verify", "--format", "json"], capsys)
    got = json.loads(out)
    assert code == 1 and got["skipped"] == [], err
    assert [(e["parent"], e["child"], e["rows"]) for e in got["contained"]] == [("full", "empty", 0)]
