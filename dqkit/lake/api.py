"""The entry points of ``dqkit.lake``, which the package re-exports on first use (so that importing
the package, its constants and its manifests needs no pyspark)."""
from __future__ import annotations

import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from dqkit.errors import ParameterError
from dqkit.lake._lake import ColumnStats, Lake, LakeTable, flatten, flatten_schema, load_lake
from dqkit.lake._result import LakeResult
from dqkit.lake.graph import STAGES, ContainmentGraph, EdgeState, build_graph
from dqkit.lake.optret import (LINEAGE, AssumeKnown, CostModel, DeletionPlan, LineageProvider, MappingProvider,
                               TransformationProvider, dyn_lin, ilp, load_costs, opt_ret, parse_costs)
from dqkit.lake.optret import lineage_provider
from dqkit.lake.sgb import SGBResult, schema_containment_brute_force, sgb
from dqkit.lake.stages import (clp_keeps, clp_sample, containment_fraction, containment_fractions, mmp_keeps,
                               pairwise_hash_containment, required_samples)

__all__ = ["find_containment", "LakeResult", "ContainmentGraph", "load_lake", "Lake", "LakeTable", "ColumnStats",
           "sgb", "SGBResult", "schema_containment_brute_force", "mmp_keeps", "clp_sample", "clp_keeps",
           "required_samples", "containment_fraction", "pairwise_hash_containment", "ground_truth",
           "pairwise_ground_truth", "opt_ret", "ilp", "dyn_lin", "CostModel", "DeletionPlan", "load_costs",
           "parse_costs", "TransformationProvider", "LineageProvider", "MappingProvider", "AssumeKnown",
           "flatten", "flatten_schema", "lineage_provider", "result_from_graph", "plan_for", "STAGES",
           "EdgeState", "build_graph"]



def ground_truth(lake: Lake | ContainmentGraph, bag: bool = False) -> dict[tuple[str, str], tuple[float, int]]:
    """The exact answer (req. 20): all-pairs schema containment, then for every schema edge CM(child,
    parent) by a fingerprint anti-join over the child's columns. {(parent, child): (CM, child rows)}."""
    tables = lake.tables
    schemas = {n: t.tokens for n, t in tables.items()}
    edges = sorted(schema_containment_brute_force(schemas))
    from dqkit.lake.graph import small_lake_conf
    from dqkit.runtime.session import get_spark
    from dqkit.runtime.sparkutil import scoped_conf

    with scoped_conf(get_spark(), small_lake_conf(tables.values())):
        return dict(zip(edges, containment_fractions([(tables[p], tables[c]) for p, c in edges], bag)))


def pairwise_ground_truth(lake: Lake) -> tuple[dict[tuple[str, str], float], int]:
    """The paper's literal ground truth (req. 21): every child row hash against every parent row hash,
    for every schema edge. Returns ({edge: CM}, hash comparisons made). Small lakes only."""
    out, ops = {}, 0
    schemas = {n: t.tokens for n, t in lake.tables.items()}
    for p, c in sorted(schema_containment_brute_force(schemas)):
        cm, _, n = pairwise_hash_containment(lake.tables[p], lake.tables[c])
        out[(p, c)] = cm
        ops += n
    return out, ops


def plan_for(graph: ContainmentGraph, costs: Any = None, provider: TransformationProvider | None = None,
             use_dyn_lin: bool = True) -> DeletionPlan:
    """Opt-Ret over the graph's containment edges, with table sizes in bytes (rows when unknown)."""
    from dqkit.lake.optret import costs_from

    sizes = {n: float(t.bytes or t.rows or 0) for n, t in graph.tables.items()}
    provider = provider or lineage_provider(graph.lake) or AssumeKnown()
    plan = opt_ret(sizes, sorted(graph.contained), costs_from(costs), provider, use_dyn_lin)
    graph.plan_stale = False
    if not graph.verify:
        plan = type(plan)(**{**plan.__dict__, "notes": plan.notes + (
            "the edges were not verified exactly (CLP is probabilistic): run with verify=True before deleting",)})
    return plan


