"""Daisy's probabilistic data model (R5–R11) on Spark DataFrames.

Representation (the choice, written down once):

* A probabilistic table is the base table with **every original column kept as it is, under its own
  name** (they are the ``orig_`` columns of the spec's suggestion: provenance stays queryable with
  plain SQL, R10), plus

  - ``_dq_tid``: the tuple id (the user's key as text, or dqkit's deterministic content id);
  - ``_dq_cand_<col>`` for every rule attribute: ``NULL`` for a cell no cleaning changed, else
    ``array<struct<world, kind, value, op, p, support, n, source>>`` (``CAND_TYPE``);
  - ``_dq_checked``: the names of the rules that have already checked the tuple (R19). FD checks are
    recorded on tuples of dirty lhs groups only: the group statistics (R20) prove that the others
    violate no FD, so they never need a check.

* Storage: the engine keeps only a *delta* (the tuples with a candidate or a check) and shows the
  table as the base left-joined with it (``Daisy.table``), so an update costs the delta, not the table.

* One candidate: ``world`` (the candidate pair / possible world it belongs to, R6), ``kind``
  (``value`` or ``range``), ``value`` (the value as text, or the bound of a range), ``op`` (the range
  operator, ``<``, ``<=``, ``>``, ``>=`` or ``!=``; NULL for a value), ``p = support / n`` (R7:
  within one cell and one world the ``p`` sum to 1), ``support`` (how many tuples support it) and
  ``n`` (the size of the supporting set, the union over the rules, R27), ``source`` (``fd`` or the
  DC's name, so a rule's candidates can be replaced without touching another's).

* Worlds. ``A`` is the world where every FD keeps its lhs and its rhs becomes probabilistic;
  ``B:<lhs>`` the world where an FD with that lhs keeps its rhs and the lhs becomes probabilistic
  (merged over the FDs sharing that lhs); ``<dc>:<attrs>`` the world where a DC's atoms on those
  attributes are inverted (R24/R25). A cell with no candidate in a world of its tuple holds its
  original value, certainly, in that world. A world whose distribution is the original value alone is
  never materialised (R6). An untouched tuple has the one world ``A``.

* Supporting tuples are kept as counts (``support``, ``n``) and are recomputable as a set: for an FD
  rhs candidate c of tuple t they are the tuples with t's lhs and rhs c over the **original** values
  (which are kept), see ``Daisy.supporting_tuples``. Storing ids per candidate would cost a group's
  size per cell (an FD lhs world over a popular rhs is thousands of ids); the counts and the kept
  originals give the same merges (union counted once, R27/R28).

Query semantics over it (R12, Table 4(e)): a predicate on a cell may hold iff the original value or
some candidate, in any world, satisfies it; a range candidate satisfies it when the two ranges meet
(over a dense domain). AND/OR combine these per-predicate answers, so a tuple qualifies when each
conjunct can hold in some world (the paper returns t2 of Table 4 for City = LA through world A and
joins it through world B's Zip).
"""
from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from typing import Any

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql import types as T

from dqkit.runtime.sparkutil import col

TID = "_dq_tid"
CHECKED = "_dq_checked"
CAND_PREFIX = "_dq_cand_"
WORLD_RHS = "A"

CAND_STRUCT = T.StructType([
    T.StructField("world", T.StringType()), T.StructField("kind", T.StringType()),
    T.StructField("value", T.StringType()), T.StructField("op", T.StringType()),
    T.StructField("p", T.DoubleType()), T.StructField("support", T.LongType()),
    T.StructField("n", T.LongType()), T.StructField("source", T.StringType())])
CAND_TYPE = T.ArrayType(CAND_STRUCT)

__all__ = ["TID", "CHECKED", "CAND_PREFIX", "CAND_TYPE", "CAND_STRUCT", "cand_col", "world_of_lhs",
           "possible", "possible_values", "range_meets", "candidate_text", "cell_worlds", "format_world",
           "most_probable", "fraction"]


def cand_col(column: str) -> str:
    """Name of the candidate column of ``column``."""
    return CAND_PREFIX + column


def world_of_lhs(lhs: Sequence[str]) -> str:
    """The world label of an FD lhs: ``B:zip`` (``B:a,b`` for several attributes)."""
    return "B:" + ",".join(lhs)


def _cmp(left: Column, op: str, right: Column) -> Column:
    return {"=": left == right, "!=": left != right, "<": left < right, "<=": left <= right,
            ">": left > right, ">=": left >= right}[op]


