"""TCFC: Time-Constrained Fragment and Compare (Brkić & Mekterović, ITC 2018).

A time-budgeted, fragment-by-fragment comparison of table pairs that may live in different engines
(Spark, PostgreSQL, SQLite, DuckDB): each side's GROUP BY runs in its own engine, only aggregated rows
cross, and when the budget expires the run returns what it found so far (UNCOMPLETED).

* ``tcfc(spec, budget=...)`` -> ``TcfcResult`` (``dqkit.tcfc.algorithm.run_tcfc``);
* ``load_spec(path)`` / ``parse_spec(mapping)`` / ``dump_spec(spec)``: the metadata model (M1-M7);
* ``check_levels(spec)``: the M4 data checks (warnings).
"""
from __future__ import annotations

from dqkit.tcfc.algorithm import (COMPLETED, DIFF, EXCESS, GRACE_S, MISSING, UNCOMPLETED, Difference, Job,
                                  breadth_first, default_order, run_tcfc)
from dqkit.tcfc.checks import check_levels
from dqkit.tcfc.result import EXIT_UNCOMPLETED, TcfcResult
from dqkit.tcfc.spec import (Aggregate, CompareSpec, Level, Side, SpecError, TcfcSpec, dump_spec, load_spec,
                             mask_url, parse_spec)

tcfc = run_tcfc

__all__ = ["tcfc", "run_tcfc", "TcfcResult", "TcfcSpec", "CompareSpec", "Level", "Aggregate", "Side", "SpecError",
           "load_spec", "parse_spec", "dump_spec", "mask_url", "check_levels", "Difference", "Job", "default_order",
           "breadth_first", "COMPLETED", "UNCOMPLETED", "MISSING", "EXCESS", "DIFF", "GRACE_S", "EXIT_UNCOMPLETED"]
