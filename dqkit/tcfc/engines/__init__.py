"""Engines behind one interface (P2, X1): Spark, PostgreSQL (psycopg 3), SQLite (stdlib), DuckDB.

Each side of a pair is *bound* to an engine (``bind``): its schema is read without running a query
(Spark: the DataFrame's schema; databases: a ``LIMIT 0`` probe), the columns are mapped to the source's
names (the attribute map of tau^-1) and given a logical type. ``Engine.aggregate`` then runs the
paper's Algorithm 2 *inside that engine*: ``SELECT X, af(A) AS B FROM rel WHERE filter GROUP BY X``,
and only the aggregated rows come back, as normalised Python values (``normalise``), so values from
different engines compare equal when they mean the same thing:

* integers and decimals as ``int``/``Decimal`` (``Decimal('5') == 5``), floats as ``float``;
* dates as ``datetime.date``, timestamps as naive ``datetime`` (aware ones in UTC); databases return
  them as text (``CAST(c AS VARCHAR)``) so that a value Python cannot hold (PostgreSQL's year 20000,
  ``infinity``: the paper's Informix DATE example) becomes an ``Unrepresentable`` value that is
  reported with its fragment instead of failing the query or being dropped;
* strings as ``str``; NULL as ``None``; booleans as ``bool`` (equal to 0/1, as SQLite stores them).

SQL is built from identifiers quoted by the engine's own rules (psycopg's ``sql.Identifier`` on
PostgreSQL; doubled double quotes on SQLite and DuckDB) and values bound as parameters; fragment filters
are null-safe (``c IS NULL`` for a NULL value, ``c = ?`` otherwise), as C3 requires. Every engine can be
cancelled from another thread (``cancel``): Spark through a job tag, PostgreSQL with ``cancel_safe()``
(and a ``statement_timeout`` set from the remaining budget as a backstop), SQLite and DuckDB with
``interrupt()``.

The package holds one module per engine (``spark``, ``postgres``, ``sqlite``, ``duckdb``) over a small
``base`` (the interface, logical types, normalised values) and ``dbapi`` (the SQL the databases share);
``pool`` binds a pair. Imports go downward only: pool -> engines -> dbapi -> base.
"""
from __future__ import annotations

from dqkit.tcfc.engines.base import (DEFAULT_CONNECT_TIMEOUT, MAX_BATCH, MAX_BATCH_ONE_COLUMN, NUMERIC, SMALL_BATCH,
                                     BoundSide, Engine, Unrepresentable, common_type, family, hash_columns, max_batch,
                                     normalise, rows_bytes)
from dqkit.tcfc.engines.dbapi import DbApiEngine
from dqkit.tcfc.engines.duckdb import DuckDbEngine
from dqkit.tcfc.engines.pool import BoundPair, EnginePool, bind_pair
from dqkit.tcfc.engines.postgres import PostgresEngine
from dqkit.tcfc.engines.spark import SparkEngine, parquet_footer_counts
from dqkit.tcfc.engines.sqlite import SqliteEngine

__all__ = ["DEFAULT_CONNECT_TIMEOUT", "MAX_BATCH", "MAX_BATCH_ONE_COLUMN", "NUMERIC", "SMALL_BATCH", "BoundPair",
           "BoundSide", "DbApiEngine", "DuckDbEngine", "Engine", "EnginePool", "PostgresEngine", "SparkEngine",
           "SqliteEngine", "Unrepresentable", "bind_pair", "common_type", "family", "hash_columns", "max_batch",
           "normalise", "parquet_footer_counts", "rows_bytes"]
