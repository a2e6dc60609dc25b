"""The entry points of ``dqkit.dedup``, which the package re-exports on first use (so that importing
the package, its constants and its manifests needs no pyspark)."""
from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from dqkit.dedup import _blocking as B
from dqkit.dedup import _compare as C
from dqkit.dedup import _driver as D
from dqkit.dedup._em import FSModel, fit, non_match_frequencies, u_from
from dqkit.dedup._compare import sorted_rows as _sorted_rows
from dqkit.dedup._labels import labelled_m as _labelled_m
from dqkit.dedup._result import DedupResult
from dqkit.dedup._result import blocking_table, plot_block_stats  # noqa: F401 - blocking_stats' table and chart
from dqkit.dedup.config import (BlockingRule, Comparison, ConfigError, DedupConfig, example_config,
                                load_config, parse_config)
from dqkit.errors import ParameterError, ReservedColumnError, SchemaMismatchError, UnknownColumnError
from dqkit.primitives.keys import RESERVED_PREFIXES, check_key, reserved_in
from dqkit.runtime.progress import ProgressCallback
from dqkit.runtime.session import get_spark
from dqkit.runtime.sparkutil import cancellable, checkpoint_on_read, col

__all__ = ["dedup", "link", "blocking_stats", "DedupResult", "DedupConfig", "BlockingRule", "Comparison",
           "ConfigError", "FSModel", "load_config", "parse_config", "example_config", "read_records"]

MAX_RULES = 60  # rules are a bitmask in a long
_RESERVED = ("cluster_id", "cluster_size")
_U_ROUNDS = 10  # at most this many re-estimations of u without the sampled matches (they settle in a few)
_MAX_PATTERNS = 2_000_000  # safety bound on the level-pattern table collected for EM


# ------------------------------------------------------------------------------- reading
def read_records(table: Any, spark: SparkSession | None = None, types: Mapping[str, str] | None = None) -> DataFrame:
    """The table to deduplicate: CSV files are read with every column as text (a postcode such as
    0800 keeps its zero), other sources as they are; ``types`` then casts the columns it names
    (``try_cast``: a value that does not convert becomes NULL)."""
    from dqkit.io import sources

    spark = spark or get_spark()
    df = sources.read_table(table, spark, infer_types=False)
    if types:
        missing = [c for c in types if c not in df.columns]
        if missing:
            raise UnknownColumnError(f"the config's types name unknown column {missing[0]!r}",
                                     hint="columns are " + ", ".join(df.columns))
        df = df.select(*[col(c).try_cast(types[c]).alias(c) if c in types else col(c) for c in df.columns])
    return df


def _config(config: Any) -> DedupConfig:
    if isinstance(config, (DedupConfig, Mapping)):
        return parse_config(config)
    if isinstance(config, os.PathLike) or (isinstance(config, str) and "\n" not in config and (
            config.strip().endswith((".yaml", ".yml")) or Path(config).is_file())):
        return load_config(config)
    if isinstance(config, str):
        return parse_config(config)
    raise ParameterError(f"a dedup config is a YAML path or text, a dict or a DedupConfig, not {type(config).__name__}")


def _validate(df: DataFrame, key: str, cfg: DedupConfig, where: str = "the table",
              reserved: tuple[str, ...] = _RESERVED) -> list[B.ParsedRule]:
    """Everything that can be checked on the schema, before any Spark job."""
    cols = list(df.columns)
    if not isinstance(key, str) or key not in cols:
        raise UnknownColumnError(f"the key column {key!r} is not in {where}",
                                 hint="columns are " + ", ".join(cols))
    for c in cfg.comparisons:
        if c.column not in cols:
            raise UnknownColumnError(f"comparison {c.label!r}: unknown column {c.column!r} in {where}",
                                     hint="columns are " + ", ".join(cols))
    clash = [c for c in cols if c in reserved]
    if clash:
        raise ReservedColumnError(f"column {clash[0]!r} clashes with the golden table's own column",
                                  hint="rename it before deduplicating")
    clash = reserved_in(cols)
    if clash:
        raise ReservedColumnError(f"dedup: column {clash[0]!r} of {where} clashes with the columns dqkit adds "
                                  f"itself (names starting with {', '.join(RESERVED_PREFIXES)})",
                                  hint="rename it before deduplicating; nothing was written")
    if len(cfg.blocking) > MAX_RULES:
        raise ConfigError(f"{len(cfg.blocking)} blocking rules: at most {MAX_RULES} are supported")
    if isinstance(df.schema[key].dataType, (T.MapType, T.ArrayType, T.StructType, T.BinaryType)):
        raise ParameterError(f"the key {key!r} is {df.schema[key].dataType.simpleString()}",
                             hint="a key is a number or a string")
    C.check_types(df.schema, cfg.comparisons)
    return B.parse_rules(df, cfg.blocking)


