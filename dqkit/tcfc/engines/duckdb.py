"""DuckDB, opened read-only."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from dqkit.errors import SourceError
from dqkit.tcfc.spec import ALL_COLUMNS, Aggregate, Side
from dqkit.tcfc.engines.base import BoundSide, hash_columns, rows_bytes, _file_of, _first_line
from dqkit.tcfc.engines.dbapi import DbApiEngine, _logical_from_name


class DuckDbEngine(DbApiEngine):
    """DuckDB, opened read-only."""

    kind = "duckdb"

    def _connect(self) -> Any:
        from pathlib import Path

        import duckdb

        path = _file_of(self.url)
        if path != ":memory:" and not Path(path).is_file():
            raise SourceError(f"no such DuckDB database: {path}", hint="duckdb:///relative.duckdb or duckdb:////abs/path")
        try:
            return duckdb.connect(path, read_only=path != ":memory:")
        except Exception as exc:
            raise SourceError(f"cannot open {path}: {_first_line(exc)}") from None

    def _column_types(self, base: str, side: Side) -> dict[str, tuple[str, str]]:
        try:
            cur = self.conn.cursor()
            cur.execute(f"SELECT * FROM {base} LIMIT 0")
            desc = cur.description
            cur.close()
        except Exception as exc:
            raise SourceError(f"cannot read {side.describe()}: {_first_line(exc)}",
                              hint="check the table name or the tau^-1 query") from None
        return {d[0]: (_logical_from_name(str(d[1])), str(d[1])) for d in desc}

    def _hash_sql(self, bound: BoundSide, a: Aggregate) -> str:
        """The commutative row-hash aggregate in DuckDB (H1, H3): count and the sum, in HUGEINT (no overflow),
        of a 64-bit hash of each row's columns, each preceded by a NULL marker so NULL and '' differ. A
        sum, unlike XOR, does not cancel a row that appears twice. Used only when both sides are DuckDB."""
        cols = hash_columns(bound, self._current_x) if a.attribute == ALL_COLUMNS else [a.attribute]
        parts = ", ".join(f"{self.quote(c)} IS NULL, CAST({self.quote(c)} AS VARCHAR)" for c in cols) or "1"
        return (f"CAST(COUNT(*) AS VARCHAR) || ':' || CAST(SUM(CAST(hash({parts}) AS HUGEINT)) AS VARCHAR)")

    def _execute(self, sql: str, params: Sequence[Any], deadline: float | None) -> tuple[list[tuple], int]:
        with self._lock:
            try:
                rel = self.conn.execute(sql, list(params)) if params else self.conn.execute(sql)
                rows = [tuple(r) for r in rel.fetchall()]
            except Exception as exc:
                raise self._failure(exc, sql) from exc
        self.queries += 1
        return rows, rows_bytes(rows)

    def cancel(self) -> None:
        try:
            self.conn.interrupt()
        except Exception:
            pass
