"""Clusters of a dedup run: the connected components of the matching pairs, each named by its
smallest record key.

The one implementation is ``dqkit.primitives.components`` (shared with repair): ``n_matches``, the number of
matching pairs known from the level-pattern counts before any job, lets it fetch the pairs' two key
columns once as Arrow and label them on the driver (up to ``dqkit.primitives.components.DRIVER_EDGES`` pairs;
one Spark job instead of a few per large-star/small-star round, which dominated a 100K-entity run).
Linking's ``struct(s, k)`` ids take the same driver route (structs are encoded field by field).
Larger match sets and key types whose Arrow order could differ from Spark's take the distributed
rounds.
"""
from __future__ import annotations

from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from dqkit.dedup import _blocking as B
from dqkit.runtime.sparkutil import col

__all__ = ["cluster_records", "CLUSTER"]

_K = "_dq_k"
CLUSTER = "cluster_id"


def cluster_records(records: DataFrame, key: str, matches: Any,
                    sources: tuple[str, str] | None = None, n_matches: int | None = None) -> DataFrame:
    """``(key, cluster_id)`` for every record: the connected components of the ``matches`` edges
    (two key columns), each named by its smallest key; a record without a match is its own cluster.
    ``n_matches`` (the number of edges, when known without a job) lets ``dqkit.primitives.components`` (the
    implementation repair uses) fetch them to the driver without counting them first.

    Linking (``sources``; ``records`` has a ``source`` column and the edges are ids ``struct(s, k)``):
    ``(source, key, cluster_id)``, ``cluster_id`` the smallest record of the component (left table
    first, then by key) as ``"<source>:<key>"``, unique across both tables.

    ``matches`` may also be the Arrow table ``(node, component)`` of matches already labelled on the
    driver (dedup's driver route, ``dqkit.dedup._driver``, one table only, by the same
    ``dqkit.primitives.components.label_components``; None: no match): sent to Spark as it is."""
    import pyarrow as pa

    from dqkit.primitives.components import components_frame, connected_components

    if matches is None or isinstance(matches, pa.Table):
        assert sources is None, "linking takes the Spark route"
        comps = components_frame(records.sparkSession, matches, records.schema[key].dataType)
    else:
        a, b = matches.columns[:2]
        comps = connected_components(matches.select(col(a).alias("src"), col(b).alias("dst")), n_edges=n_matches)
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
