"""dqkit: a Jupyter-centred data-quality toolkit on Apache Spark.

The facade names each system's entry point by what it does, so no name collides with a module:

* ``dqkit.compare_databases(old, new, ...)`` -> ``DeltaResult`` (Diftong; module ``dqkit.delta``)
* ``dqkit.detect_violations(table, rules, ...)`` -> ``DetectionResult`` (BigDansing; ``dqkit.detect``)
* ``dqkit.repair_table(table, rules, ...)`` -> ``RepairResult`` (BigDansing §5; ``dqkit.repair``)
* ``dqkit.deduplicate_table(table, key, config, ...)`` -> ``DedupResult`` (entity deduplication; ``dqkit.dedup``)
* ``dqkit.compare_fragments(spec, budget=...)`` -> ``TcfcResult`` (TCFC, time-budgeted; ``dqkit.tcfc``)
* ``dqkit.find_containment(lake, ...)`` -> ``LakeResult`` (R2D2; ``dqkit.lake``)
* ``dqkit.Daisy(...).query(sql)`` -> ``QueryResult`` (queries cleaned on demand; ``dqkit.relax``)
* ``dqkit.link_tables(left, right, key, config, ...)`` -> ``DedupResult`` (record linkage of two tables)

Result types and rule helpers are reachable here too. Everything is imported on first use, so
``import dqkit`` stays light (no Spark, no pandas).
"""
from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

from dqkit.errors import DqkitError  # noqa: E402

# public name -> (module, attribute)
_LAZY = {
    "get_spark": ("dqkit.runtime.session", "get_spark"),
    "compare_databases": ("dqkit.delta", "delta"),
    "detect_violations": ("dqkit.detect", "detect"),
    "repair_table": ("dqkit.repair", "repair"),
    "deduplicate_table": ("dqkit.dedup", "dedup"),
    "compare_fragments": ("dqkit.tcfc", "tcfc"),
    "Daisy": ("dqkit.relax", "Daisy"),
    "QueryResult": ("dqkit.relax", "QueryResult"),
    "link_tables": ("dqkit.dedup", "link"),
    "Result": ("dqkit.contract.result", "Result"),
    "DeltaResult": ("dqkit.delta", "DeltaResult"),
    "DetectionResult": ("dqkit.detect", "DetectionResult"),
    "RepairResult": ("dqkit.repair", "RepairResult"),
    "DedupResult": ("dqkit.dedup", "DedupResult"),
    "TcfcResult": ("dqkit.tcfc", "TcfcResult"),
    "find_containment": ("dqkit.lake", "find_containment"),
    "LakeResult": ("dqkit.lake", "LakeResult"),
    "parse_rule": ("dqkit.rules", "parse_rule"),
    "load_rules": ("dqkit.rules", "load_rules"),
}

__all__ = ["DqkitError", "__version__", *_LAZY]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        module, attr = _LAZY[name]
        return getattr(importlib.import_module(module), attr)
    raise AttributeError(f"module 'dqkit' has no attribute {name!r}")
