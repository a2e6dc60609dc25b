"""Every answer tuple of a cleaned query says why it is there: the probability that it satisfies the
WHERE and the candidates of the cells the WHERE read (Daisy AT-1, AT-2; the goldens are the spec's
expected cells), in text, JSON, the widget and the report, all from ``QueryResult.sections()``."""
from __future__ import annotations

from fractions import Fraction

import pytest

from dqkit.relax._answer import Cell, best_world, cell_text, p_text, world_probabilities
from dqkit.relax.sql import BoolOp, ColRef, Pred

TABLE_2A = [("t1", 9001, "Los Angeles"), ("t2", 9001, "San Francisco"), ("t3", 9001, "Los Angeles"),
            ("t4", 10001, "San Francisco"), ("t5", 10001, "New York")]
CITY, ZIP = ColRef("cities", "City"), ColRef("cities", "Zip")


def _cand(world: str, value: str, support: int, n: int) -> dict:
    return {"world": world, "kind": "value", "value": value, "op": None, "p": support / n, "support": support, "n": n,
            "source": "fd"}


# t2 of Table 2(b): world A City {LA 2/3, SF 1/3}; world B Zip {9001 1/2, 10001 1/2}
T2_CITY = Cell("San Francisco", [_cand("A", "Los Angeles", 2, 3), _cand("A", "San Francisco", 1, 3)], ("A", "B:Zip"))
T2_ZIP = Cell(9001, [_cand("B:Zip", "9001", 1, 2), _cand("B:Zip", "10001", 1, 2)], ("A", "B:Zip"))


def test_a_tuple_qualifying_in_one_world_gets_that_worlds_probability_and_names_it():
    probs = world_probabilities(Pred(CITY, "=", "Los Angeles"), {CITY: T2_CITY})
    assert probs == {("A",): Fraction(2, 3), ("B:Zip",): Fraction(0)}
    p, world = best_world(probs)
    assert p_text(p, world, len(probs)) == "2/3 (world A)"
    assert cell_text(T2_CITY, "A") == "Los Angeles 2/3, San Francisco 1/3" and cell_text(T2_CITY, "B:Zip") == "San Francisco"


def test_the_where_is_summed_over_the_joint_candidates_of_the_cells_it_reads():
    cond = BoolOp("and", (Pred(ZIP, "=", 9001), Pred(CITY, "!=", "New York")))
    probs = world_probabilities(cond, {CITY: T2_CITY, ZIP: T2_ZIP})
    assert probs == {("A",): Fraction(1), ("B:Zip",): Fraction(1, 2)}
    either = BoolOp("or", (Pred(ZIP, "=", 10001), Pred(CITY, "=", "Los Angeles")))
    assert world_probabilities(either, {CITY: T2_CITY, ZIP: T2_ZIP})[("B:Zip",)] == Fraction(1, 2)
    ranged = Cell(3000, [{"world": "A", "kind": "range", "value": "2000", "op": "<", "p": 0.5, "support": 1, "n": 2,
                          "source": "dc"}, _cand("A", "3000", 1, 2)], ("A",))
    salary = ColRef("t", "salary")
    assert world_probabilities(Pred(salary, "<", 2500), {salary: ranged}) == {("A",): Fraction(1, 2)}
    assert world_probabilities(Pred(salary, ">", 2500), {salary: ranged}) == {("A",): Fraction(1, 2)}


def _why(result) -> dict[str, tuple]:
    """tid -> (WHERE cell per world, P) as the text answer shows them."""
    table = next(b for b in result.sections() if type(b).__name__ == "CandidateTable")
    at = {c: i for i, c in enumerate(table.columns)}
    read = next(c for c in table.columns if c.startswith("WHERE "))
    return {row[0][0]: (row[at[read]], row[at["P"]][0]) for row in table.rows}


def test_at1_and_at2_answers_show_the_where_cells_and_the_probability_everywhere(spark):
    from dqkit.relax import Daisy
    from dqkit.widgets import QueryCleaner

    la = "Los Angeles 2/3, San Francisco 1/3"
    w = QueryCleaner(spark)
    w.controller.add_table("cities", spark.createDataFrame(TABLE_2A, "tid string, Zip int, City string"), "tid",
                           "Zip -> City")
    w.query.value = "SELECT Zip FROM cities WHERE City = 'Los Angeles'"
    w.run(timeout=600)
    assert w.status == "done", w.error
    r = w.result
    assert _why(r) == {"t1": ((la,), "2/3"), "t2": ((la, "San Francisco"), "2/3 (world A)"), "t3": ((la,), "2/3")}
    text = r.to_text()
    assert "WHERE City" in text and "2/3 (world A)" in text and "Los Angeles 2/3, San Francisco 1/3" in text
    tuples = {t["tid"]: t for t in r.to_dict()["answer_tuples"]}
    assert tuples["t2"]["p"] == "2/3" and tuples["t2"]["world"] == ["A"] and tuples["t2"]["probability"] == 0.666667
    assert tuples["t2"]["p_per_world"] == {"A": "2/3", "B:Zip": "0"}
    assert tuples["t2"]["where_cells"] == {"City": {"A": la, "B:Zip": "San Francisco"}}
    assert "2/3 (world A)" in w.answers.value and "WHERE City" in w.answers.value  # the widget, as drawn
    assert "2/3 (world A)" in r.to_page()  # the report page is the same sections

    daisy = Daisy(spark)
    daisy.register("cities", spark.createDataFrame(TABLE_2A, "tid string, Zip int, City string"), key="tid")
    daisy.add_rules("cities", "Zip -> City")
    at2 = daisy.query("SELECT City FROM cities WHERE Zip = 9001")
    assert _why(at2) == {"t1": (("9001",), "1"), "t2": (("9001", "10001 1/2, 9001 1/2"), "1 (world A)"),
                         "t3": (("9001",), "1"), "t4": (("10001", "10001 1/2, 9001 1/2"), "1/2 (world B:Zip)")}
    # a query that selects the key column named like the row id renders (it once made two "tid" columns)
    page = daisy.query("SELECT tid, City FROM cities WHERE Zip = 9001").to_html()
    assert "tid (row id)" in page and "Answer over the dirty data" in page
    # paging the answer in the result view reads the answer and the dirty answer once
    from dqkit.widgets import ResultView

    def jobs() -> int:
        n = spark.sparkContext._jsc.sc().dagScheduler().nextJobId()
        return int(n if isinstance(n, int) else n.get())
    view = ResultView(sample_rows=2)
    view.show(at2)
    before = jobs()
    view.set_sample_rows(4)
    assert "t4" in view.children[0].value
    view.set_sample_rows(2)
    assert jobs() == before, "a page re-ran Spark"


def test_a_decision_never_shows_a_zero_second_prediction_and_every_cost_has_its_unit():
    from dqkit.relax._result import decision_costs

    first = {"units": "seconds", "cumulative_incremental": 22.1, "full_cost": 0.0, "fixed_seconds": 0.0,
             "seconds_per_row": 0.0}
    assert decision_costs(first) == "incremental 22.1 s; the full cost is not predicted yet (no cleaning measured)"
    later = {**first, "full_cost": 3.25, "seconds_per_row": 0.01}
    assert decision_costs(later) == "incremental 22.1 s vs full 3.25 s"
    tuples = {"units": "tuples", "cumulative_incremental": 12.0, "full_cost": 1500.0}
    assert decision_costs(tuples) == "incremental 12 tuples vs full 1,500 tuples"