def _tables_frame(graph: ContainmentGraph) -> pd.DataFrame:
    rows = [{"name": n, "format": t.format or "", "rows": t.rows, "bytes": t.bytes, "columns": len(t.columns),
             "partitioned by": ", ".join(t.partition_columns)} for n, t in sorted(graph.tables.items())]
    return pd.DataFrame(rows, columns=["name", "format", "rows", "bytes", "columns", "partitioned by"])


def result_from_graph(graph: ContainmentGraph, *, plan: DeletionPlan | None = None,
                      truth: Mapping[tuple[str, str], tuple[float, int]] | None = None,
                      truth_seconds: float | None = None, notes: tuple[str, ...] = ()) -> LakeResult:
    """The ``LakeResult`` of a graph's current state."""
    g = graph.sgb_result
    from dqkit.lake.sgb import sgb as _sgb

    g = _sgb(graph.schemas) if g is None or g.n != len(graph.tables) else g
    stages_run = ("SGB", "MMP", "CLP", "verify") if graph.verify else ("SGB", "MMP", "CLP")
    all_notes = list(notes) + list(getattr(graph.lake, "notes", ()))
    if graph.lake.skipped:
        all_notes.append(f"{len(graph.lake.skipped)} table(s) could not be read and were not checked "
                         "(see Skipped tables): the verdict covers only the tables read (exit 2)")
    if len(graph.tables) < 2:
        all_notes.append("the lake has fewer than two readable tables: no containment is possible")
    elif not graph.edges:
        all_notes.append("no table's columns are contained in another's (no common schema): no candidate edge")
    src = graph.lake.source
    inputs = (src,) if isinstance(src, (str, os.PathLike)) else ()
    return LakeResult(graph.lake.label, _tables_frame(graph), graph.lake.skipped, dict(graph.edges), stages_run,
                      dict(graph.timings), {"s": graph.s, "t": graph.t, "seed": graph.seed, "mode": graph.mode,
                                            "verify": graph.verify, "bag": graph.bag},
                      {"n": g.n, "K": g.K, "cluster_sizes": g.cluster_sizes, "subset_checks": g.subset_checks,
                       "table3_operations": g.table3_operations},
                      graph.clp_operations, plan, truth, truth_seconds, tuple(all_notes), inputs)


def find_containment(lake: Any, *, s: int = 4, t: int = 10, seed: int = 0, mode: str = "strict",
                     verify: bool = False, bag: bool = False, truth: bool = False,
                     plan: bool = False, costs: Any = None, provider: TransformationProvider | None = None,
                     with_types: bool = False, synonyms: Mapping[str, str] | None = None,
                     progress: Any = None, spark: Any = None) -> LakeResult:
    """Find the tables of ``lake`` contained in others (R2D2), optionally verify, evaluate and plan.

    ``lake``: a folder of Parquet/CSV/JSON tables, ``catalog:DB`` or a dict name -> table source.
    ``verify``: the exact last stage (CM per surviving edge); ``bag``: bag instead of set semantics;
    ``truth``: also compute the exact ground truth and per-stage metrics; ``plan``: Opt-Ret with
    ``costs`` (a ``CostModel``, dict or YAML path) and ``provider`` (default: the lake's lineage
    manifest when there is one, else every edge assumed rebuildable, which the plan says).
    """
    if bag and not verify and not truth:
        raise ParameterError("bag semantics applies to the exact stages", hint="add verify=True or truth=True")
    from dqkit.lake.optret import costs_from

    cost_model = costs_from(costs) if plan or costs is not None else None  # a bad cost file fails first
    lk = lake if isinstance(lake, Lake) else load_lake(lake, with_types=with_types, synonyms=synonyms, spark=spark)
    graph = ContainmentGraph(lk, s=s, t=t, seed=seed, mode=mode, verify=verify, bag=bag,
                             spark=spark, progress=progress, with_types=with_types, synonyms=synonyms).run()
    gt, gt_seconds = None, None
    if truth:
        t0 = time.perf_counter()
        gt = ground_truth(lk, bag)
        gt_seconds = time.perf_counter() - t0
    the_plan = plan_for(graph, cost_model, provider) if plan else None
    return result_from_graph(graph, plan=the_plan, truth=gt, truth_seconds=gt_seconds)

