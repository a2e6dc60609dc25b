"""Golden records: one record per cluster of a dedup run, each column's most frequent value (or a
user function's choice). Shared by a full run's result and an incremental one's."""
from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import pandas as pd
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from dqkit.runtime.sparkutil import apply_in_pandas, col

_K = "_dq_k"
CLUSTER, SIZE = "cluster_id", "cluster_size"


def golden_records(records: DataFrame, clusters: DataFrame, key: str,
                   fn: Callable[[pd.DataFrame], Mapping[str, Any]] | None = None) -> DataFrame:
    """One record per cluster: ``cluster_id, cluster_size`` and every column of ``records`` but ``key``.

    Default: per column the most frequent non-NULL value of the cluster, ties broken by the smallest
    value (so the result does not depend on row order). ``fn(cluster_records)`` (pandas, sorted by key)
    returns {column: value} instead. Singletons pass through unchanged.
    """
    attrs = [c for c in records.columns if c != key]
    sizes = clusters.groupBy(CLUSTER).agg(F.count(F.lit(1)).alias(SIZE))
    cl = clusters.select(col(key).alias(_K), CLUSTER)
    members = (records.select(col(key).alias(_K), *[col(a) for a in attrs]).join(cl, _K).join(sizes, CLUSTER))
    singles = members.where(F.col(SIZE) == 1).select(CLUSTER, SIZE, *[col(a) for a in attrs])
    multi = members.where(F.col(SIZE) > 1)
    if fn is not None:
        out_schema = T.StructType([clusters.schema[CLUSTER], *[records.schema[a] for a in attrs]])

        def run(pdf: pd.DataFrame) -> pd.DataFrame:
            pdf = pdf.sort_values(_K, kind="stable").reset_index(drop=True)
            cid = pdf[CLUSTER].iloc[0]
            given = pdf.drop(columns=[CLUSTER, SIZE]).rename(columns={_K: key})
            values = dict(fn(given))
            return pd.DataFrame([{CLUSTER: cid, **{a: values.get(a) for a in attrs}}], columns=[CLUSTER, *attrs])

        chosen = apply_in_pandas(multi, CLUSTER, run, out_schema).join(sizes, CLUSTER)
    else:
        chosen = sizes.where(F.col(SIZE) > 1)
        for a in attrs:
            present = multi.where(col(a).isNotNull())
            if isinstance(records.schema[a].dataType, T.MapType):  # not orderable: the smallest key's value
                best = present.groupBy(CLUSTER).agg(F.min_by(col(a), F.col(_K)).alias(a))
            else:
                best = (present.groupBy(CLUSTER, col(a).alias("_dq_v")).agg(F.count(F.lit(1)).alias("_dq_n"))
                        .groupBy(CLUSTER).agg(F.min(F.struct((-F.col("_dq_n")).alias("n"), F.col("_dq_v").alias("v")))
                                              .alias("_dq_b"))
                        .select(CLUSTER, F.col("_dq_b.v").alias(a)))
            chosen = chosen.join(best, CLUSTER, "left")
    return singles.unionByName(chosen.select(CLUSTER, SIZE, *[col(a) for a in attrs]))
