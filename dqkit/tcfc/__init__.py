"""TCFC: Time-Constrained Fragment and Compare (Brkić & Mekterović, ITC 2018).

A time-budgeted, fragment-by-fragment comparison of table pairs that may live in different engines
(Spark, PostgreSQL, SQLite, DuckDB): each side's GROUP BY runs in its own engine, only aggregated rows
cross, and when the budget expires the run returns what it found so far (UNCOMPLETED).

* ``tcfc(spec, budget=...)`` -> ``TcfcResult`` (``dqkit.tcfc.algorithm.run_tcfc``);
* ``load_spec(path)`` / ``parse_spec(mapping)`` / ``dump_spec(spec)``: the metadata model (M1-M7);
* ``check_levels(spec)``: the M4 data checks (warnings).
"""
from __future__ import annotations

import importlib
from typing import Any

#: where each public name lives; importing the package loads none of them (nor pandas) until first use
_WHERE = {
    "tcfc": "algorithm:run_tcfc", "run_tcfc": "algorithm:run_tcfc", "Difference": "model:Difference",
    "Job": "model:Job", "COMPLETED": "model:COMPLETED", "UNCOMPLETED": "model:UNCOMPLETED",
    "MISSING": "model:MISSING", "EXCESS": "model:EXCESS", "DIFF": "model:DIFF", "GRACE_S": "model:GRACE_S",
    "ORDERS": "model:ORDERS", "default_order": "compare:default_order", "breadth_first": "compare:breadth_first",
    "check_levels": "checks:check_levels", "TcfcResult": "result:TcfcResult",
    "EXIT_UNCOMPLETED": "result:EXIT_UNCOMPLETED",
    **{n: f"spec:{n}" for n in ("Aggregate", "CompareSpec", "Level", "Side", "SpecError", "TcfcSpec", "dump_spec",
                                "load_spec", "mask_url", "parse_spec")},
}

__all__ = ["tcfc", "run_tcfc", "TcfcResult", "TcfcSpec", "CompareSpec", "Level", "Aggregate", "Side", "SpecError",
           "load_spec", "parse_spec", "dump_spec", "mask_url", "check_levels", "Difference", "Job", "default_order",
           "breadth_first", "COMPLETED", "UNCOMPLETED", "MISSING", "EXCESS", "DIFF", "GRACE_S", "ORDERS",
           "EXIT_UNCOMPLETED"]


def __getattr__(name: str) -> Any:
    """A public name loads its module on first use (PEP 562); a submodule is imported as usual."""
    if name in _WHERE:
        module, _, attr = _WHERE[name].partition(":")
        value = getattr(importlib.import_module(f"{__name__}.{module}"), attr)
        globals()[name] = value
        return value
    if not name.startswith("__"):
        try:
            return importlib.import_module(f"{__name__}.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"{__name__}.{name}":
                raise
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
