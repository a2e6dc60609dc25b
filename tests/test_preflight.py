"""Refusals before Spark (issue 22 §3, §7): every command checks what needs no JVM first.

Each refusal is exit 2 with one error naming the problem and a hint, in well under 2 s, with no
SparkContext started; inputs are unchanged and no ``--out`` is created. The subprocess tests run the
CLI in a fresh interpreter so that "no JVM" is observable; the others call ``main`` in-process.
"""
from __future__ import annotations

import csv
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from dqkit.checks import preflight
from dqkit.cli import main
from dqkit.errors import DqkitError, ParameterError, RuleError, UnknownColumnError
from dqkit.relax.sql import check_read_only_select
from dqkit.systems.query import check_query

ROOT = Path(__file__).resolve().parent.parent
SQL_NAME = 'a"; DROP TABLE x; --'

_PROBE = """
import json, sys, time
t0 = time.process_time()  # CPU seconds: what the refusal costs, not how busy the machine is
from dqkit.cli import main
code = main(sys.argv[1:])
elapsed = time.process_time() - t0
import pyspark
print(json.dumps({"code": code, "elapsed": elapsed, "jvm": pyspark.SparkContext._active_spark_context is not None}))
"""


def _probe(argv: list[str], cwd: Path) -> tuple[dict, str]:
    """Run the CLI in a fresh interpreter; its exit code, CPU seconds inside Python, whether a JVM started."""
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    env.pop("SPARK_REMOTE", None)
    done = subprocess.run([sys.executable, "-c", _PROBE, *argv], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=120)
    return json.loads(done.stdout.strip().splitlines()[-1]), done.stderr


