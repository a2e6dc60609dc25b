"""``dedup NEW --since RUN``'s change detection on the driver (``dqkit.dedup._since_driver``): one scan of
NEW, the saved fingerprints read with pyarrow, the change a join by key. It must give the Spark route's
answer exactly: the same changes, touched blocks and records near them (checked against brute-force
oracles without Spark), and the same clusters, ids, counts and matches end to end."""
from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dqkit.dedup import _blocking as B
from dqkit.dedup import _since_driver as SD
from dqkit.dedup import _since_pairs as P
from dqkit.primitives.fingerprint import FP_HI, FP_LO
from test_dedup_since import COLS, CONFIG, GOLDEN_IDS, NIGHT1, NIGHT2, _ids, _model, _partition

ENV = "DQKIT_DEDUP_DRIVER_PAIRS"
N_RULES = 2


# ------------------------------------------------------------------------ the driver's parts against oracles
def _fetched(new: dict, integer: bool) -> pa.Table:
    """A table as ``_since_driver.fetch`` returns it: id, per rule block hash and JSON, one value, fingerprint."""
    keys = list(new)
    cols = {B.ID: pa.array(keys, pa.int32() if integer else pa.string())}
    for i in range(N_RULES):
        blocks = [new[k][2 + i] for k in keys]
        cols[P.hash_col(i)] = pa.array([None if b is None else hash(("b", b)) % 1000 for b in blocks], pa.int64())
        cols[P.json_col(i)] = pa.array([None if b is None else f'{{"k":{{"p0":"{b}"}}}}' for b in blocks], pa.string())
    cols["_dq_c0"] = pa.array([str(new[k][0]) for k in keys], pa.string())
    cols[FP_HI] = pa.array([new[k][0] for k in keys], pa.int64())
    cols[FP_LO] = pa.array([new[k][1] for k in keys], pa.int64())
    return pa.table(cols)


_half = st.integers(-2, 2)  # fingerprint halves: few values, so equal, one half differing and both differing occur
_record = st.tuples(_half, _half, st.sampled_from([None, "x", "y", "z"]), st.sampled_from([None, "u", "v"]))


@st.composite
def nights(draw):
    """Saved fingerprints (key -> (hi, lo)) and NEW's records (key -> (hi, lo, block of rule 0, of rule 1))."""
    old = draw(st.dictionaries(st.integers(0, 30), st.tuples(_half, _half), max_size=12))
    new = draw(st.dictionaries(st.integers(0, 30), _record, max_size=12))
    return old, new


@settings(max_examples=200, deadline=None)
@given(case=nights(), integer=st.booleans())
def test_the_changes_found_on_the_driver_equal_a_brute_force_comparison_of_the_two_nights(case, integer):
    old, new = case
    wrap = (lambda k: k) if integer else (lambda k: f"r{k}")
    new = {wrap(k): v for k, v in new.items()}
    old = {wrap(k): v for k, v in old.items()}
    tbl = _fetched(new, integer)
    text = [str(k) for k in old], [str(v[0]) for v in old.values()], [str(v[1]) for v in old.values()]
    saved = pa.table({"rec_id": pa.array(text[0], pa.string()), FP_HI: pa.array(text[1], pa.string()),  # as a CSV
                      FP_LO: pa.array(text[2], pa.string())})  # run is read: text
    changed, rows = SD.changes(tbl, saved, "rec_id", integer)
    want = {**{k: "inserted" for k in new if k not in old}, **{k: "deleted" for k in old if k not in new},
            **{k: "updated" for k in new if k in old and new[k][:2] != old[k]}}
    assert dict(zip(changed["key"], changed["change"])) == want and len(changed) == len(want)
    keys = list(new)
    assert sorted((keys[r] for r in rows), key=str) == sorted((k for k, c in want.items() if c != "deleted"), key=str)
    blocks = SD.blocks_of(tbl, rows, N_RULES)
    for i in range(N_RULES):  # the touched records' block hashes, per rule
        want_h = {hash(("b", new[keys[r]][2 + i])) % 1000 for r in rows if new[keys[r]][2 + i] is not None}
        assert blocks[i] == want_h
    saved_over = {1: ['{"k":{"p0":"u"}}']}
    near = SD.near(tbl, blocks, saved_over)
    hashes = [[tbl.column(P.hash_col(i))[j].as_py() for i in range(N_RULES)] for j in range(tbl.num_rows)]
    want_rows = [j for j in range(tbl.num_rows) if any(hashes[j][i] in blocks[i] for i in range(N_RULES))
                 or new[keys[j]][3] == "u"]
    assert near.column(B.ID).to_pylist() == [keys[j] for j in want_rows]
    assert FP_HI not in near.column_names and near.column_names == [c for c in tbl.column_names
                                                                     if c not in (FP_HI, FP_LO)]