def _check_key(df: DataFrame, key: str, table: str) -> int:
    """The row count, refusing a NULL or repeated key (``dqkit.primitives.keys.check_key``: one aggregation)."""
    return check_key(df, key, table=table, command="dedup",
                     without="add a row id column and pass it as --key (dedup needs one key per record)")


def _records(df: DataFrame, key: str, cfg: DedupConfig, rules: list[B.ParsedRule],
             sources: tuple[str, str] | None = None) -> DataFrame:
    """``_dq_id``, the block key of each rule and the compared columns (``_dq_c{k}``). Linking
    (``sources``): ``df`` is both tables with a ``source`` column, and ``_dq_id`` is ``struct(s, k)``,
    ``s`` 0 for the left table and 1 for the right one, ``k`` the key."""
    columns = cfg.columns()
    rid = col(key) if sources is None else B.record_id(sources, key)
    return df.select(rid.alias(B.ID), *[B.block_key(r.parts).alias(B.block_col(i)) for i, r in enumerate(rules)],
                     *[col(c).alias(C.value_col(k)) for k, c in enumerate(columns)])


def _stats_with_pairs(stats: pd.DataFrame, new_pairs: Mapping[int, int]) -> pd.DataFrame:
    out = stats.copy()
    out["new_pairs"] = [int(new_pairs.get(i, 0)) for i in range(len(out))]
    out["cumulative_pairs"] = out["new_pairs"].cumsum()
    return out


def _oversized(records: DataFrame, rules: list[B.ParsedRule], stats: pd.DataFrame, cfg: DedupConfig,
               refuse: bool = True, link: bool = False) -> tuple[dict[int, list[str]], list[str]]:
    """The oversized blocks per rule (JSON keys) and their warnings; with ``on_oversized: refuse`` (and
    ``refuse``) the refusal instead."""
    if len(stats) == 0 or int(stats["oversized_blocks"].sum()) == 0:
        return {}, []
    blocks = B.oversized_blocks(records, rules, cfg.max_block_size, link)
    return B.oversized_notes(blocks, rules, [int(n) for n in stats["comparisons_skipped"]], cfg.max_block_size,
                             refuse and cfg.on_oversized == "refuse")


# ------------------------------------------------------------------------------- linking
def _check_sources(sources: Any) -> tuple[str, str]:
    if (not isinstance(sources, (tuple, list)) or len(sources) != 2
            or not all(isinstance(x, str) and x for x in sources) or sources[0] == sources[1]):
        raise ParameterError(f"sources are two different non-empty names, not {sources!r}",
                             hint="e.g. sources=('A', 'B'): they label the two tables in the clusters")
    return str(sources[0]), str(sources[1])


