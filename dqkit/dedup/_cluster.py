"""Clusters of a dedup run: the connected components of the matching pairs, each named by its
smallest record key.

Two routes give the same labelling. Up to ``DRIVER_EDGES`` matching pairs (their number is known
from the level-pattern counts before any job), the pairs' two key columns are fetched once as Arrow
and labelled on the driver by ``scipy.sparse.csgraph.connected_components``, and the labels go back
to Spark as one Arrow frame: one Spark job instead of the few jobs per large-star/small-star round
of the distributed ``dqkit.components`` (shared with repair), which dominated a 100K-entity run. The
driver then holds at most ``DRIVER_EDGES`` pairs of keys as Arrow (dictionary-encoded: the codes
and each distinct key once as a Python object; about 60 bytes a pair for short text keys, ~120 MB
at the limit). Larger match sets, linking (struct ids) and key types whose order on the
driver could differ from Spark's take the distributed route.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from dqkit.dedup import _blocking as B
from dqkit.sparkutil import col

__all__ = ["cluster_records", "CLUSTER", "DRIVER_EDGES"]

_K = "_dq_k"
CLUSTER = "cluster_id"
#: at most this many matching pairs are labelled on the driver (see the module docstring)
DRIVER_EDGES = 2_000_000


def _driver_orders_like_spark(t: T.DataType) -> bool:
    """Python orders these values as Spark does (strings: code points = UTF-8 bytes; integers; dates)."""
    return isinstance(t, (T.StringType, T.IntegralType, T.DateType))


def _driver_components(matches: DataFrame, node_type: T.DataType) -> DataFrame:
    """``(node, component)`` for every node of the ``matches`` edges, labelled on the driver."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    import pyarrow as pa

    a, b = matches.columns[:2]
    table = matches.select(col(a).alias("a"), col(b).alias("b")).where(
        F.col("a").isNotNull() & F.col("b").isNotNull()).toArrow()
    n_edges = table.num_rows
    # both ends as one Arrow array, dictionary-encoded: int32 codes per end, each node once
    ends = pa.chunked_array(table.column("a").chunks + table.column("b").chunks,
                            type=table.schema.field("a").type).combine_chunks().dictionary_encode()
    codes = ends.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    nodes = ends.dictionary.to_pandas()
    del table, ends
    n_nodes = len(nodes)
    graph = coo_matrix((np.ones(n_edges, dtype=np.int8), (codes[:n_edges], codes[n_edges:])),
                       shape=(n_nodes, n_nodes))
    _, labels = connected_components(graph, directed=False)
    frame = pd.DataFrame({"node": nodes, "label": labels})
    frame["component"] = frame.groupby("label")["node"].transform("min")
    schema = T.StructType([T.StructField("node", node_type), T.StructField("component", node_type)])
    return matches.sparkSession.createDataFrame(frame[["node", "component"]], schema)


def cluster_records(records: DataFrame, key: str, matches: DataFrame,
                    sources: tuple[str, str] | None = None, n_matches: int | None = None) -> DataFrame:
    """``(key, cluster_id)`` for every record: the connected components of the ``matches`` edges
    (two key columns), each named by its smallest key; a record without a match is its own cluster.
    ``n_matches`` (the number of edges, when known without a job) picks the driver route up to
    ``DRIVER_EDGES``; otherwise ``dqkit.components``, the implementation repair uses.

    Linking (``sources``; ``records`` has a ``source`` column and the edges are ids ``struct(s, k)``):
    ``(source, key, cluster_id)``, ``cluster_id`` the smallest record of the component (left table
    first, then by key) as ``"<source>:<key>"``, unique across both tables."""
    from dqkit.components import connected_components

    a, b = matches.columns[:2]
    node_type = matches.schema[a].dataType
    if (sources is None and n_matches is not None and 0 < n_matches <= DRIVER_EDGES
            and _driver_orders_like_spark(node_type)):
        comps = _driver_components(matches, node_type)
    else:
        comps = connected_components(matches.select(col(a).alias("src"), col(b).alias("dst")))
    if sources is not None:
        keys = records.select(B.SOURCE, col(key).alias(_K), B.record_id(sources, key).alias("_dq_rid"))
        c = F.coalesce(F.col("component"), F.col("_dq_rid"))
        name = F.when(c.getField("s") == 0, F.lit(sources[0])).otherwise(F.lit(sources[1]))
        return (keys.join(comps, keys["_dq_rid"] == comps["node"], "left")
                .select(B.SOURCE, F.col(_K).alias(key), F.concat_ws(":", name, c.getField("k").cast("string"))
                        .alias(CLUSTER)))
    keys = records.select(col(key).alias(_K))
    return (keys.join(comps, keys[_K] == comps["node"], "left")
            .select(F.col(_K).alias(key), F.coalesce(F.col("component"), F.col(_K)).alias(CLUSTER)))
