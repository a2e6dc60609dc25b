"""The delta report (the shared system template) executed by papermill through ``dqkit report``, and its
parameters, which come from the delta declaration in the systems registry."""
from __future__ import annotations

import shutil
from pathlib import Path

import nbformat
import pyspark
import pytest

from dqkit import __version__
from dqkit.cli import main
from dqkit.errors import ParameterError, SourceError, UnknownColumnError
from dqkit.checks.params import parse_keys
from dqkit.report import collect_parameters, template_parameters

DATA = Path(__file__).resolve().parent.parent / "data" / "users"
INJECTED = "<script>alert(1)</script>"


def _users_with_injected_value(tmp: Path) -> tuple[Path, Path]:
    old, new = tmp / "old", tmp / "new"
    shutil.copytree(DATA / "old", old)
    shutil.copytree(DATA / "new", new)
    text = (new / "users.csv").read_text()
    (new / "users.csv").write_text(text.replace("Karol", INJECTED))
    return old, new


def _cell_sources(nb) -> str:
    return "\n".join(c.source for c in nb.cells)


def test_the_report_parameters_are_the_declared_params_and_output():
    params = template_parameters("delta")
    assert list(params) == ["old", "new", "tables", "exclude", "key", "stages", "abs_tol", "rel_tol",
                            "rename", "tolerance", "schema_changes", "sample_rows", "output"]
    assert params["abs_tol"]["inferred_type_name"] == "float" and params["key"]["inferred_type_name"] == "list"


def test_repeated_cli_parameters_are_joined_and_unknown_ones_rejected():
    known = template_parameters("delta")
    pairs = [("old", "a"), ("key", "users=id"), ("key", "lineitem=l_orderkey,l_linenumber"),
             ("exclude", "users.birthday"), ("exclude", "orders"), ("table", "users"), ("table", "lineitem")]
    pairs = [(("tables" if n == "table" else n), v) for n, v in pairs]
    assert collect_parameters(pairs, known, "delta") == {
        "old": "a", "key": ["users=id", "lineitem=l_orderkey,l_linenumber"], "exclude": ["users.birthday", "orders"],
        "tables": ["users", "lineitem"]}
    with pytest.raises(ParameterError, match="no parameter 'colour'"):
        collect_parameters([("colour", "red")], known, "delta")
    with pytest.raises(ParameterError, match="given twice"):
        collect_parameters([("old", "a"), ("old", "b")], known, "delta")


def test_report_parameters_are_parsed_and_checked_by_the_delta_declaration(tmp_path):
    from dqkit.systems import get

    assert parse_keys("users=id; lineitem=l_orderkey,l_linenumber") == {
        "users": ["id"], "lineitem": ["l_orderkey", "l_linenumber"]}
    with pytest.raises(ParameterError, match="cannot read the key"):
        parse_keys("users")
    p = get("delta").prepare(old=str(DATA / "old"), new=str(DATA / "new"), keys="users=id", tables="",
                             exclude="users.birthday", stages="row,dedup", abs_tol="0.5")
    assert p.key == ("users=id",) and p.tables == () and p.exclude == ("users.birthday",) and p.abs_tol == 0.5
    assert p.stages == ("row", "dedup")
    with pytest.raises(SourceError, match="no such file or folder"):
        get("delta").prepare(old=str(tmp_path / "missing"), new=str(DATA / "new"))
    with pytest.raises(ParameterError, match="--abs-tol: cannot read 'lots'"):
        get("delta").prepare(old=str(DATA / "old"), new=str(DATA / "new"), abs_tol="lots")
    with pytest.raises(ParameterError, match="--sample-rows: cannot read 'ten'"):
        get("delta").prepare(old=str(DATA / "old"), new=str(DATA / "new"), sample_rows="ten")