def _link_inputs(left: DataFrame, right: DataFrame, key: str, cfg: DedupConfig, sources: tuple[str, str]
                 ) -> tuple[DataFrame, list[B.ParsedRule], list[str]]:
    """Both tables as one: ``source`` (the table's name in ``sources``), the key, and the columns both
    tables have. The key and every column a comparison or blocking rule reads must be in both tables
    with one type; other shared columns of different types are kept as text, and columns of only one
    table are left out (noted). Schema checks only: no Spark job."""
    reserved = (*_RESERVED, B.SOURCE)
    rules_r = _validate(right, key, cfg, "the right table", reserved)
    rules = _validate(left, key, cfg, "the left table", reserved)
    needed = {key, *cfg.columns(), *[c for r in rules for c in r.columns], *[c for r in rules_r for c in r.columns]}
    lt = {f.name: f.dataType for f in left.schema.fields}
    rt = {f.name: f.dataType for f in right.schema.fields}
    for c in sorted(needed, key=lambda c: (c != key, c)):
        if c not in rt:
            raise UnknownColumnError(f"column {c!r} is in the left table but not in the right one",
                                     hint="both tables need the key and every compared or blocking column; "
                                          "right columns are " + ", ".join(rt))
        if lt[c] != rt[c]:
            raise SchemaMismatchError(
                f"column {c!r} is {lt[c].simpleString()} in the left table but {rt[c].simpleString()} in the "
                "right one", hint="give both one type: cast one side, or name the column under types: in the "
                                  "config (both tables are read with it)")
    shared = [c for c in left.columns if c in rt]
    notes = []
    only = [f"{c} (left)" for c in left.columns if c not in rt] + [f"{c} (right)" for c in right.columns if c not in lt]
    if only:
        notes.append("columns of only one table are left out of the records and golden records: " + ", ".join(only))

    def side(df: DataFrame, name: str, types: Mapping[str, T.DataType], other: Mapping[str, T.DataType]) -> DataFrame:
        return df.select(F.lit(name).alias(B.SOURCE), *[
            col(c).cast("string").alias(c) if types[c] != other[c] and c not in needed else col(c) for c in shared])

    both = side(left, sources[0], lt, rt).unionByName(side(right, sources[1], rt, lt))
    return both, rules, notes


def _inputs(table: Any, other: Any, key: str, cfg: DedupConfig, spark: SparkSession, sources: Any
            ) -> tuple[DataFrame, list[B.ParsedRule], tuple[str, str] | None, list[str], DataFrame | None]:
    """``(records, rules, sources, notes, right)``: one table, or both tables of a link as one."""
    df = read_records(table, spark, cfg.types)
    if other is None:
        return df, _validate(df, key, cfg), None, [], None
    names = _check_sources(sources)
    right = read_records(other, spark, cfg.types)
    both, rules, notes = _link_inputs(df, right, key, cfg, names)
    return both, rules, names, notes, right


# --------------------------------------------------------------------------- public entry points
def blocking_stats(table: Any, key: str, config: Any, *, other: Any = None, sources: Any = ("left", "right"),
                   spark: SparkSession | None = None, pairs: bool = True) -> pd.DataFrame:
    """Per blocking rule, before anything is compared: blocks, largest block, records in blocks,
    comparisons its blocks imply, oversized blocks and the comparisons they would cost; with
    ``pairs`` also ``new_pairs`` (pairs the rule adds to the earlier rules: each pair counted once)
    and ``cumulative_pairs`` (Splink's cumulative comparisons), from a count of the pair keys only.
    With ``other``, for linking ``table`` to ``other`` (pairs across the two tables only)."""
    cfg = _config(config)
    spark = spark or get_spark()
    df, rules, names, _, _ = _inputs(table, other, key, cfg, spark, sources)
    link = names is not None
    with cancellable("the blocking statistics"):
        recs = _records(df, key, cfg, rules, names).select(B.ID, *[B.block_col(i) for i in range(len(rules))])
        stats = B.block_statistics(recs, rules, cfg.max_block_size, link)
        if not pairs:
            return stats
        oversized, _ = _oversized(recs, rules, stats, cfg, refuse=False, link=link)
        purged = B.purge_oversized(recs, oversized)
        counts = {int(r[B.FIRST]): int(r["n"]) for r in B.candidate_pairs(purged, len(rules), [], link)
                  .groupBy(B.FIRST).agg(F.count(F.lit(1)).alias("n")).collect()}
    return _stats_with_pairs(stats, counts)


def link(left: Any, right: Any, key: str, config: Any, *, sources: Any = ("left", "right"),
         threshold: float | None = None, labels: Any = None,
         golden_record: Callable[[pd.DataFrame], Mapping[str, Any]] | None = None, prior: float | None = None,
         spark: SparkSession | None = None, name: str | None = None,
         progress: ProgressCallback | None = None) -> DedupResult:
    """Record linkage: the records of ``left`` and ``right`` that describe the same entity, with
    pairs only across the two tables (``key_1`` a key of ``left``, ``key_2`` of ``right``).
    ``dedup(left, key, config, other=right, ...)``; see ``dedup`` for the other arguments.

    ``key`` names the key column of both tables (unique and non-NULL within each; the same value
    may occur in both). ``sources`` names the two tables in the ``source`` column of the records
    and clusters. Clusters are the connected components of the cross-table matches: a cluster holds
    the records of both tables linked directly or through each other (a left record matching two
    right records joins all three); ``cluster_id`` is ``"<source>:<key>"`` of its smallest record,
    left table first. Labels are (left key, right key) pairs.
    """
    return dedup(left, key, config, other=right, sources=sources, threshold=threshold, labels=labels,
                 golden_record=golden_record, prior=prior, spark=spark, name=name, progress=progress)


