"""``dedup NEW --since RUN``: the next night's deduplication from the previous night's saved run, scoring
only the pairs of inserted or updated records, with stable cluster ids.

``RUN`` is a folder ``dqkit dedup --out`` wrote (``dqkit.dedup.manifest.read_since`` checks it without
Spark: same key, config and threshold). It holds the model (m, u, λ), the records' fingerprints over
the matching columns, the clusters and the matching pairs. Then:

1. **What changed** (``dqkit.primitives.changes``, as for ``detect --since``): a record is inserted,
   deleted or updated when its key is on one side only or its fingerprint (``dqkit.primitives.fingerprint``)
   over the compared and blocking columns differs; a change to another column changes no pair.
2. **Cost rule**: above ``max_change`` of NEW's records changed, or when NEW's oversized blocks differ
   from the saved run's (which would change the pairs of untouched records), every candidate pair of
   NEW is compared (a full run, still with the saved model) and the result says so.
3. **Score only what changed**: the candidate pairs with an inserted or updated record, blocked against
   all of NEW (the same rules and purged blocks), are compared and scored with the SAVED model (no EM).
   The saved matches between untouched records stand: both records and the model are unchanged.
4. **Re-cluster only the touched components**: the old clusters holding a deleted or updated record or
   an end of a new match, with the inserted and updated records, are clustered again from their matches
   (a closed part: no match leaves it); every other cluster is kept as it was, with its id.
5. **Stable ids** (``dqkit.dedup._stable_ids``): an unchanged cluster keeps its id, a changed or merged
   one the id of its largest ancestor (ties to the smallest id), new clusters get ids never used
   before. The change is classified as ``dqkit dedup-diff`` does (created, merged, split, ...).

The result (``DedupSinceResult``) saves like a dedup run, so tonight's ``--out`` is tomorrow's ``--since``.
"""
from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from dqkit.dedup import _blocking as B
from dqkit.dedup import _compare as C
from dqkit.dedup import _since_driver as SD
from dqkit.dedup import _since_io as io
from dqkit.dedup import _since_pairs as P
from dqkit.dedup import _since_saved as SV
from dqkit.dedup import _since_score as SC
from dqkit.dedup import _since_scan as S
from dqkit.dedup._result import CLUSTER, probability_to_weight, weight_column
from dqkit.dedup._since_result import DedupSinceResult
from dqkit.primitives.components import smallest_member_components as components
from dqkit.dedup._stable_ids import stable_ids
from dqkit.dedup.diff import diff_assignments
from dqkit.dedup.manifest import FULL_RUN, check_since, config_form, read_since
from dqkit.errors import ParameterError, SchemaMismatchError
from dqkit.primitives.changes import CHANGE_KINDS, DELETED, INSERTED, change_counts
from dqkit.primitives.fingerprint import FP_HI, FP_LO
from dqkit.checks.preflight import record_bound
from dqkit.runtime.session import get_spark
from dqkit.primitives.similarity import workers
from dqkit.runtime.sparkutil import cancellable, col

__all__ = ["dedup_since", "MAX_CHANGE"]

#: Cost rule: above this share of NEW's records inserted, deleted or updated, every pair is compared.
MAX_CHANGE = 0.05
_T = "_dq_touched"


def _read(spark: SparkSession, folder: Path, name: str, fmt: str, types: dict[str, T.DataType]) -> DataFrame:
    """A table of the saved run, its columns cast to ``types`` (CSV is read as text)."""
    path = (folder / name).as_posix()
    df = spark.read.option("header", "true").csv(path) if fmt == "csv" else spark.read.parquet(path)
    return df.select(*[col(c).cast(types[c]).alias(c) if c in types else col(c) for c in df.columns])


