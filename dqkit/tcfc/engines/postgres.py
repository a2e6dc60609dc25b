"""PostgreSQL through psycopg 3."""
from __future__ import annotations

import datetime as dt
import time
from decimal import Decimal
from typing import Any

from dqkit.errors import SourceError
from dqkit.tcfc.spec import Side, mask_url
from dqkit.tcfc.engines.base import _first_line, _mask_text
from dqkit.tcfc.engines.dbapi import DbApiEngine, _logical_from_name


class PostgresEngine(DbApiEngine):
    """PostgreSQL through psycopg 3 (a real server; ``pgserver`` starts one for tests and tutorials)."""

    kind = "postgresql"
    placeholder = "%s"

    def _connect(self) -> Any:
        import psycopg

        url = self.url.replace("postgres://", "postgresql://", 1)
        try:
            conn = psycopg.connect(url, connect_timeout=max(1, int(round(self.connect_timeout))), autocommit=True)
        except Exception as exc:
            raise SourceError(f"cannot connect to {mask_url(self.url)} within {self.connect_timeout:g} s: "
                              f"{_mask_text(_first_line(exc), self.url)}",
                              hint="check the host, port, database and credentials, and that the server runs") from None
        conn.execute("SET default_transaction_read_only = on")  # inputs are never modified
        conn.execute("SET DateStyle = 'ISO, YMD'")
        return conn

    def quote(self, name: str) -> str:
        from psycopg import sql

        return sql.Identifier(name).as_string(self.conn)

    def _text(self, expr: str) -> str:
        return f"CAST({expr} AS TEXT)"

    def _column_types(self, base: str, side: Side) -> dict[str, tuple[str, str]]:
        cur = self.conn.cursor()
        try:
            cur.execute(f"SELECT * FROM {base} LIMIT 0", [])
        except Exception as exc:
            raise SourceError(f"cannot read {side.describe()}: {_first_line(exc)}",
                              hint="check the table name or the tau^-1 query") from None
        out = {}
        for d in cur.description:
            info = self.conn.adapters.types.get(d.type_code)
            name = info.name if info is not None else str(d.type_code)
            out[d.name] = (_logical_from_name(name), name)
        cur.close()
        return out

    _ARRAY_TYPES = {"int": (int,), "string": (str,), "float": (float,), "decimal": (int, Decimal),
                    "date": (dt.date,), "timestamp": (dt.datetime,)}

    def _where(self, bound, filter_cols, filter_values):
        """One fragmentation column: ``c = ANY(%s)`` with the values as one array parameter (plus ``OR c IS
        NULL`` for a NULL fragment), which PostgreSQL plans as one index or hash lookup however many parents;
        otherwise (several columns, values of mixed types) the null-safe OR-list of the other engines."""
        if len(filter_cols) != 1:
            return super()._where(bound, filter_cols, filter_values)
        c = filter_cols[0]
        logical = bound.types.get(c, "any")
        values = [t[0] for t in filter_values]
        present = [v for v in values if v is not None]
        kinds = self._ARRAY_TYPES.get(logical)
        if kinds is None or not present or not all(isinstance(v, kinds) and not isinstance(v, bool) for v in present) \
                or (logical == "date" and any(isinstance(v, dt.datetime) for v in present)):
            return super()._where(bound, filter_cols, filter_values)
        q = self.quote(c)
        if logical in ("date", "timestamp"):
            cast = "DATE[]" if logical == "date" else "TIMESTAMP[]"
            arr, param = f"CAST(%s AS {cast})", [v.isoformat(sep=" ") if isinstance(v, dt.datetime) else v.isoformat()
                                                 for v in present]
        elif logical == "decimal":
            arr, param = "CAST(%s AS NUMERIC[])", [str(v) for v in present]
        elif logical == "float":
            arr, param = "CAST(%s AS DOUBLE PRECISION[])", [float(v) for v in present]
        elif logical == "int":
            arr, param = "CAST(%s AS NUMERIC[])" if any(abs(v) >= 2 ** 63 for v in present) else "CAST(%s AS BIGINT[])", \
                present
        else:
            arr, param = "CAST(%s AS TEXT[])", present
        cond = f"{q} = ANY({arr})"
        if len(present) < len(values):
            cond = f"({cond} OR {q} IS NULL)"
        return f" WHERE {cond}", [param]

    def _before(self, deadline: float | None) -> None:
        ms = 0 if deadline is None else max(1, int((deadline - time.monotonic()) * 1000) + 200)
        with self._lock:
            self.conn.execute("SELECT set_config('statement_timeout', %s, false)", [str(ms)])

    def cancel(self) -> None:
        try:
            if hasattr(self.conn, "cancel_safe"):
                self.conn.cancel_safe(timeout=1.0)
            else:  # pragma: no cover - psycopg < 3.2
                self.conn.cancel()
        except Exception:
            pass

    def backend_pid(self) -> int:
        return int(self.conn.info.backend_pid)
