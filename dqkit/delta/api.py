"""The entry points of ``dqkit.delta``, which the package re-exports on first use (so that importing
the package, its constants and its manifests needs no pyspark)."""
from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from dqkit.delta._names import (
    COLUMN_STAT_NAMES, DELETE, INSERT, NULL_CHANGES, RESERVED, ROW_COUNT, ROW_STAT_NAMES,
    STAGES, STATUS,
)
from dqkit.delta.calc import calc_diff, calc_diff_sql, changed, changed_sql, check_calc_diff_type, diff_unit
from dqkit.delta import columns as columns_module
from dqkit.delta.columns import (
    GROUPED_PAIRING_RECORDS, build_column_delta, column_statistics, key_counts, key_groups, pair_by_key,
)
from dqkit.delta.kernel import (
    BROADCAST_CHANGED_ROWS, DISTINCT_GROUPS_CONF, UNCOMPRESSED_CACHE_CONF, build_row_delta, changed_fingerprints,
    dedup_frame, fetch_changed_rows, finish_row_statistics, fingerprint_counts,
)
from dqkit.delta.plan import TablePlan, _as_list, _normalise_keys, aligned_frame, plan_tables, retyped
from dqkit.delta.renames import propose_renames
from dqkit.delta.schema import SCHEMA_CHANGES, SchemaDelta, parse_renames, parse_tolerances
from dqkit.delta.result import DeltaResult, TableDelta
from dqkit.errors import DqkitError, ParameterError
from dqkit.primitives.fingerprint import FP_HI, FP_LO
from dqkit.runtime.progress import ProgressCallback
from dqkit.runtime.session import get_spark
from dqkit.io.sources import DatabaseSource, describe, read_database, read_failure
from dqkit.runtime.sparkutil import cancellable, scoped_conf

__all__ = [
    "STAGES", "ROW_COUNT", "STATUS", "INSERT", "DELETE", "NULL_CHANGES", "RESERVED", "ROW_STAT_NAMES",
    "COLUMN_STAT_NAMES", "FP_HI", "FP_LO", "TablePlan", "plan_tables", "retyped", "check_calc_diff_type",
    "changed", "calc_diff", "diff_unit", "TableDelta", "DeltaResult", "fingerprint_counts", "changed_fingerprints",
    "finish_row_statistics", "dedup_frame", "build_row_delta", "fetch_changed_rows", "key_counts", "pair_by_key",
    "build_column_delta", "column_statistics", "delta", "BROADCAST_CHANGED_ROWS", "GROUPED_PAIRING_RECORDS",
    "key_groups", "calc_diff_sql", "changed_sql", "DISTINCT_GROUPS_CONF",
    "UNCOMPRESSED_CACHE_CONF",
]