def dedup(table: Any, key: str, config: Any, *, threshold: float | None = None, labels: Any = None,
          golden_record: Callable[[pd.DataFrame], Mapping[str, Any]] | None = None, prior: float | None = None,
          spark: SparkSession | None = None, name: str | None = None,
          progress: ProgressCallback | None = None, other: Any = None,
          sources: Any = ("left", "right"), model: FSModel | None = None) -> DedupResult:
    """Deduplicate ``table`` (a path, ``catalog:db.table`` or DataFrame) whose records are identified by
    the unique, non-NULL column ``key``, with ``config`` (a YAML path or text, a dict, a ``DedupConfig``).

    ``threshold`` overrides the config's (pairs with probability >= threshold are linked).
    ``labels``: known matching pairs (a DataFrame of two key columns, or a list of key tuples); their
    levels set m. ``golden_record(records)``: a function from one cluster's records (pandas, sorted by
    key) to the golden values {column: value}; default per column the most frequent non-NULL value, ties
    to the smallest. ``prior``: the probability that two random records match, instead of its estimate.
    ``progress(stage, item, done, total)`` is called after each stage (block, compare, estimate, cluster).
    Bad input raises a ``DqkitError`` before any Spark job where the schema can tell.

    ``other``: a second table to link ``table`` to (record linkage, see ``link``): pairs only across
    the two tables, records and clusters with a ``source`` column naming the table (``sources``).
    ``model``: a fitted ``FSModel`` of the same comparisons to score with instead of estimating one
    (``dedup --since``'s full run and its tests: the next night with the previous night's model).
    """
    cfg = _config(config)
    thr = cfg.threshold if threshold is None else threshold
    if isinstance(thr, bool) or not isinstance(thr, (int, float)) or not 0 <= thr <= 1:
        raise ParameterError(f"threshold must be a probability between 0 and 1, not {thr!r}")
    if prior is not None and not 0 < prior < 1:
        raise ParameterError(f"prior must be strictly between 0 and 1, not {prior!r}")
    spark = spark or get_spark()
    df, rules, names, link_notes, right = _inputs(table, other, key, cfg, spark, sources)
    is_link = names is not None

    def _label(t: Any, default: str) -> str:
        return os.fspath(t) if isinstance(t, (str, os.PathLike)) else default

    label = name or (_label(table, "table") if not is_link else
                     f"{_label(table, names[0])} ~ {_label(other, names[1])}")
    columns = cfg.columns()
    dtypes = {c: df.schema[c].dataType for c in columns}
    comps = cfg.comparisons
    levels = [c.n_levels for c in comps]
    n_rules = len(rules)
    stages = 4
    notes: list[str] = list(link_notes)

    def step(stage: str, done: int) -> None:
        if progress is not None:
            progress(stage, stage, done, stages)

    with cancellable("the deduplication"):
        # the projected records are kept once (materialised by the first job below): the key check,
        # block statistics, the pairs' joins and the u sample read them instead of the input again
        recs = checkpoint_on_read(_records(df, key, cfg, rules, names))
        stats, keys = B.key_and_block_statistics(recs, rules, cfg.max_block_size, is_link)
        if keys.nulls or keys.repeats:  # refused: the key check's own message, with examples
            if is_link:
                assert names is not None and right is not None
                _check_key(df.where(F.col(B.SOURCE) == names[0]), key, f"the left table ({_label(table, names[0])})")
                _check_key(right, key, f"the right table ({_label(other, names[1])})")
            else:
                _check_key(df, key, label)
        if is_link:
            n_sides = (keys.left_rows, keys.rows - keys.left_rows)
            n_records = keys.rows
            all_pairs = float(n_sides[0]) * n_sides[1]
            if 0 in n_sides:
                notes.append("a table is empty: nothing to link")
        else:
            n_sides = None
            n_records = keys.rows
            all_pairs = n_records * (n_records - 1) / 2
            if n_records == 0:
                notes.append("the table is empty: nothing to deduplicate")
        oversized, warnings = _oversized(recs, rules, stats, cfg, link=is_link)
        notes += warnings
        gammas = [C.gamma_col(i) for i in range(len(comps))]
        driver = None
        if D.takes(stats, n_records, comps, dtypes, recs, n_rules, is_link):  # one fetch, no pair job (_driver)
            driver = D.run(recs, n_rules, oversized, comps, columns, cfg.seed,
                           0 if model is not None else cfg.u_sample_records)
            levelled, patterns, counts, masks = None, driver.patterns, driver.counts, driver.masks
            notes.append(f"scored on the driver ({int(counts.sum()):,} pairs; {D.ENV}=0 scores on Spark)")
            step("block", 1)
        else:
            cand = B.candidate_pairs(B.purge_oversized(recs, oversized), n_rules,
                                     [C.value_col(k) for k in range(len(columns))], is_link)
            levelled = C.add_levels(cand, comps, columns, dtypes).select(B.ID1, B.ID2, B.FIRST, B.RULES, *gammas)
            levelled = checkpoint_on_read(levelled)  # materialised by the pattern counts below
            step("block", 1)
            pattern_rows = _sorted_rows(levelled.groupBy(*gammas, B.RULES).agg(F.count(F.lit(1)).alias("n"))
                                        .limit(_MAX_PATTERNS).collect(), [*gammas, B.RULES])
            patterns = np.array([[r[g] for g in gammas] for r in pattern_rows], dtype=np.int64).reshape(-1, len(comps))
            counts = np.array([r["n"] for r in pattern_rows], dtype=float)
            masks = np.array([r[B.RULES] for r in pattern_rows], dtype=np.int64)
        n_pairs = int(counts.sum())
        first_rule = _lowest_bit(masks)
        new_pairs = {i: int(counts[first_rule == i].sum()) for i in range(n_rules)}
        stats = _stats_with_pairs(stats, new_pairs)
        for _, s in stats.iterrows():
            if s["new_pairs"] == 0 and n_records:
                why = ("every block has one record or a NULL key" if s["comparisons"] == 0
                       else "every pair it finds is found by an earlier rule")
                notes.append(f"blocking rule {s['rule']!r} produced no new pairs ({why})")
        step("compare", 2)

        if model is not None:
            _check_model(model, comps)
            sessions, u_pairs = [], 0
        else:
            if driver is not None:  # the same sample's patterns, counted on the driver
                u_sample = (driver.u_patterns, driver.u_counts)
                u, u_pairs = u_from(*u_sample, levels)
            else:
                u, u_pairs, u_sample = _estimate_u(recs, comps, columns, dtypes, cfg, is_link)
            if u_pairs < 1000 and n_records:
                notes.append(f"u was estimated from {u_pairs} random pairs only; estimates of rare levels are rough")
            labelled_m = None
            if labels is not None:
                labelled_m, n_labels = _labelled_m(spark, recs, labels, df.schema[key].dataType, comps, columns, dtypes,
                                                   is_link)
                notes.append(f"m was set from {n_labels} labelled matching pair(s)")
            inactive = [[c.column in r.columns for c in comps] for r in rules]
            def fitted(u_now: list[np.ndarray]) -> tuple[FSModel, list[dict]]:
                return fit(patterns, counts, masks, levels, [c.label for c in comps], u_now, inactive, all_pairs,
                           labelled_m=labelled_m, prior=prior, max_iterations=cfg.em_max_iterations,
                           tolerance=cfg.em_tolerance)

            model, sessions = fitted(u)
            for _ in range(_U_ROUNDS):  # u without the matches among the random pairs (see dqkit.dedup._em)
                if not u_pairs:
                    break
                new_u = non_match_frequencies(u_sample[0], u_sample[1], levels, model)
                moved = max(float(np.abs(a - b).max()) for a, b in zip(new_u, u))
                u = new_u
                model, sessions = fitted(u)
                if moved < 1e-9:
                    break
            notes += list(model.notes)
            for s in sessions:
                s["rule"] = rules[s["rule"]].rule.name
                if s["pairs"] >= 2 and not s["converged"] and labelled_m is None:
                    notes.append(f"EM on the pairs of rule {s['rule']!r} did not converge in {s['iterations']} iterations")
        step("estimate", 3)

        result = DedupResult(table=label, key=key, config=cfg, threshold=float(thr), records=df, compare_records=recs,
                             levelled_pairs=levelled, model=model, sessions=tuple(sessions), block_stats=stats,
                             n_records=n_records, n_pairs=n_pairs, u_pairs=u_pairs, patterns=patterns,
                             pattern_counts=counts,
                             rule_names=tuple(r.rule.name for r in rules), dtypes=dtypes,
                             notes=tuple(notes), golden_fn=golden_record,
                             input_paths=tuple(t for t in (table, other) if isinstance(t, (str, os.PathLike))),
                             sources=names, source_records=n_sides, oversized=oversized,
                             driver_pairs=driver.pairs if driver is not None else None)
        result = result.at_threshold(thr)
        step("cluster", 4)
    return result


