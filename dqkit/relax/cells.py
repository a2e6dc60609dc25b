"""The cells of a probabilistic table read out: its worlds, the long format (R42) and DaisyP (R43)."""
from __future__ import annotations

from collections.abc import Mapping, Sequence

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from dqkit.relax.model import CAND_TYPE, TID, WORLD_RHS, cand_col, most_probable
from dqkit.runtime.sparkutil import col


def tuple_worlds(prob: DataFrame, cols: Sequence[str]) -> Column:
    """The worlds of each tuple: every world a candidate names, or ``[A]`` for an untouched tuple."""
    arrs = [F.coalesce(F.transform(col(cand_col(c)), lambda x: x["world"]), F.array().cast("array<string>"))
            for c in cols if cand_col(c) in prob.columns]
    if not arrs:
        return F.array(F.lit(WORLD_RHS))
    w = F.array_sort(F.array_distinct(F.flatten(F.array(*arrs))))
    return F.when(F.size(w) == 0, F.array(F.lit(WORLD_RHS))).otherwise(w)


def long_cells(prob: DataFrame, rule_columns: Sequence[str], only_cleaned: bool = True,
               tid_col: str = TID, prefix: str = "", attr_names: Mapping[str, str] | None = None) -> DataFrame:
    """Long format of cells (R42): ``tid, attr, world_id, candidate, prob, is_original``; a cell with
    no candidate in a world of its tuple is its original value with probability 1 there."""
    worlds = tuple_worlds(prob, [c for c in rule_columns if f"{prefix}{cand_col(c)}" in prob.columns] if not prefix else [])
    if prefix:
        worlds = col(f"{prefix}_dq_worlds")
    parts = []
    for c in rule_columns:
        cc = f"{prefix}{cand_col(c)}"
        has = cc in prob.columns
        name = (attr_names or {}).get(c, c)
        base = prob.select(col(tid_col).alias("tid"), F.lit(name).alias("attr"), col(prefix + c).cast("string").alias("_o"),
                           (col(cc) if has else F.lit(None).cast(CAND_TYPE)).alias("_c"), worlds.alias("_w"))
        if only_cleaned:
            base = base.where(F.col("_c").isNotNull())
        ex = base.select("tid", "attr", "_o", "_c", F.explode("_w").alias("world_id"))
        ex = ex.withColumn("_cw", F.filter(F.coalesce(F.col("_c"), F.array().cast(CAND_TYPE)),
                                           lambda x: x["world"] == F.col("world_id")))
        certain = ex.where(F.size("_cw") == 0).select("tid", "attr", "world_id", F.col("_o").alias("candidate"),
                                                      F.lit(1.0).alias("prob"), F.lit(True).alias("is_original"))
        cand = ex.where(F.size("_cw") > 0).select("tid", "attr", "world_id", "_o", F.explode("_cw").alias("x")).select(
            "tid", "attr", "world_id",
            F.when(F.col("x.kind") == "range", F.concat(F.col("x.op"), F.col("x.value"))).otherwise(F.col("x.value")).alias("candidate"),
            F.col("x.p").alias("prob"),
            ((F.col("x.kind") == "value") & (F.col("x.value") == F.col("_o"))).alias("is_original"))
        parts += [certain, cand]
    out = parts[0]
    for p in parts[1:]:
        out = out.unionByName(p)
    return out


def daisy_p(prob: DataFrame, columns: Sequence[str], rule_columns: Sequence[str], types: Mapping[str, str],
            key: str | None) -> DataFrame:
    """The table with every rule cell at its most probable value (DaisyP), in the original types."""
    @F.udf("string")
    def pick(orig, cands, worlds):  # noqa: ANN001 - a Spark UDF over one cell
        v, _ = most_probable(orig, cands, worlds)
        return v

    w = tuple_worlds(prob, rule_columns)
    out = []
    for c in columns:
        if c in rule_columns and cand_col(c) in prob.columns:
            out.append(F.when(col(cand_col(c)).isNull(), col(c))
                       .otherwise(pick(col(c).cast("string"), col(cand_col(c)), w).cast(types[c])).alias(c))
        else:
            out.append(col(c))
    return prob.select(*out)
