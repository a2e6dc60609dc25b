"""Quality over time: a history of every system's metrics and anomaly gates that calibrate themselves.

``--history DIR`` on any system appends the run's ``Result.metrics()`` to an append-only history
(``dqkit.history.store``); once a series has ``MIN_RUNS`` runs, each metric of a new run is judged
against its own past (``dqkit.history.gates``), drift included (``dqkit.history.series``).
``dqkit history DIR`` reads the series back (``read_history``). Importing this package needs
neither pyspark nor numpy: the names load on first use.
"""
from __future__ import annotations

import importlib
from typing import Any

_NAMES = {
    "History": "store", "HistoryError": "store", "Run": "store", "new_run": "store", "FORMAT": "store",
    "judge": "gates", "Judgement": "gates", "MIN_RUNS": "_defaults", "DEFAULT_FPR": "_defaults",
    "gate": "series", "series_of": "series", "drift": "series", "psi_from_quantiles": "series",
    "split_metric": "series", "HistoryOptions": "record", "record_run": "record", "record_metrics": "record", "params_digest": "record",
    "parse_as_of": "record", "read_history": "view", "HistoryResult": "view",
}
__all__ = sorted(_NAMES)


def __getattr__(name: str) -> Any:
    """Load the module holding ``name`` on first use."""
    if name not in _NAMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_NAMES[name]}"), name)
