"""Small tables the tests build on the fly: SQLite files for the TCFC pairs and the widgets' sources."""
from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from pathlib import Path


def sqlite_table(path: Path, table: str, ddl: str, rows: Sequence[tuple]) -> str:
    """The ``sqlite:///`` URL of ``path`` holding ``table`` (columns ``ddl``) with ``rows``; a table that is
    already there is left as it is (a test may build the same spec twice on one file)."""
    c = sqlite3.connect(path)
    try:
        if not c.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)).fetchone():
            c.execute(f'CREATE TABLE "{table}" ({ddl})')
            if rows:
                c.executemany(f'INSERT INTO "{table}" VALUES ({",".join("?" * len(rows[0]))})', rows)
            c.commit()
    finally:
        c.close()
    return f"sqlite:///{path.as_posix()}"
