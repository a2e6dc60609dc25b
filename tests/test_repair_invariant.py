"""A fix lands only on the row it was computed for: repair's invariant as a property, and row ids that a
recomputation cannot renumber.

The property (hypothesis, tiny tables over small alphabets, FD rules): the row count is unchanged;
every changed cell is in a row that is part of a violation of the rule that changed it, in the table
as it was at the start of that round (an independent pandas oracle finds the violations); every row
with no logged change, in particular every row never in a violation, is identical after repair.
"""
from __future__ import annotations

from itertools import combinations

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dqkit.repair import repair
from dqkit.rules import as_rules

COLUMNS = ("a", "b", "c")
FDS = ("a -> b", "a -> c", "b -> c", "a, b -> c", "c -> a")


def _violating_rows(rows: list[dict], fd) -> set[int]:
    """Ids of the rows in a violation of ``fd`` (equal, non-NULL left sides; different right sides)."""
    lhs, rhs = list(fd.lhs), list(fd.rhs)
    out: set[int] = set()
    for r, s in combinations(rows, 2):
        if all(r[x] is not None and r[x] == s[x] for x in lhs) and any(
                r[y] is not None and s[y] is not None and r[y] != s[y] for y in rhs):
            out |= {r["id"], s["id"]}
    return out


tables = st.lists(st.tuples(*[st.sampled_from(["x", "y", "z"]) for _ in COLUMNS]), min_size=2, max_size=6)
rule_sets = st.lists(st.sampled_from(FDS), min_size=1, max_size=2, unique=True)


@settings(max_examples=6, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(data=tables, rules=rule_sets, keyed=st.booleans())
def test_repair_changes_only_cells_of_rows_in_a_violation_of_the_rule_that_changed_them(spark, data, rules, keyed):
    from dqkit.primitives.violations import tuple_ids

    rows = [{"id": i, **dict(zip(COLUMNS, v))} for i, v in enumerate(data)]
    df = spark.createDataFrame(pd.DataFrame(rows))
    fds = {r.name: r for r in as_rules("\n".join(rules))}
    res = repair(df, "\n".join(rules), key="id" if keyed else None, max_iterations=3)
    out = res.repaired.toPandas().to_dict("records")
    changes = res.changes.toPandas()
    if keyed:
        to_id = {str(r["id"]): r["id"] for r in rows}
    else:
        to_id = {r["t"]: r["id"] for r in df.select("id", tuple_ids(df).alias("t")).collect()}

    assert len(out) == len(rows)
    state = {r["id"]: dict(r) for r in rows}
    for k in sorted(set(changes["iteration"])):
        now = changes[changes["iteration"] == k]
        violators = {name: _violating_rows(list(state.values()), fd) for name, fd in fds.items()}
        for ch in now.itertuples():
            rid = to_id[str(ch.tid)]
            assert any(rid in violators[name] and ch.attr in fds[name].columns for name in ch.rules), (
                f"row {rid}[{ch.attr}] changed by {list(ch.rules)} in round {k} without being in their violation")
            assert str(state[rid][ch.attr]) == ch.old
        for ch in now.itertuples():
            state[to_id[str(ch.tid)]][ch.attr] = ch.new
    changed_rows = {to_id[str(t)] for t in changes["tid"]}
    by_id = {r["id"]: r for r in out}
    assert set(by_id) == {r["id"] for r in rows}
    for r in rows:
        if r["id"] not in changed_rows:  # never in a violation, or in one that was left alone
            assert by_id[r["id"]] == r
        else:
            assert by_id[r["id"]] == state[r["id"]]


# ---------------------------------------------------------------------------- stable row ids
DUPLICATES = "zip,city\n" + "".join(f"{z},{c}\n" for z, c in [("10001", "NY"), ("10001", "LA"), ("10001", "NY"),
                                                               ("90001", "CH"), ("10001", "NY"), ("90001", "SF"),
                                                               ("90001", "CH")] * 6)


@pytest.fixture
def small_splits(spark):
    """Run a block with files cut into ~100-byte splits (many partitions), then restore the settings."""
    keys = ("spark.sql.files.maxPartitionBytes", "spark.sql.files.openCostInBytes")
    saved = {k: spark.conf.get(k) for k in keys}

    class Splits:
        def __enter__(self):
            for k in keys:
                spark.conf.set(k, "100")

        def __exit__(self, *exc):
            for k, v in saved.items():
                spark.conf.set(k, v)

    return Splits()


def test_row_ids_count_exact_copies_in_file_order_whatever_the_splits(spark, tmp_path, small_splits):
    from dqkit.repair import _with_row_ids
    from dqkit.io.sources import read_table

    import io

    import pandas as pd

    # Parquet with many row groups: Spark splits it by row group (a CSV is read whole by one task,
    # since quoted fields may hold newlines), so the small splits below really change the plan
    path = tmp_path / "t.parquet"
    pd.read_csv(io.StringIO(DUPLICATES), dtype=str).to_parquet(path, row_group_size=4, index=False)

    def ids() -> tuple[list[str], int]:
        df = read_table(str(path), spark)
        got = _with_row_ids(df, str(path), None)
        rows = got.orderBy("__dqkit_pos").select("__dqkit_tid").collect()
        return [r[0] for r in rows], df.rdd.getNumPartitions()

    whole, parts_whole = ids()
    with small_splits:
        split, parts_split = ids()
    assert parts_split > parts_whole  # the plan really changed
    assert split == whole
    seen: dict[str, int] = {}
    for t in whole:  # the k-th copy in the file is #k
        base = t.split("#")[0]
        seen[base] = seen.get(base, 0) + 1
        assert t == (base if seen[base] == 1 else f"{base}#{seen[base]}")


def test_a_parquet_rows_position_is_its_index_in_the_file_whatever_the_splits(spark, tmp_path, small_splits):
    import pandas as pd

    from dqkit.primitives.violations import row_position

    path = tmp_path / "p.parquet"
    pd.DataFrame({"v": [f"r{i}" for i in range(40)]}).to_parquet(path, row_group_size=3, index=False)

    def positions() -> list[tuple[str, int]]:
        df = spark.read.parquet(str(path))
        pos = row_position(df)
        assert pos is not None
        return sorted((r["v"], r["p"]["row"]) for r in df.select("v", pos.alias("p")).collect())

    whole = positions()
    with small_splits:
        split = positions()
    assert whole == split == sorted((f"r{i}", i) for i in range(40))


def test_repair_without_a_key_gives_the_same_file_whatever_the_splits(spark, tmp_path, small_splits):
    path = tmp_path / "t.csv"
    path.write_text(DUPLICATES)

    def repaired() -> list[tuple]:
        res = repair(str(path), "zip -> city", spark=spark)
        return [tuple(r) for r in res.repaired.collect()]

    whole = repaired()
    with small_splits:
        split = repaired()
    assert split == whole and len(whole) == 42
    assert whole[:7] == [(10001, "NY"), (10001, "NY"), (10001, "NY"), (90001, "CH"), (10001, "NY"),
                         (90001, "CH"), (90001, "CH")]