def delta(
    old: DatabaseSource,
    new: DatabaseSource,
    *,
    tables: str | Iterable[str] | None = None,
    exclude: str | Iterable[str] = (),
    columns: Mapping[str, Sequence[str]] | None = None,
    keys: Mapping[str, str | Sequence[str]] | None = None,
    stages: str | Iterable[str] = STAGES,
    abs_tol: float = 0.0,
    rel_tol: float = 0.0,
    previous: DeltaResult | None = None,
    renames: Any = None,
    tolerances: Any = None,
    schema_changes: str = "report",
    spark: SparkSession | None = None,
    progress: ProgressCallback | None = None,
) -> DeltaResult:
    """Compare two versions of a database with Diftong's stages; return a ``DeltaResult``.

    ``old``/``new``: database sources (a folder of tables, ``catalog:DB``, or a dict of DataFrames).
    ``tables`` includes tables; ``exclude`` takes ``TABLE`` or ``TABLE.COL`` (dropped before hashing);
    ``columns`` restricts a table to some columns; ``keys`` maps a table to its key column(s) for
    column validation (need not be unique: records whose key repeats among a side's changed rows are
    left unpaired and counted in ``ambiguous_key_rows``, see the module notes). ``stages`` is any subset of dedup,row,column; a column stage reuses the row
    stage of ``previous`` when given. The inputs are never modified.

    Schemas may differ (``dqkit.delta.schema``): the schema delta comes first in the result and makes
    it DIFFERENT; the common columns are compared, widened numbers by value, other retyped columns as
    text. ``renames`` maps a column (``["t.old=new"]`` or ``{"t": {"old": "new"}}``); renames are
    otherwise proposed, with their evidence, never applied. ``tolerances`` gives per-column
    tolerances (``["t.amount=0.01", "t.price=0.5%"]``). ``schema_changes="fail"`` refuses any schema
    change (``SchemaChangeError``).
    """
    t0 = time.perf_counter()
    stage_list = _parse_stages(stages)
    abs_tol, rel_tol = _tolerance("abs_tol", abs_tol), _tolerance("rel_tol", rel_tol)
    spark = spark or get_spark()
    t_read = time.perf_counter()
    old_db = dict(read_database(old, spark))
    new_db = dict(read_database(new, spark))
    t_plan = time.perf_counter()
    key_map = _normalise_keys(keys)
    rename_map, tolerance_map = parse_renames(renames), parse_tolerances(tolerances)
    if schema_changes not in SCHEMA_CHANGES:
        raise ParameterError(f"schema_changes must be one of {', '.join(SCHEMA_CHANGES)}, not {schema_changes!r}")
    plans, only_old, only_new, schema = plan_tables(old_db, new_db, tables, _as_list(exclude), columns, key_map,
                                                    rename_map, tolerance_map, schema_changes)
    messages: list[str] = []
    originals = {"old": dict(old_db), "new": dict(new_db)}
    for plan in plans:
        old_db[plan.name] = aligned_frame(old_db[plan.name], plan, "old")
        new_db[plan.name] = aligned_frame(new_db[plan.name], plan, "new")
        messages.extend(plan.notes)
    for name in only_old:
        messages.append(f"table {name} is only in the old version; it is reported, not compared")
    for name in only_new:
        messages.append(f"table {name} is only in the new version; it is reported, not compared")
    want_column = "column" in stage_list
    if want_column:
        for plan in plans:
            if plan.key is not None:
                for c in plan.columns:
                    if c not in plan.key:
                        check_calc_diff_type(plan.name, c, plan.types[c])
    reuse = previous.tables if previous is not None else {}

    results: dict[str, TableDelta] = {}
    # every step of the run has a stage, so the stages add up to the total: session start-up and
    # argument checks ("start"), source listing and schema reads ("read"), plan validation ("plan")
    seconds = {"start": t_read - t0, "read": t_plan - t_read, "plan": time.perf_counter() - t_plan,
               "dedup": 0.0, "row": 0.0, "column": 0.0}
    total = len(plans)
    try:
        with cancellable("the comparison"):
            for done, plan in enumerate(plans, start=1):
                results[plan.name] = _run_table(plan, old_db[plan.name], new_db[plan.name], stage_list,
                                                reuse.get(plan.name), abs_tol, rel_tol, messages, seconds)
                if progress is not None:
                    progress(stage_list[-1], plan.name, done, total)
    except BaseException as exc:
        for finished in results.values():  # a failed run keeps nothing cached
            for frame in finished.cached:
                frame.unpersist()
        failure = read_failure(exc) if isinstance(exc, Exception) and not isinstance(exc, DqkitError) else None
        if failure is not None:
            raise failure from exc
        raise
    schema = _with_proposals(schema, plans, originals, messages)
    t_finish = time.perf_counter()
    if want_column and plans and not any(r.row_stats.get("differences", 0) for r in results.values()):
        messages.append("no differences were found in any table, so column validation stopped: "
                        "there is nothing to compare column by column")
    params = {"old": describe(old), "new": describe(new), "tables": [p.name for p in plans],
              "exclude": _as_list(exclude), "keys": {k: list(v) for k, v in key_map.items()},
              "stages": list(stage_list), "abs_tol": abs_tol, "rel_tol": rel_tol,
              "renames": {t: dict(m) for t, m in rename_map.items()},
              "tolerances": {t: {c: tol.text() for c, tol in m.items()} for t, m in tolerance_map.items()},
              "schema_changes": schema_changes,
              "_sources": {"old": old_db, "new": new_db}, "_old_source": old, "_new_source": new}
    t_end = time.perf_counter()
    seconds["finish"] = t_end - t_finish
    seconds["total"] = t_end - t0
    return DeltaResult(results, only_old, only_new, stage_list, messages, params,
                       {k: round(v, 3) for k, v in seconds.items()}, schema)

    return isinstance(value, Mapping) and all(isinstance(v, Mapping) for v in value.values())


def _with_proposals(schema: SchemaDelta, plans: Sequence[TablePlan], originals: Mapping[str, Mapping[str, DataFrame]],
                    messages: list[str]) -> SchemaDelta:
    """The schema delta with the renames proposed for each table that dropped and added columns
    (``dqkit.delta.renames``): reported with their evidence, never applied."""
    tables = dict(schema.tables)
    for plan in plans:
        table = tables.get(plan.name)
        if table is None or not table.dropped or not table.added:
            continue
        proposed = propose_renames(originals["old"][plan.name], originals["new"][plan.name], plan, table)
        if proposed:
            tables[plan.name] = dataclasses.replace(table, proposed=proposed)
            for p in proposed:
                messages.append(f"proposed rename {plan.name}.{p['old']} \u2192 {p['new']} ({p['evidence']}); "
                                f"not applied: accept it with {p['accept']}")
    return SchemaDelta(tables)


