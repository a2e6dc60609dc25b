"""The shared contracts: one result base, one CLI output path, one report registry, one run controller."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import dqkit
from dqkit.cli import main
from dqkit.errors import ParameterError
from dqkit.checks.params import parse_keys, split_list
from dqkit.contract.result import Result, Verdict, check_output_target

DATA = Path(__file__).resolve().parent.parent / "data"
USERS = DATA / "users"


@pytest.fixture(scope="module")
def users(spark):
    from dqkit.delta import delta

    return delta(str(USERS / "old"), str(USERS / "new"), keys={"users": "id"}, spark=spark)


@pytest.fixture(scope="module")
def table1_result(spark):
    from dqkit.detect import detect

    return detect(str(DATA / "bigdansing_table1.csv"), str(DATA / "bigdansing_table1_rules.yaml"), key="tid",
                  spark=spark)


def _copy_users(tmp: Path) -> tuple[Path, Path]:
    shutil.copytree(USERS, tmp / "users")
    return tmp / "users" / "old", tmp / "users" / "new"


# ---------------------------------------------------------------- one result base
def test_every_result_is_a_result_with_a_verdict_first(users, table1_result):
    for r in (users, table1_result):
        assert isinstance(r, Result)
        assert isinstance(r.sections()[0], Verdict)
        assert r.exit_code == 1
    assert users.verdict.label == "DIFFERENT" and table1_result.verdict.label == "VIOLATIONS"


def test_text_html_and_json_say_the_same_verdict_and_summary(users):
    v = users.verdict
    assert v.summary == "1 of 1 table differs; users: 5 difference records (71.4 %)"
    assert f"DIFFERENT: {v.summary}" in users.to_text()
    html = users.to_html()
    assert ">DIFFERENT<" in html and v.summary in html
    d = users.to_dict()
    assert (d["verdict"], d["summary"]) == ("DIFFERENT", v.summary)


def test_percent_and_null_show_the_same_in_text_and_html(users):
    text, html = users.to_text(), users.to_html()
    assert "71.4" in text and "71.4" in html
    # a whole percentage is 100 in both forms (never 100.0 in one and 100 in the other)
    from dqkit.contract import render

    assert render.plain(100.0) == "100" and render.plain(None) == "NULL" and render.plain(float("nan")) == "NULL"
    assert "None" not in text


def test_the_update_view_shows_each_changed_column_as_old_to_new_beside_the_key(users):
    changes = users.changes("users")
    rows = {(r.id, r.column): r.change for r in changes.itertuples()}
    assert rows[(3, "name")] == "Carol \u2192 Karol"
    assert rows[(3, "salary")] == "6100 \u2192 6150"
    assert rows[(3, "birthday")] == "1979-11-02 \u2192 1979-11-03"
    assert "Carol \u2192 Karol" in users.to_html() and "Carol \u2192 Karol" in users.to_text()


def test_the_row_delta_sample_is_bounded_with_changed_columns_first(users):
    frame, note = users.row_delta_sample("users", 10, max_columns=3)
    assert list(frame.columns)[:3] == ["id", "validation_status", "row_count"]
    assert len(frame.columns) == 5 and "1 more column not shown" in note
    assert list(frame.columns).count("row_count") == 1


def test_saved_report_says_what_was_compared(users, tmp_path):
    out = Path(users.save(tmp_path / "v"))
    page = (out / "report.html").read_text()
    assert "What was compared" in page and str(USERS / "old") in page and "users=id" in page


def test_a_saved_chart_is_drawn_once_for_its_png_file_and_the_report_page(users, tmp_path, monkeypatch):
    import base64
    import re

    from dqkit.contract import charts

    drawn = []
    real = charts.png_bytes
    monkeypatch.setattr(charts, "png_bytes", lambda fig: drawn.append(fig) or real(fig))
    out = Path(users.save(tmp_path / "v"))
    pngs = sorted(out.glob("*.png"))
    assert pngs and len(drawn) == len(pngs)  # not once for the file and again for the page
    page = (out / "report.html").read_text()
    embedded = {base64.b64decode(b) for b in re.findall(r"src='data:image/png;base64,([^']+)'", page)}
    assert embedded == {p.read_bytes() for p in pngs}
    # the page is the one to_page gives
    assert page == users.to_page()


def test_save_refuses_an_existing_target_unless_overwrite_for_every_result(users, table1_result, tmp_path):
    for r in (users, table1_result):
        target = tmp_path / type(r).__name__
        target.mkdir()
        (target / "keep.txt").write_text("x")
        with pytest.raises(ParameterError, match="exists"):
            r.save(target)
        assert (target / "keep.txt").exists()
        r.save(target, overwrite=True)
        assert (target / "summary.json").exists() and not (target / "keep.txt").exists()


def test_save_into_an_input_folder_is_refused_and_the_input_kept(spark, tmp_path):
    from dqkit.delta import delta

    old, new = _copy_users(tmp_path)
    r = delta(str(old), str(new), keys={"users": "id"}, spark=spark)
    for target in (old, old / "sub", tmp_path / "users"):
        with pytest.raises(ParameterError, match="would overwrite the input"):
            r.save(target, overwrite=True)
    assert (old / "users.csv").exists()


def test_an_output_under_a_regular_file_is_refused_up_front(tmp_path):
    (tmp_path / "f").write_text("x")
    with pytest.raises(ParameterError, match="it is a file"):
        check_output_target(tmp_path / "f" / "out", [])


# ---------------------------------------------------------------- one CLI output path
def test_cli_out_pointing_at_an_input_is_refused_before_any_work(spark, tmp_path, capsys, monkeypatch):
    import dqkit.delta as mod

    old, new = _copy_users(tmp_path)
    monkeypatch.setattr(mod, "delta", lambda *a, **k: pytest.fail("the comparison ran"))
    for target in (old, new, old / "inner"):
        assert main(["delta", str(old), str(new), "--out", str(target), "--overwrite"]) == 2
        assert "would overwrite the input" in capsys.readouterr().err
    assert sorted(p.name for p in old.iterdir()) == ["users.csv"]


def test_cli_detect_out_in_the_table_folder_is_refused(spark, tmp_path, capsys):
    shutil.copy(DATA / "bigdansing_table1.csv", tmp_path / "t.csv")
    code = main(["detect", str(tmp_path / "t.csv"), "--rules", str(DATA / "bigdansing_table1_rules.yaml"),
                 "--out", str(tmp_path), "--overwrite"])
    assert code == 2 and "would overwrite the input" in capsys.readouterr().err
    assert (tmp_path / "t.csv").exists()


def test_cli_refuses_an_existing_out_without_overwrite(spark, tmp_path, capsys):
    (tmp_path / "v").mkdir()
    assert main(["delta", str(USERS / "old"), str(USERS / "new"), "--out", str(tmp_path / "v")]) == 2
    assert "--overwrite" in capsys.readouterr().err


def test_repeated_keys_accumulate_and_options_before_the_paths_work(spark, tmp_path, capsys):
    old, new = _copy_users(tmp_path)
    (old / "orders.csv").write_text("o_id,o_total\n1,10\n2,20\n")
    (new / "orders.csv").write_text("o_id,o_total\n1,10\n2,25\n")
    code = main(["delta", "--key", "users=id", "--key", "orders=o_id", str(old), str(new), "--format", "json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 1 and out["parameters"]["keys"] == {"users": ["id"], "orders": ["o_id"]}
    assert out["tables"]["users"]["column_stats"]["name"]["count"] == 1
    assert out["tables"]["orders"]["column_stats"]["o_total"]["max"] == 5


def test_list_options_accumulate_and_split_on_commas():
    assert split_list(["a,b", "c"]) == ["a", "b", "c"]
    assert parse_keys(["lineitem=l_orderkey,l_linenumber", "orders=o_orderkey"]) == {
        "lineitem": ["l_orderkey", "l_linenumber"], "orders": ["o_orderkey"]}
    with pytest.raises(ParameterError, match="two keys"):
        parse_keys(["t=a", "t=b"])


def test_an_unexpected_failure_exits_2_with_one_line_not_1(spark, tmp_path, capsys, monkeypatch):
    import dqkit.delta as mod

    def boom(*a, **k):
        raise RuntimeError("something broke\nwith a long\ntrace")

    monkeypatch.setattr(mod, "delta", boom)
    assert main(["delta", str(USERS / "old"), str(USERS / "new")]) == 2
    err = capsys.readouterr().err
    assert "dqkit: error: RuntimeError: something broke" in err and "Traceback" not in err
    assert main(["--debug", "delta", str(USERS / "old"), str(USERS / "new")]) == 2
    assert "Traceback" in capsys.readouterr().err


def test_detect_prints_html_through_the_same_path(spark, capsys):
    code = main(["detect", str(DATA / "bigdansing_table1.csv"), "--rules",
                 str(DATA / "bigdansing_table1_rules.yaml"), "--key", "tid", "--format", "html"])
    out = capsys.readouterr().out
    assert code == 1 and out.startswith("<!DOCTYPE html>") and ">VIOLATIONS<" in out


# ---------------------------------------------------------------- report registry
def test_report_list_parameters_needs_no_output_folder(capsys):
    assert main(["report", "delta", "--list-parameters"]) == 0
    out = capsys.readouterr().out
    assert "key = " in out and "report_dir" not in out


def test_an_unknown_report_name_lists_the_registered_ones(capsys):
    assert main(["report", "nope", "-o", "x"]) == 2
    assert "delta" in capsys.readouterr().err


def test_the_reproduce_line_names_the_output_folder():
    from dqkit.report import command_line

    assert command_line("delta", {"old": "a", "keys": "users=id"}, "reports/u").endswith("-o reports/u")


# ---------------------------------------------------------------- facade
def test_the_facade_exposes_entry_points_that_do_not_collide_with_modules():
    from dqkit.delta import delta
    from dqkit.detect import detect

    assert dqkit.compare_databases is delta and dqkit.detect_violations is detect
    assert dqkit.DeltaResult.__name__ == "DeltaResult"


# ---------------------------------------------------------------- charts
def test_charts_render_math_markup_in_names_as_plain_text(spark, tmp_path):
    from dqkit.contract import charts

    fig = charts.barh({"$x$": 3, "a_$b": 1}, "t $y$", "count", "col", integer=True)
    fig.savefig(tmp_path / "a.png")
    ticks = fig.axes[0].get_xticks()
    assert all(float(t).is_integer() for t in ticks)
    qfig = charts.quartile_chart({"$p$": {"count": 1, "min": 2, "q1": 2, "median": 2, "q3": 2, "max": 2}},
                                 "q", units={"$p$": "days"})
    qfig.savefig(tmp_path / "b.png")
    assert "days" in qfig.axes[0].get_xlabel()
    assert all(float(t).is_integer() for t in qfig.axes[0].get_xticks())  # n = 1: no fractional ticks
