"""dqkit discover: minimal FDs (exact and g3) against a brute-force oracle on both routes, Table 1
goldens, ranking on planted FDs with BART-style errors, the rules file read by detect unchanged, and
every hostile input the issue names."""
from __future__ import annotations

import itertools
import json
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from dqkit.cli import main
from dqkit.discover.api import rank
from dqkit.discover.driver import DriverMeasure, encode
from dqkit.discover.lattice import DiscoveredFD, search_fds
from dqkit.rules import load_rules, parse_rule

ROOT = Path(__file__).resolve().parent.parent
TABLE1 = ROOT / "data" / "bigdansing_table1.csv"
from dqkit.data.planted import planted_table  # noqa: E402  (data/ installs as dqkit.data)


# ------------------------------------------------------------------------------------ the oracle
def oracle(rows: list[tuple], k: int, error: float) -> set[tuple[tuple[int, ...], int]]:
    """Every minimal non-trivial FD by brute force: every subset X for every A, g3 counted by hand,
    minimality checked against every proper subset (NULL equals NULL: None is a dict key like any)."""
    n = len(rows)

    def holds(x: tuple[int, ...], a: int) -> bool:
        groups: dict[tuple, dict] = {}
        for r in rows:
            sub = groups.setdefault(tuple(r[i] for i in x), {})
            sub[r[a]] = sub.get(r[a], 0) + 1
        deleted = n - sum(max(g.values()) for g in groups.values())
        return deleted == 0 if error == 0 else deleted / n <= error

    out = set()
    for a in range(k):
        others = [i for i in range(k) if i != a]
        for size in range(len(others) + 1):
            for x in itertools.combinations(others, size):
                if holds(x, a) and not any(holds(y, a) for m in range(size) for y in itertools.combinations(x, m)):
                    out.add((x, a))
    return out


VALUES = st.sampled_from([None, 0, 1, 2])


@st.composite
def small_tables(draw):
    """2-4 columns, 1-9 rows of a few values with NULLs; duplicates and constant columns come often."""
    k = draw(st.integers(2, 4))
    n = draw(st.integers(1, 9))
    rows = [tuple(draw(VALUES) for _ in range(k)) for _ in range(n)]
    if draw(st.booleans()):  # a constant (or all-NULL) column
        c, v = draw(st.integers(0, k - 1)), draw(VALUES)
        rows = [r[:c] + (v,) + r[c + 1:] for r in rows]
    if draw(st.booleans()):  # duplicated rows
        rows = rows + rows[: draw(st.integers(0, n))]
    return k, rows


def _arrow(k: int, rows: list[tuple]) -> pa.Table:
    return pa.table({f"c{i}": pa.array([r[i] for r in rows], pa.int64()) for i in range(k)})


def _found(search) -> set[tuple[tuple[int, ...], int]]:
    return {(tuple(int(c[1:]) for c in f.lhs), int(f.rhs[1:])) for f in search.fds}


def _driver(k: int, rows: list[tuple], error: float):
    cols = [f"c{i}" for i in range(k)]
    return search_fds(cols, len(rows), DriverMeasure(encode(_arrow(k, rows), cols)), error=error)


@settings(max_examples=80, deadline=None)
@given(small_tables(), st.sampled_from([0.0, 0.1, 0.25, 0.5]))
@example((3, [(None, 1, 1), (None, 1, 2), (0, None, 2), (0, None, 2)]), 0.0)
@example((2, [(None, None)]), 0.0)
def test_the_driver_route_finds_exactly_the_minimal_fds_of_the_brute_force_oracle(table, error):
    k, rows = table
    search = _driver(k, rows, error)
    assert _found(search) == oracle(rows, k, error)
    assert search.complete and not search.notes
    for fd in search.fds:  # g3 and support as counted by hand
        assert fd.rows == len(rows) and 0 <= fd.violations <= error * len(rows) + 1e-9


