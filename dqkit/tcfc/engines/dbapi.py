"""Shared SQL generation for the DB-API engines (PostgreSQL, SQLite, DuckDB)."""
from __future__ import annotations

import datetime as dt
import threading
from collections.abc import Sequence
from typing import Any

from dqkit.errors import CancelledError, SourceError, UnsupportedTypeError
from dqkit.tcfc.spec import ALL_COLUMNS, Aggregate, Side, SpecError, mask_url
from dqkit.tcfc.engines.base import DEFAULT_CONNECT_TIMEOUT, BoundSide, Engine, Unrepresentable, _first_line, _needed, rows_bytes


# ------------------------------------------------------------------------------------ DB-API engines
class DbApiEngine(Engine):
    """Shared SQL generation for the DB-API engines; subclasses connect, quote and describe types."""

    placeholder = "?"

    def __init__(self, url: str, connect_timeout: float = DEFAULT_CONNECT_TIMEOUT) -> None:
        super().__init__()
        self.url = url
        self.connect_timeout = connect_timeout
        self._lock = threading.Lock()
        self.conn = self._connect()

    # --- per engine
    def _connect(self) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError

    def quote(self, name: str) -> str:
        return '"' + name.replace('"', '""') + '"'

    def _column_types(self, base: str, side: Side) -> dict[str, tuple[str, str]]:  # pragma: no cover
        raise NotImplementedError

    def _text(self, expr: str) -> str:
        """``expr`` cast to text (dates and timestamps cross as text, see ``normalise``)."""
        return f"CAST({expr} AS VARCHAR)"

    def _param_for(self, value: Any, logical: str) -> tuple[str, Any]:
        """(placeholder expression, bound value) for a filter value of a column of type ``logical``."""
        if isinstance(value, Unrepresentable):
            value = value.text
        if logical in ("date", "timestamp"):
            text = value.isoformat(sep=" ") if isinstance(value, dt.datetime) else (
                value.isoformat() if isinstance(value, dt.date) else str(value))
            return f"CAST({self.placeholder} AS {'DATE' if logical == 'date' else 'TIMESTAMP'})", text
        return self.placeholder, value

    def _execute(self, sql: str, params: Sequence[Any], deadline: float | None) -> tuple[list[tuple], int]:
        with self._lock:
            cur = self.conn.cursor()
            try:
                if params or self.placeholder == "%s":  # psycopg: '%%' in a query text needs params
                    cur.execute(sql, list(params))
                else:
                    cur.execute(sql)
                rows = [tuple(r) for r in cur.fetchall()]
            except Exception as exc:
                raise self._failure(exc, sql) from exc
            finally:
                try:
                    cur.close()
                except Exception:
                    pass
        self.queries += 1
        return rows, rows_bytes(rows)

    def _failure(self, exc: Exception, sql: str) -> Exception:
        text = str(exc).lower()
        if "interrupt" in text or "cancel" in text or "statement timeout" in text:
            return CancelledError(f"the query on {mask_url(self.url)} was cancelled")
        return SourceError(f"the query on {mask_url(self.url)} failed: {_first_line(exc)}",
                           hint="check the table, the tau^-1 query and the column names of the spec")

    # --- shared
    def _base(self, side: Side) -> str:
        if side.query is not None:
            q = side.query.strip().rstrip(";")
            if self.placeholder == "%s":
                q = q.replace("%", "%%")
            return f"({q}) AS {self.quote('_dq_src')}"
        if side.table is None:
            raise SpecError(f"{side.describe()}: a database side needs a table or a query")
        return ".".join(self.quote(p) for p in side.table.split("."))

    def bind(self, side: Side) -> BoundSide:
        base = self._base(side)
        described = self._column_types(base, side)
        reverse = {phys: name for name, phys in side.columns.items()}
        types, physical, native = {}, {}, {}
        for phys, (logical, native_name) in described.items():
            name = reverse.get(phys, phys)
            types[name], physical[name], native[name] = logical, phys, native_name
        return BoundSide(side, self, types, physical, native, base)

    def _inner(self, bound: BoundSide, cols: Sequence[str]) -> str:
        items = [f"{self.quote(bound.physical[c])} AS {self.quote(c)}" for c in cols] or ["1 AS " + self.quote("_dq_one")]
        base = self._base(bound.side)
        return f"(SELECT {', '.join(items)} FROM {base}) AS {self.quote('_dq_t')}"

    def _where(self, bound: BoundSide, filter_cols: Sequence[str], filter_values: Sequence[tuple]
               ) -> tuple[str, list[Any]]:
        if not filter_cols:
            return "", []
        params: list[Any] = []
        ors = []
        for tup in filter_values:
            ands = []
            for c, v in zip(filter_cols, tup):
                if v is None:
                    ands.append(f"{self.quote(c)} IS NULL")
                else:
                    ph, pv = self._param_for(v, bound.types.get(c, "any"))
                    ands.append(f"{self.quote(c)} = {ph}")
                    params.append(pv)
            ors.append("(" + " AND ".join(ands) + ")")
        return " WHERE " + (" OR ".join(ors) if ors else "1 = 0"), params

    def _agg_sql(self, bound: BoundSide, a: Aggregate) -> str:
        if a.function == "count":
            return "COUNT(*)" if a.attribute == ALL_COLUMNS else f"COUNT({self.quote(a.attribute)})"
        if a.function == "hash":
            return self._hash_sql(bound, a)
        expr = f"{a.function.upper()}({self.quote(a.attribute)})"
        if a.function in ("min", "max") and bound.types.get(a.attribute) in ("date", "timestamp"):
            return self._text(expr)
        if a.function == "avg":
            return f"AVG(CAST({self.quote(a.attribute)} AS DOUBLE PRECISION))"
        return expr

    _current_x: Sequence[str] = ()

    def aggregate(self, bound, X, aggs, filter_cols, filter_values, deadline=None, near_distinct=False):
        self._current_x = tuple(X)
        sel = [self._text(self.quote(c)) if bound.types.get(c) in ("date", "timestamp") else self.quote(c) for c in X]
        sel += [f"{self._agg_sql(bound, a)} AS {self.quote(a.alias)}" for a in aggs]
        where, params = self._where(bound, filter_cols, filter_values)
        sql = f"SELECT {', '.join(sel)} FROM {self._inner(bound, _needed(X, aggs, bound, filter_cols))}{where}"
        if X:
            sql += " GROUP BY " + ", ".join(self.quote(c) for c in X)
        self.last_sql = sql
        self._before(deadline)
        return self._execute(sql, params, deadline)

    def _hash_sql(self, bound: BoundSide, a: Aggregate) -> str:
        raise UnsupportedTypeError(f"the hash aggregate does not run on {self.kind}",  # refused by the spec (H3)
                                   hint="use count, sum, min and max")

    def _before(self, deadline: float | None) -> None:
        """Engine-specific set-up before a query (PostgreSQL: a statement_timeout from the budget)."""

    def rows(self, bound, filter_cols, values, limit):
        import pandas as pd

        cols = list(bound.types)
        where, params = self._where(bound, filter_cols, [values])
        sql = f"SELECT * FROM {self._inner(bound, cols)}{where} LIMIT {int(limit)}"
        rows, _ = self._execute(sql, params, None)
        return pd.DataFrame(rows, columns=cols)

    def distinct_count(self, bound, cols):
        inner = self._inner(bound, list(cols))
        sel = ", ".join(self.quote(c) for c in cols) or "1"
        rows, _ = self._execute(f"SELECT COUNT(*) FROM (SELECT DISTINCT {sel} FROM {inner}) AS {self.quote('_dq_d')}",
                                [], None)
        return int(rows[0][0])

    def close(self) -> None:
        try:
            self.conn.close()
        except Exception:
            pass


def _logical_from_name(name: str) -> str:
    n = name.lower()
    if n.startswith(("bool",)):
        return "bool"
    if any(k in n for k in ("int", "serial")) and "interval" not in n and "point" not in n:
        return "int"
    if n.startswith(("numeric", "decimal", "hugeint", "uhugeint")) or n == "number":
        return "decimal"
    if any(k in n for k in ("real", "float", "double")):
        return "float"
    if n.startswith(("char", "varchar", "text", "string", "bpchar", "character", "name", "clob", "uuid")):
        return "string"
    if n == "date":
        return "date"
    if n.startswith(("timestamp", "datetime")):
        return "timestamp"
    return "other"
