"""The column names dqkit adds while it works, and the Spark-free check that an input does not use them.

Kept apart from ``dqkit.primitives.keys`` (which needs Spark) so that ``dqkit.checks.preflight`` can refuse a clash from a
Parquet footer or a CSV header before any SparkSession starts.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence

from dqkit.errors import ReservedColumnError

MAX_EXAMPLES = 5

RESERVED_PREFIXES = ("_dq_", "__dqkit", "a__dq", "b__dq")
"""Column-name prefixes of the columns dqkit adds while it works (tuple ids, fingerprints, candidates,
pair sides). An input column starting with one of them is refused: it could be mistaken for dqkit's."""


def reserved_in(columns: Iterable[str], names: Iterable[str] = (),
                prefixes: Sequence[str] = RESERVED_PREFIXES) -> list[str]:
    """The ``columns`` that are among ``names`` or start with one of ``prefixes`` (no Spark)."""
    names = set(names)
    return [c for c in columns if c in names or c.startswith(tuple(prefixes))]


def check_reserved(columns: Iterable[str], *, table: str, command: str, names: Iterable[str] = (),
                   prefixes: Sequence[str] = RESERVED_PREFIXES) -> None:
    """Refuse input columns named like the columns dqkit adds (``names`` or ``prefixes``); no Spark."""
    clash = reserved_in(columns, names, prefixes)
    if clash:
        shown = ", ".join(repr(c) for c in clash[:MAX_EXAMPLES])
        raise ReservedColumnError(
            f"{command}: column(s) {shown} of {table} clash with the columns dqkit adds itself "
            f"(names starting with {', '.join(prefixes)}" + (f", or {', '.join(sorted(names))}" if names else "")
            + ")", hint="rename those columns first (for example with a SELECT ... AS); nothing was written")