def _touched_pairs(records: DataFrame, n_rules: int, carry: list[str]) -> DataFrame:
    """The candidate pairs (as ``_blocking.candidate_pairs`` makes them) with at least one touched record
    (``_dq_touched``): touched records joined to all records on each rule's block key, each pair once."""
    keys = [B.block_col(j) for j in range(n_rules)]
    left = records.where(F.col(_T)).select(F.col(B.ID).alias("_a"), *[F.col(k).alias(f"{k}_a") for k in keys],
                                            *[F.col(c).alias(f"{c}_a") for c in carry])
    right = records.select(F.col(B.ID).alias("_b"), F.col(_T).alias("_bt"), *[F.col(k).alias(f"{k}_b") for k in keys],
                           *[F.col(c).alias(f"{c}_b") for c in carry])
    swap = F.col("_a") > F.col("_b")
    out: DataFrame | None = None
    for i in range(n_rules):
        b = B.block_col(i)
        # the same broadcast in every rule's join (a NULL key joins nothing): Spark builds it once
        joined = F.broadcast(left).join(right.where(F.col(f"{b}_b").isNotNull()), F.col(f"{b}_a") == F.col(f"{b}_b"))
        # each pair once: a touched-untouched pair from its touched side, a touched pair from its smaller id
        joined = joined.where((F.col("_a") != F.col("_b")) & (~F.col("_bt") | (F.col("_a") < F.col("_b"))))
        same = [F.coalesce(F.col(f"{k}_a") == F.col(f"{k}_b"), F.lit(False)) for k in keys]
        for j in range(i):
            joined = joined.where(~same[j])
        mask = F.lit(0)
        for j in range(n_rules):
            mask = mask + F.when(same[j], F.lit(1 << j)).otherwise(F.lit(0))

        def side(s: str) -> list[Any]:
            mine, other = ("a", "b") if s == "l" else ("b", "a")
            return [F.when(swap, F.col(f"{c}_{other}")).otherwise(F.col(f"{c}_{mine}")).alias(f"{c}_{s}")
                    for c in carry]

        part = joined.select(F.least("_a", "_b").alias(B.ID1), F.greatest("_a", "_b").alias(B.ID2),
                             F.lit(i).alias(B.FIRST), mask.cast("long").alias(B.RULES), *side("l"), *side("r"))
        out = part if out is None else out.unionByName(part)
    assert out is not None
    return out


def _pairs_frame(scored: DataFrame, rule_names: list[str], comps: Any) -> DataFrame:
    """Scored internal pairs in the columns ``dedup --out`` saves for ``pairs/``."""
    names = F.array(*[F.lit(n) for n in rule_names]) if rule_names else F.array()
    return scored.select(F.col(B.ID1).alias("key_1"), F.col(B.ID2).alias("key_2"),
                         F.element_at(names, F.col(B.FIRST) + 1).alias("rule"), "match_weight", "probability",
                         *[F.col(C.gamma_col(i)).alias(f"gamma_{c.label}") for i, c in enumerate(comps)])