@settings(max_examples=1, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(small_tables(), st.sampled_from([0.0, 0.25]))
@example((3, [(None, 1, 5), (None, 1, 5), (0, None, 5), (0, 2, 5), (1, 2, 5)]), 0.25)
def test_the_spark_route_finds_what_the_oracle_and_the_driver_find(spark, table, error):
    from dqkit.discover.spark import SparkMeasure

    k, rows = table
    cols = [f"c{i}" for i in range(k)]
    df = spark.createDataFrame(rows, ", ".join(f"{c} int" for c in cols))
    measure = SparkMeasure(df, cols)
    search = search_fds(cols, len(rows), measure, error=error)
    assert _found(search) == oracle(rows, k, error)
    driver = {(f.lhs, f.rhs): (f.violations, f.support) for f in _driver(k, rows, error).fds}
    assert {(f.lhs, f.rhs): (f.violations, f.support) for f in search.fds} == driver
    assert measure.jobs == search.levels  # one aggregation job per lattice level


# ------------------------------------------------------------------------------------ Table 1
#: the minimal exact FDs of BigDansing's Table 1 (tid left out as the key), checked by the oracle below
TABLE1_FDS = {"city -> state", "zipcode -> state", "state, rate -> zipcode", "name -> city", "name -> rate",
              "name -> salary", "name -> state", "name -> zipcode", "salary -> city", "salary -> name",
              "salary -> rate", "salary -> state", "salary -> zipcode", "city, rate -> name",
              "city, rate -> salary", "city, rate -> zipcode"}


def _table1() -> tuple[list[str], pa.Table]:
    import pyarrow.csv as pcsv

    t = pcsv.read_csv(TABLE1)
    cols = [c for c in t.column_names if c != "tid"]
    return cols, t.select(cols)


def test_table1_exact_fds_are_the_golden_set_and_the_oracles():
    cols, t = _table1()
    search = search_fds(cols, t.num_rows, DriverMeasure(encode(t, cols)))
    assert {f.text for f in search.fds} == TABLE1_FDS
    rows = list(zip(*[t.column(c).to_pylist() for c in cols]))
    assert _found_named(search, cols) == oracle(rows, len(cols), 0.0)
    assert "zipcode -> city" not in TABLE1_FDS  # phiF: violated by (t2, t4) and (t4, t6)


def _found_named(search, cols):
    return {(tuple(cols.index(c) for c in f.lhs), cols.index(f.rhs)) for f in search.fds}


def test_table1_g3_of_zipcode_city_is_one_row_in_six():
    cols, t = _table1()
    search = search_fds(cols, t.num_rows, DriverMeasure(encode(t, cols)), error=1 / 6)
    fd = {f.text: f for f in search.fds}["zipcode -> city"]
    assert fd.violations == 1 and fd.g3 == pytest.approx(1 / 6) and fd.support == 3  # 90210: LA, SF, LA


def test_table1_through_spark_and_the_cli_gives_a_rules_file_detect_reads_unchanged(spark, tmp_path, capsys):
    from dqkit.detect import detect
    from dqkit.discover import discover

    by_spark = discover(str(TABLE1), key="tid", route="spark", spark=spark)
    assert {r.text for r in by_spark.rules} == TABLE1_FDS and by_spark.route == "spark"
    out = tmp_path / "rules.yaml"
    assert main(["discover", str(TABLE1), "--key", "tid", "--error", "0.2", "--top", "5", "--out", str(out),
                 "--format", "json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["shown"] == 5 and summary["found"] > 5 and summary["route"] == "driver"
    rules = load_rules(out)
    assert [r.name for r in rules] == [e["name"] for e in summary["rules"]]
    assert [str(r.text) for r in rules] == [e["rule"] for e in summary["rules"]]
    assert summary["rules"][0]["score"] >= summary["rules"][-1]["score"]
    found = detect(str(TABLE1), rules, key="tid", spark=spark)  # the file, unchanged, runs in detect
    assert set(found.counts) == {r.name for r in rules}
    assert "# dqkit discover" in out.read_text()


# ------------------------------------------------------------------------------------ ranking
@pytest.mark.parametrize("seed", [0, 1])
def test_with_five_percent_bart_errors_the_top_k_are_the_planted_fds(seed):
    planted = planted_table(2000, fds=3, noise=2, error_rate=0.05, seed=seed)
    cols = [c for c in planted.dirty.columns if c != "tid"]
    t = pa.Table.from_pandas(planted.dirty[cols], preserve_index=False)
    search = search_fds(cols, len(planted.dirty), DriverMeasure(encode(t, cols)), error=0.05)
    ranked = rank(search.fds)
    assert len(ranked) > 20  # dozens hold by accident at this error level ...
    assert {f.text for f in ranked[:3]} == set(planted.truth_rules)  # ... and rank below the planted
    assert all(f.score < 0.2 for f in ranked[3:])


def test_the_score_discounts_a_nearly_unique_left_hand_side():
    planted = DiscoveredFD(("zip",), "city", violations=10, support=1000, rows=1000)
    accidental = DiscoveredFD(("name", "street"), "city", violations=0, support=12, rows=1000)
    assert planted.score > accidental.score and rank([accidental, planted])[0] is planted


# ------------------------------------------------------------------------------------ rule text
@pytest.mark.parametrize("name", ["zip code", "not", "t1", "and", "a`b", "ok_1"])
def test_rule_text_quotes_names_the_rule_parser_would_misread(name):
    fd = DiscoveredFD((name,), "city", 0, 2, 2)
    rule = parse_rule(fd.text, "r")
    assert rule.lhs == (name,) and rule.rhs == ("city",)
    const = parse_rule(DiscoveredFD((), name, 0, 2, 2).text, "c")
    assert const.kind == "dc" and const.columns == (name,)


# ------------------------------------------------------------------------------------ honest answers
def test_an_all_null_and_a_one_valued_column_are_constants_said_plainly(spark):
    from dqkit.discover import discover

    df = spark.createDataFrame([(i, None, "x", i % 2) for i in range(6)], "k int, empty string, one string, p int")
    result = discover(df, route="driver", spark=spark)
    texts = {r.text for r in result.rules}
    assert {"not(t1.empty != t2.empty)", "not(t1.one != t2.one)", "k -> p"} <= texts
    assert not any(r.rhs in ("empty", "one") and r.lhs for r in result.rules)  # nothing else is minimal
    assert sum("holds one value on every row" in n for n in result.notes) == 2


def test_three_hundred_columns_bounded_by_max_lhs_say_so():
    rng = np.random.default_rng(0)
    cols = [f"c{i}" for i in range(300)]
    t = pa.table({c: rng.integers(0, 4, 12) for c in cols})
    search = search_fds(cols, 12, DriverMeasure(encode(t, cols)), max_lhs=1)
    assert not search.complete and search.levels == 2 and search.candidates == 300 * 300
    assert search.notes == ["FDs with more than 1 attribute(s) on the left were not searched (--max-lhs 1): "
                            "candidates with 2 remained"]


def test_a_level_over_the_candidate_bound_stops_with_a_note():
    cols = [f"c{i}" for i in range(8)]
    t = pa.table({c: np.arange(20) % (i + 2) for i, c in enumerate(cols)})
    search = search_fds(cols, 20, DriverMeasure(encode(t, cols)), max_candidates=30)
    assert not search.complete and "more than 30 candidate FDs" in search.notes[0]


# ------------------------------------------------------------------------------------ hostile input
def _csv(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


@pytest.mark.parametrize("case, argv, words", [
    ("one column", lambda t: [str(_csv(t, "one.csv", "a\n1\n2\n"))], "1 column(s) to search ('a')"),
    ("no rows", lambda t: [str(_csv(t, "none.csv", "a,b\n"))], "has no rows"),
    ("no rows parquet", lambda t: [_empty_parquet(t)], "has no rows"),
    ("unknown column", lambda t: [str(TABLE1), "--columns", "city,nope"], "--columns: unknown column 'nope'"),
    ("one named column", lambda t: [str(TABLE1), "--columns", "city"], "--columns names 1 column(s)"),
    ("unknown key", lambda t: [str(TABLE1), "--key", "id"], "--key: unknown column 'id'"),
    ("error 1", lambda t: [str(TABLE1), "--error", "1"], "--error must be at least 0 and below 1, not 1.0"),
    ("error 2", lambda t: [str(TABLE1), "--error", "2"], "below 1, not 2.0"),
    ("error negative", lambda t: [str(TABLE1), "--error", "-0.1"], "--error must be at least 0, not -0.1"),
    ("error nan", lambda t: [str(TABLE1), "--error", "nan"], "--error must be"),
    ("max-lhs 0", lambda t: [str(TABLE1), "--max-lhs", "0"], "--max-lhs must be at least 1, not 0"),
    ("out is the input", lambda t: [str(_copy(t)), "--out", str(t / "in")], "would overwrite the input"),
    ("out holds the input", lambda t: [str(_copy(t)), "--out", str(t)], "would overwrite the input"),
    ("out a table", lambda t: [str(TABLE1), "--out", str(t / "x.csv")], "a rules file (RULES.yaml)"),
])
def test_hostile_input_exits_2_before_spark_naming_it_and_writes_nothing(case, argv, words, tmp_path, capsys):
    args = argv(tmp_path)
    before = sorted(p.name for p in tmp_path.rglob("*"))
    assert main(["discover", *args]) == 2
    assert words in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.rglob("*")) == before


def _empty_parquet(tmp_path: Path) -> str:
    p = tmp_path / "empty.parquet"
    pq.write_table(pa.table({"a": pa.array([], pa.int64()), "b": pa.array([], pa.string())}), p)
    return str(p)


def _copy(tmp_path: Path) -> Path:
    d = tmp_path / "in"
    d.mkdir(exist_ok=True)
    (d / "t.csv").write_text(TABLE1.read_text())
    return d / "t.csv"


def test_refusals_load_no_spark():
    import subprocess

    code = ("import sys\nfrom dqkit.cli import main\n"
            f"rc = main(['discover', {str(TABLE1)!r}, '--error', '1'])\n"
            "print(rc, 'pyspark' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120).stdout
    assert out.split() == ["2", "False"]


# ------------------------------------------------------------------------------------ RulePicker
def test_rule_picker_suggests_discovered_rules_best_first_and_a_pick_joins_the_rules(spark):
    from dqkit.rules import FunctionalDependency
    from dqkit.widgets import RulePicker

    p = RulePicker(spark.read.csv(str(TABLE1), header=True, inferSchema=True).drop("tid"),
                   rules="phiF: zipcode -> city")
    suggested = p.suggest(error=0.2, top=4)
    assert len(suggested) == 4 and [r.score for r in suggested] == sorted((r.score for r in suggested), reverse=True)
    assert "error" in p.suggestions.labels[0] and "violating rows" in p.suggestions.labels[0]
    assert p.suggestions.labels[0].split()[1:4] == ["city", "->", "state"]
    assert p.pick(0) == ["fd1: city -> state"]
    assert [(r.name, type(r)) for r in p.value] == [("phiF", FunctionalDependency), ("fd1", FunctionalDependency)]
    assert "fd1: city -> state" in p.editor.value  # the editor shows what detect and repair will run
    with pytest.raises(Exception, match="no suggestion 9"):
        p.pick(9)


# ------------------------------------------------------------------------------------ denial constraints
from dqkit.discover.dc import HOLDS, MIRROR, discover_dcs  # noqa: E402

OPS_OF = {"int": ("=", "!=", "<", "<=", ">", ">="), "str": ("=", "!=")}


def dc_oracle(rows: list[tuple], kinds: list[str], error: float, k: int) -> set[frozenset]:
    """Every subset-minimal DC of at most k predicates on distinct columns, pairs checked one by one
    (a comparison with NULL is false)."""
    preds = [(c, op) for c, kind in enumerate(kinds) for op in OPS_OF[kind]]

    def sat(a, b, op):
        if a is None or b is None:
            return False
        return {"=": a == b, "!=": a != b, "<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[op]

    pairs = [(r, s) for i, r in enumerate(rows) for j, s in enumerate(rows) if i != j]
    limit = error * len(pairs)
    holds = {}
    for size in range(1, k + 1):
        for combo in itertools.combinations(preds, size):
            if len({c for c, _ in combo}) == size:
                v = sum(all(sat(r[c], s[c], op) for c, op in combo) for r, s in pairs)
                holds[frozenset(combo)] = v <= limit + 1e-9
    return {dc for dc, ok in holds.items() if ok and not any(holds.get(frozenset(sub)) for m in range(1, len(dc))
                                                              for sub in itertools.combinations(dc, m))}


def _implies(strong, weak):
    return set(HOLDS[strong]) <= set(HOLDS[weak])


@st.composite
def dc_tables(draw):
    kinds = draw(st.lists(st.sampled_from(["int", "str"]), min_size=2, max_size=3))
    n = draw(st.integers(2, 6))
    cell = {"int": st.sampled_from([None, 1, 2, 3]), "str": st.sampled_from([None, "x", "y"])}
    return kinds, [tuple(draw(cell[k]) for k in kinds) for _ in range(n)]


@settings(max_examples=25, deadline=None)
@given(dc_tables(), st.sampled_from([0.0, 0.2]))
def test_dcs_are_the_oracles_minimal_dcs_less_only_the_implied_and_mirrored(table, error):
    kinds, rows = table
    cols = [f"c{i}" for i in range(len(kinds))]
    types = {"int": pa.int64(), "str": pa.string()}
    t = pa.table({c: pa.array([r[i] for r in rows], types[kinds[i]]) for i, c in enumerate(cols)})
    found = discover_dcs(t, cols, rows=len(rows), error=error, max_predicates=2)
    got = {frozenset((int(c[1:]), op) for c, op in dc.predicates) for dc in found.dcs}
    expected = dc_oracle(rows, kinds, error, 2)
    assert got <= expected  # every DC reported is minimal and holds
    both = got | {frozenset((c, MIRROR[op]) for c, op in g) for g in got}  # a DC and its mirror are one rule
    for dc in expected - got:  # every one left out is the mirror of one reported, or implied by one
        assert any(all(any(c == c2 and _implies(op2, op) for c2, op2 in dc) for c, op in g) for g in both), dc
    for dc in found.dcs:
        assert dc.pairs == len(rows) * (len(rows) - 1) and dc.g3 <= error + 1e-9


#: the exact two-predicate DCs of Table 1 (tid left out): its keys, and its FDs as DCs
TABLE1_DCS = {"not(t1.name = t2.name)", "not(t1.salary = t2.salary)",
              "not(t1.zipcode = t2.zipcode and t1.state != t2.state)",
              "not(t1.city = t2.city and t1.state != t2.state)", "not(t1.city = t2.city and t1.rate = t2.rate)"}


def test_table1_dcs_through_the_cli_are_the_golden_set(capsys):
    assert main(["discover", str(TABLE1), "--key", "tid", "--dc", "--format", "json"]) == 0
    rules = json.loads(capsys.readouterr().out)["rules"]
    assert {r["rule"] for r in rules if r["kind"] == "dc"} == TABLE1_DCS
    assert "not(t1.rate > t2.rate and t1.salary < t2.salary)" not in TABLE1_DCS  # phiD: (t1,t2), (t5,t2) violate
    assert all(parse_rule(r["rule"], r["name"]) for r in rules)