def range_meets(rop: Column, bound: Column, qop: str, v: Column) -> Column:
    """Does the range ``{x : x rop bound}`` meet ``{x : x qop v}`` (dense, ordered domain)?"""
    if qop == "=":
        return (F.when(rop == "<", v < bound).when(rop == "<=", v <= bound).when(rop == ">", v > bound)
                .when(rop == ">=", v >= bound).when(rop == "!=", v != bound).otherwise(F.lit(False)))
    if qop in ("<", "<="):  # unbounded below: ranges < b, <= b and != b always meet it
        strict = qop == "<"
        return (F.when(rop.isin("<", "<=", "!="), F.lit(True))
                .when(rop == ">", v > bound)
                .when(rop == ">=", (v > bound) if strict else (v >= bound)).otherwise(F.lit(False)))
    if qop in (">", ">="):
        strict = qop == ">"
        return (F.when(rop.isin(">", ">=", "!="), F.lit(True))
                .when(rop == "<", v < bound)
                .when(rop == "<=", (v < bound) if strict else (v <= bound)).otherwise(F.lit(False)))
    return F.lit(True)  # != v meets every range


def possible(column: str, type_name: str, op: str, value: Any, prefix: str = "") -> Column:
    """R12: may ``column op value`` hold for the cell? (original or any candidate in any world)."""
    v = F.lit(value)
    orig = F.coalesce(_cmp(col(prefix + column), op, v), F.lit(False))
    cands = col(prefix + cand_col(column))
    typed = lambda s: s.cast(type_name)  # noqa: E731 - candidate text back to the column's type

    def one(c: Column) -> Column:
        return F.coalesce(F.when(c["kind"] == "value", _cmp(typed(c["value"]), op, v))
                          .otherwise(range_meets(c["op"], typed(c["value"]), op, v)), F.lit(False))
    return orig | F.coalesce(F.exists(cands, one), F.lit(False))


def possible_values(column: str, prefix: str = "") -> Column:
    """Every value the cell may take (original and value candidates) as text: the keys a
    probabilistic equi-join matches on (R13)."""
    orig = F.array(col(prefix + column).cast("string"))
    cands = F.transform(F.filter(F.coalesce(col(prefix + cand_col(column)), F.array().cast(CAND_TYPE)),
                                 lambda c: c["kind"] == "value"), lambda c: c["value"])
    return F.array_distinct(F.concat(F.filter(orig, lambda x: x.isNotNull()), cands))


# ------------------------------------------------------------------------- driver-side (bounded rows)
def fraction(c: Any) -> Fraction:
    """The exact probability of a candidate row (``support / n``)."""
    return Fraction(int(c["support"]), int(c["n"]))


def candidate_text(c: Any) -> str:
    """``<2000`` for a range candidate, the value for a value candidate."""
    return f"{c['op']}{c['value']}" if c["kind"] == "range" else str(c["value"])


def _pct(p: float) -> str:
    s = f"{100 * p:.0f}"
    return f"{s}%"


def cell_worlds(cands: Sequence[Any] | None) -> dict[str, list[Any]]:
    """Candidates of one cell grouped by world, each list by decreasing probability then text."""
    out: dict[str, list[Any]] = {}
    for c in cands or []:
        out.setdefault(c["world"], []).append(c)
    for w in out:
        out[w].sort(key=lambda c: (-float(c["p"]), candidate_text(c)))
    return out


def format_world(original: Any, cands: Sequence[Any] | None, world: str) -> str:
    """The cell in one world as ``value p%, value p%`` (the original value alone when certain)."""
    w = cell_worlds(cands).get(world)
    if not w:
        return "NULL" if original is None else str(original)
    return ", ".join(f"{candidate_text(c)} {_pct(float(c['p']))}" for c in w)


def most_probable(original: Any, cands: Sequence[Any] | None, worlds: Sequence[str]) -> tuple[str | None, float]:
    """DaisyP (R43): the most probable value of a cell, worlds weighted equally (the paper gives no
    pair probabilities); a cell without candidates in a world holds its original there. Range
    candidates are not values, so they never win; ties go to the original, then to the smaller text.
    Returns (value as text, its probability)."""
    orig = None if original is None else str(original)
    ws = list(worlds) or [WORLD_RHS]
    by = cell_worlds(cands)
    score: dict[str | None, float] = {}
    for w in ws:
        cs = by.get(w)
        if not cs:
            score[orig] = score.get(orig, 0.0) + 1.0 / len(ws)
            continue
        for c in cs:
            if c["kind"] == "value":
                score[c["value"]] = score.get(c["value"], 0.0) + float(c["p"]) / len(ws)
    if not score:
        return orig, 1.0
    top = max(score.values())
    winners = sorted([k for k, v in score.items() if abs(v - top) < 1e-12], key=lambda k: (k != orig, "" if k is None else k))
    return winners[0], top
