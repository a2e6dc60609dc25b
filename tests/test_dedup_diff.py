"""The cluster diff of two saved dedup runs (issue #26, ``dqkit dedup-diff``): clusters matched by
record sets, each A and B cluster in exactly one change; refusals before any Spark."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dqkit.dedup.diff import KINDS, classify, dedup_diff, diff_assignments

ROOT = Path(__file__).resolve().parent.parent


def assignment(clusters: dict[str, list[str]]) -> pd.Series:
    """``record -> cluster`` from ``{cluster: [records]}``."""
    pairs = [(r, c) for c, rs in clusters.items() for r in rs]
    return pd.Series([c for _, c in pairs], index=[r for r, _ in pairs], dtype=object)


def saved_run(folder: Path, clusters: dict[str, list[str]], *, key: str = "rec_id", csv: bool = True) -> Path:
    """A folder as ``dqkit dedup --out`` writes it: summary.json and clusters/ (CSV or Parquet parts)."""
    (folder / "clusters").mkdir(parents=True)
    (folder / "summary.json").write_text(json.dumps({"table": "t.csv", "key": key, "candidate_pairs": 3}))
    frame = pd.DataFrame([{key: r, "cluster_id": c} for c, rs in clusters.items() for r in rs])
    if csv:
        frame.to_csv(folder / "clusters" / "part-00000-x.csv", index=False)
    else:
        frame.to_parquet(folder / "clusters" / "part-00000-x.parquet", index=False)
    (folder / "clusters" / "_SUCCESS").write_text("")
    return folder


def kinds_of(changes: pd.DataFrame) -> list[tuple[str, list[str], list[str]]]:
    return sorted((k, a, b) for k, a, b in zip(changes["kind"], changes["a_clusters"], changes["b_clusters"]))


# ------------------------------------------------------------------------------------------- goldens
A = {"1": ["1", "2"], "3": ["3", "4"], "5": ["5"], "6": ["6", "7", "8"], "9": ["9", "10"],
     "11": ["11", "12"], "13": ["13", "14"], "15": ["15", "16"]}
B = {"x1": ["1", "2"],                      # unchanged (other id)
     "3": ["3", "4", "5"],                  # merged: A 3 + A 5
     "6": ["6"], "7": ["7", "8"],           # split: A 6
     "9": ["9", "11"], "10": ["10", "12"],  # regrouped: A 9 and A 11 exchange records
     "13": ["13", "14", "20"],              # changed: new record 20 joined A 13
     "21": ["21", "22"]}                    # created: only new records; removed: A 15 (15, 16 gone)


def test_each_kind_of_change_is_found_on_a_hand_made_pair_of_assignments():
    changes = diff_assignments(assignment(A), assignment(B))
    assert kinds_of(changes) == sorted([
        ("unchanged", ["1"], ["x1"]), ("merged", ["3", "5"], ["3"]), ("split", ["6"], ["6", "7"]),
        ("regrouped", ["11", "9"], ["10", "9"]), ("changed", ["13"], ["13"]), ("created", [], ["21"]),
        ("removed", ["15"], [])])
    changed = changes[changes["kind"] == "changed"].iloc[0]
    assert (changed["new_records"], changed["gone_records"], changed["record_list"]) == (1, 0, ["13", "14", "20"])
    removed = changes[changes["kind"] == "removed"].iloc[0]
    assert (removed["gone_records"], removed["record_list"]) == (2, ["15", "16"])


def test_renamed_cluster_ids_alone_are_no_change_and_exit_0(tmp_path):
    a = saved_run(tmp_path / "a", {"1": ["1", "2"], "3": ["3"]})
    b = saved_run(tmp_path / "b", {"2": ["2", "1"], "z": ["3"]}, csv=False)  # other ids, Parquet
    result = dedup_diff(a, b)
    assert result.counts == {**{k: 0 for k in KINDS}, "unchanged": 2}
    assert result.exit_code == 0 and result.verdict.label == "NO CHANGE"


def test_the_result_renders_counts_in_json_and_a_capped_table_per_kind(tmp_path):
    result = dedup_diff(saved_run(tmp_path / "a", A), saved_run(tmp_path / "b", B))
    d = result.to_dict()
    assert {k: d[k] for k in KINDS} == {k: 1 for k in KINDS}
    assert d["records"] == {"a": 16, "b": 17, "added": 3, "removed": 2}
    assert result.exit_code == 1 and result.verdict.label == "CLUSTERS CHANGED"
    titles = [getattr(b, "title", "") for b in result.sections()]
    assert [t for t in titles if "(" in t] == [f"{k.capitalize()} (1)" for k in KINDS]
    many = dedup_diff(saved_run(tmp_path / "c", {str(i): [str(i)] for i in range(5)}),
                      saved_run(tmp_path / "d", {str(i): [str(i)] for i in range(5, 10)}))
    table = next(b for b in many.sections(sample_rows=2) if getattr(b, "title", "") == "Created (5)")
    assert len(table.frame) == 2 and "3 more not shown" in table.note
    text = result.to_text()
    assert "Regrouped (1)" in text and "11, 9" in text


def test_cli_exits_1_on_changes_with_json_counts_and_saves_changes_csv(tmp_path):
    from dqkit.cli import main

    a, b = saved_run(tmp_path / "a", A), saved_run(tmp_path / "b", B)
    assert main(["dedup-diff", str(a), str(b), "--format", "json", "--out", str(tmp_path / "out")]) == 1
    saved = pd.read_csv(tmp_path / "out" / "changes.csv")
    assert sorted(saved["kind"]) == sorted(KINDS)
    assert json.loads((tmp_path / "out" / "summary.json").read_text())["merged"] == 1


def test_link_runs_match_records_by_source_and_key_so_a_key_in_both_tables_is_two_records(tmp_path):
    def link_run(folder: Path, rows: list[tuple[str, str, str]]) -> Path:
        (folder / "clusters").mkdir(parents=True)
        (folder / "summary.json").write_text(json.dumps({"key": "id", "candidate_pairs": 1,
                                                         "link": {"sources": ["crm", "erp"]}}))
        pd.DataFrame(rows, columns=["source", "id", "cluster_id"]).to_parquet(folder / "clusters" / "part-0.parquet")
        return folder

    a = link_run(tmp_path / "a", [("crm", "1", "crm:1"), ("erp", "1", "crm:1"), ("erp", "2", "erp:2")])
    b = link_run(tmp_path / "b", [("crm", "1", "crm:1"), ("erp", "1", "erp:1"), ("erp", "2", "erp:1")])
    result = dedup_diff(a, b)
    assert kinds_of(result.changes) == [("regrouped", ["crm:1", "erp:2"], ["crm:1", "erp:1"])]
    assert result.changes["record_list"][0] == ["crm:1", "erp:1", "erp:2"]


# ------------------------------------------------------------------------------------------- property
def oracle(a: dict[str, str], b: dict[str, str]) -> list[tuple[str, list[str], list[str]]]:
    """Brute force: grow each cluster's group by repeatedly adding every cluster sharing a record."""
    nodes = {("A", c) for c in a.values()} | {("B", c) for c in b.values()}
    out, seen = [], set()
    for start in sorted(nodes):
        if start in seen:
            continue
        group = {start}
        while True:
            recs = {r for s, c in group for r, x in (a if s == "A" else b).items() if x == c}
            grown = group | {("A", a[r]) for r in recs if r in a} | {("B", b[r]) for r in recs if r in b}
            if grown == group:
                break
            group = grown
        seen |= group
        ca, cb = sorted(c for s, c in group if s == "A"), sorted(c for s, c in group if s == "B")
        ra = {r for r, c in a.items() if c in ca}
        rb = {r for r, c in b.items() if c in cb}
        out.append((classify(len(ca), len(cb), ra == rb), ca, cb))
    return sorted(out)


