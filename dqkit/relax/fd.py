"""clean_σ for FDs (Daisy §4.1, Algorithm 1, R15–R20): group statistics, relaxation, candidates.

* ``FDStats``: the statistics precomputed once per FD (R20, §5.2.3): the co-occurrence counts
  ``(X, Y) -> count`` over the original values, the dirty lhs groups (more than one distinct rhs) and
  the tuples in them. Relaxation and cleaning only ever read dirty tuples: a tuple of a clean group
  neither violates the FD nor brings a new value into the relaxed result.
* ``relax``: Algorithm 1 as a loop of semi-joins. Each round adds the unvisited dirty tuples that share
  an lhs value (and, for lhs filters, an rhs value) with the tuples added by the previous round; for an
  lhs filter it runs to the fixpoint (R15), for an rhs-only filter it stops after one lhs round
  (R16, Lemma 4.3). A filter on no attribute of the FD takes one round of both.
* ``fd_candidates``: the candidate cells of a set of tuples under every FD of the table, merged
  (R8, R9, R27): world ``A`` gives each rhs attribute Y the distribution of Y over the tuples sharing
  the lhs of *any* FD with rhs Y (the union counted once, P(Y | X1 ∪ X2)); world ``B:<X>`` gives the
  lhs X the distribution of X over the tuples sharing the rhs of any FD with lhs X. Counts are over
  the whole table's original values (Example 4.4: t2's Zip uses t4), so cleaning a tuple gives the
  same cell whenever, and in whatever order, it happens (R28, R39, AT-10).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from dqkit.relax.model import CAND_TYPE, TID, WORLD_RHS, world_of_lhs
from dqkit.rules import FunctionalDependency
from dqkit.runtime.sparkutil import checkpoint, checkpoint_on_read, col
from dqkit.primitives.violations import not_null

C = "_dq_c"


@dataclass
class FDStats:
    """Precomputed statistics of one single-rhs FD over the original values (R20)."""

    rule: FunctionalDependency
    pairs: DataFrame  # X..., Y, _dq_c
    dirty: DataFrame  # TID, X..., Y: the tuples of dirty lhs groups
    dirty_tuples: int = 0
    dirty_groups: int = 0
    mean_candidates: float = 0.0  # distinct rhs values per dirty group (the cost model's p)
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def lhs(self) -> list[str]:
        return list(self.rule.lhs)

    @property
    def rhs(self) -> str:
        return self.rule.rhs[0]


def single_rhs(fds: Sequence[FunctionalDependency]) -> list[FunctionalDependency]:
    """R1: ``X -> Y1, Y2`` as ``X -> Y1`` and ``X -> Y2`` (names ``rule[Y1]``...)."""
    out = []
    for fd in fds:
        if len(fd.rhs) == 1:
            out.append(fd)
        else:
            out += [FunctionalDependency(f"{fd.name}[{r}]", fd.lhs, (r,), fd.text) for r in fd.rhs]
    return out


def compute_stats(rule: FunctionalDependency, base: DataFrame, types: dict[str, str]) -> FDStats:
    """Group statistics of ``rule`` (one aggregation job for the summary numbers)."""
    lhs, rhs = list(rule.lhs), rule.rhs[0]
    nn = base.where(not_null(lhs + [rhs], types))
    # both kept by the first job that reads them whole: the summary below (pairs), relaxation (dirty)
    pairs = checkpoint_on_read(nn.groupBy(*[col(c) for c in lhs], col(rhs)).agg(F.count(F.lit(1)).alias(C)))
    groups = pairs.groupBy(*[col(c) for c in lhs]).agg(F.sum(C).alias("_dq_n"), F.count(F.lit(1)).alias("_dq_nd"))
    dirty_groups = groups.where(F.col("_dq_nd") > 1)
    dirty = (base.select(TID, *[col(c) for c in lhs], col(rhs)).where(not_null(lhs + [rhs], types))
             .join(dirty_groups.select(*[col(c) for c in lhs]), on=lhs, how="left_semi"))
    dirty = checkpoint_on_read(dirty)
    row = dirty_groups.agg(F.count(F.lit(1)).alias("g"), F.sum("_dq_n").alias("t"),
                           F.avg("_dq_nd").alias("p")).collect()[0]
    return FDStats(rule, pairs, dirty, int(row["t"] or 0), int(row["g"] or 0), float(row["p"] or 0.0))


def relax(stats: FDStats, base: DataFrame, answer: DataFrame, mode: str, trace: list[dict[str, Any]],
          sample: int = 20) -> DataFrame:
    """Algorithm 1: the answer's tuples plus the correlated dirty tuples (TID frame, persisted).

    ``mode``: ``"fixpoint"`` (lhs filter: lhs and rhs rounds until nothing is added), ``"lhs-once"``
    (rhs filter: one lhs round) or ``"once"`` (no filter on the FD: one round of both). Each round
    appends ``{rule, iteration, added, sample}`` to ``trace`` (the iteration that adds nothing too).
    """
    lhs, rhs = stats.lhs, stats.rhs
    d = stats.dirty
    relaxed = answer.select(TID)  # a union of checkpointed pieces: a short plan
    if set(lhs) | {rhs} <= set(answer.columns):  # the answer carries its rule attributes: no table read
        frontier = answer.select(TID, *[col(c) for c in lhs], col(rhs))
    else:
        frontier = base.join(relaxed, TID, "left_semi").select(TID, *[col(c) for c in lhs], col(rhs))
    it = 0
    while True:
        it += 1
        # the frontier's values are at most as many as its tuples: broadcast them, scan the dirty tuples once
        # (flags from two broadcast left joins: no shuffle of the dirty tuples, no duplicate to remove)
        kx = frontier.select(*[col(c) for c in lhs]).distinct().withColumn("_dq_fx", F.lit(True))
        found = d.join(F.broadcast(kx), on=lhs, how="left")
        hit = F.col("_dq_fx").isNotNull()
        if mode != "lhs-once":
            ky = frontier.select(col(rhs)).distinct().withColumn("_dq_fy", F.lit(True))
            found = found.join(F.broadcast(ky), on=[rhs], how="left")
            hit = hit | F.col("_dq_fy").isNotNull()
        found = found.where(hit).select(TID, *[col(c) for c in lhs], col(rhs))
        extra = checkpoint_on_read(found.join(F.broadcast(relaxed), TID, "left_anti"))  # kept by the sample's sort
        rows = extra.select(TID).orderBy(TID).limit(sample + 1).collect()
        added = extra.count() if len(rows) > sample else len(rows)  # a second job only past the sample
        trace.append({"rule": stats.rule.name, "iteration": it, "added": added,
                      "sample": [r[0] for r in rows[:sample]]})
        if added == 0:
            break
        relaxed = relaxed.unionByName(extra.select(TID))
        if mode != "fixpoint":
            break
        frontier = extra
    return relaxed


def _union_distribution(targets: DataFrame, base: DataFrame, conds: list[list[str]], target: list[str],
                        types: dict[str, str], pairs: DataFrame | None = None) -> DataFrame:
    """(TID, target..., _dq_c, _dq_n): the distribution of ``target`` over the tuples sharing any of
    the condition attribute sets with each tuple, every supporting tuple counted once (R27).

    ``pairs``: the FD's precomputed co-occurrence counts (R20) when one FD alone gives the condition;
    they are the counts a group-by of the table would give, so the table is not read again."""
    if len(conds) == 1:
        cnd = conds[0]
        if pairs is not None:
            counts = pairs.select(*[col(c) for c in cnd + target], C)
        else:
            counts = (base.where(not_null(cnd + target, types))
                      .groupBy(*[col(c) for c in cnd + target]).agg(F.count(F.lit(1)).alias(C)))
        dist = targets.select(TID, *[col(c) for c in cnd]).join(counts, on=cnd).select(TID, *[col(c) for c in target], C)
    else:
        parts = []
        for cnd in conds:
            other = base.where(not_null(cnd + target, types)).select(
                F.col(TID).alias("_dq_t2"), *[col(c).alias("_dq_k_" + c) for c in cnd], *[col(c) for c in target])
            me = targets.select(TID, *[col(c).alias("_dq_k_" + c) for c in cnd])
            parts.append(me.join(other, on=["_dq_k_" + c for c in cnd]).select(TID, "_dq_t2", *[col(c) for c in target]))
        u = parts[0]
        for p in parts[1:]:
            u = u.unionByName(p)
        dist = u.distinct().groupBy(TID, *[col(c) for c in target]).agg(F.count(F.lit(1)).alias(C))
    return dist.withColumn("_dq_n", F.sum(C).over(Window.partitionBy(TID)))


def fd_candidates(fds: Sequence[FunctionalDependency], stats: dict[str, FDStats], base: DataFrame,
                  clean: DataFrame, types: dict[str, str]) -> tuple[DataFrame, DataFrame]:
    """Candidates of the tuples in ``clean`` (TID frame) under every FD of the table, merged.

    Returns ``(cells, cleaned)``: ``cells`` has one row per (TID, attr, world, candidate) with
    ``value, support, n`` and ``cleaned`` the TIDs whose FD cells were recomputed (the dirty ones).
    """
    sb = base.join(clean, TID, "left_semi")  # read only for several FDs sharing a side (the union of R27)
    dirty_of = {fd.name: stats[fd.name].dirty.join(clean, TID, "left_semi") for fd in fds}
    rows: list[DataFrame] = []

    def add(dist: DataFrame, targets: DataFrame, target: list[str], world: str) -> None:
        for a in target:
            marg = dist.groupBy(TID, col(a)).agg(F.sum(C).alias("support"), F.first("_dq_n").alias("n"))
            orig = targets.select(TID, col(a).cast("string").alias("_dq_orig"))
            marg = marg.join(orig, TID)
            rows.append(marg.select(TID, F.lit(a).alias("attr"), F.lit(world).alias("world"),
                                    col(a).cast("string").alias("value"), "support", "n", "_dq_orig"))

    by_rhs: dict[str, list[FunctionalDependency]] = {}
    by_lhs: dict[tuple[str, ...], list[FunctionalDependency]] = {}
    for fd in fds:
        by_rhs.setdefault(fd.rhs[0], []).append(fd)
        by_lhs.setdefault(tuple(fd.lhs), []).append(fd)
    def side(rs: list[FunctionalDependency]) -> tuple[DataFrame, DataFrame | None]:
        if len(rs) == 1:  # one FD: its dirty tuples carry the attributes, its pairs the counts
            return dirty_of[rs[0].name], stats[rs[0].name].pairs
        return sb.join(_union_ids([dirty_of[r.name].select(TID) for r in rs]), TID, "left_semi"), None

    for y, rs in by_rhs.items():
        targets, pairs = side(rs)
        dist = _union_distribution(targets, base, [list(r.lhs) for r in rs], [y], types, pairs)
        add(dist, targets, [y], WORLD_RHS)
    for x, rs in by_lhs.items():
        targets, pairs = side(rs)
        dist = _union_distribution(targets, base, [[r.rhs[0]] for r in rs], list(x), types, pairs)
        add(dist, targets, list(x), world_of_lhs(x))
    cells = rows[0]
    for r in rows[1:]:
        cells = cells.unionByName(r)
    w = Window.partitionBy(TID, "attr", "world")
    cells = (cells.withColumn("_dq_k", F.count(F.lit(1)).over(w))
             .where(~((F.col("_dq_k") == 1) & (F.col("value") == F.col("_dq_orig"))))  # R6: trivial worlds
             .select(TID, "attr", "world", F.lit("value").alias("kind"), "value",
                     F.lit(None).cast("string").alias("op"), "support", "n", F.lit("fd").alias("source")))
    cleaned = _union_ids([d.select(TID) for d in dirty_of.values()])
    return cells, cleaned


def _union_ids(frames: Sequence[DataFrame]) -> DataFrame:
    out = frames[0]
    for f in frames[1:]:
        out = out.unionByName(f)
    return out.distinct() if len(frames) > 1 else out


def _dist_array(counts: DataFrame, by: list[str], value: str, world: str, name: str) -> DataFrame:
    """(by..., name): per group of ``by``, the distribution of ``value`` as candidates of ``world``
    (support = co-occurrence count, n = the group's total), for groups with more than one value only:
    a one-value distribution is the tuple's own value, which R6 never materialises."""
    g = counts.groupBy(*[col(c) for c in by]).agg(
        F.sum(C).alias("_dq_n"), F.count(F.lit(1)).alias("_dq_k"),
        F.collect_list(F.struct(col(value).cast("string").alias("v"), F.col(C).cast("long").alias("c"))).alias("_dq_l"))
    arr = F.transform(F.col("_dq_l"), lambda x: F.struct(
        F.lit(world).alias("world"), F.lit("value").alias("kind"), x["v"].alias("value"),
        F.lit(None).cast("string").alias("op"), (x["c"].cast("double") / F.col("_dq_n").cast("double")).alias("p"),
        x["c"].alias("support"), F.col("_dq_n").cast("long").alias("n"), F.lit("fd").alias("source")))
    return g.where(F.col("_dq_k") > 1).select(*[col(c) for c in by], F.sort_array(arr).cast(CAND_TYPE).alias(name))


def group_candidates(stats: FDStats) -> dict[str, DataFrame]:
    """The candidate arrays of one FD per group, built once from its co-occurrence counts (R20):
    ``{rhs: (lhs..., arr)}`` for world A of each dirty lhs group and ``{a: (rhs, arr)}`` for world
    ``B:<lhs>`` of each rhs value, per lhs attribute ``a`` (the marginals of a multi-attribute lhs).
    A tuple's cells are then lookups of its lhs and rhs values, as the table-wide counts make them."""
    if "groups" not in stats.extra:
        lhs, rhs, world_b = stats.lhs, stats.rhs, world_of_lhs(stats.lhs)
        out = {rhs: _dist_array(stats.pairs, lhs, rhs, WORLD_RHS, "_dq_arr").transform(checkpoint)}
        for a in lhs:
            counts = stats.pairs.groupBy(col(rhs), col(a)).agg(F.sum(C).alias(C))
            out[a] = _dist_array(counts, [rhs], a, world_b, "_dq_arr").transform(checkpoint)
        stats.extra["groups"] = out
    return stats.extra["groups"]


def single_side(fds: Sequence[FunctionalDependency]) -> bool:
    """True when no two FDs share an rhs or an lhs: each cell then has one FD per world, and its
    candidates are a lookup in that FD's ``group_candidates`` (no union of supporting tuples, R27)."""
    rhs = [fd.rhs[0] for fd in fds]
    lhs = [tuple(fd.lhs) for fd in fds]
    return len(set(rhs)) == len(rhs) and len(set(lhs)) == len(lhs)


def fd_cells_by_lookup(fds: Sequence[FunctionalDependency], stats: dict[str, FDStats], clean: DataFrame,
                       columns: Sequence[str]) -> DataFrame:
    """``(TID, _dq_new_<c>...)`` for the dirty tuples of ``clean`` under FDs that share no side
    (``single_side``): the same candidate arrays ``fd_candidates`` gives, by lookups of each tuple's
    lhs and rhs values in ``group_candidates`` (broadcast: one per dirty group or rhs value)."""
    parts = []
    for fd in fds:
        st = stats[fd.name]
        groups = group_candidates(st)
        t = st.dirty.join(clean, TID, "left_semi")
        t = t.join(F.broadcast(groups[st.rhs].withColumnRenamed("_dq_arr", "_dq_new_" + st.rhs)), on=st.lhs, how="left")
        for a in st.lhs:
            t = t.join(F.broadcast(groups[a].withColumnRenamed("_dq_arr", "_dq_new_" + a)), on=[st.rhs], how="left")
        parts.append(t.select(TID, *[col("_dq_new_" + a) for a in [st.rhs, *st.lhs]]))
    empty = F.array().cast(CAND_TYPE)
    if len(parts) == 1:
        out = parts[0]
    else:
        u = parts[0]
        for p in parts[1:]:
            u = u.unionByName(p, allowMissingColumns=True)
        attrs = [c for c in u.columns if c != TID]
        u = u.groupBy(TID).agg(*[F.flatten(F.collect_list(F.coalesce(col(c), empty))).alias(c) for c in attrs])
        out = u.select(TID, *[F.when(F.size(col(c)) == 0, F.lit(None).cast(CAND_TYPE)).otherwise(col(c)).alias(c)
                              for c in attrs])
    return out.select(TID, *[(col("_dq_new_" + c) if "_dq_new_" + c in out.columns else F.lit(None).cast(CAND_TYPE))
                             .alias("_dq_new_" + c) for c in columns])
