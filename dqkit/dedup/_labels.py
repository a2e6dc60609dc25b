"""m from known matching pairs (``dedup(..., labels=...)``): their levels, computed by Spark on the
compared records, set m directly instead of EM (both routes of ``dedup``)."""
from __future__ import annotations

from typing import Any

import numpy as np
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from dqkit.dedup import _blocking as B
from dqkit.dedup import _compare as C
from dqkit.dedup._em import level_frequencies
from dqkit.dedup.config import Comparison
from dqkit.errors import ParameterError
from dqkit.runtime.sparkutil import col

__all__ = ["labelled_m"]


def labelled_m(spark: SparkSession, recs: DataFrame, labels: Any, key_type: T.DataType,
               comps: tuple[Comparison, ...], columns: list[str], dtypes: dict[str, T.DataType],
               link: bool = False) -> tuple[list[np.ndarray], int]:
    """m from the levels of known matching pairs (add-one smoothed per level); linking: pairs
    (left key, right key)."""
    if hasattr(labels, "columns") and hasattr(labels, "select"):
        if len(labels.columns) < 2:
            raise ParameterError("labels need two key columns (key_1, key_2)")
        lab = labels.select(col(labels.columns[0]).cast(key_type).alias(B.ID1),
                            col(labels.columns[1]).cast(key_type).alias(B.ID2))
    else:
        pairs = [tuple(p) for p in labels]
        if not pairs or any(len(p) != 2 for p in pairs):
            raise ParameterError("labels are a non-empty list of (key_1, key_2) pairs, or a DataFrame of two columns")
        schema = T.StructType([T.StructField(B.ID1, key_type), T.StructField(B.ID2, key_type)])
        lab = spark.createDataFrame(pairs, schema)
    if link:
        lab = lab.select(F.struct(F.lit(0).alias("s"), F.col(B.ID1).alias("k")).alias(B.ID1),
                         F.struct(F.lit(1).alias("s"), F.col(B.ID2).alias("k")).alias(B.ID2)).distinct()
    else:
        lab = lab.where(F.col(B.ID1) != F.col(B.ID2)).select(F.least(B.ID1, B.ID2).alias(B.ID1),
                                                              F.greatest(B.ID1, B.ID2).alias(B.ID2)).distinct()
    carry = [C.value_col(k) for k in range(len(columns))]
    left = recs.select(F.col(B.ID).alias(B.ID1), *[F.col(c).alias(f"{c}_l") for c in carry])
    right = recs.select(F.col(B.ID).alias(B.ID2), *[F.col(c).alias(f"{c}_r") for c in carry])
    pairs_df = lab.join(left, B.ID1).join(right, B.ID2)
    gammas = [C.gamma_col(i) for i in range(len(comps))]
    rows = C.sorted_rows(C.add_levels(pairs_df, comps, columns, dtypes).groupBy(*gammas)
                        .agg(F.count(F.lit(1)).alias("n")).collect(), gammas)
    patterns = np.array([[r[g] for g in gammas] for r in rows], dtype=np.int64).reshape(-1, len(comps))
    counts = np.array([r["n"] for r in rows], dtype=float)
    if counts.sum() == 0:
        raise ParameterError("no labelled pair names two records of the table",
                             hint="labels are pairs of key values of this table")
    return level_frequencies(patterns, counts, [c.n_levels for c in comps], smoothing=0.5), int(counts.sum())
