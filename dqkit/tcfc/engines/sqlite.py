"""SQLite (stdlib), opened read-only."""
from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

from dqkit.errors import SourceError
from dqkit.tcfc.spec import Aggregate, Side
from dqkit.tcfc.engines.base import Unrepresentable, BoundSide, _file_of, _first_line
from dqkit.tcfc.engines.dbapi import DbApiEngine


class SqliteEngine(DbApiEngine):
    """SQLite (stdlib), opened read-only; declared column types give the logical types."""

    kind = "sqlite"

    def _connect(self) -> Any:
        import sqlite3
        from pathlib import Path

        path = _file_of(self.url)
        if path != ":memory:" and not Path(path).is_file():
            raise SourceError(f"no such SQLite database: {path}", hint="sqlite:///relative.db or sqlite:////abs/path.db")
        uri = "file::memory:" if path == ":memory:" else f"file:{Path(path).resolve().as_posix()}?mode=ro"
        return sqlite3.connect(uri, uri=True, check_same_thread=False, timeout=self.connect_timeout)

    def _text(self, expr: str) -> str:
        return f"CAST({expr} AS TEXT)"

    def _param_for(self, value: Any, logical: str) -> tuple[str, Any]:
        if isinstance(value, Unrepresentable):
            return "?", value.text
        if isinstance(value, dt.datetime):
            return "?", value.isoformat(sep=" ")
        if isinstance(value, dt.date):
            return "?", value.isoformat()
        if isinstance(value, Decimal):
            return "?", int(value) if value == value.to_integral_value() else float(value)
        return "?", value

    def _column_types(self, base: str, side: Side) -> dict[str, tuple[str, str]]:
        cur = self.conn.cursor()
        try:
            cur.execute(f"SELECT * FROM {base} LIMIT 0")
            names = [d[0] for d in cur.description]
            declared: dict[str, str] = {}
            if side.table is not None and "." not in side.table:
                for row in self.conn.execute("SELECT name, type FROM pragma_table_info(?)", [side.table]):
                    declared[row[0]] = row[1] or ""
        except Exception as exc:
            raise SourceError(f"cannot read {side.describe()}: {_first_line(exc)}",
                              hint="check the table name or the tau^-1 query") from None
        finally:
            cur.close()
        out = {}
        for n in names:
            decl = declared.get(n, "")
            logical = _sqlite_affinity(decl) if decl else "any"
            out[n] = (logical, decl or "untyped")
        return out

    def _agg_sql(self, bound: BoundSide, a: Aggregate) -> str:
        if a.function == "avg":
            return f"AVG({self.quote(a.attribute)})"
        return super()._agg_sql(bound, a)

    def cancel(self) -> None:
        try:
            self.conn.interrupt()
        except Exception:
            pass


def _sqlite_affinity(decl: str) -> str:
    d = decl.upper()
    if "BOOL" in d:
        return "bool"
    if "INT" in d:
        return "int"
    if any(k in d for k in ("CHAR", "CLOB", "TEXT")):
        return "string"
    if any(k in d for k in ("REAL", "FLOA", "DOUB")):
        return "float"
    if "TIMESTAMP" in d or "DATETIME" in d:
        return "timestamp"
    if "DATE" in d:
        return "date"
    if "DEC" in d or "NUMERIC" in d:
        return "decimal"
    return "any"
