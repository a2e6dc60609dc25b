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
cut with ``dqkit.runtime.sparkutil.checkpoint`` (local, or reliable on a cluster) every few rounds, so the plan stays small whatever the number of rounds.
The convergence test is one small aggregate per round: the edges form stars (every node either has
exactly one out-edge, to a node with none, or none at all).

Graphs that fit take the driver route instead (one implementation, shared by repair and dedup):
when the edges (their rows, else their distinct oriented pairs) number at most ``local_limit``
(default ``DRIVER_EDGES`` = 4,000,000), they are fetched once as Arrow, each end is dictionary-encoded into a dense code in Spark's own order
(structs field by field, so ``(tid, attr)`` cells are encoded soundly), labelled by
``scipy.sparse.csgraph.connected_components``, and the ``(node, component)`` frame goes back to Spark
as one Arrow table; the component is the node with the smallest code, i.e. the smallest node by
Spark's ordering, as on the distributed path. Each large-star/small-star round costs a few Spark jobs
whatever the size, so up to the limit the driver route is several times faster. The edge count is
known before the fetch: the caller's ``n_edges`` (dedup knows its matching pairs from the pattern
counts), else one count of the rows of ``edges`` (no column is read: Parquet answers from its
footers); both count duplicates, both directions and NULL ends, and the given
edges are fetched as they are, without a shuffle (a ``distinct`` of 3.6M edges cost more than all
the rest). Over the limit, the distinct oriented edges the rounds start from are checkpointed and
counted too (a self-edge counts), and still go to the driver when they fit. The driver holds bounded memory:
at most ``DRIVER_EDGES`` edges reach it, counted before the fetch; measured at 3.56M integer edges,
the Python driver peaked about 240 MB over its idle size (~70 bytes an edge: Arrow ends, codes and
scipy's sparse graph; text nodes add their distinct values once; benchmarks/RESULTS.md).
``local_limit=0`` forces the distributed path. Only key types whose Arrow order and equality are
Spark's take the driver route: integers, booleans, dates, decimals, strings with the default binary
collation, and structs of these; floating-point (NaN, -0.0), binary, arrays, maps, timestamps and
collated strings take the distributed path.

Nodes come only from edges: an isolated node appears in the result only when it is given as a
self-edge ``(v, v)``. Edges with a NULL end are ignored (NULL is not a node).
"""
from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass
from typing import Any

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from dqkit.errors import DqkitError, ParameterError, UnknownColumnError
from dqkit.runtime.sparkutil import checkpoint, col, local_frame

__all__ = ["smallest_member_components", "connected_components", "run_connected_components", "driver_components",
           "components_frame", "label_components", "ComponentsRun", "DRIVER_EDGES"]

_S, _D = "_dq_src", "_dq_dst"


def smallest_member_components(nodes: Iterable[Hashable],
                               edges: Iterable[tuple[Hashable, Hashable]]) -> dict[Hashable, Hashable]:
    """``node -> smallest node of its component`` by union-find, on the driver: for the few nodes of
    incremental dedup's changed part and of a widget's violation graph (no Spark job)."""
    parent: dict[Hashable, Hashable] = {n: n for n in nodes}

    def find(x: Hashable) -> Hashable:
        root = x
        while parent[root] != root:
            root = parent[root]
        while parent[x] != root:
            parent[x], x = root, parent[x]
        return root

    for a, b in edges:
        ra, rb = find(a), find(b)
        if ra != rb:
            if rb < ra:  # type: ignore[operator]
                ra, rb = rb, ra
            parent[rb] = ra
    return {n: find(n) for n in parent}


@dataclass(frozen=True)
class ComponentsRun:
    """The outcome of ``run_connected_components``: the ``components`` DataFrame ``(node, component)``
    and how the run went (``iterations``: large-star/small-star rounds until the stars settled)."""

    components: DataFrame
    iterations: int


#: at most this many distinct edges are labelled on the driver (see the module docstring)
DRIVER_EDGES = 4_000_000
LOCAL_LIMIT = DRIVER_EDGES  # the default ``local_limit``


def connected_components(edges: DataFrame, src: str = "src", dst: str = "dst", *,
                         checkpoint_every: int = 3, max_iterations: int = 100,
                         local_limit: int = LOCAL_LIMIT, n_edges: int | None = None) -> DataFrame:
    """Connected components of the undirected graph ``edges(src, dst)`` as a DataFrame
    ``(node, component)``: one row per node, ``component`` the smallest node of its component (so
    the labelling is deterministic, whatever the partitioning or row order).

    Duplicate edges and both directions of an edge are the same edge; a self-edge ``(v, v)`` makes
    ``v`` a node (its own component when it has no other edge). See ``run_connected_components`` for
    the number of rounds it took.
    """
    return run_connected_components(edges, src, dst, checkpoint_every=checkpoint_every,
                                    max_iterations=max_iterations, local_limit=local_limit,
                                    n_edges=n_edges).components


def run_connected_components(edges: DataFrame, src: str = "src", dst: str = "dst", *,
                             checkpoint_every: int = 3, max_iterations: int = 100,
                             on_iteration: Callable[[int], None] | None = None,
                             local_limit: int = LOCAL_LIMIT, n_edges: int | None = None) -> ComponentsRun:
    """``connected_components`` with the run's statistics (``ComponentsRun``).

    ``checkpoint_every``: cut the lineage with ``checkpoint`` every that many rounds (rounds in
    between are persisted). ``max_iterations``: a safety bound on rounds (O(log² n) are needed).
    ``on_iteration(i)`` is called after round ``i`` (progress). ``local_limit``: a graph of at most
    that many edges (rows, else distinct edges) is labelled on the driver instead (``iterations`` is
    then 0); 0 turns this off.
    ``n_edges``: the number of rows of ``edges`` (or an upper bound) when the caller knows it
    without a job; it spares the count that otherwise decides whether the edges fit on the driver.
    """
    for c in (src, dst):
        if c not in edges.columns:
            raise UnknownColumnError(f"the edge column {c!r} is not in the edges ({', '.join(edges.columns)})",
                                     hint="pass src=... and dst=... naming the two ends of each edge")
    ts, td = edges.schema[src].dataType, edges.schema[dst].dataType
    if ts != td:
        raise ParameterError(f"the edge ends {src!r} ({ts.simpleString()}) and {dst!r} ({td.simpleString()}) "
                             "have different types", hint="cast both ends to one type first")
    if checkpoint_every < 1 or max_iterations < 1 or local_limit < 0 or (n_edges is not None and n_edges < 0):
        raise ParameterError("checkpoint_every and max_iterations must be >= 1, local_limit and n_edges >= 0")

    given = edges.select(col(src).alias(_S), col(dst).alias(_D)).where(
        F.col(_S).isNotNull() & F.col(_D).isNotNull())
    on_driver = local_limit > 0 and _driver_keys(ts)
    if on_driver:
        if n_edges is None:  # an upper bound without a shuffle or even a column read: every row counts
            n_edges = edges.count()
        if n_edges <= local_limit:
            return ComponentsRun(driver_components(given, ts), 0)
    # oriented larger -> smaller; self-edges kept here (they make nodes), dropped from the rounds
    oriented = given.select(F.greatest(_S, _D).alias(_S), F.least(_S, _D).alias(_D)).distinct()
    oriented = oriented.transform(checkpoint)  # the input's lineage is computed once
    if on_driver and oriented.count() <= local_limit:  # fewer distinct edges: counts the checkpoint
        return ComponentsRun(driver_components(oriented, ts), 0)
    nodes = oriented.select(F.col(_S).alias("node")).union(oriented.select(F.col(_D).alias("node"))).distinct()
    current = oriented.where(F.col(_S) != F.col(_D))
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
    """True when Arrow orders and compares values of ``t`` exactly as Spark does, so the driver route
    gives Spark's labelling: integers, booleans, dates, decimals, binary-collated strings and structs of
    these. Not floating point (NaN, -0.0), binary, arrays, maps, timestamps or collated strings."""
    if isinstance(t, T.StructType):
        return all(_driver_keys(f.dataType) for f in t.fields)
    if isinstance(t, T.StringType):
        return getattr(t, "collation", "UTF8_BINARY") == "UTF8_BINARY"
    return isinstance(t, (T.IntegralType, T.BooleanType, T.DateType, T.DecimalType))


def driver_components(edges: DataFrame, node_type: T.DataType) -> DataFrame:
    """``(node, component)`` of the two-column ``edges`` (NULL-free, any orientation, duplicates
    allowed), labelled on the driver from one Arrow fetch and sent back as one Arrow table.

    Only for key types accepted by ``_driver_keys``; the caller bounds the number of edges.
    """
    a, b = edges.columns[:2]
    table = edges.select(col(a).alias("a"), col(b).alias("b")).toArrow()
    labelled = label_components(table.column("a"), table.column("b")) if table.num_rows else None
    return components_frame(edges.sparkSession, labelled, node_type)


def components_frame(spark: Any, labelled: Any, node_type: T.DataType) -> DataFrame:
    """The Arrow table ``(node, component)`` of ``label_components`` (None: no edge) as a Spark
    DataFrame, sent as one Arrow table. Dedup's driver route hands its labelled matches here directly."""
    schema = T.StructType([T.StructField("node", node_type), T.StructField("component", node_type)])
    return local_frame(spark, [], schema) if labelled is None else spark.createDataFrame(labelled, schema)


def label_components(a: Any, b: Any) -> Any:
    """The Arrow table ``(node, component)`` of the edges ``(a[i], b[i])`` (at least one): each end
    dictionary-encoded into a dense code in Spark's order (``_spark_rank``), components by
    ``scipy.sparse.csgraph.connected_components``, the component named by its smallest node."""
    import numpy as np
    import pyarrow as pa
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components as cc

    n = len(a)
    ends = pa.concat_arrays([*_chunks(a), *_chunks(b)])
    codes = _spark_rank(ends) - 1  # dense codes 0..k-1 in Spark's order of the nodes
    k = int(codes.max()) + 1
    # one position of each node among the ends, to recover its value
    where = np.empty(k, dtype=np.int64)
    where[codes] = np.arange(len(codes), dtype=np.int64)
    nodes = ends.take(pa.array(where))
    del ends
    graph = coo_matrix((np.ones(n, dtype=np.bool_), (codes[:n], codes[n:])), shape=(k, k)).tocsr()
    del codes
    _, labels = cc(graph, directed=False)
    del graph
    # codes follow Spark's order, so the first code carrying a label is its component's smallest node
    _, first = np.unique(labels, return_index=True)
    return pa.table({"node": nodes, "component": nodes.take(pa.array(first[labels]))})


def _chunks(x: Any) -> list[Any]:
    import pyarrow as pa

    return list(x.chunks) if isinstance(x, pa.ChunkedArray) else [x]


def _spark_rank(values):
    """Dense ranks (int64, from 1) of an Arrow array in Spark's ascending order; NULL ranks first (0 in
    a struct, where a NULL field sorts before any value as in Spark). Structs rank field by field."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    if pa.types.is_struct(values.type):
        key = np.zeros(len(values), dtype=np.int64)
        for i in range(values.type.num_fields):
            r = _spark_rank(values.field(i))
            width = int(r.max()) + 1 if len(r) else 1
            if int(key.max(initial=0)) >= (2 ** 62) // width:  # keep the mixed-radix key in int64
                key = _spark_rank(pa.array(key))
            key = key * width + r
        rank = _spark_rank(pa.array(key))
        if values.null_count:
            rank[values.is_null().to_numpy(zero_copy_only=False)] = 0
        return rank
    if pa.types.is_boolean(values.type):
        values = values.cast(pa.int8())
    if pa.types.is_integer(values.type) and values.null_count == 0 and len(values):
        # dense integers (row ids): a presence table beats hashing; ranks are the running count
        lo, hi = (int(x.as_py()) for x in pc.min_max(values).values())
        if hi - lo <= 2 * len(values) + 1024:
            offset = values.to_numpy(zero_copy_only=False).astype(np.int64) - lo
            present = np.zeros(hi - lo + 1, dtype=np.int64)
            present[offset] = 1
            return np.cumsum(present)[offset]
    enc = values.dictionary_encode(null_encoding="encode")  # a NULL is one dictionary entry
    order = pc.array_sort_indices(enc.dictionary, null_placement="at_start").to_numpy()
    rank_of = np.empty(len(order), dtype=np.int64)
    rank_of[order] = np.arange(1, len(order) + 1, dtype=np.int64)
    return rank_of[enc.indices.to_numpy()]


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