def test_report_cli_executes_the_template_into_notebook_and_clean_html(tmp_path, capsys):
    old, new = _users_with_injected_value(tmp_path / "db")
    out, saved = tmp_path / "report", tmp_path / "saved"
    code = main(["report", "delta", "-p", "old", str(old), "-p", "new", str(new), "-p", "key", "users=id",
                 "-p", "sample_rows", "3", "-p", "output", str(saved), "-o", str(out)])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert sorted(p.name for p in out.iterdir()) == ["delta_report.html", "delta_report.ipynb"]
    assert captured.out.strip() == str(out / "delta_report.html")
    assert (saved / "summary.json").is_file() and (saved / "users_row_delta").is_dir()  # the output parameter

    nb = nbformat.read(out / "delta_report.ipynb", as_version=4)
    injected = [c for c in nb.cells if "injected-parameters" in c.metadata.get("tags", [])]
    assert len(injected) == 1
    source = injected[0].source
    assert '"key": ["users=id"]' in source and '"sample_rows": 3' in source
    assert f'"old": "{old}"' in source and 'system = "delta"' in source
    assert not any(o.get("output_type") == "error" for c in nb.cells if c.cell_type == "code" for o in c.outputs)

    html = (out / "delta_report.html").read_text()
    assert "DIFFERENT" in html and "users: 5 difference records (71.4 %)" in html
    assert "Row statistics" in html and "71.4" in html and "Column statistics" in html
    assert html.count("data:image/png;base64,") >= 4  # count, percent, per-column and quartile charts
    # the injected value is shown escaped, and the page runs no script and loads nothing remote
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "<script" not in html.lower()
    assert 'src="http' not in html and "src='http" not in html
    # no code is shown
    assert "prepare_report" not in html and "import dqkit" not in html and "from dqkit" not in html
    # the record of the run: parameters, versions, run time, the command that reproduces it
    for fact in ("users=id", f'<td class="l">{__version__}</td>', pyspark.__version__, "dqkit delta report",
                 "run time (s)", "dqkit report delta", str(saved)):
        assert fact in html, fact


def test_report_with_a_missing_path_is_refused_before_a_kernel_starts_and_writes_nothing(tmp_path, capsys):
    out = tmp_path / "report"
    missing = tmp_path / "no-such-db"
    code = main(["report", "delta", "-p", "old", str(missing), "-p", "new", str(DATA / "new"), "-o", str(out)])
    err = capsys.readouterr().err
    assert code == 2
    assert str(missing) in err and "no such file or folder" in err and "Hint:" in err
    assert not out.exists()


def test_a_report_failing_inside_the_kernel_leaves_outdir_as_it_was_and_exits_2(tmp_path, capsys):
    """The parameters pass the checks, the data does not (a text row turns the new version's numeric
    columns into strings, which only Spark's type inference sees, and the schemas must not change):
    the run fails in the kernel. OUTDIR keeps what it had, no HTML is made, the failed notebook is kept aside."""
    old, new = tmp_path / "old", tmp_path / "new"
    shutil.copytree(DATA / "old", old)
    shutil.copytree(DATA / "new", new)
    (new / "users.csv").write_text((new / "users.csv").read_text() + "99,too,many,fields,here,and,more,x\n")
    out = tmp_path / "report"
    out.mkdir()
    (out / "keep.txt").write_text("an earlier file")
    code = main(["report", "delta", "-p", "old", str(old), "-p", "new", str(new), "-p", "schema_changes", "fail",
                 "-o", str(out)])
    err = capsys.readouterr().err
    assert code == 2
    assert "report failed: SchemaChangeError" in err and "nothing was written to" in err, err
    assert sorted(p.name for p in out.iterdir()) == ["keep.txt"]  # nothing half-written, nothing hidden
    kept = Path(err.split("is kept at ")[1].split()[0])
    nb = nbformat.read(kept, as_version=4)
    assert "SchemaChangeError" in nb.cells[0].source  # the error at the top, for diagnosis


def test_the_report_html_never_carries_a_traceback():
    from dqkit.report import to_html

    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("1/0")
    cell.outputs = [nbformat.v4.new_output("error", ename="ZeroDivisionError", evalue="division by zero",
                                           traceback=["Traceback (most recent call last)", "ZeroDivisionError"]),
                    nbformat.v4.new_output("display_data", data={"text/html": "<p>kept</p>"})]
    nb.cells = [cell]
    html = to_html(nb, "t")
    assert "kept" in html
    assert "Traceback" not in html and "ZeroDivisionError" not in html