def _tolerance(name: str, value: float) -> float:
    """A tolerance as a finite, non-negative float: NaN or infinity would hide every float change."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = math.nan
    if not math.isfinite(number) or number < 0:
        raise ParameterError(f"{name} must be a finite, non-negative number, not {value!r}",
                             hint="NaN or infinity would count every change of a float column as equal")
    return number


def _parse_stages(stages: str | Iterable[str]) -> tuple[str, ...]:
    names = _as_list(stages)
    unknown = [s for s in names if s not in STAGES]
    if unknown or not names:
        raise ParameterError(f"unknown stage(s): {', '.join(unknown) or '(none given)'}",
                             hint=f"stages are {', '.join(STAGES)}")
    return tuple(s for s in STAGES if s in names)


def _run_table(plan: TablePlan, old: DataFrame, new: DataFrame, stages: tuple[str, ...],
               prior: TableDelta | None, abs_tol: float, rel_tol: float,
               messages: list[str], seconds: dict[str, float]) -> TableDelta:
    timings: dict[str, float] = {}
    usable_prior = prior is not None and prior.plan.columns == plan.columns and prior.row_delta is not None
    need_row = "row" in stages or ("column" in stages and plan.key is not None and not usable_prior)
    changed = row_stats = row_delta = None
    cached: list[DataFrame] = []
    if "dedup" in stages or need_row:
        start = time.perf_counter()
        changed, row_stats, cache = changed_fingerprints(old, new, plan)
        cached.append(cache)
        timings["dedup"] = time.perf_counter() - start
        seconds["dedup"] += timings["dedup"]
        if need_row:
            start = time.perf_counter()
            try:
                fetched, row_delta = fetch_changed_rows(old, new, plan, changed, row_stats)
            except BaseException:
                cache.unpersist()
                raise
            cached.append(fetched)
            timings["row"] = time.perf_counter() - start
            seconds["row"] += timings["row"]
        row_stats.pop("_repeated", None)
    if row_stats is None and prior is not None:
        row_stats, row_delta, changed = dict(prior.row_stats), prior.row_delta, prior.changed_fingerprints
    if row_stats is not None and "row" not in stages and "dedup" in stages:
        row_stats = {k: v for k, v in row_stats.items()
                     if k in ("rows_old", "rows_new", "rows_abs_diff", "dedup_rows_old", "dedup_rows_new",
                              "dedup_abs_diff")}
    table = TableDelta(plan.name, plan, row_stats or {}, changed, row_delta, cached=tuple(cached))
    if "column" not in stages:
        return dataclasses.replace(table, seconds={k: round(v, 3) for k, v in timings.items()})
    if plan.key is None:
        messages.append(f"table {plan.name} has no key, so its column validation was skipped "
                        f"(give one with keys={{'{plan.name}': [...]}} or --key {plan.name}=COL)")
        return dataclasses.replace(table, seconds={k: round(v, 3) for k, v in timings.items()})
    if table.row_stats.get("differences", 0) == 0:
        messages.append(f"table {plan.name} has no differences, so column validation has nothing to compare")
        return dataclasses.replace(table, seconds={k: round(v, 3) for k, v in timings.items()})
    start = time.perf_counter()
    assert row_delta is not None
    records = int(table.row_stats.get("differences", 0))
    grouped = records <= columns_module.GROUPED_PAIRING_RECORDS
    # a small changed set: one aggregation per key pairs the records and, in the same query, the
    # statistics and pairing counts are computed (see GROUPED_PAIRING_RECORDS)
    pairs = key_groups(row_delta, plan) if grouped else pair_by_key(row_delta, plan, records=records)
    col_delta, updates, aggs = build_column_delta(pairs, plan, abs_tol, rel_tol, grouped=grouped)
    try:
        with scoped_conf(pairs.sparkSession, DISTINCT_GROUPS_CONF):
            stats, pairing = column_statistics(pairs, aggs, row_delta, plan, table.row_stats, grouped=grouped)
    except BaseException:
        for frame in cached:
            frame.unpersist()
        raise
    if pairing["ambiguous_key_rows"]:
        messages.append(f"warning: key ({', '.join(plan.key)}) of table {plan.name} is not unique among its "
                        f"changed rows; {pairing['ambiguous_key_rows']} records were left unpaired instead of "
                        f"being cross-joined")
    timings["column"] = time.perf_counter() - start
    seconds["column"] += timings["column"]
    return dataclasses.replace(table, col_delta=col_delta, updates=updates, column_stats=stats,
                               pairing=pairing, seconds={k: round(v, 3) for k, v in timings.items()})
