"""The saved run's clusters and matches on the driver for ``dedup NEW --since RUN``, as Arrow tables:
read once with only the columns needed (pyarrow, no Spark job) and filtered by the touched keys with
``pyarrow.compute`` (hash sets in C++), so the 200K-row tables of a 100K-entity run are never turned
into Python objects; only the rows of the touched clusters are."""
from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["read", "is_in", "size_histogram"]


def read(folder: Path, name: str, fmt: str, integer_key: bool, keys: tuple[str, ...],
         columns: list[str] | None = None) -> pa.Table:
    """Table ``name`` of the saved run (``columns`` only, all when None), its ``keys`` columns as int64
    (integer key) or text."""
    from dqkit.dedup.manifest import part_files

    if fmt == "csv":
        files = [f for f in part_files(folder / name) if f.name.lower().endswith((".csv", ".csv.gz"))]
        frame = (pd.concat([pd.read_csv(f, dtype=str, keep_default_na=False) for f in files], ignore_index=True)
                 if files else pd.DataFrame(columns=list(columns or keys), dtype=str))
        table = pa.Table.from_pandas(frame if columns is None else frame[columns], preserve_index=False)
    else:
        import pyarrow.parquet as pq

        table = pq.read_table(folder / name, columns=columns)
    for k in keys:
        if k in table.column_names:
            i = table.column_names.index(k)
            table = table.set_column(i, k, pc.cast(table.column(k), pa.int64() if integer_key else pa.string()))
    return table


def is_in(values: Any, keys: Iterable[Any] | pa.Array) -> np.ndarray:
    """Which of ``values`` (an Arrow column) are among ``keys``, as booleans (NULL: no)."""
    value_set = keys if isinstance(keys, pa.Array) else pa.array(list(keys), values.type)
    if len(value_set) == 0:
        return np.zeros(len(values), dtype=bool)
    return np.asarray(pc.fill_null(pc.is_in(values, value_set=value_set.cast(values.type)), False))


def size_histogram(cluster_ids: Any, leave_out: pa.Array, fresh: Iterable[Any]) -> dict[int, int]:
    """``size -> clusters``: the saved clusters but ``leave_out``, and the ``fresh`` assignment's ids."""
    vc = pc.value_counts(cluster_ids)
    counts = np.asarray(vc.field("counts"))[~is_in(vc.field("values"), leave_out)]
    out = Counter({int(s): int(n) for s, n in enumerate(np.bincount(counts)) if n}) if len(counts) else Counter()
    out.update(Counter(Counter(fresh).values()))
    return dict(sorted(out.items()))
