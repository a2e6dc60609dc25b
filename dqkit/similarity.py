"""String similarity shared by UDF rules, deduplication and repair, on rapidfuzz.

Both functions take two equally long sequences of strings and compare them pair by pair
(``a[i]`` with ``b[i]``), vectorised in rapidfuzz's C++ (``process.cpdist``), so a Detect callable
over a batch of candidate pairs costs one call. Lengths count Unicode code points.

NULL (``None``, ``pd.NA`` or a float NaN, as pandas gives for a missing string): a pair with a NULL side has
distance NaN and similarity 0.0, so a missing value is never "similar" to anything, not even to
another missing value (as in SQL, NULL equals nothing). Two empty strings are identical: distance 0,
similarity 1.0.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
from rapidfuzz import process
from rapidfuzz.distance import Levenshtein

__all__ = ["levenshtein", "similarity"]


def _is_null(x: Any) -> bool:
    return x is None or x is pd.NA or (isinstance(x, float) and x != x)


def _pairs(a: Sequence[Any], b: Sequence[Any]) -> tuple[np.ndarray, list[str], list[str]]:
    """The non-NULL mask and the strings of the pairs where neither side is NULL."""
    a, b = list(a), list(b)
    if len(a) != len(b):
        raise ValueError(f"levenshtein/similarity compare pairs: got {len(a)} and {len(b)} strings")
    ok = np.array([not (_is_null(x) or _is_null(y)) for x, y in zip(a, b)], dtype=bool)
    return ok, [str(x) for x, k in zip(a, ok) if k], [str(y) for y, k in zip(b, ok) if k]


def levenshtein(a: Sequence[Any], b: Sequence[Any]) -> np.ndarray:
    """Edit distance of each pair ``(a[i], b[i])`` (insertions, deletions, substitutions; float, NaN for NULL)."""
    ok, xs, ys = _pairs(a, b)
    out = np.full(len(ok), np.nan)
    if xs:
        out[ok] = process.cpdist(xs, ys, scorer=Levenshtein.distance, dtype=np.int64, workers=1)
    return out


def similarity(a: Sequence[Any], b: Sequence[Any]) -> np.ndarray:
    """Normalised Levenshtein similarity ``1 - d / max(len)`` of each pair (1.0 for two empty strings,
    0.0 when a side is NULL)."""
    ok, xs, ys = _pairs(a, b)
    out = np.zeros(len(ok))
    if xs:
        d = process.cpdist(xs, ys, scorer=Levenshtein.distance, dtype=np.int64, workers=1)
        longest = np.fromiter((max(len(x), len(y)) for x, y in zip(xs, ys)), dtype=np.float64, count=len(xs))
        out[ok] = np.where(longest == 0, 1.0, 1.0 - d / np.maximum(longest, 1.0))
    return out
