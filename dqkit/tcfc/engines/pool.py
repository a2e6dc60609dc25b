"""One engine per (URL, role), and a pair bound to its two engines with checked column types."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dqkit.errors import UnknownColumnError, UnsupportedTypeError
from dqkit.tcfc.spec import ALL_COLUMNS, CompareSpec, Side
from dqkit.tcfc.engines.base import DEFAULT_CONNECT_TIMEOUT, BoundSide, family, common_type, Engine
from dqkit.tcfc.engines.spark import SparkEngine
from dqkit.tcfc.engines.postgres import PostgresEngine
from dqkit.tcfc.engines.sqlite import SqliteEngine
from dqkit.tcfc.engines.duckdb import DuckDbEngine


# ------------------------------------------------------------------------------------------ binding
class EnginePool:
    """One engine per (URL, role): a side's queries never share a connection with the other side's."""

    def __init__(self, spark: Any = None, connect_timeout: float = DEFAULT_CONNECT_TIMEOUT) -> None:
        self.spark = spark
        self.connect_timeout = connect_timeout
        self.engines: dict[tuple[str, str], Engine] = {}

    def engine(self, side: Side, role: str) -> Engine:
        kind = side.engine_kind
        key = (side.url or "spark", role)
        if key not in self.engines:
            if kind == "spark":
                self.engines[key] = SparkEngine(self.spark)
            elif kind == "postgresql":
                self.engines[key] = PostgresEngine(side.url, self.connect_timeout)
            elif kind == "sqlite":
                self.engines[key] = SqliteEngine(side.url, self.connect_timeout)
            else:
                self.engines[key] = DuckDbEngine(side.url, self.connect_timeout)
        return self.engines[key]

    def cancel_all(self) -> None:
        for e in list(self.engines.values()):  # a list: a binding worker may still be adding engines
            e.cancel()

    def close(self) -> None:
        for e in list(self.engines.values()):
            e.close()
        self.engines.clear()

    @property
    def queries(self) -> int:
        return sum(e.queries for e in self.engines.values())


@dataclass
class BoundPair:
    """A pair with both sides bound and the comparison type of every column it uses."""

    spec: CompareSpec
    source: BoundSide
    target: BoundSide
    types: dict[str, str]                     # column -> common logical type


def bind_pair(pair: CompareSpec, pool: EnginePool) -> BoundPair:
    """Bind both sides and check, before any aggregate query: every column exists on both sides (with the
    attribute map), aggregates apply to their column types, and the types compare across engines (X1)."""
    src = pool.engine(pair.source, "source").bind(pair.source)
    tgt = pool.engine(pair.target, "target").bind(pair.target)
    used: list[str] = []
    for lv in pair.levels:
        used += [c for c in lv.X if c not in used]
        used += [a.attribute for a in lv.A if a.attribute != ALL_COLUMNS and a.attribute not in used]
    for bound, role in ((src, "source"), (tgt, "target")):
        missing = [c for c in used if c not in bound.types]
        if missing:
            mapped = f" (after the attribute map {dict(bound.side.columns)})" if bound.side.columns else ""
            raise UnknownColumnError(
                f"pair {pair.name!r}: the {role} {bound.label()} has no column {', '.join(map(repr, missing))}{mapped}",
                hint=f"its columns are {', '.join(bound.physical.values())}; on a side whose names differ, map "
                     f"them with columns: {{source_name: {role}_name}}")
    if any(a.function == "hash" and a.attribute == ALL_COLUMNS for lv in pair.levels for a in lv.A) \
            and set(src.types) != set(tgt.types):
        raise UnknownColumnError(
            f"pair {pair.name!r}: hash(*) covers every column, but the sides' columns differ: "
            f"{sorted(set(src.types) ^ set(tgt.types))}", hint="name the column of the hash, or map the columns")
    used += [c for c in src.types if c not in used and any(a.function == "hash" and a.attribute == ALL_COLUMNS
                                                            for lv in pair.levels for a in lv.A)]
    types: dict[str, str] = {}
    cross = not pair.same_engine
    for c in used:
        t = common_type(src.types[c], tgt.types[c])
        if t is None and not cross and src.types[c] == tgt.types[c]:
            t = src.types[c]  # one engine compares its own types (e.g. a struct under hash)
        if t is None or (cross and family(t) == "other"):
            raise UnsupportedTypeError(
                f"pair {pair.name!r}: column {c!r} cannot be compared across engines: {src.types[c]} "
                f"({src.native.get(c)}) in {src.label()} vs {tgt.types[c]} ({tgt.native.get(c)}) in {tgt.label()}",
                hint="cast it in a tau^-1 query to a type both engines share (number, text, date, timestamp)")
        types[c] = t
    for i, lv in enumerate(pair.levels):
        for a in lv.A:
            if a.function in ("sum", "avg") and family(types[a.attribute]) not in ("number", "any"):
                raise UnsupportedTypeError(
                    f"pair {pair.name!r}, level {i + 1}: {a.function}({a.attribute}) does not apply to its type "
                    f"{types[a.attribute]}", hint="use count, min or max on non-numeric columns")
    return BoundPair(pair, src, tgt, types)
