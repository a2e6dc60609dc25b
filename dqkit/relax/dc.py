"""clean_σ for denial constraints with inequalities (Daisy §4.2, Algorithm 2, R21–R26).

* Detection checks only the query result against the unseen part of the table (R21): the ordered pairs
  (result × unchecked) and (unchecked × result), through ``dqkit.detect.restricted_pairs`` (OCJoin:
  range partitions with min/max pruning, the same join detection uses). Tuples checked by earlier
  queries are left out of both sides (R23: their pairs with everything were checked then); the pairs
  found are stored with the table, so a tuple's candidates always come from all its violations.
* ``tighten`` is the intra-partition pruning of Example 4.8 (R22) and the violation region of the
  Estimate_Errors example (AT-6): the part of one range that can satisfy an atom against another.
* Candidates (R24/R25): for a violation (s, u) of ``not(t1.A op t2.B and ...)``, s's cell A may keep
  its value or move to ``NOT(x op u.B)`` and u's cell B to ``NOT(s.A op y)``. One world per atom for a
  two-atom rule (Example 4.9), one per non-empty proper subset of atoms for three or more (the
  "combinations"). Probabilities are frequencies (the paper: "given the total number of fixes"): over
  the k violations of a tuple, the original counts k and each range counts the violations giving it,
  so one violation gives 50 % / 50 %. Boundaries are strict by default, as the paper prints them
  (``<2000`` for NOT(2000 < y)); ``strict=False`` gives the logical negation (``<=2000``).
* ``estimate_errors`` (Algorithm 2, R26): per range partition of the first atom's attribute, the
  violations estimated from boundary overlaps; ``query_estimate`` turns them into the accuracy
  ``|q_a| / (|q_a| + errors)`` (errata ii: low accuracy triggers full cleaning) and the support (the
  share of partitions already checked, errata iii).
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from dqkit.detect import _merge
from dqkit.relax.model import TID
from dqkit.rules import FLIP, NEGATE, Attr, DenialConstraint, FunctionalDependency
from dqkit.runtime.sparkutil import col

_STRICT = {">=": ">", "<=": "<"}


def as_fd(rule: DenialConstraint) -> FunctionalDependency | None:
    """R3: the FD a DC encodes (``not(t1.X = t2.X and t1.Y != t2.Y)``), or None."""
    if rule.arity != 2 or rule.side_predicates(1) or rule.side_predicates(2):
        return None
    eq, ne = [], []
    for p in rule.predicates:
        if not isinstance(p.right, Attr) or p.left.column != p.right.column:
            return None
        (eq if p.op == "=" else ne if p.op == "!=" else []).append(p.left.column)
        if p.op not in ("=", "!="):
            return None
    if len(ne) != 1 or not eq:
        return None
    return FunctionalDependency(rule.name, tuple(eq), tuple(ne), rule.text or str(rule))


def tighten(op: str, a: tuple[float, float], b: tuple[float, float]) -> tuple[float, float] | None:
    """The part of range ``b`` holding a value y with ``x op y`` for some x in range ``a`` (None: empty).

    AT-5: ``tighten("<", (1500, 1750), (1000, 1750)) == (1500, 1750)``; AT-6: ``tighten(">", (0.3, 0.4),
    (0.25, 0.5)) == (0.25, 0.4)``."""
    lo, hi = b
    if op in ("<", "<="):
        lo = max(lo, a[0])
    elif op in (">", ">="):
        hi = min(hi, a[1])
    elif op == "=":
        lo, hi = max(lo, a[0]), min(hi, a[1])
    if lo > hi:
        return None
    return lo, hi


def inverted(op: str, role: int, strict: bool) -> str:
    """The range operator that falsifies ``t1.A op t2.B`` for the cell of tuple ``role`` (1 or 2)."""
    neg = NEGATE[op] if role == 1 else NEGATE[FLIP[op]]
    return _STRICT.get(neg, neg) if strict else neg


def worlds_of(rule: DenialConstraint) -> list[tuple[int, ...]]:
    """Atom subsets with a world: single atoms for two atoms, every non-empty proper subset beyond (R25)."""
    m = len(rule.cross_predicates)
    if m <= 2:
        return [(i,) for i in range(m)]
    return [s for k in range(1, m) for s in itertools.combinations(range(m), k)]


def dc_candidates(rule: DenialConstraint, pairs: DataFrame, base: DataFrame, targets: DataFrame,
                  strict: bool = True) -> DataFrame:
    """Candidate rows (TID, attr, world, kind, value, op, support, n, source) of the tuples in
    ``targets`` from all stored violating pairs ``(t1, t2)`` of ``rule``."""
    atoms = list(rule.cross_predicates)
    cols = list(rule.columns)
    a = base.select(F.col(TID).alias("t1"), *[col(c).alias("a_" + c) for c in cols])
    b = base.select(F.col(TID).alias("t2"), *[col(c).alias("b_" + c) for c in cols])
    v = pairs.join(a, "t1").join(b, "t2")
    elems = []
    for subset in worlds_of(rule):
        for role in (1, 2):
            me, other = ("t1", "t2") if role == 1 else ("t2", "t1")
            attrs = []
            for i in subset:
                p = atoms[i]
                mine = p.left.column if role == 1 else p.right.column  # type: ignore[union-attr]
                theirs = p.right.column if role == 1 else p.left.column  # type: ignore[union-attr]
                attrs.append((mine, theirs, inverted(p.op, role, strict)))
            world = f"{rule.name}:" + "+".join(dict.fromkeys(m for m, _, _ in attrs))
            for mine, theirs, iop in attrs:
                mp, tp = ("a_", "b_") if role == 1 else ("b_", "a_")
                kind = "value" if iop == "=" else "range"
                elems.append(F.struct(F.col(me).alias("tid"), F.lit(mine).alias("attr"), F.lit(world).alias("world"),
                                      F.lit("value").alias("kind"), col(mp + mine).cast("string").alias("value"),
                                      F.lit(None).cast("string").alias("op")))
                elems.append(F.struct(F.col(me).alias("tid"), F.lit(mine).alias("attr"), F.lit(world).alias("world"),
                                      F.lit(kind).alias("kind"), col(tp + theirs).cast("string").alias("value"),
                                      (F.lit(None).cast("string") if kind == "value" else F.lit(iop)).alias("op")))
    e = v.select(F.explode(F.array(*elems)).alias("e")).select("e.*").withColumnRenamed("tid", TID)
    e = e.join(targets, TID, "left_semi")
    g = e.groupBy(TID, "attr", "world", "kind", "value", "op").agg(F.count(F.lit(1)).alias("support"))
    from pyspark.sql import Window

    g = g.withColumn("n", F.sum("support").over(Window.partitionBy(TID, "attr", "world")))
    # the original and a value candidate equal to it are the same candidate
    return g.groupBy(TID, "attr", "world", "kind", "value", "op").agg(F.sum("support").alias("support"),
                                                                      F.first("n").alias("n")).select(
        TID, "attr", "world", "kind", "value", "op", F.col("support").cast("long"), F.col("n").cast("long"),
        F.lit(rule.name).alias("source"))


# ---------------------------------------------------------------------------------- Estimate_Errors
@dataclass(frozen=True)
class RangeStats:
    """One range partition of the table on the first atom's attribute, with min/max of each atom attribute."""

    index: int
    rows: int
    mins: tuple[float, ...]
    maxs: tuple[float, ...]


