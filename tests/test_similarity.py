"""String similarity (dqkit.similarity) against a brute-force edit-distance oracle: no Spark needed."""
from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from dqkit.similarity import levenshtein, similarity


def dp_levenshtein(a: str, b: str) -> int:
    """The textbook dynamic programme over the full (len(a)+1) x (len(b)+1) table."""
    d = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i in range(len(a) + 1):
        d[i][0] = i
    for j in range(len(b) + 1):
        d[0][j] = j
    for i in range(1, len(a) + 1):
        for j in range(1, len(b) + 1):
            d[i][j] = min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] != b[j - 1]))
    return d[len(a)][len(b)]


small = st.text(alphabet="abcé€😀 ", max_size=8)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(small, small), max_size=12))
def test_levenshtein_equals_the_dynamic_programme_on_random_strings(pairs):
    a = [x for x, _ in pairs]
    b = [y for _, y in pairs]
    want = [dp_levenshtein(x, y) for x, y in pairs]
    assert levenshtein(a, b).tolist() == want
    sim = similarity(a, b)
    for (x, y), d, s in zip(pairs, want, sim):
        assert math.isclose(s, 1.0 if not x and not y else 1 - d / max(len(x), len(y)))


def test_a_null_side_has_no_distance_and_zero_similarity():
    a = ["kitten", None, None, float("nan"), "", "same"]
    b = ["sitting", "x", None, "y", "", "same"]
    d = levenshtein(a, b)
    assert d[0] == 3 and np.isnan(d[1:4]).all() and d[4] == 0 and d[5] == 0
    assert similarity(a, b).tolist() == [1 - 3 / 7, 0.0, 0.0, 0.0, 1.0, 1.0]
    assert levenshtein([], []).shape == (0,) and similarity([], []).shape == (0,)