def _write_csv(path: Path, header: list[str], rows: list[list[object]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(header)
        w.writerows(rows)
    return path


def _tree_digest(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture
def data(tmp_path: Path) -> Path:
    """A tiny table, a rules file, a dedup config, a TCFC spec and a lake, all valid."""
    _write_csv(tmp_path / "t.csv", ["tid", "zip", "city"], [[1, "10001", "NY"], [2, "10001", "LA"]])
    (tmp_path / "rules.txt").write_text("zip -> city\n")
    (tmp_path / "dedup.yaml").write_text("comparisons:\n  - {column: city}\n")
    (tmp_path / "spec.yaml").write_text(
        "pairs:\n  - name: p\n    source: {table: t.csv}\n    target: {table: t.csv}\n"
        "    aggregates: [[count, '*', n]]\n    levels: [{X: []}]\n")
    _write_csv(tmp_path / "lake" / "a.csv", ["x"], [[1]])
    _write_csv(tmp_path / "lake" / "b.csv", ["x"], [[1], [2]])
    return tmp_path


# The seven commands and the report, each with a typo'd input path ("MISSING").
TYPO_CASES = {
    "delta": ["delta", "MISSING", "t.csv"],
    "detect": ["detect", "MISSING", "--rules", "rules.txt"],
    "repair": ["repair", "MISSING", "--rules", "rules.txt"],
    "dedup": ["dedup", "MISSING", "--key", "tid", "--config", "dedup.yaml"],
    "tcfc": ["tcfc", "--spec", "MISSING"],
    "lake": ["lake", "MISSING"],
    "query": ["query", "--table", "t=MISSING", "SELECT city FROM t"],
    "report": ["report", "delta", "-p", "old", "MISSING", "-p", "new", "t.csv", "-o", "rep"],
    "report detect": ["report", "detect", "-p", "table", "MISSING", "-p", "rules", "rules.txt", "-o", "rep"],
    "report repair": ["report", "repair", "-p", "table", "MISSING", "-p", "rules", "rules.txt", "-o", "rep"],
    "--master then delta": ["--master", "local[1]", "delta", "MISSING", "t.csv"],
}


@pytest.mark.parametrize("argv", list(TYPO_CASES.values()), ids=list(TYPO_CASES))
def test_every_command_refuses_a_typod_path_in_under_2s_without_starting_a_jvm(data, argv):
    before = _tree_digest(data)
    result, err = _probe(argv, data)
    assert result["code"] == 2, err
    assert "MISSING" in err and "Hint:" in err, err
    assert "Traceback" not in err
    assert result["elapsed"] < 2.0, result
    assert result["jvm"] is False
    assert _tree_digest(data) == before and not (data / "rep").exists()


@pytest.mark.parametrize("value", ["abc", "-1"])
def test_a_bad_dedup_driver_pairs_variable_is_refused_before_spark_naming_it(data, monkeypatch, value):
    monkeypatch.setenv("DQKIT_DEDUP_DRIVER_PAIRS", value)
    result, err = _probe(["dedup", "t.csv", "--key", "tid", "--config", "dedup.yaml"], data)
    assert result["code"] == 2, err
    assert "DQKIT_DEDUP_DRIVER_PAIRS" in err and repr(value) in err and "Hint:" in err, err
    assert "Traceback" not in err and result["jvm"] is False


# ----------------------------------------------------------------------------- query: read-only SELECT
@pytest.mark.parametrize("sql", [
    "DROP TABLE t", "INSERT INTO t VALUES (1, '2', '3')", "UPDATE t SET city = 'x'", "DELETE FROM t",
    "SELECT city FROM t; DROP TABLE t", "CREATE TABLE u AS SELECT * FROM t", "SELECT city INTO u FROM t",
    "  (DROP TABLE t)", "TRUNCATE TABLE t", ""])
def test_query_refuses_a_statement_that_is_not_one_read_only_select_before_reading_a_table(data, capsys, sql):
    before = _tree_digest(data)
    # the table path does not exist: the statement is refused before any table is even looked at
    code = main(["query", "--table", "t=does-not-exist.csv", "--rules", "t=rules.txt", sql])
    err = capsys.readouterr().err
    assert code == 2
    assert "read-only SELECT" in err or "statements" in err or "empty" in err, err
    assert "does-not-exist" not in err
    assert _tree_digest(data) == before


def test_a_sql_fragment_in_a_query_value_is_a_bound_string_not_a_statement(data):
    sql = "SELECT city FROM t WHERE city = 'x\\'; DROP TABLE t; --'"
    check_read_only_select(sql)  # one SELECT: the DROP is inside a string value
    assert check_query({"t": str(data / "t.csv")}, {}, {}, sql) == {}


# ----------------------------------------------------------------------------- rule files
@pytest.mark.parametrize("content,message", [
    (b"\xff\xfez\x00i\x00p\x00", "is binary"),
    (b"zip -> caf\xe9\n", "not UTF-8"),
    (b"\x89PNG\r\n\x1a\n\x00\x00", "is binary"),
    (b"# only a comment\n", "holds no rules"),
])
@pytest.mark.parametrize("command", ["detect", "repair", "query", "report", "report repair"])
def test_binary_non_utf8_or_empty_rule_files_are_refused_and_nothing_is_written(data, capsys, content, message,
                                                                               command):
    bad = data / "bad.txt"
    bad.write_bytes(content)
    before = _tree_digest(data)
    argv = {"detect": ["detect", "t.csv", "--rules", "bad.txt", "--out", "out"],
            "repair": ["repair", "t.csv", "--rules", "bad.txt", "--out", "out"],
            "query": ["query", "--table", "t=t.csv", "--rules", "t=bad.txt", "SELECT city FROM t"],
            "report": ["report", "detect", "-p", "table", "t.csv", "-p", "rules", "bad.txt", "-o", "out"],
            "report repair": ["report", "repair", "-p", "table", "t.csv", "-p", "rules", "bad.txt", "-o", "out"]}[command]
    cwd = os.getcwd()
    os.chdir(data)
    try:
        code = main(argv)
    finally:
        os.chdir(cwd)
    err = capsys.readouterr().err
    assert code == 2
    assert message in err and "bad.txt" in err, err
    assert _tree_digest(data) == before and not (data / "out").exists()


# ----------------------------------------------------------------------------- --out overlapping an input
@pytest.mark.parametrize("out", ["t.csv", "t.csv/sub", ".", "rules.txt"])
@pytest.mark.parametrize("command", ["delta", "detect", "repair", "dedup", "tcfc", "lake"])
def test_an_out_that_is_inside_or_holds_an_input_is_refused_before_spark(data, capsys, out, command):
    argv = {"delta": ["delta", "t.csv", "t.csv"], "detect": ["detect", "t.csv", "--rules", "rules.txt"],
            "repair": ["repair", "t.csv", "--rules", "rules.txt"],
            "dedup": ["dedup", "t.csv", "--key", "tid", "--config", "dedup.yaml"],
            "tcfc": ["tcfc", "--spec", "spec.yaml"], "lake": ["lake", "lake"]}[command]
    if command in ("delta", "dedup", "tcfc") and out == "rules.txt":
        out = "spec.yaml" if command == "tcfc" else ("dedup.yaml" if command == "dedup" else "t.csv")
    if command == "lake":
        out = {"t.csv": "lake/a.csv", "t.csv/sub": "lake/sub", ".": ".", "rules.txt": "lake"}[out]
    before = _tree_digest(data)
    cwd = os.getcwd()
    os.chdir(data)
    try:
        code = main([*argv, "--out", out, "--overwrite"])
    finally:
        os.chdir(cwd)
    err = capsys.readouterr().err
    assert code == 2
    assert "would overwrite the input" in err, err
    assert _tree_digest(data) == before


def test_the_report_folder_and_its_output_may_not_overlap_an_input(data, capsys):
    assert main(["report", "delta", "-p", "old", str(data / "t.csv"), "-p", "new", str(data / "t.csv"),
                 "-o", str(data)]) == 2
    assert "would overwrite the input" in capsys.readouterr().err
    assert main(["report", "lake", "-p", "lake", str(data / "lake"), "-p", "output", str(data / "lake" / "o"),
                 "-o", str(data / "rep")]) == 2
    assert "would overwrite the input" in capsys.readouterr().err
    assert not (data / "rep").exists() and not (data / "lake" / "o").exists()


# ----------------------------------------------------------------------------- out-of-range numbers
@pytest.mark.parametrize("argv,message", [
    (["dedup", "t.csv", "--key", "tid", "--config", "dedup.yaml", "--threshold", "1.5"], "--threshold must be"),
    (["dedup", "t.csv", "--key", "tid", "--config", "dedup.yaml", "--threshold", "-0.1"], "--threshold must be"),
    (["detect", "t.csv", "--rules", "rules.txt", "--nb-parts", "0"], "--nb-parts must be at least 1"),
    (["repair", "t.csv", "--rules", "rules.txt", "--max-iterations", "0"], "--max-iterations must be at least 1"),
    (["repair", "t.csv", "--rules", "rules.txt", "--freeze-after", "0"], "--freeze-after must be at least 1"),
    (["lake", "lake", "--s", "0"], "--s must be at least 1"),
    (["lake", "lake", "--t", "-3"], "--t must be at least 1"),
    (["delta", "t.csv", "t.csv", "--abs-tol", "-1"], "--abs-tol must be at least 0"),
    (["delta", "t.csv", "t.csv", "--rel-tol", "nan"], "--rel-tol must be at least 0"),
    (["delta", "t.csv", "t.csv", "--stages", "row,colum"], "--stages must be one of dedup, row, column, got 'colum'"),
    (["tcfc", "--spec", "spec.yaml", "--connect-timeout", "0"], "--connect-timeout must be more than 0"),
    (["report", "dedup", "-p", "table", "t.csv", "-p", "key", "tid", "-p", "config", "dedup.yaml",
      "-p", "threshold", "2", "-o", "rep"], "--threshold must be"),
    (["report", "lake", "-p", "lake", "lake", "-p", "s", "0", "-o", "rep"], "--s must be at least 1"),
])
def test_out_of_range_numbers_are_refused_with_the_option_and_its_range(data, capsys, argv, message):
    before = _tree_digest(data)
    cwd = os.getcwd()
    os.chdir(data)
    try:
        code = main(argv)
    finally:
        os.chdir(cwd)
    err = capsys.readouterr().err
    assert code == 2 and message in err, err
    assert _tree_digest(data) == before and not (data / "rep").exists()


# ----------------------------------------------------------------------------- awkward names
AWKWARD_COLUMNS = ["zip code", "city-name", "ünï", "select", "a:b*[c]", SQL_NAME]


@pytest.fixture
def awkward(tmp_path: Path) -> Path:
    """A Parquet table whose path has globs, a colon, dashes, spaces and unicode, and whose columns are
    worse (Parquet: the names are exact; a CSV header with ``""`` is left to Spark's reader)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = tmp_path / "we[ir]d {x}* dïr: a-b" / "t a-b ü.parquet"
    table.parent.mkdir()
    pq.write_table(pa.table({c: ["1", "2"] for c in AWKWARD_COLUMNS}), table)
    return table


def test_awkward_names_pass_preflight_when_they_exist(awkward, tmp_path):
    rules = tmp_path / "r.txt"
    rules.write_text("`zip code` -> `city-name`\nphi2: `select` -> `a\"; DROP TABLE x; --`\n", encoding="utf-8")
    assert preflight.table_columns(preflight.check_table(str(awkward))) == AWKWARD_COLUMNS
    got = preflight.rules_command(str(awkward), [str(rules)], key="ünï", out=str(tmp_path / "out"))
    assert [r.columns for r in got] == [("zip code", "city-name"), ("select", SQL_NAME)]


@pytest.mark.parametrize("key", ["zip_code", "Select", SQL_NAME + " ", "ünï*"])
def test_a_misspelt_awkward_key_is_named_exactly_and_never_executed(awkward, tmp_path, capsys, key):
    (tmp_path / "r.txt").write_text("`zip code` -> `city-name`\n")
    before = _tree_digest(tmp_path)
    assert main(["detect", str(awkward), "--rules", str(tmp_path / "r.txt"), "--key", key]) == 2
    err = capsys.readouterr().err
    assert f"unknown column {key!r}" in err, err
    assert _tree_digest(tmp_path) == before


def test_a_sql_fragment_as_a_key_or_rule_column_is_refused_as_an_unknown_name(data):
    with pytest.raises(UnknownColumnError, match="DROP TABLE x"):
        preflight.rules_command(str(data / "t.csv"), [str(data / "rules.txt")], key=SQL_NAME)
    (data / "sql.txt").write_text(f"zip -> `{SQL_NAME}`\n")
    with pytest.raises(UnknownColumnError, match="rule 'phi1'|DROP TABLE x"):
        preflight.rules_command(str(data / "t.csv"), [str(data / "sql.txt")])
    with pytest.raises(UnknownColumnError):
        check_query({"t": str(data / "t.csv")}, {}, {"t": SQL_NAME}, "SELECT city FROM t")


def test_a_sql_fragment_column_is_quoted_by_detect_not_executed(spark, tmp_path, capsys):
    """End to end on Spark: an FD over columns named like an injection and a keyword finds its one
    violation (the names are quoted identifiers, never SQL text), and the input is unchanged."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = [["1", "NY", "x", "s", "q", "v1"], ["1", "LA", "y", "s", "q", "v2"], ["2", "SF", "z", "s", "q", "v3"]]
    table = tmp_path / "in" / "t a-b ü.parquet"
    table.parent.mkdir()
    pq.write_table(pa.table({c: [r[i] for r in rows] for i, c in enumerate(AWKWARD_COLUMNS)}), table)
    (tmp_path / "r.txt").write_text(f"`zip code` -> `{SQL_NAME}`\n`select` -> `a:b*[c]`\n")
    before = _tree_digest(tmp_path / "in")
    code = main(["detect", str(table), "--rules", str(tmp_path / "r.txt"), "--format", "json"])
    out = capsys.readouterr()
    assert code == 1, out.err
    payload = json.loads(out.out)
    assert payload["exit_code"] == 1 if "exit_code" in payload else True
    assert "DROP TABLE x" in out.out  # reported as a column name of the rule, as data
    assert _tree_digest(tmp_path / "in") == before


# ----------------------------------------------------------------------------- building blocks
def test_check_number_names_the_option_and_refuses_non_numbers():
    assert preflight.check_number("3", "--n", low=1, integer=True) == 3
    for bad in ("x", "2.5", True):
        with pytest.raises(ParameterError, match="--n must be a whole number"):
            preflight.check_number(bad, "--n", low=1, integer=True)
    with pytest.raises(ParameterError, match="at most 1"):
        preflight.check_number(1.01, "--p", low=0, high=1)


def test_parquet_columns_come_from_the_footer_and_a_corrupt_footer_is_a_source_error(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"id": [1, 2], "när": ["a", "b"]}), tmp_path / "t.parquet")
    assert preflight.table_columns(tmp_path / "t.parquet") == ["id", "när"]
    (tmp_path / "bad.parquet").write_bytes(b"PAR1 not really")
    with pytest.raises(DqkitError, match="not a readable Parquet file"):
        preflight.table_columns(tmp_path / "bad.parquet")


def test_an_unknown_format_and_an_existing_out_are_refused(data, capsys):
    (data / "t.xlsx").write_bytes(b"PK")
    assert main(["detect", str(data / "t.xlsx"), "--rules", str(data / "rules.txt")]) == 2
    assert "cannot tell the format" in capsys.readouterr().err
    (data / "done").mkdir()
    assert main(["detect", str(data / "t.csv"), "--rules", str(data / "rules.txt"), "--out", str(data / "done")]) == 2
    assert "exists" in capsys.readouterr().err


def test_a_csv_header_spark_may_read_otherwise_is_left_to_the_reader_not_refused(tmp_path):
    (tmp_path / "s.csv").write_text("tid;zip;city\n1;1;NY\n")
    assert preflight.table_columns(tmp_path / "s.csv") is None
    (tmp_path / "q.csv").write_text('id,"a""b"\n1,2\n')  # Spark's CSV escape is a backslash, not ""
    assert preflight.table_columns(tmp_path / "q.csv") is None


def test_the_cli_offers_the_repair_methods_of_the_kernel():
    from dqkit.repair import METHODS as KERNEL_METHODS
    from dqkit.systems.repair import RepairParams

    assert RepairParams.spec("method").choices == KERNEL_METHODS


def test_rule_errors_name_the_line(data):
    (data / "bad.txt").write_text("zip -> city\nzip ->\n")
    with pytest.raises(RuleError, match="line 2"):
        preflight.load_rule_file(data / "bad.txt")


# ------------------------------------------------------------------ record_bound: tonight's size without Spark
def test_record_bound_counts_parquet_footers_exactly_and_csv_lines_as_an_upper_bound(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder = tmp_path / "t.parquet"
    folder.mkdir()
    pq.write_table(pa.table({"id": list(range(7))}), folder / "part-0.parquet")
    pq.write_table(pa.table({"id": list(range(5))}), folder / "part-1.parquet")
    (folder / "_SUCCESS").write_text("")
    assert preflight.record_bound(folder) == 12 and preflight.record_bound(str(folder / "part-1.parquet")) == 5
    plain = tmp_path / "a.csv"
    plain.write_text("id,name\n1,ann\n2,bob")  # no newline after the last record: still counted
    assert preflight.record_bound(plain) == 3  # the header is one line more: a bound, never short
    quoted = tmp_path / "q.csv"
    quoted.write_text('id,note\n1,"two\nlines"\n2,x\n')
    with open(quoted, newline="") as fh:
        records = len(list(csv.reader(fh))) - 1
    assert records == 2 and preflight.record_bound(quoted) >= records


@pytest.mark.parametrize("what", ["json", "gzip", "missing", "frame", "not parquet"])
def test_record_bound_is_unknown_where_it_cannot_be_read_without_spark(tmp_path, what):
    import gzip

    target = {"json": tmp_path / "t.json", "gzip": tmp_path / "t.csv.gz", "missing": tmp_path / "nothing.csv",
              "frame": object(), "not parquet": tmp_path / "bad.parquet"}[what]
    if what == "json":
        target.write_text('{"id": 1}\n')
    elif what == "gzip":
        target.write_bytes(gzip.compress(b"id\n1\n"))
    elif what == "not parquet":
        target.write_text("not a footer")
    assert preflight.record_bound(target) is None


def test_delta_refuses_no_stage_and_an_unknown_one_before_spark():
    from dqkit.systems import get

    users = ROOT / "data" / "users"
    with pytest.raises(ParameterError, match="no stage given"):
        get("delta").prepare({"old": str(users / "old"), "new": str(users / "new"), "stages": [""]})
    with pytest.raises(ParameterError, match="--stages must be one of dedup, row, column, got 'rows'"):
        get("delta").prepare({"old": str(users / "old"), "new": str(users / "new"), "stages": ["rows"]})
