"""The changed rows of ``detect --since`` as literal sets in the plan, when few: no broadcast per use.

The change job (``dqkit.detect.since._by_key``) already groups every key of both sides; when at most
``LITERAL_KEYS`` keys changed, the same action also brings them to the driver, with, per changed row and
side, the 64-bit hash of each column tuple its partners are found by (an FD's left-hand side, a DC's
equality columns on t1 and on t2). Every later step is then a filter against literal sets (Spark's
``InSet``: a hash set in the generated code), not a join with a broadcast of the changed keys:

* a side's restriction (the changed rows plus every row that can form a violation with one) is ONE
  filter: the key in the changed keys, or a partner tuple's hash in the changed rows' hashes of the
  tuple it must equal. A hash collision only adds rows (whole blocks), never removes one, and every
  restricted violation is kept only when it touches a changed key, so the lists are exact;
* "touches a changed key" is a filter on ``key1`` and ``key2`` against the changed keys (exact).

The sets reach Spark as SQL text of numbers (keys of an integral type, hashes) or hex byte literals cast
to text (``CAST(X'6869' AS STRING)``, keys of type string): one call into the JVM however many, where
``Column.isin`` makes one per value; no user text is ever parsed as SQL, only digits. Column names go
in quoted (``quote_ident``). A key of another type, or an equality between columns whose values hash
differently (floating point, other type pairs), takes the broadcast route (``None`` from ``plan_probe``).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pyspark.sql import Column
from pyspark.sql import functions as F

from dqkit.rules import FunctionalDependency
from dqkit.runtime.sparkutil import quote_ident

__all__ = ["LITERAL_KEYS", "Probe", "Literal", "plan_probe", "literal_keys"]

#: at most this many changed keys are brought to the driver and used as literal sets (an ``IN`` list of
#: this size parses in well under a second); more take the broadcast route
LITERAL_KEYS = 20_000
_INTEGRAL = ("tinyint", "smallint", "int", "bigint")
#: types whose equal values hash equally (``xxhash64``) and whose ``=`` is plain equality of the value
_HASHABLE = (*_INTEGRAL, "string", "boolean", "date", "timestamp", "timestamp_ntz")


def _common(a: str, b: str) -> str | None:
    """The type both sides of an equality are hashed as, or None when equal values may hash differently."""
    if a == b and (a in _HASHABLE or a.startswith("decimal(")):
        return a
    if a in _INTEGRAL and b in _INTEGRAL:
        return "bigint"
    return None


@dataclass(frozen=True)
class Probe:
    """Which column tuples are hashed per row and how a side's restriction reads them.

    ``tuples[i]``: ``(columns, types)``; ``links``: ``(probe, source)`` pairs of tuple indexes: a row is a
    partner when its ``probe`` tuple's hash is one of the changed rows' ``source`` tuple hashes."""

    tuples: tuple[tuple[tuple[str, ...], tuple[str, ...]], ...]
    links: tuple[tuple[int, int], ...]

    def hash_sql(self, i: int, own: dict[str, str]) -> str:
        """SQL of tuple ``i``'s hash (NULL when a column is NULL: a NULL equals nothing)."""
        cols, types = self.tuples[i]
        q = [quote_ident(c) for c in cols]
        vals = [x if own[c] == t else f"CAST({x} AS {t.upper()})" for x, c, t in zip(q, cols, types)]
        return f"CASE WHEN {' AND '.join(f'{x} IS NOT NULL' for x in q)} THEN xxhash64({', '.join(vals)}) END"

    def hash_columns(self, own: dict[str, str]) -> list[tuple[str, Column]]:
        """``(name, column)`` of every tuple's hash, carried through the change job (``_dq_h{i}``)."""
        return [(f"_dq_h{i}", F.expr(self.hash_sql(i, own))) for i in range(len(self.tuples))]


