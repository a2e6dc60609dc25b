"""Headless tests of the nightly rules widgets: ``SinceView`` (New / Resolved / Persisting tabs of a
``detect --since`` result) and ``ChangeReview`` (per-cell accept/reject of a change list, Apply)."""
from __future__ import annotations

from pathlib import Path

import pytest

from dqkit.detect import detect
from dqkit.detect.since import detect_since
from dqkit.errors import ParameterError
from dqkit.rules import load_rules
from dqkit.io.sources import read_table
from dqkit.widgets.since_review import ChangeReview, SinceView

NIGHTS = Path(__file__).resolve().parent.parent / "data" / "nights"
MONDAY, TUESDAY, RULES = str(NIGHTS / "monday.csv"), str(NIGHTS / "tuesday.csv"), str(NIGHTS / "rules.yaml")
CHANGES = [("3", "city", "Boston", "New York", ["zip_city"], "zip_city|1|3", 1, "equivalence-class"),
           ("4", "discount", "60", "50", ["discount_le_price"], "discount_le_price|4|", 1, "holistic")]


def change_list(spark):
    """Monday's change list as repair --dry-run writes it (two cells, one per rule)."""
    return spark.createDataFrame(CHANGES, "tid string, attr string, old string, new string, rules array<string>, "
                                          "violation_id string, iteration int, method string")


def tab_titles(view) -> list[str]:
    return [view.get_title(i) for i in range(len(view.children))]


def test_since_view_puts_new_resolved_and_persisting_violations_in_their_own_tabs(spark, tmp_path):
    rules = load_rules(RULES)
    detect(MONDAY, rules, key="id", spark=spark).save(tmp_path / "monday")
    result = detect_since(TUESDAY, tmp_path / "monday", rules, key="id", spark=spark, max_change=0.5)
    view = SinceView()
    view.show(result)
    summary, new, resolved, persisting = (c.value for c in view.children)
    assert tab_titles(view) == ["Summary", "New", "Resolved", "Persisting"]
    assert "Since the last run" in summary and "1 new, 1 persisting, 2 resolved" in summary
    assert "New violations" in new and "zip_city" in new and "1 of 1 shown" in new
    assert "Resolved violations" in resolved and "2 of 2 shown" in resolved and "discount" not in resolved
    assert "Persisting violations" in persisting and "discount_le_price" in persisting
    view.clear()
    assert all("press Run" in c.value for c in view.children)


def test_since_view_says_a_list_is_empty_in_its_tab(spark):
    result = detect_since(TUESDAY, TUESDAY, load_rules(RULES), key="id", spark=spark)
    view = SinceView()
    view.show(result)
    assert "No new violation." in view.children[1].value and "No resolved violation." in view.children[2].value
    assert "Persisting violations" in view.children[3].value


def test_change_review_applies_only_the_ticked_cells_and_shows_the_applied_count(spark):
    monday = read_table(MONDAY, spark)
    review = ChangeReview(monday, change_list(spark), key="id", spark=spark)
    assert [b.cell for b in review.boxes] == [("3", "city"), ("4", "discount")] and all(b.value for b in review.boxes)
    assert review.applied_count == 0 and "Boston → New York" in review.boxes[0].description
    review.boxes[1].value = False  # reject the discount change
    review.apply_button.click()
    assert review.result is not None and review.applied_count == 1
    rows = {r["id"]: r for r in review.result.table.collect()}
    assert rows[3]["city"] == "New York" and rows[4]["discount"] == 60
    assert [(r["tid"], r["attr"]) for r in review.result.applied.collect()] == [("3", "city")]
    shown = review.view.children[0].value
    assert "1 of 2 change(s) applied" in shown and "discount_le_price" in shown and "Applied changes" in shown
    assert {r["id"]: r["city"] for r in monday.collect()}[3] == "Boston"  # the input is not modified


def test_change_review_refuses_a_stale_change_list_and_applies_nothing(spark):
    tuesday = read_table(TUESDAY, spark)  # store 3 already says New York: the city change is stale
    review = ChangeReview(tuesday, change_list(spark), key="id", spark=spark)
    review.apply_button.click()
    assert review.result is None and review.applied_count == 0
    assert "Nothing applied" in review.message.value and "3.city: expected &#x27;Boston&#x27;" in review.message.value
    assert not review.apply_button.disabled


def test_change_review_refuses_a_change_list_too_long_to_tick_one_by_one(spark):
    with pytest.raises(ParameterError, match="more than 1 changed cells") as err:
        ChangeReview(read_table(MONDAY, spark), change_list(spark), key="id", spark=spark, max_cells=1)
    assert "dqkit review" in err.value.hint


def test_the_detect_widget_shows_a_since_run_in_new_resolved_and_persisting_tabs_and_a_plain_run_in_its_own(spark):
    from dqkit.widgets import SystemExplorer

    ex = SystemExplorer("detect", {"table": TUESDAY, "rules": RULES, "key": "id", "since": MONDAY}, spark=spark)
    assert tab_titles(ex.view) == ["Summary", "Violations", "Charts"]
    ex.run(timeout=600)
    assert ex.status == "done", ex.error
    assert tab_titles(ex.view) == ["Summary", "New", "Resolved", "Persisting"]
    assert "zip_city" in ex.view.children[1].value and "2 of 2 shown" in ex.view.children[2].value
    ex.controller.set("since", None)
    ex.run(timeout=600)
    assert ex.status == "done", ex.error
    assert tab_titles(ex.view) == ["Summary", "Violations", "Charts"]


# ------------------------------------------------------------------ the violation explorer's since option
def test_the_violation_explorer_with_since_shows_new_resolved_and_persisting_tabs_then_its_own_again(spark, tmp_path):
    from dqkit.widgets import ViolationExplorer

    rules = load_rules(RULES)
    detect(MONDAY, rules, key="id", spark=spark).save(tmp_path / "monday")  # a saved detection as OLD
    ex = ViolationExplorer(TUESDAY, rules=RULES, key="id", spark=spark)
    plain = ["Summary", "Violations", "Charts", "Violation graph", "Repairs"]  # detect's declared tabs, then its own
    assert tab_titles(ex.tabs) == plain
    ex.since.value = str(tmp_path / "monday")
    ex.max_change.value = 0.5
    assert (ex.controller.since, ex.controller.max_change) == (str(tmp_path / "monday"), 0.5)
    ex.run(timeout=600)
    assert ex.status == "done", ex.error
    assert tab_titles(ex.tabs) == ["Summary", "New", "Resolved", "Persisting", "Violation graph", "Repairs"]
    summary, new, resolved, persisting = (ex.tabs.children[i].value for i in range(4))
    assert "1 new, 1 persisting, 2 resolved" in summary
    assert "zip_city" in new and "2 of 2 shown" in resolved and "Persisting violations" in persisting
    assert "clear since" in ex.tabs.children[4].image.value
    ex.since.value = ""
    ex.run(timeout=600)
    assert ex.status == "done", ex.error
    assert tab_titles(ex.tabs) == plain and "First violations" in ex.tabs.children[1].value


def test_the_violation_explorer_refuses_since_without_a_key_before_spark(spark):
    from dqkit.widgets import ViolationExplorer

    ex = ViolationExplorer(TUESDAY, rules=RULES, since=MONDAY, spark=spark)
    assert ex.run(60) is None and ex.status == "failed"
    assert "--since needs --key" in ex.error and "Error" in ex.message.value
    ex.max_change.value = 1.0
    with pytest.raises(ParameterError, match="--max-change"):
        ex.controller.set_max_change(2)  # the declared range of detect's max_change