def estimate_errors(rule: DenialConstraint, base: DataFrame, partitions: int = 4) -> tuple[list[RangeStats], dict[int, float]]:
    """Algorithm 2's Estimate_Errors (R26): split the table into ``partitions`` ranges of the first
    atom's attribute and estimate, per range, the violations with every range whose boundaries
    overlap: ``rows_i * rows_j * prod_atoms(share of range j's boundary region that can violate)``,
    accumulated (errata i: ``+=``). One aggregation job; only per-range statistics reach the driver."""
    atoms = [p for p in rule.cross_predicates if p.op != "!="]
    first = atoms[0].left.column
    attrs = list(dict.fromkeys([p.left.column for p in atoms] + [p.right.column for p in atoms]))  # type: ignore[union-attr]
    nn = base.where(F.lit(True))
    for c in attrs:
        nn = nn.where(col(c).isNotNull())
    qs = nn.agg(F.percentile_approx(col(first).cast("double"), [i / partitions for i in range(1, partitions)], 10000)
                .alias("q")).collect()[0]["q"] or []
    bounds = sorted(set(x for x in qs if x is not None))
    bucket = F.lit(0)
    for x in bounds:
        bucket = bucket + (col(first).cast("double") >= F.lit(x)).cast("int")
    aggs = [F.count(F.lit(1)).alias("n")]
    for c in attrs:
        aggs += [F.min(col(c).cast("double")).alias("min_" + c), F.max(col(c).cast("double")).alias("max_" + c)]
    rows = nn.groupBy(bucket.alias("b")).agg(*aggs).orderBy("b").collect()
    ranges = [RangeStats(int(r["b"]), int(r["n"]), tuple(r["min_" + c] for c in attrs), tuple(r["max_" + c] for c in attrs))
              for r in rows]
    pos = {c: i for i, c in enumerate(attrs)}
    vio: dict[int, float] = {r.index: 0.0 for r in ranges}
    for r1 in ranges:
        for r2 in ranges:
            if r1.index == r2.index:
                continue
            est = float(r1.rows) * float(r2.rows)
            for p in atoms:
                la, ra = pos[p.left.column], pos[p.right.column]  # type: ignore[union-attr]
                a = (r1.mins[la], r1.maxs[la])
                b = (r2.mins[ra], r2.maxs[ra])
                if not _merge.possible(p.op, a[0], a[1], b[0], b[1]):
                    est = 0.0
                    break
                region = tighten(p.op, a, b)
                width = b[1] - b[0]
                est *= 1.0 if width <= 0 or region is None else max(0.0, region[1] - region[0]) / width
            vio[r1.index] += est
    return ranges, vio