@pytest.mark.parametrize("keys", [["a", "a", "b"], ["a", None, "b"]], ids=["repeated", "null"])
def test_a_repeated_or_null_key_in_new_is_left_to_the_key_check(keys):
    tbl = pa.table({B.ID: pa.array(keys), FP_HI: pa.array([1, 2, 3], pa.int64()), FP_LO: pa.array([1, 2, 3], pa.int64())})
    saved = pa.table({"k": pa.array(["a"]), FP_HI: pa.array([1], pa.int64()), FP_LO: pa.array([1], pa.int64())})
    assert SD.changes(tbl, saved, "k", False) is None


# ------------------------------------------------------------------------ end to end, against the Spark route
def _run(spark, monkeypatch, route: str, table, folder):
    from dqkit.dedup.since import dedup_since

    monkeypatch.setenv(ENV, "0" if route == "spark" else "1000")
    try:
        return dedup_since(table, folder, "rec_id", CONFIG, max_change=1.0, spark=spark)
    finally:
        monkeypatch.delenv(ENV)


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_the_driver_route_gives_the_spark_routes_clusters_ids_changes_and_matches(spark, tmp_path, monkeypatch, fmt):
    from dqkit.dedup import dedup

    night1 = tmp_path / "night1"
    dedup(spark.createDataFrame(NIGHT1, COLS), "rec_id", CONFIG, model=_model(), spark=spark).saving(fmt).save(night1)
    table = spark.createDataFrame(NIGHT2, COLS)
    got = {}
    for route in ("driver", "spark"):
        res = _run(spark, monkeypatch, route, table, night1)
        got[route] = (_ids(res), res.counts, dict(res.change_counts), res.pairs_compared, res.n_records,
                      res.n_matching_pairs, sorted((r["key_1"], r["key_2"], r["match_weight"]) for r in res.matches.collect()),
                      sorted(map(tuple, res.changes.astype(str).values.tolist())))
        assert ("touched blocks' records" in res.stages) and not res.full_run
    assert got["driver"] == got["spark"] and got["driver"][0] == GOLDEN_IDS


def test_an_integer_key_takes_the_driver_route_with_the_spark_routes_answer(spark, tmp_path, monkeypatch):
    from dqkit.dedup import dedup

    number = {k: i for i, k in enumerate(sorted({r[0] for r in NIGHT1 + NIGHT2}))}
    cols = ["rec_id", *COLS[1:]]
    night1 = tmp_path / "night1"
    dedup(spark.createDataFrame([(number[r[0]], *r[1:]) for r in NIGHT1], cols), "rec_id", CONFIG, model=_model(),
          spark=spark).saving("csv").save(night1)
    table = spark.createDataFrame([(number[r[0]], *r[1:]) for r in NIGHT2], cols)
    runs = {route: _run(spark, monkeypatch, route, table, night1) for route in ("driver", "spark")}
    assert _ids(runs["driver"]) == _ids(runs["spark"])
    assert _partition(_ids(runs["driver"])) == _partition({number[k]: v for k, v in GOLDEN_IDS.items()})
    assert runs["driver"].counts == runs["spark"].counts and runs["driver"].pairs_compared == 9