partition = st.dictionaries(st.sampled_from([str(i) for i in range(8)]), st.sampled_from("pqrstu"), max_size=8)


@settings(max_examples=200, deadline=None)
@given(partition, partition)
def test_every_cluster_of_both_runs_is_in_exactly_one_change_as_the_oracle_says(a, b):
    changes = diff_assignments(pd.Series(a, dtype=object), pd.Series(b, dtype=object))
    assert kinds_of(changes) == oracle(a, b)
    assert sorted(c for cs in changes["a_clusters"] for c in cs) == sorted(set(a.values()))
    assert sorted(c for cs in changes["b_clusters"] for c in cs) == sorted(set(b.values()))
    assert (changes["kind"] == "unchanged").all() == (a == b or _same_partition(a, b))


def _same_partition(a: dict[str, str], b: dict[str, str]) -> bool:
    def blocks(x):
        return sorted(sorted(r for r in x if x[r] == c) for c in set(x.values()))
    return blocks(a) == blocks(b)


# ------------------------------------------------------------------------------------------- refusals
def _cli_without_spark(*argv: str) -> subprocess.CompletedProcess:
    code = ("import sys\nfrom dqkit.cli import main\nrc = main(sys.argv[1:])\n"
            "print('SPARK' if 'pyspark.sql' in sys.modules else 'NO SPARK', file=sys.stderr)\nsys.exit(rc)\n")
    return subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, cwd=ROOT, timeout=120)


