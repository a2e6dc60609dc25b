"""``dedup NEW --since RUN`` (issue #26, incremental dedup): only pairs with inserted or updated records are
scored, with the saved model; the clusters equal a full run with that model up to id renaming; ids are
stable (unchanged clusters keep theirs, merged ones their largest ancestor's, new ones never reuse an
old id); refusals come before Spark."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from dqkit.errors import ParameterError
from dqkit.systems import get
from support.sparkjobs import spark_jobs

ROOT = Path(__file__).resolve().parent.parent
COLS = ["rec_id", "name", "city", "note"]
CONFIG = {"blocking": [["city"]], "comparisons": [{"column": "name", "method": "levenshtein", "thresholds": [1]}],
          "threshold": 0.9}


def _model():
    """Hand-set: a pair matches exactly when its names are at most one edit apart (same city: blocking)."""
    from dqkit.dedup import FSModel

    return FSModel(("name",), (np.array([0.01, 0.09, 0.9]),), (np.array([0.98, 0.001, 0.0001]),), 0.5)


NIGHT1 = [("a1", "ann", "x", ""), ("a2", "anne", "x", ""), ("a3", "ann", "x", ""), ("b1", "bob", "y", ""),
          ("b2", "bob", "y", ""), ("c1", "cat", "z", ""), ("e1", "cog", "z", ""), ("d1", "dan", "w", ""),
          ("d2", "dan", "w", ""), ("d3", "dan", "w", ""), ("f1", "fay", "v", ""), ("g1", "gus", "u", ""),
          ("g2", "gus", "u", "")]
NIGHT2 = [r for r in NIGHT1 if r[0] not in ("b2", "d1", "f1", "g2")] + [
    ("a4", "ann", "x", ""),            # joins a1's cluster: changed
    ("b2", "zed", "y", ""),            # leaves b1: split
    ("x1", "cot", "z", ""),            # bridges cat and cog: merged (c1 keeps its id, e1 retires)
    ("d1", "kim", "w", ""),            # leaves d2, d3: split, the id d1 stays with the two
    ("g2", "gus", "u", "moved"),       # a column no comparison reads: no change
    ("n1", "nia", "t", ""), ("n2", "nia", "t", "")]  # created; f1 removed
GOLDEN_IDS = {"a1": "a1", "a2": "a1", "a3": "a1", "a4": "a1", "b1": "b1", "b2": "b2", "c1": "c1", "e1": "c1",
              "x1": "c1", "d1": "d1~1", "d2": "d1", "d3": "d1", "g1": "g1", "g2": "g1", "n1": "n1", "n2": "n1"}


def _save_night1(spark, folder: Path, rows=NIGHT1) -> Path:
    from dqkit.dedup import dedup

    dedup(spark.createDataFrame(rows, COLS), "rec_id", CONFIG, model=_model(), spark=spark).saving("csv").save(folder)
    return folder


def _ids(result) -> dict:
    return {r["rec_id"]: r["cluster_id"] for r in result.clusters.collect()}


@pytest.mark.parametrize("max_change", [1.0, 0.0], ids=["incremental", "cost-rule-full-run"])
def test_since_keeps_ids_and_reports_each_change_of_a_hand_made_pair_of_nights(spark, tmp_path, max_change):
    from dqkit.dedup.since import dedup_since

    night1 = _save_night1(spark, tmp_path / "night1")
    res = dedup_since(spark.createDataFrame(NIGHT2, COLS), night1, "rec_id", CONFIG, max_change=max_change,
                      spark=spark)
    assert _ids(res) == GOLDEN_IDS
    assert res.counts == {"created": 1, "removed": 1, "merged": 1, "split": 2, "regrouped": 0, "changed": 1,
                          "unchanged": 1}
    d = res.to_dict()
    assert d["changes"] == {"inserted": 4, "deleted": 1, "updated": 2} and d["full_run"] is (max_change == 0.0)
    assert (d["merged"], d["split"], d["created"]) == (1, 2, 1) and d["clusters"] == 8
    assert set(res.retired) == {"e1", "f1"} and res.exit_code == 1
    assert "1 merged" in res.verdict.summary and "2 split" in res.verdict.summary
    titles = [getattr(b, "title", "") for b in res.sections()]
    assert {"Since the last run", "Merged (1)", "Split (2)", "Created (1)"} <= set(titles)
    if max_change == 0.0:
        assert "more than max_change" in res.full_run_reason
    else:  # only the pairs of a4, b2, x1, d1, n1, n2 were compared
        assert res.pairs_compared == 3 + 1 + 2 + 2 + 1


def test_tonights_out_serves_as_the_next_since_and_a_retired_id_is_never_reused(spark, tmp_path):
    from dqkit.dedup.since import dedup_since

    night1 = _save_night1(spark, tmp_path / "night1")
    dedup_since(spark.createDataFrame(NIGHT2, COLS), night1, "rec_id", CONFIG, max_change=1.0,
                spark=spark).saving("csv").save(tmp_path / "night2")
    manifest = json.loads((tmp_path / "night2" / "dedup_manifest.json").read_text())
    assert set(manifest["retired_ids"]) == {"e1", "f1"} and manifest["model"]["prior"] == 0.5
    night3 = [*NIGHT2, ("f1", "uma", "s", "")]  # the key of a retired cluster comes back, alone
    res = dedup_since(spark.createDataFrame(night3, COLS), tmp_path / "night2", "rec_id", CONFIG, max_change=1.0,
                      spark=spark)
    assert _ids(res) == {**GOLDEN_IDS, "f1": "f1~1"}
    assert res.counts["created"] == 1 and res.counts["unchanged"] == 8 and res.pairs_compared == 0


def test_a_night_without_change_compares_nothing_and_keeps_every_cluster_and_id(spark, tmp_path):
    from dqkit.dedup.since import dedup_since

    night1 = _save_night1(spark, tmp_path / "night1")
    before = {r["rec_id"]: r["cluster_id"] for r in spark.read.option("header", True).csv(str(night1 / "clusters"))
              .collect()}
    res = dedup_since(spark.createDataFrame(NIGHT1, COLS), night1, "rec_id", CONFIG, spark=spark)
    assert _ids(res) == before and res.pairs_compared == 0 and not res.full_run
    assert res.counts == {**{k: 0 for k in res.counts}, "unchanged": len(set(before.values()))}
    assert res.verdict.summary.endswith("no cluster changed, 7 unchanged")



# ------------------------------------------------------------------------ the key check and oversized blocks
@pytest.mark.parametrize("extra, message", [([("a1", "zed", "q", "")], r"not unique: 1 key value\(s\) repeat"),
                                            ([(None, "zed", "q", "")], r"NULL in 1 row")],
                         ids=["repeated", "null"])
def test_since_refuses_a_repeated_or_null_key_in_new_with_the_key_checks_message(spark, tmp_path, extra, message):
    from dqkit.dedup.since import dedup_since

    night1 = _save_night1(spark, tmp_path / "night1")
    with pytest.raises(ParameterError, match=message):
        dedup_since(spark.createDataFrame(NIGHT2 + extra, COLS), night1, "rec_id", CONFIG, max_change=1.0,
                    spark=spark)


SMALL_BLOCKS = {**CONFIG, "max_block_size": 2}  # cities x and w (3 records each) are oversized on night 1
SAME_OVER = [r for r in NIGHT2 if r[0] != "x1"]  # x grows, w's d1 changes: both stay oversized, z stays 2


@pytest.mark.parametrize("night2, full_run", [
    (SAME_OVER, False),
    ([*SAME_OVER, ("b3", "bob", "y", "")], True),                      # y grows to 3: newly oversized
    ([r for r in SAME_OVER if r[0] != "d3"], True)],                   # w shrinks to 2: no longer oversized
    ids=["same-oversized-blocks", "a-block-grows-over", "an-oversized-block-shrinks"])
def test_since_finds_the_oversized_blocks_from_the_touched_blocks_and_runs_in_full_when_they_differ(
        spark, tmp_path, night2, full_run):
    from dqkit.dedup import dedup
    from dqkit.dedup.since import dedup_since

    rows = spark.createDataFrame(NIGHT1, COLS)
    dedup(rows, "rec_id", SMALL_BLOCKS, model=_model(), spark=spark).saving("csv").save(tmp_path / "night1")
    table = spark.createDataFrame(night2, COLS)
    res = dedup_since(table, tmp_path / "night1", "rec_id", SMALL_BLOCKS, max_change=1.0, spark=spark)
    full = dedup(table, "rec_id", SMALL_BLOCKS, model=_model(), spark=spark)
    assert res.full_run is full_run
    assert ("oversized blocks differ" in res.full_run_reason) is full_run
    assert _partition(_ids(res)) == _partition({r["rec_id"]: r["cluster_id"] for r in full.clusters.collect()})
    assert {i: sorted(k) for i, k in res.oversized.items()} == {i: sorted(k) for i, k in full.oversized.items()}
    if not full_run:  # the notes name the purged blocks as a full run's do
        assert any("2 block(s) exceed max_block_size=2" in n for n in res.notes)



def test_since_with_its_key_sets_as_broadcast_tables_and_whole_table_block_counts_gives_the_same_answer(
        spark, tmp_path, monkeypatch):
    # thousands of touched keys go to Spark as an Arrow table, not literals; too many touched blocks
    # fall back to counting every block of NEW; many touched records split the comparisons into tasks
    from dqkit.dedup import _since_scan, dedup, since

    monkeypatch.setattr(since, "_INLINE_KEYS", 0)
    monkeypatch.setattr(since, "_TOUCHED_PER_TASK", 2)
    monkeypatch.setattr(_since_scan, "MAX_NEAR_KEYS", 0)
    night1 = tmp_path / "night1"  # Parquet: tonight's kept clusters and matches are read from it lazily
    dedup(spark.createDataFrame(NIGHT1, COLS), "rec_id", CONFIG, model=_model(), spark=spark).save(night1)
    table = spark.createDataFrame(NIGHT2, COLS)
    res = since.dedup_since(table, night1, "rec_id", CONFIG, max_change=1.0, spark=spark)
    full = dedup(table, "rec_id", CONFIG, model=_model(), spark=spark)
    assert not res.full_run and res.pairs_compared == 9 and _ids(res) == GOLDEN_IDS
    pairs = {tuple(sorted((r["key_1"], r["key_2"]))) for r in res.matches.collect()}
    assert len(pairs) == res.n_matching_pairs == full.n_matching_pairs
    assert ("b1", "b2") not in pairs and ("a1", "a4") in pairs  # a changed record's saved match is void

def test_the_touched_pairs_scored_on_the_driver_equal_the_pairs_spark_scores(spark, tmp_path, monkeypatch):
    """Driver scoring (text columns, levenshtein) against the same pairs sent to Spark: same pairs,
    levels and match weights (bit for bit), so the same matches."""
    from dqkit.dedup import since

    night1 = _save_night1(spark, tmp_path / "night1")
    table = spark.createDataFrame(NIGHT2, COLS)
    runs = {}
    for driver in (True, False):
        monkeypatch.setattr(since, "_DRIVER_SCORING", driver)
        res = since.dedup_since(table, night1, "rec_id", CONFIG, max_change=1.0, spark=spark)
        assert not res.full_run and res.pairs_compared == 9 and _ids(res) == GOLDEN_IDS
        runs[driver] = {(r["key_1"], r["key_2"]): (r["rule"], r["match_weight"], r["gamma_name"])
                        for r in res.matches.collect()}
    assert runs[True] == runs[False] and len(runs[True]) == res.n_matching_pairs


# Spark jobs of a tiny incremental --since run (adaptive execution off; a saved CSV run; the input a local
# checkpoint), measured. The Spark route (DQKIT_DEDUP_DRIVER_PAIRS=0): the CSV header of the saved
# fingerprints 1 (none for a Parquet run), what changed with the key check's counts and the touched
# records' block hashes 1 (the blocks were a job of their own), the records of those blocks collected
# through Arrow 1 (their sizes and pairs are counted on the driver: there were a checkpoint, a block-size
# job and the touched records' broadcast) and the scored pairs 1; only the second and third read all of
# NEW. It was 7. The driver route (the default for a run that fits): one fetch of NEW through Arrow, the
# change and the touched blocks found on the driver (dqkit.dedup._since_driver).
SINCE_JOB_BUDGET = {"spark": 4, "driver": 1}


@pytest.mark.parametrize("route", ["driver", "spark"])
def test_a_tiny_incremental_since_run_stays_within_its_spark_job_budget(spark, tmp_path, monkeypatch, route):
    from dqkit.runtime import sparkutil
    from dqkit.dedup.since import dedup_since

    monkeypatch.setattr(sparkutil, "checkpoint_folder", lambda _spark: None)
    night1 = _save_night1(spark, tmp_path / "night1")
    table = spark.createDataFrame(NIGHT2, COLS).localCheckpoint()
    monkeypatch.setenv("DQKIT_DEDUP_DRIVER_PAIRS", "0" if route == "spark" else "1000")
    with spark_jobs(spark, "dedup --since job budget") as counted:
        res = dedup_since(table, night1, "rec_id", CONFIG, max_change=1.0, spark=spark)
    jobs = counted.n
    assert not res.full_run and res.pairs_compared == 9 and _ids(res) == GOLDEN_IDS
    assert jobs <= SINCE_JOB_BUDGET[route], f"{jobs} Spark jobs, budget {SINCE_JOB_BUDGET[route]}; stages {res.stages}"


# ------------------------------------------------------------------------ the property, with hypothesis
from hypothesis import HealthCheck, example, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

NAMES = ["aa", "ab", "bb", "ba", "cc"]  # chains one edit apart: components that are not cliques
_row = st.tuples(st.sampled_from(NAMES), st.sampled_from(["x", "y"]), st.sampled_from(["", "n"]))


@st.composite
def nights(draw):
    """Two versions of a tiny table: night 2 drops, edits (any column) and adds records."""
    n = draw(st.integers(2, 8))
    old = {f"r{i}": draw(_row) for i in range(n)}
    new = {k: draw(_row) if draw(st.booleans()) else v for k, v in old.items() if not draw(st.booleans()) or k == "r0"}
    for i in range(draw(st.integers(0, 3))):
        new[f"s{i}"] = draw(_row)
    return old, new


def _partition(ids: dict) -> set[frozenset]:
    groups: dict = {}
    for r, c in ids.items():
        groups.setdefault(c, set()).add(r)
    return {frozenset(g) for g in groups.values()}


# Each example runs three small Spark jobs chains; `make test` runs 3, DQKIT_DEDUP_SINCE_EXAMPLES=50 searches deeper.
@settings(max_examples=int(os.environ.get("DQKIT_DEDUP_SINCE_EXAMPLES", "3")), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(case=nights())
# always run too: a changed record leaves a cluster whose other records stay linked by a saved match;
# an added record bridges a chain while another cluster's record is removed
@example(case=({"r0": ("aa", "x", ""), "r1": ("aa", "x", ""), "r2": ("aa", "x", "")},
               {"r0": ("aa", "x", ""), "r1": ("aa", "x", ""), "r2": ("cc", "x", "")}))
@example(case=({"r0": ("aa", "x", ""), "r1": ("bb", "x", ""), "r2": ("cc", "y", ""), "r3": ("cc", "y", "n")},
               {"r0": ("aa", "x", ""), "r1": ("bb", "x", ""), "r2": ("cc", "y", ""), "s0": ("ab", "x", "")}))
def test_incremental_clusters_equal_a_full_run_with_the_same_model_and_untouched_ids_stay(spark, tmp_path_factory,
                                                                                         case):
    from dqkit.dedup import dedup
    from dqkit.dedup.since import dedup_since

    old, new = case
    folder = tmp_path_factory.mktemp("night") / "run"
    _save_night1(spark, folder, [(k, *v) for k, v in old.items()])
    before = {r["rec_id"]: r["cluster_id"] for r in
              spark.read.option("header", True).csv(str(folder / "clusters")).collect()}
    table = spark.createDataFrame([(k, *v) for k, v in new.items()], COLS)
    res = dedup_since(table, folder, "rec_id", CONFIG, max_change=1.0, spark=spark)
    full = dedup(table, "rec_id", CONFIG, model=_model(), spark=spark)
    got = _ids(res)
    assert _partition(got) == _partition({r["rec_id"]: r["cluster_id"] for r in full.clusters.collect()})
    old_sets = {c: s for c, s in ((c, {r for r, x in before.items() if x == c}) for c in set(before.values()))}
    for c, s in old_sets.items():  # a cluster with the same records keeps its id
        if any(g == frozenset(s) for g in _partition(got)):
            assert {got[r] for r in s} == {c}
    ancestors = {got[r] for r in got if r in before}
    for c in set(got.values()) - ancestors:  # clusters of new records only: never an old id
        assert c not in set(before.values())
    assert res.n_matching_pairs == full.n_matching_pairs


# ------------------------------------------------------------------------ refusals, without Spark
def _fake_run(folder: Path, **over) -> Path:
    """A saved dedup run's folder as `dedup --out` writes it, without Spark (the manifest by hand)."""
    from dqkit.dedup.manifest import config_form, load_config_light

    for sub in ("clusters", "pairs", "fingerprints"):
        (folder / sub).mkdir(parents=True)
    (folder / "clusters" / "part-0.csv").write_text("rec_id,cluster_id\nrec-0-org,rec-0-org\n")
    (folder / "summary.json").write_text(json.dumps({"key": "rec_id", "candidate_pairs": 1}))
    cfg = load_config_light(ROOT / "data/dedup/dedup.yaml")
    manifest = {"dqkit": "dedup", "format": 1, "key": "rec_id", "config": config_form(cfg), "threshold": 0.9, **over}
    (folder / "dedup_manifest.json").write_text(json.dumps(manifest))
    return folder


