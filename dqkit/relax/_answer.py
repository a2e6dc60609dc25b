"""Why an answer tuple is in a cleaned answer: the probability that it satisfies the query's WHERE and
the candidates of the attributes the WHERE read (Daisy AT-1/AT-2, e.g. t2: City {Los Angeles 2/3,
San Francisco 1/3}, P = 2/3 through world A).

Driver-side and bounded: it reads the few answer rows a person sees. Within one world the cells of a
tuple are independent, so the probability of the WHERE is summed over the joint candidates of the
cells it reads. The worlds of a tuple are alternatives (a rhs repair, a lhs repair) with no
probability of their own in the paper, so a tuple's P is that of its most probable world, and that
world is named. A range candidate (``<2000``) counts as satisfying a comparison it may meet (the same
"possible" reading that put the tuple into the answer), so P is exact for value candidates and an
upper bound where a range is involved.
"""
from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from dqkit.relax.model import WORLD_RHS, candidate_text, cell_worlds, fraction
from dqkit.relax.sql import BoolOp, ColRef, Cond, Pred

#: joint candidate assignments evaluated per world before P is given up on (shown as "?")
MAX_ASSIGNMENTS = 4096


@dataclass(frozen=True)
class _Range:
    op: str
    bound: Any


@dataclass(frozen=True)
class Cell:
    """One cell of an answer tuple as read from the answer: its original value, candidates and the
    worlds of its tuple."""

    original: Any
    cands: Sequence[Any] | None
    worlds: tuple[str, ...]


def frac_text(p: Fraction) -> str:
    """``1``, ``2/3``: exact, as the Daisy spec writes its expected cells."""
    return str(p.numerator) if p.denominator == 1 else f"{p.numerator}/{p.denominator}"


def distribution(cell: Cell, world: str) -> list[tuple[Any, Fraction, str]]:
    """(value or range, probability, text) of a cell in one world; its original, certain, when the
    world gives it no candidate."""
    cs = cell_worlds(cell.cands).get(world)
    if not cs:
        return [(cell.original, Fraction(1), "NULL" if cell.original is None else str(cell.original))]
    out = []
    for c in cs:
        value = _Range(c["op"], c["value"]) if c["kind"] == "range" else c["value"]
        out.append((value, fraction(c), candidate_text(c)))
    return out


def cell_text(cell: Cell, world: str) -> str:
    """A cell in one world: the value alone when certain, else ``value p, value p`` with exact p."""
    dist = distribution(cell, world)
    if len(dist) == 1 and dist[0][1] == 1:
        return dist[0][2]
    return ", ".join(f"{text} {frac_text(p)}" for _, p, text in dist)


def _typed(value: Any, like: Any) -> Any:
    """Candidate text in the type of the query's literal (candidates are stored as text)."""
    if value is None or isinstance(like, str) or not isinstance(value, str):
        return value
    try:
        return type(like)(float(value)) if isinstance(like, int) and not isinstance(like, bool) else type(like)(value)
    except (TypeError, ValueError):
        return value


def _compare(left: Any, op: str, right: Any) -> bool:
    if left is None or right is None:
        return False
    try:
        return {"=": left == right, "!=": left != right, "<": left < right, "<=": left <= right,
                ">": left > right, ">=": left >= right}[op]
    except TypeError:
        return False


def _meets(r: _Range, op: str, v: Any) -> bool:
    """May a value of the range ``{x : x r.op r.bound}`` satisfy ``x op v`` (dense ordered domain)?"""
    b = _typed(r.bound, v)
    if op == "=":
        return _compare(v, r.op, b)
    if op in ("<", "<="):
        return r.op in ("<", "<=", "!=") or (_compare(v, ">", b) if op == "<" or r.op == ">" else _compare(v, ">=", b))
    if op in (">", ">="):
        return r.op in (">", ">=", "!=") or (_compare(v, "<", b) if op == ">" or r.op == "<" else _compare(v, "<=", b))
    return True


def holds(cond: Cond | None, values: Mapping[ColRef, Any]) -> bool:
    """Does ``cond`` hold for one assignment of values (ranges: may it hold)?"""
    if cond is None:
        return True
    if isinstance(cond, Pred):
        v = values[cond.col]
        if isinstance(v, _Range):
            return _meets(v, cond.op, cond.value)
        return _compare(_typed(v, cond.value), cond.op, cond.value)
    results = (holds(i, values) for i in cond.items)
    return all(results) if cond.op == "and" else any(results)


def read_columns(cond: Cond | None) -> list[ColRef]:
    """The columns the WHERE reads, in the order it names them (each once)."""
    out: list[ColRef] = []

    def walk(c: Cond | None) -> None:
        if isinstance(c, Pred):
            if c.col not in out:
                out.append(c.col)
        elif isinstance(c, BoolOp):
            for i in c.items:
                walk(i)

    walk(cond)
    return out


def world_probabilities(cond: Cond | None, cells: Mapping[ColRef, Cell]) -> dict[tuple[str, ...], Fraction | None]:
    """P(WHERE) in every combination of the worlds of the tuples involved (one world per alias); None
    where the joint candidates are too many to enumerate."""
    refs = read_columns(cond)
    aliases = sorted({r.alias for r in refs})
    worlds_of = {a: next((c.worlds for r, c in cells.items() if r.alias == a), (WORLD_RHS,)) or (WORLD_RHS,)
                 for a in aliases}
    out: dict[tuple[str, ...], Fraction | None] = {}
    for combo in itertools.product(*[worlds_of[a] for a in aliases]):
        world = dict(zip(aliases, combo))
        dists = [distribution(cells[r], world[r.alias]) for r in refs]
        size = 1
        for d in dists:
            size *= len(d)
        if size > MAX_ASSIGNMENTS:
            out[combo] = None
            continue
        total = Fraction(0)
        for assignment in itertools.product(*dists):
            p = Fraction(1)
            for _, q, _ in assignment:
                p *= q
            if holds(cond, {r: v for r, (v, _, _) in zip(refs, assignment)}):
                total += p
        out[combo] = total
    return out


def best_world(probs: Mapping[tuple[str, ...], Fraction | None]) -> tuple[Fraction | None, tuple[str, ...]]:
    """The most probable world combination and its P (the first in world order on a tie)."""
    if not probs:
        return Fraction(1), ()
    known = [(p, w) for w, p in probs.items() if p is not None]
    if not known:
        return None, next(iter(probs))
    top = max(p for p, _ in known)
    return top, min(w for p, w in known if p == top)


def p_text(p: Fraction | None, world: tuple[str, ...], worlds: int) -> str:
    """``2/3`` or, for a tuple with alternative worlds, ``2/3 (world A)``; ``?`` when not enumerated."""
    if p is None:
        return "?"
    return frac_text(p) + (f" (world {', '.join(world)})" if worlds > 1 and world else "")