def query_estimate(ranges: list[RangeStats], vio: dict[int, float], answer_rows: int, lo: float | None,
                   hi: float | None, checked: set[int]) -> dict[str, Any]:
    """Algorithm 2, lines 5–8 for one query: the ranges the answer overlaps (by its min/max on the first
    attribute), the errors estimated in the *other* ranges that conflict with them, the accuracy
    ``|q_a| / (|q_a| + errors)`` and the support (share of ranges already checked)."""
    hit = [r.index for r in ranges if lo is not None and hi is not None and not (r.maxs[0] < lo or r.mins[0] > hi)]
    errors = sum(v for i, v in vio.items() if i not in hit and i not in checked)
    accuracy = answer_rows / (answer_rows + errors) if (answer_rows + errors) > 0 else 1.0
    total = len(ranges)
    support = len(set(checked) | set(hit)) / total if total else 1.0
    return {"ranges": hit, "errors": errors, "accuracy": accuracy, "support": support}


def hypergeometric_extra_iteration(n: int, violations: int, relaxed: int) -> float:
    """Lemma 4.6 (R40): probability that Algorithm 1 needs one more iteration,
    ``1 - C(n - #vio, |A_R|) / C(n, |A_R|)``."""
    if relaxed > n:
        raise ValueError("the relaxed result cannot exceed the dataset")
    return 1.0 - math.comb(n - violations, relaxed) / math.comb(n, relaxed)


def relaxed_size_bound(dataset: dict[str, dict[Any, int]], result: dict[str, dict[Any, int]]) -> int:
    """Lemma 4.7 (R41): ``sum_i (sum_j D_ij - sum_j Dq_ij)`` over the FD attributes, where j ranges over
    the values of attribute i in the query result; ``dataset``/``result`` map attribute -> value -> count."""
    total = 0
    for attr, dq in result.items():
        d = dataset.get(attr, {})
        total += sum(d.get(v, 0) for v in dq) - sum(dq.values())
    return total