def _params(since: Path, **extra):
    return get("dedup").params.parse({"table": "data/dedup/people_night2.csv", "key": "rec_id",
                                      "config": "data/dedup/dedup.yaml", "since": str(since), **extra})


@pytest.mark.parametrize("over,extra,message", [
    ({"key": "entity"}, {}, "keyed its records by 'entity', not 'rec_id'"),
    ({"threshold": 0.5}, {}, "linked pairs at threshold 0.5, not 0.9"),
    ({"config": {"blocking": [["surname"]], "comparisons": [], "types": {}, "max_block_size": 2000,
                 "on_oversized": "skip"}}, {}, "another config: blocking rules surname then"),
    ({"format": 0}, {}, "written by another dqkit version"),
    ({}, {"truth": "entity"}, "it excludes --truth"),
    ({}, {"threshold": "0.8"}, "linked pairs at threshold 0.9, not 0.8"),
])
def test_since_refuses_a_saved_run_of_another_key_config_or_threshold_naming_the_difference(tmp_path, over, extra,
                                                                                           message):
    with pytest.raises(ParameterError) as err:
        _params(_fake_run(tmp_path / "run", **over), **extra).validate()
    assert message in err.value.message and "run a full dedup" in (err.value.hint or "")


def test_since_refuses_a_run_saved_before_incremental_dedup_and_a_folder_that_is_no_run(tmp_path):
    with pytest.raises(ParameterError, match="holds no dedup_manifest.json"):
        _params(ROOT / "data/dedup/runs/night1").validate()
    (tmp_path / "x").mkdir()
    with pytest.raises(ParameterError, match="is not a saved dedup run"):
        _params(tmp_path / "x").validate()