def test_report_cli_rejects_an_unknown_parameter_before_running(tmp_path, capsys):
    code = main(["report", "delta", "-p", "colour", "red", "-o", str(tmp_path / "r")])
    assert code == 2
    assert "no parameter 'colour'" in capsys.readouterr().err
    assert not (tmp_path / "r").exists()


def test_report_cli_lists_the_template_parameters(capsys, tmp_path):
    assert main(["report", "delta", "--list-parameters", "-o", str(tmp_path)]) == 0
    listing = capsys.readouterr().out
    assert "keys" in listing and "abs_tol = 0.0" in listing


def _table1_with_markup(tmp_path: Path) -> Path:
    """BigDansing's Table 1 with markup in the cell the repair changes (t4.city)."""
    table = tmp_path / "table1.csv"
    table.write_text((DATA.parent / "bigdansing_table1.csv").read_text().replace(",SF,", ",<i>SF</i>,"))
    return table


def test_the_detect_and_repair_reports_take_their_parameters_from_their_declarations(tmp_path):
    from dqkit.systems import get

    table, rules = _table1_with_markup(tmp_path), str(DATA.parent / "bigdansing_table1_rules.yaml")
    assert list(template_parameters("detect")) == ["table", "rules", "key", "count_only", "sample", "nb_parts",
                                                   "explain", "sample_rows", "since", "max_change", "output"]
    assert list(template_parameters("repair")) == ["table", "rules", "key", "method", "max_iterations",
                                                   "freeze_after", "sample_rows", "dry_run", "output"]
    p = get("repair").prepare(table=str(table), rules=rules, key="", max_iterations="4")
    assert p.rules == (rules,) and p.key is None and p.max_iterations == 4
    with pytest.raises(ParameterError, match="--method must be one of auto, equivalence-class, holistic"):
        get("repair").prepare(table=str(table), rules=rules, method="magic")
    with pytest.raises(ParameterError, match="--max-iterations must be at least 1"):
        get("repair").prepare(table=str(table), rules=rules, max_iterations="0")
    with pytest.raises(ParameterError, match="exclude each other"):
        get("detect").prepare(table=str(table), rules=rules, count_only="true", sample="2")
    with pytest.raises(ParameterError, match="no parameter 'repair'"):  # the old rules report's switch
        collect_parameters([("repair", "true")], template_parameters("detect"), "detect")


def test_the_detect_report_shows_the_violations_and_the_first_candidate_fixes(tmp_path, capsys):
    table, rules = _table1_with_markup(tmp_path), str(DATA.parent / "bigdansing_table1_rules.yaml")
    out, saved = tmp_path / "detect", tmp_path / "saved"
    code = main(["report", "detect", "-p", "table", str(table), "-p", "rules", rules, "-p", "key", "tid",
                 "-p", "output", str(saved), "-o", str(out)])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    html = (out / "detect_report.html").read_text()
    assert "dqkit detect report" in html and ">VIOLATIONS<" in html and "4 violations of 2 of 2 rules" in html
    assert "First candidate fixes" in html and "First violations" in html and "<i>SF" not in html
    assert f"-o {out}" in html and f"-p rules {rules}" in html  # the reproduce line, rules absolute
    assert "<script" not in html.lower() and 'src="http' not in html
    assert (saved / "summary.json").is_file() and (saved / "violations").is_dir()


def test_the_repair_report_shows_the_changes_and_the_violation_graph_and_saves_a_csv_table(tmp_path, capsys):
    table, rules = _table1_with_markup(tmp_path), str(DATA.parent / "bigdansing_table1_rules.yaml")
    out, saved = tmp_path / "repair", tmp_path / "repaired.csv"
    code = main(["report", "repair", "-p", "table", str(table), "-p", "rules", rules, "-p", "key", "tid",
                 "-p", "output", str(saved), "-o", str(out)])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    html = (out / "repair_report.html").read_text()
    assert "dqkit repair report" in html and ">REPAIRED<" in html and "no violation remains" in html
    assert "Change list" in html and "&lt;i&gt;SF&lt;/i&gt; → LA" in html and "<i>SF" not in html
    assert "Violation graph" in html and html.count("data:image/png;base64,") >= 2 and "-p key tid" in html
    assert "<script" not in html.lower() and 'src="http' not in html
    assert sorted(p.name for p in tmp_path.iterdir()) == ["repair", "repaired.changes.csv", "repaired.csv",
                                                          "table1.csv"]
    assert "t4,Mark,90210,LA,CA,88000,28" in saved.read_text()