def plan_probe(rules: list[Any], types: dict[str, str], key: str) -> Probe | None:
    """The probe of ``rules`` (FDs and DCs with equalities, or one-tuple DCs), or None when the key's type
    or an equality's column types cannot be matched by literal sets (the broadcast route is used)."""
    kt = types[key]
    if not (kt in _INTEGRAL or kt == "string"):
        return None
    tuples: list[tuple[tuple[str, ...], tuple[str, ...]]] = []
    links: list[tuple[int, int]] = []

    def index(cols: tuple[str, ...], ts: tuple[str, ...]) -> int:
        if (cols, ts) not in tuples:
            tuples.append((cols, ts))
        return tuples.index((cols, ts))

    for r in rules:
        if isinstance(r, FunctionalDependency):
            lhs = tuple(r.lhs)
            ts = tuple(_common(types[c], types[c]) for c in lhs)
            if None in ts:
                return None
            i = index(lhs, ts)  # type: ignore[arg-type]
            links.append((i, i))
            continue
        if r.arity == 1:
            continue
        eqs = [(p.left.column, p.right.column) if p.left.tuple == 1 else (p.right.column, p.left.column)
               for p in r.cross_predicates if p.op == "="]
        if not eqs:
            return None
        ts = tuple(_common(types[a], types[b]) for a, b in eqs)
        if None in ts:
            return None
        ia = index(tuple(a for a, _ in eqs), ts)  # type: ignore[arg-type]
        ib = index(tuple(b for _, b in eqs), ts)  # type: ignore[arg-type]
        links += [(ib, ia), (ia, ib)]  # partners as t2 of a changed t1, and as t1 of a changed t2
    return Probe(tuple(tuples), tuple(dict.fromkeys(links)))


def _number(v: int) -> str:
    """An integer as a BIGINT literal (the smallest one written as a difference: ``-9223372036854775808L``
    would parse as a negated decimal)."""
    v = int(v)
    return f"({-2**63 + 1}L - 1L)" if v == -2**63 else f"{v}L"


def literal_keys(values: list[Any], key_type: str) -> list[str]:
    """Keys as SQL literals: numbers, or UTF-8 bytes in hex cast to text (never the text itself)."""
    if key_type in _INTEGRAL:
        return [_number(v) for v in sorted({int(v) for v in values})]
    return [f"CAST(X'{v.encode('utf-8').hex().upper()}' AS STRING)" for v in sorted({str(v) for v in values})]


def _in(expr: str, literals: list[str]) -> str:
    """``expr IN (...)`` that is FALSE, never NULL (a NULL key2 of a one-tuple violation touches nothing)."""
    if not literals:
        return "FALSE"
    return f"COALESCE({expr} IN ({', '.join(literals)}), FALSE)"


@dataclass(frozen=True)
class Literal:
    """The changed keys and, per side (1 NEW, 0 OLD), their rows' partner hashes: what replaces every
    broadcast of the changed keys."""

    key: str
    keys: tuple[str, ...]  # SQL literals of every changed key
    probe: Probe
    hashes: dict[int, tuple[tuple[str, ...], ...]]  # side -> per tuple, SQL literals of the changed rows' hashes
    types: dict[str, str]

    @classmethod
    def of(cls, rows: list[Any], key: str, probe: Probe, types: dict[str, str], sides: tuple[int, ...]
           ) -> "Literal":
        """From the change job's rows of the changed keys (``key``, ``_dq_{side}_dq_h{i}``)."""
        hashes = {s: tuple(tuple(_number(h) for h in sorted({r[f"_dq_{s}_dq_h{i}"] for r in rows} - {None}))
                           for i in range(len(probe.tuples))) for s in sides}
        return cls(key, tuple(literal_keys([r[key] for r in rows], types[key])), probe, hashes, types)

    def touching(self, k1: str = "key1", k2: str = "key2") -> Column:
        """Identities (``key1, key2``) with a changed row: TRUE or FALSE, never NULL."""
        return F.expr(f"{_in(quote_ident(k1), list(self.keys))} OR {_in(quote_ident(k2), list(self.keys))}")

    def restriction(self, side: int) -> Column:
        """The rows of a side that a violation with a changed row can hold: ONE filter."""
        parts = [_in(quote_ident(self.key), list(self.keys))]
        for probe, source in self.probe.links:
            hs = list(self.hashes[side][source])
            if hs:
                parts.append(_in(f"({self.probe.hash_sql(probe, self.types)})", hs))
        return F.expr(" OR ".join(parts))
