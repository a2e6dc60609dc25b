"""``dqkit delta``: exit codes like diff, the JSON contract, errors on stderr."""
from __future__ import annotations

import json

from dqkit.cli import main

USERS = "data/users"


def test_cli_exits_1_on_differences_and_prints_the_json_contract(spark, capsys, tmp_path):
    code = main(["delta", f"{USERS}/old", f"{USERS}/new", "--key", "users=id", "--format", "json",
                 "--out", str(tmp_path / "v")])
    out = json.loads(capsys.readouterr().out)
    assert code == 1
    assert set(out) >= {"tables", "only_in_old", "only_in_new"}
    rs = out["tables"]["users"]["row_stats"]
    assert list(rs) == ["rows_old", "rows_new", "rows_abs_diff", "dedup_rows_old", "dedup_rows_new",
                        "dedup_abs_diff", "differences", "percent"]
    assert rs["percent"] == 71.4
    cs = out["tables"]["users"]["column_stats"]["row_count"]
    assert {"count", "max", "min", "q1", "median", "q3"} <= set(cs)
    assert (tmp_path / "v" / "summary.json").exists()


def test_cli_exits_0_on_identical_versions(spark, capsys):
    code = main(["delta", f"{USERS}/old", f"{USERS}/old", "--format", "text"])
    assert code == 0
    assert "IDENTICAL" in capsys.readouterr().out


def test_cli_exclude_and_stages_flags(spark, capsys):
    code = main(["delta", f"{USERS}/old", f"{USERS}/new", "--stages", "dedup,row", "--exclude", "users.name",
                 "--format", "json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 1 and "column_stats" not in out["tables"]["users"]


def test_cli_exits_2_with_a_readable_message_on_bad_input(spark, capsys, tmp_path):
    assert main(["delta", str(tmp_path / "nope"), f"{USERS}/new"]) == 2
    assert "no such" in capsys.readouterr().err
    assert main(["delta", f"{USERS}/old", f"{USERS}/new", "--key", "users"]) == 2
    assert "TABLE=COL" in capsys.readouterr().err
    assert main(["delta", f"{USERS}/old", f"{USERS}/new", "--key", "users=nope"]) == 2
    assert "users.nope" in capsys.readouterr().err


def test_cli_html_format_is_a_self_contained_page(spark, capsys):
    main(["delta", f"{USERS}/old", f"{USERS}/new", "--key", "users=id", "--format", "html"])
    out = capsys.readouterr().out
    assert out.startswith("<!DOCTYPE html>") and "71.4" in out and "src='http" not in out