def _check_model(model: FSModel, comps: tuple[Comparison, ...]) -> None:
    """A given model scores the config's comparisons: same labels, same number of levels each."""
    if tuple(model.names) != tuple(c.label for c in comps) or [len(m) for m in model.m] != [c.n_levels for c in comps]:
        raise ParameterError(f"the given model compares {', '.join(model.names)}, not the config's comparisons",
                             hint="give the model of a run with the same comparisons")


def _lowest_bit(masks: np.ndarray) -> np.ndarray:
    out = np.full(len(masks), -1, dtype=np.int64)
    for i in range(MAX_RULES):
        hit = (out < 0) & (((masks >> i) & 1) == 1)
        out[hit] = i
    return out


def _estimate_u(recs: DataFrame, comps: tuple[Comparison, ...], columns: list[str], dtypes: dict[str, T.DataType],
                cfg: DedupConfig, link: bool = False
                ) -> tuple[list[np.ndarray], int, tuple[np.ndarray, np.ndarray]]:
    """u from all pairs of ``u_sample_records`` records chosen by a seeded hash of the key (so the same
    records whatever the partitioning): level frequencies per comparison, add-one smoothed. Linking:
    ``u_sample_records`` records of each table, all pairs across the two. Also returns the sampled
    level patterns with their counts (to take the matches among them out once m is known)."""
    carry = [C.value_col(k) for k in range(len(columns))]
    def sample(df: DataFrame) -> DataFrame:
        return (df.select(B.ID, *carry).withColumn("_dq_h", F.xxhash64(F.col(B.ID), F.lit(cfg.seed)))
                .orderBy("_dq_h", B.ID).limit(cfg.u_sample_records).drop("_dq_h"))

    if link:
        ls, rs = sample(recs.where(B.side_col() == 0)), sample(recs.where(B.side_col() == 1))
    else:  # the top-k of the kept records on each side of the cross join: keeping it once as well
        ls = rs = sample(recs)  # cost a job more than the second top-k (measured; see benchmarks/RESULTS.md)
    # the sample is one partition (a top-k): spread the streamed side over the shuffle partitions so
    # the cross join's comparisons run on every core instead of in one task (counts do not change)
    ls = ls.repartition(_shuffle_partitions(recs.sparkSession))
    left = ls.select(F.col(B.ID).alias(B.ID1), *[F.col(c).alias(f"{c}_l") for c in carry])
    right = rs.select(F.col(B.ID).alias(B.ID2), *[F.col(c).alias(f"{c}_r") for c in carry])
    pairs = left.crossJoin(right) if link else left.crossJoin(right).where(F.col(B.ID1) < F.col(B.ID2))
    gammas = [C.gamma_col(i) for i in range(len(comps))]
    rows = _sorted_rows(C.add_levels(pairs, comps, columns, dtypes).groupBy(*gammas)
                        .agg(F.count(F.lit(1)).alias("n")).collect(), gammas)
    patterns = np.array([[r[g] for g in gammas] for r in rows], dtype=np.int64).reshape(-1, len(comps))
    counts = np.array([r["n"] for r in rows], dtype=float)
    return (*u_from(patterns, counts, [c.n_levels for c in comps]), (patterns, counts))


def _shuffle_partitions(spark: SparkSession) -> int:
    """``spark.sql.shuffle.partitions`` (dqkit's session: twice the cores), at least 2."""
    try:
        return max(2, int(spark.conf.get("spark.sql.shuffle.partitions") or 2))
    except (ValueError, TypeError):
        return 2