@pytest.mark.parametrize("case, message", [
    ("plain", "is not a saved dedup run (no summary.json or clusters/)"),
    ("missing", "RUN_B: no such folder"),
    ("other-key", "the runs key their records differently"),
    ("file", "is a file, not a saved dedup run"),
    ("link-vs-dedup", "one run links two tables (--link) and the other deduplicates one"),
    ("not-dedup", "is not a dedup summary"),
])
def test_a_folder_that_is_not_a_dedup_run_is_refused_with_exit_2_before_spark(tmp_path, case, message):
    a = saved_run(tmp_path / "a", {"1": ["1"]})
    b = tmp_path / "b"
    if case == "plain":
        b.mkdir()
        (b / "x.csv").write_text("a\n1\n")
    elif case == "file":
        b.write_text("rec_id,cluster_id\n1,1\n")
    elif case == "link-vs-dedup":
        saved_run(b, {"1": ["1"]})
        (b / "summary.json").write_text(json.dumps({"key": "rec_id", "candidate_pairs": 1, "link": {}}))
    elif case == "other-key":
        saved_run(b, {"1": ["1"]}, key="id")
    elif case == "not-dedup":
        saved_run(b, {"1": ["1"]})
        (b / "summary.json").write_text(json.dumps({"key": "rec_id", "violations": 0}))
    done = _cli_without_spark("dedup-diff", str(a), str(b))
    assert done.returncode == 2, done.stderr
    assert message in done.stderr and "Traceback" not in done.stderr and "NO SPARK" in done.stderr


def test_the_derived_widget_checks_the_folders_and_shows_summary_and_changes(spark):
    from dqkit.widgets import SystemController, SystemExplorer

    controller = SystemController("dedup-diff", {"run_a": str(ROOT / "data/dedup/runs/night1")}, spark=spark)
    controller.set("run_b", str(ROOT / "data/dedup"))
    assert "is not a saved dedup run" in controller.problem()
    explorer = SystemExplorer("dedup-diff", {"run_a": str(ROOT / "data/dedup/runs/night1"),
                                             "run_b": str(ROOT / "data/dedup/runs/night2")}, spark=spark)
    result = explorer.run(timeout=120)
    assert result is not None and result.counts["created"] == 1 and result.counts["changed"] == 2
    assert result.counts["split"] == 1  # rec-7-org, the one record joining its cluster, is gone
    assert [explorer.view.get_title(i) for i in range(len(explorer.view.children))] == ["Summary", "Changes"]
