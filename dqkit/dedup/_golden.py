"""Golden records: one record per cluster of a dedup run, each column's most frequent value."""
from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import pandas as pd
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from dqkit.runtime.sparkutil import apply_in_pandas, col

__all__ = ["golden_records", "CLUSTER", "SIZE"]

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
    cl = clusters.select(col(key).alias(_K), CLUSTER)
    members = records.select(col(key).alias(_K), *[col(a) for a in attrs]).join(cl, _K)
    if fn is None:  # one join and one aggregation: every column's mode at once (a singleton's is its value)
        return members.groupBy(CLUSTER).agg(F.count(F.lit(1)).alias(SIZE), *[_most_frequent(records, a)
                                                                            for a in attrs])
    sizes = clusters.groupBy(CLUSTER).agg(F.count(F.lit(1)).alias(SIZE))
    members = members.join(sizes, CLUSTER)
    singles = members.where(F.col(SIZE) == 1).select(CLUSTER, SIZE, *[col(a) for a in attrs])
    multi = members.where(F.col(SIZE) > 1)
    out_schema = T.StructType([clusters.schema[CLUSTER], *[records.schema[a] for a in attrs]])

    def run(pdf: pd.DataFrame) -> pd.DataFrame:
        pdf = pdf.sort_values(_K, kind="stable").reset_index(drop=True)
        cid = pdf[CLUSTER].iloc[0]
        given = pdf.drop(columns=[CLUSTER, SIZE]).rename(columns={_K: key})
        values = dict(fn(given))
        return pd.DataFrame([{CLUSTER: cid, **{a: values.get(a) for a in attrs}}], columns=[CLUSTER, *attrs])

    chosen = apply_in_pandas(multi, CLUSTER, run, out_schema).join(sizes, CLUSTER)
    return singles.unionByName(chosen.select(CLUSTER, SIZE, *[col(a) for a in attrs]))


def _most_frequent(records: DataFrame, a: str) -> Column:
    """The golden value of column ``a`` in a cluster: its most frequent non-NULL value, ties to the
    smallest (Spark's ``mode(deterministic)``); a map column (not orderable): the smallest key's value."""
    if isinstance(records.schema[a].dataType, T.MapType):
        return F.min_by(col(a), F.when(col(a).isNotNull(), F.col(_K))).alias(a)
    return F.mode(col(a), True).alias(a)
