"""Black-box repair per connected component (BigDansing §5.1, Figure 7, R29).

BigDansing gives each connected component of the violation hypergraph to an independent instance of
an unmodified, centralised repair algorithm, and runs the instances in parallel. dqkit does the same
with ``groupBy(component).applyInPandas``: the user's function sees one component at a time, as a
pandas DataFrame of its violations' candidate fixes (``COMPONENT_COLUMNS``), and returns the cells it
changes as ``(tid, attr, new)`` with ``new`` as text (cast back to the column's type when applied).

The framework, not the function, enforces the contract: a returned change to a frozen cell or to the
key, or to a cell outside the function's component, is dropped; a change that keeps the old value is not a change;
a function that returns other columns fails the run with a ``ParameterError``. Holistic repair
(``dqkit.repair.holistic``) is one such function.
"""
from __future__ import annotations

from collections.abc import Callable

import pandas as pd
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from dqkit.errors import ParameterError
from dqkit.repair.hypergraph import ViolationHypergraph

__all__ = ["COMPONENT_COLUMNS", "ComponentRepair", "repair_components"]

COMPONENT_COLUMNS = ("component", "violation_id", "rule", "tid", "attr", "value", "op", "rhs_tid", "rhs_attr",
                     "rhs_value", "constant", "kind", "frozen", "rhs_frozen")
"""What a component repair function receives: one row per candidate fix of each violation of the
component (``component`` is its id as JSON text; ``value``/``rhs_value``/``constant`` are text;
``frozen``/``rhs_frozen`` say that a side's cell must not change)."""

ComponentRepair = Callable[[pd.DataFrame], pd.DataFrame]


def out_schema_empty(schema: T.StructType) -> pd.DataFrame:
    """An empty pandas frame that Arrow converts to ``schema`` (typed, not float64, columns)."""
    import pyarrow as pa

    from pyspark.sql.pandas.types import to_arrow_schema

    return pa.schema(to_arrow_schema(schema)).empty_table().to_pandas()


def repair_components(hypergraph: ViolationHypergraph, fn: ComponentRepair,
                      frozen: DataFrame | None = None, immutable: tuple[str, ...] = ()) -> DataFrame:
    """Run ``fn`` on every component of ``hypergraph`` in parallel; the changes it makes.

    Returns ``(tid, attr, old, new, rules)``: one row per changed cell (``old``/``new`` as text,
    ``rules`` the sorted rules of the violations naming the cell). ``frozen (tid, attr)``: cells that
    must not change. ``immutable``: attributes none of whose cells may change (the key: a fix
    changing a row's key would land on another row), shown to ``fn`` as frozen.
    """
    hyper = hypergraph.hyperedges
    fix_t = hyper.schema["fixes"].dataType.elementType
    tid_t = fix_t["tid"].dataType
    comps = hypergraph.hyperedge_components().select(
        "violation_id", F.to_json("component").alias("component"))
    rows = (hyper.join(comps, "violation_id")
            .select("component", "violation_id", "rule", F.explode("fixes").alias("f"))
            .select("component", "violation_id", "rule", "f.tid", "f.attr", "f.value", "f.op", "f.rhs_tid",
                    "f.rhs_attr", "f.rhs_value", "f.constant", "f.kind"))
    if frozen is not None:
        fz = frozen.select(F.col("tid").cast(tid_t).alias("_fz_t"), F.col("attr").alias("_fz_a")).distinct()
        rows = (rows.join(F.broadcast(fz.select(F.col("_fz_t").alias("_l_t"), F.col("_fz_a").alias("_l_a"),
                                                F.lit(True).alias("frozen"))),
                          (F.col("tid") == F.col("_l_t")) & (F.col("attr") == F.col("_l_a")), "left")
                .join(F.broadcast(fz.select(F.col("_fz_t").alias("_r_t"), F.col("_fz_a").alias("_r_a"),
                                            F.lit(True).alias("rhs_frozen"))),
                      (F.col("rhs_tid") == F.col("_r_t")) & (F.col("rhs_attr") == F.col("_r_a")), "left")
                .drop("_l_t", "_l_a", "_r_t", "_r_a"))
    else:
        rows = rows.withColumn("frozen", F.lit(None).cast("boolean")).withColumn("rhs_frozen",
                                                                                 F.lit(None).cast("boolean"))
    rows = rows.select(*[F.coalesce(F.col(c), F.lit(False)).alias(c) if c in ("frozen", "rhs_frozen")
                         else F.col(c) for c in COMPONENT_COLUMNS])
    if immutable:
        fixed = list(immutable)
        rows = (rows.withColumn("frozen", F.col("frozen") | F.col("attr").isin(fixed))
                .withColumn("rhs_frozen", F.col("rhs_frozen") | F.coalesce(F.col("rhs_attr").isin(fixed),
                                                                           F.lit(False))))
    out_schema = T.StructType([T.StructField("component", T.StringType()), T.StructField("tid", tid_t),
                               T.StructField("attr", T.StringType()), T.StructField("new", T.StringType())])
    name = getattr(fn, "__name__", type(fn).__name__)

    def run(pdf: pd.DataFrame) -> pd.DataFrame:
        comp = pdf["component"].iloc[0]
        got = fn(pdf.reset_index(drop=True))
        if got is None or len(got) == 0:
            return _EMPTY
        if not isinstance(got, pd.DataFrame) or not {"tid", "attr", "new"} <= set(got.columns):
            raise ParameterError(f"the repair function {name} must return a DataFrame with columns tid, attr, new",
                                 hint=f"it returned {type(got).__name__} "
                                      f"{list(getattr(got, 'columns', []))}")
        res = got[["tid", "attr", "new"]].copy()
        res["new"] = [None if v is None or (isinstance(v, float) and v != v) else str(v) for v in res["new"]]
        res.insert(0, "component", comp)
        return res

    _EMPTY = out_schema_empty(out_schema)
    changed = rows.groupBy("component").applyInPandas(run, out_schema)
    # the cells of each component, their old value and the rules naming them (the contract's checks)
    cells = (hyper.join(comps, "violation_id").select("component", "rule", F.explode("cells").alias("c"))
             .groupBy("component", F.col("c.tid").alias("tid"), F.col("c.attr").alias("attr"))
             .agg(F.first("c.value").alias("old"), F.array_sort(F.collect_set("rule")).alias("rules")))
    out = changed.join(cells, ["component", "tid", "attr"]).where(~F.col("new").eqNullSafe(F.col("old")))
    if immutable:
        out = out.where(~F.col("attr").isin(list(immutable)))
    if frozen is not None:
        out = out.join(frozen.select(F.col("tid").cast(tid_t).alias("tid"), "attr"), ["tid", "attr"], "left_anti")
    # one change per cell (a function may name a cell twice): the smallest new text
    return (out.groupBy("tid", "attr").agg(F.min("old").alias("old"), F.min("new").alias("new"),
                                          F.first("rules").alias("rules"))
            .select("tid", "attr", "old", "new", "rules"))
