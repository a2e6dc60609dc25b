"""Parameters as people write them, parsed once for the API, the CLI, the reports and the widgets.

* lists: ``"a, b"`` or ``["a", "b"]`` (repeated CLI options are joined before parsing);
* table keys: ``"users=id;lineitem=l_orderkey,l_linenumber"``, a list of ``TABLE=COL[,COL]`` items, or a
  mapping ``{table: "a,b" | [a, b]}``.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from dqkit.errors import ParameterError


def split_list(value: str | Iterable[Any] | None, sep: str = ",") -> list[str]:
    """Split ``"a, b"`` (or flatten ``["a", "b,c"]``) into ``["a", "b", "c"]``, dropping blank items."""
    if value is None:
        return []
    items = [value] if isinstance(value, str) else list(value)
    out: list[str] = []
    for item in items:
        out += [part.strip() for part in str(item).split(sep) if part.strip()]
    return out


def parse_keys(value: str | Sequence[str] | Mapping[str, Any] | None) -> dict[str, list[str]]:
    """Table keys in any accepted form -> ``{table: [columns]}`` (composite keys keep their order).

    A table given twice with different columns is an error, so no key is silently dropped.
    """
    if value is None:
        return {}
    if isinstance(value, Mapping):
        pairs = [(str(t), split_list(c) if isinstance(c, str) else [str(x) for x in c]) for t, c in value.items()]
    else:
        pairs = []
        for item in split_list(value, ";"):
            table, sep, cols = item.partition("=")
            names = split_list(cols)
            if not sep or not table.strip() or not names:
                raise ParameterError(f"cannot read the key {item!r}",
                                     hint="write TABLE=COL or TABLE=COL1,COL2 (one per table, or ';' between)")
            pairs.append((table.strip(), names))
    keys: dict[str, list[str]] = {}
    for table, names in pairs:
        if not names:
            raise ParameterError(f"the key of table {table!r} names no column", hint="write TABLE=COL")
        if table in keys and keys[table] != names:
            raise ParameterError(f"table {table!r} is given two keys: {','.join(keys[table])} and {','.join(names)}",
                                 hint="give each table one key; a composite key is TABLE=COL1,COL2")
        keys[table] = names
    return keys


def format_keys(keys: Mapping[str, Sequence[str]]) -> str:
    """The inverse of ``parse_keys`` for strings: ``{"users": ["id"]}`` -> ``"users=id"``."""
    return ";".join(f"{t}={','.join(c)}" for t, c in keys.items())
