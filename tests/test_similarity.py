"""String similarity (dqkit.primitives.similarity) against a brute-force edit-distance oracle: no Spark needed."""
from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from dqkit.primitives.similarity import levenshtein, similarity


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


def textbook_jaro_winkler(a: str, b: str) -> float:
    """Jaro-Winkler from its definition: matches within half the longer length, transpositions,
    then, when Jaro exceeds 0.7 (Winkler's boost threshold), the common prefix (at most 4) scaled by 0.1."""
    if a == b:
        return 1.0
    if not a or not b:
        return 0.0
    window = max(max(len(a), len(b)) // 2 - 1, 0)
    used = [False] * len(b)
    ma = []
    for i, ch in enumerate(a):
        for j in range(max(0, i - window), min(len(b), i + window + 1)):
            if not used[j] and b[j] == ch:
                used[j] = True
                ma.append(ch)
                break
    if not ma:
        return 0.0
    mb = [b[j] for j in range(len(b)) if used[j]]
    t = sum(x != y for x, y in zip(ma, mb)) // 2  # half the transpositions, rounded down (strcmp95)
    m = len(ma)
    jaro = (m / len(a) + m / len(b) + (m - t) / m) / 3
    if jaro <= 0.7:
        return jaro
    prefix = 0
    for x, y in zip(a[:4], b[:4]):
        if x != y:
            break
        prefix += 1
    return jaro + prefix * 0.1 * (1 - jaro)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(small, small), max_size=12))
def test_jaro_winkler_equals_its_textbook_definition_on_random_strings(pairs):
    from dqkit.primitives.similarity import jaro_winkler

    got = jaro_winkler([x for x, _ in pairs], [y for _, y in pairs])
    for (x, y), s in zip(pairs, got):
        assert math.isclose(s, textbook_jaro_winkler(x, y), abs_tol=1e-9), (x, y)


def test_jaro_winkler_and_token_set_give_a_null_side_zero_and_read_arrow_and_pandas_alike():
    import pandas as pd
    import pyarrow as pa

    from dqkit.primitives.similarity import jaro_winkler, token_set

    a = ["martha", None, "", "x y z", float("nan")]
    b = ["marhta", "x", "", "z y x", "y"]
    jw = jaro_winkler(a, b)
    assert math.isclose(jw[0], 0.9611111, abs_tol=1e-6) and jw[1] == 0.0 and jw[2] == 1.0 and jw[4] == 0.0
    assert token_set(a, b).tolist() == [token_set(["martha"], ["marhta"])[0], 0.0, 1.0, 1.0, 0.0]
    arrow = [None if isinstance(x, float) else x for x in a]
    assert jaro_winkler(pa.array(arrow), pa.array(b)).tolist() == jw.tolist()
    assert jaro_winkler(pd.Series(a, index=[9, 8, 7, 6, 5]), pd.Series(b)).tolist() == jw.tolist()


def test_dedup_levels_from_python_are_null_exact_close_else_whatever_the_input_kind():
    import pandas as pd
    import pyarrow as pa

    from dqkit.dedup._compare import python_levels

    a = ["martha", None, "dixon", "dwayne", "abc", ""]
    b = ["marhta", "x", "dixon", "duane", "xyz", ""]
    # thresholds 0.92, 0.80: martha/marhta 0.961 -> 2, dwayne/duane 0.84 -> 1, abc/xyz 0 -> 0,
    # equal (also two empty strings) -> 3, a NULL side -> -1
    want = [2, -1, 3, 1, 0, 3]
    assert python_levels("jaro_winkler", (0.92, 0.80), a, b).tolist() == want
    assert python_levels("jaro_winkler", (0.92, 0.80), pa.array(a), pa.array(b)).tolist() == want
    assert python_levels("jaro_winkler", (0.92, 0.80), pd.Series(a, index=range(6, 12)), pd.Series(b)).tolist() == want
    assert python_levels("token_set", (), ["a b", None, "x"], ["b a", "y", "x"]).tolist() == [0, -1, 1]


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.one_of(st.none(), small), st.one_of(st.none(), small)), min_size=1, max_size=40))
def test_scoring_on_every_core_gives_the_one_thread_scores_and_the_default_comes_back(pairs):
    from dqkit.primitives import similarity as S

    a = [x for x, _ in pairs]
    b = [y for _, y in pairs]
    measures = (S.levenshtein, S.similarity, S.jaro_winkler, S.token_set)
    one = [m(a, b) for m in measures]
    with S.workers(-1):
        assert S._WORKERS.get() == -1
        every = [m(a, b) for m in measures]
    assert S._WORKERS.get() == 1
    for x, y in zip(one, every):
        np.testing.assert_array_equal(x, y)


def test_the_default_thread_count_comes_back_after_a_failing_block():
    import pytest

    from dqkit.primitives import similarity as S

    with pytest.raises(ValueError):
        with S.workers(2):
            S.levenshtein(["a"], ["a", "b"])
    assert S._WORKERS.get() == 1
