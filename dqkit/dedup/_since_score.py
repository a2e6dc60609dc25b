"""The touched pairs of ``dedup NEW --since RUN`` scored on the driver: the pairs and their values are
already there (``_since_pairs``), so sending them back to Spark for one job (an Arrow copy of every
pair's values, a Python worker for the pandas UDFs, a copy back) cost more than the scoring itself.

Only where the driver computes exactly what Spark would: every comparison on a text column, with a
method scored in Python anyway (Jaro-Winkler, token set: ``_compare.python_levels``, the very function
of the pandas UDF, on the same values), ``exact`` or ``levenshtein`` (rapidfuzz's edit distance
counts code points, as Spark's ``levenshtein`` does). Otherwise (other methods, or a column that is
not text and that Spark would cast) ``scorable`` says no and Spark scores. The match weight is the
prior weight plus each comparison's log2 Bayes factor, added in ``weight_column``'s order (the same
float64 additions: the same weights, bit for bit)."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import types as T

from dqkit.dedup import _blocking as B
from dqkit.dedup import _compare as C

__all__ = ["scorable", "levels", "score"]

_SPARK_METHODS = {"exact", "levenshtein"}


def scorable(comparisons: Sequence[Any], dtypes: dict[str, T.DataType]) -> bool:
    """Whether ``score`` gives exactly Spark's levels for these comparisons."""
    return all(isinstance(dtypes[c.column], T.StringType) and (c.method in C.PYTHON_METHODS or c.method in _SPARK_METHODS)
               for c in comparisons)


def levels(c: Any, a: pa.Array, b: pa.Array) -> np.ndarray:
    """``_compare.level`` of one comparison on the driver for the pairs ``(a[i], b[i])`` (Arrow text
    arrays): -1 NULL, T+1 equal, T..1 close, 0 else. Shared by ``--since`` and a full run's driver
    route (``dqkit.dedup._driver``)."""
    if c.method in C.PYTHON_METHODS:
        return C.python_levels(c.method, tuple(c.thresholds), a, b)
    from dqkit.primitives import similarity as S

    t = len(c.thresholds)
    null = ~pc.and_(a.is_valid(), b.is_valid()).to_numpy(zero_copy_only=False).astype(bool)
    equal = pc.fill_null(pc.equal(a, b), False).to_numpy(zero_copy_only=False).astype(bool) & ~null
    out = np.zeros(len(a), dtype=np.int32)
    todo = ~(null | equal)
    if t and c.method == "levenshtein" and todo.any():
        take = pa.array(np.flatnonzero(todo))
        d = S.levenshtein(a.take(take), b.take(take))
        got = np.zeros(len(take), dtype=np.int32)
        for n, th in reversed(list(enumerate(c.thresholds))):  # the first threshold met wins, as in level()
            got[(d >= 0) & (d <= th)] = t - n
        out[np.flatnonzero(todo)] = got
    out[equal] = t + 1
    out[null] = -1
    return out


def _array(column: Any) -> pa.Array:
    return column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column


def score(pairs: pa.Table, comparisons: Sequence[Any], columns: list[str], model: Any, rule_names: list[str]
          ) -> pd.DataFrame:
    """``pairs`` (``_since_pairs.touched_pairs``) in the columns ``since._pairs_frame`` gives: key_1, key_2,
    rule, match_weight, probability, gamma_<label>."""
    gammas = {}
    for i, c in enumerate(comparisons):
        k = C.value_col(columns.index(c.column))
        gammas[c.label] = levels(c, _array(pairs.column(f"{k}_l")), _array(pairs.column(f"{k}_r")))
    total = np.full(pairs.num_rows, model.prior_weight, dtype=np.float64)
    for g, bf in zip(gammas.values(), model.log2_bayes_factors()):  # weight_column's additions, in its order
        part = np.zeros(pairs.num_rows, dtype=np.float64)
        for lvl, v in enumerate(bf):
            part[g == lvl] = float(v)
        total = total + part
    first = np.asarray(pairs.column(B.FIRST), dtype=np.int64)
    return pd.DataFrame({"key_1": pairs.column(B.ID1).to_pandas(), "key_2": pairs.column(B.ID2).to_pandas(),
                         "rule": np.asarray(rule_names, dtype=object)[first] if len(first) else [],
                         "match_weight": total, "probability": 1.0 / (1.0 + np.power(2.0, -total)),
                         **{f"gamma_{label}": g for label, g in gammas.items()}})
