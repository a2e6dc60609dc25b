"""Distributed connected components with the DataFrame API only (no RDD, no GraphX, no SparkContext).

BigDansing (§5.1, R28) groups the violation hypergraph into connected components so that each one is
repaired independently; deduplication groups matching pairs into clusters the same way. This module
holds the one implementation, for any edge list whose two ends share an orderable type (integers,
strings, dates, structs such as ``(tid, attr)`` cells).

The algorithm is the alternating large-star / small-star algorithm of Kiveris et al., "Connected
Components in MapReduce and Beyond" (SoCC 2014): edges are kept oriented from the larger node to the
smaller one, each round links every node to the smallest node it can see, and the graph shrinks to one
star per component, centred on the component's smallest node. It needs O(log² n) rounds, also on a
long chain (the worst case of plain min-label propagation). Every round is a window minimum and a
``distinct`` (shuffles, no driver-side state); the edges of a round are persisted and their lineage is
cut with ``dqkit.sparkutil.checkpoint`` (local, or reliable on a cluster) every few rounds, so the plan stays small whatever the number of rounds.
The convergence test is one small aggregate per round: the edges form stars (every node either has
exactly one out-edge, to a node with none, or none at all).

Small graphs take a shortcut: when the distinct edges number at most ``local_limit`` (default
10,000), they are collected (a bounded, counted collect) and labelled on the driver by
``scipy.sparse.csgraph.connected_components``; the component is still the smallest node, taken by
Spark, so both paths give the same labelling. Each large-star/small-star round costs a few Spark jobs
whatever the size, which made small repairs and dedup runs latency-bound; ``local_limit=0`` forces the
distributed path. Floating-point, binary and array nodes always take the distributed path (they are no sound
dictionary keys).

Nodes come only from edges: an isolated node appears in the result only when it is given as a
self-edge ``(v, v)``. Edges with a NULL end are ignored (NULL is not a node).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from dqkit.errors import DqkitError, ParameterError, UnknownColumnError
from dqkit.sparkutil import checkpoint, col

__all__ = ["connected_components", "run_connected_components", "ComponentsRun"]

_S, _D = "_dq_src", "_dq_dst"


@dataclass(frozen=True)
class ComponentsRun:
    """The outcome of ``run_connected_components``: the ``components`` DataFrame ``(node, component)``
    and how the run went (``iterations``: large-star/small-star rounds until the stars settled)."""

    components: DataFrame
    iterations: int


LOCAL_LIMIT = 10_000


def connected_components(edges: DataFrame, src: str = "src", dst: str = "dst", *,
                         checkpoint_every: int = 3, max_iterations: int = 100,
                         local_limit: int = LOCAL_LIMIT) -> DataFrame:
    """Connected components of the undirected graph ``edges(src, dst)`` as a DataFrame
    ``(node, component)``: one row per node, ``component`` the smallest node of its component (so
    the labelling is deterministic, whatever the partitioning or row order).

    Duplicate edges and both directions of an edge are the same edge; a self-edge ``(v, v)`` makes
    ``v`` a node (its own component when it has no other edge). See ``run_connected_components`` for
    the number of rounds it took.
    """
    return run_connected_components(edges, src, dst, checkpoint_every=checkpoint_every,
                                    max_iterations=max_iterations, local_limit=local_limit).components


def run_connected_components(edges: DataFrame, src: str = "src", dst: str = "dst", *,
                             checkpoint_every: int = 3, max_iterations: int = 100,
                             on_iteration: Callable[[int], None] | None = None,
                             local_limit: int = LOCAL_LIMIT) -> ComponentsRun:
    """``connected_components`` with the run's statistics (``ComponentsRun``).

    ``checkpoint_every``: cut the lineage with ``checkpoint`` every that many rounds (rounds in
    between are persisted). ``max_iterations``: a safety bound on rounds (O(log² n) are needed).
    ``on_iteration(i)`` is called after round ``i`` (progress). ``local_limit``: at most that many
    distinct edges are labelled on the driver instead (``iterations`` is then 0); 0 turns this off.
    """
    for c in (src, dst):
        if c not in edges.columns:
            raise UnknownColumnError(f"the edge column {c!r} is not in the edges ({', '.join(edges.columns)})",
                                     hint="pass src=... and dst=... naming the two ends of each edge")
    ts, td = edges.schema[src].dataType, edges.schema[dst].dataType
    if ts != td:
        raise ParameterError(f"the edge ends {src!r} ({ts.simpleString()}) and {dst!r} ({td.simpleString()}) "
                             "have different types", hint="cast both ends to one type first")
    if checkpoint_every < 1 or max_iterations < 1 or local_limit < 0:
        raise ParameterError("checkpoint_every and max_iterations must be >= 1, local_limit >= 0")

    given = edges.select(col(src).alias(_S), col(dst).alias(_D)).where(
        F.col(_S).isNotNull() & F.col(_D).isNotNull())
    nodes = given.select(F.col(_S).alias("node")).union(given.select(F.col(_D).alias("node"))).distinct()
    # oriented larger -> smaller, self-edges dropped (their nodes are kept through ``nodes``)
    current = (given.where(F.col(_S) != F.col(_D))
               .select(F.greatest(_S, _D).alias(_S), F.least(_S, _D).alias(_D)).distinct())
    current = current.transform(checkpoint)
    if local_limit and _driver_keys(ts):
        small = current.limit(local_limit + 1).collect()
        if len(small) <= local_limit:
            return ComponentsRun(_attach(nodes, _local_stars(current, small)), 0)
    held: list[DataFrame] = []  # persisted rounds, released once a later round is materialised
    iterations = 0
    try:
        while True:
            settled = _are_stars(current)  # materialises ``current``
            for frame in held:
                if frame is not current:
                    frame.unpersist()
            held = [f for f in held if f is current]
            if settled:
                break
            if iterations >= max_iterations:
                raise DqkitError(f"connected components did not settle in {max_iterations} rounds",
                                 hint="raise max_iterations (the algorithm needs O(log² n) rounds)")
            if iterations and iterations % checkpoint_every == 0:
                current = current.transform(checkpoint)  # read from the cache: cuts the lineage cheaply
            iterations += 1
            current = _small_star(_large_star(current)).persist()
            held.append(current)
            if on_iteration is not None:
                on_iteration(iterations)
        star = current.transform(checkpoint) if held else current
    finally:
        for frame in held:
            frame.unpersist()
    return ComponentsRun(_attach(nodes, star), iterations)


def _attach(nodes: DataFrame, star: DataFrame) -> DataFrame:
    """Every node with its component: the centre of its star, or itself when it is a centre or alone."""
    leaves = star.select(F.col(_S).alias("node"), F.col(_D).alias("component"))
    return (nodes.join(leaves, on="node", how="left")
            .select("node", F.coalesce(F.col("component"), F.col("node")).alias("component")))


def _driver_keys(t: T.DataType) -> bool:
    """True when values of ``t`` are sound dictionary keys on the driver: not floating point (NaN),
    not binary (bytearray is unhashable), not arrays (lists are unhashable)."""
    if isinstance(t, (T.FloatType, T.DoubleType, T.BinaryType, T.ArrayType, T.MapType)):
        return False
    if isinstance(t, T.StructType):
        return all(_driver_keys(f.dataType) for f in t.fields)
    return True


def _local_stars(current: DataFrame, rows: list) -> DataFrame:
    """The stars of a small edge list, labelled on the driver by scipy; each star's centre (the smallest
    node of its component) is chosen by Spark's own ordering, as on the distributed path."""
    import numpy as np
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components as cc

    index: dict = {}
    ends = np.array([[index.setdefault(r[0], len(index)), index.setdefault(r[1], len(index))] for r in rows],
                    dtype=np.int64).reshape(-1, 2)
    n = len(index)
    graph = coo_matrix((np.ones(len(ends), dtype=np.int8), (ends[:, 0], ends[:, 1])), shape=(n, n))
    _, labels = cc(graph, directed=False)
    node_type = current.schema[_S].dataType
    schema = T.StructType([T.StructField("node", node_type), T.StructField("label", T.LongType())])
    labelled = current.sparkSession.createDataFrame(
        [(node, int(labels[i])) for node, i in index.items()], schema)
    centre = F.min("node").over(Window.partitionBy("label"))
    return (labelled.select(F.col("node").alias(_S), centre.alias(_D))
            .where(F.col(_S) != F.col(_D)))


