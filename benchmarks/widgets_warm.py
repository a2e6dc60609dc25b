"""Benchmark: warm widget actions on 10K-row inputs, driven through the widget controllers (no browser).

Issue 25's widget goal: a warm action answers within 2 s. One SparkSession; each system's controller
is built once and warmed with a first run, then each action is timed (median of ``--repeat``) with
the Spark jobs it started:

* detect / repair (``ViolationController``): re-run with another rule (the rules alternate), and the
  same re-run followed by what the explorer then shows (``ResultView.show`` of the run's sections at
  10 rows: the first violations, the fix sample, the change list), which is what a user waits for;
  the violation graph is not part of a run (it is built when its tab opens), so opening that tab on
  the last run's result (the hypergraph, its largest components, the largest one drawn or, above
  the node bound, refused with a message as the tab does) is timed once;
* delta (``DeltaController``): change a column (the excluded column alternates) and re-run;
* dedup (``DedupController``): change a column (one comparison's column alternates) and re-run;
  move the threshold (clusters at the new threshold and their sample);
* tcfc (``TcfcController``): change the level-2 fragmentation column and re-run;
* query (``QueryController``): run another query (another ZIP code) on the same Daisy;
* lake (``LakeController``): change a cost parameter (the plan is recomputed);
* page a table (``ResultView.set_sample_rows``): the result view, showing a finished result, shows
  its samples with 20 rows, then 10 again: a page must not re-run Spark.

Prints a table (system, action, seconds, Spark jobs, goal, met?) and the load average. Not part of
``make test``.

    PYTHONPATH=. .venv/bin/python benchmarks/widgets_warm.py --rows 10000 --repeat 3
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

GOAL = 2.0


def job_counter(spark: Any) -> Callable[[], int]:
    """How many Spark jobs the session has started so far (the DAG scheduler's next job id)."""
    sc = spark.sparkContext._jsc.sc()

    def count() -> int:
        n = sc.dagScheduler().nextJobId()  # an AtomicInteger (py4j may hand it over as a number)
        return int(n if isinstance(n, int) else n.get())
    return count


def measure(jobs: Callable[[], int], action: Callable[[int], Any], repeat: int) -> tuple[float, float]:
    """Median seconds and median Spark jobs of ``action(i)`` over ``repeat`` calls (i = 0, 1, ...)."""
    times, counts = [], []
    for i in range(repeat):
        j0, t0 = jobs(), time.perf_counter()
        action(i)
        times.append(time.perf_counter() - t0)
        counts.append(jobs() - j0)
    return statistics.median(times), statistics.median(counts)


def run_ok(controller: Any) -> Any:
    result = controller.run()
    if controller.status != "done":
        raise SystemExit(f"{type(controller).__name__} failed: {controller.error}")
    return result


def prepare(spark: Any, rows: int, folder: Path) -> dict[str, Any]:
    """The inputs, written once under ``folder``: tax dirty/clean (Parquet), people (CSV), a lake."""
    from dqkit.data.lake import generate_lake
    from dqkit.data.people import generate_people
    from dqkit.data.tax import write_tax

    tax = folder / "tax"
    if not (tax / "dirty").exists():
        write_tax(str(tax), rows, variant="BART", error_rate=0.05, seed=7, spark=spark)
    for side, sub in (("old", "clean"), ("new", "dirty")):  # delta compares database folders
        link = folder / "delta" / side / "tax"
        if not link.exists():
            link.parent.mkdir(parents=True, exist_ok=True)
            link.symlink_to(tax / sub, target_is_directory=True)
    people = folder / "people.csv"
    if not people.exists():
        records, _ = generate_people(rows // 2, seed=5)  # ~2 records per entity: ~rows records
        records.to_csv(people, index=False)
    lake = folder / "lake"
    if not lake.exists():
        generate_lake(lake, roots=2, derived=4, rows=rows, seed=3, formats=(1.0, 0.0, 0.0))
    return {"tax": tax, "people": people, "lake": lake, "delta": folder / "delta"}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--data", default=None, help="folder for the generated inputs (default: a temp folder)")
    parser.add_argument("--only", nargs="*", default=None,
                        help="systems to run: detect repair delta dedup tcfc query lake")
    a = parser.parse_args(argv)

    from dqkit.errors import ParameterError
    from dqkit.runtime.session import get_spark
    from dqkit.widgets import (DedupController, DeltaController, LakeController, QueryController, ResultView,
                               TcfcController, ViolationController)

    spark = get_spark()
    jobs = job_counter(spark)
    folder = Path(a.data) if a.data else Path(tempfile.mkdtemp(prefix="dqkit-warm-"))
    folder.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    inputs = prepare(spark, a.rows, folder)
    print(f"inputs in {folder} ({time.perf_counter() - t0:.1f} s)", flush=True)
    only = set(a.only or ["detect", "repair", "delta", "dedup", "tcfc", "query", "lake"])
    table: list[tuple[str, str, float, float]] = []

    def record(system: str, action: str, fn: Callable[[int], Any]) -> None:
        seconds, n_jobs = measure(jobs, fn, a.repeat)
        table.append((system, action, seconds, n_jobs))
        print(f"  {system:7} {action:45} {seconds:7.2f} s  {n_jobs:5.0f} jobs", flush=True)

    def page(system: str, result: Any) -> None:
        view = ResultView((("Result", None),), sample_rows=10)
        view.show(result)  # what the explorer shows when the run ends
        record(system, "page a table (result view, 10 <-> 20 rows)",
               lambda i: view.set_sample_rows(20 if i % 2 == 0 else 10))

    dirty = str(inputs["tax"] / "dirty")
    if "detect" in only:
        rules = ["phi1: zipcode -> city", "phi2: zipcode -> state"]
        c = ViolationController({"tax": dirty}, table="tax", rules=rules[0], key="tid", spark=spark)
        run_ok(c)
        record("detect", "re-run with another rule",
               lambda i: (c.ruleset.set_text(rules[(i + 1) % 2]), run_ok(c)))
        shown = ResultView((("Result", None),), sample_rows=10)
        record("detect", "re-run with another rule, shown",
               lambda i: (c.ruleset.set_text(rules[(i + 1) % 2]), run_ok(c), shown.show(c.result)))
        page("detect", c.result)

        def open_graph(_: int) -> None:  # what selecting the "Violation graph" tab does, once per run
            options = c.component_options()
            if options:
                try:
                    c.draw(options[0][1])
                except ParameterError:  # too large to draw: the tab says so, as here
                    pass
        seconds, n_jobs = measure(jobs, open_graph, 1)  # built once per run: a second call is free
        table.append(("detect", "open the graph tab (build, draw the largest; once)", seconds, n_jobs))
        print(f"  detect  open the graph tab (once)                   {seconds:7.2f} s  {n_jobs:5.0f} jobs", flush=True)
    if "repair" in only:
        rules = ["phi1: zipcode -> city", "phi2: zipcode -> state"]
        c = ViolationController({"tax": dirty}, table="tax", rules=rules[0], key="tid", repair=True, spark=spark)
        run_ok(c)
        record("repair", "re-run with another rule (detect + repair)",
               lambda i: (c.ruleset.set_text(rules[(i + 1) % 2]), run_ok(c)))
        shown = ResultView((("Result", None),), sample_rows=10)
        record("repair", "re-run with another rule, shown",
               lambda i: (c.ruleset.set_text(rules[(i + 1) % 2]), run_ok(c), shown.show(c.result),
                          shown.show(c.result.repair)))
        page("repair", c.result.repair)
    if "delta" in only:
        c = DeltaController(str(inputs["delta"] / "old"), str(inputs["delta"] / "new"), spark=spark)
        c.set_key("tax", ["tid"])
        run_ok(c)
        cols = [["city"], ["state"]]
        record("delta", "change a column (excluded) and re-run",
               lambda i: (c.set_excluded("tax", cols[(i + 1) % 2]), run_ok(c)))
        page("delta", c.result)
    if "dedup" in only:
        base = [{"column": "given_name", "method": "jaro_winkler"}, {"column": "surname", "method": "jaro_winkler"},
                {"column": "date_of_birth", "method": "levenshtein"}]
        swap = [{"column": "address_1", "method": "token_set"}, {"column": "suburb", "method": "jaro_winkler"}]
        c = DedupController(str(inputs["people"]), key="rec_id", spark=spark,
                            config={"blocking": [["surname"], ["postcode", "substr(given_name,1,1)"]],
                                    "comparisons": base + swap[:1]})
        run_ok(c)
        record("dedup", "change a column (comparison) and re-run",
               lambda i: (c.set_comparisons(base + [swap[(i + 1) % 2]]), run_ok(c)))
        record("dedup", "move the threshold (clusters and their sample)",
               lambda i: (c.set_threshold((0.5, 0.8, 0.95)[i % 3]), c.cluster_sample()))
        page("dedup", c.result)
    if "tcfc" in only:
        pair = {"name": "tax", "source": {"table": str(inputs["tax"] / "clean")},
                "target": {"table": dirty}, "aggregates": [["count", "*", "rows"], ["sum", "salary", "salary"]],
                "levels": [{"X": []}, {"X": ["zipcode"]}]}
        c = TcfcController({"pairs": [pair]}, spark=spark)
        run_ok(c)
        cols = [["state"], ["zipcode"]]
        record("tcfc", "change a column (level 2) and re-run",
               lambda i: (c.set_levels("tax", [[], cols[i % 2]]), run_ok(c)))
        page("tcfc", c.result)
    if "query" in only:
        c = QueryController(spark=spark)
        c.add_table("tax", dirty, key="tid", rules="zipcode -> city")
        zips = [r[0] for r in spark.read.parquet(dirty).select("zipcode").distinct().orderBy("zipcode").limit(4).collect()]
        c.query = f"SELECT tid, city FROM tax WHERE zipcode = '{zips[0]}'"
        run_ok(c)

        def another(i: int) -> None:
            c.query = f"SELECT tid, city FROM tax WHERE zipcode = '{zips[1 + i % 3]}'"
            run_ok(c)
        record("query", "run another query (cleaning on demand)", another)
        page("query", c.result)
    if "lake" in only:
        c = LakeController(str(inputs["lake"]), t=5, spark=spark)
        run_ok(c)
        record("lake", "change a cost parameter (re-plan)",
               lambda i: c.set_cost("storage_cost", (0.5, 2.0, 1.0)[i % 3]))
        page("lake", c.result)

    print()
    print(f"{'system':8} {'action':46} {'seconds':>8} {'jobs':>5} {'goal':>5}  met?")
    for system, action, seconds, n_jobs in table:
        print(f"{system:8} {action:46} {seconds:8.2f} {n_jobs:5.0f} {GOAL:4.0f} s  {'yes' if seconds <= GOAL else 'NO'}")
    print(f"rows {a.rows:,}; median of {a.repeat}; load average at end: {[round(x, 2) for x in os.getloadavg()]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