def test_the_dedup_report_takes_its_parameters_from_the_declaration_and_shows_golden_records_and_accuracy(
        tmp_path, capsys):
    """One run of the shared system report for dedup on 30 generated people; bad parameters are refused
    by the dedup declaration (``System.prepare``, no Spark) before papermill starts a kernel."""
    from data.people import generate_people
    from dqkit.systems import get

    records, truth = generate_people(30, seed=3)
    people = records.merge(truth, on="rec_id")
    biggest = people["entity"].value_counts().sort_index().idxmax()
    people.loc[people["entity"] == biggest, "state"] = INJECTED  # not compared: shown in the golden records
    table, config = tmp_path / "people.csv", tmp_path / "dedup.yaml"
    people.to_csv(table, index=False)
    config.write_text("blocking: [[surname], [postcode, \"substr(given_name,1,1)\"]]\ncomparisons:\n"
                      "  - {column: given_name, method: jaro_winkler}\n  - {column: surname, method: jaro_winkler}\n"
                      "  - {column: date_of_birth, method: levenshtein}\n  - {column: postcode, method: exact}\n"
                      "  - {column: address_1, method: token_set}\n")
    bad = tmp_path / "bad.yaml"
    bad.write_text("blocking: [[surname]\ncomparisons: []\n")
    dedup = get("dedup")
    with pytest.raises(ParameterError, match="line 2, column"):
        dedup.prepare(table=str(table), key="rec_id", config=str(bad))
    with pytest.raises(ParameterError, match="--threshold must be at least 0 and at most 1"):
        dedup.prepare(table=str(table), key="rec_id", config=str(config), threshold="1.5")
    with pytest.raises(SourceError, match="nope.csv"):
        dedup.prepare(table=str(tmp_path / "nope.csv"), key="rec_id", config=str(config))
    with pytest.raises(UnknownColumnError, match="--truth: unknown column .entiti."):
        dedup.prepare(table=str(table), key="rec_id", config=str(config), truth="entiti")
    assert dedup.prepare(table=str(table), key="rec_id", config=str(config)).threshold is None
    assert main(["report", "dedup", "-p", "table", str(table), "-p", "key", "rec_id", "-p", "config", str(config),
                 "-p", "csv", "true", "-o", str(tmp_path / "refused")]) == 2
    assert "--csv and --all-pairs shape what --out writes" in capsys.readouterr().err
    assert not (tmp_path / "refused").exists()

    out, saved = tmp_path / "dedup", tmp_path / "saved"
    code = main(["report", "dedup", "-p", "table", str(table), "-p", "key", "rec_id", "-p", "config", str(config),
                 "-p", "threshold", "0.95", "-p", "truth", "entity", "-p", "output", str(saved), "-o", str(out)])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    html = (out / "dedup_report.html").read_text()
    assert ">DUPLICATES<" in html and "Pairs per blocking rule" in html and "Match weights" in html
    assert "Golden records of the largest clusters" in html and "Pairwise accuracy at threshold 0.95" in html
    assert "Precision and recall by threshold" in html and html.count("data:image/png;base64,") >= 4
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html and "<script" not in html.lower()
    assert 'src="http' not in html and "prepare_report" not in html  # no code shown
    for fact in ("Reproduce with", "-p threshold 0.95", "-p truth entity", f"-o {out}", "records",
                 pyspark.__version__, "comparison surname", str(saved)):
        assert fact in html, fact
    assert sorted(p.name for p in saved.iterdir() if p.is_dir()) == ["clusters", "fingerprints", "golden", "pairs"]