def _large_star(e: DataFrame) -> DataFrame:
    """Large-star: every node u links each larger neighbour v to m(u) = min(u, neighbours of u)."""
    sym = e.union(e.select(F.col(_D).alias(_S), F.col(_S).alias(_D)))
    m = F.least(F.col(_S), F.min(_D).over(Window.partitionBy(_S)))
    # no distinct here: small-star's window does not mind duplicates, and its output is distinct
    return (sym.select(_S, _D, m.alias("_dq_m")).where(F.col(_D) > F.col(_S))
            .select(F.col(_D).alias(_S), F.col("_dq_m").alias(_D)))


def _small_star(e: DataFrame) -> DataFrame:
    """Small-star: every node u links itself and each smaller neighbour to the smallest of them."""
    m = F.min(_D).over(Window.partitionBy(_S))  # edges point larger -> smaller: min(dst) < u
    w = e.select(_S, _D, m.alias("_dq_m"))
    return (w.where(F.col(_D) != F.col("_dq_m")).select(F.col(_D).alias(_S), F.col("_dq_m").alias(_D))
            .union(w.select(F.col(_S), F.col("_dq_m").alias(_D))).distinct())


def _are_stars(e: DataFrame) -> bool:
    """True when the oriented edges are stars: no node has both an out-edge and an in-edge, and no node
    has out-edges to two different nodes. Then each star is one component, centred on its minimum."""
    ends = (e.select(F.col(_S).alias("n"), F.col(_D).alias("t"), F.lit(1).alias("o"))
            .union(e.select(F.col(_D).alias("n"), F.lit(None).cast(e.schema[_D].dataType).alias("t"),
                            F.lit(0).alias("o"))))
    per = ends.groupBy("n").agg(F.max("o").alias("out"), F.min("o").alias("in_"),
                                F.min("t").alias("lo"), F.max("t").alias("hi"))
    bad = ((F.col("out") == 1) & (F.col("in_") == 0)) | (F.col("lo") != F.col("hi"))
    return not per.agg(F.max(F.coalesce(bad, F.lit(False)))).collect()[0][0]