def dedup_since(table: Any, since: Any, key: str, config: Any, *, threshold: float | None = None,
                max_change: float = MAX_CHANGE, spark: SparkSession | None = None, name: str | None = None,
                golden_record: Any = None, progress: Any = None) -> DedupSinceResult:
    """Deduplicate ``table`` as the next night of the saved run ``since`` (see the module docstring).
    ``threshold`` and the config must be the saved run's; ``max_change`` is the cost rule's share."""
    from dqkit.dedup import _check_key, _config, _oversized, _records, _validate, read_records

    t0 = time.perf_counter()
    cfg = _config(config)
    thr = cfg.threshold if threshold is None else float(threshold)
    if not 0 <= max_change <= 1:
        raise ParameterError(f"max_change is a share between 0 and 1, not {max_change!r}")
    manifest = read_since(since)
    check_since(manifest, since, key=key, config=config_form(cfg), threshold=thr)
    folder, fmt = Path(manifest["_folder"]), manifest["_format"]
    spark = spark or get_spark()
    label = name or (str(table) if isinstance(table, (str, Path)) else "the table")
    df = read_records(table, spark, cfg.types)
    rules = _validate(df, key, cfg)
    schema = io.schema_of(df, key, cfg)
    moved = [f"{c} ({t} -> {schema.get(c, 'missing')})" for c, t in (manifest.get("schema") or {}).items()
             if schema.get(c) != t]
    if moved:
        raise SchemaMismatchError(f"--since: column types changed since {since}: {', '.join(moved)}", hint=FULL_RUN)
    key_type = df.schema[key].dataType
    if not isinstance(key_type, (T.StringType, T.IntegralType)):
        raise ParameterError(f"--since needs a text or integer key, not {key_type.simpleString()}",
                             hint="cast the key to text")
    model = io.model_from(manifest)
    base = dict(table=label, key=key, since=str(since), config=cfg, threshold=thr, model=model, records=df,
                golden_fn=golden_record, input_paths=tuple(t for t in (table, since) if isinstance(t, (str, Path))),
                retired_before=tuple(manifest.get("retired_ids") or ()), clusters_before=int(manifest["clusters"]))
    clock = _Clock()
    with cancellable("dedup --since"):
        saved_n = manifest.get("records")
        integer = isinstance(key_type, T.IntegralType)
        local = SD.records(df, key, cfg, rules)
        on_driver = SD.takes(local, len(rules), saved_n, record_bound(table))
        fetched = SD.fetch(local, len(rules), len(cfg.columns())) if on_driver else None
        got = None if fetched is None else SD.changes(fetched, SD.saved_fingerprints(folder, fmt, key, integer),
                                                      key, integer)
        if fetched is not None and got is None:
            _check_key(df, key, label)  # refuses the NULL or repeated key, naming examples
            fetched = None
        if got is not None:  # one scan of NEW, the change found on the driver (dqkit.dedup._since_driver)
            changed, touched_rows = got
            rows, more, n_records = [], False, fetched.num_rows
            kinds = change_counts(changed)
        else:  # one Spark job: what changed, the key check's counts and the touched records' block hashes
            rows, more, kinds, n_records = _spark_changes(spark, df, folder, fmt, key, key_type, cfg, rules,
                                                          saved_n, max_change, label)
            changed = pd.DataFrame([(r["key"], r["change"]) for r in rows if r["change"]], columns=["key", "change"])
        clock("what changed, key check")
        n_changed = sum(kinds.values())
        share = n_changed / max(n_records, 1)
        recs = _records(df, key, cfg, rules)
        saved_over = {int(i): sorted(k) for i, k in (manifest.get("oversized") or {}).items() if k}
        touched = set(changed.loc[changed["change"] != DELETED, "key"])
        found, part, near = None, recs, None
        if not more and share <= max_change and touched | set().union(*saved_over.values()):
            # only the blocks the change reaches, and the saved oversized ones (dqkit.dedup._since_scan)
            blocks = (S.blocks_of(rows, len(rules)) if fetched is None
                      else SD.blocks_of(fetched, touched_rows, len(rules)))
            if sum(len(k) for k in blocks.values()) <= S.MAX_NEAR_KEYS:
                # their records on the driver (one job, or a filter of the fetched table), where their block
                # sizes and pairs are counted
                near = (P.collect_near(S.near(recs, blocks, saved_over), len(rules),
                                       [C.value_col(k) for k in range(len(cfg.columns()))])
                        if fetched is None else SD.near(fetched, blocks, saved_over))
                clock("touched blocks' records")
                found = P.oversized_in(near, blocks, saved_over, cfg.max_block_size)
        elif not more:
            found = {}
        if found is None:
            stats = B.block_statistics(recs, rules, cfg.max_block_size)
            oversized, warnings = _oversized(recs, rules, stats, cfg)
        else:
            skipped = [sum(n * (n - 1) // 2 for _, n in found.get(i, ())) for i in range(len(rules))]
            oversized, warnings = B.oversized_notes(found, rules, skipped, cfg.max_block_size,
                                                    cfg.on_oversized == "refuse")
        clock("block sizes")
        now_over = {i: sorted(k) for i, k in oversized.items() if k}
        reason = None
        if share > max_change:
            reason = (f"{n_changed:,} of {n_records:,} records ({share:.1%}) were inserted, deleted or updated, "
                      f"more than max_change {max_change:g}")
        elif saved_over != now_over:
            reason = "the oversized blocks differ from the saved run's, so the pairs of untouched records may differ"
        common = dict(base, n_records=n_records, change_counts=kinds, notes=tuple(warnings), oversized=oversized,
                      stages=clock.marks)
        if reason is not None:
            return _full(df, key, cfg, thr, model, spark, label, manifest, common, reason, t0, progress, clock)
        return _incremental(spark, df, key, cfg, thr, model, rules, part, near, oversized, changed, folder, fmt,
                            manifest, common, t0, clock)


def _spark_changes(spark: SparkSession, df: DataFrame, folder: Path, fmt: str, key: str, key_type: T.DataType,
                   cfg: Any, rules: list[Any], saved_n: Any, max_change: float, label: str
                   ) -> tuple[list[Any], bool, dict[str, int], int]:
    """What changed, in Spark (``_since_scan.changes``: one aggregation of NEW's and the saved fingerprints
    by key): the changed rows (with their block hashes), whether more changed than the cost rule allows
    (then only the counts), the counts per kind and NEW's record count. Refuses a NULL or repeated key."""
    from dqkit.dedup import _check_key

    old_fp = _read(spark, folder, io.FINGERPRINTS, fmt, {key: key_type, FP_HI: T.LongType(), FP_LO: T.LongType()})
    changes = S.changes(S.new_side(df, key, cfg, rules), old_fp, key, len(rules))
    rows, more = S.collect_changes(changes, _cap(max_change, saved_n))
    if more or saved_n is None or any(r["bad"] for r in rows):
        n_records = _check_key(df, key, label)  # refuses a NULL or repeated key, naming examples
    if more:  # more changed than the cost rule allows: only the counts are needed (a full run follows)
        got = {r["change"]: int(r["n"]) for r in changes.groupBy("change").agg(F.count(F.lit(1)).alias("n")).collect()}
    else:
        got = change_counts(rows)
    kinds = {k: got.get(k, 0) for k in CHANGE_KINDS}
    if not more and saved_n is not None:
        n_records = int(saved_n) + kinds[INSERTED] - kinds[DELETED]
    return rows, more, kinds, n_records


def _cap(max_change: float, saved_records: Any) -> int | None:
    """How many changed records to collect at most: every one that can still be under the cost rule
    (n_changed <= max_change * records, records <= saved + n_changed); ``None``: no cap."""
    if max_change >= 1 or saved_records is None:
        return None
    return int(max_change * int(saved_records) / (1 - max_change)) + 1


#: up to this many keys are a literal set in the plan (Spark's InSet: no job, but one call into the JVM
#: per key: ~1 ms each, seconds for thousands); more are a broadcast table sent through Arrow at once
_INLINE_KEYS = 200
#: the touched pairs are scored on the driver where that gives Spark's levels exactly (dqkit.dedup._since_score)
_DRIVER_SCORING = True
#: touched records whose pairs one task compares
_TOUCHED_PER_TASK = 20_000


def _key_table(spark: SparkSession, keys: set[Any], key_type: T.DataType) -> DataFrame:
    """``keys`` as a one-column table ``_dq_key`` (pandas through Arrow: one call, no Python worker)."""
    integer = isinstance(key_type, T.IntegralType)
    return spark.createDataFrame(pd.DataFrame({"_dq_key": _plain(keys, integer)}),
                                 T.StructType([T.StructField("_dq_key", key_type)]))


def _mark(spark: SparkSession, records: DataFrame, keys: set[Any], key_type: T.DataType) -> DataFrame:
    """``records`` with ``_dq_touched``: its id is in ``keys``. A literal set up to ``_INLINE_KEYS`` keys;
    beyond, a join with a broadcast table."""
    if len(keys) <= _INLINE_KEYS:
        return records.withColumn(_T, F.col(B.ID).isin(sorted(keys)))
    flags = F.broadcast(_key_table(spark, keys, key_type).withColumn(_T, F.lit(True)))
    return (records.join(flags, F.col(B.ID) == F.col("_dq_key"), "left").drop("_dq_key")
            .withColumn(_T, F.coalesce(F.col(_T), F.lit(False))))


def _without(spark: SparkSession, df: DataFrame, columns: list[str], keys: set[Any], key_type: T.DataType
             ) -> DataFrame:
    """``df`` without the rows whose value in any of ``columns`` is in ``keys`` (lazy)."""
    if len(keys) <= _INLINE_KEYS:
        lits = _plain(keys, isinstance(key_type, T.IntegralType))
        keep = F.lit(True)
        for c in columns:
            keep = keep & ~F.col(c).isin(lits)
        return df.where(keep)
    table = F.broadcast(_key_table(spark, keys, key_type))
    for c in columns:
        df = df.join(table, F.col(c) == F.col("_dq_key"), "left_anti")
    return df


class _Clock:
    """Seconds per stage (``marks``, in order): where the time of a ``--since`` run went."""

    def __init__(self) -> None:
        self.marks: dict[str, float] = {}
        self._t = time.perf_counter()

    def __call__(self, stage: str) -> None:
        now = time.perf_counter()
        self.marks[stage] = round(now - self._t, 3)
        self._t = now


def _saved(folder: Path, name: str, fmt: str, integer_key: bool, keys: tuple[str, ...]) -> pd.DataFrame:
    """A table of the saved run on the driver (pyarrow, no Spark job), ``keys`` columns as the key's type."""
    from dqkit.dedup.manifest import part_files

    if fmt == "csv":
        files = [f for f in part_files(folder / name) if f.name.lower().endswith((".csv", ".csv.gz"))]
        frame = (pd.concat([pd.read_csv(f, dtype=str, keep_default_na=False) for f in files], ignore_index=True)
                 if files else pd.DataFrame(columns=list(keys)))
    else:
        frame = pd.read_parquet(folder / name)
    for k in keys:
        if k in frame.columns:
            frame[k] = frame[k].astype("int64") if integer_key else frame[k].astype(str)
    return frame


def _pairs_schema(key_type: T.DataType, comps: Any) -> T.StructType:
    return T.StructType([T.StructField("key_1", key_type), T.StructField("key_2", key_type),
                         T.StructField("rule", T.StringType()), T.StructField("match_weight", T.DoubleType()),
                         T.StructField("probability", T.DoubleType()),
                         *[T.StructField(f"gamma_{c.label}", T.IntegerType()) for c in comps]])


def _typed_pairs(frame: pd.DataFrame, schema: T.StructType) -> pd.DataFrame:
    out = frame[[f.name for f in schema.fields]].copy()
    for f in schema.fields:
        if isinstance(f.dataType, T.DoubleType):
            out[f.name] = out[f.name].astype(float)
        elif isinstance(f.dataType, T.IntegerType):
            out[f.name] = out[f.name].astype("int32")
        elif f.name == "rule":
            out[f.name] = out[f.name].astype(str)
    return out


def _incremental(spark: SparkSession, df: DataFrame, key: str, cfg: Any, thr: float, model: Any, rules: list[Any],
                 recs: DataFrame, near: Any, oversized: dict[int, list[str]], changed: pd.DataFrame, folder: Path,
                 fmt: str, manifest: dict[str, Any], common: dict[str, Any], t0: float, clock: _Clock
                 ) -> DedupSinceResult:
    """Steps 3 to 5 of the module docstring. ``near`` (an Arrow table, ``_since_pairs.collect_near``) holds
    the touched records' blocks whole: their pairs are made on the driver and scored in one job. Without
    it (more block keys than ``_since_scan.MAX_NEAR_KEYS``), the pairs are joined in Spark from ``recs``.
    The saved clusters and matches are read on the driver (as ``dqkit dedup-diff`` reads runs); tonight's
    result keeps a Parquet run's untouched part in its files."""
    key_type = df.schema[key].dataType
    integer = isinstance(key_type, T.IntegralType)
    comps, columns = cfg.comparisons, cfg.columns()
    dtypes = {c: df.schema[c].dataType for c in columns}
    touched = set(changed.loc[changed["change"] != DELETED, "key"])
    gone = set(changed.loc[changed["change"] != INSERTED, "key"])  # deleted, or updated: old matches void
    w = probability_to_weight(thr)
    pair_schema = _pairs_schema(key_type, comps)
    # 3. the pairs of touched records, scored with the saved model (one job, a few rows per touched record)
    carry = [C.value_col(k) for k in range(len(columns))]
    cand, compared = None, None
    if touched and near is not None:
        pairs_tbl = P.touched_pairs(near, touched, len(rules), oversized, carry)
        clock("touched pairs")
        if pairs_tbl.num_rows and _DRIVER_SCORING and SC.scorable(comps, dtypes):  # no Spark job (_since_score)
            with workers(-1):  # Spark is idle while the driver scores
                compared = SC.score(pairs_tbl, comps, columns, model, [r.rule.name for r in rules])
        elif pairs_tbl.num_rows:
            cand = spark.createDataFrame(pairs_tbl, _cand_schema(recs, carry))
    elif touched:
        marked = _mark(spark, B.purge_oversized(recs, oversized), touched, key_type)
        # few pairs: one task per _TOUCHED_PER_TASK touched records, so the comparisons' Python workers start once,
        # not once per rule and input partition
        cand = _touched_pairs(marked, len(rules), carry).coalesce(max(1, -(-len(touched) // _TOUCHED_PER_TASK)))
    if cand is not None:
        gammas = [C.gamma_col(i) for i in range(len(comps))]
        levelled = C.add_levels(cand, comps, columns, dtypes).select(B.ID1, B.ID2, B.FIRST, B.RULES, *gammas)
        weight, _ = weight_column(model)
        scored = levelled.select("*", weight.alias("match_weight")).withColumn(
            "probability", F.lit(1.0) / (F.lit(1.0) + F.pow(F.lit(2.0), -F.col("match_weight"))))
        compared = _pairs_frame(scored, [r.rule.name for r in rules], comps).toPandas()
    elif compared is None:
        compared = pd.DataFrame(columns=[f.name for f in pair_schema.fields])
    if integer:
        compared[["key_1", "key_2"]] = compared[["key_1", "key_2"]].astype("int64")
    new_matches = compared[compared["match_weight"].astype(float) >= w]
    clock("score the touched pairs")
    edges_new = list(zip(new_matches["key_1"], new_matches["key_2"]))
    # the saved matches (Arrow, dqkit.dedup._since_saved); those with a deleted or updated record are void
    cl = SV.read(folder, "clusters", fmt, integer, (key, CLUSTER), [key, CLUSTER])
    pairs = SV.read(folder, "pairs", fmt, integer, ("key_1", "key_2"),
                    None if fmt == "csv" else ["key_1", "key_2", "match_weight"])
    if manifest.get("all_pairs"):
        pairs = pairs.filter(pc.greater_equal(pc.cast(pairs.column("match_weight"), pa.float64()), w))
    void = SV.is_in(pairs.column("key_1"), gone) | SV.is_in(pairs.column("key_2"), gone)
    # 4. the old clusters the change reaches, and their records (a closed part of the match graph)
    reach = gone | {k for e in edges_new for k in e}
    keys_a, ids_a = cl.column(key), cl.column(CLUSTER)
    affected_a = pc.unique(ids_a.filter(pa.array(SV.is_in(keys_a, reach))))
    affected = set(affected_a.to_pylist())
    hit = pa.array(SV.is_in(ids_a, affected_a))
    old = dict(zip(keys_a.filter(hit).to_pylist(), ids_a.filter(hit).to_pylist()))
    inner = set(old) - gone
    in_part = pa.array(~void & SV.is_in(pairs.column("key_1"), inner))
    new = components(inner | touched, [*zip(pairs.column("key_1").filter(in_part).to_pylist(),
                                            pairs.column("key_2").filter(in_part).to_pylist()), *edges_new])
    # 5. stable ids
    retired_before = set(manifest.get("retired_ids") or ())
    every_id = pc.unique(ids_a)

    def taken(s: set[Any]) -> set[Any]:
        return {k for k, t in zip(list(s), SV.is_in(pa.array(list(s), every_id.type), every_id)) if t} | (
            set(s) & retired_before)

    ids, retired = stable_ids(old, new, taken, integer=integer,
                              largest_id=lambda: max([*retired_before, pc.max(every_id).as_py() or 0]))
    clock("re-cluster, ids")
    fresh = pd.DataFrame({key: list(ids), CLUSTER: list(ids.values())})
    cl_schema = T.StructType([T.StructField(key, key_type), T.StructField(CLUSTER, key_type)])
    sizes = SV.size_histogram(ids_a, affected_a, ids.values())
    n_matching = int(pairs.num_rows - void.sum()) + len(new_matches)
    if fmt == "csv":  # a CSV run is read by header (a job per table): copied from the driver instead
        clusters_df = spark.createDataFrame(pd.concat([cl.filter(pc.invert(hit)).to_pandas(), fresh], ignore_index=True),
                                            cl_schema)
        kept = pairs.filter(pa.array(~void)).to_pandas()
        matches_df = spark.createDataFrame(pd.concat([_typed_pairs(kept, pair_schema),
                                                      _typed_pairs(new_matches, pair_schema)], ignore_index=True),
                                           pair_schema)
    else:  # the kept part of tonight's result stays in the saved Parquet (lazy: no job, nothing through the driver)
        clusters_df = _without(spark, _read(spark, folder, "clusters", fmt, {key: key_type, CLUSTER: key_type})
                               .select(key, CLUSTER), [CLUSTER], affected, key_type).unionByName(
            spark.createDataFrame(fresh, cl_schema))
        old_pairs = _read(spark, folder, "pairs", fmt, {f.name: f.dataType for f in pair_schema.fields})
        if manifest.get("all_pairs"):
            old_pairs = old_pairs.where(F.col("match_weight") >= F.lit(w))
        matches_df = _without(spark, old_pairs, ["key_1", "key_2"], gone, key_type).select(
            *[F.col(f.name).cast(f.dataType) for f in pair_schema.fields]).unionByName(
            spark.createDataFrame(_typed_pairs(new_matches, pair_schema), pair_schema))
    result = DedupSinceResult(**common, clusters=clusters_df, matches=matches_df, full_run=False, full_run_reason="",
                              changes=diff_assignments(_text(old), _text(ids)),
                              untouched=int(manifest["clusters"]) - len(affected), pairs_compared=len(compared),
                              retired=tuple(sorted({*retired_before, *retired}, key=str)),
                              seconds=time.perf_counter() - t0, n_matching_pairs=n_matching,
                              cluster_sizes=sizes)
    clock("results")
    return result


def _cand_schema(recs: DataFrame, carry: list[str]) -> T.StructType:
    """The schema of ``_touched_pairs``' rows: the pair's ids, first rule, rules mask and both sides' values."""
    types = {f.name: f.dataType for f in recs.schema.fields}
    return T.StructType([T.StructField(B.ID1, types[B.ID]), T.StructField(B.ID2, types[B.ID]),
                         T.StructField(B.FIRST, T.IntegerType()), T.StructField(B.RULES, T.LongType()),
                         *[T.StructField(f"{c}_{s}", types[c]) for c in carry for s in ("l", "r")]])


def _plain(values: set[Any], integer: bool) -> list[Any]:
    """Keys as Spark literals (plain ints or text, sorted)."""
    return sorted(int(v) for v in values) if integer else sorted(str(v) for v in values)


def _text(assignment: dict[Any, Any]) -> pd.Series:
    """``record -> cluster`` as text (how ``dqkit dedup-diff`` reads saved runs)."""
    return pd.Series([str(v) for v in assignment.values()], index=[str(k) for k in assignment], dtype=object)


def _full(df: DataFrame, key: str, cfg: Any, thr: float, model: Any, spark: SparkSession, label: str,
          manifest: dict[str, Any], common: dict[str, Any], reason: str, t0: float,
          progress: Any, clock: _Clock) -> DedupSinceResult:
    """The cost rule's full run: every candidate pair of NEW with the saved model, ids kept stable."""
    from dqkit.dedup import dedup

    key_type = df.schema[key].dataType
    full = dedup(df, key, cfg, threshold=thr, model=model, spark=spark, name=label, progress=progress)
    clock("full run")
    integer = isinstance(key_type, T.IntegralType)
    saved = _saved(Path(manifest["_folder"]), "clusters", manifest["_format"], integer, (key, CLUSTER))
    old = dict(zip(saved[key], saved[CLUSTER]))
    new = {r[key]: r[CLUSTER] for r in full._clusters().select(key, CLUSTER).collect()}
    retired_before = set(manifest.get("retired_ids") or ())
    prev = set(old.values()) | retired_before
    ids, retired = stable_ids(old, new, lambda s: set(s) & prev, integer=integer,
                              largest_id=lambda: max(prev, default=0))
    schema = T.StructType([T.StructField(key, key_type), T.StructField(CLUSTER, key_type)])
    clusters = spark.createDataFrame(sorted(ids.items()), schema)
    return DedupSinceResult(**common, clusters=clusters, matches=full.matches, full_run=True,
                            full_run_reason=reason, changes=diff_assignments(_text(old), _text(ids)), untouched=0,
                            pairs_compared=full.n_pairs, retired=tuple(sorted({*retired_before, *retired}, key=str)),
                            seconds=time.perf_counter() - t0, n_matching_pairs=full.n_matching_pairs,
                            cluster_sizes=dict(full.cluster_sizes))