@pytest.mark.parametrize("route", ["driver", "spark"])
@pytest.mark.parametrize("extra, message", [([("a1", "zed", "q", "")], r"not unique: 1 key value\(s\) repeat"),
                                            ([(None, "zed", "q", "")], r"NULL in 1 row")],
                         ids=["repeated", "null"])
def test_both_routes_refuse_a_repeated_or_null_key_with_the_key_checks_message(spark, tmp_path, monkeypatch, route,
                                                                             extra, message):
    from dqkit.dedup import dedup
    from dqkit.errors import ParameterError

    night1 = tmp_path / "night1"
    dedup(spark.createDataFrame(NIGHT1, COLS), "rec_id", CONFIG, model=_model(), spark=spark).saving("csv").save(night1)
    with pytest.raises(ParameterError, match=message):
        _run(spark, monkeypatch, route, spark.createDataFrame(NIGHT2 + extra, COLS), night1)


def test_the_driver_route_is_left_for_spark_when_the_run_is_too_large_or_a_block_key_is_a_float(spark, monkeypatch):
    from dqkit.dedup import parse_config

    df = spark.createDataFrame([("a", "ann", "x", 1.5)], ["rec_id", "name", "city", "score"])
    cfg = parse_config(CONFIG)
    rules = B.parse_rules(df, cfg.blocking)
    recs = SD.records(df, "rec_id", cfg, rules)
    monkeypatch.setenv(ENV, "10")
    assert SD.takes(recs, 1, 10) and not SD.takes(recs, 1, 11) and not SD.takes(recs, 1, None)
    assert SD.takes(recs, 1, 10, 10) and not SD.takes(recs, 1, 10, 11)  # tonight's bound, when known, counts too
    monkeypatch.setenv(ENV, "0")
    assert not SD.takes(recs, 1, 1)
    monkeypatch.setenv(ENV, "10")
    fcfg = parse_config({**CONFIG, "blocking": [["score"]]})
    frecs = SD.records(df, "rec_id", fcfg, B.parse_rules(df, fcfg.blocking))
    assert not SD.takes(frecs, 1, 1)  # -0.0 and 0.0 join in Spark but hash apart



def test_a_table_grown_past_the_driver_limit_since_the_saved_run_is_not_fetched_to_the_driver(spark, tmp_path,
                                                                                              monkeypatch):
    # the saved run fits the limit; tonight's CSV, by its lines (read without Spark), does not: the Spark
    # route answers, with the driver route's answer at a larger limit
    from dqkit.dedup import dedup
    from dqkit.dedup.since import dedup_since

    night1 = tmp_path / "night1"
    dedup(spark.createDataFrame(NIGHT1, COLS), "rec_id", CONFIG, model=_model(), spark=spark).saving("csv").save(night1)
    tonight = tmp_path / "tonight.csv"
    spark.createDataFrame(NIGHT2, COLS).toPandas().to_csv(tonight, index=False)
    assert len(NIGHT1) < len(NIGHT2) + 1
    fetched = []
    monkeypatch.setattr(SD, "fetch", lambda *a, _f=SD.fetch: fetched.append(1) or _f(*a))
    got = {}
    for limit in (len(NIGHT1), 1000):
        monkeypatch.setenv(ENV, str(limit))
        res = dedup_since(str(tonight), night1, "rec_id", CONFIG, max_change=1.0, spark=spark)
        got[limit] = (_ids(res), res.counts, len(fetched))
    assert got[len(NIGHT1)][2] == 0 and got[1000][2] == 1  # the driver fetched tonight's table only within the limit
    assert got[len(NIGHT1)][:2] == got[1000][:2] and got[1000][0] == GOLDEN_IDS