def test_a_since_refusal_exits_2_with_one_line_and_starts_no_spark():
    code = ("import sys\nfrom dqkit.cli import main\nrc = main(sys.argv[1:])\n"
            "print('SPARK' if 'pyspark.sql' in sys.modules else 'NO SPARK', file=sys.stderr)\nsys.exit(rc)\n")
    done = subprocess.run([sys.executable, "-c", code, "dedup", "data/dedup/people_night2.csv", "--key", "rec_id",
                           "--config", "data/dedup/dedup.yaml", "--since", "data/dedup/runs/night1"],
                          capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 2, done.stderr
    assert "holds no dedup_manifest.json" in done.stderr and "Traceback" not in done.stderr
    assert "NO SPARK" in done.stderr


def test_the_bundled_nights_from_the_command_line_agree_with_dedup_diff_of_the_two_saved_runs(tmp_path, capsys,
                                                                                              monkeypatch, spark):
    from dqkit.cli import main
    from dqkit.dedup.diff import dedup_diff

    monkeypatch.chdir(ROOT)
    base = ["--key", "rec_id", "--config", "data/dedup/dedup.yaml", "--csv"]
    assert main(["dedup", "data/dedup/people.csv", *base, "--out", str(tmp_path / "n1")]) == 1
    capsys.readouterr()
    code = main(["dedup", "data/dedup/people_night2.csv", *base, "--since", str(tmp_path / "n1"), "--max-change",
                 "0.1", "--out", str(tmp_path / "n2"), "--format", "json"])
    d = json.loads(capsys.readouterr().out)
    assert code == 1 and d["full_run"] is False and d["changes"] == {"inserted": 2, "deleted": 2, "updated": 0}
    diff = dedup_diff(tmp_path / "n1", tmp_path / "n2")  # the saved runs, diffed independently
    assert {k: d[k] for k in diff.counts} == diff.counts and diff.counts["unchanged"] > 0
    assert d["pairs_compared"] < json.loads((tmp_path / "n1" / "summary.json").read_text())["candidate_pairs"]
