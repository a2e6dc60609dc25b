"""String similarity shared by UDF rules, deduplication and repair, on rapidfuzz: the one
implementation of every string measure dqkit uses.

Every function takes two equally long sequences of strings (lists, pandas Series, numpy or Arrow
arrays) and compares them pair by pair (``a[i]`` with ``b[i]``), vectorised in rapidfuzz's C++
(``process.cpdist``), so a Detect callable or a dedup batch of candidate pairs costs one call per
measure. Lengths count Unicode code points.

NULL (``None``, ``pd.NA`` or a float NaN, as pandas gives for a missing string): a pair with a NULL
side has distance NaN and similarity 0.0, so a missing value is never "similar" to anything, not
even to another missing value (as in SQL, NULL equals nothing). Two empty strings are identical:
distance 0, similarity 1.0.

* ``levenshtein``: edit distance (insertions, deletions, substitutions);
* ``similarity``: ``1 - levenshtein / max(len)``;
* ``jaro_winkler``: Jaro-Winkler similarity (prefix weight 0.1, at most 4 prefix characters);
* ``token_set``: the token-set ratio / 100 (word sets, order and repeats ignored).

rapidfuzz runs each call on one thread: on an executor Spark already gives every core a task. Code that
scores on the driver while Spark is idle (dedup's driver route) uses every core with ``workers(-1)``.
"""
from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np
import pandas as pd
from rapidfuzz import fuzz, process
from rapidfuzz.distance import JaroWinkler, Levenshtein

__all__ = ["levenshtein", "similarity", "jaro_winkler", "token_set", "workers"]

_WORKERS: contextvars.ContextVar[int] = contextvars.ContextVar("dqkit_similarity_workers", default=1)


@contextlib.contextmanager
def workers(n: int) -> Iterator[None]:
    """rapidfuzz threads per call inside the block (``-1``: every core); 1 outside any block."""
    token = _WORKERS.set(n)
    try:
        yield
    finally:
        _WORKERS.reset(token)


def _strings(a: Any) -> pd.Series:
    return a.reset_index(drop=True) if isinstance(a, pd.Series) else pd.Series(list(a), dtype=object)


def _texts(values: list[Any]) -> list[str]:
    return values if all(type(v) is str for v in values) else [str(v) for v in values]


def _same(values: list[Any]) -> list[Any]:
    return values


def _arrow_text(a: Any) -> bool:
    import pyarrow as pa

    return bool(pa.types.is_string(a.type) or pa.types.is_large_string(a.type))


def _pairs(a: Sequence[Any], b: Sequence[Any]) -> tuple[np.ndarray, list[str], list[str]]:
    """The non-NULL mask and the strings of the pairs where neither side is NULL (vectorised; Arrow
    arrays, as a ``mapInArrow`` batch gives them, are never converted to pandas)."""
    if hasattr(a, "is_valid") and hasattr(b, "is_valid") and hasattr(a, "to_pylist"):  # pyarrow arrays
        if len(a) != len(b):
            raise ValueError(f"string similarity compares pairs: got {len(a)} and {len(b)} strings")
        import pyarrow.compute as pc

        valid = pc.and_(a.is_valid(), b.is_valid())
        ok = valid.to_numpy(zero_copy_only=False).astype(bool)
        # Arrow text gives str values: the per-value type check is skipped (a second over millions)
        texts = _same if _arrow_text(a) and _arrow_text(b) else _texts
        if ok.all():
            return ok, texts(a.to_pylist()), texts(b.to_pylist())
        return ok, texts(a.filter(valid).to_pylist()), texts(b.filter(valid).to_pylist())
    sa, sb = _strings(a), _strings(b)
    if len(sa) != len(sb):
        raise ValueError(f"string similarity compares pairs: got {len(sa)} and {len(sb)} strings")
    ok = (sa.notna() & sb.notna()).to_numpy(dtype=bool)
    if ok.all():
        return ok, _texts(sa.tolist()), _texts(sb.tolist())
    return ok, _texts(sa[ok].tolist()), _texts(sb[ok].tolist())


def _scores(a: Sequence[Any], b: Sequence[Any], scorer: Callable[..., Any], null: float) -> np.ndarray:
    ok, xs, ys = _pairs(a, b)
    out = np.full(len(ok), null)
    if xs:
        out[ok] = process.cpdist(xs, ys, scorer=scorer, dtype=np.float64, workers=_WORKERS.get())
    return out


def levenshtein(a: Sequence[Any], b: Sequence[Any]) -> np.ndarray:
    """Edit distance of each pair ``(a[i], b[i])`` (insertions, deletions, substitutions; float, NaN for NULL)."""
    ok, xs, ys = _pairs(a, b)
    out = np.full(len(ok), np.nan)
    if xs:
        out[ok] = process.cpdist(xs, ys, scorer=Levenshtein.distance, dtype=np.int64, workers=_WORKERS.get())
    return out


def similarity(a: Sequence[Any], b: Sequence[Any]) -> np.ndarray:
    """Normalised Levenshtein similarity ``1 - d / max(len)`` of each pair (1.0 for two empty strings,
    0.0 when a side is NULL)."""
    ok, xs, ys = _pairs(a, b)
    out = np.zeros(len(ok))
    if xs:
        d = process.cpdist(xs, ys, scorer=Levenshtein.distance, dtype=np.int64, workers=_WORKERS.get())
        longest = np.fromiter((max(len(x), len(y)) for x, y in zip(xs, ys)), dtype=np.float64, count=len(xs))
        out[ok] = np.where(longest == 0, 1.0, 1.0 - d / np.maximum(longest, 1.0))
    return out


def jaro_winkler(a: Sequence[Any], b: Sequence[Any]) -> np.ndarray:
    """Jaro-Winkler similarity in [0, 1] of each pair (1.0 for two empty strings, 0.0 when a side is NULL)."""
    return _scores(a, b, JaroWinkler.normalized_similarity, 0.0)


def token_set(a: Sequence[Any], b: Sequence[Any]) -> np.ndarray:
    """rapidfuzz's token-set ratio / 100 of each pair, in [0, 1] (1.0 for two empty strings, which
    rapidfuzz scores 0; 0.0 when a side is NULL)."""
    ok, xs, ys = _pairs(a, b)
    out = np.zeros(len(ok))
    if xs:
        got = process.cpdist(xs, ys, scorer=fuzz.token_set_ratio, dtype=np.float64, workers=_WORKERS.get()) / 100.0
        both_empty = np.fromiter((not x and not y for x, y in zip(xs, ys)), dtype=bool, count=len(xs))
        out[ok] = np.where(both_empty, 1.0, got)
    return out
